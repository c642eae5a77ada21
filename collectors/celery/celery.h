/* celery.h: the pure parts of `kind: celery` (parse.c): what qrel reads out of an entry of
 * kombu's `unacked` hash, apart from the Redis I/O so the unit tests can feed recorded entries. */
#ifndef QREL_CELERY_H
#define QREL_CELERY_H

#include <stddef.h>

#include "common/entries.h"
#include "err.h"

/* One delivered, unacknowledged message as kombu's Redis transport keeps it: the JSON list
 * [message, exchange, routing_key]. */
struct celery_unacked {
    char *routing_key; /* malloc'd; the queue, with Celery's default direct routing */
    double
        eta; /* headers.eta as epoch seconds, -1 when the task has none, NAN when it is no time */
    int redelivered; /* headers.redelivered: kombu restored it once after its lease ran out */
};

/* 0, or -1 with *why (entries.h) and a message when the entry cannot be read: the caller skips it
 * and counts it. An eta that is no time leaves the entry readable, with eta NAN (the caller counts
 * a bad_timestamp). */
int celery_parse_unacked(const char *json, size_t len, struct celery_unacked *out,
                         enum entry_skip *why, struct err *e);
void celery_unacked_free(struct celery_unacked *u); /* frees the members */

#endif
