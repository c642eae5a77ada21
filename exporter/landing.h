/* landing.h: the exporter's landing page (`/`): for a person without Grafana, the health of every
 * queue, worst first, with the rules each one breaks and what to change, plus the sources and
 * links. One self-contained HTML page: inline CSS, no script, no external asset, every text from
 * a broker or the configuration escaped. */
#ifndef QREL_LANDING_H
#define QREL_LANDING_H

#include "audit.h"
#include "scheduler.h"
#include "buf.h"

/* Seconds the page may show a collection before it collects again: views within this of the
 * last successful collection the scheduler kept (an earlier view's, or any with min_interval)
 * cost no query. */
#define LANDING_MAX_AGE 30.0

/* Appends the page. r is the audit of the collection the page shows; s gives each source's
 * status (read after that collection). */
void landing_render(struct buf *out, const char *telemetry_path, struct scheduler *s,
                    const struct audit_report *r);

#endif
