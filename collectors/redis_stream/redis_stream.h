/* redis_stream.h: the pure parts of the `redis_stream` kind, exposed for unit tests.
 *
 * The collector itself is `redis_stream_kind` (listed in registry.c, redis_stream/redis_stream.c).
 * What is declared here (redis_stream/parse.c) does no I/O: it turns Redis replies (as hiredis
 * parses them) into structs and those into the values of the series, so tests can feed recorded
 * replies (pinned to Redis 7.0) and check every edge case (nil lag, bad ids, wrong types) without
 * a server. */
#ifndef QREL_REDIS_STREAM_H
#define QREL_REDIS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "collector.h"
#include "err.h"

/* A stream entry id "<ms>-<seq>": ms is the server's clock when the entry was added (for ids
 * chosen by Redis with `*`). */
struct redis_stream_id {
    uint64_t ms;
    uint64_t seq;
};

/* Strict: two unsigned decimal numbers of at most 20 digits that fit in 64 bits, joined by one
 * '-', nothing else (no sign, no space, no missing part). Returns 0 or -1. */
int redis_stream_parse_id(const char *s, size_t len, struct redis_stream_id *out);

/* One consumer group as XINFO GROUPS reports it. entries-read and lag are Redis 7.0+ and may be
 * nil (lag is unknown after an XDEL of entries the group has not read yet); has_* say whether
 * there was a number. */
struct redis_stream_group {
    const char *name; /* borrowed from the reply: NUL-terminated, valid as long as the reply */
    size_t name_len;  /* up to a NUL byte in the name, if it has one */
    long long consumers;
    long long pending; /* delivered, not acknowledged: the group's PEL size */
    struct redis_stream_id last_delivered;
    int has_entries_read;
    long long entries_read;
    int has_lag;
    long long lag; /* entries not yet delivered to the group */
};

/* The reply to `XINFO GROUPS <stream>` is an array of groups, each a flat [key, value, ...]
 * array. redis_stream_groups_count checks the outer array and says how many groups it holds;
 * redis_stream_parse_group parses group i (0-based) into *g without allocating anything. Unknown
 * keys are skipped (newer servers add some); name, consumers, pending and last-delivered-id are
 * required. Errors: ERR_PROTOCOL naming the stream and the field, e.g.
 *   XINFO GROUPS "orders": group 1: field "pending": want an integer, got string
 * An error reply is not handled here (the caller decides what "no such key" means). */
int redis_stream_groups_count(const redisReply *r, const char *stream, size_t *n, struct err *e);
int redis_stream_parse_group(const redisReply *r, size_t i, const char *stream,
                             struct redis_stream_group *g, struct err *e);

/* What the scanned part of a group's pending entries list says. */
struct redis_stream_pending {
    size_t scanned;                /* entries in the reply (at most the COUNT asked for) */
    long long max_idle_ms;         /* longest time since last delivery among them; 0 when none */
    size_t redelivered;            /* of them, delivered more than once */
    int has_oldest;                /* scanned > 0 */
    struct redis_stream_id oldest; /* the first entry: XPENDING orders by id */
};

/* Parses the reply to the extended `XPENDING <stream> <group> - + <count>`: an array of
 * [id, consumer, idle-ms, delivery-count]. ERR_PROTOCOL names stream, group, entry and field. */
int redis_stream_parse_pending(const redisReply *r, const char *stream, const char *group,
                               struct redis_stream_pending *out, struct err *e);

/* Whether a group's pending scan was cut short: XPENDING returned limit entries (its COUNT, the
 * source's pending_scan_limit) and XINFO GROUPS counted more pending than were scanned, so the
 * figures of the scanned entries leave the rest out. p NULL (nothing scanned): 0. */
int redis_stream_pending_truncated(const struct redis_stream_pending *p, long long pending,
                                   long long limit);

/* Parses the reply to `XRANGE <key> <start> + COUNT 1`: *found = 0 for an empty array, else the
 * first entry's id. ERR_PROTOCOL messages do not name the command ("entry 1: want an id like
 * ..."): the caller prefixes them, so that it formats what it asked only when something is
 * wrong. */
int redis_stream_parse_first_entry(const redisReply *r, int *found, struct redis_stream_id *id,
                                   struct err *e);

/* Counts the consumers of the reply to `XINFO CONSUMERS <stream> <group>` (one flat array of keys
 * and values per consumer) whose `idle` (ms since the consumer last read or claimed, in Redis
 * 7.0; 7.2 adds `inactive`, since its last successful read, not read here) is at most window_ms:
 * the consumers that still read. ERR_PROTOCOL names the consumer and field ("consumer 2: field
 * \"idle\": want an integer >= 0, got a string"); the caller names the command. */
int redis_stream_parse_active_consumers(const redisReply *r, long long window_ms, long long *n,
                                        struct err *e);

/* Parses the reply to TIME ([seconds, microseconds] as strings) into milliseconds. */
int redis_stream_parse_time(const redisReply *r, int64_t *now_ms, struct err *e);

/* The reply to `SCAN <cursor> MATCH ... TYPE stream`: [cursor, keys]. Copies the next cursor into
 * cursor (cursor_size bytes, NUL-terminated; a longer one is an error) and points *keys at the
 * array of keys (borrowed from r). ERR_PROTOCOL "want [cursor, keys]"; the caller names the
 * command. */
