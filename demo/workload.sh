#!/usr/bin/env bash
# demo/workload.sh PORT: a small at-least-once workload on Redis streams for the demo.
# A producer adds an order every 0.5 s to stream `orders`; two consumers in group `mailer` read
# with XREADGROUP, reclaim expired leases with XAUTOCLAIM (min-idle 3 s: the lease), "send an
# email" that usually takes 50 ms, and dead-letter an entry to `orders.dlq` once it has been
# delivered 3 times. Every 60 s the provider turns slow for 20 s (3.5 s per send, longer than the
# lease): leases expire under running handlers, entries are delivered again and again, and the
# DLQ fills with work that was done — the incident qrel exists to make visible.
set -uo pipefail
port=${1:?usage: workload.sh PORT}
R() { redis-cli -p "$port" "$@"; }
lease_ms=3000
max_deliveries=3

R XGROUP CREATE orders mailer '$' MKSTREAM >/dev/null 2>&1 || true

slow_now() { # the provider is slow during seconds 40..59 of every minute
  local s
  s=$(date +%S)
  [ "${s#0}" -ge 40 ]
}

handle() { # handle CONSUMER ID
  if slow_now; then sleep 3.5; else sleep 0.05; fi
  R XACK orders mailer "$2" >/dev/null
}

consumer() {
  local me=$1 id count
  while :; do
    # First reclaim one entry whose lease expired (this counts as a delivery), then read new ones.
    id=$(R XAUTOCLAIM orders mailer "$me" "$lease_ms" 0-0 COUNT 1 | sed -n 2p)
    if [[ $id =~ ^[0-9]+-[0-9]+$ ]]; then
      count=$(R XPENDING orders mailer "$id" "$id" 1 | sed -n 4p)
      if [ "${count:-0}" -gt "$max_deliveries" ]; then
        R XADD orders.dlq '*' id "$id" reason max_deliveries >/dev/null
        R XACK orders mailer "$id" >/dev/null
      else
        handle "$me" "$id"
      fi
      continue
    fi
    id=$(R XREADGROUP GROUP mailer "$me" COUNT 1 BLOCK 500 STREAMS orders '>' | sed -n 2p)
    if [[ $id =~ ^[0-9]+-[0-9]+$ ]]; then handle "$me" "$id"; fi
  done
}

producer() {
  local n=0
  while :; do
    n=$((n + 1))
    R XADD orders '*' order "$n" >/dev/null
    sleep 0.5
  done
}

trap 'kill 0' EXIT
producer &
consumer worker-a &
consumer worker-b &
wait
