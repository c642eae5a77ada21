/* audit_series.h: the qrel_audit_failed and qrel_audit_failed_queues series of one audit, kept
 * as the rules find them, for the exporter's scrape (audit_run_series in audit.c).
 *
 * The series need, for each (source, kind, rule), how many findings there are and which
 * audit.queue_series of them are the worst; at 10,000 queues breaking one rule, a full report
 * would hold 10,000 findings with copied names and a formatted message each, only to count them.
 * This keeps a count and a bounded list per (source, kind, rule) instead, whose names point into
 * the collection (which outlives the series: metric_set_add copies what it adds). */
#ifndef QREL_AUDIT_SERIES_H
#define QREL_AUDIT_SERIES_H

#include "audit.h"
#include "metrics.h"

struct audit_series;

/* keep: audit_config.queue_series (AUDIT_QUEUE_SERIES_ALL or 0 .. 1000000). */
struct audit_series *audit_series_new(long keep);
void audit_series_free(struct audit_series *s); /* NULL is fine */

/* One finding: the strings must stay valid until audit_series_write (group NULL when the finding
 * is about the whole queue); badness is larger the further past its limit it lies. */
void audit_series_add(struct audit_series *s, enum audit_rule rule, const char *source,
                      const char *kind, const char *queue, const char *group, double badness);

/* Adds the series to out (what they are: audit_add_metrics in audit.h): criticals first, then by
 * rule, source and kind; within each, the worst findings first. Returns 0 or -1 (a bad label: a
 * bug). */
int audit_series_write(struct audit_series *s, struct metric_set *out);

#endif
