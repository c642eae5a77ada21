#!/usr/bin/env python3
"""jsctl.py: a minimal NATS/JetStream client (stdlib only) for the nats integration test.

natscli is not packaged in Debian 12, so the test drives JetStream with its request/reply API
over the text protocol. Usage (PORT is the client port):
  jsctl.py PORT req SUBJECT [JSON]            one API request; prints the reply
  jsctl.py PORT pub SUBJECT DATA [COUNT]      publishes and waits for each PubAck
  jsctl.py PORT hpub SUBJECT DATA [KEY=VALUE ...]  publishes once with those headers, waits
                                              for the PubAck
  jsctl.py PORT reqs                          req for each line of stdin: SUBJECT<TAB>JSON
  jsctl.py PORT hpubs                         hpub for each line of stdin: SUBJECT<TAB>DATA[<TAB>K=V]...
  jsctl.py PORT gets STREAM FROM TO           STREAM.MSG.GET of each sequence; one reply a line
  jsctl.py PORT fail STREAM CONSUMER N DLQ MAXDELIVER
      a worker that fails every delivery: naks the N waiting messages MAXDELIVER times, then
      pulls until the server has given them up (DLQ, the dead-letter stream, holds N more
      advisories; 20 s at most); prints DLQ's message count
  jsctl.py PORT fetch STREAM CONSUMER N ACTION [EXPIRES]
      pulls up to N messages, waiting EXPIRES seconds (default 0.5) at most for them, and ack /
      nak / leaves them (ACTION ack|nak|leave); prints "payload:deliveries" per message
  jsctl.py PORT sub SUBJECT READY_FILE
      subscribes to SUBJECT (a push consumer's deliver subject: it is then bound), writes
      READY_FILE once the server has the subscription, and reads (never acks) until killed
Pulled messages arrive with their original subject, so replies are matched by subscription id;
the delivery count is token 4 of the ack subject $JS.ACK.<stream>.<consumer>.<delivered>....
NATS_USER / NATS_PASS in the environment log in as that user."""
import json
import os
import socket
import sys
import time


class Nats:
    def __init__(self, port, host="127.0.0.1", timeout=5.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.f = self.s.makefile("rb")
        if not self.f.readline().startswith(b"INFO "):
            raise RuntimeError("not a NATS server")
        self.inbox = "_INBOX.%s" % os.urandom(6).hex()
        self.n = 0
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "lang": "py-jsctl", "version": "0"}
        if os.environ.get("NATS_USER"):  # an account's user (servers with accounts configured)
            connect.update(user=os.environ["NATS_USER"], **{"pass": os.environ["NATS_PASS"]})
        self._send("CONNECT %s\r\nSUB %s.* 1\r\n" % (json.dumps(connect), self.inbox))

    def _send(self, text, payload=b""):
        tail = b"\r\n" if text.startswith(("PUB", "HPUB")) else b""
        self.s.sendall(text.encode() + payload + tail)

    def pub(self, subj, data=b"", reply=None):
        data = data if isinstance(data, bytes) else data.encode()
        self._send("PUB %s %s%d\r\n" % (subj, (reply + " ") if reply else "", len(data)), data)

    def _next(self):
        """The next MSG/HMSG as (subject, sid, reply, header bytes, payload); answers PINGs."""
        while True:
            line = self.f.readline()
            if not line:
                raise EOFError("connection closed")
            p = line.decode().rstrip("\r\n").split(" ")
            if p[0] == "PING":
                self._send("PONG\r\n")
                continue
            if p[0] in ("PONG", "+OK", "INFO"):
                continue
            if p[0] == "-ERR":
                raise RuntimeError(line)
            if p[0] == "MSG":
                reply = p[3] if len(p) == 5 else None
                return p[1], p[2], reply, b"", self.f.read(int(p[-1]) + 2)[:-2]
            if p[0] == "HMSG":
                reply = p[3] if len(p) == 6 else None
                raw = self.f.read(int(p[-1]) + 2)[:-2]
                return p[1], p[2], reply, raw[:int(p[-2])], raw[int(p[-2]):]

    def hpub(self, subj, data, headers, reply):
        data = data if isinstance(data, bytes) else data.encode()
        hdr = ("NATS/1.0\r\n" + "".join("%s: %s\r\n" % kv for kv in headers) + "\r\n").encode()
        self._send("HPUB %s %s %d %d\r\n" % (subj, reply, len(hdr), len(hdr) + len(data)),
                   hdr + data)

    def request(self, subj, data="", headers=None):
        self.n += 1
        inbox = "%s.%d" % (self.inbox, self.n)
        if headers:
            self.hpub(subj, data, headers, inbox)
        else:
            self.pub(subj, data, inbox)
        while True:
            s, _, _, hdr, body = self._next()
            if s == inbox:
                if hdr.startswith(b"NATS/1.0 503"):
                    raise RuntimeError("no responders for %s" % subj)
                return json.loads(body) if body else {}

    def fetch(self, stream, consumer, batch, expires=0.5):
        self.s.settimeout(expires + 5.0)  # the server answers 408 at expires; this is a backstop
        self.n += 1
        sid = str(1000 + self.n)
        inbox = "_FETCH.%s.%d" % (self.inbox[7:], self.n)
        self._send("SUB %s %s\r\n" % (inbox, sid))
        self.pub("$JS.API.CONSUMER.MSG.NEXT.%s.%s" % (stream, consumer),
                 json.dumps({"batch": batch, "expires": int(expires * 1e9)}), inbox)
        out = []
        while len(out) < batch:
            _, msid, reply, hdr, body = self._next()
            if msid != sid:
                continue
            if hdr.startswith(b"NATS/1.0 4"):  # 404 no messages, 408 request expired
                break
            out.append((reply, body))
        self._send("UNSUB %s\r\n" % sid)
        return out

    def flush(self):
        """A PING/PONG round trip, so that earlier PUBs (acks) have been processed."""
        self._send("PING\r\n")
        while True:
            line = self.f.readline()
            if not line or line.startswith(b"PONG"):
                return
            if line.startswith((b"MSG", b"HMSG")):
                self.f.read(int(line.split()[-1]) + 2)


