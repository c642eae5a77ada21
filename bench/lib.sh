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

# fmt VALUE PRINTF-FORMAT: the value formatted, or "-" when it is empty, "nan" or "-"
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x == "" || x == "nan" || x == "-") print "-"; else printf f, x }'; }

# listening: true once qrel_exporter has logged its address in $T/exporter.log; sets ADDR to it
listening() {
  ADDR=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter.log" | tail -1)
  [ -n "$ADDR" ]
}
