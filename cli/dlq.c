/* dlq.c: the engine of `qrel dlq` (see dlq.h for why and what).
 *
 * The order of a replay is the safety argument and lives here, not in the kinds: requeue()
 * first, remove() only after it succeeded, release() on every way out. Every hook call holds the
 * broker collector's lock, as the exporter's join does, so a kind's connection is never used by
 * two callers at once even if the engine is one day run inside the exporter. */
#include "dlq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "alloc.h"
#include "buf.h"

/* ---- names ---- */

int dlq_parse_only(const char *s, enum dlq_only *out, struct err *e)
{
    static const char *const names[] = {"not_done", "unknown", "all"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum dlq_only)i;
            return 0;
        }
    return err_set(e, ERR_CONFIG, "--only: want not_done, unknown or all, got \"%.100s\"", s);
}

const char *dlq_only_name(enum dlq_only o)
{
    return o == DLQ_ONLY_ALL ? "all" : o == DLQ_ONLY_UNKNOWN ? "unknown" : "not_done";
}

const char *dlq_work_name(enum dead_letter_work w)
{
    return w == DL_WORK_DONE ? "done" : w == DL_WORK_NOT_DONE ? "not_done" : "unknown";
}

/* ---- selection (pure) ---- */

int dlq_is_poison(const struct dlq_message *m)
{
    return m->replays >= DLQ_POISON;
}

enum dlq_replays dlq_replays_of(const struct dlq_message *m)
{
    if (m->replays < 0)
        return DLQ_REPLAYS_UNKNOWN;
    return m->replays == 0    ? DLQ_REPLAYS_NEVER
           : dlq_is_poison(m) ? DLQ_REPLAYS_POISON
                              : DLQ_REPLAYS_ONCE;
}

const char *dlq_replays_name(enum dlq_replays r)
{
    static const char *const names[DLQ_REPLAYS_COUNT] = {"never", "once", "poison", "unknown"};
    return names[r];
}

size_t dlq_select_from(const enum dead_letter_work *work, const struct dlq_message *v, size_t n,
                       enum dlq_only only, int include_poison, size_t limit, size_t already,
                       enum dlq_choice *choice)
{
    size_t chosen = 0;
    for (size_t i = 0; i < n; i++) {
        enum dlq_choice c = DLQ_MOVE;
        if (work[i] == DL_WORK_DONE && only != DLQ_ONLY_ALL)
            c = DLQ_SKIP_DONE; /* replaying it would repeat the work */
        else if (work[i] == DL_WORK_NOT_DONE && only == DLQ_ONLY_UNKNOWN)
            c = DLQ_SKIP_NOT_DONE;
        else if (work[i] == DL_WORK_UNKNOWN && only == DLQ_ONLY_NOT_DONE)
            c = DLQ_SKIP_UNKNOWN;
        else if (v && !include_poison && dlq_is_poison(&v[i]))
            c = DLQ_SKIP_POISON; /* it died after each of its replays: another one feeds the loop */
        else if (limit && already + chosen >= limit)
            c = DLQ_SKIP_LIMIT;
        if (c == DLQ_MOVE)
            chosen++;
        choice[i] = c;
    }
    return chosen;
}

size_t dlq_select(const enum dead_letter_work *work, const struct dlq_message *v, size_t n,
                  enum dlq_only only, int include_poison, size_t limit, enum dlq_choice *choice)
{
    return dlq_select_from(work, v, n, only, include_poison, limit, 0, choice);
}

/* ---- finding the entry ---- */

char *dlq_kinds_that_can(int replay)
{
    struct buf b;
    buf_init(&b);
    size_t n = 0;
    for (size_t i = 0; i < collector_kind_count(); i++) {
        const struct collector_kind *k = collector_kind_at(i);
        if (!k->dlq || (replay && k->dlq->cannot_replay))
            continue;
        buf_puts(&b, n++ ? ", " : "");
        buf_puts(&b, k->name);
    }
    if (n == 0)
        buf_puts(&b, "none in this build");
    return buf_steal(&b);
}

