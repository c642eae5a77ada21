/* cache.h: the slow part of `kind: rabbitmq` as it is kept between scrapes (collectors/rabbitmq/
 * cache.c): per queue the few figures a scrape serves from it and its dead-letter queues, looked
 * up by (vhost, name).
 *
 * It is held for the whole metadata_interval, so it is stored compactly (issue 14): every string
 * once in one block of names, 16 bytes per queue, and the figures only for the queues whose
 * figures are not the defaults (no head timestamp, no redeliveries, nothing consumed, no limits,
 * no dead-letter queue), which at 11,000 idle queues are few (a queue that ever had a message
 * acknowledged has figures: 64 bytes more). Kept as records of owned strings it was 1.45 MB there,
 * spread over 22,000 small blocks between the parser's freed ones. */
#ifndef QREL_RABBITMQ_CACHE_H
#define QREL_RABBITMQ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "buf.h"

/* One queue's figures, as rabbitmq_cache_add takes them and rabbitmq_cache_find gives them. */
struct rabbitmq_cached {
    int has_stats;
    int has_head_ts;
    double head_ts;
    double redeliver;
    double consumed;            /* message_stats: ack + deliver_no_ack + get_no_ack */
    double delivery_limit;      /* -1 when none */
    double consumer_timeout_ms; /* -1 when none */
    double message_ttl_ms;      /* -1 when none */
    int has_dlx;                /* it dead-letters (what expires in it goes on) */
    size_t ndlqs;               /* its dead-letter queues: rabbitmq_cache_dlq(c, this, 0 ..) */
    uint32_t dlq0;
    uint32_t id; /* set by rabbitmq_cache_find: its record, 0 .. n-1 in the order added */
};

struct rabbitmq_cache {
    double wall;      /* when it was fetched (epoch seconds) */
    int64_t mono_ms;  /* the same, monotonic, for its age */
    struct buf names; /* NUL-terminated strings; offsets below */
    struct rabbitmq_cache_rec *recs;
    size_t n, cap;
    struct rabbitmq_cache_fig *figs; /* the non-default figures */
    size_t nfigs, figcap;
    uint32_t *dlqs; /* dead-letter queue names (offsets), each queue's run together */
    size_t ndlqs, dlqcap;
    uint32_t last_vhost;  /* the offset of the vhost added last + 1: queues come by vhost */
    uint32_t last_dlq;    /* the same for the dead-letter queue name added last */
    struct hashtab index; /* recs by (vhost, name) */
};

/* The hash of (vhost, name), for every table of queues of the kind: the vhost's hash seeds the
 * name's, so ("a", "bc") and ("ab", "c") hash apart. */
uint64_t rabbitmq_queue_hash(const char *vhost, const char *name);

/* Adds (vhost, name) with v's figures and its dead-letter queues dlqs[0 .. v->ndlqs); a name
 * already there is not added again (the API lists each queue once). */
void rabbitmq_cache_add(struct rabbitmq_cache *c, const char *vhost, const char *name,
                        const struct rabbitmq_cached *v, const char *const *dlqs);
/* Gives the room it grew into back: called once it is complete. */
void rabbitmq_cache_fit(struct rabbitmq_cache *c);
/* 1 with *out filled in when (vhost, name) is cached, else 0. */
int rabbitmq_cache_find(const struct rabbitmq_cache *c, const char *vhost, const char *name,
                        struct rabbitmq_cached *out);
/* The i-th dead-letter queue (i < v->ndlqs) of a queue rabbitmq_cache_find gave as v. */
const char *rabbitmq_cache_dlq(const struct rabbitmq_cache *c, const struct rabbitmq_cached *v,
                               size_t i);
void rabbitmq_cache_free(struct rabbitmq_cache *c); /* zeroes it; NULL is fine */

#endif
