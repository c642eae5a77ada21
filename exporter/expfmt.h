/* expfmt.h: writes metric sets in the Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
 *
 * Pure functions over already-collected sets: no I/O, no locks, so they are unit-tested alone.
 * Samples of one family are grouped under one HELP/TYPE header even when they come from several
 * sets; the catalogue's families are written in name order, then the families defined outside
 * it (metric_set_add_family) in name order, merged across sets by name with HELP and TYPE from
 * the first set that has the name; samples in set order, then in the order they were added. The
 * writer produces the exposition in pieces of the caller's size, so a large one can be streamed to
 * an HTTP client without ever being held whole. */
#ifndef QREL_EXPFMT_H
#define QREL_EXPFMT_H

#include <stddef.h>

#include "metrics.h"
#include "buf.h"

enum expfmt_format { EXPFMT_TEXT, EXPFMT_OPENMETRICS };

/* Picks the format from an HTTP Accept header (NULL = text). OpenMetrics when the client lists
 * application/openmetrics-text with a higher or equal q than text/plain. */
enum expfmt_format expfmt_negotiate(const char *accept);
const char *expfmt_content_type(enum expfmt_format f);

/* A resumable writer over nsets sets (NULL entries are skipped). It copies the array of pointers
 * but not the sets: they must stay alive and unchanged until expfmt_writer_free. Its own memory
 * is 4 bytes per sample plus the longest line and a little per family. Several writers may read the
 * same sets at once. The caller frees the writer with expfmt_writer_free (NULL is fine). */
struct expfmt_writer *expfmt_writer_new(struct metric_set *const *sets, size_t nsets,
                                        enum expfmt_format f);
/* Copies the next bytes of the exposition to dst, at most max (max > 0), and returns how many.
 * It fills dst whole except at the end: a return below max means the exposition is complete, and
 * 0 means nothing was left. The concatenation of all reads is what expfmt_write produces, whatever
 * the sizes of max. */
size_t expfmt_writer_read(struct expfmt_writer *w, char *dst, size_t max);
void expfmt_writer_free(struct expfmt_writer *w);

/* The whole exposition, appended to out: the writer read into a growing buffer. */
void expfmt_write(struct buf *out, struct metric_set *const *sets, size_t nsets,
                  enum expfmt_format f);

/* Pieces, exposed for tests. */
void expfmt_escape_label_value(struct buf *out, const char *v); /* \\ \" \n */
void expfmt_escape_help(struct buf *out, const char *help, enum expfmt_format f);
/* Shortest text that reads back as v; "+Inf", "-Inf", "NaN". */
void expfmt_format_value(struct buf *out, double v);
/* The same written to p, which has room for EXPFMT_VALUE_MAX bytes (no NUL added); returns the
 * length. Longest: "-" + 17 digits + "." + "e-308" and change. */
#define EXPFMT_VALUE_MAX 32
size_t expfmt_value_to(char *p, double v);

#endif
