/* collector.h: THE contract between the core and a collector kind.
 *
 * A kind is one `const struct collector_kind` (collectors/<kind>/<kind>.c) listed in the registry.
 * configure() parses and validates the kind's own keys (no I/O); collect() talks to the broker
 * and fills a metric set; destroy() frees what the kind's state holds. The core allocates that
 * state (state_size bytes, zeroed, in priv) before configure() and frees it after destroy(), so
 * no kind repeats the allocation or the NULL checks around it. The core owns the common keys
 * (name, kind, timeout) and runs collect() on its own thread under a deadline:
 *   - collect blocks only inside helpers that honour the deadline;
 *   - it may add samples and then fail: the core then discards them and reports up 0;
 *   - after any error it drops its connection and reconnects on the next call;
 *   - one instance never runs twice at once, instances run in parallel: no globals.
 * Secrets are read by configure() from *_file keys or the environment and never put into an
 * error message, a label or a log line. */
#ifndef QREL_COLLECTOR_H
#define QREL_COLLECTOR_H

#include <pthread.h>
#include <stddef.h>

#include "config.h"
#include "deadline.h"
#include "dlq_kind.h"
#include "err.h"
#include "metrics.h"

struct collector;

/* One row of a kind's audit hints: what to change when the audit rule named rule (as the `rule`
 * label spells it, e.g. "no_dead_letter_queue") fires on a queue of this kind, as a clause the
 * rule's message ends with (no trailing period). */
struct audit_hint {
    const char *rule;
    const char *clause;
};

/* What a broker source read from the dead-letter queue of one of its queues, for the core's
 * dead-letter join (exporter/dead_letters.h): the id of each dead letter that carried one. */
struct dead_letter_read {
    char *dead_letter_queue; /* its name (the dead_letter_queue label), malloc'd; NULL: none */
    char **ids;              /* malloc'd, NUL-terminated copies; add with dead_letter_read_add */
    size_t nids, cap;
    size_t read;       /* dead letters read, with an id or without */
    size_t without_id; /* of them, without the id (absent, empty, or holding a NUL byte) */
    size_t total; /* dead letters in the queue, when known (else = read); beyond read: unknown */
    /* By the replay stamp (dlq_kind.h's DLQ_STAMP) of those read, where the kind reads it
     * (stamps set, by dead_letter_read_stamp): never replayed, once, poison (DLQ_POISON or more).
     */
    int stamps;
    size_t replays[3];
};

/* What a work table says of one id (work_done). */
enum dead_letter_work { DL_WORK_UNKNOWN, DL_WORK_NOT_DONE, DL_WORK_DONE };

struct collector_kind {
    const char *name; /* `kind:` in the config and the kind label of qrel_collector_up */
    /* The size of the kind's state: the core callocs it into priv before configure() and frees
     * it after destroy(). 0: the kind allocates and frees priv itself. */
    size_t state_size;
    int (*configure)(struct collector *c, struct cfg_node *map, struct err *e);
    int (*collect)(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e);
    /* Frees what priv holds (all of priv when state_size is 0); called after a failed configure
     * too, never with priv NULL unless state_size is 0. */
    void (*destroy)(struct collector *c);
    /* Optional (NULL when the kind has nothing to verify): checks the configuration against the
     * live server — tables and columns exist, permissions suffice — for --config.check. Errors
     * name the source and the object, never a secret. */
    int (*check)(struct collector *c, const struct deadline *dl, struct err *e);

    /* Optional, the broker side of the dead-letter join: only for kinds that can read their dead
     * letters WITHOUT side effects (no receive count raised, no redelivered flag set), since the
     * exporter reads them on every scrape.
     * dead_letter_validate (at load, no I/O): 0 when queue is one this source watches and has a
     * dead-letter queue for, as far as the configuration tells, and id_field is a form the kind
     * reads; else -1 with e set by cfg_error at the entry's "queue" or "id_field" node.
     * dead_letter_ids: reads at most max dead letters of queue's dead-letter queue, taking each
     * one's id from id_field, under the deadline, on the source's connection. Called with the
     * collector locked (collector_lock), never while collect() runs. */
    int (*dead_letter_validate)(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e);
    int (*dead_letter_ids)(struct collector *c, const char *queue, const char *id_field, size_t max,
                           const struct deadline *dl, struct dead_letter_read *out, struct err *e);

