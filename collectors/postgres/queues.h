/* postgres/queues.h: what the files of the `queues` section share (not a public interface).
 *
 * The section is split by purpose: queues.c parses an entry, detects the runner's layout and
 * runs a scrape; queues_sql.c holds every preset's SQL and builds the statements (pure);
 * queues_emit.c reads the results and adds the series (the margin is worked out there);
 * queues_check.c checks an entry against the live database for --config.check. */
#ifndef QREL_POSTGRES_QUEUES_H
#define QREL_POSTGRES_QUEUES_H

#include "postgres.h"
#include "buf.h"

/* A queue label for graphile-worker jobs added without a queue name (they run in parallel). */
#define GRAPHILE_NO_QUEUE "(none)"
/* graphile-worker treats a lock older than this as abandoned (get_job's job_expiry). */
#define GRAPHILE_LOCK_SECONDS 14400
/* delayed_job: Delayed::Worker's defaults, max_run_time (a lock older than this is free again to
 * its reserve) and max_attempts. */
#define DELAYED_JOB_MAX_RUN_TIME 14400.0
#define DELAYED_JOB_MAX_ATTEMPTS 25
/* A queue label for delayed_job jobs enqueued without a queue (its default_queue_name is nil). */
#define DELAYED_JOB_NO_QUEUE "(none)"
/* Laravel's database driver: config/queue.php's retry_after for the database connection (a job
 * reserved longer ago than this is handed out again: DatabaseQueue::isReservedButExpired), and the
 * connection's name as Laravel's failer writes it into failed_jobs. */
#define LARAVEL_RETRY_AFTER 90.0
#define LARAVEL_CONNECTION "database"
/* pgmq: more queues than this in one item must be narrowed with `queues:`. */
#define PGMQ_MAX_QUEUES 2000

/* The presets. */
enum pgq_preset_id {
    PGQ_PGMQ,
    PGQ_GRAPHILE_WORKER,
    PGQ_PG_BOSS,
    PGQ_RIVER,
    PGQ_OBAN,
    PGQ_QUE,
    PGQ_GOOD_JOB,
    PGQ_SOLID_QUEUE,
    PGQ_DELAYED_JOB,
    PGQ_LARAVEL,
};

/* What a preset's layout records, and so which families its queues get. */
enum {
    PGQ_HAS_REDELIVERED = 1 << 0,    /* an attempt / read counter */
    PGQ_HAS_DEAD = 1 << 1,           /* jobs the runner gave up on and keeps */
    PGQ_HAS_MAX_DELIVERIES = 1 << 2, /* a max-attempts column */
    PGQ_HAS_LEASE_AGE = 1 << 3,      /* when the current hold began */
    PGQ_HAS_LEASE_TIMEOUT = 1 << 4,  /* how long a hold may last */
    PGQ_JOB_TIMEOUT = 1 << 5,        /* the lease may be declared as job_timeout */
    PGQ_HAS_AHEAD = 1 << 6,          /* a column qrel reads is stamped by the host's clock */
    PGQ_HAS_EXPIRED = 1 << 7,        /* held jobs the runner already hands out again (Laravel) */
};

struct pgq_preset {
    enum pgq_preset_id id;
    const char *name;              /* the `preset:` value */
    const char *schema;            /* the default schema */
    const char *dead_letter_queue; /* the dead_letter_queue label of its dead jobs */
    const char *kind_label;
    unsigned flags;
};

/* The columns of the aggregate every preset's statement ends in. */
enum pgq_col {
    PGQ_COL_QUEUE,
    PGQ_COL_READY,
    PGQ_COL_IN_FLIGHT,
    PGQ_COL_DELAYED,
    PGQ_COL_OLDEST_AGE,
    PGQ_COL_REDELIVERED,
    PGQ_COL_DEAD,
    PGQ_COL_DEAD_AGE,
    PGQ_COL_MAX_DELIVERIES,
    PGQ_COL_LEASE_AGE,
    PGQ_COL_LEASE_TIMEOUT,
    PGQ_COL_HORIZON,   /* the retry horizon the runner's retry settings give, seconds */
    PGQ_COL_HEARTBEAT, /* 1 when the lease is a renewable heartbeat (pg-boss 12) */
    PGQ_COL_AHEAD,     /* jobs stamped after now() by a host's clock, up to PG_AHEAD_CAP */
    PGQ_COL_LAST_TRY,  /* pending jobs whose next failure is their last (delayed_job) */
    PGQ_COL_EXPIRED,   /* held jobs whose lease ran out under their handler (class 'e') */
    PGQ_COL_DLQ,       /* text: the queue's own dead-letter queue, NULL when it has none */
    PGQ_NCOLS
};

/* One row of the aggregate: v[k] valid when has[k] (the queue and dlq columns are strings). */
struct pgq_row {
    const char *queue;
    const char *dlq; /* NULL: the preset's dead_letter_queue label */
    double v[PGQ_NCOLS];
    int has[PGQ_NCOLS];
};

