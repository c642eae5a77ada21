/* redis_stream.c: `kind: redis_stream`, the reliability of Redis streams read by consumer groups.
 *
 * A consumer group is a log reader with a lease: entries after its last-delivered-id are waiting
 * (lag), delivered but unacknowledged entries sit in its pending entries list (PEL) with an idle
 * time and a delivery count, and consumers reclaim entries idle longer than their XAUTOCLAIM
 * min-idle, which is therefore the lease. This collector turns that into the qrel_ series using
 * read-only commands only (TIME, SCAN, XINFO GROUPS, XPENDING, XRANGE, XLEN; AUTH/SELECT on
 * connect), so a monitoring user can never move, claim or acknowledge anything.
 *
 * The number of round trips per scrape does not grow with the number of streams: SCAN rounds
 * (one per 1000 keys of the keyspace, all patterns in one pipeline), then one pipeline for TIME
 * and every XINFO GROUPS, then one for every XPENDING / XRANGE / XLEN. Ages are computed against
 * the server's TIME, because entry ids carry the server's clock, not ours. */
#include "redis_stream.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/redis.h"
#include "config.h"
#include "log.h"
#include "util.h"

#define DEFAULT_MAX_STREAMS 10000
#define DEFAULT_PENDING_SCAN_LIMIT 1000
#define SCAN_COUNT "1000"
#define NO_REPLY ((size_t)-1)
#define PASSWORD_MAX_BYTES 4096

/* ---- pure parsing (redis_stream.h) ---- */

