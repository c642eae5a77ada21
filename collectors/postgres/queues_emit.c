/* postgres/queues_emit.c: the results of the `queues` section's statements turned into series:
 * the aggregate's row per queue, matched with the queue's finished jobs, gives the families the
 * preset records and the entry declares (nothing is made up), the lease margin among them.
 * metric_set_add failures are programming errors the set remembers (policy P1): not checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queues.h"
#include "alloc.h"

/* The handler quantiles, in the order of the latency statement's columns. */
static const char *const emit_quantiles[PGQ_NQ] = {"0.5", "0.9", "0.99", "1"};

/* Parses the aggregate's rows into *rows (malloc'd, *n of them; strings point into r). */
static int parse_rows(struct queues *q, struct pg_conn *c, PGresult *r, struct pgq_row **rows,
                      size_t *n, struct err *e)
{
    int nt = PQntuples(r);
    *rows = NULL;
    *n = 0;
    if (PQnfields(r) != PGQ_NCOLS)
        return pg_error(c, e, ERR_PROTOCOL, "%s: want %d columns, got %d", q->what, PGQ_NCOLS,
                        PQnfields(r));
    struct pgq_row *v = xcalloc(nt ? (size_t)nt : 1, sizeof *v);
    for (int i = 0; i < nt; i++) {
        v[i].queue = PQgetvalue(r, i, PGQ_COL_QUEUE);
        v[i].dlq = PQgetisnull(r, i, PGQ_COL_DLQ) ? NULL : PQgetvalue(r, i, PGQ_COL_DLQ);
        for (int k = 1; k < PGQ_COL_DLQ; k++) {
            v[i].has[k] = !PQgetisnull(r, i, k);
            if (v[i].has[k] && pg_cell_double(r, i, k, &v[i].v[k])) {
                pg_error(c, e, ERR_PROTOCOL, "%s: column %d of queue \"%s\" is not a number",
                         q->what, k + 1, v[i].queue);
                free(v);
                return -1;
            }
        }
    }
    *rows = v;
    *n = (size_t)nt;
    return 0;
}

/* lease / the worst of (handler p99, oldest current hold), each where known; 0 and *out
 * untouched when there is no lease or nothing to divide by. Where the lease is a heartbeat the
 * handler's length does not matter (the worker renews it while it runs): only the hold, the
 * time since the last beat, counts. Pure. */
int queues_emit_margin(double lease, const struct pgq_done *d, int heartbeat, int has_hold,
                       double hold, double *out)
{
    int has_p99 = d && d->has && !heartbeat;
    if (!(lease > 0) || (!has_p99 && !has_hold))
        return 0;
    double worst = PGQ_MIN_DENOMINATOR;
    if (has_p99 && d->q[PGQ_P99] > worst)
        worst = d->q[PGQ_P99];
    if (has_hold && hold > worst)
        worst = hold;
    *out = lease / worst;
    return 1;
}

/* The longest a runner's default retry policy waits, in total, between the max_attempts
 * deliveries of a job (jitter taken at its upper bound), or -1 for a runner whose delays are not
 * known here. River's default policy waits attempt^4 s (+/- 10 %) after failed attempt n
 * (internal/retrypolicy/default.go); Oban's default backoff waits 15 + 2^n s (+ up to 10 %),
 * with n scaled onto 1..20 when max_attempts is above 20 (Oban.Worker.backoff/1). A worker
 * with its own retry policy or backoff/1 makes this wrong: see the docs. Pure. */
double queues_emit_backoff(enum pgq_preset_id id, long long max_attempts)
{
    if (id != PGQ_RIVER && id != PGQ_OBAN)
        return -1.0;
    double sum = 0;
    for (long long n = 1; n < max_attempts; n++) {
        if (id == PGQ_RIVER) {
            sum += 1.1 * pow((double)n, 4);
        } else {
            double c = max_attempts <= 20 ? (double)n : round((double)n / max_attempts * 20);
            sum += 1.1 * (15 + pow(2, c));
        }
    }
    return sum;
}

/* Adds the series of one queue. Which families appear depends on what the preset records (its
 * flags) and on what the config declares; nothing is made up. d: the queue's finished jobs, NULL
 * for a preset without them. metric_set_add failures are programming errors the set remembers
 * (policy P1): nothing to check here. Pure. */
