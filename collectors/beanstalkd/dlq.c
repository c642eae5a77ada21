/* beanstalkd/dlq.c: `qrel dlq`'s hooks for beanstalkd (core/dlq_kind.h). The dead letters of tube
 * T are its buried jobs; a replay kicks each back to ready with `kick-job <id>`, which is atomic
 * in beanstalkd (buried -> ready, or NOT_FOUND when the job is gone or no longer buried), so it is
 * the kind's move().
 *
 * beanstalkd lists no buried ids: `peek-buried` shows only the first, and a body is shown only by
 * `peek <id>`. Ids are given out in order from 1, so the buried jobs are found by asking
 * `stats-job` of the ids, SCAN_BATCH to a round trip, from the highest id down: `stats` says
 * total-jobs (the jobs put since the server started) and `stats-tube T` how many of T's jobs are
 * buried, and the scan stops as soon as it has found that many (so its cost is the number of jobs
 * put since T's oldest buried one), or after MAX_SCAN ids. After a restart from the binlog ids go
 * on above total-jobs: when the downward scan finds too few, it goes on upward from total-jobs
 * until a whole batch of ids does not exist. Then `peek <id>` of each job kept, PEEK_BATCH to a
 * round trip. Every command is a read: nothing changes, no read_effect, nothing to release.
 *
 * beanstalkd cannot stamp (kick-job keeps the body as it is, and a job has no other field), so
 * replays is -1. There is no lock (beanstalkd has none) and none is needed: a job two replays
 * both chose is kicked by one, and the other's kick-job answers NOT_FOUND ("gone"). */
#include "dlq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "beanstalkd.h"
#include "client.h"
#include "common/json_id.h"
#include "config.h"

#define SCAN_BATCH 1000
#define PEEK_BATCH 100
#define MAX_SCAN 1000000ULL
#define Y2000 946684800.0 /* 2000-01-01T00:00:00Z */

