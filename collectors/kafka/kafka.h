/* kafka.h: the pure parts of the `kafka` kind, exposed for unit tests.
 *
 * The collector itself is `kafka_kind` (listed in registry.c, collectors/kafka/kafka.c). What is
 * declared here (collectors/kafka/calc.c, collectors/kafka/dead_letter.c) does no I/O: it turns
 * offsets and record timestamps into the values of the series, librdkafka's error codes into
 * qrel's reasons and a dead letter's headers and value into what `qrel dlq` and the dead-letter
 * join need, so the edge cases (no commit, a commit behind the log start or past the end,
 * records that are gone) are tested without a broker. */
#ifndef QREL_KAFKA_H
#define QREL_KAFKA_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "err.h"

/* One partition of a topic as one group sees it. committed < 0: the group has no commit. */
struct kafka_offsets {
    int64_t low;  /* log start offset (first record still kept) */
    int64_t high; /* high watermark (offset of the next record to be written) */
    int64_t committed;
};

/* Records of the partition the group has not consumed, and where the first of them is: from the
 * commit (or the log start, when there is no commit or the commit is older than the log start:
 * records deleted before the group read them are lost, not waiting) to the high watermark. A
 * commit at or past the end counts 0. *first is the offset to fetch for the lag in seconds, -1
 * when the lag is 0. */
int64_t kafka_partition_lag(const struct kafka_offsets *o, int64_t *first);

/* now_ms - ts_ms in seconds, clamped at 0 (producer clocks ahead of ours). */
double kafka_age_seconds(int64_t now_ms, int64_t ts_ms);

/* dead_letter_topic with every "{topic}" replaced by the topic's name. malloc'd. */
char *kafka_dlq_name(const char *tmpl, const char *topic);

/* The reason for a librdkafka error code: connect (transport, resolve, all brokers down, TLS),
 * auth (SASL, authorization), timeout, protocol (a reply that cannot be parsed), limit (a reply
 * larger than max_response_bytes), query for every other error the broker answered. text is
 * librdkafka's message, which tells "Invalid response size" (limit) from other transport
 * errors; it may be NULL. */
enum err_code kafka_err_code(rd_kafka_resp_err_t code, const char *text);

/* A regular expression of the config (POSIX extended) that must match the whole name:
 * kafka_full_regex("mail.*") is "^(mail.*)$". malloc'd. */
char *kafka_full_regex(const char *pattern);

/* ---- the id of a dead letter, for the core's dead-letter join (collectors/kafka/dead_letter.c)
 * id_field is "header:NAME" (a record header) or a key of the record's value parsed as JSON, with
 * dots for nesting ("order.id" in {"order": {"id": 17}}). */

/* 0 when id_field is one of those forms; else -1 with a short reason in why (cap bytes). */
int kafka_id_field_check(const char *id_field, char *why, size_t cap);

/* The header name of a "header:NAME" id_field, or NULL for a JSON key. */
const char *kafka_id_field_header(const char *id_field);

/* The id at the dotted path in the JSON value (len bytes): a string as it is, an integer in
 * decimal. malloc'd into *out with its length in *outlen; *out = NULL when the value is not JSON,
 * the path is absent, or its value is of another type (a dead letter without an id). */
void kafka_json_id(const char *value, size_t len, const char *path, char **out, size_t *outlen);

/* ---- `qrel dlq`: the decisions that need no broker (collectors/kafka/dead_letter.c) ----
 * A replay records its progress as the committed offsets of a consumer group of its own on the
 * dead-letter topic, one per replayed topic, so that a rerun starts after what it replayed. */

#define KAFKA_REPLAY_GROUP_PREFIX "qrel-dlq-replay."
/* Headers that name the topic a dead letter came from: Spring Kafka's
 * DeadLetterPublishingRecoverer, then Kafka Connect's errors.deadletterqueue (with
 * errors.deadletterqueue.context.headers.enable). */
#define KAFKA_ORIGIN_HEADER_SPRING "kafka_dlt-original-topic"
#define KAFKA_ORIGIN_HEADER_CONNECT "__connect.errors.topic"
/* How often a record was attempted, as Spring Kafka's retry topics count it. */
#define KAFKA_ATTEMPTS_HEADER "retry_topic-attempts"

/* The replay group of topic: KAFKA_REPLAY_GROUP_PREFIX topic. malloc'd. */
char *kafka_replay_group(const char *topic);

/* Where a replay reads a partition of the dead-letter topic from: the replay group's commit,
 * or the log start when it has none or records before it were deleted; never past high. */
int64_t kafka_dlq_read_from(int64_t low, int64_t high, int64_t committed);

/* The topic a dead letter goes back to. A dead-letter topic of one topic (shared == 0) sends
 * everything back to queue, whatever a header says (a Spring retry chain names its last retry
 * topic there). A dead-letter topic shared by several topics needs the record's origin header
 * (NULL: none): NULL when it has none, and the replay refuses that record. */
const char *kafka_dlq_origin(const char *queue, int shared, const char *header_origin);

/* The delivery count a KAFKA_ATTEMPTS_HEADER value (len bytes) carries: Spring writes a 4-byte
 * big-endian integer, some producers decimal text. -1 when it is neither. */
int64_t kafka_dlq_deliveries(const void *value, size_t len);

/* The replay stamp a DLQ_STAMP header value (len bytes) carries, decimal text as the replay
 * writes it: 0 without the header (value NULL), -1 when it holds anything else. */
int64_t kafka_dlq_replays(const void *value, size_t len);

#endif
