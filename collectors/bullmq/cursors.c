/* cursors.c: the table of kind bullmq's event cursors (see cursors.h). */
#include "cursors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

const char *bullmq_cursor_queue(const struct bullmq_cursors *t, size_t i)
{
    return t->names.data + t->c[i].name;
}

void bullmq_cursors_reserve(struct bullmq_cursors *t, size_t n)
{
    if (t->n + n <= t->cap)
        return;
    t->cap = t->n + n;
    t->c = xrealloc(t->c, t->cap * sizeof *t->c);
}

static uint64_t cursor_hash(const void *ctx, uint32_t id)
{
    const char *q = bullmq_cursor_queue(ctx, id);
    return hashtab_hash(q, strlen(q), 0);
}

void bullmq_cursors_index(const struct bullmq_cursors *t, struct hashtab *index)
{
    for (size_t i = 0; i < t->n; i++) {
        const char *q = bullmq_cursor_queue(t, i);
        struct hashtab_probe p;
        for (uint32_t id = hashtab_first(index, hashtab_hash(q, strlen(q), 0), &p);
             id != HASHTAB_END; id = hashtab_next(index, &p))
            ; /* the names are distinct: on to the free slot */
        hashtab_add(index, &p, (uint32_t)i, cursor_hash, t);
    }
}

size_t bullmq_cursor_for(struct bullmq_cursors *t, struct hashtab *index, const char *queue)
{
    size_t len = strlen(queue);
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(index, hashtab_hash(queue, len, 0), &p); id != HASHTAB_END;
         id = hashtab_next(index, &p))
        if (strcmp(bullmq_cursor_queue(t, id), queue) == 0)
            return id;
    if (t->n == t->cap)
        bullmq_cursors_reserve(t, t->cap ? t->cap : 16);
    struct bullmq_cursor *cur = &t->c[t->n];
    memset(cur, 0, sizeof *cur);
    cur->name = (uint32_t)t->names.len;
    buf_append(&t->names, queue, len + 1); /* with its NUL: the next name starts after it */
    hashtab_add(index, &p, (uint32_t)t->n, cursor_hash, t);
    return t->n++;
}

void bullmq_cursors_free(struct bullmq_cursors *t)
{
    free(t->c);
    buf_free(&t->names);
    memset(t, 0, sizeof *t);
}

int bullmq_stream_id_parse(const char *s, struct bullmq_stream_id *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    out->ms = strtoull(s, &end, 10);
    if (errno || *end != '-' || end[1] < '0' || end[1] > '9')
        return -1;
    out->seq = strtoull(end + 1, &end, 10);
    return errno || *end ? -1 : 0;
}

void bullmq_stream_id_after(const struct bullmq_stream_id *id, char *out, size_t outsz)
{
    snprintf(out, outsz, "(%llu-%llu", id->ms, id->seq);
}
