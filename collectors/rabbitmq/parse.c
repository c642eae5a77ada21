/* rabbitmq/parse.c: the pure parts of `kind: rabbitmq` (rabbitmq.h): one queue object of the
 * management API, the dead-letter settings it ends up with, and AMQP routing of a dead-lettered
 * message. No I/O: tests/unit/check_rabbitmq.c feeds it replies recorded from a real broker. */
#include "rabbitmq/rabbitmq.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* An object the management API may write as [] when it is empty (Erlang's empty proplist): the
 * queue's arguments, its effective policy definition, message_stats of a queue without
 * activity. An empty list is an empty object. */
static int settings_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                           struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0))
        return 0;
    return json_get_object(obj, ctx, key, out, e) < 0 ? -1 : 0;
}

/* A setting that may come from the queue's arguments (x-NAME) or its policy (NAME): the
 * argument wins, as in the broker. A string into *str or, when str is NULL, a number into *num;
 * NULL or -1 when neither has it. */
static int setting(const json_t *args, const json_t *pol, const char *actx, const char *pctx,
                   const char *name, const char **str, double *num, struct err *e)
{
    char xname[64];
    snprintf(xname, sizeof xname, "x-%s", name);
    const json_t *from[] = {args, pol};
    const char *ctxs[] = {actx, pctx}, *keys[] = {xname, name};
    if (str)
        *str = NULL;
    else
        *num = -1;
    for (int i = 0; i < 2; i++) {
        int rc = !from[i] ? 0
                 : str    ? json_get_string(from[i], ctxs[i], keys[i], str, e)
                          : json_get_numeric(from[i], ctxs[i], keys[i], num, e);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    return 0;
}

/* The message TTL: where both the queue's argument and its policy set one, RabbitMQ applies the
 * lower (unlike the other settings, where the argument wins). -1 when neither does. */
static int message_ttl(const json_t *args, const json_t *pol, const char *actx, const char *pctx,
                       double *ttl, struct err *e)
{
    double a = -1, p = -1;
    *ttl = -1;
    if ((args && json_get_numeric(args, actx, "x-message-ttl", &a, e) < 0) ||
        (pol && json_get_numeric(pol, pctx, "message-ttl", &p, e) < 0))
        return -1;
    *ttl = a < 0 ? p : p < 0 ? a : fmin(a, p);
    return 0;
}

int rabbitmq_queue_parse(const json_t *obj, const char *ctx, int with_meta,
                         struct rabbitmq_queue *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->delivery_limit = out->consumer_timeout_ms = out->message_ttl_ms = -1;
    if (json_expect_object(obj, ctx, e) || json_need_string(obj, ctx, "name", &out->name, e) ||
        json_need_string(obj, ctx, "vhost", &out->vhost, e))
        return -1;
    double messages = 0;
    int rc = json_get_number(obj, ctx, "messages", &messages, e);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        out->has_stats = 1;
        if (json_need_number(obj, ctx, "messages_ready", &out->ready, e) ||
            json_need_number(obj, ctx, "messages_unacknowledged", &out->unacked, e))
            return -1;
    }
    rc = json_get_number(obj, ctx, "consumers", &out->consumers, e);
    if (rc < 0)
        return -1;
    out->has_consumers = rc == 1;
    if (!with_meta)
        return 0;

    rc = json_get_number(obj, ctx, "head_message_timestamp", &out->head_ts, e);
    if (rc < 0)
        return -1;
    out->has_head_ts = rc == 1;
    json_t *stats = NULL;
    char sctx[300];
    json_path_key(sctx, sizeof sctx, ctx, "message_stats");
    if (settings_object(obj, ctx, "message_stats", &stats, e) ||
        (stats && json_get_number(stats, sctx, "redeliver", &out->redeliver, e) < 0))
        return -1;
    static const char *const done[] = {"ack", "deliver_no_ack", "get_no_ack"};
    for (size_t i = 0; stats && i < sizeof done / sizeof *done; i++) {
        double n = 0;
        if (json_get_number(stats, sctx, done[i], &n, e) < 0)
            return -1;
        out->consumed += n;
    }

    json_t *args = NULL, *pol = NULL;
    char actx[300], pctx[300];
    json_path_key(actx, sizeof actx, ctx, "arguments");
    json_path_key(pctx, sizeof pctx, ctx, "effective_policy_definition");
    if (settings_object(obj, ctx, "arguments", &args, e) ||
        settings_object(obj, ctx, "effective_policy_definition", &pol, e))
        return -1;
    if (setting(args, pol, actx, pctx, "dead-letter-exchange", &out->dlx, NULL, e) ||
        setting(args, pol, actx, pctx, "dead-letter-routing-key", &out->dlrk, NULL, e) ||
        setting(args, pol, actx, pctx, "delivery-limit", NULL, &out->delivery_limit, e) ||
        setting(args, pol, actx, pctx, "consumer-timeout", NULL, &out->consumer_timeout_ms, e) ||
        message_ttl(args, pol, actx, pctx, &out->message_ttl_ms, e))
        return -1;
    return 0;
}

