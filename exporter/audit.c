/* audit.c: see audit.h; each rule's condition is documented in docs/check.md.
 *
 * One pass over the sets keeps the samples of the families the rules read as small records,
 * sorting them by (source, kind, queue, group) makes each queue a run of adjacent records, and
 * each run becomes one entry holding that queue's figures. The rules then read entries only. The
 * records point into the sets (strings a set owns stay valid while nobody adds to it), so the
 * pass copies nothing but what ends up in the report. */
#include "audit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "hashtab.h"
#include "util.h"

/* ---- rule and status names ---- */

/* below: a finding is worse the further its value lies below its limit (a margin, a dedup
 * window), else the further above (messages, ages), which ranks the per-queue series. */
static const struct {
    const char *name;
    enum audit_status severity;
    int below;
} rules[AUDIT_RULE_COUNT] = {
    [AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY] = {"dead_letter_queue_not_empty", AUDIT_CRITICAL, 0},
    [AUDIT_LEASE_MARGIN_BELOW_1] = {"lease_margin_below_1", AUDIT_CRITICAL, 1},
    [AUDIT_LEASE_MARGIN_BELOW_2] = {"lease_margin_below_2", AUDIT_WARNING, 1},
    [AUDIT_STALE_CLAIMS] = {"stale_claims", AUDIT_WARNING, 0},
    [AUDIT_OUTBOX_LAGGING] = {"outbox_lagging", AUDIT_WARNING, 0},
    [AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON] = {"dedup_window_shorter_than_retry_horizon",
                                                       AUDIT_WARNING, 1},
    [AUDIT_NO_DEAD_LETTER_QUEUE] = {"no_dead_letter_queue", AUDIT_WARNING, 0},
    [AUDIT_CLAIM_WINDOW_TOO_SHORT] = {"claim_window_too_short", AUDIT_WARNING, 0},
    [AUDIT_ORPHANED_MESSAGES] = {"orphaned_messages", AUDIT_CRITICAL, 0},
    [AUDIT_ETA_BEYOND_LEASE] = {"eta_beyond_lease", AUDIT_WARNING, 0},
};

const char *audit_rule_name(enum audit_rule r)
{
    return r < AUDIT_RULE_COUNT ? rules[r].name : "unknown";
}

enum audit_status audit_rule_severity(enum audit_rule r)
{
    return r < AUDIT_RULE_COUNT ? rules[r].severity : AUDIT_UNKNOWN;
}

const char *audit_status_name(enum audit_status s)
{
    static const char *const names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
    return (unsigned)s < 4 ? names[s] : "UNKNOWN";
}

const char *audit_status_label(enum audit_status s)
{
    static const char *const names[] = {"ok", "warning", "critical", "unknown"};
    return (unsigned)s < 4 ? names[s] : "unknown";
}

/* How bad a status is for "worst first": CRITICAL, then UNKNOWN (an unreadable source may hide
 * a critical), then WARNING, then OK. */
static int status_rank(enum audit_status s)
{
    static const int rank[] = {0, 1, 3, 2};
    return (unsigned)s < 4 ? rank[s] : 2;
}

/* ---- configuration ---- */

void audit_config_default(struct audit_config *c)
{
    memset(c, 0, sizeof *c);
    c->outbox_lag = AUDIT_DEFAULT_OUTBOX_LAG;
    c->queue_series = AUDIT_DEFAULT_QUEUE_SERIES;
}

/* queue_series: a count, or "all" for the series of every finding. */
static int parse_queue_series(struct cfg_node *map, struct audit_config *c, struct err *e)
{
    struct cfg_node *n = NULL;
    if (cfg_get_node(map, "queue_series", CFG_SCALAR, &n, e))
        return -1;
    if (!n)
        return 0;
    if (strcmp(n->scalar, "all") == 0) {
        c->queue_series = AUDIT_QUEUE_SERIES_ALL;
        return 0;
    }
    char *end = NULL;
    long long v = strtoll(n->scalar, &end, 10);
    if (end == n->scalar || *end || v < 0 || v > 1000000) {
        char q[64];
        return cfg_error(e, n,
                         "queue_series: want a number of series from 0 to 1000000 or \"all\", "
                         "got %s",
                         cfg_quote(q, sizeof q, n->scalar));
    }
    c->queue_series = (long)v;
    return 0;
}

