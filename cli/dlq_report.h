/* dlq_report.h: what `qrel dlq` prints, as text for the on-call engineer or as one JSON object
 * for scripts (docs/dlq.md documents every field). Pure: it formats what the engine (dlq.h)
 * found into a buffer and does no I/O, so unit tests check the exact output. */
#ifndef QREL_DLQ_REPORT_H
#define QREL_DLQ_REPORT_H

#include <stddef.h>

#include "dlq.h"
#include "buf.h"

/* What the report says about where the dead letters came from. */
struct dlq_report_ctx {
    const char *source, *kind, *queue, *work_source;
    size_t sample; /* ids shown per class (and per skip reason) */
    double now;    /* unix seconds, for ages */
    int json;
};

/* inspect: counts per class, dead_since range, deliveries, samples, read_effect. */
void dlq_report_inspect(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r);

/* replay: the inspect part, then what was (or would be) moved, skipped and why, failed and why. */
void dlq_report_replay(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r,
                       const struct dlq_replay_opts *o, const struct dlq_replay_result *res);

#endif
