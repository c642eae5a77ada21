/* audit.c: the engine and the report of the audit (see audit.h); each rule's condition is
 * documented in docs/check.md.
 *
 * The index (audit_index.c) gathers each queue's (or group's) figures into one entry; the rules
 * here read entries only, and each finding goes either to the full report (copied names and a
 * message) or, for the exporter's scrape, to audit_series.c (a count and the worst few, no
 * copies). The rule vocabulary and the configuration are in audit_config.c. */
#include "audit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dlq_kind.h"
#include "audit_index.h"
#include "audit_series.h"
#include "buf.h"
#include "collector.h"

/* ---- seconds for people ---- */

void audit_format_seconds(struct buf *out, double s)
{
    if (!isfinite(s)) {
        buf_puts(out, "?");
        return;
    }
    if (s < 100) {
        buf_printf(out, "%.3gs", s);
        return;
    }
    long long t = llround(s);
    long long h = t / 3600, m = (t % 3600) / 60, sec = t % 60;
    if (h)
        buf_printf(out, "%lldh", h);
    if (m)
        buf_printf(out, "%lldm", m);
    if (sec)
        buf_printf(out, "%llds", sec);
}

/* ---- the run's state ---- */

struct audit_ctx {
    const struct audit_config *cfg;
    struct audit_report *r;      /* the full report, or NULL ... */
    struct audit_series *series; /* ... when only the series are wanted */
    size_t findings_cap, sources_cap;
    struct buf msg; /* the message of the last finding, until finding_end hands it over */
    int msg_open;
    struct audit_index ix;
};

/* A qrel_collector_up series: one source of the report. */
static void add_source(void *ctx, const char *name, const char *kind, double up)
{
    struct audit_ctx *x = ctx;
    struct audit_report *r = x->r;
    if (!r)
        return; /* the series do not list sources */
    if (r->nsources == x->sources_cap) {
        x->sources_cap = x->sources_cap ? x->sources_cap * 2 : 8;
        r->sources = xrealloc(r->sources, x->sources_cap * sizeof *r->sources);
    }
    struct audit_source *s = &r->sources[r->nsources++];
    s->name = xstrdup(name);
    s->kind = xstrdup(kind);
    s->up = up == 1;
    if (!s->up)
        r->count[AUDIT_UNKNOWN]++;
}

/* ---- findings ---- */

/* Marks an entry with a finding that concerns it (its row on the landing page). */
static void mark(struct audit_entry *en, enum audit_rule rule)
{
    en->rules |= 1u << rule;
    if (audit_status_rank(audit_rule_severity(rule)) > audit_status_rank(en->worst))
        en->worst = audit_rule_severity(rule);
}

/* A finding of rule on en. For the report, returns the buffer its message goes into (handed to
 * the finding by finding_end); for the series, NULL: they need no message, and skipping it is
 * most of the work at 10,000 findings. */
static struct buf *add_finding(struct audit_ctx *x, enum audit_rule rule, struct audit_entry *en,
                               int with_group, double value, double limit)
{
    mark(en, rule);
    if (x->series) {
        audit_series_add(x->series, rule, en->source, en->kind, en->queue,
                         with_group ? en->group : NULL, audit_rule_badness(rule, value, limit));
        return NULL;
    }
    struct audit_report *r = x->r;
    if (r->nfindings == x->findings_cap) {
        x->findings_cap = x->findings_cap ? x->findings_cap * 2 : 16;
        r->findings = xrealloc(r->findings, x->findings_cap * sizeof *r->findings);
    }
    struct audit_finding *f = &r->findings[r->nfindings++];
    f->rule = rule;
    f->severity = audit_rule_severity(rule);
    f->source = xstrdup(en->source);
    f->kind = xstrdup(en->kind);
    f->queue = xstrdup(en->queue);
    f->group = with_group ? xstrdup(en->group) : NULL;
    f->value = value;
    f->limit = limit;
    f->message = NULL;
    r->count[f->severity]++;
    x->msg_open = 1;
    return &x->msg;
}

/* After each rule: the message it wrote goes to its finding. */
static void finding_end(struct audit_ctx *x)
{
    if (!x->msg_open)
        return;
    x->r->findings[x->r->nfindings - 1].message = buf_steal(&x->msg);
    x->msg_open = 0;
}

static void put_secs(struct buf *b, const char *what, double s)
{
    buf_puts(b, what);
    audit_format_seconds(b, s);
}

static const char *plural(double n)
{
    return n == 1 ? "" : "s";
}

/* The dead-letter finding where the dead_letters join classified them: how many were done
 * (replaying those repeats the work), how many were not, and what to run. */
