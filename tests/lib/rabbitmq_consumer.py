#!/usr/bin/python3
"""A real AMQP consumer with a known behaviour, for tests/integration/rabbitmq.sh.

Usage: rabbitmq_consumer.py AMQP_PORT READY_FILE
On queue "orders" (messages are JSON {"id": N}):
  id 1: requeued once, then rejected without requeue (dead-lettered)
  id 3: rejected without requeue at once (dead-lettered)
  id 4: held, never acknowledged
  id 5: requeued twice, then held
  others: acknowledged
On quorum queue "jobs": every delivery is requeued (the delivery-limit dead-letters it).
Declares two server-named exclusive queues (amq.gen-*) with one message each.
Writes READY_FILE once the expected deliveries happened, then keeps the connection (and so the
held messages) open until killed. Needs Debian's pika: run with /usr/bin/python3."""
import json
import sys

import pika

port, ready_file = int(sys.argv[1]), sys.argv[2]
conn = pika.BlockingConnection(
    pika.ConnectionParameters("127.0.0.1", port, "/", pika.PlainCredentials("guest", "guest")))
ch = conn.channel()
ch.basic_qos(prefetch_count=50)
seen = {}


def on_order(c, m, _props, body):
    i = json.loads(body)["id"]
    seen[i] = seen.get(i, 0) + 1
    if i == 1:
        c.basic_nack(m.delivery_tag, requeue=(seen[i] == 1))
    elif i == 3:
        c.basic_nack(m.delivery_tag, requeue=False)
    elif i == 4:
        pass
    elif i == 5:
        if seen[i] <= 2:
            c.basic_nack(m.delivery_tag, requeue=True)
    else:
        c.basic_ack(m.delivery_tag)


def on_job(c, m, _props, _body):
    seen["job"] = seen.get("job", 0) + 1
    c.basic_nack(m.delivery_tag, requeue=True)


# Two server-named queues (amq.gen-*), as an RPC client's reply queue is made: an exclude test
# needs them. One message in each, so they have stats to report.
for _ in range(2):
    anon = ch.queue_declare("", exclusive=True).method.queue
    ch.basic_publish("", anon, b"{}")
ch.basic_consume("orders", on_order, consumer_tag="worker-1")
ch.basic_consume("jobs", on_job, consumer_tag="worker-2")
wrote = False
while True:
    conn.process_data_events(time_limit=0.2)
    if not wrote and seen.get(1) == 2 and seen.get(5) == 3 and seen.get("job") == 3 and 10 in seen:
        with open(ready_file, "w") as f:
            f.write(json.dumps({str(k): v for k, v in seen.items()}))
        wrote = True
