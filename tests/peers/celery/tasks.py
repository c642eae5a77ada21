"""tasks.py: a Celery app and tasks for tests/integration/celery.sh, using Celery itself (Debian's
python3-celery) the way applications do: the test runs `python3 -m celery -A tasks worker` and
`python3 tasks.py CMD...` as the client.

    python3 tasks.py hang SECONDS       # a task that runs that long (acks late: held unacked)
    python3 tasks.py ok [--countdown S] # a quick task, optionally with a countdown (an ETA)
"""
import os
import sys
import time

from celery import Celery

app = Celery("tasks", broker=os.environ["REDIS_URL"])
app.conf.update(
    broker_transport_options={"visibility_timeout": int(os.environ.get("VISIBILITY_TIMEOUT", "3600"))},
    task_acks_late=True,  # a running task stays unacknowledged: its lease is what qrel reads
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
)


@app.task
def hang(seconds):
    time.sleep(float(seconds))


@app.task
def ok():
    return "done"


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "hang":
        hang.delay(sys.argv[2])
    elif cmd == "ok":
        countdown = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--countdown" else None
        ok.apply_async(countdown=countdown)
    else:
        sys.exit("tasks.py: unknown command " + cmd)
