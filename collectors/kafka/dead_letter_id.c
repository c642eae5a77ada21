/* kafka/dead_letter_id.c: where a Kafka dead letter carries the id of its message, for the core's
 * dead-letter join (kafka.h). No I/O: the record's value and the configured path in, the id out.
 *
 * Producers of dead-letter topics (Spring's DeadLetterPublishingRecoverer, Kafka Connect's
 * errors.deadletterqueue, hand-written ones) keep the original value, most often JSON, and add
 * headers: so the id is either a key of that JSON or a header. The forms and their reading are the
 * ones every kind with JSON bodies shares (common/json_id.h); here they get Kafka's prefix. */
#include "common/json_id.h"
#include "kafka.h"

#define HEADER_PREFIX "header:"

const char *kafka_id_field_header(const char *id_field)
{
    return json_id_field_name(id_field, HEADER_PREFIX);
}

int kafka_id_field_check(const char *id_field, char *why, size_t cap)
{
    return json_id_field_check(id_field, HEADER_PREFIX, why, cap);
}

void kafka_json_id(const char *value, size_t len, const char *path, char **out, size_t *outlen)
{
    json_id_at(value, len, path, out, outlen);
}