int dlq_find(const struct sources *s, const char *source, const char *queue,
             struct dead_letter_join **out, struct err *e)
{
    const struct dead_letters *d = &s->dead_letters;
    for (size_t i = 0; i < d->n; i++) {
        struct dead_letter_join *j = &d->v[i];
        if (strcmp(j->broker->name, source) != 0 || strcmp(j->queue, queue) != 0)
            continue;
        if (!j->broker->kind->dlq) {
            char *k = dlq_kinds_that_can(0);
            err_set(e, ERR_CONFIG,
                    "source \"%.100s\" is a %s source: this kind cannot be inspected or "
                    "replayed by qrel dlq (kinds that can: %.200s)",
                    source, j->broker->kind->name, k);
            free(k);
            return -1;
        }
        *out = j;
        return 0;
    }
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < d->n; i++)
        buf_printf(&b, "%s--source=%s --queue=%s", i ? "; " : "", d->v[i].broker->name,
                   d->v[i].queue);
    err_set(e, ERR_CONFIG,
            "%s: no dead_letters entry for source \"%.100s\" and queue \"%.100s\" (%s%.300s)",
            s->path, source, queue, d->n ? "entries: " : "the file has no dead_letters entries",
            d->n ? b.data : "");
    buf_free(&b);
    return -1;
}

/* ---- reading and classifying ---- */

/* Asks the work table about every message that carries an id; the rest stay unknown. */
static int classify(struct dead_letter_join *j, const struct dlq_batch *b,
                    enum dead_letter_work *work, const struct deadline *dl, struct err *e)
{
    const char **ids = xcalloc(b->n ? b->n : 1, sizeof *ids);
    size_t *at = xcalloc(b->n ? b->n : 1, sizeof *at);
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        work[i] = DL_WORK_UNKNOWN;
        if (b->v[i].work_id && *b->v[i].work_id) {
            at[n] = i;
            ids[n++] = b->v[i].work_id;
        }
    }
    enum dead_letter_work *got = xcalloc(n ? n : 1, sizeof *got);
    int rc = 0;
    if (n) {
        /* The work table may be reached through the broker's own source (a job table of the
         * same database): its lock is then already held. */
        int own = j->work != j->broker;
        rc = own ? collector_lock(j->work, dl, e) : 0;
        if (rc == 0) {
            rc = j->work->kind->work_done(j->work, j->table, ids, n, dl, got, e);
            if (own)
                collector_unlock(j->work);
        }
        if (rc)
            err_prefix(e, "work_table source \"%s\"", j->work->name);
    }
    for (size_t k = 0; rc == 0 && k < n; k++)
        work[at[k]] = got[k];
    free(got);
    free(at);
    free(ids);
    return rc;
}

int dlq_read(struct dead_letter_join *j, size_t max, enum dlq_purpose purpose,
             const struct deadline *dl, double timeout, struct dlq_read *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->join = j;
    out->kind = j->broker->kind->dlq;
    out->timeout = timeout;
    if (collector_lock(j->broker, dl, e))
        return err_prefix(e, "source \"%s\"", j->broker->name);
    int rc = out->kind->read(j->broker, j->queue, j->id_field, max, purpose, dl, &out->batch, e);
    if (rc) {
        collector_unlock(j->broker);
        dlq_batch_free(&out->batch, out->kind);
        out->released = 1; /* the kind released what it read */
        return err_prefix(e, "source \"%s\"", j->broker->name);
    }
    if (out->batch.total < out->batch.n)
        out->batch.total = out->batch.n;
    out->pages = 1;
    out->read_so_far = out->batch.n;
    out->work = xcalloc(out->batch.n ? out->batch.n : 1, sizeof *out->work);
    rc = classify(j, &out->batch, out->work, dl, e);
    collector_unlock(j->broker);
    if (rc) {
        struct err re;
        err_clear(&re);
        if (dlq_release(out, &re))
            log_kv(LOG_WARN, "dead letters not released", "source", j->broker->name, "queue",
                   j->queue, "err", re.msg, NULL);
        dlq_read_free(out);
        return -1;
    }
    return 0;
}

void dlq_read_start(struct dead_letter_join *j, double timeout, struct dlq_read *out)
{
    memset(out, 0, sizeof *out);
    out->join = j;
    out->kind = j->broker->kind->dlq;
    out->timeout = timeout;
    out->released = 1; /* a kind that reads by pages changes nothing by reading */
}

/* Frees what the engine kept per message of r's batch (its errors, choices, fates, work). */
static void per_message_free(struct dlq_read *r)
{
    if (r->error)
        for (size_t i = 0; i < r->batch.n; i++)
            free(r->error[i]);
    free(r->error);
    free(r->choice);
    free(r->fate);
    free(r->work);
    r->error = NULL;
    r->choice = NULL;
    r->fate = NULL;
    r->work = NULL;
}