int audit_config_parse(struct cfg_node *map, struct audit_config *c, struct err *e)
{
    audit_config_default(c);
    if (!map)
        return 0;
    struct cfg_node *list = NULL;
    if (cfg_get_positive_duration(map, "outbox_lag", AUDIT_DEFAULT_OUTBOX_LAG, &c->outbox_lag, e) ||
        cfg_get_node(map, "disabled_rules", CFG_SEQ, &list, e) || parse_queue_series(map, c, e))
        return -1;
    for (size_t i = 0; list && i < list->n; i++) {
        struct cfg_node *item = list->items[i];
        if (cfg_expect(item, CFG_SCALAR, "each entry of disabled_rules", e))
            return -1;
        int found = 0;
        for (int r = 0; r < AUDIT_RULE_COUNT; r++) {
            if (strcmp(item->scalar, rules[r].name) == 0) {
                c->disabled[r] = 1;
                found = 1;
            }
        }
        if (!found) {
            struct buf b;
            buf_init(&b);
            for (int r = 0; r < AUDIT_RULE_COUNT; r++)
                buf_printf(&b, "%s%s", r ? ", " : "", rules[r].name);
            cfg_error(e, item, "disabled_rules: want rule names (%s), got \"%s\"", b.data,
                      item->scalar);
            buf_free(&b);
            return -1;
        }
    }
    return cfg_finish(map, "audit", e);
}

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

/* ---- records: the samples the rules read ---- */

enum fam {
    F_UP,
    F_DEPTH,          /* qrel_queue_messages, summed over states */
    F_AGE,            /* qrel_queue_oldest_message_age_seconds */
    F_LEASE,          /* qrel_lease_timeout_seconds */
    F_HOLD,           /* qrel_lease_oldest_age_seconds */
    F_P99,            /* qrel_handler_duration_seconds{quantile="0.99"} */
    F_MARGIN,         /* qrel_lease_margin_ratio */
    F_MAX_DELIVERIES, /* qrel_max_deliveries */
    F_DEAD,           /* qrel_dead_letter_messages, summed over dead_letter_queue */
    F_DEAD_AGE,       /* qrel_dead_letter_oldest_age_seconds */
    F_STALE,          /* qrel_claims{state="stale"} */
    F_OUTBOX,         /* qrel_outbox_pending_messages */
    F_OUTBOX_AGE,     /* qrel_outbox_oldest_pending_age_seconds */
    F_DEDUP_WINDOW,   /* qrel_dedup_window_seconds */
    F_HORIZON,        /* qrel_retry_horizon_seconds */
    F_CLAIM_WINDOW,   /* qrel_claim_in_flight_window_seconds */
    F_ORPHANED,       /* qrel_lease_orphaned_messages */
    F_ETA_BEYOND,     /* qrel_lease_eta_beyond_messages */
    F_DL_DONE,        /* qrel_dead_letter_classified_messages{work="done"}, and the two below */
    F_DL_NOT_DONE,    /* … work="not_done" (read as the same family, told apart by the label) */
    F_DL_UNKNOWN,     /* … work="unknown" */
    F_COUNT
};

static const char *const fam_names[F_COUNT] = {
    [F_UP] = "qrel_collector_up",
    [F_DEPTH] = "qrel_queue_messages",
    [F_AGE] = "qrel_queue_oldest_message_age_seconds",
    [F_LEASE] = "qrel_lease_timeout_seconds",
    [F_HOLD] = "qrel_lease_oldest_age_seconds",
    [F_P99] = "qrel_handler_duration_seconds",
    [F_MARGIN] = "qrel_lease_margin_ratio",
    [F_MAX_DELIVERIES] = "qrel_max_deliveries",
    [F_DEAD] = "qrel_dead_letter_messages",
    [F_DEAD_AGE] = "qrel_dead_letter_oldest_age_seconds",
    [F_STALE] = "qrel_claims",
    [F_OUTBOX] = "qrel_outbox_pending_messages",
    [F_OUTBOX_AGE] = "qrel_outbox_oldest_pending_age_seconds",
    [F_DEDUP_WINDOW] = "qrel_dedup_window_seconds",
    [F_HORIZON] = "qrel_retry_horizon_seconds",
    [F_CLAIM_WINDOW] = "qrel_claim_in_flight_window_seconds",
    [F_ORPHANED] = "qrel_lease_orphaned_messages",
    [F_ETA_BEYOND] = "qrel_lease_eta_beyond_messages",
    [F_DL_DONE] = "qrel_dead_letter_classified_messages",
    [F_DL_NOT_DONE] = NULL, /* the same family as F_DL_DONE */
    [F_DL_UNKNOWN] = NULL,
};

struct rec {
    uint64_t key;                              /* hash of (source, kind, queue): sorts runs */
    const char *source, *kind, *queue, *group; /* group NULL when absent */
    const char *dlq;                           /* F_DEAD, F_DEAD_AGE: dead_letter_queue */
    int fam;
    double v;
};

static int cmp_str(const char *a, const char *b)
{
    if (a == b)
        return 0;
    if (!a)
        return -1; /* absent sorts first: a queue's own series before its groups' */
    if (!b)
        return 1;
    return strcmp(a, b);
}

/* Records are sorted by the hash of their queue first: each queue still becomes one run (its
 * own series before its groups'), and most comparisons end on two integers instead of up to four
 * strcmp calls. Equal strings of one set are one pointer, which cmp_str takes without reading. */
