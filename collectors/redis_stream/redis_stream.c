/* redis_stream.c: `kind: redis_stream`, the reliability of Redis streams read by consumer groups.
 *
 * A consumer group is a log reader with a lease: entries after its last-delivered-id are waiting
 * (lag), delivered but unacknowledged entries sit in its pending entries list (PEL) with an idle
 * time and a delivery count, and consumers reclaim entries idle longer than their XAUTOCLAIM
 * min-idle, which is therefore the lease. This collector turns that into the qrel_ series using
 * read-only commands only (TIME, SCAN, XINFO GROUPS, XPENDING, XRANGE, XREVRANGE, XLEN;
 * AUTH/SELECT on connect), so a monitoring user can never move, claim or acknowledge anything.
 *
 * The number of round trips per scrape does not grow with the number of streams: SCAN rounds
 * (one per 1000 keys of the keyspace, all patterns in one pipeline), then one pipeline for TIME
 * and every XINFO GROUPS, then one for every XPENDING / XRANGE / XREVRANGE / XLEN. Ages are
 * computed against the server's TIME, because entry ids carry the server's clock, not ours. A
 * stream with dead_letter_classify reads its dead-letter entries in that last pipeline and then
 * asks PostgreSQL about their ids (redis_stream/dlq_classify.c), once per dead-letter stream.
 *
 * Memory does not grow with the replies either: each reply is folded, as it arrives, into a few
 * dozen bytes per stream and per group (names stored once per scrape), and a group's series are
 * emitted as soon as its last reply is in, so no reply outlives the callback that reads it. */
#include "redis_stream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/redis.h"
#include "config.h"
#include "log.h"
#include "dlq_classify.h"
#include "common/secret.h"
#include "util.h"

#define DEFAULT_MAX_STREAMS 10000
#define DEFAULT_PENDING_SCAN_LIMIT 1000
#define SCAN_COUNT "1000"
#define NONE ((size_t)-1)

/* ---- pure parsing (redis_stream.h) ---- */

int redis_stream_parse_id(const char *s, size_t len, struct redis_stream_id *out)
{
    uint64_t part[2] = {0, 0};
    size_t i = 0;
    for (int k = 0; k < 2; k++) {
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            uint64_t d = (uint64_t)(s[i] - '0');
            if (part[k] > UINT64_MAX / 10 || (part[k] == UINT64_MAX / 10 && d > UINT64_MAX % 10))
                return -1;
            part[k] = part[k] * 10 + d;
            i++;
        }
        if (i == start)
            return -1;
        if (k == 0) {
            if (i >= len || s[i] != '-')
                return -1;
            i++;
        }
    }
    if (i != len)
        return -1;
    out->ms = part[0];
    out->seq = part[1];
    return 0;
}

static int is_string(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static int key_is(const redisReply *k, const char *name)
{
    size_t n = strlen(name);
    return k->len == n && memcmp(k->str, name, n) == 0;
}

/* Server text quoted in a message is cut short: it is there to recognise, not to store. */
#define SHOWN(r) (int)((r)->len > 64 ? 64 : (r)->len), (r)->str

int redis_stream_groups_count(const redisReply *r, const char *stream, size_t *n, struct err *e)
{
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "XINFO GROUPS \"%s\": want an array, got %s", stream,
                       redis_reply_type_name(r));
    *n = r->elements;
    return 0;
}

/* The message of a bad group: who it is is formatted only here, on failure, never for the
 * thousands of groups that are fine. */