def main(argv):
    nc = Nats(int(argv[1]))
    cmd = argv[2]
    if cmd == "req":
        reply = nc.request(argv[3], argv[4] if len(argv) > 4 else "")
        print(json.dumps(reply))
        return 1 if "error" in reply else 0
    if cmd == "pub":
        for i in range(int(argv[5]) if len(argv) > 5 else 1):
            ack = nc.request(argv[3], argv[4])
            if "stream" not in ack:
                print(json.dumps(ack), file=sys.stderr)
                return 1
        return 0
    if cmd == "hpub":
        ack = nc.request(argv[3], argv[4], [tuple(a.split("=", 1)) for a in argv[5:]])
        if "stream" not in ack:
            print(json.dumps(ack), file=sys.stderr)
            return 1
        return 0
    if cmd == "reqs":
        for line in sys.stdin.read().splitlines():
            subj, body = line.split("\t", 1)
            reply = nc.request(subj, body)
            if "error" in reply:
                print(json.dumps(reply), file=sys.stderr)
                return 1
        return 0
    if cmd == "hpubs":
        for line in sys.stdin.read().splitlines():
            f = line.split("\t")
            ack = nc.request(f[0], f[1], [tuple(a.split("=", 1)) for a in f[2:]])
            if "stream" not in ack:
                print(json.dumps(ack), file=sys.stderr)
                return 1
        return 0
    if cmd == "gets":
        for seq in range(int(argv[4]), int(argv[5]) + 1):
            print(json.dumps(nc.request("$JS.API.STREAM.MSG.GET." + argv[3], json.dumps({"seq": seq}))))
        return 0
    if cmd == "fail":
        stream, consumer, n, dlq, rounds = argv[3], argv[4], int(argv[5]), argv[6], int(argv[7])
        info = lambda: nc.request("$JS.API.STREAM.INFO." + dlq)["state"]["messages"]
        want = info() + n
        for _ in range(rounds):
            for reply, _ in nc.fetch(stream, consumer, n, 5):
                nc.pub(reply, "-NAK")
            nc.flush()
        deadline = time.monotonic() + 20
        while info() < want and time.monotonic() < deadline:
            nc.fetch(stream, consumer, 1, 0.1)  # the pull that finds them over the limit
        print(info())
        return 0
    if cmd == "fetch":
        action = {"ack": "+ACK", "nak": "-NAK", "leave": None}[argv[6]]
        expires = float(argv[7]) if len(argv) > 7 else 0.5
        for reply, body in nc.fetch(argv[3], argv[4], int(argv[5]), expires):
            print("%s:%s" % (body.decode(), reply.split(".")[4]))
            if action:
                nc.pub(reply, action)
        nc.flush()
        return 0
    if cmd == "sub":
        nc._send("SUB %s 900\r\n" % argv[3])
        nc.flush()
        with open(argv[4], "w") as f:
            f.write("subscribed\n")
        nc.s.settimeout(None)
        while True:
            nc._next()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
