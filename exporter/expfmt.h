/* expfmt.h: writes metric sets in the Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
 *
 * Pure functions over already-collected sets: no I/O, no locks, so they are unit-tested alone.
 * Samples of one family are grouped under one HELP/TYPE header even when they come from several
 * sets; families are written in name order, samples in the order they were added. */
#ifndef QREL_EXPFMT_H
#define QREL_EXPFMT_H

#include <stddef.h>

#include "metrics.h"
#include "util.h"

enum expfmt_format { EXPFMT_TEXT, EXPFMT_OPENMETRICS };

/* Picks the format from an HTTP Accept header (NULL = text). OpenMetrics when the client lists
 * application/openmetrics-text with a higher or equal q than text/plain. */
enum expfmt_format expfmt_negotiate(const char *accept);
const char *expfmt_content_type(enum expfmt_format f);

void expfmt_write(struct buf *out, struct metric_set *const *sets, size_t nsets,
                  enum expfmt_format f);

/* Pieces, exposed for tests. */
void expfmt_escape_label_value(struct buf *out, const char *v); /* \\ \" \n */
void expfmt_escape_help(struct buf *out, const char *help, enum expfmt_format f);
/* Shortest text that reads back as v; "+Inf", "-Inf", "NaN". */
void expfmt_format_value(struct buf *out, double v);

#endif
