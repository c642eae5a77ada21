/* dead_letter_dlq.c: the exporter's dead-letter join read through a kind's `qrel dlq` read
 * (dlq_kind.h), for a kind whose read changes nothing. One reader then serves both: the ids the
 * exporter classifies on every scrape are the ones `qrel dlq inspect` lists, found the same way. */
#include "dlq_kind.h"

#include <string.h>

#include "alloc.h"
#include "collector.h"

int dlq_dead_letter_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                        const struct deadline *dl, struct dead_letter_read *out, struct err *e)
{
    const struct dlq_kind *k = c->kind->dlq;
    /* A read with a side effect (a receive count raised, a lease taken) is no scrape's to do. */
    if (!k || k->read_effect)
        return err_set(e, ERR_INTERNAL,
                       "kind %s cannot read its dead letters without a side effect", c->kind->name);
    struct dlq_batch b;
    memset(&b, 0, sizeof b);
    if (k->read(c, queue, id_field, max, DLQ_INSPECT, dl, &b, e))
        return -1;
    out->stamps = k->stamps;
    for (size_t i = 0; i < b.n; i++) {
        const char *id = b.v[i].work_id;
        dead_letter_read_add(out, id, id ? strlen(id) : 0);
        if (k->stamps)
            dead_letter_read_stamp(out, b.v[i].replays);
    }
    out->total = b.total > b.n ? b.total : b.n;
    if (k->join_label) {
        out->dead_letter_queue = xstrdup(k->join_label);
    } else {
        out->dead_letter_queue = b.dead_letter_queue;
        b.dead_letter_queue = NULL;
    }
    dlq_batch_free(&b, k);
    return 0;
}