static size_t skip_space(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* One element decoded from body + at, which ends at *end. JSON_DISABLE_EOF_CHECK stops jansson
 * after one value, and its error position then counts the bytes read; integers beyond 64 bits
 * are read again as doubles, as json_parse_body does. */
static json_t *load_one(const char *body, size_t len, size_t at, size_t *end, const char *what,
                        struct err *e)
{
    json_error_t je;
    size_t flags = JSON_ALLOW_NUL | JSON_DISABLE_EOF_CHECK;
    json_t *v = json_loadb(body + at, len - at, flags, &je);
    if (!v && json_error_code(&je) == json_error_numeric_overflow)
        v = json_loadb(body + at, len - at, flags | JSON_DECODE_INT_AS_REAL, &je);
    if (!v) {
        err_set(e, ERR_PROTOCOL, "%s: malformed JSON at byte %zu: %s", what,
                at + (size_t)(je.position > 0 ? je.position : 0), je.text);
        return NULL;
    }
    *end = at + (size_t)je.position;
    return v;
}

int rabbitmq_each_object(const char *body, size_t len, const char *what,
                         int (*each)(const json_t *elem, const char *ctx, void *arg, struct err *e),
                         void *arg, struct err *e)
{
    size_t i = body ? skip_space(body, len, 0) : 0;
    if (!body || i == len || body[i] != '[') {
        /* Not a list: the whole document's parse says what it is instead. */
        json_t *doc = json_parse_body(body, len, what, e);
        if (doc && json_expect_array(doc, "$", e))
            err_prefix(e, "%s", what);
        json_decref(doc);
        return -1;
    }
    i = skip_space(body, len, i + 1);
    for (size_t n = 0; i == len || body[i] != ']'; n++) {
        char ctx[32];
        json_path_index(ctx, sizeof ctx, "$", n);
        if (i < len && body[i] != '{') {
            err_set(e, ERR_PROTOCOL, "%s: %s: want an object", what, ctx);
            return -1;
        }
        size_t end = 0;
        json_t *v = load_one(body, len, i, &end, what, e);
        if (!v)
            return -1;
        int rc = each(v, ctx, arg, e);
        json_decref(v);
        if (rc)
            return -1;
        i = skip_space(body, len, end);
        if (i < len && body[i] == ']')
            break;
        if (i == len || body[i] != ',') {
            err_set(e, ERR_PROTOCOL, "%s: malformed JSON at byte %zu: want ',' or ']' after %s",
                    what, i, ctx);
            return -1;
        }
        i = skip_space(body, len, i + 1);
        if (i < len && body[i] == ']') {
            err_set(e, ERR_PROTOCOL, "%s: malformed JSON at byte %zu: a value expected", what, i);
            return -1;
        }
    }
    if (skip_space(body, len, i + 1) != len) {
        err_set(e, ERR_PROTOCOL, "%s: malformed JSON at byte %zu: end of the list expected", what,
                i + 1);
        return -1;
    }
    return 0;
}

double rabbitmq_max_deliveries(double delivery_limit)
{
    return delivery_limit < 0 ? -1 : delivery_limit + 1;
}

#define TOPIC_MAX_WORDS 128

struct words {
    const char *w[TOPIC_MAX_WORDS];
    size_t len[TOPIC_MAX_WORDS];
    size_t n;
};

/* Splits on '.'; -1 when there are more words than a topic key sensibly has. */
static int split_words(const char *s, struct words *out)
{
    out->n = 0;
    for (;;) {
        if (out->n == TOPIC_MAX_WORDS)
            return -1;
        const char *dot = strchr(s, '.');
        out->w[out->n] = s;
        out->len[out->n++] = dot ? (size_t)(dot - s) : strlen(s);
        if (!dot)
            return 0;
        s = dot + 1;
    }
}

static int word_is(const struct words *w, size_t i, const char *lit)
{
    return w->len[i] == strlen(lit) && memcmp(w->w[i], lit, w->len[i]) == 0;
}

static int match_from(const struct words *p, size_t pi, const struct words *k, size_t ki)
{
    if (pi == p->n)
        return ki == k->n;
    if (word_is(p, pi, "#")) {
        for (size_t skip = ki; skip <= k->n; skip++)
            if (match_from(p, pi + 1, k, skip))
                return 1;
        return 0;
    }
    if (ki == k->n)
        return 0;
    if (!word_is(p, pi, "*") &&
        (p->len[pi] != k->len[ki] || memcmp(p->w[pi], k->w[ki], p->len[pi]) != 0))
        return 0;
    return match_from(p, pi + 1, k, ki + 1);
}

int rabbitmq_topic_match(const char *pattern, const char *key)
{
    struct words p, k;
    if (split_words(pattern, &p) || split_words(key, &k))
        return 0;
    return match_from(&p, 0, &k, 0);
}

int rabbitmq_binding_routes(const char *type, const char *binding_key, const char *key)
{
    if (strcmp(type, "direct") == 0)
        return strcmp(binding_key, key) == 0;
    if (strcmp(type, "topic") == 0)
        return rabbitmq_topic_match(binding_key, key);
    return 1; /* fanout, headers and plugin types: every bound queue */
}
