/* dead_letters.h: the top-level `dead_letters:` list, classification of dead letters as a join
 * between two sources of one file.
 *
 * A dead-letter queue holds what consumers gave up on, which is not the work that did not happen:
 * after a lease-expiry storm it is full of messages whose effect (the email) was made, often
 * several times, and a replay would make it again. The application's dedup or claim table knows.
 * Each entry names a broker source and one of its queues, where a dead letter carries its id
 * (id_field), and a work table reached by another source of the file:
 *
 *   dead_letters:
 *     - source: shop-redis
 *       queue: orders
 *       id_field: order_id
 *       max_entries: 10000        # optional: dead letters read per scrape, the rest unknown
 *       work_table: {source: shop-db, table: confirmation_claims, id_column: order_id,
 *                    done_column: sent_at}
 *
 * On every scrape, after the sources' collections, the core asks the broker source for the ids
 * of the queue's dead letters (collector_kind.dead_letter_ids) and the work table's source which
 * of them are done (collector_kind.work_done), both under the broker source's scrape deadline and
 * each with its collector locked, and adds
 *   qrel_dead_letter_classified_messages{queue, dead_letter_queue, work=done|not_done|unknown}
 * with the broker source's labels, and, where the kind reads the replay stamp `qrel dlq` writes,
 *   qrel_dead_letter_replayed_messages{queue, dead_letter_queue, replays=never|once|poison}. A
 * failed join is logged, leaves those three series out and counts
 * qrel_dead_letter_classify_errors_total{queue, reason}; the sources' own series and
 * qrel_collector_up are untouched. Kinds are found by their hooks, never by name. */
#ifndef QREL_DEAD_LETTERS_H
#define QREL_DEAD_LETTERS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "collector.h"
#include "config.h"
#include "deadline.h"
#include "err.h"
#include "metrics.h"

#define DEAD_LETTERS_DEFAULT_MAX_ENTRIES 10000

struct dead_letter_join {
    struct collector *broker; /* the sources' own, not owned */
    struct collector *work;
    char *queue;
    char *id_field;
    size_t max_entries;
    void *table; /* the work kind's, from work_table_configure */
    /* run state, across scrapes */
    pthread_mutex_t mu;
    double errors[ERR_CODE_COUNT];
    struct log_limit log_limit; /* a new error at once, the same once a minute */
};

struct dead_letters {
    struct dead_letter_join *v;
    size_t n;
};

/* Parses the `dead_letters` list (NULL: none) against the n sources already loaded (items, the
 * collectors of the file in order; the joins point at them and never free them). Errors are
 * "file:line:col: ...": an unknown source, a broker source whose kind can neither read its dead
 * letters without side effects (dead_letter_ids) nor for `qrel dlq` (dlq), a work_table source
 * whose kind cannot tell work done, a queue the source does not watch (as far as its configuration
 * tells), the same queue twice. */
int dead_letters_load(struct dead_letters *d, struct cfg_node *list, struct collector *const *items,
                      size_t n, struct err *e);
void dead_letters_free(struct dead_letters *d); /* the members; NULL is fine */

/* The split (pure): each id by what work says of it, the dead letters without an id or beyond
 * those read counted as unknown. */
struct dead_letter_split {
    double done;
    double not_done;
    double unknown;
};
void dead_letter_split_of(const struct dead_letter_read *r, const enum dead_letter_work *work,
                          struct dead_letter_split *out);

/* Runs one join under dl and returns its series (never NULL; the caller frees it): the split on
 * success, the error counters always. */
struct metric_set *dead_letters_run(struct dead_letter_join *j, const struct deadline *dl);

/* For --config.check: each work table against its live database, under its source's timeout.
 * Errors name the broker source and queue. */
int dead_letters_check(const struct dead_letters *d, struct err *e);

#endif
