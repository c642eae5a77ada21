/* cache.c: the compact store of RabbitMQ's cached slow part; see cache.h for why it is shaped so.
 * A queue is a record of three string offsets and a flag; its figures are a second, sparse
 * table, reached from the record only when they differ from a quiet queue's. */
#include "rabbitmq/cache.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

struct rabbitmq_cache_rec {
    uint32_t name, vhost; /* offsets into names */
    uint32_t fig;         /* figs[fig - 1], or 0: the defaults */
    uint32_t has_stats;
};

struct rabbitmq_cache_fig {
    double head_ts, redeliver, consumed, delivery_limit, consumer_timeout_ms, message_ttl_ms;
    uint32_t dlq0, ndlqs;
    int has_head_ts, has_dlx;
};

uint64_t rabbitmq_queue_hash(const char *vhost, const char *name)
{
    return hashtab_hash(name, strlen(name), hashtab_hash(vhost, strlen(vhost), 0));
}

static const char *str_at(const struct rabbitmq_cache *c, uint32_t off)
{
    return c->names.data + off;
}

static uint64_t rec_hash_of(const void *ctx, uint32_t id)
{
    const struct rabbitmq_cache *c = ctx;
    return rabbitmq_queue_hash(str_at(c, c->recs[id].vhost), str_at(c, c->recs[id].name));
}

static size_t search(const struct rabbitmq_cache *c, const char *vhost, const char *name,
                     struct hashtab_probe *p)
{
    for (uint32_t id = hashtab_first(&c->index, rabbitmq_queue_hash(vhost, name), p);
         id != HASHTAB_END; id = hashtab_next(&c->index, p))
        if (strcmp(str_at(c, c->recs[id].name), name) == 0 &&
            strcmp(str_at(c, c->recs[id].vhost), vhost) == 0)
            return id;
    return SIZE_MAX;
}

static uint32_t add_string(struct rabbitmq_cache *c, const char *s)
{
    uint32_t off = (uint32_t)c->names.len;
    buf_append(&c->names, s, strlen(s) + 1);
    return off;
}

/* Grows *v (n used of *cap elements of size sz) to hold one more. */
static void grow(void **v, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return;
    *cap = *cap ? *cap * 2 : 64;
    *v = xrealloc(*v, *cap * sz);
}

static int is_default(const struct rabbitmq_cached *v)
{
    return !v->has_head_ts && v->redeliver == 0 && v->consumed == 0 && v->delivery_limit == -1 &&
           v->consumer_timeout_ms == -1 && v->ndlqs == 0 && v->message_ttl_ms == -1 && !v->has_dlx;
}

void rabbitmq_cache_add(struct rabbitmq_cache *c, const char *vhost, const char *name,
                        const struct rabbitmq_cached *v, const char *const *dlqs)
{
    struct hashtab_probe p;
    if (search(c, vhost, name, &p) != SIZE_MAX)
        return;
    grow((void **)&c->recs, c->n, &c->cap, sizeof *c->recs);
    struct rabbitmq_cache_rec *r = &c->recs[c->n];
    if (!c->last_vhost || strcmp(str_at(c, c->last_vhost - 1), vhost) != 0)
        c->last_vhost = add_string(c, vhost) + 1;
    r->vhost = c->last_vhost - 1;
    r->name = add_string(c, name);
    r->has_stats = v->has_stats != 0;
    r->fig = 0;
    if (!is_default(v)) {
        grow((void **)&c->figs, c->nfigs, &c->figcap, sizeof *c->figs);
        struct rabbitmq_cache_fig *f = &c->figs[c->nfigs++];
        f->head_ts = v->head_ts;
        f->redeliver = v->redeliver;
        f->consumed = v->consumed;
        f->delivery_limit = v->delivery_limit;
        f->consumer_timeout_ms = v->consumer_timeout_ms;
        f->message_ttl_ms = v->message_ttl_ms;
        f->has_head_ts = v->has_head_ts;
        f->has_dlx = v->has_dlx;
        f->dlq0 = (uint32_t)c->ndlqs;
        f->ndlqs = (uint32_t)v->ndlqs;
        for (size_t i = 0; i < v->ndlqs; i++) {
            grow((void **)&c->dlqs, c->ndlqs, &c->dlqcap, sizeof *c->dlqs);
            /* many queues often share one dead-letter queue: stored once while they follow
             * each other, so a scrape sees the same string for it (rabbitmq.c's dlq_memo) */
            if (!c->last_dlq || strcmp(str_at(c, c->last_dlq - 1), dlqs[i]) != 0)
                c->last_dlq = add_string(c, dlqs[i]) + 1;
            c->dlqs[c->ndlqs++] = c->last_dlq - 1;
        }
        r->fig = (uint32_t)c->nfigs;
    }
    hashtab_add(&c->index, &p, (uint32_t)c->n, rec_hash_of, c);
    c->n++;
}

/* Shrinks *v from cap to n elements of size sz. */
static void fit(void **v, size_t n, size_t *cap, size_t sz)
{
    if (n && n < *cap) {
        *v = xrealloc(*v, n * sz);
        *cap = n;
    }
}

void rabbitmq_cache_fit(struct rabbitmq_cache *c)
{
    fit((void **)&c->recs, c->n, &c->cap, sizeof *c->recs);
    fit((void **)&c->figs, c->nfigs, &c->figcap, sizeof *c->figs);
    fit((void **)&c->dlqs, c->ndlqs, &c->dlqcap, sizeof *c->dlqs);
    if (c->names.len + 1 < c->names.cap) {
        c->names.data = xrealloc(c->names.data, c->names.len + 1);
        c->names.cap = c->names.len + 1;
    }
}

int rabbitmq_cache_find(const struct rabbitmq_cache *c, const char *vhost, const char *name,
                        struct rabbitmq_cached *out)
{
    struct hashtab_probe p;
    size_t id = search(c, vhost, name, &p);
    if (id == SIZE_MAX)
        return 0;
    const struct rabbitmq_cache_rec *r = &c->recs[id];
    memset(out, 0, sizeof *out);
    out->id = (uint32_t)id;
    out->has_stats = (int)r->has_stats;
    out->delivery_limit = out->consumer_timeout_ms = out->message_ttl_ms = -1;
    if (r->fig) {
        const struct rabbitmq_cache_fig *f = &c->figs[r->fig - 1];
        out->has_head_ts = f->has_head_ts;
        out->head_ts = f->head_ts;
        out->redeliver = f->redeliver;
        out->consumed = f->consumed;
        out->delivery_limit = f->delivery_limit;
        out->consumer_timeout_ms = f->consumer_timeout_ms;
        out->message_ttl_ms = f->message_ttl_ms;
        out->has_dlx = f->has_dlx;
        out->dlq0 = f->dlq0;
        out->ndlqs = f->ndlqs;
    }
    return 1;
}

const char *rabbitmq_cache_dlq(const struct rabbitmq_cache *c, const struct rabbitmq_cached *v,
                               size_t i)
{
    return str_at(c, c->dlqs[v->dlq0 + i]);
}

void rabbitmq_cache_free(struct rabbitmq_cache *c)
{
    if (!c)
        return;
    buf_free(&c->names);
    free(c->recs);
    free(c->figs);
    free(c->dlqs);
    hashtab_free(&c->index);
    memset(c, 0, sizeof *c);
}
