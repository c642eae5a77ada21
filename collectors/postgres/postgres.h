/* postgres.h: the sections of a `kind: postgres` source.
 *
 * One postgres source is one connection to one database; under it the config lists what to
 * watch, each list handled by a section: `dedup_tables` (kind label dedup_table), `claim_tables`
 * (claim_table), `outboxes` (outbox), `queues` (pgmq, pg_jobs) and `queries` (sql).
 * postgres.c owns the connection and the source-level keys and walks the sections (one row each in
 * postgres_sections); each section
 * (collectors/postgres/<section>.c) parses its items and queries them. Before a section's samples
 * are added the metric set's kind label is switched to the section's kind_label, so the series say
 * what they describe while qrel_collector_up{kind="postgres"} names the source. */
#ifndef QREL_POSTGRES_H
#define QREL_POSTGRES_H

#include "collector.h"
#include "common/pg.h"

/* The hooks of a section. configure parses one list item (a mapping); no I/O. Returns the item's
 * state or NULL with e set (messages from cfg_error carry file:line:col). Calls cfg_finish on
 * the item. collect queries one item and adds its samples; errors name the source, table and
 * column. check verifies the item against the live database (table and columns exist, with the
 * expected types where it matters) for --config.check and after a failed query. finish is
 * optional: called once all items of the section are configured, for rules across items (the
 * same user metric defined by two queries); no I/O. */
typedef void *pg_configure_fn(struct cfg_node *item, const char *source, struct err *e);
typedef int pg_collect_fn(void *item, struct pg_conn *c, const struct deadline *dl,
                          struct metric_set *out, struct err *e);
typedef int pg_check_fn(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e);
typedef void pg_destroy_fn(void *item);
typedef int pg_finish_fn(void *const *items, size_t n, struct err *e);

/* A section: a row of postgres_sections, in this order. */
struct pg_section_kind {
    const char *key;        /* the list's key in the source mapping: "dedup_tables" */
    const char *kind_label; /* the kind label of its series: "dedup_table" */
    pg_configure_fn *configure;
    pg_collect_fn *collect;
    pg_check_fn *check;
    pg_destroy_fn *destroy;
    pg_finish_fn *finish; /* NULL: none */
};

/* The sections, in the order their items are collected. */
extern const struct pg_section_kind postgres_sections[];
extern const size_t postgres_nsections;

/* Rows stamped after now() (writers whose clocks run ahead) are in no window; each table counts
 * them for qrel_future_stamped_rows, up to PG_AHEAD_CAP: enough to tell a stray row from a
 * skewed writer, while reading at most that many index entries however many rows lie ahead (a
 * writer 15 minutes fast puts 3x a 5-minute window there). PG_AHEAD_SQL is the count as a
 * scalar subquery, for a format with two arguments: the quoted table and column. */
#define PG_AHEAD_CAP "1000"
/* Ahead means more than a second after now(). now() is when this statement's transaction began,
 * before it was planned and took its snapshot: a concurrent writer that stamps a row with its own
 * now() and commits in between leaves a row this statement sees stamped a few milliseconds after
 * its now(), a race and not a skewed clock. The windows of the tables end there too, so such a
 * row is counted once (in its window), and never as ahead. */
#define PG_AHEAD_NOW "(now() + interval '1 second')"
#define PG_AHEAD_SQL                                                                               \
    "(SELECT count(*) FROM (SELECT FROM %s WHERE %s > " PG_AHEAD_NOW " LIMIT " PG_AHEAD_CAP        \
    ") AS ahead)::float8"

/* The hooks of the sections: dedup_tables, claim_tables and outboxes (tables.h: their entries are
 * a table_item, checked and freed by tables.c); `queues`: queue and job tables by preset (pgmq,
 * graphile_worker, pg_boss, river, oban, que, good_job, solid_queue; kind label pgmq or pg_jobs,
 * which its collect sets itself); `queries`: user-defined SQL mapped to metric families (kind
 * label sql). */
pg_configure_fn dedup_configure, claim_configure, outbox_configure, queues_configure, sql_configure;
pg_collect_fn dedup_collect, claim_collect, outbox_collect, queues_collect, sql_collect;
pg_check_fn tables_check, queues_check, sql_check;
pg_destroy_fn tables_free, outbox_free, queues_destroy, sql_destroy;
pg_finish_fn sql_finish;

/* ---- `qrel dlq` on the job runners (dlq_sql.c, pure; the hooks are dlq.c's) ---- */

/* Where a dead job carries its work id (a dead_letters entry's id_field): `job:id` the job's id,
 * `job:key` its uniqueness key (pg-boss singleton_key, graphile-worker job_key), anything else a
 * dotted key of its data / payload ("order.id"), whose string or number is the id. */
enum pgdlq_id { PGDLQ_ID_JOB, PGDLQ_ID_KEY, PGDLQ_ID_DATA };
/* 0 with *kind set and, for a data key, *path a text[] literal of its parts (malloc'd, else
 * NULL); -1 with a short reason in why (cap bytes). */