static int group_error(struct err *e, const char *stream, size_t i,
                       const struct redis_stream_group *g, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int group_error(struct err *e, const char *stream, size_t i,
                       const struct redis_stream_group *g, const char *fmt, ...)
{
    char who[160], what[300];
    if (g->name)
        snprintf(who, sizeof who, "XINFO GROUPS \"%s\": group \"%.*s\"", stream, (int)g->name_len,
                 g->name);
    else
        snprintf(who, sizeof who, "XINFO GROUPS \"%s\": group %zu", stream, i + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(e, ERR_PROTOCOL, "%s: %s", who, what);
}

int redis_stream_parse_group(const redisReply *r, size_t i, const char *stream,
                             struct redis_stream_group *g, struct err *e)
{
    memset(g, 0, sizeof *g);
    const redisReply *f =
        r && r->type == REDIS_REPLY_ARRAY && i < r->elements ? r->element[i] : NULL;
    if (!f || f->type != REDIS_REPLY_ARRAY || f->elements % 2)
        return group_error(e, stream, i, g, "want a flat array of keys and values, got %s",
                           f && f->type == REDIS_REPLY_ARRAY ? "an odd number of elements"
                                                             : redis_reply_type_name(f));
    /* The name first, so the other messages can say which group is wrong. A name with a NUL
     * byte ends there: what follows could not be passed on as a C string anyway. */
    for (size_t j = 0; j + 1 < f->elements; j += 2)
        if (!g->name && is_string(f->element[j]) && key_is(f->element[j], "name") &&
            is_string(f->element[j + 1])) {
            g->name = f->element[j + 1]->str;
            g->name_len = strnlen(g->name, f->element[j + 1]->len);
        }
    int have_consumers = 0, have_pending = 0, have_last = 0;
    for (size_t j = 0; j + 1 < f->elements; j += 2) {
        const redisReply *k = f->element[j], *v = f->element[j + 1];
        if (!is_string(k))
            return group_error(e, stream, i, g, "key %zu: want a string, got %s", j / 2 + 1,
                               redis_reply_type_name(k));
        const char *field = NULL;
        if (key_is(k, "name")) {
            if (!is_string(v)) {
                field = "name";
                goto want_string;
            }
        } else if (key_is(k, "consumers") || key_is(k, "pending")) {
            field = key_is(k, "pending") ? "pending" : "consumers";
            if (!v || v->type != REDIS_REPLY_INTEGER || v->integer < 0)
                return group_error(e, stream, i, g, "field \"%s\": want an integer >= 0, got %s",
                                   field, redis_reply_type_name(v));
            if (field[0] == 'p') {
                g->pending = v->integer;
                have_pending = 1;
            } else {
                g->consumers = v->integer;
                have_consumers = 1;
            }
        } else if (key_is(k, "last-delivered-id")) {
            field = "last-delivered-id";
            if (!is_string(v))
                goto want_string;
            if (redis_stream_parse_id(v->str, v->len, &g->last_delivered))
                return group_error(e, stream, i, g,
                                   "field \"%s\": want an id like \"1700000000000-0\", got "
                                   "\"%.*s\"",
                                   field, SHOWN(v));
            have_last = 1;
        } else if (key_is(k, "entries-read") || key_is(k, "lag")) {
            int is_lag = key_is(k, "lag");
            field = is_lag ? "lag" : "entries-read";
            if (v && v->type == REDIS_REPLY_NIL)
                continue; /* unknown to the server: leave has_* at 0 */
            if (!v || v->type != REDIS_REPLY_INTEGER || v->integer < 0)
                return group_error(e, stream, i, g,
                                   "field \"%s\": want an integer >= 0 or nil, got %s", field,
                                   redis_reply_type_name(v));
            if (is_lag) {
                g->has_lag = 1;
                g->lag = v->integer;
            } else {
                g->has_entries_read = 1;
                g->entries_read = v->integer;
            }
        }
        continue;
    want_string:
        return group_error(e, stream, i, g, "field \"%s\": want a string, got %s", field,
                           redis_reply_type_name(v));
    }
    const char *missing = !g->name          ? "name"
                          : !have_consumers ? "consumers"
                          : !have_pending   ? "pending"
                          : !have_last      ? "last-delivered-id"
                                            : NULL;
    if (missing)
        return group_error(e, stream, i, g, "field \"%s\" is missing", missing);
    return 0;
}

int redis_stream_parse_pending(const redisReply *r, const char *stream, const char *group,
                               struct redis_stream_pending *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "XPENDING \"%s\" \"%s\": want an array, got %s", stream,
                       group, redis_reply_type_name(r));
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 4)
            return err_set(e, ERR_PROTOCOL,
                           "XPENDING \"%s\" \"%s\": entry %zu: want [id, consumer, idle, "
                           "deliveries], got %s",
                           stream, group, i + 1,
                           x && x->type == REDIS_REPLY_ARRAY ? "another number of elements"
                                                             : redis_reply_type_name(x));
        const redisReply *id = x->element[0], *idle = x->element[2], *cnt = x->element[3];
        struct redis_stream_id sid;
        if (!is_string(id))
            return err_set(e, ERR_PROTOCOL,
                           "XPENDING \"%s\" \"%s\": entry %zu: field \"id\": want a string, got %s",
                           stream, group, i + 1, redis_reply_type_name(id));
        if (redis_stream_parse_id(id->str, id->len, &sid))
            return err_set(e, ERR_PROTOCOL,
                           "XPENDING \"%s\" \"%s\": entry %zu: field \"id\": want an id like "
                           "\"1700000000000-0\", got \"%.*s\"",
                           stream, group, i + 1, SHOWN(id));
        if (!idle || idle->type != REDIS_REPLY_INTEGER || idle->integer < 0)
            return err_set(e, ERR_PROTOCOL,
                           "XPENDING \"%s\" \"%s\": entry %zu: field \"idle\": want an integer "
                           ">= 0, got %s",
                           stream, group, i + 1, redis_reply_type_name(idle));
        if (!cnt || cnt->type != REDIS_REPLY_INTEGER || cnt->integer < 0)
            return err_set(e, ERR_PROTOCOL,
                           "XPENDING \"%s\" \"%s\": entry %zu: field \"deliveries\": want an "
                           "integer >= 0, got %s",
                           stream, group, i + 1, redis_reply_type_name(cnt));
        /* XPENDING orders by id, but the minimum costs nothing and does not rely on it. */
        if (!out->has_oldest || sid.ms < out->oldest.ms ||
            (sid.ms == out->oldest.ms && sid.seq < out->oldest.seq))
            out->oldest = sid;
        out->has_oldest = 1;
        if (idle->integer > out->max_idle_ms)
            out->max_idle_ms = idle->integer;
        if (cnt->integer > 1)
            out->redelivered++;
        out->scanned++;
    }
    return 0;
}

int redis_stream_parse_first_entry(const redisReply *r, int *found, struct redis_stream_id *id,
                                   struct err *e)
{
    *found = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array, got %s", redis_reply_type_name(r));
    if (r->elements == 0)
        return 0;
    const redisReply *x = r->element[0];
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements < 1 || !is_string(x->element[0]))
        return err_set(e, ERR_PROTOCOL, "entry 1: want [id, fields], got %s",
                       redis_reply_type_name(x));
    if (redis_stream_parse_id(x->element[0]->str, x->element[0]->len, id))
        return err_set(e, ERR_PROTOCOL,
                       "entry 1: want an id like \"1700000000000-0\", got \"%.*s\"",
                       SHOWN(x->element[0]));
    *found = 1;
    return 0;
}

/* A decimal number of at most 18 digits (TIME's fields), strictly. */
static int parse_small_uint(const redisReply *r, int64_t *out)
{
    if (!is_string(r) || r->len == 0 || r->len > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9')
            return -1;
        v = v * 10 + (r->str[i] - '0');
    }
    *out = v;
    return 0;
}

int redis_stream_parse_time(const redisReply *r, int64_t *now_ms, struct err *e)
{
    int64_t sec, usec;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return err_set(e, ERR_PROTOCOL, "TIME: want [seconds, microseconds], got %s",
                       redis_reply_type_name(r));
    if (parse_small_uint(r->element[0], &sec) || parse_small_uint(r->element[1], &usec) ||
        usec >= 1000000 || sec > INT64_MAX / 1000 - 1)
        return err_set(e, ERR_PROTOCOL, "TIME: want two decimal numbers");
    *now_ms = sec * 1000 + usec / 1000;
    return 0;
}

double redis_stream_age_seconds(int64_t now_ms, uint64_t ms)
{
    if (now_ms < 0 || ms >= (uint64_t)now_ms)
        return 0.0;
    return (double)((uint64_t)now_ms - ms) / 1000.0;
}

char *redis_stream_dlq_name(const char *tmpl, const char *stream)
{
    static const char ph[] = "{stream}";
    struct buf b;
    buf_init(&b);
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, ph, sizeof ph - 1) == 0) {
            buf_puts(&b, stream);
            p += sizeof ph - 1;
        } else {
            buf_putc(&b, *p++);
        }
    }
    return buf_steal(&b);
}

void redis_stream_group_values(int64_t now_ms, const struct redis_stream_group *g,
                               const struct redis_stream_pending *pending, int undelivered_found,
                               const struct redis_stream_id *undelivered,
                               const struct redis_stream_policy *pol,
                               struct redis_stream_group_values *out)
{
    memset(out, 0, sizeof *out);
    out->has_ready = g->has_lag;
    out->ready = (double)g->lag;
    out->in_flight = (double)g->pending;

    /* lag == 0 means everything was delivered, whatever an XRANGE would say. */
    int waiting = undelivered_found && !(g->has_lag && g->lag == 0);
    out->consumer_lag_seconds = waiting ? redis_stream_age_seconds(now_ms, undelivered->ms) : 0.0;

    /* The oldest unacknowledged message is either still pending or not delivered yet. */
    int have = 0;
    uint64_t oldest = 0;
    if (pending && pending->has_oldest) {
        oldest = pending->oldest.ms;
        have = 1;
    }
    if (waiting && (!have || undelivered->ms < oldest)) {
        oldest = undelivered->ms;
        have = 1;
    }
    out->oldest_message_age_seconds = have ? redis_stream_age_seconds(now_ms, oldest) : 0.0;