static void classified_advice(struct buf *m, const struct audit_entry *en)
{
    double done = entry_val(en, F_DL_DONE), not_done = entry_val(en, F_DL_NOT_DONE);
    double unknown = entry_val(en, F_DL_UNKNOWN);
    buf_printf(m, ", %.0f of them done", done);
    if (done > 0)
        buf_puts(m, " (replaying those would repeat the work)");
    buf_printf(m, ", %.0f not done and %.0f unknown by the work table: ", not_done, unknown);
    if (not_done > 0)
        buf_printf(m, "replay only the not-done ones (`qrel dlq replay --source=%s --queue=%s`) ",
                   en->source, en->queue);
    else if (unknown > 0)
        buf_printf(m, "look at the unknown ones (`qrel dlq inspect --source=%s --queue=%s`) ",
                   en->source, en->queue);
    else
        buf_puts(m, "nothing needs replaying; ");
    buf_puts(m, not_done > 0 || unknown > 0 ? "and " : "");
    buf_puts(m, "give the dead-letter queue an owner");
}

/* Poison messages among them (the replay stamp `qrel dlq replay` writes): they died after each of
 * their replays, so another one would only repeat the failure. Their ids are not in any series
 * (one per message would be unbounded); inspect lists them. */
static void poison_advice(struct buf *m, const struct audit_entry *en)
{
    double n = entry_has(en, F_DL_POISON) ? entry_val(en, F_DL_POISON) : 0;
    if (!(n > 0))
        return;
    buf_printf(m,
               "; %.0f of them poison (replayed %d times or more and dead again each time: fix "
               "what fails on them before replaying; `qrel dlq inspect --source=%s --queue=%s` "
               "lists their ids, and a replay skips them unless --include-poison)",
               n, DLQ_POISON, en->source, en->queue);
}

static void rule_dead_letters(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_DEAD) || !(entry_val(en, F_DEAD) > 0))
        return;
    double n = entry_val(en, F_DEAD);
    struct buf *m = add_finding(x, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, en, 1, n, 0);
    if (!m)
        return; /* the series need no message */
    if (en->ndlq == 1)
        buf_printf(m, "dead-letter queue %s holds %.0f message%s", en->dlq, n, plural(n));
    else
        buf_printf(m, "its %zu dead-letter queues hold %.0f message%s", en->ndlq, n, plural(n));
    if (entry_has(en, F_DEAD_AGE)) {
        put_secs(m, ", the oldest ", entry_val(en, F_DEAD_AGE));
        buf_puts(m, " old");
    }
    if (entry_has(en, F_DL_DONE) || entry_has(en, F_DL_NOT_DONE) || entry_has(en, F_DL_UNKNOWN))
        classified_advice(m, en);
    else
        buf_puts(m, ": the broker gave up on them, which does not mean their work was not done; "
                    "classify each against your dedup or claim table before replaying, and give "
                    "the dead-letter queue an owner");
    poison_advice(m, en);
}

/* The figures behind a margin: "lease 30s, handler p99 34s, longest hold 12s → margin 0.88".
 * The p99 may come from the queue-level entry (handler times have no group label). */
static void margin_figures(struct buf *m, const struct audit_entry *en, const struct audit_entry *p,
                           double *worst)
{
    int has_p99 = entry_has(en, F_P99) || (p && entry_has(p, F_P99));
    double p99 = entry_has(en, F_P99)       ? entry_val(en, F_P99)
                 : p && entry_has(p, F_P99) ? entry_val(p, F_P99)
                                            : 0;
    double margin = entry_val(en, F_MARGIN);
    *worst = 0;
    if (entry_has(en, F_LEASE)) {
        put_secs(m, "lease ", entry_val(en, F_LEASE));
        if (margin > 0)
            *worst = entry_val(en, F_LEASE) / margin;
    }
    if (has_p99)
        put_secs(m, m->len ? ", handler p99 " : "handler p99 ", p99);
    if (entry_has(en, F_HOLD) && entry_val(en, F_HOLD) > 0)
        put_secs(m, m->len ? ", longest hold now " : "longest hold now ", entry_val(en, F_HOLD));
    buf_printf(m, "%smargin %.2f", m->len ? " → " : "", margin);
}