int redis_stream_parse_id(const char *s, size_t len, struct redis_stream_id *out)
{
    uint64_t part[2] = {0, 0};
    size_t i = 0;
    for (int k = 0; k < 2; k++) {
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            uint64_t d = (uint64_t)(s[i] - '0');
            if (part[k] > (UINT64_MAX - d) / 10)
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

int redis_stream_parse_groups(const redisReply *r, const char *stream,
                              struct redis_stream_group **out, size_t *n, struct err *e)
{
    *out = NULL;
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "XINFO GROUPS \"%s\": want an array, got %s", stream,
                       redis_reply_type_name(r));
    struct redis_stream_group *gs = xcalloc(r->elements ? r->elements : 1, sizeof *gs);
    size_t ng = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *f = r->element[i];
        struct redis_stream_group *g = &gs[ng++];
        char who[160];
        snprintf(who, sizeof who, "XINFO GROUPS \"%s\": group %zu", stream, i + 1);
        if (!f || f->type != REDIS_REPLY_ARRAY || f->elements % 2) {
            err_set(e, ERR_PROTOCOL, "%s: want a flat array of keys and values, got %s", who,
                    f && f->type == REDIS_REPLY_ARRAY ? "an odd number of elements"
                                                      : redis_reply_type_name(f));
            goto fail;
        }
        /* The name first, so the other messages can say which group is wrong. */
        for (size_t j = 0; j + 1 < f->elements; j += 2)
            if (!g->name && is_string(f->element[j]) && key_is(f->element[j], "name") &&
                is_string(f->element[j + 1])) {
                g->name = xstrndup(f->element[j + 1]->str, f->element[j + 1]->len);
                snprintf(who, sizeof who, "XINFO GROUPS \"%s\": group \"%s\"", stream, g->name);
            }
        int have_consumers = 0, have_pending = 0, have_last = 0;
        for (size_t j = 0; j + 1 < f->elements; j += 2) {
            const redisReply *k = f->element[j], *v = f->element[j + 1];
            if (!is_string(k)) {
                err_set(e, ERR_PROTOCOL, "%s: key %zu: want a string, got %s", who, j / 2 + 1,
                        redis_reply_type_name(k));
                goto fail;
            }
            const char *field = NULL;
            if (key_is(k, "name")) {
                if (!is_string(v)) {
                    field = "name";
                    goto want_string;
                }
            } else if (key_is(k, "consumers") || key_is(k, "pending")) {
                field = key_is(k, "pending") ? "pending" : "consumers";
                if (!v || v->type != REDIS_REPLY_INTEGER || v->integer < 0)
                    goto want_count;
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
                if (redis_stream_parse_id(v->str, v->len, &g->last_delivered)) {
                    err_set(e, ERR_PROTOCOL,
                            "%s: field \"%s\": want an id like \"1700000000000-0\", got \"%.*s\"",
                            who, field, SHOWN(v));
                    goto fail;
                }
                have_last = 1;
            } else if (key_is(k, "entries-read") || key_is(k, "lag")) {
                int is_lag = key_is(k, "lag");
                field = is_lag ? "lag" : "entries-read";
                if (v && v->type == REDIS_REPLY_NIL)
                    continue; /* unknown to the server: leave has_* at 0 */
                if (!v || v->type != REDIS_REPLY_INTEGER || v->integer < 0) {
                    err_set(e, ERR_PROTOCOL,
                            "%s: field \"%s\": want an integer >= 0 or nil, got %s", who, field,
                            redis_reply_type_name(v));
                    goto fail;
                }
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
            err_set(e, ERR_PROTOCOL, "%s: field \"%s\": want a string, got %s", who, field,
                    redis_reply_type_name(v));
            goto fail;
        want_count:
            err_set(e, ERR_PROTOCOL, "%s: field \"%s\": want an integer >= 0, got %s", who, field,
                    redis_reply_type_name(v));
            goto fail;
        }
        const char *missing = !g->name          ? "name"
                              : !have_consumers ? "consumers"
                              : !have_pending   ? "pending"
                              : !have_last      ? "last-delivered-id"
                                                : NULL;
        if (missing) {
            err_set(e, ERR_PROTOCOL, "%s: field \"%s\" is missing", who, missing);
            goto fail;
        }
    }
    *out = gs;
    *n = ng;
    return 0;
fail:
    redis_stream_groups_free(gs, ng);
    return -1;
}

void redis_stream_groups_free(struct redis_stream_group *g, size_t n)
{
    if (!g)
        return;
    for (size_t i = 0; i < n; i++)
        free(g[i].name);
    free(g);
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

int redis_stream_parse_first_entry(const redisReply *r, const char *what, int *found,
                                   struct redis_stream_id *id, struct err *e)
{
    *found = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "%s: want an array, got %s", what,
                       redis_reply_type_name(r));
    if (r->elements == 0)
        return 0;
    const redisReply *x = r->element[0];
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements < 1 || !is_string(x->element[0]))
        return err_set(e, ERR_PROTOCOL, "%s: entry 1: want [id, fields], got %s", what,
                       redis_reply_type_name(x));
    if (redis_stream_parse_id(x->element[0]->str, x->element[0]->len, id))
        return err_set(e, ERR_PROTOCOL,
                       "%s: entry 1: want an id like \"1700000000000-0\", got \"%.*s\"", what,
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

/* ---- a string -> index map (deduplication of stream names) ---- */

struct strmap {
    char **keys;
    size_t *vals;
    size_t cap, n;
};

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static size_t strmap_slot(const struct strmap *m, const char *k)
{
    size_t i = (size_t)(str_hash(k) & (m->cap - 1));
    while (m->keys[i] && strcmp(m->keys[i], k) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int strmap_get(const struct strmap *m, const char *k, size_t *val)
{
    if (!m->cap)
        return 0;
    size_t i = strmap_slot(m, k);
    if (!m->keys[i])
        return 0;
    if (val)
        *val = m->vals[i];
    return 1;
}

/* Returns 1 when k was added (copied), 0 when it was there already (its value is kept). */
static int strmap_put(struct strmap *m, const char *k, size_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct strmap bigger = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
        bigger.keys = xcalloc(bigger.cap, sizeof *bigger.keys);
        bigger.vals = xcalloc(bigger.cap, sizeof *bigger.vals);
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = strmap_slot(&bigger, m->keys[i]);
                bigger.keys[j] = m->keys[i];
                bigger.vals[j] = m->vals[i];
            }
        bigger.n = m->n;
        free(m->keys);
        free(m->vals);
        *m = bigger;
    }
    size_t i = strmap_slot(m, k);
    if (m->keys[i])
        return 0;
    m->keys[i] = xstrdup(k);
    m->vals[i] = val;
    m->n++;
    return 1;
}

static void strmap_free(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- configuration ---- */

struct stream_spec {
    char *name; /* exactly one of name and pattern */
    char *pattern;
    char **groups; /* NULL: every group */
    size_t ngroups;
    struct redis_stream_policy pol;
    char *dlq_tmpl; /* dead_letter_stream, NULL when not configured */
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

static void wipe_str(char *s)
{
    if (!s)
        return;
    volatile char *p = s;
    while (*p)
        *p++ = 0;
}

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
    }
    free(st->specs);
    free(st->address);
    free(st->username);
    wipe_str(st->password);
    free(st->password);
    free(st);
    c->priv = NULL;
}

static struct cfg_node *node_of(struct cfg_node *map, const char *key)
{
    struct cfg_node *n = NULL;
    struct err ignored;
    if (cfg_get_node(map, key, CFG_SCALAR, &n, &ignored))
        return map;
    return n ? n : map;
}

/* password_file / password_env: read now, so a missing secret is a config error at start-up and
 * not a failed scrape later. Messages name the file or variable, never what is in it. */
static int read_password(struct state *st, struct cfg_node *map, struct err *e)
{
    char *file = NULL, *env = NULL;
    int rc = -1;
    if (cfg_get_secret_ref(map, "password_file", 0, &file, e) ||
        cfg_get_secret_ref(map, "password_env", 0, &env, e))
        goto out;
    if (file && env) {
        cfg_error(e, node_of(map, "password_env"),
                  "password_env: want either password_file or password_env, not both");
        goto out;
    }
    if (file) {
        size_t len = 0;
        char *pw = util_read_file(file, PASSWORD_MAX_BYTES, &len);
        if (!pw) {
            cfg_error(e, node_of(map, "password_file"), "password_file: cannot read \"%s\": %s",
                      file, errno == EFBIG ? "larger than 4096 bytes" : strerror(errno));
            goto out;
        }
        int has_nul = strlen(pw) != len;
        util_chomp(pw);
        if (has_nul || !*pw) {
            cfg_error(e, node_of(map, "password_file"), "password_file: \"%s\" %s", file,
                      has_nul ? "contains a NUL byte" : "is empty");
            wipe_str(pw);
            free(pw);
            goto out;
        }
        st->password = pw;
    } else if (env) {
        const char *v = getenv(env);
        if (!v || !*v) {
            cfg_error(e, node_of(map, "password_env"),
                      "password_env: environment variable \"%s\" is %s", env,
                      v ? "empty" : "not set");
            goto out;
        }
        st->password = xstrdup(v);
    }
    rc = 0;
out:
    free(file);
    free(env);
    return rc;
}

static const char *const source_keys[] = {
    "address",         "username",    "password_file",      "password_env", "db",
    "max_reply_bytes", "max_streams", "pending_scan_limit", "streams",      NULL,
};
static const char *const stream_keys[] = {
    "name", "pattern", "groups", "claim_min_idle", "max_deliveries", "dead_letter_stream", NULL,
};

/* Marks every key this kind knows as asked for, so that cfg_finish's hint lists them all. */
static void ask_all(struct cfg_node *map, const char *const *keys)
{
    struct cfg_node *n;
    struct err ignored;
    for (const char *const *k = keys; *k; k++)
        cfg_get_node(map, *k, CFG_NULL, &n, &ignored);
}

/* A required key is missing: a misspelt key is the likelier story, and its message names both
 * the typo and the known keys. The core runs cfg_finish only after a successful configure, so on
 * this failure path the kind runs it itself first. */
static int missing_key(struct cfg_node *map, const char *const *keys, const char *where,
                       struct err *e)
{
    ask_all(map, keys);
    return cfg_finish(map, where, e);
}

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
        if (!sp->name && missing_key(item, stream_keys, where, e))
            return -1;
        return cfg_error(e, item, "want exactly one of name and pattern in each entry of streams");
    }
    const char *key = sp->name ? "name" : "pattern";
    const char *val = sp->name ? sp->name : sp->pattern;
    if (!*val)
        return cfg_error(e, node_of(item, key), "%s: want a non-empty string", key);
    for (size_t i = 0; i + 1 < st->nspecs; i++) {
        const char *other = sp->name ? st->specs[i].name : st->specs[i].pattern;
        if (other && strcmp(other, val) == 0)
            return cfg_error(e, node_of(item, key), "%s: \"%s\" is listed twice", key, val);
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
        return cfg_error(e, node_of(item, "dead_letter_stream"),
                         "dead_letter_stream: want a non-empty stream name");

    char where[400];
    snprintf(where, sizeof where, "%s \"%s\" of source \"%s\"", sp->name ? "stream" : "pattern",
             val, c->name);
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
    if ((!st->address || !streams) && missing_key(map, source_keys, where, e))
        return -1;
    if (!st->address) /* no typo elsewhere: the key is simply missing */
        return cfg_get_str(map, "address", 1, &st->address, e);
    struct redis_address a;
    struct err ae;
    if (redis_address_parse(st->address, &a, &ae))
        return cfg_error(e, node_of(map, "address"), "address: %s", ae.msg);
    redis_address_free(&a);

    if (cfg_get_str(map, "username", 0, &st->username, e) || read_password(st, map, e))
        return -1;
    if (st->username && !st->password)
        return cfg_error(e, node_of(map, "username"),
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

struct group_slot {
    int included;         /* passes the groups filter */
    size_t pending_reply; /* XPENDING, NO_REPLY when nothing is pending */
    size_t range_reply;   /* XRANGE after last-delivered-id, NO_REPLY when lag == 0 */
};

struct target {
    char *name;
    size_t spec;
    int from_pattern;
    char *dlq; /* expanded dead_letter_stream, or NULL */
    size_t xinfo_reply;
    int missing;
    struct redis_stream_group *groups;
    size_t ngroups;
    struct group_slot *slots;
    size_t dlq_len_reply, dlq_range_reply;
};

struct scrape {
    struct target *t;
    size_t n;
    size_t missing;
};

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->t[i].name);
        free(sc->t[i].dlq);
        redis_stream_groups_free(sc->t[i].groups, sc->t[i].ngroups);
        free(sc->t[i].slots);
    }
    free(sc->t);
    memset(sc, 0, sizeof *sc);
}

