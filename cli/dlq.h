/* dlq.h: the engine of `qrel dlq`: read one queue's dead letters through its kind's hooks
 * (dlq_kind.h), classify them against the work table of their `dead_letters` entry, and replay
 * the chosen ones safely.
 *
 * A dead-letter queue holds what the broker gave up on, which is not the work that did not
 * happen: after a lease-expiry storm it is full of messages whose effect was made, often several
 * times. So inspect answers "which of these were done?" with the same work_done hook the
 * exporter's join uses, and replay moves only what the operator chose (by default the not-done
 * ones), each message put back before it is removed (dlq_kind.h says why that order is safe).
 *
 * The engine names no kind and prints nothing: the command line (cli.c) parses flags and the
 * report (dlq_report.h) writes what the engine found. The selection is pure, for unit tests. */
#ifndef QREL_DLQ_H
#define QREL_DLQ_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "dead_letters.h"
#include "deadline.h"
#include "dlq_kind.h"
#include "err.h"
#include "sources.h"

/* Which classes a replay moves (--only): not_done, unknown, or all three (done included). */
enum dlq_only { DLQ_ONLY_NOT_DONE, DLQ_ONLY_UNKNOWN, DLQ_ONLY_ALL };

/* What the selection decided for one dead letter, and why. */
enum dlq_choice {
    DLQ_MOVE,          /* chosen: replay moves it (a dry run says it would) */
    DLQ_SKIP_DONE,     /* its work is done: a replay would repeat it */
    DLQ_SKIP_NOT_DONE, /* not done, but --only=unknown */
    DLQ_SKIP_UNKNOWN,  /* no id, or the table cannot tell, and --only=not_done */
    DLQ_SKIP_LIMIT,    /* of the chosen class, beyond --limit */
    DLQ_SKIP_POISON,   /* replayed DLQ_POISON times or more already, and no --include-poison */
    DLQ_CHOICE_COUNT
};

/* What happened to a dead letter in a replay. */
enum dlq_fate {
    DLQ_FATE_SKIPPED,     /* not chosen (dlq_choice says why) */
    DLQ_FATE_WOULD_MOVE,  /* chosen, dry run */
    DLQ_FATE_MOVED,       /* requeued, then removed */
    DLQ_FATE_FAILED,      /* requeue or remove failed (error[i] says which and why) */
    DLQ_FATE_NOT_REACHED, /* chosen, but the run stopped first (signal, failures in a row) */
    DLQ_FATE_UNCERTAIN,   /* the requeue (or atomic move) timed out or lost its connection: the
                           * broker may have applied it; still dead unless an atomic move ran */
    DLQ_FATE_GONE,        /* no longer in the dead-letter queue when its atomic move ran (another
                           * replay or client removed it): not put back */
    DLQ_FATE_COUNT
};

/* Parses --only's value. 0, or -1 with e set (ERR_CONFIG). */
int dlq_parse_only(const char *s, enum dlq_only *out, struct err *e);
const char *dlq_only_name(enum dlq_only o);
const char *dlq_work_name(enum dead_letter_work w); /* "done", "not_done", "unknown" */

/* Whether m is a poison message: its replay stamp says qrel replayed it DLQ_POISON times or more
 * and it died again each time. */
int dlq_is_poison(const struct dlq_message *m);

/* The selection (pure): choice[i] for each of the n dead letters by its class work[i], in
 * order, at most limit moved (0: no limit). A poison message (v[i], when v is not NULL) of a
 * chosen class is skipped unless include_poison; it does not count towards limit. Returns how
 * many were chosen (DLQ_MOVE). */
size_t dlq_select(const enum dead_letter_work *work, const struct dlq_message *v, size_t n,
                  enum dlq_only only, int include_poison, size_t limit, enum dlq_choice *choice);
/* The same for a later page of a run: already were chosen on the pages before (limit counts
 * them too). */
size_t dlq_select_from(const enum dead_letter_work *work, const struct dlq_message *v, size_t n,
                       enum dlq_only only, int include_poison, size_t limit, size_t already,
                       enum dlq_choice *choice);

/* The `dead_letters` entry of source and queue in s, found for `qrel dlq`. -1 with e set
 * (ERR_CONFIG) when there is none (the message lists the entries there are) or when its kind
 * offers no dlq hooks (the message names the kinds that do). */
int dlq_find(const struct sources *s, const char *source, const char *queue,
             struct dead_letter_join **out, struct err *e);

/* What was read and how it classified. The engine fills it; dlq_read_free frees it (releasing
 * first, if nobody did). */
