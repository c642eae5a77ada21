/* audit.h: the reliability rules, evaluated over one collection (the metric sets the collectors
 * produced), by `qrel check`, by the exporter (qrel_audit_failed on every scrape) and by the
 * landing page.
 *
 * The engine knows no broker: it reads the public metric families (docs/metrics.md) grouped by
 * (source, kind, queue[, group]), so a new collector kind is audited as soon as it emits them.
 * Every rule and its exact condition is documented in docs/check.md; the rule names are the
 * `rule` label of qrel_audit_failed, which alert rules match on.
 *
 * Written in layers, none calling a file above it: audit_config.c (the rule table, status names,
 * the `audit:` section) at the bottom; audit_index.c (the entries the rules read, audit_index.h)
 * and audit_series.c (the exporter's series) on it; audit.c (the rules, the report) on those; the
 * writers of `qrel check` (audit_report.h) read only the vocabulary and the report. */
#ifndef QREL_AUDIT_H
#define QREL_AUDIT_H

#include <stddef.h>

#include "config.h"
#include "err.h"
#include "metrics.h"
#include "buf.h"

/* Ordered as the Nagios plugin exit codes, which `qrel check` returns. */
enum audit_status { AUDIT_OK = 0, AUDIT_WARNING = 1, AUDIT_CRITICAL = 2, AUDIT_UNKNOWN = 3 };

enum audit_rule {
    AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY,
    AUDIT_LEASE_MARGIN_BELOW_1,
    AUDIT_LEASE_MARGIN_BELOW_2,
    AUDIT_STALE_CLAIMS,
    AUDIT_OUTBOX_LAGGING,
    AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON,
    AUDIT_NO_DEAD_LETTER_QUEUE,
    AUDIT_CLAIM_WINDOW_TOO_SHORT,
    AUDIT_ORPHANED_MESSAGES,
    AUDIT_ETA_BEYOND_LEASE,
    AUDIT_SKIPPED_ENTRIES,
    AUDIT_DEAD_LETTERS_NOT_KEPT,
    AUDIT_SOURCE_WATCHES_NOTHING,
    AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE,
    AUDIT_DELIVERY_LIMIT_DROPS,
    AUDIT_NO_BROKER_LEASE,
    AUDIT_BACKLOG_WITHOUT_CONSUMER,
    AUDIT_DEAD_LETTERS_EXPIRE_UNREAD,
    AUDIT_RULE_COUNT
};

const char *audit_rule_name(enum audit_rule r);
enum audit_status audit_rule_severity(enum audit_rule r); /* AUDIT_CRITICAL or AUDIT_WARNING */
/* How far past its limit a finding of rule r lies, larger for worse (0 when not a number): below
 * the limit for a margin or a dedup window, above it for messages and ages. Ranks the
 * per-queue qrel_audit_failed series. */
double audit_rule_badness(enum audit_rule r, double value, double limit);
/* "OK", "WARNING", "CRITICAL", "UNKNOWN"; audit_status_label: the same in lower case, which is
 * the `severity` label and the JSON spelling. */
const char *audit_status_name(enum audit_status s);
const char *audit_status_label(enum audit_status s);
/* How bad a status is, for "worst first": CRITICAL, then UNKNOWN (an unreadable source may hide
 * a critical), then WARNING, then OK. Inline: the sorts of the report and the series call it in
 * every comparison (as a call from another file it cost the report's sort a third more). */
static inline int audit_status_rank(enum audit_status s)
{
    static const int rank[] = {0, 1, 3, 2};
    return (unsigned)s < 4 ? rank[s] : 2;
}
/* Orders names as the report does: absent (NULL, no group) first, then by strcmp. */
int audit_cmp_name(const char *a, const char *b);

#define AUDIT_DEFAULT_OUTBOX_LAG 60.0
/* Per-queue qrel_audit_failed series kept for each (source, kind, rule): a fleet that breaks one
 * rule by design (10,000 queues without a dead-letter queue) must not put 10,000 series into
 * every scrape; qrel_audit_failed_queues counts them all. */
#define AUDIT_DEFAULT_QUEUE_SERIES 10
#define AUDIT_QUEUE_SERIES_ALL (-1)