static void target_add(struct scrape *sc, const char *name, size_t spec, int from_pattern)
{
    sc->t = xrealloc(sc->t, (sc->n + 1) * sizeof *sc->t);
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->spec = spec;
    t->from_pattern = from_pattern;
}

static int query_error(struct redis_conn *conn, const char *what, const redisReply *r,
                       struct err *e)
{
    int n = (int)(r->len > 300 ? 300 : r->len);
    return err_set(e, ERR_QUERY, "%s: %s: %.*s", redis_conn_label(conn), what, n, r->str);
}

/* What one pattern found: its own dedup map, so a stream matched by two patterns goes to the one
 * listed first, whichever SCAN happened to report it for first. */
struct pattern_scan {
    size_t spec;
    char cursor[24];
    int done;
    struct strmap seen;
    char **found;
    size_t nfound;
};

/* Runs SCAN for every pattern, one SCAN per still-active pattern per round trip, until all
 * cursors are back at 0 or max_streams distinct streams were found. */
static int scan_patterns(struct collector *c, struct state *st, struct redis_pipe *p,
                         const struct deadline *dl, struct pattern_scan *ps, size_t nps,
                         struct err *e)
{
    struct strmap all = {0};
    int capped = 0, rc = -1;
    size_t *active = xcalloc(nps, sizeof *active);
    for (;;) {
        redis_pipe_reset(p);
        size_t na = 0;
        for (size_t i = 0; i < nps && !capped; i++) {
            if (ps[i].done)
                continue;
            active[na++] = i;
            redis_pipe_addv(p, "SCAN", ps[i].cursor, "MATCH", st->specs[ps[i].spec].pattern,
                            "COUNT", SCAN_COUNT, "TYPE", "stream", NULL);
        }
        if (na == 0)
            break;
        if (redis_pipe_exec(st->conn, p, dl, st->max_reply_bytes, e))
            goto out;
        for (size_t k = 0; k < na; k++) {
            struct pattern_scan *s = &ps[active[k]];
            const redisReply *r = redis_pipe_reply(p, k);
            char what[300];
            snprintf(what, sizeof what, "SCAN MATCH \"%s\"", st->specs[s->spec].pattern);
            if (redis_reply_is_error(r, NULL)) {
                query_error(st->conn, what, r, e);
                goto out;
            }
            if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                !is_string(r->element[0]) || r->element[0]->len >= sizeof s->cursor ||
                r->element[1]->type != REDIS_REPLY_ARRAY) {
                err_set(e, ERR_PROTOCOL, "%s: %s: want [cursor, keys]", redis_conn_label(st->conn),
                        what);
                goto out;
            }
            const redisReply *keys = r->element[1];
            for (size_t j = 0; j < keys->elements && !capped; j++) {
                const redisReply *k1 = keys->element[j];
                /* A key with a NUL byte cannot be a C string; such keys are not collected. */
                if (!is_string(k1) || memchr(k1->str, '\0', k1->len))
                    continue;
                if (!strmap_put(&s->seen, k1->str, 0))
                    continue;
                s->found = xrealloc(s->found, (s->nfound + 1) * sizeof *s->found);
                s->found[s->nfound++] = xstrdup(k1->str);
                strmap_put(&all, k1->str, 0);
                if ((long long)all.n >= st->max_streams)
                    capped = 1;
            }
            memcpy(s->cursor, r->element[0]->str, r->element[0]->len);
            s->cursor[r->element[0]->len] = '\0';
            if (strcmp(s->cursor, "0") == 0)
                s->done = 1;
        }
    }
    if (capped && !st->warned_cap) {
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
    strmap_free(&all);
    free(active);
    return rc;
}

