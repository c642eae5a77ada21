/* redis_stream/parse.c: the pure parts of the `redis_stream` kind (redis_stream.h): Redis replies,
 * as hiredis parses them, into structs, and those into the values of the series. No I/O, so the
 * unit tests feed recorded replies and every edge case without a server. */
#include "redis_stream.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/entries.h"
#include "common/redis.h"
#include "alloc.h"
#include "text.h"

/* The decimal number of the digits s[*i ..] up to the first non-digit, strictly: at least one
 * digit, at most 20, and no more than UINT64_MAX. One pass over the digits: up to 19 cannot
 * overflow, so only a 20th is checked (this runs for every entry of every XPENDING reply: a
 * scan for the end and then a second walk was 12 % of a deep collection's instructions). */
static int is_digit(char c)
{
    return (unsigned)((unsigned char)c - '0') <= 9;
}

static int parse_u64_part(const char *s, size_t len, size_t *i, uint64_t *out)
{
    size_t start = *i, k = start;
    size_t end = len - start > 19 ? start + 19 : len;
    uint64_t v = 0;
    while (k < end && is_digit(s[k]))
        v = v * 10 + (uint64_t)(s[k++] - '0');
    if (k == start)
        return -1;
    if (k - start == 19 && k < len && is_digit(s[k])) {
        uint64_t d = (uint64_t)(s[k++] - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return -1;
        v = v * 10 + d;
        if (k < len && is_digit(s[k]))
            return -1; /* 21 digits or more */
    }
    *out = v;
    *i = k;
    return 0;
}

int redis_stream_parse_id(const char *s, size_t len, struct redis_stream_id *out)
{
    uint64_t ms, seq;
    size_t i = 0;
    if (parse_u64_part(s, len, &i, &ms) || i >= len || s[i] != '-')
        return -1;
    i++;
    if (parse_u64_part(s, len, &i, &seq) || i != len)
        return -1;
    out->ms = ms;
    out->seq = seq;
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

int redis_stream_parse_active_consumers(const redisReply *r, long long window_ms, long long *n,
                                        struct err *e)
{
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array, got %s", redis_reply_type_name(r));
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *c = r->element[i];
        if (!c || c->type != REDIS_REPLY_ARRAY || c->elements % 2)
            return err_set(e, ERR_PROTOCOL,
                           "consumer %zu: want a flat array of keys and values, got %s", i + 1,
                           c && c->type == REDIS_REPLY_ARRAY ? "an odd number of elements"
                                                             : redis_reply_type_name(c));
        const redisReply *idle = NULL;
        for (size_t j = 0; j + 1 < c->elements; j += 2)
            if (is_string(c->element[j]) && key_is(c->element[j], "idle"))
                idle = c->element[j + 1];
        if (!idle)
            return err_set(e, ERR_PROTOCOL, "consumer %zu: field \"idle\" is missing", i + 1);
        if (idle->type != REDIS_REPLY_INTEGER || idle->integer < 0)
            return err_set(e, ERR_PROTOCOL,
                           "consumer %zu: field \"idle\": want an integer >= 0, got %s", i + 1,
                           redis_reply_type_name(idle));
        if (idle->integer <= window_ms)
            (*n)++;
    }
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

int redis_stream_pending_truncated(const struct redis_stream_pending *p, long long pending,
                                   long long limit)
{
    return p && limit > 0 && (long long)p->scanned >= limit && pending > (long long)p->scanned;
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

int redis_stream_entry_age(int64_t now_ms, uint64_t ms, double *age)
{
    double a;
    if (now_ms < 0 || entry_age((double)now_ms / 1000.0, (double)ms / 1000.0, &a))
        return -1;
    /* The difference in whole milliseconds: the same, without the rounding of two epoch
     * seconds in doubles. */
    *age = ms < (uint64_t)now_ms ? (double)((uint64_t)now_ms - ms) / 1000.0 : 0.0;
    return 0;
}

char *redis_stream_dlq_name(const char *tmpl, const char *stream)
{
    return text_substitute(tmpl, "{stream}", stream);
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

    /* lag == 0 means everything was delivered, whatever an XRANGE would say. Nothing waiting
     * is a lag of 0; a waiting entry whose id gives no age leaves the lag out. */
    int waiting = undelivered_found && !(g->has_lag && g->lag == 0);
    double lag = 0.0;
    int lag_ok = !waiting || redis_stream_entry_age(now_ms, undelivered->ms, &lag) == 0;
    out->has_consumer_lag = lag_ok;
    out->consumer_lag_seconds = lag;
    out->bad_timestamps += !lag_ok;

    /* The oldest unacknowledged message is either still pending or not delivered yet: the one
     * with the smaller id. When its id gives no age, the oldest age is unknown, and left out
     * (the other entry is younger: its age would understate). */
    int pend = pending && pending->has_oldest;
    double pend_age = 0.0;
    int pend_ok = !pend || redis_stream_entry_age(now_ms, pending->oldest.ms, &pend_age) == 0;
    out->bad_timestamps += !pend_ok;
    if (pend && (!waiting || pending->oldest.ms <= undelivered->ms)) {
        out->has_oldest_message_age = pend_ok;
        out->oldest_message_age_seconds = pend_age;
    } else {
        out->has_oldest_message_age = lag_ok; /* the undelivered entry, or none: 0 */
        out->oldest_message_age_seconds = lag;
    }

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

    /* Redis counts no acknowledgements, but one reply holds both entries-read (the entries
     * delivered to the group, by the stream's own counter) and pending (those of them not
     * acknowledged yet): their difference is taken at one instant, never from two reads. */
    if (g->has_entries_read && g->entries_read >= g->pending) {
        out->has_consumed = 1;
        out->consumed = (double)(g->entries_read - g->pending);
    }
}

int redis_stream_parse_scan(const redisReply *r, char *cursor, size_t cursor_size,
                            const redisReply **keys, struct err *e)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_string(r->element[0]) ||
        r->element[0]->len >= cursor_size || r->element[1]->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want [cursor, keys]");
    memcpy(cursor, r->element[0]->str, r->element[0]->len);
    cursor[r->element[0]->len] = '\0';
    *keys = r->element[1];
    return 0;
}

const char *redis_stream_scan_key(const redisReply *keys, size_t j, size_t *len)
{
    const redisReply *k = keys->element[j];
    /* A key with a NUL byte cannot be a C string; such keys are not collected. */
    if (!is_string(k) || memchr(k->str, '\0', k->len))
        return NULL;
    *len = k->len;
    return k->str;
}

int redis_stream_parse_len(const redisReply *r, long long *len, struct err *e)
{
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        return err_set(e, ERR_PROTOCOL, "want an integer >= 0, got %s", redis_reply_type_name(r));
    *len = r->integer;
    return 0;
}

int redis_stream_group_wanted(char *const *groups, size_t ngroups, const char *group)
{
    if (!groups)
        return 1;
    for (size_t i = 0; i < ngroups; i++)
        if (strcmp(groups[i], group) == 0)
            return 1;
    return 0;
}

/* A whole number >= 0 of at most 18 digits, or -1. */
static int64_t whole_number(const redisReply *v)
{
    if (!is_string(v) || v->len == 0 || v->len > 18)
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (v->str[i] < '0' || v->str[i] > '9')
            return -1;
        n = n * 10 + (v->str[i] - '0');
    }
    return n;
}

int redis_stream_dead_letter_ids(const redisReply *r, const char *id_field,
                                 struct dead_letter_read *out, struct err *e)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array of entries, got %s",
                       redis_reply_type_name(r));
    size_t flen = strlen(id_field);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 2 || !is_string(x->element[0]))
            return err_set(e, ERR_PROTOCOL, "entry %zu: want [id, fields], got %s", i + 1,
                           !x || x->type != REDIS_REPLY_ARRAY ? redis_reply_type_name(x)
                           : x->elements != 2                 ? "another number of elements"
                                                              : "an id that is not a string");
        const redisReply *f = x->element[1];
        const redisReply *v = NULL;
        long long replays = 0; /* no stamp: never replayed */
        if (f && f->type == REDIS_REPLY_ARRAY)
            for (size_t j = 0; j + 1 < f->elements; j += 2) {
                if (!v && is_string(f->element[j]) && f->element[j]->len == flen &&
                    memcmp(f->element[j]->str, id_field, flen) == 0)
                    v = f->element[j + 1];
                else if (is_string(f->element[j]) && key_is(f->element[j], DLQ_STAMP))
                    replays = whole_number(f->element[j + 1]);
            }
        dead_letter_read_stamp(out, replays);
        if (is_string(v))
            dead_letter_read_add(out, v->str, v->len);
        else
            dead_letter_read_add(out, NULL, 0);
    }
    return 0;
}

