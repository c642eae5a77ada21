/* dead_letter_read.c: the list of ids a broker kind read from a dead-letter queue for the
 * core's dead-letter join (collector.h), grown and freed the same way by every kind, and the
 * count of them by replay stamp, bucketed the same way by every kind. */
#include "collector.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dlq_kind.h"

void dead_letter_read_add(struct dead_letter_read *r, const char *id, size_t len)
{
    r->read++;
    /* An id with a NUL byte could not be passed on as text: it is nobody's id. */
    if (!id || len == 0 || memchr(id, '\0', len)) {
        r->without_id++;
        return;
    }
    if (r->nids == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->ids = xrealloc(r->ids, r->cap * sizeof *r->ids);
    }
    r->ids[r->nids++] = xstrndup(id, len);
}

void dead_letter_read_stamp(struct dead_letter_read *r, long long replays)
{
    r->stamps = 1;
    if (replays >= 0)
        r->replays[replays == 0 ? 0 : replays < DLQ_POISON ? 1 : 2]++;
}

void dead_letter_read_free(struct dead_letter_read *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nids; i++)
        free(r->ids[i]);
    free(r->ids);
    free(r->dead_letter_queue);
    memset(r, 0, sizeof *r);
}
