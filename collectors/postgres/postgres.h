/* postgres.h: the sections of a `kind: postgres` source.
 *
 * One postgres source is one connection to one database; under it the config lists what to
 * watch, each list handled by a section: `dedup_tables` (kind label dedup_table), `claim_tables`
 * (claim_table), `outboxes` (outbox), `queues` (pgmq, pg_jobs) and `queries` (sql).
 * postgres.c owns the connection and the source-level keys and walks the sections; each section
 * (collectors/postgres/<section>.c) parses its items and queries them. Before a section's samples
 * are added the metric set's kind label is switched to the section's kind_label, so the series say
 * what they describe while qrel_collector_up{kind="postgres"} names the source. */
#ifndef QREL_POSTGRES_H
#define QREL_POSTGRES_H

#include "collector.h"
#include "common/pg.h"

struct pg_section_kind {
    const char *key;        /* the list's key in the source mapping: "dedup_tables" */
    const char *kind_label; /* the kind label of its series: "dedup_table" */
    /* Parses one list item (a mapping); no I/O. Returns the item's state or NULL with e set
     * (messages from cfg_error carry file:line:col). Calls cfg_finish on the item. */
    void *(*configure)(struct cfg_node *item, const char *source, struct err *e);
    /* Queries one item and adds its samples. Errors name the source, table and column. */
    int (*collect)(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e);
    /* Verifies the item against the live database (table and columns exist, with the expected
     * types where it matters) for --config.check and after a failed query. */
    int (*check)(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e);
    void (*destroy)(void *item);
    /* Optional: called once all items of the section are configured, for rules across items
     * (the same user metric defined by two queries). No I/O. */
    int (*finish)(void *const *items, size_t n, struct err *e);
};

/* Rows stamped after now() (writers whose clocks run ahead) are in no window; each table counts
 * them for qrel_future_stamped_rows, up to PG_AHEAD_CAP: enough to tell a stray row from a
 * skewed writer, while reading at most that many index entries however many rows lie ahead (a
 * writer 15 minutes fast puts 3x a 5-minute window there). PG_AHEAD_SQL is the count as a
 * scalar subquery, for a format with two arguments: the quoted table and column. */
#define PG_AHEAD_CAP "1000"
#define PG_AHEAD_SQL                                                                               \
    "(SELECT count(*) FROM (SELECT FROM %s WHERE %s > now() LIMIT " PG_AHEAD_CAP                   \
    ") AS ahead)::float8"

extern const struct pg_section_kind pg_dedup_section;
extern const struct pg_section_kind pg_claim_section;
extern const struct pg_section_kind pg_outbox_section;
/* `queues`: queue and job tables by preset (pgmq, graphile_worker, pg_boss, river, oban, que,
 * good_job, solid_queue); kind label pgmq or pg_jobs, which collect() sets itself. */
extern const struct pg_section_kind pg_queues_section;
/* `queries`: user-defined SQL mapped to metric families (kind label sql). */
extern const struct pg_section_kind pg_sql_section;

#endif