/* Step 1: the streams of this scrape, in config order, each once, with the first matching
 * entry's settings; dead-letter streams found by a pattern are not collected as streams. */
static int resolve_targets(struct collector *c, struct state *st, struct redis_pipe *p,
                           const struct deadline *dl, struct scrape *sc, struct err *e)
{
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
    struct strmap chosen = {0}, dlqs = {0};
    if (nps && scan_patterns(c, st, p, dl, ps, nps, e))
        goto out;

    for (size_t i = 0, k = 0; i < st->nspecs; i++) {
        if (st->specs[i].name) {
            if (strmap_put(&chosen, st->specs[i].name, 0))
                target_add(sc, st->specs[i].name, i, 0);
            continue;
        }
        struct pattern_scan *s = &ps[k++];
        for (size_t j = 0; j < s->nfound; j++)
            if (strmap_put(&chosen, s->found[j], 0))
                target_add(sc, s->found[j], i, 1);
    }
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        const char *tmpl = st->specs[t->spec].dlq_tmpl;
        if (!tmpl)
            continue;
        t->dlq = redis_stream_dlq_name(tmpl, t->name);
        if (strcmp(t->dlq, t->name) != 0)
            strmap_put(&dlqs, t->dlq, 0);
    }
    size_t kept = 0;
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        if (t->from_pattern && strmap_get(&dlqs, t->name, NULL)) {
            free(t->name);
            free(t->dlq);
            continue;
        }
        sc->t[kept++] = *t;
    }
    sc->n = kept;
    rc = 0;
