/* kafka/dead_letter_id.c: where a Kafka dead letter carries the id of its message, for the core's
 * dead-letter join (kafka.h). No I/O: the record's value and the configured path in, the id out.
 *
 * Producers of dead-letter topics (Spring's DeadLetterPublishingRecoverer, Kafka Connect's
 * errors.deadletterqueue, hand-written ones) keep the original value, most often JSON, and add
 * headers: so the id is either a key of that JSON (common/json_id.h, shared with the other kinds
 * whose messages are JSON) or a header. */
#include <stdio.h>
#include <string.h>

#include "common/json_id.h"
#include "kafka.h"

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
    if (json_id_path_check(id_field)) {
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
    json_id_at(value, len, path, out, outlen);
}
