/* kafka/dead_letter.c: what qrel decides about a Kafka dead letter without a broker (kafka.h), so
 * that each edge case is unit-tested: where it carries the id of its message (for the core's
 * dead-letter join and `qrel dlq`), and for a replay where reading starts, where a dead letter
 * goes back to and what its headers say about it.
 *
 * Producers of dead-letter topics (Spring's DeadLetterPublishingRecoverer, Kafka Connect's
 * errors.deadletterqueue, hand-written ones) keep the original value, most often JSON, and add
 * headers: so the id is either a key of that JSON or a header. The forms and their reading are the
 * ones every kind with JSON bodies shares (common/json_id.h); here they get Kafka's prefix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_id.h"
#include "kafka.h"
#include "alloc.h"

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

char *kafka_replay_group(const char *topic)
{
    size_t np = strlen(KAFKA_REPLAY_GROUP_PREFIX), nt = strlen(topic);
    char *g = xmalloc(np + nt + 1);
    memcpy(g, KAFKA_REPLAY_GROUP_PREFIX, np);
    memcpy(g + np, topic, nt + 1);
    return g;
}

int64_t kafka_dlq_read_from(int64_t low, int64_t high, int64_t committed)
{
    /* Behind the log start: what lay between was deleted by retention before anyone replayed
     * it, and is gone either way. Past the end: the topic was deleted and created again, so
     * every record in it is one the group never replayed; starting over risks duplicates (which
     * the work table absorbs), starting at the end would hide dead letters from the replay. */
    if (committed < low || committed > high)
        return low;
    return committed;
}

const char *kafka_dlq_origin(const char *queue, int shared, const char *header_origin)
{
    if (!shared)
        return queue;
    return header_origin && *header_origin ? header_origin : NULL;
}

int64_t kafka_dlq_deliveries(const void *value, size_t len)
{
    const unsigned char *b = value;
    if (!b || len == 0 || len > 18) /* 18 digits always fit an int64 */
        return -1;
    int digits = 1;
    for (size_t i = 0; i < len && digits; i++)
        digits = b[i] >= '0' && b[i] <= '9';
    if (digits) {
        int64_t v = 0;
        for (size_t i = 0; i < len; i++)
            v = v * 10 + (b[i] - '0');
        return v;
    }
    if (len != 4)
        return -1;
    uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return v > INT32_MAX ? -1 : (int64_t)v;
}

int64_t kafka_dlq_replays(const void *value, size_t len)
{
    const unsigned char *b = value;
    if (!b)
        return 0;
    if (len == 0 || len > 18) /* 18 digits always fit an int64 */
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (b[i] < '0' || b[i] > '9')
            return -1;
        v = v * 10 + (b[i] - '0');
    }
    return v;
}