struct dlq_read {
    struct dead_letter_join *join; /* not owned */
    const struct dlq_kind *kind;
    struct dlq_batch batch;
    enum dead_letter_work *work; /* per message of batch */
    double timeout;              /* seconds: each hook call after the read gets this long */
    int released;                /* release() was called (or the kind has none) */
    double lock_hold;            /* seconds the replay lock is taken (and renewed) for */
    /* replay's, per message (NULL before dlq_replay) */
    enum dlq_choice *choice;
    enum dlq_fate *fate;
    char **error;            /* malloc'd, for DLQ_FATE_FAILED */
    size_t pages;            /* pages read so far (1 for a whole read) */
    size_t read_so_far;      /* dead letters read so far, this page's included */
    struct dlq_ahead *ahead; /* the next page, read ahead (dlq_read_ahead), or NULL */
};

/* Reads at most max dead letters of j's queue (purpose tells the kind why) under dl with the
 * broker collector locked, then asks the work table under dl with the work collector locked.
 * timeout is what each later hook call (requeue, remove, release) is given. 0, or -1 with e set;
 * on failure nothing is held (what was read has been released). */
int dlq_read(struct dead_letter_join *j, size_t max, enum dlq_purpose purpose,
             const struct deadline *dl, double timeout, struct dlq_read *out, struct err *e);

/* Reading by pages, for a kind with read_page (dlq_run.h): dlq_read_start sets out up without
 * reading; each dlq_read_next drops the page before (its messages, work, choices, fates,
 * errors), reads the next one of at most max dead letters under dl with the broker collector
 * locked and classifies it (one work_done call a page); r->batch.end once the last page was
 * read. 0, or -1 with e set (what earlier pages did stands). */
void dlq_read_start(struct dead_letter_join *j, double timeout, struct dlq_read *out);
int dlq_read_next(struct dlq_read *r, size_t max, enum dlq_purpose purpose,
                  const struct deadline *dl, struct err *e);

/* Reading ahead, so that the work table looks up the next page while this one moves (a replay
 * whose pace would otherwise be the sum of both). dlq_can_read_ahead: r's kind reads by pages
 * and its work table is on a source of its own whose kind can send a lookup without waiting
 * (collector_kind.work_done_send). dlq_read_ahead reads the next page of at most max under dl
 * with the broker collector locked and sends its lookup, leaving r's page as it is (r->pages,
 * r->read_so_far and r->batch.end count the page read ahead); the work collector stays locked
 * until dlq_take_ahead, which drops r's page, makes the page read ahead r's and waits under dl
 * for its classes: 0, or -1 with e set as dlq_read_next would have (the read's failure kept
 * until then). Two pages are held at most. dlq_drop_ahead collects and drops both, and must
 * come before dlq_read_free (which knows nothing of the page ahead). */
struct dlq_ahead;
/* Empties r of its page: the messages and what the engine kept per message. */
void dlq_page_clear(struct dlq_read *r);
int dlq_can_read_ahead(const struct dlq_read *r);
void dlq_read_ahead(struct dlq_read *r, size_t max, enum dlq_purpose purpose,
                    const struct deadline *dl);
int dlq_take_ahead(struct dlq_read *r, const struct deadline *dl, struct err *e);
void dlq_drop_ahead(struct dlq_read *r);

/* Dead letters by their replay stamp (dlq_message.replays). */
enum dlq_replays {
    DLQ_REPLAYS_NEVER,   /* 0: no stamp, never replayed by qrel */
    DLQ_REPLAYS_ONCE,    /* 1: replayed once, died again */
    DLQ_REPLAYS_POISON,  /* DLQ_POISON or more: a poison message */
    DLQ_REPLAYS_UNKNOWN, /* -1: the kind cannot stamp */
    DLQ_REPLAYS_COUNT
};
enum dlq_replays dlq_replays_of(const struct dlq_message *m);
const char *dlq_replays_name(enum dlq_replays r); /* "never", "once", "poison", "unknown" */

/* What inspect reports, from a read (pure). */
#define DLQ_HIST_BUCKETS 8
struct dlq_summary {
    size_t n[3];        /* indexed by enum dead_letter_work: read messages per class */
    size_t without_id;  /* of the unknown: no id field at all */
    size_t read, total; /* total: in the queue when the broker says (>= read) */
    int has_dead_since; /* any message with a dead_since */
    double oldest, newest;
    int has_deliveries; /* any message with a delivery count */
    int64_t min_deliveries, max_deliveries;
    size_t deliveries_unknown;
    size_t hist[DLQ_HIST_BUCKETS];     /* by dlq_hist_bounds */
    size_t replays[DLQ_REPLAYS_COUNT]; /* by the replay stamp, enum dlq_replays */
};
void dlq_summarize(const struct dlq_message *v, const enum dead_letter_work *work, size_t n,
                   size_t total, struct dlq_summary *out);
