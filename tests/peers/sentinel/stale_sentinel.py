"""stale_sentinel.py: a sentinel with a stale answer, for tests/integration/redis_sentinel.sh.
AUTH is accepted whatever the password, and every other command (qrel sends one, SENTINEL
get-master-addr-by-name) is answered with the address HOST:PORT given, as a sentinel
that has not yet seen a failover names the old master. Real sentinels cannot be made to lie on
cue, and the point is to show qrel checks the answer (ROLE) before it trusts it.

    python3 stale_sentinel.py HOST PORT PORT_FILE    # its own port is written to PORT_FILE
"""
import os
import socket
import sys
import threading


def commands(buf):
    """The complete commands (lists of arguments) at the front of buf, and what is left."""
    out = []
    while True:
        end = buf.find(b"\r\n")
        if not buf.startswith(b"*") or end < 0:
            return out, buf
        n, pos, args = int(buf[1:end]), end + 2, []
        for _ in range(n):
            end = buf.find(b"\r\n", pos)
            if end < 0:
                return out, buf
            size = int(buf[pos + 1:end])
            if len(buf) < end + 2 + size + 2:
                return out, buf
            args.append(buf[end + 2:end + 2 + size])
            pos = end + 2 + size + 2
        out.append(args)
        buf = buf[pos:]


def answer(conn, reply):
    buf = b""
    with conn:
        while True:
            data = conn.recv(4096)
            if not data:
                return
            cmds, buf = commands(buf + data)
            for args in cmds:  # AUTH is accepted whatever the password
                conn.sendall(b"+OK\r\n" if args[0].upper() == b"AUTH" else reply)


def main():
    host, port, port_file = sys.argv[1:4]
    h, p = host.encode(), port.encode()
    reply = b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(h), h, len(p), p)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=answer, args=(conn, reply), daemon=True).start()


if __name__ == "__main__":
    main()