int redis_stream_parse_scan(const redisReply *r, char *cursor, size_t cursor_size,
                            const redisReply **keys, struct err *e);
/* Key j of that array as *len bytes at the returned pointer (borrowed), or NULL when it is not a
 * string or holds a NUL byte (such a key cannot be a C string and is not collected). */
const char *redis_stream_scan_key(const redisReply *keys, size_t j, size_t *len);

/* The reply to XLEN: an integer >= 0. ERR_PROTOCOL "want an integer >= 0, got <type>". */
int redis_stream_parse_len(const redisReply *r, long long *len, struct err *e);

/* Whether group passes a stream's `groups` filter: every group when groups is NULL. */
int redis_stream_group_wanted(char *const *groups, size_t ngroups, const char *group);

/* The age at now_ms (the server's TIME) of the entry whose id holds ms: 0 with *age = now_ms - ms
 * in seconds (0 for an id up to ENTRY_CLOCK_SKEW ahead), or -1 with *age untouched when the id's
 * time is refused by entry_age (common/entries.h). A writer may choose ids (XADD with `1-1`, or
 * far ahead), which would otherwise give an age of decades that pages: the caller counts a
 * refused id as a skipped bad_timestamp entry of its stream and leaves that age out. */
int redis_stream_entry_age(int64_t now_ms, uint64_t ms, double *age);

/* dead_letter_stream with every "{stream}" replaced by the stream's name. malloc'd. */
char *redis_stream_dlq_name(const char *tmpl, const char *stream);

/* Adds the entries of an `XRANGE <dlq> - + COUNT n` reply ([[id, [field, value, ...]], ...]) to
 * out for the dead-letter join, the value of each entry's first field named id_field as its id.
 * ERR_PROTOCOL (without a prefix: the caller names the command) when the reply is not an array of
 * [id, fields] pairs. */
int redis_stream_dead_letter_ids(const redisReply *r, const char *id_field,
                                 struct dead_letter_read *out, struct err *e);

/* A dead-letter entry's fields as read, for `qrel dlq` to put back as they were: v[0], v[2], …
 * the names and v[1], v[3], … the values, binary safe (len), in the entry's order. */
struct redis_stream_fields {
    size_t n;
    char **v;
    size_t *len;
};
void redis_stream_fields_free(void *fields); /* a struct redis_stream_fields *; NULL is fine */

/* Fills m from entry x ([id, [field, value, ...]]) of an XRANGE reply of a dead-letter stream:
 * message_id the entry id; work_id the first field named id_field (NULL when absent, empty or
 * holding a NUL byte); deliveries the field "deliveries" when it holds a whole number; dead_since
 * the field "dead_since" (unix seconds or RFC 3339) else the time in the entry id, either only when
 * finite and from 2000 on (else 0, unknown: an id such as 1-1 is no time); replays the field
 * DLQ_STAMP ("qrel-replayed", 0 without one, -1 when it holds no whole number); kind_data the
 * fields (struct redis_stream_fields). ERR_PROTOCOL without a prefix for another shape; m's
 * members may then be set (dlq_batch_free frees them). */
int redis_stream_dlq_entry(const redisReply *x, const char *id_field, struct dlq_message *m,
                           struct err *e);

/* The per-group settings that come from the config file. */
struct redis_stream_policy {
    double claim_min_idle;    /* seconds; <= 0: not configured */
    long long max_deliveries; /* 0: not configured */
};

/* The values of one group's series. A has_* of 0 means: leave the series out. */
struct redis_stream_group_values {
    int has_ready;
    double ready;
    double in_flight;
    int has_consumer_lag; /* 0 when the first undelivered entry's id was refused */
    double consumer_lag_seconds;
    int has_oldest_message_age; /* 0 when the oldest entry's id was refused */
    double oldest_message_age_seconds;
    size_t bad_timestamps; /* entries whose id redis_stream_entry_age refused */
    int has_lease_timeout;
    double lease_timeout_seconds;
    double lease_oldest_age_seconds;
    int has_lease_margin;
    double lease_margin_ratio;
    int has_max_deliveries;
    double max_deliveries;
    int has_retry_horizon;
    double retry_horizon_seconds;
    double messages_redelivered;
    /* entries-read - pending of the same XINFO GROUPS reply: entries delivered to the group and
     * no longer pending, i.e. acknowledged (or read with NOACK). Left out while entries-read is
     * nil or below pending (after an XGROUP SETID back). docs/kinds/redis_stream.md says when it
     * is exact. */
    int has_consumed;
    double consumed;
};

/* Computes a group's series from what Redis said (ages through redis_stream_entry_age). pending may
 * be NULL (nothing was scanned because the group had nothing pending); undelivered_found /
 * undelivered is the first entry after the group's last-delivered-id. */
void redis_stream_group_values(int64_t now_ms, const struct redis_stream_group *g,
                               const struct redis_stream_pending *pending, int undelivered_found,
                               const struct redis_stream_id *undelivered,
                               const struct redis_stream_policy *pol,
                               struct redis_stream_group_values *out);

#endif