static void rule_margin(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_MARGIN))
        return;
    double margin = entry_val(en, F_MARGIN);
    enum audit_rule rule;
    if (margin < 1)
        rule = AUDIT_LEASE_MARGIN_BELOW_1;
    else if (margin < 2)
        rule = AUDIT_LEASE_MARGIN_BELOW_2;
    else
        return;
    if (x->cfg->disabled[rule])
        return;
    struct buf *m = add_finding(x, rule, en, 1, margin, rule == AUDIT_LEASE_MARGIN_BELOW_1 ? 1 : 2);
    if (!m)
        return; /* the series need no message */
    double worst;
    margin_figures(m, en, entry_parent(&x->ix, en), &worst);
    if (rule == AUDIT_LEASE_MARGIN_BELOW_1) {
        buf_puts(m, ": leases expire under running handlers, so slow messages are delivered "
                    "again while still being handled");
        if (entry_has(en, F_MAX_DELIVERIES))
            buf_printf(m, ", up to %.0f times", entry_val(en, F_MAX_DELIVERIES));
    } else {
        buf_printf(m,
                   ": handlers %.2g times slower than now would have their leases expire "
                   "under them and make duplicates",
                   margin);
    }
    if (worst > 0)
        put_secs(m, "; raise the lease above ", 2 * worst);
    else
        buf_puts(m, "; raise the lease to twice the longest handler time");
    buf_puts(m, " or extend it while the handler works");
}

/* The rules that fire on a positive count: "<count> " then what (a format given the plural
 * ending of the count, then "it" or "them"), the seconds of an optional field, then what to do. */
static const struct count_rule {
    enum audit_rule rule;
    int count, secs; /* fields: the count, and the seconds written after what (-1: none) */
    const char *what, *todo;
} count_rules[] = {
    {AUDIT_STALE_CLAIMS, F_STALE, F_CLAIM_WINDOW,
     "stale claim%s (claimed, never done, older than the in-flight window",
     "): the attempts died between claim and done, so their effects may never have happened; "
     "check each one and fix what stops the attempts"},
    {AUDIT_ORPHANED_MESSAGES, F_ORPHANED, -1,
     "message%s held by a consumer that stopped sending heartbeats, with no lease to give %s "
     "back: the work is lost unless it is enqueued again; find what killed the process, and use "
     "a fetch that gives jobs back (a lease) where there is one",
     ""},
    {AUDIT_ETA_BEYOND_LEASE, F_ETA_BEYOND, F_LEASE,
     "message%s held until an ETA or countdown beyond the lease",
     ": each is delivered again every lease while it waits and runs once per delivery; raise the "
     "visibility timeout above the longest ETA, or schedule far tasks elsewhere (a periodic "
     "scheduler, a database)"},
    {AUDIT_SKIPPED_ENTRIES, F_SKIPPED, -1,
     "unreadable item%s skipped (not JSON, a field missing or of the wrong type, a timestamp out "
     "of range): the queue's figures leave %s out; find what writes them (another client or "
     "version, a hand edit) and fix or remove them",
     ""},
};

static void rule_count(struct audit_ctx *x, struct audit_entry *en, const struct count_rule *c)
{
    if (!entry_has(en, c->count) || !(entry_val(en, c->count) > 0))
        return;
    double n = entry_val(en, c->count);
    struct buf *m = add_finding(x, c->rule, en, 1, n, 0);
    if (!m)
        return; /* the series need no message */
    buf_printf(m, "%.0f ", n);
    /* what is one of the literals above: a format by design */
    buf_printf(m, c->what, plural(n), n == 1 ? "it" : "them");
    if (c->secs >= 0 && entry_has(en, c->secs))
        put_secs(m, " ", entry_val(en, c->secs));
    buf_puts(m, c->todo);
}

/* A runner that deletes the jobs it gives up on (delayed_job's default destroy_failed_jobs). */
static void rule_not_kept(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_NOT_KEPT) || !(entry_val(en, F_NOT_KEPT) > 0))
        return;
    struct buf *m = add_finding(x, AUDIT_DEAD_LETTERS_NOT_KEPT, en, 1, 1, 0);
    if (!m)
        return; /* the series need no message */
    buf_puts(m, "jobs that fail for good are deleted, not kept as dead letters: what each was, "
                "its last error and how many there were are lost, and none can be replayed; keep "
                "them (delayed_job: Delayed::Worker.destroy_failed_jobs = false) and give the "
                "failed jobs an owner");
}