void queues_emit_queue(const struct pgq_preset *p, const struct pgq_row *row,
                       const struct pgq_done *d, long long max_deliveries, double lease_timeout,
                       struct metric_set *out)
{
    const char *qn = row->queue;
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_READY], "queue", qn, "state", "ready",
                   NULL);
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_IN_FLIGHT], "queue", qn, "state",
                   "in_flight", NULL);
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_DELAYED], "queue", qn, "state",
                   "delayed", NULL);
    /* No ready or in-flight message: nothing waits, so the oldest is 0 s old (as SQS says). */
    metric_set_add(out, "qrel_queue_oldest_message_age_seconds",
                   row->has[PGQ_COL_OLDEST_AGE] ? row->v[PGQ_COL_OLDEST_AGE] : 0.0, "queue", qn,
                   NULL);
    if (p->flags & PGQ_HAS_REDELIVERED)
        metric_set_add(out, "qrel_messages_redelivered", row->v[PGQ_COL_REDELIVERED], "queue", qn,
                       NULL);
    if (p->flags & PGQ_HAS_DEAD) {
        const char *dlq = row->dlq ? row->dlq : p->dead_letter_queue;
        metric_set_add(out, "qrel_dead_letter_messages", row->v[PGQ_COL_DEAD], "queue", qn,
                       "dead_letter_queue", dlq, NULL);
        metric_set_add(out, "qrel_dead_letter_oldest_age_seconds",
                       row->has[PGQ_COL_DEAD_AGE] ? row->v[PGQ_COL_DEAD_AGE] : 0.0, "queue", qn,
                       "dead_letter_queue", dlq, NULL);
    }
    /* Jobs a fast host's clock stamped after now(): in no window (the statement counted them
     * on their own), exported where the runner stamps a column qrel reads with that clock. */
    if (p->flags & PGQ_HAS_AHEAD)
        metric_set_add(out, "qrel_future_stamped_rows", row->v[PGQ_COL_AHEAD], "queue", qn, NULL);
    /* Held jobs the runner hands out again while their handler may still run (Laravel). */
    if (p->flags & PGQ_HAS_EXPIRED)
        metric_set_add(out, "qrel_lease_expired_messages", row->v[PGQ_COL_EXPIRED], "queue", qn,
                       NULL);
    if (max_deliveries > 0)
        metric_set_add(out, "qrel_max_deliveries", (double)max_deliveries, "queue", qn, NULL);
    else if ((p->flags & PGQ_HAS_MAX_DELIVERIES) && row->has[PGQ_COL_MAX_DELIVERIES])
        metric_set_add(out, "qrel_max_deliveries", row->v[PGQ_COL_MAX_DELIVERIES], "queue", qn,
                       NULL);
    /* The hold age: read from the runner's lock column, or for pgmq derived from vt and the
     * declared visibility timeout (the collector put it into the rows). */
    int has_hold = (p->flags & PGQ_HAS_LEASE_AGE) || (p->id == PGQ_PGMQ && lease_timeout > 0);
    double hold = row->has[PGQ_COL_LEASE_AGE] ? row->v[PGQ_COL_LEASE_AGE] : 0.0;
    if (has_hold)
        metric_set_add(out, "qrel_lease_oldest_age_seconds", hold, "queue", qn, NULL);
    double lease = -1.0;
    if (lease_timeout > 0)
        lease = lease_timeout;
    else if ((p->flags & PGQ_HAS_LEASE_TIMEOUT) && row->has[PGQ_COL_LEASE_TIMEOUT])
        lease = row->v[PGQ_COL_LEASE_TIMEOUT];
    if (lease > 0)
        metric_set_add(out, "qrel_lease_timeout_seconds", lease, "queue", qn, NULL);
    if (d && d->has)
        for (int i = 0; i < PGQ_NQ; i++)
            metric_set_add(out, "qrel_handler_duration_seconds", d->q[i], "queue", qn, "quantile",
                           emit_quantiles[i], NULL);
    /* The hold counts only when something is held now (an empty queue's 0 is no evidence). */
    double margin;
    int heartbeat = row->has[PGQ_COL_HEARTBEAT] && row->v[PGQ_COL_HEARTBEAT] > 0;
    if (queues_emit_margin(lease, d, heartbeat, has_hold && row->v[PGQ_COL_IN_FLIGHT] > 0, hold,
                           &margin))
        metric_set_add(out, "qrel_lease_margin_ratio", margin, "queue", qn, NULL);
    /* The horizon: pg-boss's from its queue row (the statement worked it out); River's and
     * Oban's from their default backoff, the deliveries allowed and a declared job_timeout. */
    double maxdel = max_deliveries > 0                 ? (double)max_deliveries
                    : row->has[PGQ_COL_MAX_DELIVERIES] ? row->v[PGQ_COL_MAX_DELIVERIES]
                                                       : 0;
    double backoff = queues_emit_backoff(p->id, (long long)maxdel);
    if (row->has[PGQ_COL_HORIZON])
        metric_set_add(out, "qrel_retry_horizon_seconds", row->v[PGQ_COL_HORIZON], "queue", qn,
                       NULL);
    else if (backoff >= 0 && lease_timeout > 0 && maxdel > 0)
        metric_set_add(out, "qrel_retry_horizon_seconds", maxdel * lease_timeout + backoff, "queue",
                       qn, NULL);
}

