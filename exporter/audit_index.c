/* audit_index.c: see audit_index.h.
 *
 * Samples of one queue or group mostly come one after another with the very label pointers of the
 * one before (a set keeps one copy of each string), which skips the hash lookup; a family the
 * rules do not read is skipped by its catalogue index, before any of its labels is read. */
#include "audit_index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

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
    [F_SKIPPED] = "qrel_skipped_entries",
    [F_NOT_KEPT] = "qrel_dead_letters_not_kept",
    [F_TIMEOUT] = "qrel_handler_timeout_seconds",
    [F_DL_DONE] = "qrel_dead_letter_classified_messages",
    [F_DL_NOT_DONE] = NULL, /* the same family as F_DL_DONE */
    [F_DL_UNKNOWN] = NULL,
    [F_DL_POISON] = "qrel_dead_letter_replayed_messages",
    [F_SOURCE_QUEUES] = "qrel_source_queues",
    [F_READY] = NULL, /* read from F_DEPTH's samples (ready_sample) */
    [F_CONSUMERS] = "qrel_queue_consumers",
    [F_RETENTION] = "qrel_queue_retention_seconds",
    [F_DL_RETENTION] = "qrel_dead_letter_retention_seconds",
};

static int same_name(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The place of family fam's figure, made (and *fresh set) if the entry had none. */
static double *val_slot(struct audit_entry *en, int fam, int *fresh)
{
    uint32_t bit = 1u << fam;
    *fresh = !(en->has & bit);
    if (!en->spill && *fresh && entry_popcount(en->has) == AUDIT_ENTRY_INLINE) {
        en->spill = xcalloc(F_COUNT, sizeof *en->spill);
        for (int f = 0; f < F_COUNT; f++)
            if (entry_has(en, f))
                en->spill[f] = en->v[entry_inline_index(en->has, f)];
    }
    if (en->spill) {
        en->has |= bit;
        return &en->spill[fam];
    }
    unsigned i = entry_inline_index(en->has, fam);
    if (*fresh) {
        unsigned n = entry_popcount(en->has);
        memmove(&en->v[i + 1], &en->v[i], (n - i) * sizeof *en->v);
        en->has |= bit;
    }
    return &en->v[i];
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
    const struct audit_entry *en = entry_at(ctx, id);
    return entry_hash(queue_hash(en->source, en->kind, en->queue), en->group);
}

static uint64_t queue_hash_of(const void *ctx, uint32_t id)
{
    const struct audit_index *ix = ctx;
    const struct audit_entry *en = entry_at(ix, ix->queues[id].first);
    return queue_hash(en->source, en->kind, en->queue);
}

/* The queue of entry id (new, named by en), made on its first entry. */
static uint32_t join_queue(struct audit_index *ix, uint64_t h, const struct audit_entry *en,
                           uint32_t id)
{
    struct hashtab_probe p;
    uint32_t qid;
    for (qid = hashtab_first(&ix->queue_index, h, &p); qid != HASHTAB_END;
         qid = hashtab_next(&ix->queue_index, &p)) {
        const struct audit_entry *f = entry_at(ix, ix->queues[qid].first);
        if (same_name(f->queue, en->queue) && same_name(f->source, en->source) &&
            same_name(f->kind, en->kind))
            break;
    }
    if (qid == HASHTAB_END) {
        if (ix->nqueues == ix->queues_cap) {
            ix->queues_cap = ix->queues_cap ? ix->queues_cap * 2 : 64;
            ix->queues = xrealloc(ix->queues, ix->queues_cap * sizeof *ix->queues);
        }
        qid = (uint32_t)ix->nqueues++;
        ix->queues[qid] = (struct audit_queue_agg){.first = id, .level = AUDIT_NO_ENTRY};
        hashtab_add(&ix->queue_index, &p, qid, queue_hash_of, ix);
    }
    struct audit_queue_agg *q = &ix->queues[qid];
    q->nentries++;
    if (!en->group)
        q->level = id;
    return qid;
}

/* The entry of (source, kind, queue, group), made on its first sample. */
static struct audit_entry *find_entry(struct audit_index *ix, const char *source, const char *kind,
                                      const char *queue, const char *group)
{
    uint64_t qh = queue_hash(source, kind, queue);
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&ix->entry_index, entry_hash(qh, group), &p);
         id != HASHTAB_END; id = hashtab_next(&ix->entry_index, &p)) {
        struct audit_entry *en = entry_at(ix, id);
        if (same_name(en->queue, queue) && same_name(en->group, group) &&
            same_name(en->source, source) && same_name(en->kind, kind))
            return en;
    }
    if (ix->nentries % AUDIT_ENTRY_BLOCK == 0) {
        ix->blocks = xrealloc(ix->blocks, (ix->nblocks + 1) * sizeof *ix->blocks);
        ix->blocks[ix->nblocks++] = xcalloc(AUDIT_ENTRY_BLOCK, sizeof **ix->blocks);
    }
    uint32_t id = (uint32_t)ix->nentries++;
    struct audit_entry *en = entry_at(ix, id);
    en->source = source;
    en->kind = kind;
    en->queue = queue;
    en->group = group;
    hashtab_add(&ix->entry_index, &p, id, entry_hash_of, ix);
    en->queue_id = join_queue(ix, qh, en, id);
    return en;
}

