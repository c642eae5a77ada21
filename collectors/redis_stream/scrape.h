/* redis_stream/scrape.h: what the files of the `redis_stream` kind share, and nothing outside
 * the folder includes: the source's configuration (config.c), one scrape's tables (scrape.c),
 * the three pipelines that fill them (pipelines.c) and the series made of them (output.c).
 * redis_stream.c runs the steps in order for collect(). */
#ifndef QREL_REDIS_STREAM_SCRAPE_H
#define QREL_REDIS_STREAM_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "common/entries.h"
#include "common/redis.h"
#include "common/redis_cluster.h"
#include "common/redis_settings.h"
#include "common/exclude.h"
#include "hashtab.h"
#include "redis_stream.h"

#define NONE ((size_t)-1)

/* ---- the configuration (config.c) ---- */

struct stream_spec {
    char *name; /* exactly one of name and pattern */
    char *pattern;
    struct exclude exclude; /* streams the pattern found, left out */
    char **groups;          /* NULL: every group */
    size_t ngroups;
    struct redis_stream_policy pol;
    char *dlq_tmpl; /* dead_letter_stream, NULL when not configured */
};

/* A stream to read after ASKING (ask.c): on the node at address, with st->specs[spec]. */
struct ask {
    char *address;
    char *name;
    size_t spec;
    unsigned char from_pattern;
};

struct state {
    struct redis_settings
        rs; /* address, username, password (wiped on destroy), db, max_response_bytes */
    long long max_streams;
    long long pending_scan_limit;
    double consumer_active_window; /* seconds: a consumer idle no longer is active */
    struct stream_spec *specs;
    size_t nspecs;
    struct redis_conn *conn; /* kept between scrapes, dropped after any error */
    int warned_cap;
    /* cluster: true (cluster.c): the map and a connection per master; while one master is read,
     * conn is that master's (borrowed) and cl_node its index; redirected says that a reply of the
     * pass was MOVED or ASK. */
    struct redis_cluster cl;
    size_t cl_node;
    size_t cl_excluded; /* streams the masters' patterns excluded, summed over one scrape */
    int redirected;
    /* ASK (ask.c): asking says the pass reads a migrating slot's streams, ASKING before every
     * command; asks are the streams one master's pass met that are to be read so, asked the
     * names read so in this scrape (each once). */
    int asking;
    struct ask *asks;
    size_t nasks;
    char **asked;
    size_t nasked;
    int cl_stale; /* a slot moved between masters: learn the map again after this scrape */
};

int redis_stream_configure(struct collector *c, struct cfg_node *map, struct err *e);
void redis_stream_destroy(struct collector *c);
/* The first entry of streams that has queue: by name, else by a pattern it matches (SCAN's glob,
 * which fnmatch reads alike for names). NULL when none. */
const struct stream_spec *redis_stream_spec_of(const struct state *st, const char *queue);

/* ---- one scrape's tables (scrape.c) ---- */

/* The strings of one scrape (stream, dead-letter and group names), each stored once in blocks
 * that never move, so pointers into them stay valid while more are added, and found again
 * through a hash table: a key SCAN reports twice, or a group name thousands of streams share, is
 * stored once. Blocks and table are per scrape: nothing is kept between scrapes. */
struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
};

#define ARENA_BLOCK_BYTES 65536

struct name {
    const char *s; /* NUL-terminated, in the arena */
    size_t len;
    size_t pat;             /* the first pattern (config order) that found it; NONE when none */
    size_t dlq;             /* its slot in scrape.dlqs once XLEN/XRANGE are asked; NONE before */
    unsigned char chosen;   /* already a target */
    unsigned char is_dlq;   /* the dead-letter stream of a target (other than itself) */
    unsigned char excluded; /* a pattern found it and its exclude left it out */
};

struct names {
    struct arena_block *blocks;
    struct name *v; /* by id */
    size_t n, cap;
    struct hashtab index; /* ids by name */
};

/* The id of the len bytes at s, added when new (then *added = 1 when added is not NULL). Ids are
 * stable; pointers into t->v are not once another name is added. */
size_t redis_stream_names_intern(struct names *t, const char *s, size_t len, int *added);
/* The table is needed only while targets and groups are resolved; the strings stay. */
void redis_stream_names_drop_index(struct names *t);

/* One included consumer group, as XINFO GROUPS reported it: what the series and the commands of
 * step 3 need, nothing else. */
struct group {
    const char *name; /* in the scrape's arena */
    long long pending;
    long long consumers; /* XINFO GROUPS' count, idle or not */
    long long lag;
    struct redis_stream_id last_delivered;
    int has_lag;
    int has_entries_read;
    long long entries_read; /* with pending, of the same reply: qrel_messages_consumed_total */
};