int beanstalkd_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                            const char *id_field, struct err *e)
{
    char why[300];
    if (beanstalkd_dlq_id_field(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!beanstalkd_tube_name_valid(queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: want a beanstalkd tube name, got \"%s\"", queue);
    const struct state *st = c->priv;
    if (!st->tubes)
        return 0; /* every tube list-tubes finds is watched */
    for (size_t i = 0; i < st->ntubes; i++)
        if (strcmp(st->tubes[i], queue) == 0)
            return 0;
    return cfg_error(e, cfg_at(entry, "queue"), "queue: source \"%s\" lists no tube \"%s\"",
                     c->name, queue);
}

/* ---- read ---- */

struct buried {
    unsigned long long id;
    double age;
    long long reserves;
};

struct read_run {
    const char *tube, *id_field;
    double total_jobs, want; /* stats total-jobs; stats-tube current-jobs-buried */
    struct buried *v;
    size_t n, cap;
    size_t absent; /* NOT_FOUND answers in the last batch */
    double now;
    struct dlq_batch *out;
    const struct buried *peeked; /* the jobs of the peek batch */
};

static int on_counts(void *ctx, size_t i, const struct beanstalk_reply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (i == 1 && strcmp(r->status, "NOT_FOUND") == 0)
        return 0; /* a tube exists only while it has jobs or watchers: nothing buried */
    if (strcmp(r->status, "OK") != 0)
        return err_set(e, ERR_PROTOCOL, "%s: want OK, got \"%.100s\"", i ? "stats-tube" : "stats",
                       r->line);
    static const char *const server[] = {"total-jobs"}, *const tube[] = {"current-jobs-buried"};
    if (beanstalkd_parse_stats(r->body, i ? tube : server, i ? &run->want : &run->total_jobs, 1, e))
        return err_prefix(e, "%s", i ? "stats-tube" : "stats");
    return 0;
}

static int on_stats_job(void *ctx, size_t i, const struct beanstalk_reply *r, struct err *e)
{
    (void)i;
    struct read_run *run = ctx;
    if (strcmp(r->status, "NOT_FOUND") == 0) { /* deleted, or never put */
        run->absent++;
        return 0;
    }
    if (strcmp(r->status, "OK") != 0)
        return err_set(e, ERR_PROTOCOL, "stats-job: want OK, got \"%.100s\"", r->line);
    struct beanstalkd_job j;
    if (beanstalkd_parse_job(r->body, &j, e))
        return -1;
    if (strcmp(j.tube, run->tube) != 0 || strcmp(j.state, "buried") != 0)
        return 0;
    if (run->n == run->cap) {
        run->cap = run->cap ? 2 * run->cap : 64;
        run->v = xrealloc(run->v, run->cap * sizeof *run->v);
    }
    run->v[run->n++] = (struct buried){j.id, j.age, j.reserves};
    return 0;
}

/* stats-job of ids [from, from + n) (up) or (from - n, from] (down). */
static int scan_batch(struct collector *c, struct read_run *run, unsigned long long from, size_t n,
                      int up, const struct deadline *dl, struct err *e)
{
    char **cmds = xcalloc(n, sizeof *cmds);
    for (size_t k = 0; k < n; k++)
        cmds[k] = xasprintf("stats-job %llu", up ? from + k : from - k);
    run->absent = 0;
    int rc = beanstalkd_run(c, (const char *const *)cmds, n, dl, on_stats_job, run, e);
    for (size_t k = 0; k < n; k++)
        free(cmds[k]);
    free(cmds);
    return rc;
}

static int find_buried(struct collector *c, struct read_run *run, const struct deadline *dl,
                       struct err *e)
{
    unsigned long long top = (unsigned long long)run->total_jobs, scanned = 0;
    for (unsigned long long id = top; id > 0 && (double)run->n < run->want && scanned < MAX_SCAN;) {
        size_t n = id < SCAN_BATCH ? (size_t)id : SCAN_BATCH;
        if (scan_batch(c, run, id, n, 0, dl, e))
            return -1;
        id -= n;
        scanned += n;
    }
    /* Too few: after a restart from the binlog, ids go on above total-jobs. */
    for (unsigned long long id = top + 1; (double)run->n < run->want && scanned < MAX_SCAN;
         id += SCAN_BATCH, scanned += SCAN_BATCH) {
        if (scan_batch(c, run, id, SCAN_BATCH, 1, dl, e))
            return -1;
        if (run->absent == SCAN_BATCH)
            break; /* a thousand ids in a row that do not exist: past the highest */
    }
    return 0;
}

static int by_id(const void *a, const void *b)
{
    const struct buried *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int on_peek(void *ctx, size_t i, const struct beanstalk_reply *r, struct err *e)
{
    struct read_run *run = ctx;
    const struct buried *b = &run->peeked[i];
    if (strcmp(r->status, "NOT_FOUND") == 0)
        return 0; /* deleted since its stats-job: no longer a dead letter */
    if (strcmp(r->status, "FOUND") != 0)
        return err_set(e, ERR_PROTOCOL, "peek %llu: want FOUND, got \"%.100s\"", b->id, r->line);
    struct dlq_message *m = dlq_batch_push(run->out);
    m->message_id = xasprintf("%llu", b->id);
    size_t idlen;
    json_id_at(r->body, r->body_len, run->id_field, &m->work_id, &idlen);
    if (m->work_id && (strlen(m->work_id) != idlen || idlen == 0)) {
        free(m->work_id); /* an id holding a NUL is no id */
        m->work_id = NULL;
    }
    m->deliveries = b->reserves;
    /* beanstalkd keeps when the job was put (age), not when it was buried. */
    double put = run->now - b->age;
    if (isfinite(put) && put >= Y2000)
        m->dead_since = put;
    m->body_bytes = r->body_len;
    m->replays = -1; /* kick-job keeps the body as it is: no stamp */
    return 0;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a kicked job is no longer buried: a rerun cannot see it again */
    char why[300];
    if (beanstalkd_dlq_id_field(id_field, why, sizeof why))
        return err_set(e, ERR_CONFIG, "id_field: %s", why);
    if (!beanstalkd_tube_name_valid(queue))
        return err_set(e, ERR_CONFIG, "queue: want a beanstalkd tube name");
    struct read_run run = {.tube = queue, .id_field = id_field, .out = out};
    char *stats_tube = xasprintf("stats-tube %s", queue);
    const char *first[] = {"stats", stats_tube};
    int rc = beanstalkd_run(c, first, 2, dl, on_counts, &run, e);
    free(stats_tube);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    run.now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    if (rc == 0)
        rc = find_buried(c, &run, dl, e);
    if (rc == 0 && run.n) {
        qsort(run.v, run.n, sizeof *run.v, by_id); /* the oldest first */
        size_t keep = run.n < max ? run.n : max;
        for (size_t from = 0; rc == 0 && from < keep; from += PEEK_BATCH) {
            size_t n = keep - from < PEEK_BATCH ? keep - from : PEEK_BATCH;
            char *cmds[PEEK_BATCH];
            for (size_t k = 0; k < n; k++)
                cmds[k] = xasprintf("peek %llu", run.v[from + k].id);
            run.peeked = &run.v[from];
            rc = beanstalkd_run(c, (const char *const *)cmds, n, dl, on_peek, &run, e);
            for (size_t k = 0; k < n; k++)
                free(cmds[k]);
        }
    }
    size_t found = run.n;
    free(run.v);
    if (rc)
        return err_prefix(e, "buried jobs of tube \"%.200s\"", queue);
    /* What beanstalkd counts, or what the scan found when jobs were buried meanwhile. */
    out->total = (double)found > run.want ? found : (size_t)run.want;
    if (out->total < out->n)
        out->total = out->n;
    out->dead_letter_queue = xstrdup("buried"); /* as the metrics label it */
    out->origin = xstrdup(queue);
    return 0;
}

/* ---- the move: kick-job, atomic in beanstalkd ---- */

static int on_kick(void *ctx, size_t i, const struct beanstalk_reply *r, struct err *e)
{
    (void)i;
    int *got = ctx;
    if (strcmp(r->status, "KICKED") == 0)
        *got = 0;
    else if (strcmp(r->status, "NOT_FOUND") == 0)
        *got = 1;
    else
        return err_set(e, ERR_PROTOCOL, "kick-job: want KICKED or NOT_FOUND, got \"%.100s\"",
                       r->line);
    return 0;
}

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    char *cmd = xasprintf("kick-job %s", m->message_id);
    const char *cmds[] = {cmd};
    int got = -1;
    int rc = beanstalkd_run(c, cmds, 1, dl, on_kick, &got, e);
    free(cmd);
    if (rc)
        return err_prefix(e, "tube \"%.200s\"", b->origin);
    return got;
}

/* No release or read_effect: reading changes nothing. No check_origin: a kicked job is ready in
 * its own tube, where every worker of the tube looks, whether one watches now or starts later
 * (nothing strands). No lock: beanstalkd has none, and kick-job kicks a job once. */
const struct dlq_kind beanstalkd_dlq = {.read = dlq_read, .move = dlq_move};