void dlq_page_clear(struct dlq_read *r)
{
    per_message_free(r);
    dlq_batch_clear(&r->batch, r->kind);
}

int dlq_read_next(struct dlq_read *r, size_t max, enum dlq_purpose purpose,
                  const struct deadline *dl, struct err *e)
{
    struct dead_letter_join *j = r->join;
    dlq_page_clear(r);
    if (collector_lock(j->broker, dl, e))
        return err_prefix(e, "source \"%s\"", j->broker->name);
    int rc = r->kind->read_page(j->broker, j->queue, j->id_field, max, purpose, dl, &r->batch, e);
    if (rc) {
        collector_unlock(j->broker);
        return err_prefix(e, "source \"%s\"", j->broker->name);
    }
    r->pages++;
    r->read_so_far += r->batch.n;
    if (r->batch.total < r->read_so_far)
        r->batch.total = r->read_so_far;
    r->work = xcalloc(r->batch.n ? r->batch.n : 1, sizeof *r->work);
    rc = classify(j, &r->batch, r->work, dl, e);
    collector_unlock(j->broker);
    return rc;
}

/* ---- the summary (pure) ---- */

static const int64_t hist_lo[DLQ_HIST_BUCKETS] = {1, 2, 3, 4, 5, 6, 11, 101};

void dlq_hist_bounds(size_t i, int64_t *lo, int64_t *hi)
{
    *lo = hist_lo[i];
    *hi = i + 1 < DLQ_HIST_BUCKETS ? hist_lo[i + 1] - 1 : -1;
}

void dlq_summarize(const struct dlq_message *v, const enum dead_letter_work *work, size_t n,
                   size_t total, struct dlq_summary *out)
{
    memset(out, 0, sizeof *out);
    dlq_summary_add(out, v, work, n);
    out->total = total > n ? total : n;
}

void dlq_summary_add(struct dlq_summary *out, const struct dlq_message *v,
                     const enum dead_letter_work *work, size_t n)
{
    out->read += n;
    if (out->total < out->read)
        out->total = out->read;
    for (size_t i = 0; i < n; i++) {
        const struct dlq_message *m = &v[i];
        out->n[work[i]]++;
        if (!m->work_id || !*m->work_id)
            out->without_id++;
        if (m->dead_since > 0) {
            if (!out->has_dead_since || m->dead_since < out->oldest)
                out->oldest = m->dead_since;
            if (!out->has_dead_since || m->dead_since > out->newest)
                out->newest = m->dead_since;
            out->has_dead_since = 1;
        }
        out->replays[dlq_replays_of(m)]++;
        if (m->deliveries < 0) {
            out->deliveries_unknown++;
            continue;
        }
        if (!out->has_deliveries || m->deliveries < out->min_deliveries)
            out->min_deliveries = m->deliveries;
        if (!out->has_deliveries || m->deliveries > out->max_deliveries)
            out->max_deliveries = m->deliveries;
        out->has_deliveries = 1;
        /* 0 deliveries (a broker that counts from 0) is shown with the first bucket. */
        size_t b = 0;
        while (b + 1 < DLQ_HIST_BUCKETS && m->deliveries >= hist_lo[b + 1])
            b++;
        out->hist[b]++;
    }
}

/* ---- replay ---- */