static void rule_outbox(struct audit_ctx *x, struct audit_entry *en)
{
    double lag = x->cfg->outbox_lag;
    if (!entry_has(en, F_OUTBOX_AGE) || !(entry_val(en, F_OUTBOX_AGE) > lag))
        return;
    struct buf *m = add_finding(x, AUDIT_OUTBOX_LAGGING, en, 1, entry_val(en, F_OUTBOX_AGE), lag);
    if (!m)
        return; /* the series need no message */
    if (entry_has(en, F_OUTBOX))
        buf_printf(m, "%.0f row%s unpublished, ", entry_val(en, F_OUTBOX),
                   plural(entry_val(en, F_OUTBOX)));
    put_secs(m, "the oldest pending for ", entry_val(en, F_OUTBOX_AGE));
    put_secs(m, " (limit ", lag);
    buf_puts(m, "): the relay is behind or stopped; check the relay process and its errors");
}

/* The dedup window against the longest retry horizon on the same source and queue name: a
 * postgres source reports a consumer's dedup table and its claim table under different kinds. */
static void rule_dedup(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_DEDUP_WINDOW))
        return;
    const struct audit_entry *longest = NULL;
    for (size_t i = 0; i < x->ix.nentries; i++) {
        const struct audit_entry *h = entry_at(&x->ix, i);
        if (entry_has(h, F_HORIZON) && strcmp(h->source, en->source) == 0 &&
            strcmp(h->queue, en->queue) == 0 &&
            (!longest || entry_val(h, F_HORIZON) > entry_val(longest, F_HORIZON)))
            longest = h;
    }
    double window = entry_val(en, F_DEDUP_WINDOW);
    if (!longest || !(window < entry_val(longest, F_HORIZON)))
        return;
    double horizon = entry_val(longest, F_HORIZON);
    struct buf *m =
        add_finding(x, AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON, en, 1, window, horizon);
    if (!m)
        return; /* the series need no message */
    put_secs(m, "dedup window ", window);
    put_secs(m, " is shorter than the retry horizon ", horizon);
    buf_printf(m, " (%s", longest->kind);
    if (longest->group)
        buf_printf(m, ", group %s", longest->group);
    buf_puts(m, "): a retry after the window is handled again as a new message; keep dedup keys ");
    put_secs(m, "longer than ", horizon);
    buf_puts(m, " or make the retries end sooner");
}

/* What to change, from the kind that reported the queue (collector.h, audit_hints): a kind whose
 * broker (or whose consumers, by convention) can dead-letter names the setting that does it;
 * kinds without one (or not in this build) have no dead-letter queue to ask for. */
static const char *kind_hint(const char *kind, enum audit_rule rule)
{
    const struct collector_kind *k = collector_kind_find(kind);
    for (const struct audit_hint *h = k ? k->audit_hints : NULL; h && h->rule; h++)
        if (strcmp(h->rule, audit_rule_name(rule)) == 0)
            return h->clause;
    return NULL;
}

/* A delivery limit with no dead-letter target, on a kind whose broker then drops the message
 * (a RabbitMQ quorum queue at its x-delivery-limit without a dead-letter exchange, a NATS
 * consumer at max_deliver with no advisory stream read): the work is lost and the redelivery
 * figures fall back as if it had recovered. Critical, and in place of no_dead_letter_queue. */
static int rule_limit_drops(struct audit_ctx *x, struct audit_queue_agg *q,
                            struct audit_entry *first)
{
    const char *hint = kind_hint(first->kind, AUDIT_DELIVERY_LIMIT_DROPS);
    if (!hint || x->cfg->disabled[AUDIT_DELIVERY_LIMIT_DROPS] || !(q->has & 1u << F_MAX_DELIVERIES))
        return 0;
    /* The limit as the queue's own entry or its first states it (a group's, for NATS): looked
     * up there only, so that a fleet of such queues costs no search through every entry. */
    struct audit_entry *lv = q->level != AUDIT_NO_ENTRY ? entry_at(&x->ix, q->level) : NULL;
    double limit = lv && entry_has(lv, F_MAX_DELIVERIES) ? entry_val(lv, F_MAX_DELIVERIES)
                   : entry_has(first, F_MAX_DELIVERIES)  ? entry_val(first, F_MAX_DELIVERIES)
                                                         : 0;
    q->no_dlq = 1;
    struct buf *m = add_finding(x, AUDIT_DELIVERY_LIMIT_DROPS, first, 0, limit, 0);
    if (!m)
        return 1; /* the series need no message */
    if (limit > 0)
        buf_printf(m, "a delivery limit of %.0f and no dead-letter target", limit);
    else
        buf_puts(m, "a delivery limit and no dead-letter target");
    buf_puts(m, ": a message delivered that many times is dropped, its work lost with nothing to "
                "alert on, and the redelivery figures fall back as if it had recovered; ");
    buf_puts(m, hint);
    return 1;
}

