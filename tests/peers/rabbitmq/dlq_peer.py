#!/usr/bin/python3
"""The RabbitMQ side of tests/integration/dlq_rabbitmq.sh, through Debian's python3-pika (run it
with /usr/bin/python3). Usage: dlq_peer.py AMQP_PORT COMMAND [ARGS]:
  setup           the topology: exchange shop (fanout) -> queues orders (classic) and audit;
                  orders dead-letters through exchange dlx (direct) to orders.dlq; payments is a
                  quorum queue with x-delivery-limit 2 that dead-letters through dlx with routing
                  key payments.dead to payments.dlq (a quorum queue too)
  publish         orders o-1..o-6 through shop (id in the JSON body, with message_id,
                  correlation_id, content type, persistent, headers) and one without an id;
                  payments p-1..p-4 (id in header order_id) on the default exchange
  reject QUEUE    a consumer that fails: classic queues get basic.reject without requeue, quorum
                  ones basic.nack with requeue until their delivery limit dead-letters them
  dump QUEUE      every message of QUEUE as JSON lines (body, properties, headers, redelivered),
                  taken without ack and put back by closing the connection
  count QUEUE     the queue's ready messages (a passive queue.declare: counting by reading
                  would return each message once more, which counts towards a delivery limit)
"""
import datetime
import json
import sys

import pika

port, cmd, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
conn = pika.BlockingConnection(
    pika.ConnectionParameters("127.0.0.1", port, "/", pika.PlainCredentials("guest", "guest")))
ch = conn.channel()


def setup():
    ch.exchange_declare("shop", "fanout", durable=True)
    ch.exchange_declare("dlx", "direct", durable=True)
    ch.queue_declare("orders.dlq", durable=True)
    ch.queue_bind("orders.dlq", "dlx", "orders")
    ch.queue_declare("orders", durable=True, arguments={"x-dead-letter-exchange": "dlx"})
    ch.queue_declare("audit", durable=True)
    ch.queue_bind("orders", "shop")
    ch.queue_bind("audit", "shop")
    ch.queue_declare("payments.dlq", durable=True, arguments={"x-queue-type": "quorum"})
    ch.queue_bind("payments.dlq", "dlx", "payments.dead")
    ch.queue_declare("payments", durable=True, arguments={
        "x-queue-type": "quorum", "x-delivery-limit": 2, "x-dead-letter-exchange": "dlx",
        "x-dead-letter-routing-key": "payments.dead"})


def publish():
    ch.confirm_delivery()
    for i in range(1, 7):
        ch.basic_publish("shop", "orders", json.dumps({"order": {"id": f"o-{i}"}, "note": f"caf\u00e9 {i}"}),
                         pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                              message_id=f"m-o-{i}", correlation_id=f"c-{i}",
                                              headers={"tenant": "acme", "seq": i}))
    ch.basic_publish("shop", "orders", json.dumps({"note": "no id"}),
                     pika.BasicProperties(message_id="m-noid", headers={"tenant": "acme"}))
    for i in range(1, 5):
        ch.basic_publish("", "payments", f"payment {i}".encode(),
                         pika.BasicProperties(delivery_mode=2, message_id=f"m-p-{i}",
                                              headers={"order_id": f"p-{i}"}))


def reject(queue):
    quorum = queue == "payments"
    while True:
        method, _props, _body = ch.basic_get(queue)
        if method is None:
            if ch.queue_declare(queue, passive=True).method.message_count == 0:
                return
            continue
        if quorum:
            ch.basic_nack(method.delivery_tag, requeue=True)
        else:
            ch.basic_reject(method.delivery_tag, requeue=False)


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, datetime.datetime):
        return int(v.replace(tzinfo=datetime.timezone.utc).timestamp())
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def dump(queue):
    while True:
        method, props, body = ch.basic_get(queue)
        if method is None:
            return
        print(json.dumps({"body": body.decode("utf-8", "replace"), "redelivered": method.redelivered,
                          "content_type": props.content_type, "delivery_mode": props.delivery_mode,
                          "message_id": props.message_id, "correlation_id": props.correlation_id,
                          "headers": plain(props.headers or {})}, sort_keys=True))


if cmd == "setup":
    setup()
elif cmd == "publish":
    publish()
elif cmd == "reject":
    reject(args[0])
elif cmd == "dump":
    dump(args[0])
elif cmd == "count":
    print(ch.queue_declare(args[0], passive=True).method.message_count)
else:
    sys.exit(f"unknown command {cmd}")
conn.close()
