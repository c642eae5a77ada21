/* postgres/laravel.c: the pure reading and rewriting of a Laravel job payload (failed_jobs.payload,
 * the JSON Queue::createPayload wrote) for `qrel dlq` on preset laravel; no I/O.
 *
 * The work id is a property of the job's command, which Laravel keeps as PHP serialize() text in
 * data.command: `O:<n>:"<class>":<count>:{<key><value>...}`. Reading it needs no PHP: the format
 * is length-prefixed, and this reader walks it within the bytes it was given (every length is
 * checked against what is left, nesting is bounded), looking for one property path such as
 * "orderId" or "order.id" (an Eloquent model in a job is serialized as a ModelIdentifier whose id
 * is its property "id"). A protected property's key is "\0*\0name", a private one's
 * "\0Class\0name": the name after the last NUL is compared. The payload's own keys are read and
 * rewritten with jansson (JSON_ALLOW_NUL: the command's protected keys hold NUL bytes, escaped as
 * \u0000, which PostgreSQL's jsonb refuses, so this is done here and not in SQL). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres.h"
#include "dlq_kind.h"

/* Deeper nesting than this is refused: a job's command is a few levels deep at most. */
#define PHP_MAX_DEPTH 16

struct php_reader {
    const char *p, *end;
};

/* Reads decimal digits (an optional '-' when sign) up to the terminator t; 0 or -1. */
static int php_number(struct php_reader *r, char t, int sign, long long *out)
{
    int neg = 0, digits = 0;
    long long v = 0;
    if (sign && r->p < r->end && *r->p == '-') {
        neg = 1;
        r->p++;
    }
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (v > 100000000000000000LL)
            return -1;
        v = v * 10 + (*r->p++ - '0');
        digits++;
    }
    if (!digits || r->p >= r->end || *r->p != t)
        return -1;
    r->p++;
    *out = neg ? -v : v;
    return 0;
}

static int php_expect(struct php_reader *r, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, s, n) != 0)
        return -1;
    r->p += n;
    return 0;
}

/* `<len>:"<bytes>"` after the type letter's colon: *s and *n the bytes. */
static int php_string_body(struct php_reader *r, const char **s, size_t *n)
{
    long long len;
    if (php_number(r, ':', 0, &len) || php_expect(r, "\""))
        return -1;
    if (len > r->end - r->p)
        return -1;
    *s = r->p;
    *n = (size_t)len;
    r->p += len;
    return php_expect(r, "\"");
}

/* A value's text for the caller: a string's bytes, or an int's, float's or bool's digits. */
struct php_value {
    char type; /* 's', 'i', 'd', 'b', 'N', 'a', 'O' */
    const char *s;
    size_t n;
};

static int php_value(struct php_reader *r, const char *path, struct php_value *found, int depth);

/* The members of an array or object after its count: `{k v k v ...}`. When path is not NULL,
 * the member whose key (after its last NUL) is path's first part is followed into path's rest. */
static int php_members(struct php_reader *r, long long count, const char *path,
                       struct php_value *found, int depth)
{
    if (php_expect(r, "{"))
        return -1;
    size_t plen = 0;
    const char *rest = NULL;
    if (path) {
        const char *dot = strchr(path, '.');
        plen = dot ? (size_t)(dot - path) : strlen(path);
        rest = dot ? dot + 1 : "";
    }
    for (long long i = 0; i < count; i++) {
        struct php_value key;
        if (php_value(r, "", &key, depth + 1))
            return -1;
        int match = 0;
        if (path && (key.type == 's' || key.type == 'i')) {
            const char *name = key.s;
            size_t n = key.n;
            const char *nul = n ? memchr(name, 0, n) : NULL;
            while (nul) {
                n -= (size_t)(nul + 1 - name);
                name = nul + 1;
                nul = n ? memchr(name, 0, n) : NULL;
            }
            match = n == plen && memcmp(name, path, n) == 0;
        }
        if (php_value(r, match ? rest : NULL, match ? found : &key, depth + 1))
            return -1;
        if (match)
            path = NULL; /* found (or not a scalar there): the rest is only walked */
    }
    return php_expect(r, "}");
}

/* One value. path: NULL to skip it; "" when this value is the one wanted (into *found); else the
 * property path still to follow inside it. */