void queues_emit_not_kept(const struct pgq_row *row, int destroy_failed, struct metric_set *out)
{
    /* Undeclared, the table is the evidence: with destroy_failed_jobs false every job that used
     * up its attempts stays as a failed row, so a queue with jobs one failure from the end and
     * not one failed row is losing them (delayed_job's default is to destroy them). */
    int not_kept = destroy_failed >= 0 ? destroy_failed
                                       : row->v[PGQ_COL_DEAD] == 0 && row->v[PGQ_COL_LAST_TRY] > 0;
    metric_set_add(out, "qrel_dead_letters_not_kept", not_kept ? 1.0 : 0.0, "queue", row->queue,
                   NULL);
}

/* Runs the latency statement: *done gets one entry per aggregate row (matched by queue name,
 * both ordered by queue). */
static int run_done(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                    const struct pgq_row *rows, size_t n, struct pgq_done *done, struct err *e)
{
    const char *params[2] = {q->window_param, q->filter_param};
    PGresult *r = NULL;
    if (pg_query(c, dl, q->what, q->done_sql, q->filter_param ? 2 : 1, params, &r, e))
        return -1;
    int rc = 0;
    if (PQnfields(r) != 2 + PGQ_NQ) {
        rc = pg_error(c, e, ERR_PROTOCOL, "%s: want %d columns of finished jobs, got %d", q->what,
                      2 + PGQ_NQ, PQnfields(r));
        goto out;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        for (size_t k = 0; k < n; k++) {
            if (strcmp(rows[k].queue, name) != 0)
                continue;
            done[k].has = pg_cell_double(r, i, 1, &done[k].n) == 0;
            for (int j = 0; j < PGQ_NQ && done[k].has; j++)
                if (pg_cell_double(r, i, 2 + j, &done[k].q[j]))
                    done[k].has = 0;
            break;
        }
    }
out:
    PQclear(r);
    return rc;
}

int queues_emit_run(struct queues *q, struct pg_conn *c, const struct deadline *dl, const char *sql,
                    int nparams, const char *const *params, struct metric_set *out, struct err *e)
{
    PGresult *r = NULL;
    struct pgq_row *rows = NULL;
    struct pgq_done *done = NULL;
    size_t n = 0;
    int rc = -1;
    if (pg_query(c, dl, q->what, sql, nparams, params, &r, e))
        return -1;
    if (parse_rows(q, c, r, &rows, &n, e))
        goto out;
    /* The finished jobs are read after the pending ones, so a job that finishes in between is
     * seen at most once as in flight and once as done, never lost from both. */
    done = xcalloc(n ? n : 1, sizeof *done);
    if (q->done_sql && n && run_done(q, c, dl, rows, n, done, e))
        goto out;
    for (size_t i = 0; i < n; i++) {
        queues_emit_queue(q->preset, &rows[i], q->done_sql ? &done[i] : NULL, q->max_deliveries,
                          q->lease_timeout, out);
        if (q->preset->id == PGQ_DELAYED_JOB)
            queues_emit_not_kept(&rows[i], q->destroy_failed, out);
    }
    rc = 0;
out:
    free(done);
    free(rows);
    PQclear(r);
    return rc;
}