/* Counts add up; a margin, a dedup window or a dead-letter retention is as bad as its worst;
 * other figures keep the largest (ages, leases, horizons, a queue's retention). */
static void entry_take(struct audit_index *ix, struct audit_entry *en, int f, double v,
                       const char *dlq)
{
    if (f == F_DEAD) {
        if (!en->dlq)
            en->dlq = dlq;
        en->ndlq++;
        /* The list only answers "is it a dead-letter queue", and often every queue of a source
         * names the same one: a name the sample before added again is not stored twice (the
         * set's strings are shared, so equal names are one pointer). */
        const struct audit_dlq_name *prev = ix->ndlqs ? &ix->dlqs[ix->ndlqs - 1] : NULL;
        if (!prev || prev->source != en->source || prev->dlq != dlq) {
            if (ix->ndlqs == ix->dlqs_cap) {
                ix->dlqs_cap = ix->dlqs_cap ? ix->dlqs_cap * 2 : 16;
                ix->dlqs = xrealloc(ix->dlqs, ix->dlqs_cap * sizeof *ix->dlqs);
            }
            ix->dlqs[ix->ndlqs++] = (struct audit_dlq_name){en->source, dlq};
        }
    }
    ix->queues[en->queue_id].has |= 1u << f;
    int fresh;
    double *p = val_slot(en, f, &fresh);
    if (f == F_DL_RETENTION && (fresh || v < *p))
        en->retention_dlq = dlq; /* the rule names the dead-letter queue that keeps the least */
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
    case F_SKIPPED:
    case F_DL_DONE:
    case F_DL_NOT_DONE:
    case F_DL_UNKNOWN:
    case F_DL_POISON:
    case F_READY:
    case F_CONSUMERS:
        *p += v;
        break;
    case F_MARGIN:
    case F_DEDUP_WINDOW:
    case F_DL_RETENTION:
        if (v < *p)
            *p = v;
        break;
    default:
        if (v > *p)
            *p = v;
    }
}

/* The labels the index reads. */
enum role {
    R_SOURCE,
    R_KIND,
    R_QUEUE,
    R_GROUP,
    R_DLQ,
    R_QUANTILE,
    R_REPLAYS,
    R_STATE,
    R_WORK,
    R_PARTITION,
    R_COUNT /* any other label */
};

static const char *const role_names[R_COUNT] = {
    [R_SOURCE] = "source",
    [R_KIND] = "kind",
    [R_QUEUE] = "queue",
    [R_GROUP] = "group",
    [R_DLQ] = "dead_letter_queue",
    [R_QUANTILE] = "quantile",
    [R_REPLAYS] = "replays",
    [R_STATE] = "state",
    [R_WORK] = "work",
    [R_PARTITION] = "partition",
};

/* A set keeps each label name once, so a sample's label names are pointers the set's other
 * samples share: the role of each is found by strcmp once per set and then by the pointer (a
 * sample's labels were looked up by name five times each, the bulk of the gathering). */
#define NAME_MEMO 32
struct name_memo {
    const char *name[NAME_MEMO];
    unsigned char role[NAME_MEMO];
    size_t n;
};

static int role_of(struct name_memo *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->name[i] == name)
            return m->role[i];
    int r = R_COUNT;
    for (int k = 0; k < R_COUNT && r == R_COUNT; k++)
        if (strcmp(name, role_names[k]) == 0)
            r = k;
    if (m->n < NAME_MEMO) {
        m->name[m->n] = name;
        m->role[m->n++] = (unsigned char)r;
    }
    return r;
}

