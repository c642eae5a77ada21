"""rqdlq.py: jobs and a driver for tests/integration/dlq_rq.sh, through RQ itself (Debian's
python3-rq): orders enqueued as applications do it, each job's id being its order (so that
`qrel dlq`'s id_field job_id names the work), run by `rq worker`.

    python3 rqdlq.py URL QUEUE:ORDER...   # one rqdlq.charge job per order on QUEUE, job_id=ORDER

A charge fails while the Redis key rqdlq:phase is not "fixed" (the provider is down), so the
worker puts it in the failed job registry; once fixed, it adds its order to the set rqdlq:ran
(SADD: a job run twice shows as one, so the test also counts rqdlq:runs).
"""
import sys


def charge(order):
    from rq import get_current_job

    conn = get_current_job().connection
    if conn.get("rqdlq:phase") != b"fixed":
        raise RuntimeError("the provider said no")
    conn.sadd("rqdlq:ran", order)
    conn.incr("rqdlq:runs")
    return "charged"


def main():
    from redis import Redis
    from rq import Queue

    conn = Redis.from_url(sys.argv[1])
    for arg in sys.argv[2:]:
        queue, order = arg.split(":", 1)
        Queue(queue, connection=conn).enqueue("rqdlq.charge", order, job_id=order)


if __name__ == "__main__":
    main()
