/* dlq_batch.c: the list of dead letters a kind read for `qrel dlq` (dlq_kind.h). It lives in the
 * core so that every kind grows and frees it the same way. */
#include "dlq_kind.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct dlq_message *dlq_batch_push(struct dlq_batch *b)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->v = xrealloc(b->v, b->cap * sizeof *b->v);
    }
    struct dlq_message *m = &b->v[b->n++];
    memset(m, 0, sizeof *m);
    m->deliveries = -1;
    m->replays = -1;
    return m;
}

/* A kind's data, by its own free hook when it has one, else as plain malloc'd memory. */
static void kind_data_free(void (*hook)(void *), void *data)
{
    if (hook)
        hook(data);
    else
        free(data);
}

void dlq_batch_clear(struct dlq_batch *b, const struct dlq_kind *k)
{
    for (size_t i = 0; i < b->n; i++) {
        struct dlq_message *m = &b->v[i];
        free(m->message_id);
        free(m->work_id);
        kind_data_free(k ? k->message_free : NULL, m->kind_data);
    }
    b->n = 0;
}

void dlq_batch_free(struct dlq_batch *b, const struct dlq_kind *k)
{
    if (!b)
        return;
    dlq_batch_clear(b, k);
    free(b->v);
    free(b->cursor);
    free(b->dead_letter_queue);
    free(b->origin);
    kind_data_free(k ? k->batch_free : NULL, b->kind_data);
    memset(b, 0, sizeof *b);
}