out:
    for (size_t i = 0; i < nps; i++) {
        for (size_t j = 0; j < ps[i].nfound; j++)
            free(ps[i].found[j]);
        free(ps[i].found);
        strmap_free(&ps[i].seen);
    }
    free(ps);
    strmap_free(&chosen);
    strmap_free(&dlqs);
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

static int emit_dlq(struct redis_conn *conn, const struct redis_pipe *p, const struct target *t,
                    int64_t now_ms, struct metric_set *out, struct err *e)
{
    char what[300];
    const redisReply *len = redis_pipe_reply(p, t->dlq_len_reply);
    snprintf(what, sizeof what, "XLEN \"%s\"", t->dlq);
    if (redis_reply_is_error(len, NULL))
        return query_error(conn, what, len, e);
    if (!len || len->type != REDIS_REPLY_INTEGER || len->integer < 0)
        return err_set(e, ERR_PROTOCOL, "%s: %s: want an integer >= 0, got %s",
                       redis_conn_label(conn), what, redis_reply_type_name(len));
    const redisReply *first = redis_pipe_reply(p, t->dlq_range_reply);
    snprintf(what, sizeof what, "XRANGE \"%s\" - + COUNT 1", t->dlq);
    if (redis_reply_is_error(first, NULL))
        return query_error(conn, what, first, e);
    int found = 0;
    struct redis_stream_id id;
    if (redis_stream_parse_first_entry(first, what, &found, &id, e))
        return err_prefix(e, "%s", redis_conn_label(conn));
    ADD(out, "qrel_dead_letter_messages", (double)len->integer, "queue", t->name,
        "dead_letter_queue", t->dlq);
    if (found)
        ADD(out, "qrel_dead_letter_oldest_age_seconds", redis_stream_age_seconds(now_ms, id.ms),
            "queue", t->name, "dead_letter_queue", t->dlq);
    return 0;
}

