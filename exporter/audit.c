/* audit.c: see audit.h; each rule's condition is documented in docs/check.md.
 *
 * One pass over the sets adds each sample the rules read to the entry of its (source, kind,
 * queue, group), found through a hash index, so each queue (or group) becomes one entry holding
 * its figures; what a queue's entries share (its own entry, the families any of them has) is
 * kept per (source, kind, queue). The rules then read entries only. Entries point into the sets
 * (strings a set owns stay valid while nobody adds to it), so the pass copies nothing; the
 * report copies what it keeps, and the exporter's series path (audit_series.c) not even that. */
#include "audit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_series.h"
#include "collector.h"
#include "hashtab.h"
#include "alloc.h"
#include "buf.h"

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
int audit_status_rank(enum audit_status s)
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

/* ---- the families the rules read ---- */

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

/* Orders names as the report does: absent (NULL) first, so a queue's own finding comes before
 * its groups'. */
int audit_cmp_name(const char *a, const char *b)
{
    if (a == b)
        return 0;
    if (!a)
        return -1;
    if (!b)
        return 1;
    return strcmp(a, b);
}

static int same_name(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* ---- entries: one queue (or group) and its figures ---- */

/* Figures kept in the entry itself: a queue reports a handful of the families (a Redis stream
 * group 3 to 7), and 8 inline instead of all 21 halve the entry, the bulk of the audit's memory
 * at 10,000 queues. An entry with more moves them to an array of all. */
#define ENTRY_INLINE 8

struct entry {
    const char *source, *kind, *queue, *group; /* into the sets; group NULL when absent */
    double v[ENTRY_INLINE]; /* the figures of the families in has, in family order ... */
    double *spill;          /* ... or all F_COUNT of them, once it has more families */
    uint32_t has;           /* bit (1 << fam) for each family in v */
    uint32_t queue_id;      /* its (source, kind, queue) in audit_ctx.queues */
    const char *dlq;        /* the first dead-letter queue's name */
    size_t ndlq;            /* how many dead-letter series */
    unsigned rules;
    enum audit_status worst;
};

static int has(const struct entry *en, int fam)
{
    return (int)(en->has >> fam & 1);
}

/* Where the figure of family fam is among the inline ones: after those of lower families. */
static unsigned inline_index(uint32_t has, int fam)
{
    return (unsigned)__builtin_popcount(has & ((1u << fam) - 1));
}

/* The figure of family fam, 0 when the entry has none. */
static double val(const struct entry *en, int fam)
{
    if (!has(en, fam))
        return 0;
    return en->spill ? en->spill[fam] : en->v[inline_index(en->has, fam)];
}

/* The place of family fam's figure, made (and *fresh set) if the entry had none. */
static double *val_slot(struct entry *en, int fam, int *fresh)
{
    uint32_t bit = 1u << fam;
    *fresh = !(en->has & bit);
    if (!en->spill && *fresh && __builtin_popcount(en->has) == ENTRY_INLINE) {
        en->spill = xcalloc(F_COUNT, sizeof *en->spill);
        for (int f = 0; f < F_COUNT; f++)
            if (has(en, f))
                en->spill[f] = en->v[inline_index(en->has, f)];
    }
    if (en->spill) {
        en->has |= bit;
        return &en->spill[fam];
    }
    unsigned i = inline_index(en->has, fam);
    if (*fresh) {
        unsigned n = (unsigned)__builtin_popcount(en->has);
        memmove(&en->v[i + 1], &en->v[i], (n - i) * sizeof *en->v);
        en->has |= bit;
    }
    return &en->v[i];
}

/* What the entries of one (source, kind, queue) share: the queue and each of its groups. */
struct queue_agg {
    uint32_t first;    /* its first entry, which names the queue */
    uint32_t level;    /* its entry without a group, or NO_ENTRY */
    uint32_t nentries; /* all of them, its own and its groups' */
    uint32_t has;      /* the has bits of all of them */
    int no_dlq;        /* no_dead_letter_queue fired on it */
};

#define NO_ENTRY UINT32_MAX

/* A dead_letter_queue label: that queue of that source is a dead-letter queue. */
struct dlq_name {
    const char *source, *dlq;
};

/* Entries live in blocks, so that a pointer to one stays valid as more are added and no array
 * of them is ever copied to grow; the last block is the only slack. */
#define ENTRY_BLOCK 256

struct audit_ctx {
    const struct audit_config *cfg;
    struct audit_report *r;      /* the full report, or NULL ... */
    struct audit_series *series; /* ... when only the series are wanted */
    size_t findings_cap, sources_cap;
    struct buf msg; /* the message of the last finding, until finding_end hands it over */
    int msg_open;
    struct entry **blocks;
    size_t nentries, nblocks;
    struct hashtab entry_index; /* (source, kind, queue, group) to entry id */
    struct queue_agg *queues;
    size_t nqueues, queues_cap;
    struct hashtab queue_index; /* (source, kind, queue) to queues[id] */
    struct dlq_name *dlqs;      /* sorted by (source, dlq) once collected */
    size_t ndlqs, dlqs_cap;
};

static struct entry *entry_at(const struct audit_ctx *x, size_t id)
{
    return &x->blocks[id / ENTRY_BLOCK][id % ENTRY_BLOCK];
}

/* The queue-level entry of a group's entry, or NULL. */
static const struct entry *parent_of(const struct audit_ctx *x, const struct entry *en)
{
    uint32_t level = x->queues[en->queue_id].level;
    return en->group && level != NO_ENTRY ? entry_at(x, level) : NULL;
}

static uint64_t queue_hash(const char *source, const char *kind, const char *queue)
{
    uint64_t h = hashtab_hash(source, strlen(source), 0);
    h = hashtab_hash(kind, strlen(kind), h);
    return hashtab_hash(queue, strlen(queue), h);
}

static uint64_t entry_hash(uint64_t queue_h, const char *group)
{
    return group ? hashtab_hash(group, strlen(group), queue_h) : queue_h;
}

static uint64_t entry_hash_of(const void *ctx, uint32_t id)
{
    const struct entry *en = entry_at(ctx, id);
    return entry_hash(queue_hash(en->source, en->kind, en->queue), en->group);
}

static uint64_t queue_hash_of(const void *ctx, uint32_t id)
{
    const struct audit_ctx *x = ctx;
    const struct entry *en = entry_at(x, x->queues[id].first);
    return queue_hash(en->source, en->kind, en->queue);
}

/* The queue of entry id (new, named by en), made on its first entry. */
static uint32_t join_queue(struct audit_ctx *x, uint64_t h, const struct entry *en, uint32_t id)
{
    struct hashtab_probe p;
    uint32_t qid;
    for (qid = hashtab_first(&x->queue_index, h, &p); qid != HASHTAB_END;
         qid = hashtab_next(&x->queue_index, &p)) {
        const struct entry *f = entry_at(x, x->queues[qid].first);
        if (same_name(f->queue, en->queue) && same_name(f->source, en->source) &&
            same_name(f->kind, en->kind))
            break;
    }
    if (qid == HASHTAB_END) {
        if (x->nqueues == x->queues_cap) {
            x->queues_cap = x->queues_cap ? x->queues_cap * 2 : 64;
            x->queues = xrealloc(x->queues, x->queues_cap * sizeof *x->queues);
        }
        qid = (uint32_t)x->nqueues++;
        x->queues[qid] = (struct queue_agg){.first = id, .level = NO_ENTRY};
        hashtab_add(&x->queue_index, &p, qid, queue_hash_of, x);
    }
    struct queue_agg *q = &x->queues[qid];
    q->nentries++;
    if (!en->group)
        q->level = id;
    return qid;
}

/* The entry of (source, kind, queue, group), made on its first sample. */
static struct entry *find_entry(struct audit_ctx *x, const char *source, const char *kind,
                                const char *queue, const char *group)
{
    uint64_t qh = queue_hash(source, kind, queue);
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&x->entry_index, entry_hash(qh, group), &p); id != HASHTAB_END;
         id = hashtab_next(&x->entry_index, &p)) {
        struct entry *en = entry_at(x, id);
        if (same_name(en->queue, queue) && same_name(en->group, group) &&
            same_name(en->source, source) && same_name(en->kind, kind))
            return en;
    }
    if (x->nentries % ENTRY_BLOCK == 0) {
        x->blocks = xrealloc(x->blocks, (x->nblocks + 1) * sizeof *x->blocks);
        x->blocks[x->nblocks++] = xcalloc(ENTRY_BLOCK, sizeof **x->blocks);
    }
    uint32_t id = (uint32_t)x->nentries++;
    struct entry *en = entry_at(x, id);
    en->source = source;
    en->kind = kind;
    en->queue = queue;
    en->group = group;
    hashtab_add(&x->entry_index, &p, id, entry_hash_of, x);
    en->queue_id = join_queue(x, qh, en, id);
    return en;
}