/* Adds a page of n read dead letters to out (zeroed before the first); out->total is at least
 * what was read, the caller raises it to what the broker said. */
void dlq_summary_add(struct dlq_summary *out, const struct dlq_message *v,
                     const enum dead_letter_work *work, size_t n);
/* Bucket i of the delivery histogram holds counts from *lo to *hi (hi -1: and above). */
void dlq_hist_bounds(size_t i, int64_t *lo, int64_t *hi);

/* Moves sent in one round trip when the kind offers move_window and no --rate paces the
 * replay: the broker, not the round trip, then sets the pace. Each move stays atomic and keeps
 * its own outcome; a stop (signal, failures in a row) takes effect between two windows, so up to
 * this many moves are already sent when it comes. */
#define DLQ_MOVE_WINDOW 64

/* What a replay did. */
struct dlq_replay_opts {
    enum dlq_only only;
    size_t limit;                 /* 0: none */
    double rate;                  /* messages per second; 0: as fast as the broker answers */
    int yes;                      /* 0: dry run, nothing is called but read and release */
    int include_poison;           /* --include-poison: move poison messages of a chosen class too */
    size_t max_failures_in_a_row; /* stop after this many (0: never) */
    volatile sig_atomic_t *stop;  /* set by a signal handler: stop before the next message */
};
struct dlq_replay_result {
    size_t chosen;
    size_t poison_moved; /* of the moved (or, in a dry run, would move), how many were poison */
    size_t n[DLQ_FATE_COUNT];
    size_t skipped[DLQ_CHOICE_COUNT];
    int interrupted;            /* *stop was set before every chosen message was tried */
    int stopped_after_failures; /* max_failures_in_a_row reached */
};

/* Selects; then, when anything was chosen, takes the kind's replay lock (with yes) and asks
 * check_origin (dry runs too); then (with yes) moves each chosen message in order: move(), or
 * requeue() and remove() only if requeue() succeeded, pacing at rate, each call under r->timeout
 * with the broker locked (unpaced, an atomic kind's moves go DLQ_MOVE_WINDOW to a round trip
 * through move_window, each window under r->timeout); a failure is recorded in r->fate / r->error
 * and the run goes on with the next. Unlocks, and always releases before it returns. 0 when the
 * replay ran (even if messages failed: see res), -1 with e set when it was refused: the kind cannot
 * replay (cannot_replay, ERR_CONFIG), another replay holds the lock, or the origin would strand
 * what is put back; nothing moved then. */
int dlq_replay(struct dlq_read *r, const struct dlq_replay_opts *o, struct dlq_replay_result *res,
               struct err *e);

/* A replay over pages: what carries from one page to the next (zeroed before the first). */
struct dlq_replay_state {
    int guarded;        /* the lock was taken and the origin checked */
    int locked;         /* the kind's replay lock is held */
    size_t in_a_row;    /* failures in a row so far */
    size_t tried;       /* paced moves tried so far */
    int64_t paced_from; /* monotonic ms of the first paced move */
};
/* dlq_replay on one page of r: selects (counting what earlier pages chose towards limit), takes
 * the lock and checks the origin before the run's first chosen message, moves this page's
 * chosen ones; adds to res (zeroed before the first page). Neither unlocks nor releases:
 * dlq_replay_finish unlocks after the last page. 0, or -1 with e set when refused (nothing
 * moved, by this page or any before). */
int dlq_replay_page(struct dlq_read *r, const struct dlq_replay_opts *o,
                    struct dlq_replay_state *st, struct dlq_replay_result *res, struct err *e);
/* dlq_replay_page in two steps, so that the next page can be read between them: choose
 * selects, guards (-1 with e set when refused) and sets each message's fate to be; move moves
 * the chosen and adds the fates to res. */
int dlq_replay_choose(struct dlq_read *r, const struct dlq_replay_opts *o,
                      struct dlq_replay_state *st, struct dlq_replay_result *res, struct err *e);
void dlq_replay_move(struct dlq_read *r, const struct dlq_replay_opts *o,
                     struct dlq_replay_state *st, struct dlq_replay_result *res);
void dlq_replay_finish(struct dlq_read *r, struct dlq_replay_state *st);

/* Puts back what was read and not removed (kind->release), once; a no-op the second time and
 * for kinds without release. 0, or -1 with e set. */
int dlq_release(struct dlq_read *r, struct err *e);
void dlq_read_free(struct dlq_read *r); /* releases if still needed, then frees the members */

/* "a, b" of the kinds that offer dlq hooks (or that can replay, when replay is set). malloc'd. */
char *dlq_kinds_that_can(int replay);

#endif
