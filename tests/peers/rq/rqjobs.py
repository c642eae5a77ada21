"""rqjobs.py: jobs and a driver for tests/integration/rq.sh, using RQ itself (Debian's
python3-rq) the way applications do: jobs are enqueued through rq.Queue and run by `rq worker`.

    python3 rqjobs.py URL enqueue QUEUE FUNC [ARG] [--timeout S] [--retry N] [--interval S] [--in S]
    python3 rqjobs.py URL depend QUEUE     # a job deferred on a job that never runs
    python3 rqjobs.py URL spread PREFIX N  # one job scheduled ahead in each of PREFIX1..PREFIXN
    python3 rqjobs.py URL workers QUEUE    # RQ's own count of QUEUE's workers: Worker.all(queue=)
"""
import sys
import time
from datetime import timedelta


def ok():
    return "done"


def hang(seconds):
    time.sleep(float(seconds))
    return "woke"


def boom():
    raise RuntimeError("the provider said no")


def main():
    from redis import Redis
    from rq import Queue, Retry, Worker

    url, cmd, queue = sys.argv[1:4]
    rest = sys.argv[4:]
    conn = Redis.from_url(url)
    if cmd == "spread":
        for i in range(1, int(rest[0]) + 1):
            Queue("%s%d" % (queue, i), connection=conn).enqueue_in(timedelta(minutes=10), "rqjobs.ok")
        return
    q = Queue(queue, connection=conn)
    if cmd == "workers":
        print(len(Worker.all(queue=q)))
        return
    if cmd == "depend":
        parent = q.enqueue_in(timedelta(hours=2), "rqjobs.ok")
        q.enqueue("rqjobs.ok", depends_on=parent)
        return
    func, args = rest[0], []
    opts = {}
    i = 1
    while i < len(rest):
        if rest[i] == "--timeout":
            opts["job_timeout"] = int(rest[i + 1]); i += 2
        elif rest[i] == "--retry":
            opts["retry"] = Retry(max=int(rest[i + 1]), interval=int(rest[i + 3])); i += 4
        elif rest[i] == "--in":
            q.enqueue_in(timedelta(seconds=int(rest[i + 1])), "rqjobs." + func, *args)
            return
        else:
            args.append(rest[i]); i += 1
    q.enqueue("rqjobs." + func, *args, **opts)


if __name__ == "__main__":
    main()
