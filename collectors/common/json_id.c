/* json_id.c: a dead letter's work id from its JSON body or a named piece of metadata. See
 * json_id.h. */
#include "json_id.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"

const char *json_id_field_name(const char *id_field, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(id_field, prefix, n) == 0 ? id_field + n : NULL;
}

int json_id_field_check(const char *id_field, const char *prefix, char *why, size_t cap)
{
    const char *name = json_id_field_name(id_field, prefix);
    if (name) {
        if (!*name) {
            /* "header:" names a header: the noun is the prefix without its colon */
            const char *article = strchr("aeiou", prefix[0]) ? "an" : "a";
            snprintf(why, cap, "want %s %.*s name after \"%s\"", article, (int)(strlen(prefix) - 1),
                     prefix, prefix);
            return -1;
        }
        return 0;
    }
    /* Every dot separates two keys: none may be empty. */
    size_t len = strlen(id_field);
    if (len == 0 || id_field[0] == '.' || id_field[len - 1] == '.' || strstr(id_field, "..")) {
        snprintf(why, cap,
                 "want a JSON key with dots between nested keys (order.id) or %sNAME, got \"%s\"",
                 prefix, id_field);
        return -1;
    }
    return 0;
}

void json_id_at(const char *body, size_t len, const char *path, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (!body || len == 0)
        return;
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!doc)
        return;
    const json_t *v = doc;
    const char *p = path;
    while (v && *p) {
        const char *dot = strchr(p, '.');
        size_t klen = dot ? (size_t)(dot - p) : strlen(p);
        char *key = xstrndup(p, klen);
        if (json_is_object(v))
            v = json_object_get(v, key);
        else if (json_is_array(v) && klen && klen < 10 && strspn(key, "0123456789") == klen)
            v = json_array_get(v, strtoul(key, NULL, 10)); /* "args.0": an array's position */
        else
            v = NULL;
        free(key);
        p += klen + (dot != NULL);
    }
    if (json_is_string(v)) {
        *outlen = json_string_length(v);
        *out = xstrndup(json_string_value(v), *outlen);
    } else if (json_is_integer(v)) {
        char num[32];
        int n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = xstrndup(num, (size_t)n);
        *outlen = (size_t)n;
    }
    json_decref(doc);
}
