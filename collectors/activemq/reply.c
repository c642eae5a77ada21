/* reply.c: the text of a bulk Jolokia reply into the document activemq_bulk_collect reads, with
 * the browsed dead letters cut down to what the scrape uses (declared in activemq.h).
 *
 * Jolokia cannot be asked for less: browse() has no projection, and a request's path (a
 * wildcard over the list) picks one value of each message, so the three members qrel reads
 * would take three browses whose lists could differ. Each dead letter comes whole (body, JMS
 * headers, every property twice: in PropertiesText and by type), about 1.5 KB with a
 * dlqDeliveryFailureCause, of which the scrape reads OriginalDestination, JMSTimestamp and that
 * cause; at 400 browsed letters, building all of it with jansson was 106.5M of the collection's
 * 120.3M instructions (300 queues). Here the reply is walked by its brackets and quotes
 * (common/json_members.h) and only the wanted values are given to jansson. Anything the walk
 * does not plainly understand (an escaped member name, a value jansson refuses, a reply that is
 * no list) is read by jansson whole, so the series never depend on the path taken. */
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

static int named(const struct json_member *m, const char *name)
{
    return !m->escaped && m->klen == strlen(name) && memcmp(m->key, name, m->klen) == 0;
}

/* Sets obj's member m to its value read by jansson; 1 when jansson refuses it. An escaped name
 * is refused too: the caller reads the whole object instead. */
static int take(json_t *obj, const struct json_member *m)
{
    json_t *v = m->escaped ? NULL : load(m->v, m->v_end);
    if (!v)
        return 1;
    char key[64];
    if (m->klen >= sizeof key) {
        json_decref(v);
        return 1;
    }
    memcpy(key, m->key, m->klen);
    key[m->klen] = '\0';
    json_object_set_new(obj, key, v);
    return 0;
}

static int take_cause(void *ctx, const struct json_member *m)
{
    if (m->escaped)
        return 1;
    return named(m, "dlqDeliveryFailureCause") ? take(ctx, m) : 0;
}

static int take_letter_member(void *ctx, const struct json_member *m)
{
    json_t *letter = ctx;
    if (m->escaped)
        return 1;
    if (named(m, "OriginalDestination") || named(m, "JMSTimestamp"))
        return take(letter, m);
    if (!named(m, "StringProperties"))
        return 0;
    if (*m->v != '{')
        return take(letter, m);
    json_t *props = json_object();
    json_object_set_new(letter, "StringProperties", props); /* a repeated one: the last counts */
    return !json_members(m->v, (size_t)(m->v_end - m->v), take_cause, props);
}

/* One dead letter: an object with the wanted members only, or jansson's reading of it. */
static json_t *letter(const char *v, const char *end)
{
    if (*v == '{') {
        json_t *obj = json_object();
        if (json_members(v, (size_t)(end - v), take_letter_member, obj))
            return obj;
        json_decref(obj);
    }
    return load(v, end);
}

static int take_letter(void *ctx, size_t i, const char *v, const char *end)
{
    (void)i;
    json_t *l = letter(v, end);
    return l ? json_array_append_new(ctx, l) : 1;
}

static int take_browse_member(void *ctx, const struct json_member *m)
{
    if (!named(m, "value") || *m->v != '[')
        return take(ctx, m);
    json_t *list = json_array();
    json_object_set_new(ctx, "value", list);
    return !json_elements(m->v, (size_t)(m->v_end - m->v), take_letter, list);
}

static int take_reply(void *ctx, size_t i, const char *v, const char *end)
{
    json_t *r = NULL;
    if (i == BROWSE_REPLY && *v == '{') {
        r = json_object();
        if (!json_members(v, (size_t)(end - v), take_browse_member, r)) {
            json_decref(r);
            r = NULL;
        }
    }
    if (!r)
        r = load(v, end);
    return r ? json_array_append_new(ctx, r) : 1;
}

json_t *activemq_reply_parse(const char *body, size_t len, const char *what, struct err *e)
{
    json_t *doc = json_array();
    if (body && json_elements(body, len, take_reply, doc))
        return doc;
    json_decref(doc);
    return json_parse_body(body, len, what, e);
}
