/* postgres/queues_check.c: --config.check for the `queues` section: the runner's layout is
 * detected, the tables and every column its statements name are checked (so a missing column is
 * named with the preset and schema), then the scrape's own statements run into a set thrown
 * away, so the check fails on whatever a scrape would fail on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queues.h"
#include "alloc.h"

/* The tables and columns a preset's statements read, in the layouts given (a bit per LAYOUT_*;
 * ANY_LAYOUT for presets with one). check_tables checks every row of the item's preset and
 * layout. */
struct table_check {
    enum pgq_preset_id preset;
    unsigned layouts;
    const char *table;
    struct pg_column cols[12];
    size_t n;
};

#define ANY_LAYOUT (~0u)
#define IN(layout) (1u << (layout))
#define T PG_COL_TIME
#define N PG_COL_NUMBER
#define A PG_COL_ANY
/* graphile-worker: its job table, _private_jobs since 0.14, jobs before, after the queue column. */
#define GRAPHILE_JOB_COLS                                                                          \
    {"run_at", T}, {"attempts", N}, {"max_attempts", N}, {"created_at", T}, {"updated_at", T},     \
    {                                                                                              \
        "locked_at", T                                                                             \
    }
/* pg-boss 10-12: the job table (its partitions inherit the columns) and the queue table the
 * dead-letter queue and the retry settings come from. */
#define BOSS_JOB_COLS                                                                              \
    {"name", A}, {"state", A}, {"start_after", T}, {"created_on", T}, {"completed_on", T},         \
        {"started_on", T}, {"retry_count", N},                                                     \
    {                                                                                              \
        "retry_limit", N                                                                           \
    }
#define BOSS_QUEUE_COLS                                                                            \
    {"name", A}, {"dead_letter", A}, {"retry_limit", N}, {"retry_delay", N}, {"retry_backoff", A}, \
    {                                                                                              \
        "expire_seconds", N                                                                        \
    }
static const struct table_check checks[] = {
    {PGQ_PGMQ, ANY_LAYOUT, "meta", {{"queue_name", A}}, 1},
    {PGQ_GRAPHILE_WORKER,
     IN(LAYOUT_CURRENT),
     "_private_jobs",
     {{"job_queue_id", A}, GRAPHILE_JOB_COLS},
     7},
    {PGQ_GRAPHILE_WORKER,
     IN(LAYOUT_CURRENT),
     "_private_job_queues",
     {{"id", A}, {"queue_name", A}},
     2},
    {PGQ_GRAPHILE_WORKER, IN(LAYOUT_LEGACY), "jobs", {{"queue_name", A}, GRAPHILE_JOB_COLS}, 7},
    {PGQ_PG_BOSS,
     IN(LAYOUT_BOSS9),
     "job",
     {{"name", A},
      {"state", A},
      {"startafter", T},
      {"createdon", T},
      {"completedon", T},
      {"startedon", T},
      {"retrycount", N},
      {"retrylimit", N},
      {"expirein", A}},
     9},
    {PGQ_PG_BOSS, IN(LAYOUT_BOSS10), "job", {BOSS_JOB_COLS, {"expire_in", A}}, 9},
    {PGQ_PG_BOSS, IN(LAYOUT_BOSS10), "queue", {BOSS_QUEUE_COLS}, 6},
    {PGQ_PG_BOSS, IN(LAYOUT_BOSS11), "job", {BOSS_JOB_COLS, {"expire_seconds", N}}, 9},
    {PGQ_PG_BOSS,
     IN(LAYOUT_BOSS12),
     "job",
     {BOSS_JOB_COLS,
      {"expire_seconds", N},
      {"heartbeat_seconds", N},
      {"heartbeat_on", T},
      {"blocked", A}},
     12},
    {PGQ_PG_BOSS,
     IN(LAYOUT_BOSS11) | IN(LAYOUT_BOSS12),
     "queue",
     {BOSS_QUEUE_COLS, {"retry_delay_max", N}},
     7},
    {PGQ_RIVER,
     ANY_LAYOUT,
     "river_job",
     {{"queue", A},
      {"state", A},
      {"attempt", N},
      {"max_attempts", N},
      {"created_at", T},
      {"attempted_at", T},
      {"finalized_at", T}},
     7},
    {PGQ_OBAN,
     ANY_LAYOUT,
     "oban_jobs",
     {{"queue", A},
      {"state", A},
      {"attempt", N},
      {"max_attempts", N},
      {"inserted_at", T},
      {"attempted_at", T},
      {"discarded_at", T},
      {"completed_at", T}},
     8},
    {PGQ_QUE,
     ANY_LAYOUT,
     "que_jobs",
     {{"id", N},
      {"queue", A},
      {"run_at", T},
      {"error_count", N},
      {"finished_at", T},
      {"expired_at", T}},
     6},
    {PGQ_GOOD_JOB,
     ANY_LAYOUT,
     "good_jobs",
     {{"queue_name", A},
      {"scheduled_at", T},
      {"performed_at", T},
      {"finished_at", T},
      {"error", A},
      {"created_at", T},
      {"executions_count", N}},
     7},
    {PGQ_SOLID_QUEUE,
     ANY_LAYOUT,
     "solid_queue_jobs",
     {{"id", A}, {"queue_name", A}, {"created_at", T}},
     3},
    {PGQ_SOLID_QUEUE,
     ANY_LAYOUT,
     "solid_queue_ready_executions",
     {{"job_id", A}, {"queue_name", A}},
     2},
    {PGQ_SOLID_QUEUE,
     ANY_LAYOUT,
     "solid_queue_claimed_executions",
     {{"job_id", A}, {"created_at", T}},
     2},
    {PGQ_SOLID_QUEUE, ANY_LAYOUT, "solid_queue_scheduled_executions", {{"queue_name", A}}, 1},
    {PGQ_SOLID_QUEUE, ANY_LAYOUT, "solid_queue_blocked_executions", {{"queue_name", A}}, 1},
    {PGQ_SOLID_QUEUE,
     ANY_LAYOUT,
     "solid_queue_failed_executions",
     {{"job_id", A}, {"created_at", T}},
     2},
    {PGQ_DELAYED_JOB,
     ANY_LAYOUT,
     "delayed_jobs",
     {{"queue", A},
      {"attempts", N},
      {"run_at", T},
      {"locked_at", T},
      {"failed_at", T},
      {"created_at", T}},
     6},
    /* Laravel: its times are integer epochs (numbers); failed_jobs is its failer's table */
    {PGQ_LARAVEL,
     ANY_LAYOUT,
     "jobs",
     {{"queue", A}, {"attempts", N}, {"reserved_at", N}, {"available_at", N}, {"created_at", N}},
     5},
    {PGQ_LARAVEL,
     ANY_LAYOUT,
     "failed_jobs",
     {{"id", A}, {"connection", A}, {"queue", A}, {"payload", A}, {"failed_at", T}},
     5},
};
#undef T
#undef N
#undef A