    int held = pending && pending->scanned > 0;
    double hold = held ? (double)pending->max_idle_ms / 1000.0 : 0.0;
    out->lease_oldest_age_seconds = hold;
    if (pol->claim_min_idle > 0) {
        out->has_lease_timeout = 1;
        out->lease_timeout_seconds = pol->claim_min_idle;
        if (held) {
            /* Idle is counted in whole milliseconds: a hold under 1 ms counts as 1 ms, so a
             * message delivered this instant gives a large ratio rather than a division by 0. */
            out->has_lease_margin = 1;
            out->lease_margin_ratio = pol->claim_min_idle / (hold < 0.001 ? 0.001 : hold);
        }
    }
    if (pol->max_deliveries > 0) {
        out->has_max_deliveries = 1;
        out->max_deliveries = (double)pol->max_deliveries;
        if (pol->claim_min_idle > 0) {
            out->has_retry_horizon = 1;
            out->retry_horizon_seconds = (double)pol->max_deliveries * pol->claim_min_idle;
        }
    }
    out->messages_redelivered = pending ? (double)pending->redelivered : 0.0;
}

/* ---- configuration ---- */

struct stream_spec {
    char *name; /* exactly one of name and pattern */
    char *pattern;
    char **groups; /* NULL: every group */
    size_t ngroups;
    struct redis_stream_policy pol;
    char *dlq_tmpl;                /* dead_letter_stream, NULL when not configured */
    struct dlq_classify *classify; /* dead_letter_classify, NULL when not configured */
};

struct state {
    char *address;
    char *username;
    char *password; /* wiped on destroy */
    long db;
    long long max_streams;
    long long pending_scan_limit;
    size_t max_reply_bytes;
    struct stream_spec *specs;
    size_t nspecs;
    struct redis_conn *conn; /* kept between scrapes, dropped after any error */
    int warned_cap;
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    if (!st)
        return;
    redis_conn_close(st->conn);
    for (size_t i = 0; i < st->nspecs; i++) {
        struct stream_spec *sp = &st->specs[i];
        free(sp->name);
        free(sp->pattern);
        cfg_strv_free(sp->groups);
        free(sp->dlq_tmpl);
        dlq_classify_free(sp->classify);
    }
    free(st->specs);
    free(st->address);
    free(st->username);
    secret_free(st->password);
    free(st);
    c->priv = NULL;
}

static const char *const source_keys[] = {
    "address",         "username",    "password_file",      "password_env", "db",
    "max_reply_bytes", "max_streams", "pending_scan_limit", "streams",      NULL,
};
static const char *const stream_keys[] = {
    "name",
    "pattern",
    "groups",
    "claim_min_idle",
    "max_deliveries",
    "dead_letter_stream",
    "dead_letter_classify",
    NULL,
};

static int configure_stream(struct collector *c, struct state *st, struct cfg_node *item,
                            size_t index, struct err *e)
{
    if (cfg_expect(item, CFG_MAP, "each entry of streams", e))
        return -1;
    st->specs = xrealloc(st->specs, (st->nspecs + 1) * sizeof *st->specs);
    struct stream_spec *sp = &st->specs[st->nspecs++];
    memset(sp, 0, sizeof *sp);
    sp->pol.claim_min_idle = -1;

    if (cfg_get_str(item, "name", 0, &sp->name, e) ||
        cfg_get_str(item, "pattern", 0, &sp->pattern, e))
        return -1;
    if (!sp->name == !sp->pattern) {
        char where[300];
        snprintf(where, sizeof where, "entry %zu of streams of source \"%s\"", index + 1, c->name);
        if (!sp->name && cfg_finish_keys(item, stream_keys, where, e))
            return -1;
        return cfg_error(e, item, "want exactly one of name and pattern in each entry of streams");
    }
    const char *key = sp->name ? "name" : "pattern";
    const char *val = sp->name ? sp->name : sp->pattern;
    if (!*val)
        return cfg_error(e, cfg_at(item, key), "%s: want a non-empty string", key);
    for (size_t i = 0; i + 1 < st->nspecs; i++) {
        const char *other = sp->name ? st->specs[i].name : st->specs[i].pattern;
        if (other && strcmp(other, val) == 0)
            return cfg_error(e, cfg_at(item, key), "%s: \"%s\" is listed twice", key, val);
    }

    struct cfg_node *groups_node = NULL;
    if (cfg_get_node(item, "groups", CFG_SEQ, &groups_node, e) ||
        cfg_get_strlist(item, "groups", &sp->groups, &sp->ngroups, e))
        return -1;
    if (groups_node && sp->ngroups == 0)
        return cfg_error(e, groups_node,
                         "groups: want at least one group name (leave groups out for every group)");

    if (cfg_get_duration(item, "claim_min_idle", -1.0, &sp->pol.claim_min_idle, e))
        return -1;
    struct cfg_node *n = NULL;
    if (cfg_get_node(item, "claim_min_idle", CFG_SCALAR, &n, e))
        return -1;
    if (n && sp->pol.claim_min_idle <= 0)
        return cfg_error(e, n, "claim_min_idle: want a duration above 0");
    if (!n)
        sp->pol.claim_min_idle = -1;

    if (cfg_get_node(item, "max_deliveries", CFG_SCALAR, &n, e))
        return -1;
    if (n && cfg_get_int(item, "max_deliveries", 1, 1, 1000000, &sp->pol.max_deliveries, e))
        return -1;

    if (cfg_get_str(item, "dead_letter_stream", 0, &sp->dlq_tmpl, e))
        return -1;
    if (sp->dlq_tmpl && !*sp->dlq_tmpl)
        return cfg_error(e, cfg_at(item, "dead_letter_stream"),
                         "dead_letter_stream: want a non-empty stream name");

    char where[400];
    snprintf(where, sizeof where, "%s \"%s\" of source \"%s\"", sp->name ? "stream" : "pattern",
             val, c->name);
    struct cfg_node *block = NULL;
    if (cfg_get_node(item, "dead_letter_classify", CFG_MAP, &block, e))
        return -1;
    if (block) {
        if (!sp->dlq_tmpl)
            return cfg_error(e, cfg_at(item, "dead_letter_classify"),
                             "dead_letter_classify: needs dead_letter_stream (the stream whose "
                             "entries it classifies)");
        char bwhere[480];
        snprintf(bwhere, sizeof bwhere, "dead_letter_classify of %s", where);
        sp->classify = dlq_classify_configure(block, bwhere, e);
        if (!sp->classify)
            return -1;
    }
    return cfg_finish(item, where, e);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = xcalloc(1, sizeof *st);
    c->priv = st;

    char where[300];
    snprintf(where, sizeof where, "source \"%s\"", c->name);
    struct cfg_node *streams = NULL;
    if (cfg_get_str(map, "address", 0, &st->address, e) ||
        cfg_get_node(map, "streams", CFG_SEQ, &streams, e))
        return -1;
    if ((!st->address || !streams) && cfg_finish_keys(map, source_keys, where, e))
        return -1;
    if (!st->address) /* no typo elsewhere: the key is simply missing */
        return cfg_get_str(map, "address", 1, &st->address, e);
    struct redis_address a;
    struct err ae;
    if (redis_address_parse(st->address, &a, &ae))
        return cfg_error(e, cfg_at(map, "address"), "address: %s", ae.msg);
    redis_address_free(&a);

    if (cfg_get_str(map, "username", 0, &st->username, e) ||
        secret_get(map, "password", 0, &st->password, e))
        return -1;
    if (st->username && !st->password)
        return cfg_error(e, cfg_at(map, "username"),
                         "username: needs password_file or password_env (Redis authenticates a "
                         "user with a password)");

    long long v;
    if (cfg_get_int(map, "db", 0, 0, 1000000, &v, e))
        return -1;
    st->db = (long)v;
    if (cfg_get_int(map, "max_streams", DEFAULT_MAX_STREAMS, 1, 10000000, &st->max_streams, e) ||
        cfg_get_int(map, "pending_scan_limit", DEFAULT_PENDING_SCAN_LIMIT, 1, 1000000,
                    &st->pending_scan_limit, e) ||
        cfg_get_int(map, "max_reply_bytes", (long long)REDIS_DEFAULT_MAX_REPLY_BYTES, 4096,
                    (long long)1 << 40, &v, e))
        return -1;
    st->max_reply_bytes = (size_t)v;

    if (!streams || streams->n == 0)
        return cfg_error(e, streams ? streams : map,
                         "streams: want a list of at least one {name: ...} or {pattern: ...}");
    for (size_t i = 0; i < streams->n; i++)
        if (configure_stream(c, st, streams->items[i], i, e))
            return -1;
    return 0;
}