/* Over one (source, kind, queue) and all its groups. */
static void rule_no_dlq(struct audit_ctx *x, struct audit_queue_agg *q)
{
    struct audit_entry *first = entry_at(&x->ix, q->first);
    if (audit_index_is_dlq(&x->ix, first->source, first->queue))
        return;
    if (q->has & 1u << F_DEAD || !(q->has & 1u << F_DEPTH))
        return;
    if (rule_limit_drops(x, q, first))
        return;
    const char *hint = kind_hint(first->kind, AUDIT_NO_DEAD_LETTER_QUEUE);
    if (!hint || x->cfg->disabled[AUDIT_NO_DEAD_LETTER_QUEUE])
        return;
    q->no_dlq = 1; /* the finding is about every group of the queue */
    struct buf *m = add_finding(x, AUDIT_NO_DEAD_LETTER_QUEUE, first, 0, 0, 0);
    if (!m)
        return; /* the series need no message */
    /* puts, not printf: a fleet without dead-letter queues has thousands of these */
    buf_puts(m, "no dead-letter queue: a message that always fails is retried without end or "
                "dropped, with nothing to alert on; ");
    buf_puts(m, hint);
}

/* A queue of a kind whose broker has a lease only where one is configured (ActiveMQ's
 * abortSlowAckConsumerStrategy) and no qrel_lease_timeout_seconds: nothing takes back the
 * messages of a consumer that hangs while its connection lives. Over one (source, kind, queue). */
static void rule_no_lease(struct audit_ctx *x, struct audit_queue_agg *q)
{
    struct audit_entry *first = entry_at(&x->ix, q->first);
    const char *hint = kind_hint(first->kind, AUDIT_NO_BROKER_LEASE);
    if (!hint || x->cfg->disabled[AUDIT_NO_BROKER_LEASE] || q->has & 1u << F_LEASE ||
        !(q->has & 1u << F_DEPTH) || audit_index_is_dlq(&x->ix, first->source, first->queue))
        return;
    struct buf *m = add_finding(x, AUDIT_NO_BROKER_LEASE, first, 0, 0, 0);
    if (!m)
        return;
    buf_puts(m, "no broker-side lease: a consumer that hangs holds its in-flight messages for as "
                "long as its connection lives, and nothing delivers them again; ");
    buf_puts(m, hint);
}

/* A claim left by a crashed attempt defers every later delivery while it is younger than the
 * in-flight window W. With lease L and M deliveries, delivery k comes (k - 1) x L after the
 * first, so the last one finds the claim (k = M) aged (M - 1) x L, less the moment between
 * delivery and claim. It takes over only if that age exceeds W: the rule fires when
 * W >= (M - 1) x L. */
static void rule_claim_window(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_CLAIM_WINDOW) || !entry_has(en, F_LEASE) ||
        !entry_has(en, F_MAX_DELIVERIES))
        return;
    double w = entry_val(en, F_CLAIM_WINDOW), lease = entry_val(en, F_LEASE),
           m_del = entry_val(en, F_MAX_DELIVERIES);
    double last = (m_del - 1) * lease;
    if (!(lease > 0) || !(w >= last))
        return;
    struct buf *m = add_finding(x, AUDIT_CLAIM_WINDOW_TOO_SHORT, en, 1, w, last);
    if (!m)
        return; /* the series need no message */
    put_secs(m, "in-flight window ", w);
    put_secs(m, " with a lease of ", lease);
    buf_printf(m, " and %.0f deliver%s: ", m_del, m_del == 1 ? "y" : "ies");
    if (m_del > 1) {
        put_secs(m, "the last delivery comes ", last);
        buf_puts(m, " after the first");
    } else {
        buf_puts(m, "there is no later delivery");
    }
    buf_puts(m, ", while the claim of a crashed attempt still looks in flight, so the message "
                "is dead-lettered with its effect possibly never done; ");
    if (m_del > 1)
        put_secs(m, "make the in-flight window shorter than ", last);
    else
        buf_puts(m, "allow redeliveries");
    double need = floor(w / lease) + 2;
    buf_printf(m, " or allow at least %.0f deliveries", need);
}

/* A source that is up and found no queue: its pattern, discovery or exclude matched nothing, so
 * no alert on its queues can fire. The entry is the source's own (queue ""). */
static void rule_watches_nothing(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_SOURCE_QUEUES) || entry_val(en, F_SOURCE_QUEUES) != 0)
        return;
    struct buf *m = add_finding(x, AUDIT_SOURCE_WATCHES_NOTHING, en, 0, 0, 1);
    if (!m)
        return; /* the series need no message */
    buf_printf(m,
               "source %s watches nothing: its discovery/pattern matched no queue, so no alert on "
               "its queues can fire; check its prefix, pattern or exclude against the names the "
               "broker has, or name the queues (queues:)",
               en->source);
}

