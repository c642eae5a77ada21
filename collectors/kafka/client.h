/* kafka/client.h: what the files of the `kafka` kind share to talk to Kafka
 * (collectors/kafka/client.c): the source's state with its librdkafka handle, the mapping of
 * librdkafka's errors to qrel's reasons, and the reading primitives of a consumer that is
 * assigned partitions directly (never joins a group, never commits). The lag scrape (lag.c), the
 * dead-letter reads (records.c) and `qrel dlq` (dlq.c) use two handles this way: one for the
 * offsets and groups, kept, and one that fetches records (the reader), kept only while what it
 * holds is small. Private to the folder: not for other kinds, nor for tests. */
#ifndef QREL_KAFKA_CLIENT_H
#define QREL_KAFKA_CLIENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "deadline.h"
#include "err.h"
#include "kafka/settings.h"

/* The state of a source (collector.priv). */
struct kafka_state {
    const char *source;
    struct kafka_settings cfg; /* what the config says (settings.c) */

    rd_kafka_t *rk; /* metadata, offsets, groups: kept between scrapes, destroyed after any
                       error */
    /* The handle that fetches records. librdkafka keeps about 1.6 KB for every partition of
     * every topic a handle has fetched from, as long as the handle lives (it has no call that
     * forgets a topic): 1.6 MB at 1,000 lagging partitions. So the reads have a handle of their
     * own, kept between scrapes while the partitions it knows stay within
     * KAFKA_READER_KEPT_PARTITIONS and destroyed after the scrape otherwise, which costs new
     * connections to the leaders on the next scrape that reads, and nothing else. */
    rd_kafka_t *reader;
    char **reader_topics; /* the topics it has fetched from */
    size_t reader_ntopics;
    long long reader_parts; /* their partitions */
    pthread_mutex_t mu;
    rd_kafka_resp_err_t last_err; /* the last error librdkafka reported (error_cb), under mu */
    char last_errstr[400];
    int warned_cap;
};

/* Opens st->rk, a consumer with st's settings whose error and log callbacks write into st. */
int kafka_client_open(struct kafka_state *st, struct err *e);
/* Destroys st->rk and the reader, when open (joining librdkafka's threads: nothing is left
 * running). */
void kafka_client_drop(struct kafka_state *st);

/* The most partitions (of the topics it has fetched from) the reader may know and be kept
 * between scrapes: about 0.2 MB of librdkafka's state. */
#define KAFKA_READER_KEPT_PARTITIONS 128
/* Opens the reader when it is not: 0, or -1 with e set. */
int kafka_client_reader_open(struct kafka_state *st, struct err *e);
/* Notes that the reader is about to fetch from topic, of partitions partitions. */
void kafka_client_reader_topic(struct kafka_state *st, const char *topic, int partitions);
/* At the end of a collection: destroys the reader when it knows more partitions than
 * KAFKA_READER_KEPT_PARTITIONS. */
void kafka_client_reader_settle(struct kafka_state *st);

/* The last broker error librdkafka reported (error_cb), with its text in text (cap bytes). */
rd_kafka_resp_err_t kafka_client_last_error(struct kafka_state *st, char *text, size_t cap);
/* Forgets it: a collection starts with none. */
void kafka_client_clear_error(struct kafka_state *st);
/* The error of a failed call (what: the request), with the broker error librdkafka reported
 * meanwhile when that says more. Returns -1 with e set. */
int kafka_client_call_error(struct kafka_state *st, const char *what, rd_kafka_resp_err_t code,
                            const char *text, struct err *e);
/* -1 with e set when a broker error that waiting will not cure was reported, else 0. */
int kafka_client_fatal_pending(struct kafka_state *st, const char *what, struct err *e);
/* -1 with e set: what timed out, with the last broker error when there is one. */
int kafka_client_timed_out(struct kafka_state *st, const char *what, struct err *e);
/* The milliseconds left before dl, at most max. */
int kafka_client_slice_ms(const struct deadline *dl, int max);

/* Starts the reader's fetches of the partitions just assigned at once (librdkafka 2.0.2 would
 * wait up to a second): a ListOffsets of one partition to each of their leaders. leaders[k] is
 * the leader of round->elems[k] as the metadata says. */
void kafka_client_wake(struct kafka_state *st, const struct deadline *dl,
                       const rd_kafka_topic_partition_list_t *round, const int32_t *leaders);
/* The reader's next message of the assigned partitions: 0 with *m set (NULL when none came in 100
 * ms), or -1 on the deadline or an error. The end of a log and an offset out of range are messages.
 */
int kafka_client_poll(struct kafka_state *st, const struct deadline *dl, rd_kafka_message_t **m,
                      struct err *e);
/* Unassigns every partition of the reader and frees what the fetchers read ahead. */
rd_kafka_resp_err_t kafka_client_unassign(struct kafka_state *st);
/* Pauses one partition of the reader: its read is done. */
void kafka_client_pause(struct kafka_state *st, const char *topic, int32_t partition);

#endif
