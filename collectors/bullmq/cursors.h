/* cursors.h: where each queue's `events` stream was read up to, kept by kind bullmq between
 * scrapes (stalled events are counted as they arrive), and the stream ids it is kept in.
 *
 * One entry per queue ever read: at 10,000 queues this table is most of what the kind keeps
 * between scrapes, so it holds no allocation per queue: the names are back to back in one
 * buffer and the stream id is kept as its two numbers (a name and an id copied apart were 88
 * bytes a queue with malloc's own, against 32 + the name now). */
#ifndef QREL_BULLMQ_CURSORS_H
#define QREL_BULLMQ_CURSORS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hashtab.h"

/* A stream entry id, "<ms>-<seq>" as Redis writes it. */
struct bullmq_stream_id {
    unsigned long long ms, seq;
};

struct bullmq_cursor {
    uint32_t name; /* offset of the queue's name in the table's names */
    int has_last;  /* 0 until the first scrape has found the stream's end */
    struct bullmq_stream_id last;
    double stalled_total;
};

struct bullmq_cursors {
    struct bullmq_cursor *c;
    size_t n, cap;
    struct buf names; /* every queue's name, each NUL-terminated, back to back */
};

/* The queue of cursor i. */
const char *bullmq_cursor_queue(const struct bullmq_cursors *t, size_t i);
/* Room for n more cursors, so that adding them does not move the table n times. */
void bullmq_cursors_reserve(struct bullmq_cursors *t, size_t n);
/* Every cursor of t into index (empty), by queue name. */
void bullmq_cursors_index(const struct bullmq_cursors *t, struct hashtab *index);
/* The cursor of queue, found through index, or added to t and index when it is new. */
size_t bullmq_cursor_for(struct bullmq_cursors *t, struct hashtab *index, const char *queue);
void bullmq_cursors_free(struct bullmq_cursors *t);

/* "<ms>-<seq>" into *out: 0, or -1 when s is no stream id. */
int bullmq_stream_id_parse(const char *s, struct bullmq_stream_id *out);
/* "(<ms>-<seq>" (XRANGE's exclusive start) into out, which has room for 48 bytes. */
void bullmq_stream_id_after(const struct bullmq_stream_id *id, char *out, size_t outsz);

#endif
