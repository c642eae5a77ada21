/* kafka/dead_letter_id.c: where a Kafka dead letter carries the id of its message, for the core's
 * dead-letter join (kafka.h). No I/O: the record's value and the configured path in, the id out.
 *
 * Producers of dead-letter topics (Spring's DeadLetterPublishingRecoverer, Kafka Connect's
 * errors.deadletterqueue, hand-written ones) keep the original value, most often JSON, and add
 * headers: so the id is either a key of that JSON or a header. A value is parsed only as deep as
 * the path, and an id that is neither a string nor an integer is no id (counted as unknown). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kafka.h"
#include "util.h"

#define HEADER_PREFIX "header:"

const char *kafka_id_field_header(const char *id_field)
{
    size_t n = strlen(HEADER_PREFIX);
    return strncmp(id_field, HEADER_PREFIX, n) == 0 ? id_field + n : NULL;
}

int kafka_id_field_check(const char *id_field, char *why, size_t cap)
{
    const char *h = kafka_id_field_header(id_field);
    if (h) {
        if (!*h) {
            snprintf(why, cap, "want a header name after \"header:\"");
            return -1;
        }
        return 0;
    }
    /* Every dot separates two keys: none may be empty. */
    size_t len = strlen(id_field);
    if (len == 0 || id_field[0] == '.' || id_field[len - 1] == '.' || strstr(id_field, "..")) {
        snprintf(why, cap,
                 "want a JSON key with dots between nested keys (order.id) or "
                 "header:NAME, got \"%s\"",
                 id_field);
        return -1;
    }
    return 0;
}

void kafka_json_id(const char *value, size_t len, const char *path, char **out, size_t *outlen)
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