/* Ready messages and no consumer, where the kind reports consumers (no series, no finding: a
 * kind that cannot tell is never taken for 0). A dead-letter queue waits for a person, not a
 * consumer (dead_letter_queue_not_empty is its finding). The fix names what the kind counts as
 * a consumer. */
static void rule_no_consumer(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_CONSUMERS) || !entry_has(en, F_READY) || entry_val(en, F_CONSUMERS) != 0 ||
        !(entry_val(en, F_READY) > 0) || audit_index_is_dlq(&x->ix, en->source, en->queue))
        return;
    double n = entry_val(en, F_READY);
    struct buf *m = add_finding(x, AUDIT_BACKLOG_WITHOUT_CONSUMER, en, 1, n, 0);
    if (!m)
        return; /* the series need no message */
    const char *hint = kind_hint(en->kind, AUDIT_BACKLOG_WITHOUT_CONSUMER);
    buf_printf(m,
               "%.0f message%s ready and no consumer: nothing takes them, so the backlog only "
               "grows and ages; ",
               n, plural(n));
    buf_puts(m, hint ? hint : "start its consumers");
}

/* A worker allowed to run a handler as long as the lease or longer (Laravel's --timeout against
 * retry_after): a slow job is handed to another worker before its own is told to stop. */
static void rule_timeout(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_TIMEOUT) || !entry_has(en, F_LEASE))
        return;
    double t = entry_val(en, F_TIMEOUT), lease = entry_val(en, F_LEASE);
    if (!(lease > 0) || !(t >= lease))
        return;
    struct buf *m = add_finding(x, AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE, en, 1, t, lease);
    if (!m)
        return; /* the series need no message */
    put_secs(m, "handler timeout ", t);
    put_secs(m, ", lease ", lease);
    buf_puts(m, ": a job running longer than the lease is delivered to another worker while the "
                "first still runs it, so it runs twice; set the worker's timeout several seconds "
                "below the lease (Laravel: queue:work --timeout shorter than the connection's "
                "retry_after), or raise the lease");
}

/* A dead-letter queue that keeps its messages no longer than the source keeps them plus the retry
 * horizon: a message can reach it as late as that (SQS standard queues even keep its original
 * enqueue time there, so its clock has run the whole way), and then expires before anyone reads
 * it. A dead-letter queue without a limit (+Inf) never fires; a source without one against a
 * finite dead-letter queue does. */
static void rule_retention(struct audit_ctx *x, struct audit_entry *en)
{
    if (!entry_has(en, F_RETENTION) || !entry_has(en, F_DL_RETENTION))
        return;
    double keep = entry_val(en, F_DL_RETENTION), src = entry_val(en, F_RETENTION);
    double horizon = entry_has(en, F_HORIZON) ? entry_val(en, F_HORIZON) : 0;
    if (isinf(keep) || !(keep <= src + horizon))
        return;
    struct buf *m = add_finding(x, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, en, 0, keep, src + horizon);
    if (!m)
        return; /* the series need no message */
    buf_printf(m, "dead-letter queue %s keeps messages ", en->retention_dlq);
    audit_format_seconds(m, keep);
    if (isinf(src)) {
        buf_puts(m, ", while the queue keeps them without limit");
    } else {
        put_secs(m, ", no longer than the queue keeps them (", src);
        if (horizon > 0)
            put_secs(m, ") plus its retry horizon (", horizon);
        buf_puts(m, ")");
    }
    buf_puts(m, ": a message dead-lettered late in its life expires there before anyone reads "
                "it, lost with the error that killed it; ");
    const char *hint = kind_hint(en->kind, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD);
    if (hint)
        buf_puts(m, hint);
    else
        buf_puts(m, "keep dead letters longer than the queue keeps messages plus its retry "
                    "horizon, by the time you need to read them");
}

/* The rules over one entry besides the count rules, each skipped when disabled; margin
 * (AUDIT_RULE_COUNT here) checks its two rules itself. */
