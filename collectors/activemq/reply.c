/* reply.c: the text of a bulk Jolokia reply into the document activemq_bulk_collect reads, with
 * the browsed dead letters cut down to what the scrape uses (declared in activemq.h).
 *
 * Jolokia cannot be asked for less: browse() has no projection, and a request's path (a
 * wildcard over the list) picks one value of each message, so the three members qrel reads
 * would take three browses whose lists could differ. Each dead letter comes whole (body, JMS
 * headers, every property twice: in PropertiesText and by type), about 1.5 KB with a
 * dlqDeliveryFailureCause, of which the scrape reads OriginalDestination, JMSTimestamp and that
 * cause; at 400 browsed letters, building all of it with jansson was 106.5M of the collection's
 * 120.3M instructions (300 queues). Here the reply is walked by its brackets and quotes in one
 * pass (the outer levels here, the values skipped by common/json_members.h: nested walkers that
 * measure a value before handing it on would skip each browsed byte four times) and only the
 * wanted values are given to jansson. Anything the walk does not plainly understand (an escaped
 * member name, a value jansson refuses, a reply that is no list) is read by jansson whole, so the
 * series never depend on the path taken. */
#include "activemq.h"

#include <string.h>

#include "common/json.h"
#include "common/json_members.h"

#define BROWSE_REPLY 3 /* the browse is the bulk request's fourth */

/* A value's text read by jansson. A string without escapes is its bytes (the walk has refused
 * control characters, json_stringn refuses bad UTF-8): no lexer set up for each of them. */
static json_t *load(const char *v, const char *end)
{
    if (*v == '"' && end - v >= 2 && end[-1] == '"' &&
        !memchr(v + 1, '\\', (size_t)(end - v - 2))) {
        json_t *s = json_stringn(v + 1, (size_t)(end - v - 2));
        if (s)
            return s;
    }
    json_error_t je;
    return json_loadb(v, (size_t)(end - v), JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* A member name as written, between its quotes. */
struct name {
    const char *s;
    size_t len;
    int escaped; /* a \ in it: not compared, the caller reads its object by jansson */
};

static int named(const struct name *k, const char *want)
{
    return !k->escaped && k->len == strlen(want) && memcmp(k->s, want, k->len) == 0;
}

/* Sets obj's member k to the value [v, v_end) read by jansson; 1 when jansson refuses it or the
 * name is escaped (the caller reads the whole object instead). */
static int take(json_t *obj, const struct name *k, const char *v, const char *v_end)
{
    char key[64];
    json_t *val = k->escaped || k->len >= sizeof key ? NULL : load(v, v_end);
    if (!val)
        return 1;
    memcpy(key, k->s, k->len);
    key[k->len] = '\0';
    json_object_set_new(obj, key, val); /* a repeated member: the last counts, as in jansson */
    return 0;
}

/* The walk of one level: fn reads the value at v (of member k, or element i) and returns past
 * it, or NULL when the walk is to give up. */
typedef const char *(*member_fn)(void *ctx, const struct name *k, const char *v, const char *end);
typedef const char *(*element_fn)(void *ctx, size_t i, const char *v, const char *end);

/* The object at p ('{'): past its '}', or NULL. */
static const char *walk_object(const char *p, const char *end, member_fn fn, void *ctx)
{
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        const char *k_end = p < end && *p == '"' ? json_skip_value(p, end) : NULL;
        if (!k_end)
            return NULL;
        struct name k = {p + 1, (size_t)(k_end - p - 2), 0};
        k.escaped = memchr(k.s, '\\', k.len) != NULL;
        p = skip_ws(k_end, end);
        if (p >= end || *p != ':')
            return NULL;
        p = skip_ws(p + 1, end);
        if (p >= end || !(p = fn(ctx, &k, p, end)))
            return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        return p < end && *p == '}' ? p + 1 : NULL;
    }
}

/* The list at p ('['): past its ']', or NULL. */
static const char *walk_array(const char *p, const char *end, element_fn fn, void *ctx)
{
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return p + 1;
    for (size_t i = 0;; i++) {
        if (p >= end || !(p = fn(ctx, i, p, end)))
            return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        return p < end && *p == ']' ? p + 1 : NULL;
    }
}

/* The value at v read by jansson whole and appended to list: past it, or NULL. */
static const char *append_whole(json_t *list, const char *v, const char *end)
{
    const char *v_end = json_skip_value(v, end);
    json_t *val = v_end ? load(v, v_end) : NULL;
    if (!val)
        return NULL;
    json_array_append_new(list, val);
    return v_end;
}

static int take_cause(void *ctx, const struct json_member *m)
{
    struct name k = {m->key, m->klen, m->escaped};
    if (m->escaped)
        return 1;
    return named(&k, "dlqDeliveryFailureCause") ? take(ctx, &k, m->v, m->v_end) : 0;
}

static const char *letter_member(void *ctx, const struct name *k, const char *v, const char *end)
{
    json_t *letter = ctx;
    const char *v_end = k->escaped ? NULL : json_skip_value(v, end);
    if (!v_end)
        return NULL;
    if (named(k, "OriginalDestination") || named(k, "JMSTimestamp") ||
        (named(k, "StringProperties") && *v != '{'))
        return take(letter, k, v, v_end) ? NULL : v_end;
    if (!named(k, "StringProperties"))
        return v_end;
    json_t *props = json_object();
    json_object_set_new(letter, "StringProperties", props);
    return json_members(v, (size_t)(v_end - v), take_cause, props) ? v_end : NULL;
}

/* One dead letter: an object with the wanted members only, or jansson's reading of it. */
static const char *take_letter(void *ctx, size_t i, const char *v, const char *end)
{
    (void)i;
    if (*v == '{') {
        json_t *obj = json_object();
        const char *v_end = walk_object(v, end, letter_member, obj);
        if (v_end) {
            json_array_append_new(ctx, obj);
            return v_end;
        }
        json_decref(obj);
    }
    return append_whole(ctx, v, end);
}

static const char *browse_member(void *ctx, const struct name *k, const char *v, const char *end)
{
    if (named(k, "value") && *v == '[') {
        json_t *list = json_array();
        json_object_set_new(ctx, "value", list);
        return walk_array(v, end, take_letter, list);
    }
    const char *v_end = json_skip_value(v, end);
    return v_end && !take(ctx, k, v, v_end) ? v_end : NULL;
}

static const char *take_reply(void *ctx, size_t i, const char *v, const char *end)
{
    if (i == BROWSE_REPLY && *v == '{') {
        json_t *r = json_object();
        const char *v_end = walk_object(v, end, browse_member, r);
        if (v_end) {
            json_array_append_new(ctx, r);
            return v_end;
        }
        json_decref(r);
    }
    return append_whole(ctx, v, end);
}

json_t *activemq_reply_parse(const char *body, size_t len, const char *what, struct err *e)
{
    json_t *doc = json_array();
    const char *end = body ? body + len : NULL, *p = body ? skip_ws(body, end) : NULL;
    if (p && p < end && *p == '[' && (p = walk_array(p, end, take_reply, doc)) &&
        skip_ws(p, end) == end)
        return doc;
    json_decref(doc);
    return json_parse_body(body, len, what, e);
}