/* ---- collection ---- */

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
    size_t pat;           /* the first pattern (config order) that found it; NONE when none */
    size_t dlq;           /* its slot in scrape.dlqs once XLEN/XRANGE are asked; NONE before */
    unsigned char chosen; /* already a target */
    unsigned char is_dlq; /* the dead-letter stream of a target (other than itself) */
};

struct names {
    struct arena_block *blocks;
    struct name *v; /* by id */
    size_t n, cap;
    size_t *slots; /* id + 1, 0 when empty; nslots is a power of 2 */
    size_t nslots;
};

static const char *arena_copy(struct names *t, const char *s, size_t len)
{
    struct arena_block *b = t->blocks;
    if (!b || b->cap - b->used < len + 1) {
        /* A long string gets a block of its own behind the current one, which stays in use. */
        int own = len + 1 > ARENA_BLOCK_BYTES / 4;
        size_t cap = own ? len + 1 : ARENA_BLOCK_BYTES;
        struct arena_block *nb = xmalloc(sizeof *nb + cap);
        nb->used = 0;
        nb->cap = cap;
        if (own && b) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            t->blocks = nb;
        }
        b = nb;
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static size_t names_slot(const struct names *t, const char *s, size_t len)
{
    size_t mask = t->nslots - 1, i = (size_t)hash_bytes(s, len) & mask;
    for (;; i = (i + 1) & mask) {
        size_t id = t->slots[i];
        if (!id)
            return i;
        const struct name *nm = &t->v[id - 1];
        if (nm->len == len && memcmp(nm->s, s, len) == 0)
            return i;
    }
}

/* The id of the len bytes at s, added when new (then *added = 1 when added is not NULL). Ids are
 * stable; pointers into t->v are not once another name is added. */
static size_t names_intern(struct names *t, const char *s, size_t len, int *added)
{
    if ((t->n + 1) * 2 > t->nslots) {
        size_t nslots = t->nslots ? t->nslots * 2 : 64;
        free(t->slots);
        t->slots = xcalloc(nslots, sizeof *t->slots);
        t->nslots = nslots;
        for (size_t id = 0; id < t->n; id++)
            t->slots[names_slot(t, t->v[id].s, t->v[id].len)] = id + 1;
    }
    size_t i = names_slot(t, s, len);
    if (added)
        *added = !t->slots[i];
    if (t->slots[i])
        return t->slots[i] - 1;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->v = xrealloc(t->v, t->cap * sizeof *t->v);
    }
    struct name *nm = &t->v[t->n];
    nm->s = arena_copy(t, s, len);
    nm->len = len;
    nm->pat = nm->dlq = NONE;
    nm->chosen = nm->is_dlq = 0;
    t->slots[i] = ++t->n;
    return t->n - 1;
}

/* The table is needed only while targets and groups are resolved; the strings stay. */
static void names_drop_index(struct names *t)
{
    free(t->slots);
    free(t->v);
    t->slots = NULL;
    t->v = NULL;
    t->n = t->cap = t->nslots = 0;
}

static void names_free(struct names *t)
{
    names_drop_index(t);
    while (t->blocks) {
        struct arena_block *b = t->blocks;
        t->blocks = b->next;
        free(b);
    }
}

/* One included consumer group, as XINFO GROUPS reported it: what the series and the commands of
 * step 3 need, nothing else. */
struct group {
    const char *name; /* in the scrape's arena */
    long long pending;
    long long lag;
    struct redis_stream_id last_delivered;
    int has_lag;
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
    struct dlq_classify *classify; /* of the first stream naming it that has a block; or NULL */
    struct dlq_tally tally;        /* the entries' ids, when classify */
    struct dlq_split split;        /* what classify made of them, after the pipeline */
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
};

static void scrape_free(struct scrape *sc)
{
    names_free(&sc->names);
    free(sc->t);
    free(sc->groups);
    for (size_t i = 0; i < sc->ndlqs; i++)
        dlq_tally_free(&sc->dlqs[i].tally);
    free(sc->dlqs);
    memset(sc, 0, sizeof *sc);
}

static void target_add(struct scrape *sc, size_t name_id, size_t spec, int from_pattern)
{
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 16;
        sc->t = xrealloc(sc->t, sc->cap * sizeof *sc->t);
    }
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->name = sc->names.v[name_id].s;
    t->name_id = name_id;
    t->dlq_id = t->dlq_slot = NONE;
    t->spec = (unsigned)spec;
    t->from_pattern = (unsigned char)from_pattern;
    sc->names.v[name_id].chosen = 1;
}

/* An error reply to a command, as ERR_QUERY; what names the command, formatted only here into
 * at most whatsz bytes (cut short like every quoted name). */