/* Counts add up; a margin or a dedup window is as bad as its worst; other figures keep the
 * largest (ages, leases, horizons). */
static void entry_take(struct audit_ctx *x, struct entry *en, int f, double v, const char *dlq)
{
    if (f == F_DEAD) {
        if (!en->dlq)
            en->dlq = dlq;
        en->ndlq++;
        if (x->ndlqs == x->dlqs_cap) {
            x->dlqs_cap = x->dlqs_cap ? x->dlqs_cap * 2 : 16;
            x->dlqs = xrealloc(x->dlqs, x->dlqs_cap * sizeof *x->dlqs);
        }
        x->dlqs[x->ndlqs++] = (struct dlq_name){en->source, dlq};
    }
    x->queues[en->queue_id].has |= 1u << f;
    int fresh;
    double *p = val_slot(en, f, &fresh);
    if (fresh) {
        *p = v;
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
        *p += v;
        break;
    case F_MARGIN:
    case F_DEDUP_WINDOW:
        if (v < *p)
            *p = v;
        break;
    default:
        if (v > *p)
            *p = v;
    }
}

/* A qrel_collector_up series: one source of the report. */
static void add_source(struct audit_ctx *x, const char *name, const char *kind, double up)
{
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

/* The family of a sample the rules read, told apart by its label where one family holds
 * several figures, or -1 to skip it. */
static int sample_family(int fam, const struct metric_sample *smp)
{
    if (fam == F_P99) {
        const char *q = label(smp, "quantile");
        return q && strcmp(q, "0.99") == 0 ? fam : -1;
    }
    if (fam == F_STALE) {
        const char *st = label(smp, "state");
        return st && strcmp(st, "stale") == 0 ? fam : -1;
    }
    if (fam == F_DL_DONE) {
        const char *w = label(smp, "work");
        if (!w)
            return -1;
        return strcmp(w, "done") == 0       ? F_DL_DONE
               : strcmp(w, "not_done") == 0 ? F_DL_NOT_DONE
                                            : F_DL_UNKNOWN;
    }
    return fam;
}

/* One pass over the samples into entries. Samples of one queue or group mostly come one after
 * another with the very label pointers of the one before (a set keeps one copy of each
 * string), which skips the lookup. */
static void collect(struct audit_ctx *x, struct metric_set *const *sets, size_t nsets)
{
    size_t ncat = metric_catalog_count();
    int *by_index = xcalloc(ncat ? ncat : 1, sizeof *by_index);
    family_map(by_index, ncat);
    struct metric_sample smp;
    struct entry *last = NULL;
    for (size_t k = 0; k < nsets; k++) {
        struct metric_set *s = sets[k];
        size_t len = metric_set_len(s);
        for (size_t i = 0; i < len; i++) {
            size_t fi = metric_set_family_index(s, i);
            if (fi >= ncat || by_index[fi] < 0)
                continue;
            metric_set_get(s, i, &smp);
            const char *source = label(&smp, "source"), *kind = label(&smp, "kind");
            const char *queue = label(&smp, "queue"), *dlq = NULL;
            int fam = by_index[fi];
            if (!source || !kind || (fam != F_UP && !queue) || isnan(smp.value))
                continue;
            if (fam == F_UP) {
                add_source(x, source, kind, smp.value);
                continue;
            }
            if ((fam = sample_family(fam, &smp)) < 0)
                continue;
            if (fam == F_DEAD || fam == F_DEAD_AGE) {
                dlq = label(&smp, "dead_letter_queue");
                if (!dlq)
                    continue;
            }
            const char *group = label(&smp, "group");
            if (!last || last->queue != queue || last->group != group || last->source != source ||
                last->kind != kind)
                last = find_entry(x, source, kind, queue, group);
            entry_take(x, last, fam, smp.value, dlq);
        }
    }
    free(by_index);
}

/* ---- findings ---- */

/* Marks an entry with a finding that concerns it (its row on the landing page). */
static void mark(struct entry *en, enum audit_rule rule)
{
    en->rules |= 1u << rule;
    if (audit_status_rank(rules[rule].severity) > audit_status_rank(en->worst))
        en->worst = rules[rule].severity;
}

/* How far past its limit a finding lies, larger for worse: below the limit for a margin or a
 * dedup window, above it for messages and ages. */
static double badness(enum audit_rule rule, double value, double limit)
{
    double d = rules[rule].below ? limit - value : value - limit;
    return isnan(d) ? 0 : d;
}

/* A finding of rule on en. For the report, returns the buffer its message goes into (handed to
 * the finding by finding_end); for the series, NULL: they need no message, and skipping it is
 * most of the work at 10,000 findings. */
static struct buf *add_finding(struct audit_ctx *x, enum audit_rule rule, struct entry *en,
                               int with_group, double value, double limit)
{
    mark(en, rule);
    if (x->series) {
        audit_series_add(x->series, rule, en->source, en->kind, en->queue,
                         with_group ? en->group : NULL, badness(rule, value, limit));
        return NULL;
    }
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
static void classified_advice(struct buf *m, const struct entry *en)
{
    double done = val(en, F_DL_DONE), not_done = val(en, F_DL_NOT_DONE);
    double unknown = val(en, F_DL_UNKNOWN);
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
    if (!has(en, F_DEAD) || !(val(en, F_DEAD) > 0))
        return;
    double n = val(en, F_DEAD);
    struct buf *m = add_finding(x, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, en, 1, n, 0);
    if (!m)
        return; /* the series need no message */
    if (en->ndlq == 1)
        buf_printf(m, "dead-letter queue %s holds %.0f message%s", en->dlq, n, plural(n));
    else
        buf_printf(m, "its %zu dead-letter queues hold %.0f message%s", en->ndlq, n, plural(n));
    if (has(en, F_DEAD_AGE)) {
        put_secs(m, ", the oldest ", val(en, F_DEAD_AGE));
        buf_puts(m, " old");
    }
    if (has(en, F_DL_DONE) || has(en, F_DL_NOT_DONE) || has(en, F_DL_UNKNOWN))
        classified_advice(m, en);
    else
        buf_puts(m, ": the broker gave up on them, which does not mean their work was not done; "
                    "classify each against your dedup or claim table before replaying, and give "
                    "the dead-letter queue an owner");
}

/* The figures behind a margin: "lease 30s, handler p99 34s, longest hold 12s → margin 0.88".
 * The p99 may come from the queue-level entry (handler times have no group label). */
static void margin_figures(struct buf *m, const struct entry *en, const struct entry *p,
                           double *worst)
{
    int has_p99 = has(en, F_P99) || (p && has(p, F_P99));
    double p99 = has(en, F_P99) ? val(en, F_P99) : p && has(p, F_P99) ? val(p, F_P99) : 0;
    double margin = val(en, F_MARGIN);
    *worst = 0;
    if (has(en, F_LEASE)) {
        put_secs(m, "lease ", val(en, F_LEASE));
        if (margin > 0)
            *worst = val(en, F_LEASE) / margin;
    }
    if (has_p99)
        put_secs(m, m->len ? ", handler p99 " : "handler p99 ", p99);
    if (has(en, F_HOLD) && val(en, F_HOLD) > 0)
        put_secs(m, m->len ? ", longest hold now " : "longest hold now ", val(en, F_HOLD));
    buf_printf(m, "%smargin %.2f", m->len ? " → " : "", margin);
}

static void rule_margin(struct audit_ctx *x, struct entry *en)
{
    if (!has(en, F_MARGIN))
        return;
    double margin = val(en, F_MARGIN);
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
    margin_figures(m, en, parent_of(x, en), &worst);
    if (rule == AUDIT_LEASE_MARGIN_BELOW_1) {
        buf_puts(m, ": leases expire under running handlers, so slow messages are delivered "
                    "again while still being handled");
        if (has(en, F_MAX_DELIVERIES))
            buf_printf(m, ", up to %.0f times", val(en, F_MAX_DELIVERIES));
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
};

static void rule_count(struct audit_ctx *x, struct entry *en, const struct count_rule *c)
{
    if (!has(en, c->count) || !(val(en, c->count) > 0))
        return;
    double n = val(en, c->count);
    struct buf *m = add_finding(x, c->rule, en, 1, n, 0);
    if (!m)
        return; /* the series need no message */
    buf_printf(m, "%.0f ", n);
    /* what is one of the literals above: a format by design */
    buf_printf(m, c->what, plural(n), n == 1 ? "it" : "them");
    if (c->secs >= 0 && has(en, c->secs))
        put_secs(m, " ", val(en, c->secs));
    buf_puts(m, c->todo);
}

static void rule_outbox(struct audit_ctx *x, struct entry *en)
{
    double lag = x->cfg->outbox_lag;
    if (!has(en, F_OUTBOX_AGE) || !(val(en, F_OUTBOX_AGE) > lag))
        return;
    struct buf *m = add_finding(x, AUDIT_OUTBOX_LAGGING, en, 1, val(en, F_OUTBOX_AGE), lag);
    if (!m)
        return; /* the series need no message */
    if (has(en, F_OUTBOX))
        buf_printf(m, "%.0f row%s unpublished, ", val(en, F_OUTBOX), plural(val(en, F_OUTBOX)));
    put_secs(m, "the oldest pending for ", val(en, F_OUTBOX_AGE));
    put_secs(m, " (limit ", lag);
    buf_puts(m, "): the relay is behind or stopped; check the relay process and its errors");
}

/* The dedup window against the longest retry horizon on the same source and queue name: a
 * postgres source reports a consumer's dedup table and its claim table under different kinds. */
static void rule_dedup(struct audit_ctx *x, struct entry *en)
{
    if (!has(en, F_DEDUP_WINDOW))
        return;
    const struct entry *longest = NULL;
    for (size_t i = 0; i < x->nentries; i++) {
        const struct entry *h = entry_at(x, i);
        if (has(h, F_HORIZON) && strcmp(h->source, en->source) == 0 &&
            strcmp(h->queue, en->queue) == 0 &&
            (!longest || val(h, F_HORIZON) > val(longest, F_HORIZON)))
            longest = h;
    }
    double window = val(en, F_DEDUP_WINDOW);
    if (!longest || !(window < val(longest, F_HORIZON)))
        return;
    double horizon = val(longest, F_HORIZON);
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

static int cmp_dlq(const void *pa, const void *pb)
{
    const struct dlq_name *a = pa, *b = pb;
    int c = strcmp(a->source, b->source);
    return c ? c : strcmp(a->dlq, b->dlq);
}

static int is_dead_letter_queue(const struct audit_ctx *x, const char *source, const char *queue)
{
    struct dlq_name key = {source, queue};
    return x->ndlqs && bsearch(&key, x->dlqs, x->ndlqs, sizeof *x->dlqs, cmp_dlq) != NULL;
}

/* Over one (source, kind, queue) and all its groups. */
static void rule_no_dlq(struct audit_ctx *x, struct queue_agg *q)
{
    struct entry *first = entry_at(x, q->first);
    const char *hint = kind_hint(first->kind, AUDIT_NO_DEAD_LETTER_QUEUE);
    if (!hint || is_dead_letter_queue(x, first->source, first->queue))
        return;
    if (q->has & 1u << F_DEAD || !(q->has & 1u << F_DEPTH))
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

/* A claim left by a crashed attempt defers every later delivery while it is younger than the
 * in-flight window W. With lease L and M deliveries, delivery k comes (k - 1) x L after the
 * first, so the last one finds the claim (k = M) aged (M - 1) x L, less the moment between
 * delivery and claim. It takes over only if that age exceeds W: the rule fires when
 * W >= (M - 1) x L. */
static void rule_claim_window(struct audit_ctx *x, struct entry *en)
{
    if (!has(en, F_CLAIM_WINDOW) || !has(en, F_LEASE) || !has(en, F_MAX_DELIVERIES))
        return;
    double w = val(en, F_CLAIM_WINDOW), lease = val(en, F_LEASE), m_del = val(en, F_MAX_DELIVERIES);
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
    r->queues = xcalloc(x->nentries ? x->nentries : 1, sizeof *r->queues);
    for (size_t i = 0; i < x->nentries; i++) {
        struct entry *en = entry_at(x, i);
        const struct queue_agg *qa = &x->queues[en->queue_id];
        if (!en->group && qa->nentries > 1)
            continue; /* shown within each of its groups */
        if (qa->no_dlq)
            mark(en, AUDIT_NO_DEAD_LETTER_QUEUE);
        const struct entry *p = parent_of(x, en);
        struct audit_queue *q = &r->queues[r->nqueues++];
        q->source = xstrdup(en->source);
        q->kind = xstrdup(en->kind);
        q->queue = xstrdup(en->queue);
        q->group = xstrdup(en->group);
        q->has_margin = has(en, F_MARGIN);
        q->margin = val(en, F_MARGIN);
        const struct entry *d = has(en, F_DEAD) ? en : p && has(p, F_DEAD) ? p : NULL;
        q->has_dead = d != NULL;
        q->dead = d ? val(d, F_DEAD) : 0;
        if (has(en, F_AGE) || has(en, F_OUTBOX_AGE)) {
            q->has_age = 1;
            q->age = has(en, F_AGE) ? val(en, F_AGE) : val(en, F_OUTBOX_AGE);
        }
        if (has(en, F_DEPTH) || has(en, F_OUTBOX)) {
            q->has_depth = 1;
            q->depth = has(en, F_DEPTH) ? val(en, F_DEPTH) : val(en, F_OUTBOX);
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
    collect(x, sets, nsets);
    if (x->ndlqs > 1)
        qsort(x->dlqs, x->ndlqs, sizeof *x->dlqs, cmp_dlq);
    for (size_t i = 0; i < x->nentries; i++) {
        struct entry *en = entry_at(x, i);
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
    for (size_t i = 0; i < x->nqueues && !cfg->disabled[AUDIT_NO_DEAD_LETTER_QUEUE]; i++) {
        rule_no_dlq(x, &x->queues[i]);
        finding_end(x);
    }
}

static void ctx_free(struct audit_ctx *x)
{
    for (size_t i = 0; i < x->nentries; i++)
        free(entry_at(x, i)->spill);
    for (size_t i = 0; i < x->nblocks; i++)
        free(x->blocks[i]);
    free(x->blocks);
    hashtab_free(&x->entry_index);
    hashtab_free(&x->queue_index);
    free(x->queues);
    free(x->dlqs);
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
                         badness(f->rule, f->value, f->limit));
    }
    int rc = audit_series_write(s, out);
    audit_series_free(s);
    return rc;
}