/* Sleeps until the monotonic time at_ms, in slices, returning early once *stop is set. */
static void pace_until(int64_t at_ms, volatile sig_atomic_t *stop)
{
    for (;;) {
        int64_t left = at_ms - deadline_now_ms();
        if (left <= 0 || (stop && *stop))
            return;
        if (left > 100)
            left = 100;
        struct timespec ts = {left / 1000, (long)(left % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !(stop && *stop))
            ;
    }
}

/* One hook call on message m (or on the batch when m is NULL) with the broker locked, under a
 * deadline of its own. Returns the hook's value. */
enum hook {
    HOOK_REQUEUE,
    HOOK_REMOVE,
    HOOK_MOVE,
    HOOK_RELEASE,
    HOOK_CHECK,
    HOOK_LOCK,
    HOOK_UNLOCK
};

static int call_hook(struct dlq_read *r, enum hook h, struct dlq_message *m, struct err *e)
{
    struct collector *c = r->join->broker;
    struct dlq_batch *b = &r->batch;
    struct deadline dl = deadline_in(r->timeout);
    if (collector_lock(c, &dl, e))
        return -1;
    int rc = -1;
    switch (h) {
    case HOOK_REQUEUE:
        rc = r->kind->requeue(c, b, m, &dl, e);
        break;
    case HOOK_REMOVE:
        rc = r->kind->remove(c, b, m, &dl, e);
        break;
    case HOOK_MOVE:
        rc = r->kind->move(c, b, m, &dl, e);
        break;
    case HOOK_RELEASE:
        rc = r->kind->release(c, b, &dl, e);
        break;
    case HOOK_CHECK:
        rc = r->kind->check_origin(c, b, &dl, e);
        break;
    case HOOK_LOCK:
        rc = r->kind->lock(c, b, r->lock_hold, &dl, e);
        break;
    case HOOK_UNLOCK:
        rc = r->kind->unlock(c, b, &dl, e);
        break;
    }
    collector_unlock(c);
    return rc;
}

int dlq_release(struct dlq_read *r, struct err *e)
{
    if (r->released)
        return 0;
    r->released = 1;
    if (!r->kind || !r->kind->release)
        return 0;
    return call_hook(r, HOOK_RELEASE, NULL, e);
}

/* A timeout or a lost connection says nothing of whether the broker applied the request: it may
 * have, once it resumed. NULL: the broker refused or answered, so it did not. */
static const char *uncertain(const struct err *e)
{
    return e->code == ERR_TIMEOUT ? "timed out" : e->code == ERR_CONNECT ? "connection lost" : NULL;
}

/* The fate of message i after its atomic move returned rc (e set when rc is -1). */
static void atomic_fate(struct dlq_read *r, size_t i, int rc, const struct err *e)
{
    const char *origin = r->batch.origin ? r->batch.origin : "its queue";
    const char *dead = r->batch.dead_letter_queue ? r->batch.dead_letter_queue : "the dead letters";
    const char *why;
    r->fate[i] = rc == 0 ? DLQ_FATE_MOVED : rc == 1 ? DLQ_FATE_GONE : DLQ_FATE_FAILED;
    if (rc == 0 || rc == 1)
        return;
    free(r->error[i]);
    if (rc == 2) {
        /* Twice now, which the work table absorbs, as a refused remove() after requeue(). */
        r->error[i] = xasprintf("put back on %s but not removed from %s: %s", origin, dead, e->msg);
        return;
    }
    if ((why = uncertain(e))) {
        /* The move is atomic: it happened whole or not at all, so never both places. */
        r->fate[i] = DLQ_FATE_UNCERTAIN;
        r->error[i] = xasprintf("may have been put back (%s); still dead unless the move ran (it "
                                "is atomic: on %s or in %s, never both): %s",
                                why, origin, dead, e->msg);
    } else {
        r->error[i] = xasprintf("not put back on %s, left dead: %s", origin, e->msg);
    }
}

static void move_one(struct dlq_read *r, size_t i)
{
    struct dlq_message *m = &r->batch.v[i];
    const char *origin = r->batch.origin ? r->batch.origin : "its queue";
    const char *dead = r->batch.dead_letter_queue ? r->batch.dead_letter_queue : "the dead letters";
    const char *why;
    struct err e;
    err_clear(&e);
    if (r->kind->move) {
        int rc = call_hook(r, HOOK_MOVE, m, &e);
        atomic_fate(r, i, rc, &e);
        return;
    }
    if (call_hook(r, HOOK_REQUEUE, m, &e)) {
        if ((why = uncertain(&e))) {
            /* Not removed: a rerun may put it back a second time, which the work table absorbs. */
            r->fate[i] = DLQ_FATE_UNCERTAIN;
            r->error[i] = xasprintf("may have been put back (%s); still dead in %s (a rerun may "
                                    "put it back on %s again): %s",
                                    why, dead, origin, e.msg);
            return;
        }
        r->fate[i] = DLQ_FATE_FAILED;
        r->error[i] = xasprintf("not put back on %s, left dead: %s", origin, e.msg);
        return;
    }
    if (call_hook(r, HOOK_REMOVE, m, &e)) {
        /* Twice now, which the work table absorbs; a rerun finds it done once handled. */
        r->fate[i] = DLQ_FATE_FAILED;
        r->error[i] = xasprintf("put back on %s but not removed from %s: %s", origin, dead, e.msg);
        return;
    }
    r->fate[i] = DLQ_FATE_MOVED;
}

/* Moves the k messages idx[0..k) in one round trip (kind->move_window) under one timeout. A
 * round trip cut short leaves each message without a reply moved whole or not at all: each is
 * then judged by the round trip's error, as move() would have been. */
static void move_window(struct dlq_read *r, const size_t *idx, size_t k)
{
    struct dlq_message *m[DLQ_MOVE_WINDOW];
    struct dlq_move_outcome *out = xcalloc(k, sizeof *out);
    for (size_t j = 0; j < k; j++)
        m[j] = &r->batch.v[idx[j]];
    struct collector *c = r->join->broker;
    struct deadline dl = deadline_in(r->timeout);
    struct err e;
    err_clear(&e);
    size_t got = 0;
    if (collector_lock(c, &dl, &e) == 0) {
        got = r->kind->move_window(c, &r->batch, m, k, &dl, out, &e);
        collector_unlock(c);
    }
    for (size_t j = 0; j < k; j++)
        atomic_fate(r, idx[j], j < got ? out[j].rc : -1, j < got ? &out[j].e : &e);
    free(out);
}

static int stopping(const struct dlq_replay_opts *o, struct dlq_replay_result *res)
{
    if (res->stopped_after_failures)
        return 1;
    if (o->stop && *o->stop) {
        res->interrupted = 1;
        return 1;
    }
    return 0;
}

/* Counts message i's failure (or success) towards max_failures_in_a_row. */
static void count_failure(const struct dlq_read *r, size_t i, const struct dlq_replay_opts *o,
                          size_t *in_a_row, struct dlq_replay_result *res)
{
    int failed = r->fate[i] == DLQ_FATE_FAILED || r->fate[i] == DLQ_FATE_UNCERTAIN;
    *in_a_row = failed ? *in_a_row + 1 : 0;
    if (o->max_failures_in_a_row && *in_a_row >= o->max_failures_in_a_row)
        res->stopped_after_failures = 1;
}

/* The chosen messages (fate DLQ_FATE_NOT_REACHED until tried), in order: windows of
 * DLQ_MOVE_WINDOW when the kind offers move_window and nothing paces the run, else one at a time
 * at o->rate. What a stop leaves untried stays not reached. */
static void move_chosen(struct dlq_read *r, const struct dlq_replay_opts *o,
                        struct dlq_replay_state *st, struct dlq_replay_result *res)
{
    size_t n = r->batch.n, i = 0;
    size_t *in_a_row = &st->in_a_row;
    if (r->kind->move && r->kind->move_window && !(o->rate > 0)) {
        for (;;) {
            size_t idx[DLQ_MOVE_WINDOW], k = 0;
            for (; i < n && k < DLQ_MOVE_WINDOW; i++)
                if (r->choice[i] == DLQ_MOVE)
                    idx[k++] = i;
            if (k == 0 || stopping(o, res))
                return;
            move_window(r, idx, k);
            for (size_t j = 0; j < k; j++)
                count_failure(r, idx[j], o, in_a_row, res);
        }
    }
    if (!st->paced_from)
        st->paced_from = deadline_now_ms();
    int64_t start = st->paced_from;
    for (; i < n; i++) {
        if (r->choice[i] != DLQ_MOVE)
            continue;
        if (stopping(o, res))
            return;
        if (o->rate > 0 && st->tried > 0)
            pace_until(start + (int64_t)((double)st->tried * 1000.0 / o->rate), o->stop);
        if (stopping(o, res))
            return;
        st->tried++;
        move_one(r, i);
        count_failure(r, i, o, in_a_row, res);
    }
}

/* Before anything moves: the lock (with yes: a dry run changes nothing), then the origin (dry
 * runs too: they say what a replay would do). Held for two hook calls and the pacing between two
 * moves, and renewed by each move. -1 with e set: refused, nothing moved. */
static int guard(struct dlq_read *r, const struct dlq_replay_opts *o, int *locked, struct err *e)
{
    if (o->yes && r->kind->lock && r->kind->unlock) {
        r->lock_hold = 2 * r->timeout + (o->rate > 0 ? 1.0 / o->rate : 0.0) + 1.0;
        if (call_hook(r, HOOK_LOCK, NULL, e))
            return -1;
        *locked = 1;
    }
    if (r->kind->check_origin && call_hook(r, HOOK_CHECK, NULL, e))
        return -1;
    return 0;
}

/* Refuses a replay of a kind that cannot replay, releasing what was read. */
static int cannot_replay(struct dlq_read *r, struct err *e)
{
    err_set(e, ERR_CONFIG, "source \"%s\" (%s) cannot be replayed: %s", r->join->broker->name,
            r->join->broker->kind->name, r->kind->cannot_replay);
    struct err re;
    err_clear(&re);
    if (dlq_release(r, &re))
        err_prefix(e, "also not released (%s)", re.msg);
    return -1;
}

int dlq_replay_choose(struct dlq_read *r, const struct dlq_replay_opts *o,
                      struct dlq_replay_state *st, struct dlq_replay_result *res, struct err *e)
{
    size_t n = r->batch.n;
    if (r->kind->cannot_replay)
        return cannot_replay(r, e);
    free(r->choice);
    free(r->fate);
    r->choice = xcalloc(n ? n : 1, sizeof *r->choice);
    r->fate = xcalloc(n ? n : 1, sizeof *r->fate);
    if (!r->error)
        r->error = xcalloc(n ? n : 1, sizeof *r->error);
    size_t chosen = dlq_select_from(r->work, r->batch.v, n, o->only, o->include_poison, o->limit,
                                    res->chosen, r->choice);
    res->chosen += chosen;
    if (chosen && !st->guarded) {
        /* Before the first move (or, in a dry run, before saying what would move). */
        if (guard(r, o, &st->locked, e)) {
            err_prefix(e, "replay of %s refused, every dead letter left dead",
                       r->batch.dead_letter_queue ? r->batch.dead_letter_queue : r->join->queue);
            return -1;
        }
        st->guarded = 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (r->choice[i] != DLQ_MOVE) {
            r->fate[i] = DLQ_FATE_SKIPPED;
            res->skipped[r->choice[i]]++;
        } else {
            r->fate[i] = o->yes ? DLQ_FATE_NOT_REACHED : DLQ_FATE_WOULD_MOVE;
        }
    }
    return 0;
}

void dlq_replay_move(struct dlq_read *r, const struct dlq_replay_opts *o,
                     struct dlq_replay_state *st, struct dlq_replay_result *res)
{
    size_t n = r->batch.n, chosen = 0;
    for (size_t i = 0; i < n; i++)
        chosen += r->choice[i] == DLQ_MOVE;
    if (o->yes && chosen)
        move_chosen(r, o, st, res);
    for (size_t i = 0; i < n; i++) {
        res->n[r->fate[i]]++;
        if ((r->fate[i] == DLQ_FATE_MOVED || r->fate[i] == DLQ_FATE_WOULD_MOVE) &&
            dlq_is_poison(&r->batch.v[i]))
            res->poison_moved++;
    }
}

int dlq_replay_page(struct dlq_read *r, const struct dlq_replay_opts *o,
                    struct dlq_replay_state *st, struct dlq_replay_result *res, struct err *e)
{
    if (dlq_replay_choose(r, o, st, res, e))
        return -1;
    dlq_replay_move(r, o, st, res);
    return 0;
}

void dlq_replay_finish(struct dlq_read *r, struct dlq_replay_state *st)
{
    struct err re;
    err_clear(&re);
    if (st->locked && call_hook(r, HOOK_UNLOCK, NULL, &re))
        log_kv(LOG_WARN, "replay lock not released (it expires)", "source", r->join->broker->name,
               "queue", r->join->queue, "err", re.msg, NULL);
    st->locked = 0;
}

int dlq_replay(struct dlq_read *r, const struct dlq_replay_opts *o, struct dlq_replay_result *res,
               struct err *e)
{
    memset(res, 0, sizeof *res);
    if (r->kind->cannot_replay)
        return cannot_replay(r, e);
    struct dlq_replay_state st = {0};
    int rc = dlq_replay_page(r, o, &st, res, e);
    dlq_replay_finish(r, &st);
    struct err re;
    err_clear(&re);
    if (dlq_release(r, &re)) {
        if (rc)
            err_prefix(e, "also not released (%s)", re.msg);
        else
            log_kv(LOG_WARN, "dead letters not released", "source", r->join->broker->name, "queue",
                   r->join->queue, "err", re.msg, NULL);
    }
    return rc;
}

void dlq_read_free(struct dlq_read *r)
{
    if (!r)
        return;
    struct err e;
    err_clear(&e);
    if (r->kind && dlq_release(r, &e))
        log_kv(LOG_WARN, "dead letters not released", "source", r->join->broker->name, "queue",
               r->join->queue, "err", e.msg, NULL);
    per_message_free(r);
    dlq_batch_free(&r->batch, r->kind);
    memset(r, 0, sizeof *r);
}
