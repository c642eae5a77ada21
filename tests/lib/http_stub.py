#!/usr/bin/env python3
"""A loopback HTTP peer for fault and stub tests of the HTTP collector kinds.

It binds 127.0.0.1 on a free port, writes the port to --port-file once listening, and serves
until killed. Modes:
  ok         every request gets --status, --content-type and the body of --body (a file) or
             --body-text, after --delay seconds
  routes     --routes FILE maps "METHOD /path" or "METHOD /path X-Amz-Target-value" to
             {"status": N, "body": "..." | "body_file": "...", "content_type": "...",
              "headers": {...}}; anything else gets 404. Paths match without the query string;
             a route "METHOD /path?query" matches only that exact query.
  hang       accepts, reads, never answers (a broker that stopped responding)
  close      accepts, reads the request, closes without a byte of answer
  garbage    answers bytes that are not HTTP, then closes
  truncated  promises a larger Content-Length than it sends, then closes
  huge       a 200 with a JSON list of --size bytes, streamed
--log FILE appends one JSON line per request: method, path, query, headers, body.
--tls-cert/--tls-key serve https (ok and routes modes); --tls-client-ca also requires a client
certificate signed by that CA.
Standard library only, so it runs on any python3.
"""
import argparse
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOG_LOCK = threading.Lock()


def log_request(method, target, headers, body):
    if not ARGS.log:
        return
    url = urllib.parse.urlsplit(target)
    line = json.dumps({
        "method": method,
        "path": url.path,
        "query": url.query,
        "headers": {k: v for k, v in headers.items()},
        "body": body.decode("utf-8", "replace"),
    })
    with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def load_body(spec, base_dir):
    if "body_file" in spec:
        with open(spec["body_file"] if spec["body_file"].startswith("/")
                  else f"{base_dir}/{spec['body_file']}", "rb") as f:
            return f.read()
    body = spec.get("body", "")
    return body.encode() if isinstance(body, str) else json.dumps(body).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: tests read --log instead
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        log_request(self.command, self.path, self.headers, body)
        status, ctype, payload, extra = 200, ARGS.content_type, b"", {}
        if ARGS.mode == "ok":
            if ARGS.delay:
                time.sleep(ARGS.delay)
            status = ARGS.status
            if ARGS.body:
                with open(ARGS.body, "rb") as f:
                    payload = f.read()
            else:
                payload = (ARGS.body_text or "").encode()
        elif ARGS.mode == "routes":
            with open(ARGS.routes, encoding="utf-8") as f:
                routes = json.load(f)  # re-read each time: tests may rewrite it between scrapes
            url = urllib.parse.urlsplit(self.path)
            target = self.headers.get("X-Amz-Target", "")
            keys = [f"{self.command} {self.path} {target}".strip(),
                    f"{self.command} {url.path} {target}".strip(),
                    f"{self.command} {self.path}", f"{self.command} {url.path}"]
            spec = next((routes[k] for k in keys if k in routes), None)
            if spec is None:
                status, ctype = 404, "application/json"
                payload = json.dumps({"error": "no route", "path": url.path}).encode()
            else:
                status = spec.get("status", 200)
                ctype = spec.get("content_type", ctype)
                payload = load_body(spec, ARGS.routes.rsplit("/", 1)[0])
                extra = spec.get("headers", {})
        elif ARGS.mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(ARGS.size))
            self.end_headers()
            chunk = b"0," * 32768
            left = ARGS.size - 2
            try:
                self.wfile.write(b"[")
                while left > 0:
                    piece = chunk[:left] if left < len(chunk) else chunk
                    self.wfile.write(piece)
                    left -= len(piece)
                self.wfile.write(b"]")
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve
    do_PUT = _serve


def raw_server(sock, mode):
    """hang / close / garbage / truncated: below HTTP, one thread per connection."""
    held = []

    def handle(conn):
        try:
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(65536)
                if not piece:
                    break
                data += piece
            log_request("RAW", "/", {}, data[:4096])
            if mode == "hang":
                held.append(conn)  # keep it open, never answer
                return
            if mode == "garbage":
                conn.sendall(b"\x00\xff\x13 this is not HTTP \xfe\r\n\r\n")
            elif mode == "truncated":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 5000\r\n\r\n{\"queues\": [{\"name\": \"a\"")
            conn.close()
        except OSError:
            conn.close()

    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def write_port(port):
    """Atomically, so a reader polling for the file never sees it half written."""
    with open(ARGS.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{port}\n")
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--mode", required=True,
                   choices=["ok", "routes", "hang", "close", "garbage", "truncated", "huge"])
    p.add_argument("--port-file", required=True)
    p.add_argument("--status", type=int, default=200)
    p.add_argument("--body")
    p.add_argument("--body-text")
    p.add_argument("--content-type", default="application/json")
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--routes")
    p.add_argument("--size", type=int, default=100 << 20)
    p.add_argument("--log")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-client-ca")
    ARGS = p.parse_args()
    if ARGS.mode in ("hang", "close", "garbage", "truncated"):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        write_port(port)
        raw_server(sock, ARGS.mode)
        return
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if ARGS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        if ARGS.tls_client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(ARGS.tls_client_ca)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    write_port(srv.server_address[1])
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