/* The optional top-level `audit:` section of the configuration file. */
struct audit_config {
    double outbox_lag;              /* seconds: outbox_lagging fires above this */
    int disabled[AUDIT_RULE_COUNT]; /* 1: the rule is never evaluated */
    long queue_series; /* per (source, kind, rule); AUDIT_QUEUE_SERIES_ALL: every finding */
};

void audit_config_default(struct audit_config *c);
/* Reads the `audit:` mapping (map may be NULL: defaults). Strict keys; errors are
 * "file:line:col: what was expected". */
int audit_config_parse(struct cfg_node *map, struct audit_config *c, struct err *e);

/* One broken rule. Strings are owned by the report. */
struct audit_finding {
    enum audit_rule rule;
    enum audit_status severity;
    char *source;
    char *kind;
    char *queue;
    char *group;   /* NULL when the finding is about the whole queue */
    double value;  /* the figure the rule compared (messages, ratio, seconds, claims) */
    double limit;  /* what it was compared with */
    char *message; /* what is wrong, with the figures, and what to change (no queue name) */
};

/* One queue (or consumer group of a queue) as the landing page shows it. */
struct audit_queue {
    char *source;
    char *kind;
    char *queue;
    char *group; /* NULL for kinds without consumer groups */
    int has_margin, has_dead, has_age, has_depth;
    double margin;           /* qrel_lease_margin_ratio */
    double dead;             /* qrel_dead_letter_messages, summed over the queue's DLQs */
    double age;              /* oldest message age, else the outbox's oldest pending age */
    double depth;            /* qrel_queue_messages summed over states, else outbox pending rows */
    enum audit_status worst; /* AUDIT_OK when no finding concerns it */
    unsigned rules;          /* bit (1 << rule) for each rule that fired on it */
};

/* A source of the collection, as its qrel_collector_up series says. */
struct audit_source {
    char *name;
    char *kind;
    int up;
};

struct audit_report {
    struct audit_finding *findings; /* worst first */
    size_t nfindings;
    struct audit_queue *queues; /* worst first */
    size_t nqueues;
    struct audit_source *sources; /* in collection order */
    size_t nsources;
    size_t count[4]; /* by enum audit_status: findings per severity; [AUDIT_UNKNOWN] = down */
    enum audit_status status; /* CRITICAL > UNKNOWN > WARNING > OK */
    long queue_series;        /* the configuration's, for audit_add_metrics */
};

/* Evaluates every enabled rule over the sets (as scheduler_scrape_sets returns them: the
 * collections plus each source's meta series). The sets are only read and may be shared with
 * other readers. cfg NULL: defaults. Never NULL; free with audit_report_free. */
struct audit_report *audit_run(struct metric_set *const *sets, size_t nsets,
                               const struct audit_config *cfg);
void audit_report_free(struct audit_report *r); /* NULL is fine */

/* What the exporter serves on every scrape: the series audit_add_metrics adds for the report
 * audit_run would return, the same ones in the same order, without building the report (no
 * messages, no copied names, no list of every finding: only a count and the worst
 * cfg->queue_series findings of each source, kind and rule). The sets must outlive the call
 * only. Returns 0 or -1 (a bad label: a bug). */
int audit_run_series(struct metric_set *const *sets, size_t nsets, const struct audit_config *cfg,
                     struct metric_set *out);

/* Adds to out, a set made with metric_set_new(NULL, NULL), for each (source, kind, rule) with
 * findings: qrel_audit_failed_queues{source, kind, rule, severity}, how many findings, and
 * qrel_audit_failed{source, kind, queue, [group], rule, severity} 1 for its worst
 * r->queue_series findings (all of them for AUDIT_QUEUE_SERIES_ALL), so the series grow with the
 * kinds of problems, not with the queues. Returns 0 or -1 (a bad label: a bug). */
int audit_add_metrics(const struct audit_report *r, struct metric_set *out);

/* Seconds as a person reads them, appended to out: three digits below 100 s ("30s", "34.2s",
 * "0.25s"), whole hours, minutes and seconds above, in Prometheus' duration syntax ("5m",
 * "1h30m", "2h5s"). */
void audit_format_seconds(struct buf *out, double s);

#endif