static int query_error(struct redis_conn *conn, const redisReply *r, struct err *e, size_t whatsz,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int query_error(struct redis_conn *conn, const redisReply *r, struct err *e, size_t whatsz,
                       const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, whatsz < sizeof what ? whatsz : sizeof what, fmt, ap);
    va_end(ap);
    int n = (int)(r->len > 300 ? 300 : r->len);
    return err_set(e, ERR_QUERY, "%s: %s: %.*s", redis_conn_label(conn), what, n, r->str);
}

/* Prefixes a parser's message with the connection and the command, formatted as query_error. */
static int parse_error(struct redis_conn *conn, struct err *e, size_t whatsz, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int parse_error(struct redis_conn *conn, struct err *e, size_t whatsz, const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, whatsz < sizeof what ? whatsz : sizeof what, fmt, ap);
    va_end(ap);
    return err_prefix(e, "%s: %s", redis_conn_label(conn), what);
}

/* What one pattern found, in SCAN order, as ids of the scrape's names. */
struct pattern_scan {
    size_t spec;
    char cursor[24];
    int done;
    size_t *found;
    size_t nfound, cap;
};

struct scan_run {
    struct state *st;
    struct scrape *sc;
    struct pattern_scan *ps;
    size_t *active; /* reply k of a round is the SCAN of ps[active[k]] */
    size_t distinct;
    int capped;
};

/* One SCAN reply. A stream matched by two patterns goes to the one listed first, whichever SCAN
 * happened to report it for first: a name remembers the first pattern that found it, and is on
 * the list of a pattern only when no earlier pattern had it. */
static int scan_reply(void *ctx, size_t k, const redisReply *r, struct err *e)
{
    struct scan_run *run = ctx;
    size_t pi = run->active[k];
    struct pattern_scan *s = &run->ps[pi];
    struct names *names = &run->sc->names;
    const char *pattern = run->st->specs[s->spec].pattern;
    if (redis_reply_is_error(r, NULL))
        return query_error(run->st->conn, r, e, 300, "SCAN MATCH \"%s\"", pattern);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_string(r->element[0]) ||
        r->element[0]->len >= sizeof s->cursor || r->element[1]->type != REDIS_REPLY_ARRAY) {
        err_set(e, ERR_PROTOCOL, "want [cursor, keys]");
        return parse_error(run->st->conn, e, 300, "SCAN MATCH \"%s\"", pattern);
    }
    const redisReply *keys = r->element[1];
    for (size_t j = 0; j < keys->elements && !run->capped; j++) {
        const redisReply *k1 = keys->element[j];
        /* A key with a NUL byte cannot be a C string; such keys are not collected. */
        if (!is_string(k1) || memchr(k1->str, '\0', k1->len))
            continue;
        int added;
        size_t id = names_intern(names, k1->str, k1->len, &added);
        if (!added && names->v[id].pat <= pi)
            continue; /* this pattern or an earlier one has it */
        names->v[id].pat = pi;
        if (s->nfound == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 64;
            s->found = xrealloc(s->found, s->cap * sizeof *s->found);
        }
        s->found[s->nfound++] = id;
        if (added && (long long)++run->distinct >= run->st->max_streams)
            run->capped = 1;
    }
    memcpy(s->cursor, r->element[0]->str, r->element[0]->len);
    s->cursor[r->element[0]->len] = '\0';
    if (strcmp(s->cursor, "0") == 0)
        s->done = 1;
    return 0;
}

/* Runs SCAN for every pattern, one SCAN per still-active pattern per round trip, until all
 * cursors are back at 0 or max_streams distinct streams were found. */
static int scan_patterns(struct collector *c, struct state *st, struct redis_pipe *p,
                         const struct deadline *dl, struct scrape *sc, struct pattern_scan *ps,
                         size_t nps, struct err *e)
{
    struct scan_run run = {st, sc, ps, xcalloc(nps, sizeof(size_t)), 0, 0};
    int rc = -1;
    for (;;) {
        redis_pipe_reset(p);
        size_t na = 0;
        for (size_t i = 0; i < nps && !run.capped; i++) {
            if (ps[i].done)
                continue;
            run.active[na++] = i;
            redis_pipe_addv(p, "SCAN", ps[i].cursor, "MATCH", st->specs[ps[i].spec].pattern,
                            "COUNT", SCAN_COUNT, "TYPE", "stream", NULL);
        }
        if (na == 0)
            break;
        if (redis_pipe_exec_each(st->conn, p, dl, st->max_reply_bytes, scan_reply, &run, e))
            goto out;
    }
    if (run.capped && !st->warned_cap) {
        char cap[32];
        snprintf(cap, sizeof cap, "%lld", st->max_streams);
        log_kv(LOG_WARN,
               "stream patterns match more streams than max_streams; collecting the "
               "first ones SCAN returned",
               "source", c->name, "max_streams", cap, NULL);
        st->warned_cap = 1;
    }
    rc = 0;
out:
    free(run.active);
    return rc;
}

/* Step 1: the streams of this scrape, in config order, each once, with the first matching
 * entry's settings; dead-letter streams found by a pattern are not collected as streams. */
static int resolve_targets(struct collector *c, struct state *st, struct redis_pipe *p,
                           const struct deadline *dl, struct scrape *sc, struct err *e)
{
    struct names *names = &sc->names;
    size_t nps = 0;
    for (size_t i = 0; i < st->nspecs; i++)
        nps += st->specs[i].pattern != NULL;
    struct pattern_scan *ps = xcalloc(nps ? nps : 1, sizeof *ps);
    for (size_t i = 0, k = 0; i < st->nspecs; i++)
        if (st->specs[i].pattern) {
            ps[k].spec = i;
            memcpy(ps[k].cursor, "0", 2);
            k++;
        }
    int rc = -1;
    if (nps && scan_patterns(c, st, p, dl, sc, ps, nps, e))
        goto out;

    for (size_t i = 0, k = 0; i < st->nspecs; i++) {
        if (st->specs[i].name) {
            size_t id = names_intern(names, st->specs[i].name, strlen(st->specs[i].name), NULL);
            if (!names->v[id].chosen)
                target_add(sc, id, i, 0);
            continue;
        }
        struct pattern_scan *s = &ps[k++];
        for (size_t j = 0; j < s->nfound; j++)
            if (!names->v[s->found[j]].chosen)
                target_add(sc, s->found[j], i, 1);
    }
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        const char *tmpl = st->specs[t->spec].dlq_tmpl;
        if (!tmpl)
            continue;
        char *d = redis_stream_dlq_name(tmpl, t->name);
        t->dlq_id = names_intern(names, d, strlen(d), NULL);
        t->dlq = names->v[t->dlq_id].s;
        free(d);
        if (t->dlq_id != t->name_id)
            names->v[t->dlq_id].is_dlq = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < sc->n; i++)
        if (!(sc->t[i].from_pattern && names->v[sc->t[i].name_id].is_dlq))
            sc->t[kept++] = sc->t[i];
    sc->n = kept;
    if (sc->n < sc->cap) {
        sc->t = xrealloc(sc->t, (sc->n ? sc->n : 1) * sizeof *sc->t);
        sc->cap = sc->n;
    }
    rc = 0;
