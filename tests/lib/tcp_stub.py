"""tcp_stub.py: a loopback TCP peer below any protocol, for fault tests of the kinds that speak
a protocol of their own over TCP (Redis, beanstalkd):

    python3 tcp_stub.py --mode silent|garbage --port-file FILE

silent accepts and never answers; garbage answers the first bytes it receives with bytes that
are no protocol's reply, then closes. The port is written to FILE once listening."""
import argparse
import os
import socket
import threading


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=["silent", "garbage"])
    p.add_argument("--port-file", required=True)
    args = p.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(tmp, args.port_file)
    held = []

    def garbage(conn):
        try:
            conn.settimeout(5)
            conn.recv(4096)
            conn.sendall(b"\x00\xffHELLO there\r\n")
        except OSError:
            pass
        conn.close()

    while True:
        conn, _ = s.accept()
        if args.mode == "silent":
            held.append(conn)
        else:
            threading.Thread(target=garbage, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
