/* audit_report.h: `qrel check`'s output, from an audit report: the Nagios-style text a person
 * reads and the JSON object a machine reads (both documented in docs/check.md).
 *
 * Kept apart from the engine (audit.c) so the exporter, which only needs the findings as
 * series, does not carry the writers, and apart from cli.c so unit tests can pin the output. */
#ifndef QREL_AUDIT_REPORT_H
#define QREL_AUDIT_REPORT_H

#include "audit.h"
#include "buf.h"

/* errors[i] is why r->sources[i] could not be read ("" or NULL when it was, or unknown). */

/* First line "QREL CRITICAL - 2 critical, 1 warning, 0 unknown | perfdata", then one line per
 * finding and per unreadable source, worst first, then "checked N queues in M sources". */
void audit_write_text(struct buf *out, const struct audit_report *r, const char *const *errors);
/* One JSON object and a newline. */
void audit_write_json(struct buf *out, const struct audit_report *r, const char *const *errors);

/* Where a finding is, as the text shows it: `cache orders (group workers)`; a name with a space,
 * a quote or a control character is written as a JSON string. Exposed for the landing page. */
void audit_write_name(struct buf *out, const char *name);

/* A finding's queue and, when it has one, its group: `orders (group workers)`, each name written
 * by put (audit_write_name for text, an HTML escaper for the landing page). */
void audit_write_queue(struct buf *out, const struct audit_finding *f,
                       void (*put)(struct buf *, const char *));

#endif
