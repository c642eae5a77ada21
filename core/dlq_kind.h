/* dlq_kind.h: what a kind offers `qrel dlq` (inspect and replay a dead-letter queue).
 *
 * The exporter only ever reads. `qrel dlq` is the one part of qrel that writes to a broker, and
 * only on `replay --yes`; everything it does goes through these hooks, so the command names no
 * kind. A kind that offers them sets collector_kind.dlq (collector.h); a kind without them cannot
 * be inspected or replayed, and `qrel dlq` says so.
 *
 * The order of a replay is the safety argument, and it is the core's (cli/dlq.c), not the
 * kind's: for each chosen message, requeue() first, remove() only after requeue() succeeded. A
 * crash between the two leaves the message twice (once back on its queue, once still dead), a
 * duplicate that the work table absorbs; never a loss. A second run reads the dead-letter queue
 * again and moves nothing that was removed.
 *
 * Reading is allowed to change something only where the broker cannot read otherwise (SQS raises
 * a receive count and hides the message for a while; Pub/Sub leases it; RabbitMQ marks it
 * redelivered): the kind then says what in read_effect, and release() puts every message that was
 * read and not removed back exactly as it can (visibility 0, ack deadline 0, nack with requeue).
 * The core calls release() on every path out, dry runs and failures included.
 *
 * A replay never strands a message: before anything moves (dry runs too), check_origin() asks
 * whether what is put back on the origin would be consumed there, and a refusal leaves every
 * dead letter dead. Where the broker offers a lock, lock() makes it one replay per dead-letter
 * queue at a time; where it offers an atomic step, move() replaces requeue() + remove(), so that
 * concurrent replays and concurrent deletes cause no duplicate. */
#ifndef QREL_DLQ_KIND_H
#define QREL_DLQ_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "deadline.h"
#include "err.h"

struct collector;
struct cfg_node;

/* Why the dead letters are read: a kind may read differently for a replay (Kafka starts at the
 * offsets its replay group committed, so a rerun skips what it already replayed). */
enum dlq_purpose { DLQ_INSPECT, DLQ_REPLAY };

/* One dead letter as the kind read it. Strings are malloc'd, NUL-terminated; the kind fills what
 * it knows and leaves the rest NULL / -1 / 0. */
struct dlq_message {
    char *message_id;   /* the broker's id, as printed: stream entry id, SQS MessageId,
                         * "partition:offset", Pub/Sub messageId, RabbitMQ message_id or a
                         * position when it has none */
    char *work_id;      /* the value of the entry's id_field; NULL: absent (class unknown) */
    int64_t deliveries; /* how often it was delivered before it died; -1: unknown */
    double dead_since;  /* unix seconds it reached the dead-letter queue (or was first sent,
                         * where that is all the broker keeps); 0: unknown */
    size_t body_bytes;  /* size of the body, for the report */
    int64_t replays;    /* its replay stamp (DLQ_STAMP): how often qrel replayed it before it
                         * died again; 0: never; -1: the kind cannot stamp or read a stamp */
    void *kind_data;    /* the kind's own: body, attributes, receipt handle, …; freed by
                         * dlq_kind.message_free */
};

/* What read() found. The kind fills it; the core frees it with dlq_batch_free. */
struct dlq_batch {
    struct dlq_message *v; /* append with dlq_batch_push */
    size_t n, cap;
    size_t total;            /* messages in the dead-letter queue when the broker says (else n) */
    char *dead_letter_queue; /* its name, malloc'd */
    char *origin;    /* where a replay puts a message back (queue, stream, topic), malloc'd */
    void *kind_data; /* the kind's state across read/requeue/remove/release (e.g. a
                      * consumer), freed by dlq_kind.batch_free */
    /* read_page's: where the next page starts, the kind's own (freed with free()), and whether
     * the page just read was the last one. */
    void *cursor;
    int end;
};

/* The replay stamp. A replay marks each message it puts back with how often qrel has replayed it,
 * the message's replays + 1 (1 when it had none), in the kind's own way: a header (RabbitMQ,
 * Kafka), a message attribute (SQS, Pub/Sub), a field (Redis streams), a key of the job hash or
 * payload where the framework keeps keys it does not know (Sidekiq, RQ, BullMQ, the job runners).
 * read() fills dlq_message.replays from it. A dead letter that carries a stamp died again after a
 * replay; one replayed DLQ_POISON times or more is a poison message: replaying it again is
 * unlikely to help, and `qrel dlq inspect` and `qrel check` name it. */
#define DLQ_STAMP "qrel-replayed"
#define DLQ_POISON 2

/* One message's outcome in dlq_kind.move_window. */
struct dlq_move_outcome {
    int rc; /* as move(): 0 moved, 1 gone, 2 in both places (e set), -1 with e set */
    struct err e;
};

