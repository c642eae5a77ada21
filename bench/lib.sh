# bench/lib.sh: measurement helpers shared by the benchmarks (sourced, not run). The servers they
# measure against, free_port and wait_for come from the tests' own tests/lib.
# shellcheck shell=bash

# shellcheck source=../tests/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/servers.sh"

# median of the numbers on stdin, one a line ("nan" when there are none)
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) printf "%.6f\n", v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# cpu_ticks PID: the process's user+system CPU so far, in clock ticks (/proc/PID/stat)
cpu_ticks() {
  local stat rest
  stat=$(<"/proc/$1/stat")
  rest=${stat##*) }         # the command name may hold spaces and parentheses
  read -ra f <<<"$rest"     # f[0] is field 3 (state): utime is field 14, stime 15
  echo $((f[11] + f[12]))
}

# hwm_kib PID: peak resident set size in KiB (VmHWM)
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

# own_kib PID: qrel's own memory now, in KiB: anonymous resident pages (RssAnon: the heap, malloc
# arenas and thread stacks), leaving out the binary and the shared libraries (RssFile), which are
# the same for every process that links them. Issue 14's goal (<= 2 MiB) is on this figure; call
# it after each scrape and keep the largest, since the kernel keeps no peak of it.
own_kib() { awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status"; }

# own_settled_kib PID: own_kib once the exporter has freed the scrape it answered. The client has
# the last byte before the exporter frees the scrape's memory and hands it back (malloc_trim), so
# a reading right after curl can catch it in between; read until two readings 0.1 s apart agree
# (at most 2 s).
own_settled_kib() {
  local a b
  b=$(own_kib "$1")
  for _ in $(seq 1 20); do
    a=$b; sleep 0.1; b=$(own_kib "$1")
    [ "$a" = "$b" ] && break
  done
  echo "$b"
}

# peak_own_kib PID: a lower bound of the largest own memory so far, inside scrapes too: the peak
# RSS (VmHWM) less the file-backed and shared pages now (which only grow while libraries are used)
peak_own_kib() { awk '$1 == "VmHWM:" { h = $2 } $1 == "RssFile:" || $1 == "RssShmem:" { f += $2 } END { print h - f }' "/proc/$1/status"; }

# fmt VALUE PRINTF-FORMAT: the value formatted, or "-" when it is empty, "nan" or "-"
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x == "" || x == "nan" || x == "-") print "-"; else printf f, x }'; }

# listening: true once qrel_exporter has logged its address in $T/exporter.log; sets ADDR to it
listening() {
  ADDR=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter.log" | tail -1)
  [ -n "$ADDR" ]
}