/* The values of the labels the index reads into lv (NULL where the sample has none). */
static void read_labels(struct name_memo *m, const struct metric_sample *s, const char *lv[R_COUNT])
{
    for (int k = 0; k < R_COUNT; k++)
        lv[k] = NULL;
    for (size_t i = 0; i < s->nlabels; i++) {
        int r = role_of(m, s->labels[i].name);
        if (r < R_COUNT && !lv[r])
            lv[r] = s->labels[i].value;
    }
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
static int sample_family(int fam, const char *const lv[R_COUNT])
{
    if (fam == F_P99)
        return lv[R_QUANTILE] && strcmp(lv[R_QUANTILE], "0.99") == 0 ? fam : -1;
    if (fam == F_DL_POISON)
        return lv[R_REPLAYS] && strcmp(lv[R_REPLAYS], "poison") == 0 ? fam : -1;
    if (fam == F_STALE)
        return lv[R_STATE] && strcmp(lv[R_STATE], "stale") == 0 ? fam : -1;
    if (fam == F_DL_DONE) {
        const char *w = lv[R_WORK];
        if (!w)
            return -1;
        return strcmp(w, "done") == 0       ? F_DL_DONE
               : strcmp(w, "not_done") == 0 ? F_DL_NOT_DONE
                                            : F_DL_UNKNOWN;
    }
    return fam;
}

/* A qrel_queue_messages sample that counts ready messages of the queue (or group) as a whole:
 * state ready, and not one of kafka's per-partition series, which repeat the total. */
static int ready_sample(const char *const lv[R_COUNT])
{
    return lv[R_STATE] && strcmp(lv[R_STATE], "ready") == 0 && !lv[R_PARTITION];
}

static int cmp_dlq(const void *pa, const void *pb)
{
    const struct audit_dlq_name *a = pa, *b = pb;
    int c = strcmp(a->source, b->source);
    return c ? c : strcmp(a->dlq, b->dlq);
}

void audit_index_collect(struct audit_index *ix, struct metric_set *const *sets, size_t nsets,
                         void (*on_source)(void *ctx, const char *source, const char *kind,
                                           double up),
                         void *ctx)
{
    size_t ncat = metric_catalog_count();
    int *by_index = xcalloc(ncat ? ncat : 1, sizeof *by_index);
    family_map(by_index, ncat);
    struct metric_sample smp;
    struct audit_entry *last = NULL;
    struct name_memo memo;
    const char *lv[R_COUNT];
    for (size_t k = 0; k < nsets; k++) {
        struct metric_set *s = sets[k];
        size_t len = metric_set_len(s);
        memo.n = 0; /* another set, other strings */
        for (size_t i = 0; i < len; i++) {
            size_t fi = metric_set_family_index(s, i);
            if (fi >= ncat || by_index[fi] < 0)
                continue;
            metric_set_get(s, i, &smp);
            read_labels(&memo, &smp, lv);
            const char *source = lv[R_SOURCE], *kind = lv[R_KIND];
            const char *queue = lv[R_QUEUE], *dlq = NULL;
            int fam = by_index[fi];
            if (fam == F_SOURCE_QUEUES) {
                /* A source-wide series: only a source that found no queue gets an entry (its
                 * finding's place), so the others add no queue "" to the report. */
                if (smp.value != 0)
                    continue;
                queue = "";
            }
            if (!source || !kind || (fam != F_UP && !queue) || isnan(smp.value))
                continue;
            if (fam == F_UP) {
                if (on_source)
                    on_source(ctx, source, kind, smp.value);
                continue;
            }
            if ((fam = sample_family(fam, lv)) < 0)
                continue;
            if (fam == F_DEAD || fam == F_DEAD_AGE || fam == F_DL_RETENTION) {
                dlq = lv[R_DLQ];
                if (!dlq)
                    continue;
            }
            const char *group = lv[R_GROUP];
            if (!last || last->queue != queue || last->group != group || last->source != source ||
                last->kind != kind)
                last = find_entry(ix, source, kind, queue, group);
            entry_take(ix, last, fam, smp.value, dlq);
            if (fam == F_DEPTH && ready_sample(lv))
                entry_take(ix, last, F_READY, smp.value, NULL);
        }
    }
    free(by_index);
    if (ix->ndlqs > 1)
        qsort(ix->dlqs, ix->ndlqs, sizeof *ix->dlqs, cmp_dlq);
}

int audit_index_is_dlq(const struct audit_index *ix, const char *source, const char *queue)
{
    struct audit_dlq_name key = {source, queue};
    return ix->ndlqs && bsearch(&key, ix->dlqs, ix->ndlqs, sizeof *ix->dlqs, cmp_dlq) != NULL;
}

void audit_index_free(struct audit_index *ix)
{
    for (size_t i = 0; i < ix->nentries; i++)
        free(entry_at(ix, i)->spill);
    for (size_t i = 0; i < ix->nblocks; i++)
        free(ix->blocks[i]);
    free(ix->blocks);
    hashtab_free(&ix->entry_index);
    hashtab_free(&ix->queue_index);
    free(ix->queues);
    free(ix->dlqs);
    memset(ix, 0, sizeof *ix);
}
