#!/usr/bin/env python3
"""hostile_client.py: clients that misbehave on purpose, for the hardening tests (stdlib only).

  slowloris HOST PORT N SECONDS [--bind ADDR] [--probe PATH] [--probe-every S]
      opens N connections from ADDR and dribbles a request header one byte every 2 s, never
      finishing it; meanwhile (from 127.0.0.1) GETs PATH every S seconds and prints the slowest
      answer time and how many probes got 200. Last line: "open=K probes=P ok=O max_ms=M".
  burst HOST PORT N PATH [--header 'Name: value']
      N concurrent GETs at once; prints "status=<code> count=<n>" per outcome ("none" when the
      connection closed or reset without an HTTP status line).
"""
import asyncio
import sys
import time


async def probe_once(host, port, path):
    t0 = time.monotonic()
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
        w.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await w.drain()
        line = await asyncio.wait_for(r.readline(), 5)
        w.close()
        status = line.split()[1].decode() if len(line.split()) > 1 else "none"
    except (OSError, asyncio.TimeoutError, IndexError):
        status = "none"
    return status, (time.monotonic() - t0) * 1000


async def slowloris(host, port, n, seconds, bind, probe, every):
    socks = []

    async def one():
        try:
            r, w = await asyncio.open_connection(host, port, local_addr=(bind, 0))
        except OSError:
            return
        socks.append((r, w))
        w.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        try:
            await w.drain()
        except OSError:
            pass

    await asyncio.gather(*(one() for _ in range(n)))
    t_end = time.monotonic() + seconds
    probes = ok = 0
    worst = 0.0
    last_drip = 0.0
    while time.monotonic() < t_end:
        if time.monotonic() - last_drip >= 2:
            last_drip = time.monotonic()
            for _, w in socks:
                if not w.is_closing():
                    try:
                        w.write(b"a")
                    except OSError:
                        pass
        if probe:
            status, ms = await probe_once(host, port, probe)
            probes += 1
            ok += status == "200"
            worst = max(worst, ms)
        await asyncio.sleep(every)
    open_now = 0
    for r, w in socks:
        # A socket the server closed reads EOF at once; an open one has nothing to read.
        try:
            data = await asyncio.wait_for(r.read(1), 0.01)
            if data:
                open_now += 1
        except asyncio.TimeoutError:
            open_now += 1
        except OSError:
            pass
        w.close()
    print(f"open={open_now} probes={probes} ok={ok} max_ms={worst:.0f}")


async def burst(host, port, n, path, headers):
    extra = "".join(h + "\r\n" for h in headers)
    start = asyncio.Event()

    async def one():
        await start.wait()
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 20)
            w.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n".encode())
            await w.drain()
            head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 30)
            await asyncio.wait_for(r.read(), 30)
            w.close()
            parts = head.split(b"\r\n")
            status = parts[0].split()[1].decode()
            retry = any(p.lower().startswith(b"retry-after:") for p in parts)
            return status + ("+retry-after" if retry else "")
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, IndexError):
            return "none"

    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    await asyncio.sleep(0.1)
    start.set()
    results = await asyncio.gather(*tasks)
    for status in sorted(set(results)):
        print(f"status={status} count={results.count(status)}")


def main():
    args = sys.argv[1:]
    opts = {}
    headers = []
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--header":
            headers.append(args[i + 1])
            i += 2
        elif args[i].startswith("--"):
            opts[args[i][2:]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    if pos[0] == "slowloris":
        asyncio.run(slowloris(pos[1], int(pos[2]), int(pos[3]), float(pos[4]),
                              opts.get("bind", "127.0.0.1"), opts.get("probe"),
                              float(opts.get("probe-every", "0.5"))))
    elif pos[0] == "burst":
        asyncio.run(burst(pos[1], int(pos[2]), int(pos[3]), pos[4], headers))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
