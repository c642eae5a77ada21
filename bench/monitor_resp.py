# monitor_resp.py MONITOR_OUT RESP_OUT [SKIP...]: the commands redis-cli MONITOR showed between
# the benchmarks' two ECHO markers (qrel-bench-start, qrel-bench-end) written as RESP arrays, the
# file pipe_floor sends (bench/job_queues.sh, bench/redis_streams.sh); prints how many. MONITOR,
# AUTH and the names given as SKIP (what the script itself sent meanwhile, e.g. CONFIG, INFO)
# are left out.
import re
import sys

skip = {b"MONITOR", b"AUTH"} | {a.upper().encode() for a in sys.argv[3:]}
out = open(sys.argv[2], "wb")
n = 0
inside = False
for line in open(sys.argv[1], encoding="latin-1"):
    m = re.match(r'^\d+\.\d+ \[\d+ [^\]]+\] (.*)$', line.rstrip("\n"))
    if not m:
        continue
    args = [bytes(a, "latin-1").decode("unicode_escape").encode("latin-1")
            for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
    if [a.upper() for a in args[:1]] == [b"ECHO"] and args[1:2] and args[1].startswith(b"qrel-bench-"):
        inside = args[1] == b"qrel-bench-start"  # the markers: the scrape is between them
        continue
    if not inside or not args or args[0].upper() in skip:
        continue
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
    n += 1
print(n)