struct queues {
    const struct pgq_preset *preset;
    char *schema;  /* unquoted, as configured or the preset's default */
    char **queues; /* the `queues` filter, or NULL */
    size_t nqueues;
    char *filter_param;       /* the filter as a text[] literal for $1, or NULL */
    long long max_deliveries; /* declared; 0 = not declared */
    double lease_timeout;     /* visibility_timeout / job_timeout declared; < 0 = not declared */
    char *what;               /* queues preset "river" (schema "public") */
    char *at;                 /* the entry's place in the config file, file:line:col */
    double window;            /* seconds of finished jobs the handler quantiles cover */
    char window_param[64];    /* the same as an interval parameter */
    /* Layout found on the live database (graphile-worker, pg-boss), 0 until detected. */
    int layout;
    /* delayed_job: whether its workers destroy the jobs that fail for good (destroy_failed_jobs),
     * -1 when not declared (then detected); the lease is lease_timeout (max_run_time). */
    int destroy_failed;
    /* laravel: the jobs table's connection name in failed_jobs (`connection`); the lease is
     * lease_timeout (retry_after). NULL for the other presets. */
    char *connection;
    /* laravel: the `redis:` block, where qrel dlq puts the Redis driver's failed jobs back
     * (laravel_redis.h); NULL when absent (those jobs are refused). */
    struct laravel_redis *redis;
    char *sql;      /* the built statement for job presets, NULL until built */
    char *done_sql; /* the handler-latency statement, NULL until built or where none */
};

/* The layouts: graphile-worker before 0.14 and Oban before V14 are LEGACY; pg-boss is one of
 * the BOSS ones; delayed_job's is LAYOUT_DJ plus a bit for each of its time columns that is
 * timestamptz (run_at 1, locked_at 2, failed_at 4, created_at 8; none with Rails' default). */
enum {
    LAYOUT_UNKNOWN,
    LAYOUT_CURRENT,
    LAYOUT_LEGACY,
    LAYOUT_BOSS9,
    LAYOUT_BOSS10,
    LAYOUT_BOSS11,
    LAYOUT_BOSS12,
    LAYOUT_DJ,
};

/* The handler quantiles (0.5, 0.9, 0.99, 1) in the latency statement's columns. */
#define PGQ_NQ 4
#define PGQ_P99 2
/* The default `window` of finished jobs the quantiles cover. */
#define PGQ_DEFAULT_WINDOW 300.0
/* Holds and durations below 1 ms count as 1 ms in the margin (as for claim tables). */
#define PGQ_MIN_DENOMINATOR 0.001

/* What the latency statement said about one queue. */
struct pgq_done {
    int has; /* jobs finished within the window */
    double n;
    double q[PGQ_NQ];
};

/* queues.c: the preset called name (pgmq, graphile_worker, ...); NULL when there is none. */
const struct pgq_preset *queues_preset_find(const char *name);

/* queues_sql.c (pure): the start of every statement: the aggregate over any preset's rows, one
 * result row per queue, columns as enum pgq_col. */
extern const char queues_sql_aggregate_head[];
/* The statement of a job preset in a layout, its pending and dead jobs
 * aggregated by queue, with $1 the `queues` filter when filtered; NULL for pgmq. */
char *queues_sql_jobs(enum pgq_preset_id id, const char *schema, int layout, int filtered);
/* The same with delayed_job's max_run_time (seconds) and max_attempts written in (the plain one
 * takes delayed_job's defaults; the other presets have neither). */
char *queues_sql_jobs_limits(enum pgq_preset_id id, const char *schema, int layout, int filtered,
                             double max_run_time, long long max_attempts);
/* queues_sql_dj.c (pure): delayed_job's statement, one scan of its table (same columns). */
char *queues_sql_delayed_job(const char *schema, int layout, int filtered, double max_run_time,
                             long long max_attempts);
/* Laravel's statement: retry_after (seconds) and the jobs table's connection name written in. */
char *queues_sql_jobs_laravel(const char *schema, int filtered, double retry_after,
                              const char *connection);
/* The handler-latency statement ($1 the window, $2 the filter), NULL where none. */
char *queues_sql_done(enum pgq_preset_id id, const char *schema, int layout, int filtered);
/* pgmq's statement, built per scrape: the aggregate's head, one branch per queue (lit: its name
 * as a literal; held: the hold expression; qs, qt: schema and table, quoted), then the tail. */
void queues_sql_pgmq_head(struct buf *b);
void queues_sql_pgmq_queue(struct buf *b, int first, const char *lit, const char *held,
                           const char *qs, const char *qt);
void queues_sql_pgmq_tail(struct buf *b);

/* queues_emit.c: runs sql (the aggregate) and the item's latency statement, and adds every
 * queue's series. */
int queues_emit_run(struct queues *q, struct pg_conn *c, const struct deadline *dl, const char *sql,
                    int nparams, const char *const *params, struct metric_set *out, struct err *e);
/* The series of one queue, from its aggregate row and finished jobs (d, NULL where the preset
 * has none) and what the entry declares. Pure. */
void queues_emit_queue(const struct pgq_preset *p, const struct pgq_row *row,
                       const struct pgq_done *d, long long max_deliveries, double lease_timeout,
                       struct metric_set *out);
/* delayed_job: qrel_dead_letters_not_kept of one queue, 1 when destroy_failed (as declared, -1
 * not) says its failed jobs are destroyed, or, undeclared, when the queue keeps no failed job
 * while some are one failure from the end. Pure. */
void queues_emit_not_kept(const struct pgq_row *row, int destroy_failed, struct metric_set *out);
/* The total delay of the runner's default retry policy over max_attempts deliveries, or -1 where
 * it is not known (every runner but River and Oban). Pure. */
double queues_emit_backoff(enum pgq_preset_id id, long long max_attempts);
/* lease / the worst of (p99, hold); 0 when there is none to give. Pure. */
int queues_emit_margin(double lease, const struct pgq_done *d, int heartbeat, int has_hold,
                       double hold, double *out);

/* queues.c: the pgmq queues there are; the runner's layout; a job preset's scrape. */
int queues_pgmq_list(struct queues *q, struct pg_conn *c, const struct deadline *dl, PGresult **r,
                     struct err *e);
int queues_detect_layout(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         struct err *e);
int queues_collect_jobs(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        struct metric_set *out, struct err *e);

/* queues_check.c: the section's check(). */
int queues_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e);

#endif
