/* redis_stream/client.h: the connection of a `redis_stream` source and the read of a
 * dead-letter stream (collectors/redis_stream/client.c), shared by the top (redis_stream.c) and
 * `qrel dlq`'s hooks (dlq.c). Private to the folder. */
#ifndef QREL_REDIS_STREAM_CLIENT_H
#define QREL_REDIS_STREAM_CLIENT_H

#include "scrape.h"

/* The source's connection, opened under dl when there is none. NULL with e set. */
struct redis_conn *redis_stream_client_conn(struct collector *c, const struct deadline *dl,
                                            struct err *e);
/* Reads queue's dead-letter stream: XLEN into *total and `XRANGE - + COUNT max`, whose reply
 * goes to add(reply, id_field, out, e), in one round trip under dl. Returns the dead-letter
 * stream's name (malloc'd), or NULL with e set (the connection then dropped). For the
 * dead-letter join and for `qrel dlq` (dlq.c). */
typedef int (*redis_stream_range_fn)(const redisReply *r, const char *id_field, void *out,
                                     struct err *e);
char *redis_stream_client_read_dead(struct collector *c, const char *queue, const char *id_field,
                                    size_t max, const struct deadline *dl,
                                    redis_stream_range_fn add, void *out, size_t *total,
                                    struct err *e);
/* One page of `qrel dlq`'s read of queue's dead-letter stream (dlq_kind.read_page): the first
 * call fills b's dead_letter_queue and total (XLEN, in the first page's round trip), and each
 * call XRANGEs at most max entries after the last one read, never more in all than the stream
 * held as the run began, handing the reply to add as redis_stream_client_read_dead does and
 * setting b->end after the last. 0, or -1 with e set (the connection then dropped). */
int redis_stream_client_read_dead_page(struct collector *c, const char *queue, const char *id_field,
                                       size_t max, const struct deadline *dl,
                                       redis_stream_range_fn add, void *out, struct dlq_batch *b,
                                       struct err *e);

#endif