struct target {
    const char *name; /* in the scrape's arena */
    const char *dlq;  /* expanded dead_letter_stream (arena), or NULL */
    size_t name_id;   /* ids in the scrape's names, while they exist */
    size_t dlq_id;    /* NONE without a dead-letter stream */
    size_t dlq_slot;  /* index into scrape.dlqs */
    size_t group0;    /* this stream's groups: scrape.groups[group0 .. group0 + ngroups) */
    size_t ngroups;
    unsigned spec; /* index into state.specs */
    unsigned char from_pattern;
    unsigned char missing;   /* XINFO GROUPS said: no such key */
    unsigned char dlq_owner; /* the first stream with this dead-letter stream: asks for it */
};

/* What a dead-letter stream's XLEN, XRANGE and XREVRANGE said, shared by the streams naming it. */
struct dlq {
    long long len;
    int found, found_last;
    struct redis_stream_id first, last;
};

struct scrape {
    struct names names;
    struct target *t;
    size_t n, cap;
    size_t missing;
    struct group *groups;
    size_t ngroups, groups_cap;
    struct dlq *dlqs;
    size_t ndlqs;
    struct entry_skips skips; /* entries whose id gives no age (qrel_skipped_entries) */
    size_t excluded;          /* streams a pattern found and its exclude left out */
};

void redis_stream_scrape_free(struct scrape *sc);
/* Adds name_id as the next target, with the settings of st->specs[spec]. */
void redis_stream_target_add(struct scrape *sc, size_t name_id, size_t spec, int from_pattern);

/* ---- the pipelines (pipelines.c) ---- */

/* Step 1: the streams of this scrape (SCAN rounds for the patterns). */
int redis_stream_resolve_targets(struct collector *c, struct state *st, struct redis_pipe *p,
                                 const struct deadline *dl, struct scrape *sc, struct err *e);
/* Step 2: TIME and XINFO GROUPS for every stream, in one pipeline. */
int redis_stream_read_groups(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                             struct scrape *sc, int64_t *now_ms, struct err *e);
/* Step 3: XPENDING and XRANGE per group, XLEN, XRANGE and XREVRANGE per dead-letter stream, one
 * pipeline, read and emitted as the replies come. */
int redis_stream_read_details(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                              struct scrape *sc, int64_t now_ms, struct metric_set *out,
                              size_t *truncated, struct err *e);

/* ---- Redis Cluster (cluster.c) ---- */

/* The three steps on every master of the cluster, each reading the streams of its slots; a
 * master that answers a key with MOVED or ASK (a failover, a slot moved) makes the map be learnt
 * again, and the masters not read yet are read by the new map within the same deadline. */
int redis_stream_cluster_scrape(struct collector *c, const struct deadline *dl,
                                struct metric_set *out, size_t *truncated, struct err *e);
/* The connection of the master serving key (the dead-letter join's reads). NULL with e set. */
struct redis_conn *redis_stream_cluster_conn_for(struct collector *c, const char *key,
                                                 const struct deadline *dl, struct err *e);

/* ---- ASK (ask.c) ---- */

/* Adds name to st->asks, unless it is there or was read after ASKING this scrape already. */
void redis_stream_ask_add(struct state *st, const char *address, const char *name, size_t spec,
                          int from_pattern);
/* Was name read after ASKING this scrape? */
int redis_stream_ask_done(const struct state *st, const char *name);
void redis_stream_asks_clear(struct state *st);  /* st->asks emptied */
void redis_stream_asked_clear(struct state *st); /* st->asked emptied */

/* ---- the series (output.c); failed adds are the scheduler's to report (collector.h) ---- */

void redis_stream_emit_group(struct metric_set *out, const char *queue, const char *group,
                             const struct redis_stream_group_values *v);
/* A dead-letter id that gives no age leaves that age out and, for the stream that asked for the
 * dead-letter stream (dlq_owner), is counted into skips as a bad_timestamp of the dead-letter
 * stream. */
void redis_stream_emit_dlq(struct metric_set *out, const struct target *t, const struct dlq *d,
                           int64_t now_ms, struct entry_skips *skips);
/* The source's count of groups whose pending scan pending_scan_limit cut short (0 included). */
void redis_stream_emit_truncated(struct metric_set *out, size_t groups);
/* qrel_excluded_objects{object="stream"}: the streams a pattern found and its exclude left out
 * (when any entry has exclude). */
void redis_stream_emit_excluded(struct metric_set *out, const struct state *st,
                                const struct scrape *sc);

#endif