static int php_value(struct php_reader *r, const char *path, struct php_value *found, int depth)
{
    if (depth > PHP_MAX_DEPTH || r->end - r->p < 2)
        return -1;
    char t = *r->p;
    struct php_value v = {t, NULL, 0};
    long long n;
    if (t == 'N') {
        if (php_expect(r, "N;"))
            return -1;
    } else if (t == 's') {
        r->p++;
        if (php_expect(r, ":") || php_string_body(r, &v.s, &v.n) || php_expect(r, ";"))
            return -1;
    } else if (t == 'i' || t == 'b' || t == 'd') {
        r->p += 2;
        if (r->p[-1] != ':')
            return -1;
        v.s = r->p;
        while (r->p < r->end && *r->p != ';' && r->p - v.s < 64)
            r->p++;
        v.n = (size_t)(r->p - v.s);
        if (!v.n || php_expect(r, ";"))
            return -1;
    } else if (t == 'a') {
        r->p++;
        if (php_expect(r, ":") || php_number(r, ':', 0, &n) ||
            php_members(r, n, path && *path ? path : NULL, found, depth))
            return -1;
    } else if (t == 'O') {
        const char *cls;
        size_t clen;
        r->p++;
        if (php_expect(r, ":") || php_string_body(r, &cls, &clen) || php_expect(r, ":") ||
            php_number(r, ':', 0, &n) ||
            php_members(r, n, path && *path ? path : NULL, found, depth))
            return -1;
    } else {
        return -1; /* references (r:, R:), custom serialization (C:) and enums are not read */
    }
    if (path && !*path)
        *found = v;
    return 0;
}

int postgres_laravel_command_prop(const char *cmd, size_t len, const char *path, char *out,
                                  size_t cap)
{
    struct php_reader r = {cmd, cmd + len};
    struct php_value v = {0, NULL, 0};
    if (!path || !*path || !cap || len < 2 || cmd[0] != 'O')
        return -1;
    if (php_value(&r, path, &v, 0) || r.p != r.end)
        return -1;
    if (v.type != 's' && v.type != 'i')
        return 1; /* absent, null, or not a string or integer */
    if (v.n >= cap || memchr(v.s, 0, v.n))
        return 1;
    memcpy(out, v.s, v.n);
    out[v.n] = 0;
    return 0;
}

/* ---- the payload ---- */

static json_t *payload_load(const char *json, size_t len)
{
    json_t *doc = json_loadb(json, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
    if (doc && !json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

int postgres_laravel_payload_read(const char *json, size_t len, const char *path,
                                  struct laravel_payload *out)
{
    memset(out, 0, sizeof *out);
    out->attempts = -1;
    out->replays = 0;
    json_t *doc = payload_load(json, len);
    if (!doc)
        return -1;
    json_t *v = json_object_get(doc, "uuid");
    if (json_is_string(v) && json_string_length(v) < sizeof out->uuid &&
        !memchr(json_string_value(v), 0, json_string_length(v)))
        memcpy(out->uuid, json_string_value(v), json_string_length(v) + 1);
    v = json_object_get(doc, "attempts");
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        out->attempts = json_integer_value(v);
    v = json_object_get(doc, DLQ_STAMP);
    if (v)
        out->replays =
            json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 1000000000
                ? json_integer_value(v)
                : -1;
    v = json_object_get(doc, "retryUntil");
    out->retry_until = v && !json_is_null(v);
    json_t *cmd = json_object_get(json_object_get(doc, "data"), "command");
    if (path && json_is_string(cmd))
        out->has_work_id =
            postgres_laravel_command_prop(json_string_value(cmd), json_string_length(cmd), path,
                                          out->work_id, sizeof out->work_id) == 0;
    json_decref(doc);
    return 0;
}

char *postgres_laravel_payload_requeue(const char *json, size_t len, long long stamp)
{
    json_t *doc = payload_load(json, len);
    if (!doc)
        return NULL;
    /* as artisan queue:retry's resetAttempts: only where the payload keeps attempts (Redis) */
    if (json_object_get(doc, "attempts"))
        json_object_set_new(doc, "attempts", json_integer(0));
    if (stamp > 0)
        json_object_set_new(doc, DLQ_STAMP, json_integer(stamp));
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}
