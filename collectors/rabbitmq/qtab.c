/* qtab.c: the queue tables of a scrape (qtab.h): records grown by doubling, owned strings, and
 * the kind's one hash of (vhost, name) (cache.h) for their index. */
#include "rabbitmq/qtab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "rabbitmq/cache.h"

static uint64_t qrec_hash_of(const void *ctx, uint32_t id)
{
    const struct qtab *t = ctx;
    return rabbitmq_queue_hash(t->v[id].vhost, t->v[id].name);
}

/* The index of (vhost, name), or SIZE_MAX; p is left where it would be added. */
static size_t search(const struct qtab *t, const char *vhost, const char *name,
                     struct hashtab_probe *p)
{
    for (uint32_t id = hashtab_first(&t->index, rabbitmq_queue_hash(vhost, name), p);
         id != HASHTAB_END; id = hashtab_next(&t->index, p))
        if (strcmp(t->v[id].name, name) == 0 && strcmp(t->v[id].vhost, vhost) == 0)
            return id;
    return SIZE_MAX;
}

size_t rabbitmq_qtab_find(const struct qtab *t, const char *vhost, const char *name)
{
    struct hashtab_probe p;
    return search(t, vhost, name, &p);
}

struct qrec *rabbitmq_qtab_get(struct qtab *t, const char *vhost, const char *name)
{
    struct hashtab_probe p;
    size_t id = search(t, vhost, name, &p);
    if (id != SIZE_MAX)
        return &t->v[id];
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->v = xrealloc(t->v, t->cap * sizeof *t->v);
    }
    struct qrec *r = &t->v[t->n];
    memset(r, 0, sizeof *r);
    r->vhost = xstrdup(vhost);
    r->name = xstrdup(name);
    r->delivery_limit = r->consumer_timeout_ms = r->message_ttl_ms = -1;
    hashtab_add(&t->index, &p, (uint32_t)t->n, qrec_hash_of, t);
    t->n++;
    return r;
}

void rabbitmq_qtab_free(struct qtab *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].vhost);
        free(t->v[i].name);
        free(t->v[i].dlx);
        free(t->v[i].dlrk);
    }
    free(t->v);
    hashtab_free(&t->index);
    memset(t, 0, sizeof *t);
}
