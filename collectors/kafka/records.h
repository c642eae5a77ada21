/* kafka/records.h: reading the records of a dead-letter topic (collectors/kafka/records.c) at
 * offsets, with the source's consumer, for the core's dead-letter join (kafka.c) and for `qrel
 * dlq` (dlq.c). Reading changes no offset of anyone's. Private to the folder. */
#ifndef QREL_KAFKA_RECORDS_H
#define QREL_KAFKA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "deadline.h"
#include "err.h"
#include "kafka/client.h"
#include "kafka/scrape.h"

/* The last value of header name on m (NULL: absent or null), its size in *size. */
const void *kafka_records_header(const rd_kafka_message_t *m, const char *name, size_t *size);

/* The id m carries at id_field (a header or a JSON key of its value), malloc'd into *id with its
 * length; *id = NULL when it carries none. */
void kafka_records_id(const rd_kafka_message_t *m, const char *id_field, char **id, size_t *len);

/* The metadata and watermarks of dead-letter topic name into sc: 0 with *ti its index, SIZE_MAX
 * when the topic does not exist (not created yet: nothing was dead-lettered). The handle is
 * opened when needed; *inner is dl stopped a little before the core's, so a timeout says what
 * was waited for. */
int kafka_records_topic(struct kafka_state *st, const struct deadline *dl, struct deadline *inner,
                        const char *name, struct kafka_scrape *sc, size_t *ti, struct err *e);

/* What kafka_records_read does with each record it read. */
typedef void (*kafka_records_fn)(const rd_kafka_message_t *m, void *arg);

/* Reads the records of every partition of td from from[p] (NULL: its log start) up to the high
 * watermark, max in all, passing each to fn; each partition is paused once its last planned
 * offset (or the end of the log) is seen. *total grows by the records in those ranges. */
int kafka_records_read(struct kafka_state *st, const struct deadline *dl,
                       const struct kafka_topic_data *td, const int64_t *from, size_t max,
                       size_t *total, kafka_records_fn fn, void *arg, struct err *e);

#endif
