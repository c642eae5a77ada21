/* consumers.h: the consumer counts of `kind: rabbitmq` as they are kept between the reads of
 * consumers_interval (collectors/rabbitmq/consumers.c), for a source with the plugin.
 *
 * Asking the plugin for family queue_consumer_count costs the broker about three times what the
 * depth family does (docs/kinds/rabbitmq.md), so a scrape reads the counts only when they are
 * older than consumers_interval and serves the last ones otherwise. They are held for the whole
 * interval, so they are stored beside the cached slow part (cache.h), whose records already name
 * every queue: one count a record (4 bytes a queue: 44 KB at 11,000), and by name only for the
 * queues declared since its last refresh. Whenever the slow part is refreshed, its /api/queues
 * reply carries the counts too, and they are stored anew against the new records. */
#ifndef QREL_RABBITMQ_CONSUMERS_H
#define QREL_RABBITMQ_CONSUMERS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hashtab.h"

/* A count the read did not give (the queue had no figures yet). */
#define RABBITMQ_NO_COUNT UINT32_MAX

struct rabbitmq_consumers {
    int64_t mono_ms;  /* when they were read (the start of that scrape) */
    uint32_t *counts; /* per record of the cached slow part they were stored against */
    size_t n;
    struct buf names; /* the others: NUL-terminated vhost and name strings */
    struct rabbitmq_consumers_extra *extra;
    size_t nextra, extracap;
    struct hashtab index; /* extra by (vhost, name) */
};

/* Whether a scrape at now_ms reads the counts: none yet, or older than interval seconds (0: every
 * scrape) less a tenth of it, at most RABBITMQ_CONSUMERS_SLACK_MS, so that a 60 s interval at 15 s
 * scrapes reads on every 4th scrape whatever the scheduling jitter. */
#define RABBITMQ_CONSUMERS_SLACK_MS 1000
int rabbitmq_consumers_due(const struct rabbitmq_consumers *c, double interval, int64_t now_ms);

/* Starts c (zeroed, or freed) for the n records of the slow part, every count RABBITMQ_NO_COUNT. */
void rabbitmq_consumers_init(struct rabbitmq_consumers *c, size_t n, int64_t mono_ms);
/* The count of record id (< n). A count is a whole number of subscriptions; one above the largest
 * uint32 (no broker comes near: each is a process of the node) is stored as UINT32_MAX - 1. */
void rabbitmq_consumers_set(struct rabbitmq_consumers *c, size_t id, double count);
/* The count of (vhost, name), a queue the slow part does not have; a second one is ignored. */
void rabbitmq_consumers_add(struct rabbitmq_consumers *c, const char *vhost, const char *name,
                            double count);
/* The count of record id (id < n), or when id is SIZE_MAX (not in the slow part) of (vhost,
 * name) among the others: 1 with *out set, 0 when the last read gave none. */
int rabbitmq_consumers_get(const struct rabbitmq_consumers *c, size_t id, const char *vhost,
                           const char *name, double *out);
void rabbitmq_consumers_free(struct rabbitmq_consumers *c); /* zeroes it */

#endif
