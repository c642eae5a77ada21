#!/usr/bin/env bash
# demo/workload.sh PORT: a small at-least-once workload on Redis streams for the demo.
#
# A producer adds an order to stream `orders` every 2 s. Three consumers in group `mailer` read
# with XREADGROUP, "send an email" (50 ms) and XACK. A janitor runs XAUTOCLAIM every 5 s for
# entries idle longer than the 3 s lease (the usual way Redis-stream apps recover from crashed
# consumers), handles what it reclaimed, and dead-letters an entry to `orders.dlq` once it was
# delivered 3 times.
#
# During seconds 40..59 of every minute the email provider is slow (16 s per send, still
# succeeding). Leases expire under running handlers, the janitor hands the same order out again,
# emails go out two or three times, and the DLQ fills with orders whose email was sent: the
# incident qrel exists to make visible.
set -uo pipefail
port=${1:?usage: workload.sh PORT}
R() { redis-cli -p "$port" "$@"; }
lease_ms=3000
max_deliveries=3

R XGROUP CREATE orders mailer '$' MKSTREAM >/dev/null 2>&1 || true

handle() { # handle ID: send the email, then acknowledge
  local s
  s=$(date +%S)
  if [ "${s#0}" -ge 40 ]; then sleep 16; else sleep 0.05; fi
  R XACK orders mailer "$1" >/dev/null
}

consumer() {
  local me=$1 id
  while :; do
    id=$(R XREADGROUP GROUP mailer "$me" COUNT 1 BLOCK 1000 STREAMS orders '>' | sed -n 2p)
    if [[ $id =~ ^[0-9]+-[0-9]+$ ]]; then handle "$id"; fi
  done
}

janitor() {
  local id count
  while :; do
    sleep 5
    # XAUTOCLAIM (a delivery: it raises the count) prints the next cursor, then each entry's id
    # followed by its fields; the fields here never look like an id.
    for id in $(R XAUTOCLAIM orders mailer janitor "$lease_ms" 0-0 COUNT 10 | tail -n +2); do
      [[ $id =~ ^[0-9]+-[0-9]+$ ]] || continue
      count=$(R XPENDING orders mailer "$id" "$id" 1 | sed -n 4p)
      if [ "${count:-0}" -gt "$max_deliveries" ]; then
        R XADD orders.dlq '*' id "$id" reason max_deliveries >/dev/null
        R XACK orders mailer "$id" >/dev/null
        continue
      fi
      handle "$id" &
    done
  done
}

producer() {
  local n=0
  while :; do
    n=$((n + 1))
    R XADD orders '*' order "$n" email "customer$n@example.com" >/dev/null
    sleep 2
  done
}

# Stop the loops this script started (not 'kill 0': that would hit the caller's process group).
trap 'kill $(jobs -p) 2>/dev/null' EXIT
producer &
consumer worker-a &
consumer worker-b &
consumer worker-c &
janitor &
wait