struct dlq_kind {
    /* Reads at most max dead letters of queue's dead-letter queue (the one the source already
     * knows: dead_letter_stream, RedrivePolicy, dead_letter_topic, …), taking each one's work id
     * from id_field as the kind's dead_letter_validate accepted it. Under dl, with the collector
     * locked. 0, or -1 with e set (nothing left held: the kind releases what it read). */
    int (*read)(struct collector *c, const char *queue, const char *id_field, size_t max,
                enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                struct err *e);
    /* Optional, only for a kind whose reading changes nothing (no release): read() a page at a
     * time, so that `qrel dlq` holds one page, not every dead letter. The first call gets a
     * zeroed b and fills dead_letter_queue, origin and total (what is in the dead-letter queue
     * as the read begins) as read() does; every call appends at most max messages to b (which
     * the engine has emptied of the previous page's, keeping the rest of b) from b->cursor on,
     * and sets b->end once nothing is left. A run reads only what was in the dead-letter queue
     * when its first page was read: what dies during the run (a replayed message dead again)
     * is left for the next run. 0, or -1 with e set. */
    int (*read_page)(struct collector *c, const char *queue, const char *id_field, size_t max,
                     enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *b,
                     struct err *e);
    /* Puts m back on b->origin with its original body and attributes / headers / fields (SQS
     * FIFO: its group id and a fresh dedup id), stamped DLQ_STAMP = replays + 1 where the kind
     * can stamp. Must not remove it from the dead-letter queue. move() stamps the same way. */
    int (*requeue)(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                   const struct deadline *dl, struct err *e);
    /* Removes m from the dead-letter queue (XDEL, DeleteMessage, ack; Kafka commits its offset
     * in the replay group). Called only after requeue(m) returned 0. */
    int (*remove)(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                  const struct deadline *dl, struct err *e);
    /* Optional (NULL: reading changed nothing): puts back every message of b that was read and
     * not removed, as it was (SQS visibility 0, Pub/Sub ack deadline 0, AMQP nack + requeue). */
    int (*release)(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                   struct err *e);
    /* Optional: is b->origin there and consumed? (Redis: the stream exists and has a group;
     * Pub/Sub: the topic exists and has a subscription; …). 0: go on; -1 with e set: the replay
     * is refused with e, every dead letter left dead. Called once, before the first move and in
     * dry runs. ERR_CONFIG in e: a configuration error (exit 2); any other: a refusal (exit 1). */
    int (*check_origin)(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                        struct err *e);
    /* Optional, both or neither: one replay per dead-letter queue at a time. lock() takes the
     * broker's lock for hold seconds (it must expire, so that a killed replay does not block the
     * next one for ever; a kind renews it as it moves), -1 with e set when another replay holds
     * it; unlock() gives it back at the end (its failure is only logged: the lock expires). Only
     * with --yes, before check_origin(). The kind keeps what it needs in b->kind_data. */
    int (*lock)(struct collector *c, struct dlq_batch *b, double hold, const struct deadline *dl,
                struct err *e);
    int (*unlock)(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                  struct err *e);
    /* Optional, instead of requeue() + remove(): moves m in one atomic step (it is back on the
     * origin if and only if it left the dead-letter queue). 0: moved; 1: m was no longer in the
     * dead-letter queue (another replay or client removed it) and nothing was done; 2 with e
     * set: put back, but the broker refused to remove it from the dead-letter queue, so it is in
     * both (a permission to add without one to delete); -1 with e set: not put back. A timeout
     * leaves it moved or not, never both. */
    int (*move)(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                const struct deadline *dl, struct err *e);
    /* Optional, with move: moves the n messages m[0..n) in one round trip, each by the same
     * atomic step as move() (one request each, sent together before any reply is read, or one
     * request that moves them all and answers for each: either way each message keeps its own
     * outcome). out[i] is m[i]'s: rc as move()
     * returns it, and e when rc is -1. Returns how many outcomes it filled: n when every reply came
     * back; fewer when the round trip failed, e then saying why, and each message from there on
     * may have moved (whole) or not. */
    size_t (*move_window)(struct collector *c, struct dlq_batch *b, struct dlq_message *const *m,
                          size_t n, const struct deadline *dl, struct dlq_move_outcome *out,
                          struct err *e);
    void (*message_free)(void *kind_data); /* NULL: kind_data is plain malloc'd memory or NULL */
    void (*batch_free)(void *kind_data);   /* likewise for dlq_batch.kind_data */
    /* Static texts for the report and the docs. read_effect: what reading leaves changed even
     * after release (NULL: nothing), e.g. "each read raises the message's
     * ApproximateReceiveCount by one". cannot_replay: NULL when requeue/remove work; else why
     * not, and replay refuses with it (requeue and remove may then be NULL). */
    const char *read_effect;
    const char *cannot_replay;
    /* 1: read() fills dlq_message.replays from the replay stamp, which requeue()/move() write;
     * then the exporter's join through dlq_dead_letter_ids reports stamps, zeros included. */
    int stamps;
    /* NULL, or the dead_letter_queue label the kind's collection gives this dead-letter queue
     * where it is not read()'s dead_letter_queue (rq's registry rq:failed:emails is "failed"):
     * dlq_dead_letter_ids labels the exporter's join with it, so the series line up. */
    const char *join_label;
};

struct dead_letter_read;
/* collector_kind.dead_letter_ids for a kind whose dlq read changes nothing (read_effect NULL):
 * the exporter's join reads the same dead letters, the same way, as `qrel dlq inspect`. out's
 * dead_letter_queue is the kind's join_label, else the read's. */
int dlq_dead_letter_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                        const struct deadline *dl, struct dead_letter_read *out, struct err *e);

/* Appends a zeroed message to b (deliveries -1) and returns it for the kind to fill. */
struct dlq_message *dlq_batch_push(struct dlq_batch *b);
/* Frees b's members, each message's kind_data through k (k may be NULL when there is none). */
void dlq_batch_free(struct dlq_batch *b, const struct dlq_kind *k);
/* Frees b's messages only (b->n becomes 0), keeping the rest for the next page. */
void dlq_batch_clear(struct dlq_batch *b, const struct dlq_kind *k);

#endif