out:
    for (size_t i = 0; i < nps; i++)
        free(ps[i].found);
    free(ps);
    return rc;
}

static int group_wanted(const struct stream_spec *sp, const char *group)
{
    if (!sp->groups)
        return 1;
    for (size_t i = 0; i < sp->ngroups; i++)
        if (strcmp(sp->groups[i], group) == 0)
            return 1;
    return 0;
}

struct groups_run {
    struct state *st;
    struct scrape *sc;
    int64_t now_ms;
};

/* Reply 0 is TIME, reply i the XINFO GROUPS of target i - 1: kept are the groups that pass the
 * groups filter (all are checked), in the scrape's compact form. */
static int groups_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct groups_run *run = ctx;
    struct scrape *sc = run->sc;
    struct redis_conn *conn = run->st->conn;
    if (i == 0) {
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "TIME");
        if (redis_stream_parse_time(r, &run->now_ms, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        return 0;
    }
    struct target *t = &sc->t[i - 1];
    /* A configured stream that does not exist (yet, or any more) is not an error. */
    if (redis_reply_is_error(r, "ERR no such key")) {
        t->missing = 1;
        sc->missing++;
        return 0;
    }
    if (redis_reply_is_error(r, NULL))
        return query_error(conn, r, e, 300, "XINFO GROUPS \"%s\"", t->name);
    size_t n;
    if (redis_stream_groups_count(r, t->name, &n, e))
        return err_prefix(e, "%s", redis_conn_label(conn));
    const struct stream_spec *sp = &run->st->specs[t->spec];
    t->group0 = sc->ngroups;
    for (size_t j = 0; j < n; j++) {
        struct redis_stream_group g;
        if (redis_stream_parse_group(r, j, t->name, &g, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        if (!group_wanted(sp, g.name))
            continue;
        if (sc->ngroups == sc->groups_cap) {
            sc->groups_cap = sc->groups_cap ? sc->groups_cap * 2 : 16;
            sc->groups = xrealloc(sc->groups, sc->groups_cap * sizeof *sc->groups);
        }
        struct group *cg = &sc->groups[sc->ngroups++];
        cg->name = sc->names.v[names_intern(&sc->names, g.name, g.name_len, NULL)].s;
        cg->pending = g.pending;
        cg->lag = g.lag;
        cg->has_lag = g.has_lag;
        cg->last_delivered = g.last_delivered;
    }
    t->ngroups = sc->ngroups - t->group0;
    return 0;
}

/* Step 2: TIME and XINFO GROUPS for every stream, in one pipeline. */
static int read_groups(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                       struct scrape *sc, int64_t *now_ms, struct err *e)
{
    redis_pipe_reset(p);
    redis_pipe_addv(p, "TIME", NULL);
    for (size_t i = 0; i < sc->n; i++)
        redis_pipe_addv(p, "XINFO", "GROUPS", sc->t[i].name, NULL);
    struct groups_run run = {st, sc, 0};
    if (redis_pipe_exec_each(st->conn, p, dl, st->max_reply_bytes, groups_reply, &run, e))
        return -1;
    *now_ms = run.now_ms;
    if (sc->ngroups < sc->groups_cap) {
        sc->groups = xrealloc(sc->groups, (sc->ngroups ? sc->ngroups : 1) * sizeof *sc->groups);
        sc->groups_cap = sc->ngroups;
    }
    /* Each distinct dead-letter stream is asked about once, by the first existing stream that
     * names it; the others reuse its answer. */
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        if (t->missing || t->dlq_id == NONE)
            continue;
        struct name *d = &sc->names.v[t->dlq_id];
        if (d->dlq == NONE) {
            d->dlq = sc->ndlqs++;
            t->dlq_owner = 1;
        }
        t->dlq_slot = d->dlq;
    }
    if (sc->ndlqs)
        sc->dlqs = xcalloc(sc->ndlqs, sizeof *sc->dlqs);
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        struct dlq_classify *cl = st->specs[t->spec].classify;
        if (t->dlq_slot != NONE && cl && !sc->dlqs[t->dlq_slot].classify)
            sc->dlqs[t->dlq_slot].classify = cl;
    }
    names_drop_index(&sc->names);
    return 0;
}

static int wants_pending(const struct group *g)
{
    return g->pending > 0;
}

/* lag == 0: everything was delivered, there is no first undelivered entry to look for. */
static int wants_range(const struct group *g)
{
    return !(g->has_lag && g->lag == 0);
}

/* Writes the decimal digits of v at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Step 3's pipeline: per group XPENDING (when it has pending entries) and XRANGE after its
 * last-delivered-id (unless its lag is 0), then per stream XLEN, XRANGE (oldest entry) and
 * XREVRANGE (newest entry) of its dead-letter stream when it is the first to name it. details_reply
 * walks the same order. */
static void add_details(const struct state *st, const struct scrape *sc, struct redis_pipe *p)
{
    char limit[24];
    *put_u64(limit, (uint64_t)st->pending_scan_limit) = '\0';
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->missing)
            continue;
        for (size_t j = 0; j < t->ngroups; j++) {
            const struct group *g = &sc->groups[t->group0 + j];
            if (wants_pending(g))
                redis_pipe_addv(p, "XPENDING", t->name, g->name, "-", "+", limit, NULL);
            if (wants_range(g)) {
                char start[48], *q = start;
                *q++ = '(';
                q = put_u64(q, g->last_delivered.ms);
                *q++ = '-';
                *put_u64(q, g->last_delivered.seq) = '\0';
                redis_pipe_addv(p, "XRANGE", t->name, start, "+", "COUNT", "1", NULL);
            }
        }
        if (t->dlq_owner) {
            /* With dead_letter_classify the entries themselves are read, up to max_entries: the
             * first of them is the oldest all the same. */
            const struct dlq_classify *cl = sc->dlqs[t->dlq_slot].classify;
            char count[24] = "1";
            if (cl)
                *put_u64(count, (uint64_t)dlq_classify_max_entries(cl)) = '\0';
            redis_pipe_addv(p, "XLEN", t->dlq, NULL);
            redis_pipe_addv(p, "XRANGE", t->dlq, "-", "+", "COUNT", count, NULL);
            redis_pipe_addv(p, "XREVRANGE", t->dlq, "+", "-", "COUNT", "1", NULL);
        }
    }
}

#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (metric_set_add(__VA_ARGS__, NULL))                                                     \
            return err_set(e, ERR_INTERNAL, "redis_stream: %s", metric_set_error(out));            \
    } while (0)

