#!/usr/bin/env python3
"""token_stub.py: a stand-in for Google's OAuth 2.0 token endpoint (the JWT bearer grant that a
service-account key uses), for tests/integration/pubsub.sh. Standard library plus the openssl
command, which checks the RS256 signature with the public half of the test's own key.

  token_stub.py --port-file F --public-key PUB.pem --email E --token T [--expires-in N] --log L

POST /token with grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and assertion=JWT:
the header must say RS256, the signature must verify, iss must be E, aud this endpoint's URL,
scope must name Pub/Sub and Monitoring, exp - iat must be 3600 and iat within a minute of now.
Then it answers {"access_token": T, "expires_in": N, "token_type": "Bearer"}; otherwise 400
{"error": "invalid_grant", ...} as Google does. Each request is logged as one JSON line
{"ok": true|false, "why": "..."} (never the assertion)."""
import argparse
import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def check(form, aud):
    if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
        return "grant_type is %r" % form.get("grant_type")
    parts = form.get("assertion", "").split(".")
    if len(parts) != 3:
        return "the assertion is not three dot-separated parts"
    header = json.loads(b64url_decode(parts[0]))
    claims = json.loads(b64url_decode(parts[1]))
    if header.get("alg") != "RS256" or header.get("typ") != "JWT":
        return "header %r" % header
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "data"), "wb") as f:
            f.write(("%s.%s" % (parts[0], parts[1])).encode())
        with open(os.path.join(d, "sig"), "wb") as f:
            f.write(b64url_decode(parts[2]))
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", ARGS.public_key,
                            "-signature", os.path.join(d, "sig"), os.path.join(d, "data")],
                           capture_output=True, check=False)
        if r.returncode != 0:
            return "signature does not verify"
    if claims.get("iss") != ARGS.email:
        return "iss %r" % claims.get("iss")
    if claims.get("aud") != aud:
        return "aud %r, want %r" % (claims.get("aud"), aud)
    scopes = claims.get("scope", "").split()
    if "https://www.googleapis.com/auth/pubsub" not in scopes or \
            "https://www.googleapis.com/auth/monitoring.read" not in scopes:
        return "scope %r" % claims.get("scope")
    if claims.get("exp", 0) - claims.get("iat", 0) != 3600 or abs(claims["iat"] - time.time()) > 60:
        return "iat/exp %r/%r" % (claims.get("iat"), claims.get("exp"))
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        form = dict(urllib.parse.parse_qsl(body))
        aud = "http://127.0.0.1:%d%s" % (self.server.server_address[1], self.path)
        try:
            why = check(form, aud)
        except (ValueError, KeyError) as exc:
            why = "malformed assertion: %s" % exc
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"ok": why is None, "why": why or ""}) + "\n")
        if why is None:
            status, reply = 200, {"access_token": ARGS.token, "expires_in": ARGS.expires_in,
                                  "token_type": "Bearer"}
        else:
            status, reply = 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        payload = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--public-key", required=True)
    p.add_argument("--email", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--expires-in", type=int, default=3600)
    p.add_argument("--log", required=True)
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(ARGS.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