/* The tables of the item's preset in the layout found (pgmq: its meta table). */
static int check_tables(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        struct err *e)
{
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        const struct table_check *t = &checks[i];
        if (t->preset != q->preset->id || !(t->layouts & IN(q->layout)))
            continue;
        char *table = xasprintf("%s.%s", q->schema, t->table);
        int rc = pg_check_columns(c, dl, q->what, table, t->cols, t->n, e);
        free(table);
        if (rc)
            return -1;
    }
    return 0;
}

static int check_pgmq(struct queues *q, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    if (check_tables(q, c, dl, e))
        return -1;
    PGresult *r = NULL;
    if (queues_pgmq_list(q, c, dl, &r, e))
        return -1;
    int rc = 0;
    /* Each listed queue must exist, else its series would silently never appear. */
    for (size_t i = 0; i < q->nqueues && rc == 0; i++) {
        int found = 0;
        for (int k = 0; k < PQntuples(r) && !found; k++)
            found = strcmp(PQgetvalue(r, k, 0), q->queues[i]) == 0;
        if (!found)
            rc = pg_error(c, e, ERR_QUERY, "%s: queue \"%s\" is not in \"%s.meta\"", q->what,
                          q->queues[i], q->schema);
    }
    for (int k = 0; k < PQntuples(r) && rc == 0; k++) {
        const char *name = PQgetvalue(r, k, 0);
        char *table = xasprintf("%s.q_%s", q->schema, name);
        struct pg_column cols[] = {
            {"vt", PG_COL_TIME},
            {"read_ct", PG_COL_NUMBER},
            {"enqueued_at", PG_COL_TIME},
        };
        rc = pg_check_columns(c, dl, q->what, table, cols, 3, e);
        free(table);
    }
    PQclear(r);
    return rc;
}

/* The columns of the layout found, then the scrape's own statements (into a set thrown
 * away), so that --config.check fails on whatever a scrape would fail on; the column check
 * comes first because it names the missing column, which the server's message may not. */
static int check_jobs(struct queues *q, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    if (queues_detect_layout(q, c, dl, e) || check_tables(q, c, dl, e))
        return -1;
    struct metric_set *scratch = metric_set_new("check", q->preset->kind_label);
    int rc = queues_collect_jobs(q, c, dl, scratch, e);
    metric_set_free(scratch);
    return rc;
}

int queues_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct queues *q = item;
    int rc = q->preset->id == PGQ_PGMQ ? check_pgmq(q, c, dl, e) : check_jobs(q, c, dl, e);
    /* which entry, by its place in the file: a source may have several of one preset */
    if (rc && q->at) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, " (the entry at %s)", q->at);
    }
    return rc;
}