int postgres_dlq_id_field(const char *id_field, enum pgdlq_id *kind, char **path, char *why,
                          size_t cap);
/* The replay stamp as the read statement gives it: NULL (the data is no JSON object: no stamp
 * can be kept) -1, else the whole number 0 to 1000000000 it holds (0 when none); -1 for anything
 * else (a key someone else wrote). */
long long postgres_dlq_replays(const char *cell);

/* What a dead letter is, per runner: a pg-boss 12 job failed in its own queue (the queue has no
 * dead_letter), a pg-boss 12 copy waiting in the queue's dead_letter queue, a graphile-worker job
 * whose attempts reached max_attempts. */
enum pgdlq_mode {
    PGDLQ_BOSS_FAILED,
    PGDLQ_BOSS_DEAD_LETTER,
    PGDLQ_GRAPHILE,
    PGDLQ_RIVER,
    PGDLQ_OBAN,
    PGDLQ_QUE,
    PGDLQ_GOOD_JOB,
    PGDLQ_SOLID_QUEUE,
    PGDLQ_LARAVEL, /* failed_jobs (dlq.c's own statements) */
};
/* The statements, with schema quoted in (malloc'd). read: $1 queue (the dead_letter queue for
 * PGDLQ_BOSS_DEAD_LETTER; NULL for graphile-worker's jobs without one), $2 the limit, $3 the data
 * path (text[] or NULL), $4 "id", "key" or "data", and for PGDLQ_BOSS_DEAD_LETTER $5 the origin;
 * columns: job id, work id, deliveries, dead since (epoch), stamp (postgres_dlq_replays), body
 * bytes, total. move (pg-boss): one statement, $1 queue read, $2 job id, $3 stamp or NULL, and
 * for PGDLQ_BOSS_DEAD_LETTER $4 the origin; columns: found, moved, twin id, twin state, policy,
 * key. */
char *postgres_dlq_read_sql(enum pgdlq_mode m, const char *schema);
char *postgres_dlq_move_sql(enum pgdlq_mode m, const char *schema);
/* pg-boss 9, 10, 11 or 12 (version): the read or, with move, the move of
 * postgres_dlq_read_sql / postgres_dlq_move_sql, with their parameters and columns, as that
 * release keeps its jobs; for 9 the policy column names the unique index (singletonKey,
 * singletonOn, singleton queue). NULL where the release has no such dead letters (9 has no
 * dead_letter queue) and for another mode. */
char *postgres_dlq_boss_sql(int version, enum pgdlq_mode m, int move, const char *schema);
/* graphile-worker's move, one transaction of three statements ($1 job id): lock the job while it
 * is still dead, stamp its payload ($2), reschedule_jobs it. */
enum pgdlq_graphile_step { PGDLQ_G_LOCK, PGDLQ_G_STAMP, PGDLQ_G_RESCHEDULE };
char *postgres_dlq_graphile_sql(enum pgdlq_graphile_step s, const char *schema);
/* River, Oban, Que, GoodJob, Solid Queue (PGDLQ_RIVER...): the read (params and columns as
 * postgres_dlq_read_sql's) or, with move, the one-statement move ($1 queue, $2 job id, $3 the
 * stamp or NULL; Solid Queue takes no $3): columns found, moved, and for Solid Queue the job's
 * concurrency_key. NULL for another mode. */
char *postgres_dlq_runner_sql(enum pgdlq_mode m, int move, const char *schema);

/* ---- Laravel's job payload (laravel.c, pure) ---- */

/* The string or integer at the dotted property path ("orderId", "order.id") of the PHP
 * serialize() text of a job's command (an object, len bytes, NULs allowed), into out (cap bytes,
 * NUL-terminated). 0 found; 1 absent, null, not a string or integer, or too long for out; -1 not
 * a well-formed serialized object (or nested deeper than 16, or with trailing bytes). */
int postgres_laravel_command_prop(const char *cmd, size_t len, const char *path, char *out,
                                  size_t cap);
/* What qrel dlq reads of a failed_jobs payload. */
struct laravel_payload {
    char uuid[64];      /* "" when absent */
    long long attempts; /* the payload's attempts (Redis driver); -1 absent */
    long long replays;  /* its DLQ_STAMP key; 0 absent, -1 not a whole number 0..1e9 */
    int retry_until;    /* a retryUntil is set (queue:retry computes a new one by calling PHP) */
    int has_work_id;
    char work_id[256]; /* the command's property at path, when has_work_id */
};
/* Reads the payload (JSON, len bytes); path (NULL: none) the work id's property path. 0, or -1
 * when it is not a JSON object. */
int postgres_laravel_payload_read(const char *json, size_t len, const char *path,
                                  struct laravel_payload *out);
/* The payload to push back, as artisan queue:retry does: attempts set to 0 where the payload
 * has it, and DLQ_STAMP set to stamp (when > 0). malloc'd JSON; NULL when it is no JSON object. */
char *postgres_laravel_payload_requeue(const char *json, size_t len, long long stamp);

#endif
