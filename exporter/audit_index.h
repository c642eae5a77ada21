/* audit_index.h: the audit's entries, private to exporter/audit*.c: one pass over a collection's
 * sets gathers the figures the rules read into one entry per (source, kind, queue, group), found
 * through a hash index, and what a queue's entries share per (source, kind, queue). The rules
 * (audit.c) then read entries only.
 *
 * Entries point into the sets (strings a set owns stay valid while nobody adds to it), so the
 * pass copies nothing. The accessors are inline and short-named (entry_has, entry_val): the rules
 * read them on almost every line, and each is a bit test or an array read. */
#ifndef QREL_AUDIT_INDEX_H
#define QREL_AUDIT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "hashtab.h"
#include "metrics.h"

/* The families the rules read; the index maps a sample to one of these or skips it. */
enum audit_fam {
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
    F_SKIPPED,        /* qrel_skipped_entries, summed over reason */
    F_NOT_KEPT,       /* qrel_dead_letters_not_kept */
    F_TIMEOUT,        /* qrel_handler_timeout_seconds */
    F_DL_DONE,        /* qrel_dead_letter_classified_messages{work="done"}, and the two below */
    F_DL_NOT_DONE,    /* … work="not_done" (read as the same family, told apart by the label) */
    F_DL_UNKNOWN,     /* … work="unknown" */
    F_DL_POISON,      /* qrel_dead_letter_replayed_messages{replays="poison"} */
    F_SOURCE_QUEUES,  /* qrel_source_queues, only when 0: an entry of the source, queue "" */
    F_READY,          /* qrel_queue_messages{state="ready"} (not per partition), beside F_DEPTH */
    F_CONSUMERS,      /* qrel_queue_consumers */
    F_RETENTION,      /* qrel_queue_retention_seconds */
    F_DL_RETENTION,   /* qrel_dead_letter_retention_seconds, the shortest over dead_letter_queue */
    F_COUNT
};
_Static_assert(F_COUNT <= 32, "audit_entry.has holds one bit per family");

/* Figures kept in the entry itself: a queue reports a handful of the families (a Redis stream
 * group 3 to 7), and 8 inline instead of all 21 halve the entry, the bulk of the audit's memory
 * at 10,000 queues. An entry with more moves them to an array of all. */
#define AUDIT_ENTRY_INLINE 8

/* One queue (or group) and its figures. */
struct audit_entry {
    const char *source, *kind, *queue, *group; /* into the sets; group NULL when absent */
    double v[AUDIT_ENTRY_INLINE]; /* the figures of the families in has, in family order ... */
    double *spill;                /* ... or all F_COUNT of them, once it has more families */
    uint32_t has;                 /* bit (1 << fam) for each family in v */
    uint32_t queue_id;            /* its (source, kind, queue) in audit_index.queues */
    const char *dlq;              /* the first dead-letter queue's name */
    const char *retention_dlq;    /* the dead-letter queue of the shortest F_DL_RETENTION */
    size_t ndlq;                  /* how many dead-letter series */
    /* The engine's marks (zero from the index): the rules that fired on it, and the worst. */
    unsigned rules;
    enum audit_status worst;
};

#define AUDIT_NO_ENTRY UINT32_MAX

/* What the entries of one (source, kind, queue) share: the queue and each of its groups. */
struct audit_queue_agg {
    uint32_t first;    /* its first entry, which names the queue */
    uint32_t level;    /* its entry without a group, or AUDIT_NO_ENTRY */
    uint32_t nentries; /* all of them, its own and its groups' */
    uint32_t has;      /* the has bits of all of them */
    int no_dlq;        /* the engine's mark: no_dead_letter_queue fired on it */
};

/* A dead_letter_queue label: that queue of that source is a dead-letter queue. */
struct audit_dlq_name {
    const char *source, *dlq;
};

/* Entries live in blocks, so that a pointer to one stays valid as more are added and no array
 * of them is ever copied to grow; the last block is the only slack. */
#define AUDIT_ENTRY_BLOCK 256

/* Zeroed, it is an empty index. Everything in it is owned by it (audit_index_free); the names it
 * points to are the sets'. */
struct audit_index {
    struct audit_entry **blocks;
    size_t nentries, nblocks;
    struct hashtab entry_index; /* (source, kind, queue, group) to entry id */
    struct audit_queue_agg *queues;
    size_t nqueues, queues_cap;
    struct hashtab queue_index;  /* (source, kind, queue) to queues[id] */
    struct audit_dlq_name *dlqs; /* sorted by (source, dlq) once collected */
    size_t ndlqs, dlqs_cap;
};

/* One pass over the samples of the sets into entries. Each qrel_collector_up sample goes to
 * on_source(ctx, source, kind, value) instead (NULL: skipped); its names are the set's. */
void audit_index_collect(struct audit_index *ix, struct metric_set *const *sets, size_t nsets,
                         void (*on_source)(void *ctx, const char *source, const char *kind,
                                           double up),
                         void *ctx);
/* Whether some queue of the collection named queue as its dead-letter queue on source. */
int audit_index_is_dlq(const struct audit_index *ix, const char *source, const char *queue);
void audit_index_free(struct audit_index *ix); /* leaves it zeroed */

static inline struct audit_entry *entry_at(const struct audit_index *ix, size_t id)
{
    return &ix->blocks[id / AUDIT_ENTRY_BLOCK][id % AUDIT_ENTRY_BLOCK];
}

/* The queue-level entry of a group's entry, or NULL. */
static inline const struct audit_entry *entry_parent(const struct audit_index *ix,
                                                     const struct audit_entry *en)
{
    uint32_t level = ix->queues[en->queue_id].level;
    return en->group && level != AUDIT_NO_ENTRY ? entry_at(ix, level) : NULL;
}

static inline int entry_has(const struct audit_entry *en, int fam)
{
    return (int)(en->has >> fam & 1);
}

/* The bits set in x. Not __builtin_popcount: without -mpopcnt (the package targets any x86-64)
 * that is a call into libgcc's table, 2 % of a cached RabbitMQ scrape's instructions. */
static inline unsigned entry_popcount(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0F0F0F0Fu;
    return (x * 0x01010101u) >> 24;
}

/* Where the figure of family fam is among the inline ones: after those of lower families. */
static inline unsigned entry_inline_index(uint32_t has, int fam)
{
    return entry_popcount(has & ((1u << fam) - 1));
}

/* The figure of family fam, 0 when the entry has none. */
static inline double entry_val(const struct audit_entry *en, int fam)
{
    if (!entry_has(en, fam))
        return 0;
    return en->spill ? en->spill[fam] : en->v[entry_inline_index(en->has, fam)];
}

#endif
