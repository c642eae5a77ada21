/* replay.h: the writing side of `qrel dlq replay` on a Kafka dead-letter topic
 * (collectors/kafka/replay.c): a dead letter as read, put back on its topic with a producer, and
 * its offset committed in the replay group (kafka.h, kafka_replay_group). The exporter never
 * reaches this code: only `qrel dlq replay --yes` does. */
#ifndef QREL_KAFKA_REPLAY_H
#define QREL_KAFKA_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "deadline.h"
#include "err.h"
#include "kafka/settings.h"

/* One record of the dead-letter topic, as a replay needs it (dlq_message.kind_data). */
struct kafka_dead_letter {
    int32_t partition;
    int64_t offset;
    void *key; /* NULL: the record had no key */
    size_t key_len;
    void *value; /* NULL: no value (a tombstone) */
    size_t len;
    rd_kafka_headers_t *headers; /* a copy; NULL: none */
    char *origin;                /* the topic its origin header names; NULL: none */
    int64_t replays;             /* its replay stamp as read (dlq_message.replays) */
};

/* A copy of record m of the dead-letter topic, with origin (taken over, may be NULL). */
struct kafka_dead_letter *kafka_dead_letter_new(const rd_kafka_message_t *m, char *origin);
void kafka_dead_letter_free(void *d);

/* One replay of one topic's dead letters (dlq_batch.kind_data): its producer, made on the first
 * requeue, and the partitions a failed requeue stopped. */
struct kafka_replay;

/* queue and dlq_topic are not copied: they are the batch's origin and dead_letter_queue, which
 * live as long as the batch's kind_data. */
struct kafka_replay *kafka_replay_new(const char *source, const char *queue, const char *dlq_topic,
                                      int shared);
void kafka_replay_free(void *r);
const char *kafka_replay_group_name(const struct kafka_replay *r);
int kafka_replay_shared(const struct kafka_replay *r);

/* Produces d to its origin (kafka_dlq_origin) with its key, value and headers, and waits for the
 * broker to acknowledge it (acks=all). Refuses a record without an origin, and every record of a
 * partition after one whose requeue failed: the replay group's offset must not pass it. */
int kafka_replay_requeue(struct kafka_replay *r, const struct kafka_settings *cfg,
                         const struct kafka_dead_letter *d, const struct deadline *dl,
                         struct err *e);

/* Commits d's offset + 1 in the replay group and waits for the broker's answer. */
int kafka_replay_commit(struct kafka_replay *r, const struct kafka_settings *cfg,
                        const struct kafka_dead_letter *d, const struct deadline *dl,
                        struct err *e);

#endif
