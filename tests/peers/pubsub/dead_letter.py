#!/usr/bin/env python3
"""dead_letter.py: the Pub/Sub side of tests/integration/dlq_pubsub.sh, over the emulator's REST
API with the standard library only.

  dead_letter.py API nack SUB... --attempts N   pull every subscription and hand each message back
                                                 at once (modifyAckDeadline 0) until Pub/Sub has
                                                 delivered every message N times and a pull finds
                                                 nothing left: the emulator then has forwarded them
                                                 all to the dead-letter topic
  dead_letter.py API peek SUB                    every message of SUB as one JSON list sorted by
                                                 messageId ({messageId, data, attributes,
                                                 orderingKey, publishTime}), handed back at once
  dead_letter.py API take SUB                    the same, acknowledged (a drain)

API is http://HOST:PORT/v1/projects/PROJECT. Every pull uses returnImmediately, so an empty reply
means nothing is deliverable now."""
import json
import sys
import time
import urllib.request


def call(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def pull(api, sub):
    got = call(f"{api}/subscriptions/{sub}:pull", {"maxMessages": 1000, "returnImmediately": True})
    return got.get("receivedMessages", [])


def hand_back(api, sub, ack_ids, ack):
    if not ack_ids:
        return
    if ack:
        call(f"{api}/subscriptions/{sub}:acknowledge", {"ackIds": ack_ids})
    else:
        call(f"{api}/subscriptions/{sub}:modifyAckDeadline",
             {"ackIds": ack_ids, "ackDeadlineSeconds": 0})


def nack(api, subs, attempts):
    started = time.time()
    last = {}  # (sub, messageId) -> highest deliveryAttempt seen
    quiet = 0
    while time.time() - started < 60:
        got_any = False
        for sub in subs:
            msgs = pull(api, sub)
            for m in msgs:
                key = (sub, m["message"]["messageId"])
                last[key] = max(last.get(key, 0), m.get("deliveryAttempt", 0))
            hand_back(api, sub, [m["ackId"] for m in msgs], False)
            got_any = got_any or bool(msgs)
        done = last and all(a >= attempts for a in last.values())
        quiet = 0 if got_any else quiet + 1
        # forwarded: every message reached the last attempt and pulls come back empty for a while
        if done and quiet >= 5:
            print(json.dumps({"messages": len(last), "seconds": round(time.time() - started, 1)}))
            return 0
        time.sleep(0.1)
    print(json.dumps({"gave_up": True, "attempts": sorted(set(last.values()))}), file=sys.stderr)
    return 1


def listing(api, sub, ack):
    seen = {}
    ack_ids = []
    while True:
        msgs = pull(api, sub)
        if not msgs:
            break
        for m in msgs:
            ack_ids.append(m["ackId"])
            msg = m["message"]
            seen[msg["messageId"]] = {k: msg.get(k) for k in
                                      ("messageId", "data", "attributes", "orderingKey",
                                       "publishTime")}
    hand_back(api, sub, ack_ids, ack)
    print(json.dumps(sorted(seen.values(), key=lambda m: int(m["messageId"])), sort_keys=True))
    return 0


def main():
    api, what = sys.argv[1], sys.argv[2]
    if what == "nack":
        i = sys.argv.index("--attempts")
        return nack(api, sys.argv[3:i], int(sys.argv[i + 1]))
    return listing(api, sys.argv[3], what == "take")


if __name__ == "__main__":
    sys.exit(main())
