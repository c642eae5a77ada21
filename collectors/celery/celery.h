/* celery.h: the pure parts of `kind: celery` (parse.c): what qrel reads out of an entry of
 * kombu's `unacked` hash, apart from the Redis I/O so the unit tests can feed recorded entries. */
#ifndef QREL_CELERY_H
#define QREL_CELERY_H

#include <stddef.h>

#include "err.h"

/* One delivered, unacknowledged message as kombu's Redis transport keeps it: the JSON list
 * [message, exchange, routing_key]. */
struct celery_unacked {
    char *routing_key; /* malloc'd; the queue, with Celery's default direct routing */
    double eta;        /* headers.eta as epoch seconds, -1 when the task has none */
    int redelivered;   /* headers.redelivered: kombu restored it once after its lease ran out */
};

int celery_parse_unacked(const char *json, size_t len, struct celery_unacked *out, struct err *e);
void celery_unacked_free(struct celery_unacked *u); /* frees the members */

#endif
