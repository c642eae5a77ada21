/* dlq_ahead.c: reading the next page ahead (dlq.h's dlq_read_ahead), so that a replay's work
 * table looks up page k + 1 while the broker moves page k. Measured on 100,000 dead letters and a
 * work table of 10M rows, the lookup was the largest part of a page's time (bench/dlq.sh's split),
 * and a page's windows had to wait for it. Only the reading moves earlier: the order of the moves,
 * the lock and the report stay the engine's (dlq.c, dlq_run.c). */
#include "dlq.h"

#include <stdlib.h>

#include "alloc.h"

/* The page read ahead: its messages (out of r->batch, which keeps the cursor and the names), its
 * classes once collected, and its lookup in flight on the work table's source, whose collector
 * stays locked until dlq_take_ahead collects it. rc and e: the read's or the send's failure. */
struct dlq_ahead {
    struct dlq_message *v;
    size_t n, cap;
    enum dead_letter_work *work;
    size_t *at, nids; /* the message of each id sent */
    void *pending;    /* the work table's lookup, NULL when none was sent */
    int rc;
    struct err e;
};

int dlq_can_read_ahead(const struct dlq_read *r)
{
    const struct dead_letter_join *j = r->join;
    /* On the broker's own connection the lookup would wait for the moves anyway. */
    return r->kind->read_page && j->work != j->broker && j->work->kind->work_done_send &&
           j->work->kind->work_done_collect;
}

/* Swaps the messages of r's batch with those kept in a. */
static void swap_messages(struct dlq_read *r, struct dlq_ahead *a)
{
    struct dlq_message *v = r->batch.v;
    size_t n = r->batch.n, cap = r->batch.cap;
    r->batch.v = a->v;
    r->batch.n = a->n;
    r->batch.cap = a->cap;
    a->v = v;
    a->n = n;
    a->cap = cap;
}

/* Sends the lookup of the ids of the page in r->batch (its messages are a's to be). */
static int send_lookup(struct dlq_read *r, struct dlq_ahead *a, const struct deadline *dl,
                       struct err *e)
{
    struct dead_letter_join *j = r->join;
    const struct dlq_batch *b = &r->batch;
    a->work = xcalloc(b->n ? b->n : 1, sizeof *a->work);
    a->at = xcalloc(b->n ? b->n : 1, sizeof *a->at);
    const char **ids = xcalloc(b->n ? b->n : 1, sizeof *ids);
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].work_id && *b->v[i].work_id) {
            a->at[a->nids] = i;
            ids[a->nids++] = b->v[i].work_id;
        }
    int rc = 0;
    if (a->nids) {
        rc = collector_lock(j->work, dl, e);
        if (rc == 0) {
            a->pending = j->work->kind->work_done_send(j->work, j->table, ids, a->nids, dl, e);
            if (!a->pending) {
                collector_unlock(j->work);
                rc = -1;
            }
        }
        if (rc)
            err_prefix(e, "work_table source \"%s\"", j->work->name);
    }
    free(ids);
    return rc;
}

void dlq_read_ahead(struct dlq_read *r, size_t max, enum dlq_purpose purpose,
                    const struct deadline *dl)
{
    struct dead_letter_join *j = r->join;
    struct dlq_ahead *a = xcalloc(1, sizeof *a);
    err_clear(&a->e);
    r->ahead = a;
    swap_messages(r, a); /* this page's aside, an empty one to read into */
    if (collector_lock(j->broker, dl, &a->e)) {
        a->rc = err_prefix(&a->e, "source \"%s\"", j->broker->name);
    } else {
        a->rc = r->kind->read_page(j->broker, j->queue, j->id_field, max, purpose, dl, &r->batch,
                                   &a->e);
        collector_unlock(j->broker);
        if (a->rc)
            err_prefix(&a->e, "source \"%s\"", j->broker->name);
    }
    if (a->rc == 0) {
        r->pages++;
        r->read_so_far += r->batch.n;
        if (r->batch.total < r->read_so_far)
            r->batch.total = r->read_so_far;
        a->rc = send_lookup(r, a, dl, &a->e);
    }
    swap_messages(r, a); /* this page back, the next one aside */
}

int dlq_take_ahead(struct dlq_read *r, const struct deadline *dl, struct err *e)
{
    struct dlq_ahead *a = r->ahead;
    struct dead_letter_join *j = r->join;
    r->ahead = NULL;
    dlq_page_clear(r);
    swap_messages(r, a);
    r->work = a->work ? a->work : xcalloc(r->batch.n ? r->batch.n : 1, sizeof *r->work);
    int rc = a->rc;
    if (rc)
        *e = a->e;
    if (a->pending) {
        enum dead_letter_work *got = xcalloc(a->nids, sizeof *got);
        rc = j->work->kind->work_done_collect(j->work, a->pending, dl, got, e);
        collector_unlock(j->work);
        if (rc)
            err_prefix(e, "work_table source \"%s\"", j->work->name);
        for (size_t k = 0; rc == 0 && k < a->nids; k++)
            r->work[a->at[k]] = got[k];
        free(got);
    }
    free(a->v); /* the buffer of the page just cleared */
    free(a->at);
    free(a);
    return rc;
}

void dlq_drop_ahead(struct dlq_read *r)
{
    if (!r->ahead)
        return;
    struct deadline dl = deadline_in(r->timeout);
    struct err e;
    err_clear(&e);
    dlq_take_ahead(r, &dl, &e);
    dlq_page_clear(r);
}