static int cmp_key(const struct rec *a, const struct rec *b)
{
    int c;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if ((c = cmp_str(a->source, b->source)) || (c = cmp_str(a->kind, b->kind)) ||
        (c = cmp_str(a->queue, b->queue)) || (c = cmp_str(a->group, b->group)))
        return c;
    return 0;
}

static int cmp_rec(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    int c = cmp_key(a, b);
    return c ? c : a->fam - b->fam;
}

struct recs {
    struct rec *v;
    size_t n, cap;
};

static void recs_push(struct recs *r, const struct rec *x)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = xrealloc(r->v, r->cap * sizeof *r->v);
    }
    r->v[r->n++] = *x;
}

/* Five of these per sample: the first byte rules most names out before strcmp is called. */
static const char *label(const struct metric_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].name[0] == name[0] && strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* The catalogue index of each family the rules read, so samples of other families are skipped
 * without reading their labels. */
static void family_map(int *by_index, size_t ncat)
{
    for (size_t i = 0; i < ncat; i++)
        by_index[i] = -1;
    for (int f = 0; f < F_COUNT; f++)
        for (size_t i = 0; fam_names[f] && i < ncat; i++)
            if (strcmp(metric_catalog_at(i)->name, fam_names[f]) == 0)
                by_index[i] = f;
}

static void collect_records(struct metric_set *const *sets, size_t nsets, struct recs *out)
{
    size_t ncat = metric_catalog_count();
    int *by_index = xcalloc(ncat ? ncat : 1, sizeof *by_index);
    family_map(by_index, ncat);
    struct metric_sample smp;
    for (size_t k = 0; k < nsets; k++) {
        struct metric_set *s = sets[k];
        size_t len = metric_set_len(s);
        for (size_t i = 0; i < len; i++) {
            size_t fi = metric_set_family_index(s, i);
            if (fi >= ncat || by_index[fi] < 0)
                continue;
            metric_set_get(s, i, &smp);
            struct rec r = {0};
            r.fam = by_index[fi];
            r.v = smp.value;
            r.source = label(&smp, "source");
            r.kind = label(&smp, "kind");
            r.queue = label(&smp, "queue");
            r.group = label(&smp, "group");
            if (!r.source || !r.kind || (r.fam != F_UP && !r.queue) || isnan(r.v))
                continue;
            if (r.queue)
                r.key = hashtab_hash(r.queue, strlen(r.queue),
                                     hashtab_hash(r.kind, strlen(r.kind),
                                                  hashtab_hash(r.source, strlen(r.source), 0)));
            if (r.fam == F_P99) {
                const char *q = label(&smp, "quantile");
                if (!q || strcmp(q, "0.99") != 0)
                    continue;
            } else if (r.fam == F_STALE) {
                const char *st = label(&smp, "state");
                if (!st || strcmp(st, "stale") != 0)
                    continue;
            } else if (r.fam == F_DL_DONE) {
                const char *w = label(&smp, "work");
                if (!w)
                    continue;
                r.fam = strcmp(w, "done") == 0       ? F_DL_DONE
                        : strcmp(w, "not_done") == 0 ? F_DL_NOT_DONE
                                                     : F_DL_UNKNOWN;
            } else if (r.fam == F_DEAD || r.fam == F_DEAD_AGE) {
                r.dlq = label(&smp, "dead_letter_queue");
                if (!r.dlq)
                    continue;
            }
            recs_push(out, &r);
        }
    }
    free(by_index);
}

/* ---- entries: one queue (or group) and its figures ---- */

struct entry {
    const char *source, *kind, *queue, *group;
    int has[F_COUNT];
    double v[F_COUNT];
    const char *dlq;      /* the first dead-letter queue's name */
    size_t ndlq;          /* how many dead-letter series */
    struct entry *parent; /* the queue-level entry (no group) of a group's entry, or NULL */
    int has_children;
    unsigned rules;
    enum audit_status worst;
};

static int same_queue(const struct entry *a, const struct entry *b)
{
    return cmp_str(a->source, b->source) == 0 && cmp_str(a->kind, b->kind) == 0 &&
           cmp_str(a->queue, b->queue) == 0;
}

/* Counts add up; a margin or a dedup window is as bad as its worst; other figures keep the
 * largest (ages, leases, horizons). */
static void entry_take(struct entry *en, const struct rec *r)
{
    int f = r->fam;
    if (f == F_DEAD) {
        if (!en->dlq)
            en->dlq = r->dlq;
        en->ndlq++;
    }
    if (!en->has[f]) {
        en->has[f] = 1;
        en->v[f] = r->v;
        return;
    }
    switch (f) {
    case F_DEPTH:
    case F_DEAD:
    case F_STALE:
    case F_OUTBOX:
    case F_ORPHANED:
    case F_ETA_BEYOND:
    case F_DL_DONE:
    case F_DL_NOT_DONE:
    case F_DL_UNKNOWN:
        en->v[f] += r->v;
        break;
    case F_MARGIN:
    case F_DEDUP_WINDOW:
        if (r->v < en->v[f])
            en->v[f] = r->v;
        break;
    default:
        if (r->v > en->v[f])
            en->v[f] = r->v;
    }
}

