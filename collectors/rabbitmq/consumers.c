/* consumers.c: the consumer counts kept between two reads (consumers.h): an array beside the
 * cached slow part's records, and a small table by name for the queues it does not have. */
#include "rabbitmq/consumers.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "rabbitmq/cache.h"

struct rabbitmq_consumers_extra {
    uint32_t vhost, name; /* offsets into names */
    uint32_t count;
};

static uint32_t clamp_count(double count)
{
    return count >= (double)(UINT32_MAX - 1) ? UINT32_MAX - 1 : (uint32_t)count;
}

int rabbitmq_consumers_due(const struct rabbitmq_consumers *c, double interval, int64_t now_ms)
{
    if (!c->counts)
        return 1;
    int64_t iv = (int64_t)(interval * 1000.0);
    int64_t slack = iv / 10 < RABBITMQ_CONSUMERS_SLACK_MS ? iv / 10 : RABBITMQ_CONSUMERS_SLACK_MS;
    return now_ms - c->mono_ms >= iv - slack;
}

void rabbitmq_consumers_init(struct rabbitmq_consumers *c, size_t n, int64_t mono_ms)
{
    rabbitmq_consumers_free(c);
    c->mono_ms = mono_ms;
    c->n = n;
    c->counts = xmalloc((n ? n : 1) * sizeof *c->counts);
    for (size_t i = 0; i < n; i++)
        c->counts[i] = RABBITMQ_NO_COUNT;
}

void rabbitmq_consumers_set(struct rabbitmq_consumers *c, size_t id, double count)
{
    if (id < c->n)
        c->counts[id] = clamp_count(count);
}

static const char *str_at(const struct rabbitmq_consumers *c, uint32_t off)
{
    return c->names.data + off;
}

static uint64_t extra_hash_of(const void *ctx, uint32_t id)
{
    const struct rabbitmq_consumers *c = ctx;
    return rabbitmq_queue_hash(str_at(c, c->extra[id].vhost), str_at(c, c->extra[id].name));
}

static size_t search(const struct rabbitmq_consumers *c, const char *vhost, const char *name,
                     struct hashtab_probe *p)
{
    for (uint32_t id = hashtab_first(&c->index, rabbitmq_queue_hash(vhost, name), p);
         id != HASHTAB_END; id = hashtab_next(&c->index, p))
        if (strcmp(str_at(c, c->extra[id].name), name) == 0 &&
            strcmp(str_at(c, c->extra[id].vhost), vhost) == 0)
            return id;
    return SIZE_MAX;
}

static uint32_t add_string(struct rabbitmq_consumers *c, const char *s)
{
    uint32_t off = (uint32_t)c->names.len;
    buf_append(&c->names, s, strlen(s) + 1);
    return off;
}

void rabbitmq_consumers_add(struct rabbitmq_consumers *c, const char *vhost, const char *name,
                            double count)
{
    struct hashtab_probe p;
    if (search(c, vhost, name, &p) != SIZE_MAX)
        return;
    if (c->nextra == c->extracap) {
        c->extracap = c->extracap ? c->extracap * 2 : 16;
        c->extra = xrealloc(c->extra, c->extracap * sizeof *c->extra);
    }
    struct rabbitmq_consumers_extra *x = &c->extra[c->nextra];
    x->vhost = add_string(c, vhost);
    x->name = add_string(c, name);
    x->count = clamp_count(count);
    hashtab_add(&c->index, &p, (uint32_t)c->nextra, extra_hash_of, c);
    c->nextra++;
}

int rabbitmq_consumers_get(const struct rabbitmq_consumers *c, size_t id, const char *vhost,
                           const char *name, double *out)
{
    uint32_t v = RABBITMQ_NO_COUNT;
    if (id != SIZE_MAX) {
        if (id < c->n)
            v = c->counts[id];
    } else if (c->nextra) {
        struct hashtab_probe p;
        size_t x = search(c, vhost, name, &p);
        if (x != SIZE_MAX)
            v = c->extra[x].count;
    }
    if (v == RABBITMQ_NO_COUNT)
        return 0;
    *out = (double)v;
    return 1;
}

void rabbitmq_consumers_free(struct rabbitmq_consumers *c)
{
    free(c->counts);
    free(c->extra);
    buf_free(&c->names);
    hashtab_free(&c->index);
    memset(c, 0, sizeof *c);
}