/* Step 2: TIME and XINFO GROUPS for every stream, in one pipeline. */
static int read_groups(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                       struct scrape *sc, int64_t *now_ms, struct err *e)
{
    redis_pipe_reset(p);
    size_t time_reply = redis_pipe_addv(p, "TIME", NULL);
    for (size_t i = 0; i < sc->n; i++)
        sc->t[i].xinfo_reply = redis_pipe_addv(p, "XINFO", "GROUPS", sc->t[i].name, NULL);
    if (redis_pipe_exec(st->conn, p, dl, st->max_reply_bytes, e))
        return -1;
    const redisReply *tr = redis_pipe_reply(p, time_reply);
    if (redis_reply_is_error(tr, NULL))
        return query_error(st->conn, "TIME", tr, e);
    if (redis_stream_parse_time(tr, now_ms, e))
        return err_prefix(e, "%s", redis_conn_label(st->conn));
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        const redisReply *r = redis_pipe_reply(p, t->xinfo_reply);
        char what[300];
        snprintf(what, sizeof what, "XINFO GROUPS \"%s\"", t->name);
        /* A configured stream that does not exist (yet, or any more) is not an error. */
        if (redis_reply_is_error(r, "ERR no such key")) {
            t->missing = 1;
            sc->missing++;
            continue;
        }
        if (redis_reply_is_error(r, NULL))
            return query_error(st->conn, what, r, e);
        if (redis_stream_parse_groups(r, t->name, &t->groups, &t->ngroups, e))
            return err_prefix(e, "%s", redis_conn_label(st->conn));
    }
    return 0;
}