static const struct {
    enum audit_rule rule;
    void (*check)(struct audit_ctx *, struct audit_entry *);
} entry_rules[] = {
    {AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, rule_dead_letters},
    {AUDIT_RULE_COUNT, rule_margin},
    {AUDIT_OUTBOX_LAGGING, rule_outbox},
    {AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON, rule_dedup},
    {AUDIT_CLAIM_WINDOW_TOO_SHORT, rule_claim_window},
    {AUDIT_DEAD_LETTERS_NOT_KEPT, rule_not_kept},
    {AUDIT_SOURCE_WATCHES_NOTHING, rule_watches_nothing},
    {AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE, rule_timeout},
    {AUDIT_BACKLOG_WITHOUT_CONSUMER, rule_no_consumer},
    {AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, rule_retention},
};

/* ---- sorting the report ---- */

static int cmp_finding(const void *pa, const void *pb)
{
    const struct audit_finding *a = pa, *b = pb;
    int c = audit_status_rank(b->severity) - audit_status_rank(a->severity);
    if (c)
        return c;
    if (a->rule != b->rule)
        return (int)a->rule - (int)b->rule;
    if ((c = audit_cmp_name(a->source, b->source)) || (c = audit_cmp_name(a->queue, b->queue)) ||
        (c = audit_cmp_name(a->group, b->group)) || (c = audit_cmp_name(a->kind, b->kind)))
        return c;
    return 0;
}

static int cmp_queue(const void *pa, const void *pb)
{
    const struct audit_queue *a = pa, *b = pb;
    int c = audit_status_rank(b->worst) - audit_status_rank(a->worst);
    if (c)
        return c;
    if (a->has_margin != b->has_margin)
        return b->has_margin - a->has_margin;
    if (a->has_margin && a->margin != b->margin)
        return a->margin < b->margin ? -1 : 1;
    double da = a->has_dead ? a->dead : 0, db = b->has_dead ? b->dead : 0;
    if (da != db)
        return da > db ? -1 : 1;
    double aa = a->has_age ? a->age : 0, ab = b->has_age ? b->age : 0;
    if (aa != ab)
        return aa > ab ? -1 : 1;
    if ((c = audit_cmp_name(a->source, b->source)) || (c = audit_cmp_name(a->queue, b->queue)) ||
        (c = audit_cmp_name(a->group, b->group)) || (c = audit_cmp_name(a->kind, b->kind)))
        return c;
    return 0;
}

static void build_queues(struct audit_ctx *x)
{
    struct audit_report *r = x->r;
    r->queues = xcalloc(x->ix.nentries ? x->ix.nentries : 1, sizeof *r->queues);
    for (size_t i = 0; i < x->ix.nentries; i++) {
        struct audit_entry *en = entry_at(&x->ix, i);
        const struct audit_queue_agg *qa = &x->ix.queues[en->queue_id];
        if (!en->group && qa->nentries > 1)
            continue; /* shown within each of its groups */
        if (qa->no_dlq)
            mark(en, AUDIT_NO_DEAD_LETTER_QUEUE);
        const struct audit_entry *p = entry_parent(&x->ix, en);
        struct audit_queue *q = &r->queues[r->nqueues++];
        q->source = xstrdup(en->source);
        q->kind = xstrdup(en->kind);
        q->queue = xstrdup(en->queue);
        q->group = xstrdup(en->group);
        q->has_margin = entry_has(en, F_MARGIN);
        q->margin = entry_val(en, F_MARGIN);
        const struct audit_entry *d = entry_has(en, F_DEAD)       ? en
                                      : p && entry_has(p, F_DEAD) ? p
                                                                  : NULL;
        q->has_dead = d != NULL;
        q->dead = d ? entry_val(d, F_DEAD) : 0;
        if (entry_has(en, F_AGE) || entry_has(en, F_OUTBOX_AGE)) {
            q->has_age = 1;
            q->age = entry_has(en, F_AGE) ? entry_val(en, F_AGE) : entry_val(en, F_OUTBOX_AGE);
        }
        if (entry_has(en, F_DEPTH) || entry_has(en, F_OUTBOX)) {
            q->has_depth = 1;
            q->depth = entry_has(en, F_DEPTH) ? entry_val(en, F_DEPTH) : entry_val(en, F_OUTBOX);
        }
        q->worst = en->worst;
        q->rules = en->rules;
        if (p) {
            q->rules |= p->rules;
            if (audit_status_rank(p->worst) > audit_status_rank(q->worst))
                q->worst = p->worst;
        }
    }
    if (r->nqueues > 1)
        qsort(r->queues, r->nqueues, sizeof *r->queues, cmp_queue);
}

/* ---- the run ---- */

/* Sources built by hand (tests) have a zeroed section: that means the defaults too. */
static const struct audit_config *config_or_defaults(const struct audit_config *cfg,
                                                     struct audit_config *defaults)
{
    if (cfg && cfg->outbox_lag > 0)
        return cfg;
    audit_config_default(defaults);
    if (cfg)
        memcpy(defaults->disabled, cfg->disabled, sizeof defaults->disabled);
    return defaults;
}

