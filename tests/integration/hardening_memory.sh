#!/usr/bin/env bash
# Issue 15, item 8: a large pending_scan_limit costs memory only while the XPENDING reply is read.
# 200,000 pending entries in one group, scanned whole: the exporter's peak grows by the reply's
# tree (~330 B per entry), and its resident memory falls back once the scrape is done.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
redis-cli -p "$RP" EVAL "for i=1,200000 do redis.call('XADD','s','*','f','v') end return 1" 0 > /dev/null
redis-cli -p "$RP" XGROUP CREATE s g 0 > /dev/null
redis-cli -p "$RP" XREADGROUP GROUP g c COUNT 200000 STREAMS s '>' > /dev/null
expect_eq "pending entries" "$(redis-cli -p "$RP" XPENDING s g | head -1)" 200000
cat > "$T/qrel.yml" <<YML
sources:
  - name: big
    kind: redis_stream
    timeout: 30s
    address: 127.0.0.1:$RP
    pending_scan_limit: 1000000
    streams: [{name: s, groups: [g]}]
YML
start_exporter "$T/qrel.yml"
kb() { sed -nE "s/^$1:[[:space:]]+([0-9]+) kB/\1/p" "/proc/$EXPORTER_PID/status"; }
before=$(kb VmRSS)
scrape "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="big"'
sleep 0.5
peak=$(kb VmHWM)
after=$(kb VmRSS)
echo "VmRSS before ${before} kB, peak ${peak} kB, after ${after} kB"
expect_between "peak growth while reading 200k pending entries (kB)" "$((peak - before))" 30000 200000
expect_between "resident growth kept after the scrape (kB)" "$((after - before))" 0 15000

finish