static int emit_group(struct metric_set *out, const char *q, const char *g,
                      const struct redis_stream_group_values *v, struct err *e)
{
    if (v->has_ready)
        ADD(out, "qrel_queue_messages", v->ready, "queue", q, "group", g, "state", "ready");
    ADD(out, "qrel_queue_messages", v->in_flight, "queue", q, "group", g, "state", "in_flight");
    ADD(out, "qrel_consumer_lag_seconds", v->consumer_lag_seconds, "queue", q, "group", g);
    ADD(out, "qrel_queue_oldest_message_age_seconds", v->oldest_message_age_seconds, "queue", q,
        "group", g);
    if (v->has_lease_timeout)
        ADD(out, "qrel_lease_timeout_seconds", v->lease_timeout_seconds, "queue", q, "group", g);
    ADD(out, "qrel_lease_oldest_age_seconds", v->lease_oldest_age_seconds, "queue", q, "group", g);
    if (v->has_lease_margin)
        ADD(out, "qrel_lease_margin_ratio", v->lease_margin_ratio, "queue", q, "group", g);
    if (v->has_max_deliveries)
        ADD(out, "qrel_max_deliveries", v->max_deliveries, "queue", q, "group", g);
    if (v->has_retry_horizon)
        ADD(out, "qrel_retry_horizon_seconds", v->retry_horizon_seconds, "queue", q, "group", g);
    ADD(out, "qrel_messages_redelivered", v->messages_redelivered, "queue", q, "group", g);
    return 0;
}

static int emit_dlq(struct metric_set *out, const struct target *t, const struct dlq *d,
                    int64_t now_ms, struct err *e)
{
    ADD(out, "qrel_dead_letter_messages", (double)d->len, "queue", t->name, "dead_letter_queue",
        t->dlq);
    if (d->found)
        ADD(out, "qrel_dead_letter_oldest_age_seconds",
            redis_stream_age_seconds(now_ms, d->first.ms), "queue", t->name, "dead_letter_queue",
            t->dlq);
    if (d->found_last)
        ADD(out, "qrel_dead_letter_newest_age_seconds",
            redis_stream_age_seconds(now_ms, d->last.ms), "queue", t->name, "dead_letter_queue",
            t->dlq);
    return 0;
}

/* Step 3 is read as it arrives: a walk over streams and groups in the order add_details added
 * their commands. Each reply is folded into the group (or dead-letter stream) it belongs to, and
 * a group's series are emitted as soon as its last reply is in, so no reply, and no per-group
 * result, outlives the group. */
enum walk_step {
    W_TARGET,     /* at the start of stream ti */
    W_GROUP,      /* at the start of group gi of it */
    W_PENDING,    /* its XPENDING reply, if it has one */
    W_RANGE,      /* its XRANGE reply, if it has one */
    W_EMIT_GROUP, /* its series */
    W_DLQ,        /* the stream's dead-letter stream, if it has one */
    W_DLQ_LEN,    /* XLEN of it, from its first stream */
    W_DLQ_RANGE,  /* XRANGE - + COUNT 1 of it, likewise */
    W_DLQ_LAST,   /* XREVRANGE + - COUNT 1 of it, likewise */
    W_EMIT_DLQ,   /* the stream's dead-letter series */
};

struct walk {
    struct state *st;
    struct scrape *sc;
    struct metric_set *out;
    int64_t now_ms;
    size_t ti, gi;
    enum walk_step step;
    /* the group being read */
    int skip; /* destroyed between the two pipelines (NOGROUP): it has no series now */
    int have_pending;
    struct redis_stream_pending pending;
    int found;
    struct redis_stream_id first;
};

static int walk_emit_group(struct walk *w, const struct target *t, const struct group *g,
                           struct err *e)
{
    struct redis_stream_group rg;
    memset(&rg, 0, sizeof rg);
    rg.pending = g->pending;
    rg.has_lag = g->has_lag;
    rg.lag = g->lag;
    struct redis_stream_group_values v;
    redis_stream_group_values(w->now_ms, &rg, w->have_pending ? &w->pending : NULL, w->found,
                              &w->first, &w->st->specs[t->spec].pol, &v);
    return emit_group(w->out, t->name, g->name, &v, e);
}

/* Moves the walk to the next reply due, emitting what is complete on the way. Returns 1 when a
 * reply is due (w->step says which), 0 at the end, -1 on error. */
static int walk_next(struct walk *w, struct err *e)
{
    struct scrape *sc = w->sc;
    for (;;) {
        if (w->ti == sc->n)
            return 0;
        const struct target *t = &sc->t[w->ti];
        const struct group *g = w->gi < t->ngroups ? &sc->groups[t->group0 + w->gi] : NULL;
        switch (w->step) {
        case W_TARGET:
            if (t->missing) {
                w->ti++;
                break;
            }
            w->gi = 0;
            w->step = W_GROUP;
            break;
        case W_GROUP:
            if (!g) {
                w->step = W_DLQ;
                break;
            }
            w->skip = w->have_pending = w->found = 0;
            w->first.ms = w->first.seq = 0;
            w->step = W_PENDING;
            break;
        case W_PENDING:
            if (wants_pending(g))
                return 1;
            w->step = W_RANGE;
            break;
        case W_RANGE:
            if (wants_range(g))
                return 1;
            w->step = W_EMIT_GROUP;
            break;
        case W_EMIT_GROUP:
            if (!w->skip && walk_emit_group(w, t, g, e))
                return -1;
            w->gi++;
            w->step = W_GROUP;
            break;
        case W_DLQ:
            if (!t->dlq) {
                w->ti++;
                w->step = W_TARGET;
                break;
            }
            w->step = t->dlq_owner ? W_DLQ_LEN : W_EMIT_DLQ;
            break;
        case W_DLQ_LEN:
        case W_DLQ_RANGE:
        case W_DLQ_LAST:
            return 1;
        case W_EMIT_DLQ:
            if (emit_dlq(w->out, t, &sc->dlqs[t->dlq_slot], w->now_ms, e))
                return -1;
            w->ti++;
            w->step = W_TARGET;
            break;
        }
    }
}