/* Collects the entries and evaluates every enabled rule over them, each finding going to x->r
 * or x->series. */
static void evaluate(struct audit_ctx *x, struct metric_set *const *sets, size_t nsets)
{
    const struct audit_config *cfg = x->cfg;
    audit_index_collect(&x->ix, sets, nsets, add_source, x);
    for (size_t i = 0; i < x->ix.nentries; i++) {
        struct audit_entry *en = entry_at(&x->ix, i);
        for (size_t k = 0; k < sizeof entry_rules / sizeof *entry_rules; k++) {
            if (entry_rules[k].rule == AUDIT_RULE_COUNT || !cfg->disabled[entry_rules[k].rule])
                entry_rules[k].check(x, en);
            finding_end(x);
        }
        for (size_t k = 0; k < sizeof count_rules / sizeof *count_rules; k++) {
            if (!cfg->disabled[count_rules[k].rule])
                rule_count(x, en, &count_rules[k]);
            finding_end(x);
        }
    }
    for (size_t i = 0; i < x->ix.nqueues; i++) {
        rule_no_dlq(x, &x->ix.queues[i]);
        finding_end(x);
        rule_no_lease(x, &x->ix.queues[i]);
        finding_end(x);
    }
}

static void ctx_free(struct audit_ctx *x)
{
    audit_index_free(&x->ix);
    buf_free(&x->msg);
}

struct audit_report *audit_run(struct metric_set *const *sets, size_t nsets,
                               const struct audit_config *cfg)
{
    struct audit_config defaults;
    cfg = config_or_defaults(cfg, &defaults);
    struct audit_report *r = xcalloc(1, sizeof *r);
    r->queue_series = cfg->queue_series;
    struct audit_ctx x = {.cfg = cfg, .r = r};
    buf_init(&x.msg);
    evaluate(&x, sets, nsets);
    if (!r->sources)
        r->sources = xcalloc(1, sizeof *r->sources);
    build_queues(&x);
    if (r->nfindings > 1)
        qsort(r->findings, r->nfindings, sizeof *r->findings, cmp_finding);

    r->status = r->count[AUDIT_CRITICAL]  ? AUDIT_CRITICAL
                : r->count[AUDIT_UNKNOWN] ? AUDIT_UNKNOWN
                : r->count[AUDIT_WARNING] ? AUDIT_WARNING
                                          : AUDIT_OK;
    ctx_free(&x);
    return r;
}

int audit_run_series(struct metric_set *const *sets, size_t nsets, const struct audit_config *cfg,
                     struct metric_set *out)
{
    struct audit_config defaults;
    cfg = config_or_defaults(cfg, &defaults);
    struct audit_ctx x = {.cfg = cfg, .series = audit_series_new(cfg->queue_series)};
    buf_init(&x.msg);
    evaluate(&x, sets, nsets);
    int rc = audit_series_write(x.series, out);
    audit_series_free(x.series);
    ctx_free(&x);
    return rc;
}

/* The four names that place a finding or a queue, each its own copy. */
static void free_place(char *source, char *kind, char *queue, char *group)
{
    free(source);
    free(kind);
    free(queue);
    free(group);
}

void audit_report_free(struct audit_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nfindings; i++) {
        struct audit_finding *f = &r->findings[i];
        free_place(f->source, f->kind, f->queue, f->group);
        free(f->message);
    }
    for (size_t i = 0; i < r->nqueues; i++) {
        struct audit_queue *q = &r->queues[i];
        free_place(q->source, q->kind, q->queue, q->group);
    }
    for (size_t i = 0; i < r->nsources; i++) {
        free(r->sources[i].name);
        free(r->sources[i].kind);
    }
    free(r->findings);
    free(r->queues);
    free(r->sources);
    free(r);
}

/* ---- the series from a report ---- */

/* The same series audit_run_series serves, from a report's findings: one ordering and one cut
 * (audit_series.c) for both. */
int audit_add_metrics(const struct audit_report *r, struct metric_set *out)
{
    struct audit_series *s = audit_series_new(r->queue_series);
    for (size_t i = 0; i < r->nfindings; i++) {
        const struct audit_finding *f = &r->findings[i];
        audit_series_add(s, f->rule, f->source, f->kind, f->queue, f->group,
                         audit_rule_badness(f->rule, f->value, f->limit));
    }
    int rc = audit_series_write(s, out);
    audit_series_free(s);
    return rc;
}