/* Step 3: XPENDING and XRANGE per group, XLEN and XRANGE per dead-letter stream, one pipeline. */
static int read_details(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                        struct scrape *sc, struct err *e)
{
    char limit[32];
    snprintf(limit, sizeof limit, "%lld", st->pending_scan_limit);
    struct strmap dlqs = {0};
    redis_pipe_reset(p);
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        t->dlq_len_reply = t->dlq_range_reply = NO_REPLY;
        if (t->missing)
            continue;
        t->slots = xcalloc(t->ngroups ? t->ngroups : 1, sizeof *t->slots);
        for (size_t j = 0; j < t->ngroups; j++) {
            const struct redis_stream_group *g = &t->groups[j];
            struct group_slot *s = &t->slots[j];
            s->included = group_wanted(&st->specs[t->spec], g->name);
            s->pending_reply = s->range_reply = NO_REPLY;
            if (!s->included)
                continue;
            if (g->pending > 0)
                s->pending_reply =
                    redis_pipe_addv(p, "XPENDING", t->name, g->name, "-", "+", limit, NULL);
            if (!(g->has_lag && g->lag == 0)) {
                char start[64];
                snprintf(start, sizeof start, "(%llu-%llu",
                         (unsigned long long)g->last_delivered.ms,
                         (unsigned long long)g->last_delivered.seq);
                s->range_reply =
                    redis_pipe_addv(p, "XRANGE", t->name, start, "+", "COUNT", "1", NULL);
            }
        }
        if (t->dlq) {
            size_t first;
            if (strmap_get(&dlqs, t->dlq, &first)) {
                t->dlq_len_reply = first;
                t->dlq_range_reply = first + 1;
            } else {
                t->dlq_len_reply = redis_pipe_addv(p, "XLEN", t->dlq, NULL);
                t->dlq_range_reply =
                    redis_pipe_addv(p, "XRANGE", t->dlq, "-", "+", "COUNT", "1", NULL);
                strmap_put(&dlqs, t->dlq, t->dlq_len_reply);
            }
        }
    }
    strmap_free(&dlqs);
    if (redis_pipe_len(p) == 0)
        return 0;
    return redis_pipe_exec(st->conn, p, dl, st->max_reply_bytes, e);
}

static int emit_all(struct state *st, const struct redis_pipe *p, const struct scrape *sc,
                    int64_t now_ms, struct metric_set *out, struct err *e)
{
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->missing)
            continue;
        const struct stream_spec *sp = &st->specs[t->spec];
        for (size_t j = 0; j < t->ngroups; j++) {
            const struct redis_stream_group *g = &t->groups[j];
            const struct group_slot *s = &t->slots[j];
            if (!s->included)
                continue;
            char what[600];
            struct redis_stream_pending pend, *pendp = NULL;
            if (s->pending_reply != NO_REPLY) {
                const redisReply *r = redis_pipe_reply(p, s->pending_reply);
                /* The group was destroyed between the two pipelines: it has no series now. */
                if (redis_reply_is_error(r, "NOGROUP"))
                    continue;
                snprintf(what, sizeof what, "XPENDING \"%s\" \"%s\"", t->name, g->name);
                if (redis_reply_is_error(r, NULL))
                    return query_error(st->conn, what, r, e);
                if (redis_stream_parse_pending(r, t->name, g->name, &pend, e))
                    return err_prefix(e, "%s", redis_conn_label(st->conn));
                pendp = &pend;
            }
            int found = 0;
            struct redis_stream_id first = {0, 0};
            if (s->range_reply != NO_REPLY) {
                const redisReply *r = redis_pipe_reply(p, s->range_reply);
                snprintf(what, sizeof what, "XRANGE \"%s\" after the last delivered id of \"%s\"",
                         t->name, g->name);
                if (redis_reply_is_error(r, NULL))
                    return query_error(st->conn, what, r, e);
                if (redis_stream_parse_first_entry(r, what, &found, &first, e))
                    return err_prefix(e, "%s", redis_conn_label(st->conn));
            }
            struct redis_stream_group_values v;
            redis_stream_group_values(now_ms, g, pendp, found, &first, &sp->pol, &v);
            if (emit_group(out, t->name, g->name, &v, e))
                return -1;
        }
        if (t->dlq && emit_dlq(st->conn, p, t, now_ms, out, e))
            return -1;
    }
    return 0;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc = {0};
    struct redis_pipe *p = NULL;
    int64_t now_ms = 0;
    int rc = -1;

    if (!st->conn) {
        st->conn = redis_conn_open(c->name, st->address, st->username, st->password, st->db, dl, e);
        if (!st->conn)
            return -1;
    }
    struct redis_stats before = *redis_conn_stats(st->conn);
    p = redis_pipe_new();
    if (resolve_targets(c, st, p, dl, &sc, e) || read_groups(st, p, dl, &sc, &now_ms, e) ||
        read_details(st, p, dl, &sc, e) || emit_all(st, p, &sc, now_ms, out, e))
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

const struct collector_kind redis_stream_kind = {"redis_stream", configure, collect, destroy};