void redis_stream_fields_free(void *fields)
{
    struct redis_stream_fields *f = fields;
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i]);
    free(f->v);
    free(f->len);
    free(f);
}

/* t when it can be when an entry died, else 0 (unknown): not finite, or before
 * ENTRY_MIN_TIMESTAMP (an id a writer chose, such as 1-1, is 1970). Without the server's clock a
 * time ahead cannot be judged here. */
static double sane_time(double t)
{
    return isfinite(t) && t >= ENTRY_MIN_TIMESTAMP ? t : 0;
}

/* Unix seconds ("1764612000.25") or RFC 3339; 0 when neither. */
static double time_of(const redisReply *v)
{
    if (!is_string(v) || memchr(v->str, '\0', v->len))
        return 0;
    char *end;
    double t = strtod(v->str, &end);
    if (end != v->str && *end == '\0' && t > 0)
        return t;
    return text_parse_rfc3339(v->str, &t) == 0 && t > 0 ? t : 0;
}

int redis_stream_dlq_entry(const redisReply *x, const char *id_field, struct dlq_message *m,
                           struct err *e)
{
    struct redis_stream_id id;
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 2 || !is_string(x->element[0]) ||
        redis_stream_parse_id(x->element[0]->str, x->element[0]->len, &id) || !x->element[1] ||
        x->element[1]->type != REDIS_REPLY_ARRAY || x->element[1]->elements % 2)
        return err_set(e, ERR_PROTOCOL, "want [id, [field, value, ...]]");
    const redisReply *f = x->element[1];
    for (size_t j = 0; j < f->elements; j++)
        if (!is_string(f->element[j]))
            return err_set(e, ERR_PROTOCOL, "entry %s: field %zu: want a string, got %s",
                           x->element[0]->str, j / 2 + 1, redis_reply_type_name(f->element[j]));
    m->message_id = xstrndup(x->element[0]->str, x->element[0]->len);
    struct redis_stream_fields *kd = xcalloc(1, sizeof *kd);
    kd->n = f->elements;
    kd->v = xcalloc(kd->n ? kd->n : 1, sizeof *kd->v);
    kd->len = xcalloc(kd->n ? kd->n : 1, sizeof *kd->len);
    m->kind_data = kd;
    m->dead_since = sane_time((double)id.ms / 1000.0);
    size_t flen = strlen(id_field);
    int seen_id = 0;
    m->replays = 0; /* no stamp: qrel never replayed it */
    for (size_t j = 0; j < f->elements; j++) {
        const redisReply *v = f->element[j];
        kd->v[j] = xmalloc(v->len + 1);
        memcpy(kd->v[j], v->str, v->len);
        kd->v[j][v->len] = '\0';
        kd->len[j] = v->len;
        if (j % 2)
            m->body_bytes += v->len;
        if (j % 2 || j + 1 >= f->elements)
            continue;
        const redisReply *val = f->element[j + 1];
        if (!seen_id && v->len == flen && memcmp(v->str, id_field, flen) == 0) {
            seen_id = 1; /* the first one, as the exporter's join reads it */
            if (val->len > 0 && !memchr(val->str, '\0', val->len))
                m->work_id = xstrndup(val->str, val->len);
        } else if (key_is(v, "deliveries"))
            m->deliveries = whole_number(val);
        else if (key_is(v, "dead_since") && sane_time(time_of(val)) > 0)
            m->dead_since = time_of(val);
        else if (key_is(v, DLQ_STAMP))
            m->replays = whole_number(val); /* -1 when it is no count: unknown */
    }
    return 0;
}