static int details_reply(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct walk *w = ctx;
    int due = walk_next(w, e);
    if (due < 0)
        return -1;
    if (due == 0)
        return err_set(e, ERR_INTERNAL, "redis_stream: reply %zu answers no command", index + 1);
    struct redis_conn *conn = w->st->conn;
    const struct target *t = &w->sc->t[w->ti];
    const struct group *g = w->gi < t->ngroups ? &w->sc->groups[t->group0 + w->gi] : NULL;
    switch (w->step) {
    case W_PENDING:
        w->step = W_RANGE;
        if (redis_reply_is_error(r, "NOGROUP")) {
            w->skip = 1;
            return 0;
        }
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 600, "XPENDING \"%s\" \"%s\"", t->name, g->name);
        if (redis_stream_parse_pending(r, t->name, g->name, &w->pending, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        w->have_pending = 1;
        return 0;
    case W_RANGE:
        w->step = W_EMIT_GROUP;
        if (w->skip)
            return 0;
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 600,
                               "XRANGE \"%s\" after the last delivered id of \"%s\"", t->name,
                               g->name);
        if (redis_stream_parse_first_entry(r, &w->found, &w->first, e))
            return parse_error(conn, e, 600, "XRANGE \"%s\" after the last delivered id of \"%s\"",
                               t->name, g->name);
        return 0;
    case W_DLQ_LEN:
        w->step = W_DLQ_RANGE;
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XLEN \"%s\"", t->dlq);
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer < 0) {
            err_set(e, ERR_PROTOCOL, "want an integer >= 0, got %s", redis_reply_type_name(r));
            return parse_error(conn, e, 300, "XLEN \"%s\"", t->dlq);
        }
        w->sc->dlqs[t->dlq_slot].len = r->integer;
        return 0;
    case W_DLQ_RANGE: {
        w->step = W_DLQ_LAST;
        struct dlq *d = &w->sc->dlqs[t->dlq_slot];
        const char *count = d->classify ? "max_entries" : "1";
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XRANGE \"%s\" - + COUNT %s", t->dlq, count);
        if (redis_stream_parse_first_entry(r, &d->found, &d->first, e) ||
            (d->classify && dlq_tally_add(&d->tally, dlq_classify_id_field(d->classify), r, e)))
            return parse_error(conn, e, 300, "XRANGE \"%s\" - + COUNT %s", t->dlq, count);
        return 0;
    }
    case W_DLQ_LAST: {
        w->step = W_EMIT_DLQ;
        /* XREVRANGE lists newest first, so its first entry is the newest one. */
        struct dlq *d = &w->sc->dlqs[t->dlq_slot];
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XREVRANGE \"%s\" + - COUNT 1", t->dlq);
        if (redis_stream_parse_first_entry(r, &d->found_last, &d->last, e))
            return parse_error(conn, e, 300, "XREVRANGE \"%s\" + - COUNT 1", t->dlq);
        return 0;
    }
    default:
        return err_set(e, ERR_INTERNAL, "redis_stream: reply %zu read out of step", index + 1);
    }
}

/* Step 3: XPENDING and XRANGE per group, XLEN, XRANGE and XREVRANGE per dead-letter stream, one
 * pipeline, read and emitted as the replies come. */
static int read_details(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                        struct scrape *sc, int64_t now_ms, struct metric_set *out, struct err *e)
{
    redis_pipe_reset(p);
    add_details(st, sc, p);
    struct walk w;
    memset(&w, 0, sizeof w);
    w.st = st;
    w.sc = sc;
    w.out = out;
    w.now_ms = now_ms;
    w.step = W_TARGET;
    if (redis_pipe_len(p) &&
        redis_pipe_exec_each(st->conn, p, dl, st->max_reply_bytes, details_reply, &w, e))
        return -1;
    int due = walk_next(&w, e);
    if (due > 0)
        return err_set(e, ERR_INTERNAL, "redis_stream: %zu replies for more commands",
                       redis_pipe_len(p));
    return due;
}

/* Step 4, for dead-letter streams with dead_letter_classify only: one PostgreSQL statement each
 * (after the Redis round trip, under the same deadline), then the split for every stream that
 * names one and has a block of its own. All three values are emitted, zeros included, so that a
 * dashboard shows the split as it is. */
static int classify_dlqs(struct collector *c, const struct state *st, const struct deadline *dl,
                         struct scrape *sc, struct metric_set *out, struct err *e)
{
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        struct dlq *d = t->dlq_owner ? &sc->dlqs[t->dlq_slot] : NULL;
        if (d && d->classify &&
            dlq_classify_run(d->classify, c->name, t->dlq, &d->tally, d->len, dl, &d->split, e))
            return -1;
    }
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->missing || t->dlq_slot == NONE || !st->specs[t->spec].classify)
            continue;
        const struct dlq_split *v = &sc->dlqs[t->dlq_slot].split;
        const char *q = t->name, *dq = t->dlq, *f = "qrel_dead_letter_classified_messages";
        ADD(out, f, v->done, "queue", q, "dead_letter_queue", dq, "work", "done");
        ADD(out, f, v->not_done, "queue", q, "dead_letter_queue", dq, "work", "not_done");
        ADD(out, f, v->unknown, "queue", q, "dead_letter_queue", dq, "work", "unknown");
    }
    return 0;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc;
    struct redis_pipe *p = NULL;
    int64_t now_ms = 0;
    int rc = -1;

    memset(&sc, 0, sizeof sc);
    if (!st->conn) {
        st->conn = redis_conn_open(c->name, st->address, st->username, st->password, st->db, dl, e);
        if (!st->conn)
            return -1;
    }
    struct redis_stats before = *redis_conn_stats(st->conn);
    p = redis_pipe_new();
    if (resolve_targets(c, st, p, dl, &sc, e) || read_groups(st, p, dl, &sc, &now_ms, e) ||
        read_details(st, p, dl, &sc, now_ms, out, e) || classify_dlqs(c, st, dl, &sc, out, e))
        goto out;
    rc = 0;
    if (log_enabled(LOG_DEBUG)) {
        const struct redis_stats *after = redis_conn_stats(st->conn);
        char streams[32], missing[32], cmds[32], rts[32];
        snprintf(streams, sizeof streams, "%zu", sc.n - sc.missing);
        snprintf(missing, sizeof missing, "%zu", sc.missing);
        snprintf(cmds, sizeof cmds, "%llu", after->commands - before.commands);
        snprintf(rts, sizeof rts, "%llu", after->round_trips - before.round_trips);
        log_kv(LOG_DEBUG, "redis collection done", "source", c->name, "streams", streams,
               "missing_streams", missing, "commands", cmds, "round_trips", rts, NULL);
    }
out:
    if (rc) {
        /* Whatever went wrong, the socket may hold half a reply: start afresh next time. */
        redis_conn_close(st->conn);
        st->conn = NULL;
    }
    redis_pipe_free(p);
    scrape_free(&sc);
    return rc;
}

/* --config.check: what can be verified without Redis, the tables of dead_letter_classify. */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    for (size_t i = 0; i < st->nspecs; i++) {
        const struct stream_spec *sp = &st->specs[i];
        if (!sp->classify)
            continue;
        char what[300];
        snprintf(what, sizeof what, "%s \"%.200s\"", sp->name ? "stream" : "pattern",
                 sp->name ? sp->name : sp->pattern);
        if (dlq_classify_check(sp->classify, c->name, what, dl, e))
            return -1;
    }
    return 0;
}

const struct collector_kind redis_stream_kind = {.name = "redis_stream",
                                                 .configure = configure,
                                                 .collect = collect,
                                                 .destroy = destroy,
                                                 .check = check};