    /* Optional, the other side: a kind that can say which ids are done in a table it reaches.
     * work_table_configure (at load, no I/O) parses the work_table mapping's own keys (the core
     * has read `source`) and calls cfg_finish on it; NULL with e set. work_done sets work[i] for
     * each of the n ids, under the deadline, on the source's connection, with the collector
     * locked; work_table_check verifies the table for --config.check. */
    void *(*work_table_configure)(struct collector *c, struct cfg_node *map, const char *where,
                                  struct err *e);
    int (*work_done)(struct collector *c, void *table, const char *const *ids, size_t n,
                     const struct deadline *dl, enum dead_letter_work *work, struct err *e);
    /* Optional, both or neither: work_done in two halves, so that `qrel dlq` can move one page
     * while the table looks up the next page's ids. work_done_send sends the lookup of the n
     * ids and returns what work_done_collect needs (NULL with e set); work_done_collect, the
     * next call on c, waits for the answer, sets work[i] for each of the n ids and frees it.
     * The collector stays locked from one to the other. */
    void *(*work_done_send)(struct collector *c, void *table, const char *const *ids, size_t n,
                            const struct deadline *dl, struct err *e);
    int (*work_done_collect)(struct collector *c, void *pending, const struct deadline *dl,
                             enum dead_letter_work *work, struct err *e);
    int (*work_table_check)(struct collector *c, void *table, const struct deadline *dl,
                            struct err *e);
    void (*work_table_free)(void *table);
    /* Optional (NULL: no hints): the audit hints, ended by a row whose rule is NULL. Today only
     * no_dead_letter_queue asks, and a kind without a hint for it is not audited by that rule
     * (it has no dead-letter queue to set up). */
    const struct audit_hint *audit_hints;
    /* Optional (NULL: `qrel dlq` cannot read this kind's dead letters): inspect and replay, see
     * dlq_kind.h. A kind offering it also offers dead_letter_validate, which `dead_letters`
     * entries for `qrel dlq` go through even when the kind has no dead_letter_ids (its reads
     * have side effects, so the exporter does not classify it on every scrape). */
    const struct dlq_kind *dlq;
};

struct collector {
    char *name; /* the `source` label */
    const struct collector_kind *kind;
    double timeout;      /* seconds */
    void *priv;          /* the kind's state */
    double min_interval; /* seconds; 0: collect on every scrape. Else a result younger than this
                          * is served again, with qrel_sample_age_seconds saying how old it is */
    pthread_mutex_t use; /* held by whoever talks through the instance: collect() or a join hook */
};

/* A zeroed collector with its lock made; collector_free(c) destroys it whole (NULL is fine). */
struct collector *collector_new(void);
void collector_free(struct collector *c);

/* Allocates c->priv (c->kind->state_size bytes, zeroed) and runs the kind's configure() on map;
 * c->name and c->kind are set. Whatever it returns, collector_release(c) frees it. */
int collector_configure(struct collector *c, struct cfg_node *map, struct err *e);
/* cfg_finish on the source's own mapping, naming it `source "NAME"` in the message: for a kind
 * that judges combinations of its keys once it knows none of them is misspelt (the core calls it
 * again after configure(), which is harmless). */
int collector_finish(const struct collector *c, struct cfg_node *map, struct err *e);
/* Runs the kind's destroy() and frees c->priv, leaving it NULL; the other members are the
 * caller's. Fine after a failed or a missing configure. */
void collector_release(struct collector *c);

/* Takes c->use, waiting no later than the deadline: -1 (ERR_TIMEOUT in e) when it passes first,
 * as when a collection that outlived its scrape still holds the connection. */
int collector_lock(struct collector *c, const struct deadline *dl, struct err *e);
void collector_unlock(struct collector *c);

/* Adds the len bytes at id to r as a dead letter read (r->read counts it): an empty id or one
 * holding a NUL byte counts as without_id (core/dead_letter_read.c). */
void dead_letter_read_add(struct dead_letter_read *r, const char *id, size_t len);
/* Counts one dead letter read by its replay stamp: 0 never, 1 .. DLQ_POISON - 1 once, more
 * poison; a negative one (no whole number) is counted nowhere. */
void dead_letter_read_stamp(struct dead_letter_read *r, long long replays);
void dead_letter_read_free(struct dead_letter_read *r); /* frees the members */

/* collectors/registry.c: the kinds this build has. */
const struct collector_kind *collector_kind_find(const char *name);
size_t collector_kind_count(void);
const struct collector_kind *collector_kind_at(size_t i);

#endif
