#!/usr/bin/python3
"""Declares queues PREFIX0 .. PREFIX{N-1} fast: one AMQP connection, one channel, every
queue.declare sent without waiting for its reply (pika's asynchronous connection), then the
replies counted. Usage: rabbitmq_declare.py AMQP_PORT PREFIX N [FIRST]. Needs Debian's pika:
run with /usr/bin/python3."""
import sys

import pika

port, prefix, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
done = [0]
failed = []


def on_declared(_frame):
    done[0] += 1
    if done[0] == n:
        conn.close()


def on_channel(ch):
    for i in range(first, first + n):
        ch.queue_declare(queue=f"{prefix}{i}", durable=False, callback=on_declared)


def on_open(c):
    c.channel(on_open_callback=on_channel)


def on_error(_c, err):
    failed.append(str(err))
    conn.ioloop.stop()


params = pika.ConnectionParameters("127.0.0.1", port, "/", pika.PlainCredentials("guest", "guest"))
conn = pika.SelectConnection(params, on_open_callback=on_open, on_open_error_callback=on_error,
                             on_close_callback=lambda c, r: c.ioloop.stop())
conn.ioloop.start()
if failed or done[0] != n:
    print(f"declared {done[0]} of {n} queues {failed}", file=sys.stderr)
    sys.exit(1)
