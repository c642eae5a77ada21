/* json_id.c: the id at a dotted path of a JSON message body (json_id.h).
 *
 * A body is parsed only as far as jansson needs to, and an id that is neither a string nor an
 * integer is no id: a float or an object would print differently from what the work table
 * holds, so such a message is counted as unknown rather than guessed at. */
#include "json_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util.h"

int json_id_path_check(const char *path)
{
    size_t len = strlen(path);
    return len == 0 || path[0] == '.' || path[len - 1] == '.' || strstr(path, "..") ? -1 : 0;
}

void json_id_at(const char *value, size_t len, const char *path, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (!value || len == 0)
        return;
    json_error_t jerr;
    json_t *doc = json_loadb(value, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!doc)
        return;
    const json_t *v = doc;
    const char *p = path;
    while (v && *p) {
        const char *dot = strchr(p, '.');
        size_t klen = dot ? (size_t)(dot - p) : strlen(p);
        char *key = xstrndup(p, klen);
        v = json_is_object(v) ? json_object_get(v, key) : NULL;
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