/* ---- findings ---- */

struct audit_ctx {
    const struct audit_config *cfg;
    struct audit_report *r;
    size_t findings_cap;
    struct entry *entries;
    size_t nentries;
    const struct rec *dlqs; /* F_DEAD records sorted by (source, dlq) */
    size_t ndlqs;
};

/* Marks an entry with a finding that concerns it (its row on the landing page). */
static void mark(struct entry *en, enum audit_rule rule)
{
    en->rules |= 1u << rule;
    if (status_rank(rules[rule].severity) > status_rank(en->worst))
        en->worst = rules[rule].severity;
}

static void add_finding(struct audit_ctx *x, enum audit_rule rule, struct entry *en, int with_group,
                        double value, double limit, struct buf *msg)
{
    mark(en, rule);
    struct audit_report *r = x->r;
    if (r->nfindings == x->findings_cap) {
        x->findings_cap = x->findings_cap ? x->findings_cap * 2 : 16;
        r->findings = xrealloc(r->findings, x->findings_cap * sizeof *r->findings);
    }
    struct audit_finding *f = &r->findings[r->nfindings++];
    f->rule = rule;
    f->severity = rules[rule].severity;
    f->source = xstrdup(en->source);
    f->kind = xstrdup(en->kind);
    f->queue = xstrdup(en->queue);
    f->group = with_group ? xstrdup(en->group) : NULL;
    f->value = value;
    f->limit = limit;
    f->message = buf_steal(msg);
    r->count[f->severity]++;
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
static void classified_advice(struct buf *m, const struct entry *en)
{
    double done = en->v[F_DL_DONE], not_done = en->v[F_DL_NOT_DONE];
    double unknown = en->v[F_DL_UNKNOWN];
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

static void rule_dead_letters(struct audit_ctx *x, struct entry *en)
{
    if (!en->has[F_DEAD] || !(en->v[F_DEAD] > 0))
        return;
    struct buf m;
    buf_init(&m);
    double n = en->v[F_DEAD];
    if (en->ndlq == 1)
        buf_printf(&m, "dead-letter queue %s holds %.0f message%s", en->dlq, n, plural(n));
    else
        buf_printf(&m, "its %zu dead-letter queues hold %.0f message%s", en->ndlq, n, plural(n));
    if (en->has[F_DEAD_AGE]) {
        put_secs(&m, ", the oldest ", en->v[F_DEAD_AGE]);
        buf_puts(&m, " old");
    }
    if (en->has[F_DL_DONE] || en->has[F_DL_NOT_DONE] || en->has[F_DL_UNKNOWN])
        classified_advice(&m, en);
    else
        buf_puts(&m, ": the broker gave up on them, which does not mean their work was not done; "
                     "classify each against your dedup or claim table before replaying, and give "
                     "the dead-letter queue an owner");
    add_finding(x, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, en, 1, n, 0, &m);
}

/* The figures behind a margin: "lease 30s, handler p99 34s, longest hold 12s → margin 0.88".
 * The p99 may come from the queue-level entry (handler times have no group label). */
static void margin_figures(struct buf *m, const struct entry *en, double *worst)
{
    const struct entry *p = en->parent;
    int has_p99 = en->has[F_P99] || (p && p->has[F_P99]);
    double p99 = en->has[F_P99] ? en->v[F_P99] : p && p->has[F_P99] ? p->v[F_P99] : 0;
    double margin = en->v[F_MARGIN];
    *worst = 0;
    if (en->has[F_LEASE]) {
        put_secs(m, "lease ", en->v[F_LEASE]);
        if (margin > 0)
            *worst = en->v[F_LEASE] / margin;
    }
    if (has_p99)
        put_secs(m, m->len ? ", handler p99 " : "handler p99 ", p99);
    if (en->has[F_HOLD] && en->v[F_HOLD] > 0)
        put_secs(m, m->len ? ", longest hold now " : "longest hold now ", en->v[F_HOLD]);
    buf_printf(m, "%smargin %.2f", m->len ? " → " : "", margin);
}

static void rule_margin(struct audit_ctx *x, struct entry *en)
{
    if (!en->has[F_MARGIN])
        return;
    double margin = en->v[F_MARGIN];
    enum audit_rule rule;
    if (margin < 1)
        rule = AUDIT_LEASE_MARGIN_BELOW_1;
    else if (margin < 2)
        rule = AUDIT_LEASE_MARGIN_BELOW_2;
    else
        return;
    if (x->cfg->disabled[rule])
        return;
    struct buf m;
    buf_init(&m);
    double worst;
    margin_figures(&m, en, &worst);
    if (rule == AUDIT_LEASE_MARGIN_BELOW_1) {
        buf_puts(&m, ": leases expire under running handlers, so slow messages are delivered "
                     "again while still being handled");
        if (en->has[F_MAX_DELIVERIES])
            buf_printf(&m, ", up to %.0f times", en->v[F_MAX_DELIVERIES]);
    } else {
        buf_printf(&m,
                   ": handlers %.2g times slower than now would have their leases expire "
                   "under them and make duplicates",
                   margin);
    }
    if (worst > 0)
        put_secs(&m, "; raise the lease above ", 2 * worst);
    else
        buf_puts(&m, "; raise the lease to twice the longest handler time");
    buf_puts(&m, " or extend it while the handler works");
    add_finding(x, rule, en, 1, margin, rule == AUDIT_LEASE_MARGIN_BELOW_1 ? 1 : 2, &m);
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
};

static void rule_count(struct audit_ctx *x, struct entry *en, const struct count_rule *c)
{
    if (!en->has[c->count] || !(en->v[c->count] > 0))
        return;
    struct buf m;
    buf_init(&m);
    double n = en->v[c->count];
    buf_printf(&m, "%.0f ", n);
    /* what is one of the literals above: a format by design */
    buf_printf(&m, c->what, plural(n), n == 1 ? "it" : "them");
    if (c->secs >= 0 && en->has[c->secs])
        put_secs(&m, " ", en->v[c->secs]);
    buf_puts(&m, c->todo);
    add_finding(x, c->rule, en, 1, n, 0, &m);
}

static void rule_outbox(struct audit_ctx *x, struct entry *en)
{
    double lag = x->cfg->outbox_lag;
    if (!en->has[F_OUTBOX_AGE] || !(en->v[F_OUTBOX_AGE] > lag))
        return;
    struct buf m;
    buf_init(&m);
    if (en->has[F_OUTBOX])
        buf_printf(&m, "%.0f row%s unpublished, ", en->v[F_OUTBOX], plural(en->v[F_OUTBOX]));
    put_secs(&m, "the oldest pending for ", en->v[F_OUTBOX_AGE]);
    put_secs(&m, " (limit ", lag);
    buf_puts(&m, "): the relay is behind or stopped; check the relay process and its errors");
    add_finding(x, AUDIT_OUTBOX_LAGGING, en, 1, en->v[F_OUTBOX_AGE], lag, &m);
}

/* The dedup window against the longest retry horizon on the same source and queue name: a
 * postgres source reports a consumer's dedup table and its claim table under different kinds. */
static void rule_dedup(struct audit_ctx *x, struct entry *en)
{
    if (!en->has[F_DEDUP_WINDOW])
        return;
    const struct entry *longest = NULL;
    for (size_t i = 0; i < x->nentries; i++) {
        const struct entry *h = &x->entries[i];
        if (h->has[F_HORIZON] && strcmp(h->source, en->source) == 0 &&
            strcmp(h->queue, en->queue) == 0 &&
            (!longest || h->v[F_HORIZON] > longest->v[F_HORIZON]))
            longest = h;
    }
    double window = en->v[F_DEDUP_WINDOW];
    if (!longest || !(window < longest->v[F_HORIZON]))
        return;
    double horizon = longest->v[F_HORIZON];
    struct buf m;
    buf_init(&m);
    put_secs(&m, "dedup window ", window);
    put_secs(&m, " is shorter than the retry horizon ", horizon);
    buf_printf(&m, " (%s", longest->kind);
    if (longest->group)
        buf_printf(&m, ", group %s", longest->group);
    buf_puts(&m, "): a retry after the window is handled again as a new message; keep dedup keys ");
    put_secs(&m, "longer than ", horizon);
    buf_puts(&m, " or make the retries end sooner");
    add_finding(x, AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON, en, 1, window, horizon, &m);
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

static int cmp_dlq(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    int c = strcmp(a->source, b->source);
    return c ? c : strcmp(a->dlq, b->dlq);
}

static int is_dead_letter_queue(const struct audit_ctx *x, const char *source, const char *queue)
{
    struct rec key = {0};
    key.source = source;
    key.dlq = queue;
    return bsearch(&key, x->dlqs, x->ndlqs, sizeof *x->dlqs, cmp_dlq) != NULL;
}

/* Over the entries [from, to) of one (source, kind, queue). */
static void rule_no_dlq(struct audit_ctx *x, size_t from, size_t to)
{
    struct entry *first = &x->entries[from];
    const char *hint = kind_hint(first->kind, AUDIT_NO_DEAD_LETTER_QUEUE);
    if (!hint || is_dead_letter_queue(x, first->source, first->queue))
        return;
    int depth = 0;
    for (size_t i = from; i < to; i++) {
        if (x->entries[i].has[F_DEAD])
            return;
        depth |= x->entries[i].has[F_DEPTH];
    }
    if (!depth)
        return;
    struct buf m;
    buf_init(&m);
    /* puts, not printf: a fleet without dead-letter queues has thousands of these */
    buf_puts(&m, "no dead-letter queue: a message that always fails is retried without end or "
                 "dropped, with nothing to alert on; ");
    buf_puts(&m, hint);
    add_finding(x, AUDIT_NO_DEAD_LETTER_QUEUE, first, 0, 0, 0, &m);
    for (size_t i = from + 1; i < to; i++) /* the finding is about every group of the queue */
        mark(&x->entries[i], AUDIT_NO_DEAD_LETTER_QUEUE);
}

/* A claim left by a crashed attempt defers every later delivery while it is younger than the
 * in-flight window W. With lease L and M deliveries, delivery k comes (k - 1) x L after the
 * first, so the last one finds the claim (k = M) aged (M - 1) x L, less the moment between
 * delivery and claim. It takes over only if that age exceeds W: the rule fires when
 * W >= (M - 1) x L. */
static void rule_claim_window(struct audit_ctx *x, struct entry *en)
{
    if (!en->has[F_CLAIM_WINDOW] || !en->has[F_LEASE] || !en->has[F_MAX_DELIVERIES])
        return;
    double w = en->v[F_CLAIM_WINDOW], lease = en->v[F_LEASE], m_del = en->v[F_MAX_DELIVERIES];
    double last = (m_del - 1) * lease;
    if (!(lease > 0) || !(w >= last))
        return;
    struct buf m;
    buf_init(&m);
    put_secs(&m, "in-flight window ", w);
    put_secs(&m, " with a lease of ", lease);
    buf_printf(&m, " and %.0f deliver%s: ", m_del, m_del == 1 ? "y" : "ies");
    if (m_del > 1) {
        put_secs(&m, "the last delivery comes ", last);
        buf_puts(&m, " after the first");
    } else {
        buf_puts(&m, "there is no later delivery");
    }
    buf_puts(&m, ", while the claim of a crashed attempt still looks in flight, so the message "
                 "is dead-lettered with its effect possibly never done; ");
    if (m_del > 1)
        put_secs(&m, "make the in-flight window shorter than ", last);
    else
        buf_puts(&m, "allow redeliveries");
    double need = floor(w / lease) + 2;
    buf_printf(&m, " or allow at least %.0f deliveries", need);
    add_finding(x, AUDIT_CLAIM_WINDOW_TOO_SHORT, en, 1, w, last, &m);
}

/* The rules over one entry besides the count rules, each skipped when disabled; margin
 * (AUDIT_RULE_COUNT here) checks its two rules itself. */
static const struct {
    enum audit_rule rule;
    void (*check)(struct audit_ctx *, struct entry *);
} entry_rules[] = {
    {AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, rule_dead_letters},
    {AUDIT_RULE_COUNT, rule_margin},
    {AUDIT_OUTBOX_LAGGING, rule_outbox},
    {AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON, rule_dedup},
    {AUDIT_CLAIM_WINDOW_TOO_SHORT, rule_claim_window},
};

/* ---- sorting the report ---- */

static int cmp_finding(const void *pa, const void *pb)
{
    const struct audit_finding *a = pa, *b = pb;
    int c = status_rank(b->severity) - status_rank(a->severity);
    if (c)
        return c;
    if (a->rule != b->rule)
        return (int)a->rule - (int)b->rule;
    if ((c = cmp_str(a->source, b->source)) || (c = cmp_str(a->queue, b->queue)) ||
        (c = cmp_str(a->group, b->group)) || (c = cmp_str(a->kind, b->kind)))
        return c;
    return 0;
}

static int cmp_queue(const void *pa, const void *pb)
{
    const struct audit_queue *a = pa, *b = pb;
    int c = status_rank(b->worst) - status_rank(a->worst);
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
    if ((c = cmp_str(a->source, b->source)) || (c = cmp_str(a->queue, b->queue)) ||
        (c = cmp_str(a->group, b->group)) || (c = cmp_str(a->kind, b->kind)))
        return c;
    return 0;
}

static void build_queues(struct audit_ctx *x)
{
    struct audit_report *r = x->r;
    r->queues = xcalloc(x->nentries ? x->nentries : 1, sizeof *r->queues);
    for (size_t i = 0; i < x->nentries; i++) {
        const struct entry *en = &x->entries[i];
        if (en->has_children)
            continue; /* shown within each of its groups */
        const struct entry *p = en->parent;
        struct audit_queue *q = &r->queues[r->nqueues++];
        q->source = xstrdup(en->source);
        q->kind = xstrdup(en->kind);
        q->queue = xstrdup(en->queue);
        q->group = xstrdup(en->group);
        q->has_margin = en->has[F_MARGIN];
        q->margin = en->v[F_MARGIN];
        const struct entry *d = en->has[F_DEAD] ? en : p && p->has[F_DEAD] ? p : NULL;
        q->has_dead = d != NULL;
        q->dead = d ? d->v[F_DEAD] : 0;
        if (en->has[F_AGE] || en->has[F_OUTBOX_AGE]) {
            q->has_age = 1;
            q->age = en->has[F_AGE] ? en->v[F_AGE] : en->v[F_OUTBOX_AGE];
        }
        if (en->has[F_DEPTH] || en->has[F_OUTBOX]) {
            q->has_depth = 1;
            q->depth = en->has[F_DEPTH] ? en->v[F_DEPTH] : en->v[F_OUTBOX];
        }
        q->worst = en->worst;
        q->rules = en->rules;
        if (p) {
            q->rules |= p->rules;
            if (status_rank(p->worst) > status_rank(q->worst))
                q->worst = p->worst;
        }
    }
    if (r->nqueues > 1)
        qsort(r->queues, r->nqueues, sizeof *r->queues, cmp_queue);
}

/* ---- the run ---- */

static struct audit_report *run(struct metric_set *const *sets, size_t nsets,
                                const struct audit_config *cfg, int with_queues)
{
    /* Sources built by hand (tests) have a zeroed section: that means the defaults too. */
    struct audit_config defaults;
    if (!cfg || !(cfg->outbox_lag > 0)) {
        audit_config_default(&defaults);
        if (cfg)
            memcpy(defaults.disabled, cfg->disabled, sizeof defaults.disabled);
        cfg = &defaults;
    }
    struct audit_report *r = xcalloc(1, sizeof *r);
    r->queue_series = cfg->queue_series;
    struct recs recs = {0};
    collect_records(sets, nsets, &recs);

    /* Sources first: they come from the meta series alone. */
    size_t nup = 0;
    for (size_t i = 0; i < recs.n; i++)
        nup += recs.v[i].fam == F_UP;
    r->sources = xcalloc(nup ? nup : 1, sizeof *r->sources);
    for (size_t i = 0; i < recs.n; i++) {
        const struct rec *u = &recs.v[i];
        if (u->fam != F_UP)
            continue;
        struct audit_source *s = &r->sources[r->nsources++];
        s->name = xstrdup(u->source);
        s->kind = xstrdup(u->kind);
        s->up = u->v == 1;
        if (!s->up)
            r->count[AUDIT_UNKNOWN]++;
    }

    /* The queue records, sorted into runs of one key. */
    size_t keep = 0;
    for (size_t i = 0; i < recs.n; i++)
        if (recs.v[i].fam != F_UP)
            recs.v[keep++] = recs.v[i];
    recs.n = keep;
    if (recs.n > 1) /* qsort wants a non-NULL array even for 0 items */
        qsort(recs.v, recs.n, sizeof *recs.v, cmp_rec);

    struct audit_ctx x = {0};
    x.cfg = cfg;
    x.r = r;
    /* Sized by what they hold (one entry per run, one record per dead-letter series), not by
     * the records: at 10,000 queues that is a few hundred KiB to zero instead of megabytes. */
    size_t nruns = 0, ndead = 0;
    for (size_t i = 0; i < recs.n; i++) {
        nruns += i == 0 || cmp_key(&recs.v[i - 1], &recs.v[i]) != 0;
        ndead += recs.v[i].fam == F_DEAD;
    }
    x.entries = xcalloc(nruns ? nruns : 1, sizeof *x.entries);
    struct rec *dlqs = xcalloc(ndead ? ndead : 1, sizeof *dlqs);
    for (size_t i = 0; i < recs.n; i++) {
        const struct rec *rc = &recs.v[i];
        if (rc->fam == F_DEAD)
            dlqs[x.ndlqs++] = *rc;
        struct entry *en = x.nentries ? &x.entries[x.nentries - 1] : NULL;
        if (!en || cmp_key(&recs.v[i - 1], rc) != 0) {
            en = &x.entries[x.nentries++];
            en->source = rc->source;
            en->kind = rc->kind;
            en->queue = rc->queue;
            en->group = rc->group;
        }
        entry_take(en, rc);
    }
    if (x.ndlqs > 1)
        qsort(dlqs, x.ndlqs, sizeof *dlqs, cmp_dlq);
    x.dlqs = dlqs;
    /* A group's entry follows its queue's own entry (absent groups sort first). */
    struct entry *queue_level = NULL;
    for (size_t i = 0; i < x.nentries; i++) {
        struct entry *en = &x.entries[i];
        if (!en->group) {
            queue_level = en;
        } else if (queue_level && same_queue(queue_level, en)) {
            en->parent = queue_level;
            queue_level->has_children = 1;
        }
    }

    for (size_t i = 0; i < x.nentries; i++) {
        struct entry *en = &x.entries[i];
        for (size_t k = 0; k < sizeof entry_rules / sizeof *entry_rules; k++)
            if (entry_rules[k].rule == AUDIT_RULE_COUNT || !cfg->disabled[entry_rules[k].rule])
                entry_rules[k].check(&x, en);
        for (size_t k = 0; k < sizeof count_rules / sizeof *count_rules; k++)
            if (!cfg->disabled[count_rules[k].rule])
                rule_count(&x, en, &count_rules[k]);
    }
    if (!cfg->disabled[AUDIT_NO_DEAD_LETTER_QUEUE]) {
        for (size_t i = 0, j; i < x.nentries; i = j) {
            for (j = i + 1; j < x.nentries && same_queue(&x.entries[j], &x.entries[i]); j++)
                ;
            rule_no_dlq(&x, i, j);
        }
    }

    if (with_queues)
        build_queues(&x);
    if (r->nfindings > 1)
        qsort(r->findings, r->nfindings, sizeof *r->findings, cmp_finding);

    r->status = r->count[AUDIT_CRITICAL]  ? AUDIT_CRITICAL
                : r->count[AUDIT_UNKNOWN] ? AUDIT_UNKNOWN
                : r->count[AUDIT_WARNING] ? AUDIT_WARNING
                                          : AUDIT_OK;
    free(dlqs);
    free(x.entries);
    free(recs.v);
    return r;
}

struct audit_report *audit_run(struct metric_set *const *sets, size_t nsets,
                               const struct audit_config *cfg)
{
    return run(sets, nsets, cfg, 1);
}

struct audit_report *audit_run_findings(struct metric_set *const *sets, size_t nsets,
                                        const struct audit_config *cfg)
{
    return run(sets, nsets, cfg, 0);
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

/* ---- the series ---- */

/* How far past its limit a finding lies, larger for worse. */
static double badness(const struct audit_finding *f)
{
    double d = rules[f->rule].below ? f->limit - f->value : f->value - f->limit;
    return isnan(d) ? 0 : d;
}

/* Groups the findings by (source, kind, rule), worst first within each, then by name so that
 * equally bad queues keep a stable choice from scrape to scrape. The severity comes first only
 * to keep criticals at the top of the body. */
static int cmp_series(const void *pa, const void *pb)
{
    const struct audit_finding *a = *(const struct audit_finding *const *)pa;
    const struct audit_finding *b = *(const struct audit_finding *const *)pb;
    int c = status_rank(b->severity) - status_rank(a->severity);
    if (c)
        return c;
    if (a->rule != b->rule)
        return (int)a->rule - (int)b->rule;
    if ((c = cmp_str(a->source, b->source)) || (c = cmp_str(a->kind, b->kind)))
        return c;
    double ba = badness(a), bb = badness(b);
    if (ba != bb)
        return ba > bb ? -1 : 1;
    if ((c = cmp_str(a->queue, b->queue)) || (c = cmp_str(a->group, b->group)))
        return c;
    return 0;
}

static int same_series_group(const struct audit_finding *a, const struct audit_finding *b)
{
    return a->rule == b->rule && strcmp(a->source, b->source) == 0 && strcmp(a->kind, b->kind) == 0;
}

static int add_queue_series(const struct audit_finding *f, struct metric_set *out)
{
    const char *rule = audit_rule_name(f->rule), *sev = audit_status_label(f->severity);
    return f->group
               ? metric_set_add(out, "qrel_audit_failed", 1.0, "source", f->source, "kind", f->kind,
                                "queue", f->queue, "group", f->group, "rule", rule, "severity", sev,
                                NULL)
               : metric_set_add(out, "qrel_audit_failed", 1.0, "source", f->source, "kind", f->kind,
                                "queue", f->queue, "rule", rule, "severity", sev, NULL);
}

int audit_add_metrics(const struct audit_report *r, struct metric_set *out)
{
    if (!r->nfindings)
        return 0;
    const struct audit_finding **by = xcalloc(r->nfindings, sizeof *by);
    for (size_t i = 0; i < r->nfindings; i++)
        by[i] = &r->findings[i];
    qsort(by, r->nfindings, sizeof *by, cmp_series);
    int rc = 0;
    for (size_t i = 0, j; i < r->nfindings && rc == 0; i = j) {
        for (j = i + 1; j < r->nfindings && same_series_group(by[i], by[j]); j++)
            ;
        const struct audit_finding *f = by[i];
        rc = metric_set_add(out, "qrel_audit_failed_queues", (double)(j - i), "source", f->source,
                            "kind", f->kind, "rule", audit_rule_name(f->rule), "severity",
                            audit_status_label(f->severity), NULL);
        size_t keep = j - i;
        if (r->queue_series != AUDIT_QUEUE_SERIES_ALL && (size_t)r->queue_series < keep)
            keep = (size_t)r->queue_series;
        for (size_t k = i; k < i + keep && rc == 0; k++)
            rc = add_queue_series(by[k], out);
    }
    free(by);
    return rc ? -1 : 0;
}
