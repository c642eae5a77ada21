/* rabbitmq.h: the pure parts of `kind: rabbitmq` (collectors/rabbitmq/parse.c), exposed for unit
 * tests: reading one queue object of the management API, the dead-letter settings a queue ends up
 * with (queue arguments over policy), and which queues a dead-letter exchange routes to. */
#ifndef QREL_RABBITMQ_H
#define QREL_RABBITMQ_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/* One queue as GET /api/queues reported it. Strings point into the JSON document. */
struct rabbitmq_queue {
    const char *vhost;
    const char *name;
    /* depth: absent for a few seconds after a queue is declared (no stats emitted yet) */
    int has_stats;
    double ready, unacked;
    /* the slow part (present when the columns were asked for) */
    int has_head_ts;
    double head_ts;   /* epoch seconds: the basic.timestamp property of the head message */
    double redeliver; /* message_stats.redeliver; 0 when the queue has stats but no such count */
    const char *dlx;  /* dead-letter exchange ("" is the default exchange), or NULL */
    const char *dlrk; /* dead-letter routing key, or NULL (the message's own key is kept) */
    double delivery_limit;      /* x-delivery-limit / delivery-limit, or -1 */
    double consumer_timeout_ms; /* x-consumer-timeout / consumer-timeout, or -1 */
};

/* Reads queue i of a /api/queues reply. ctx is its JSON path for messages ("$[12]"). with_meta:
 * the reply has the slow columns (arguments, effective_policy_definition, ...). Returns 0, or -1
 * with ERR_PROTOCOL naming the path of a value of the wrong type. */
int rabbitmq_queue_parse(const json_t *obj, const char *ctx, int with_meta,
                         struct rabbitmq_queue *out, struct err *e);

/* Calls each(elem, ctx, arg, e) for every element of the JSON list in body, in order, with ctx
 * its path ("$[12]"), decoding one element at a time and freeing it before the next: the list of
 * 10,000 queues with their slow columns (1.7 MB) is a 17 MB jansson tree when decoded whole, one
 * queue a few hundred bytes. Every element must be an object. 0, or -1 with ERR_PROTOCOL on
 * malformed or truncated JSON, a body that is no list or an element that is no object (what
 * names the request), or whatever each failed with (each returns -1). */
int rabbitmq_each_object(const char *body, size_t len, const char *what,
                         int (*each)(const json_t *elem, const char *ctx, void *arg, struct err *e),
                         void *arg, struct err *e);

/* Deliveries a message gets before it is dead-lettered, from a quorum queue's delivery-limit:
 * the limit counts returns after the first delivery, so limit 4 allows 5 deliveries (measured on
 * 3.10.8). -1 when there is no limit. */
double rabbitmq_max_deliveries(double delivery_limit);

/* AMQP topic matching: '*' is exactly one word, '#' zero or more, words split on '.'. */
int rabbitmq_topic_match(const char *pattern, const char *key);

/* Whether a binding with binding_key of an exchange of type type routes a message dead-lettered
 * with routing key key. fanout and headers route everything (headers cannot be evaluated without
 * the message: reported as routed, documented), direct needs equal keys, topic matches. */
int rabbitmq_binding_routes(const char *type, const char *binding_key, const char *key);

#endif
