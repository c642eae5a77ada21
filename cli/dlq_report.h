/* dlq_report.h: what `qrel dlq` prints, as text for the on-call engineer or as one JSON object
 * for scripts (docs/dlq.md documents every field). It formats what the engine (dlq.h) found into
 * a buffer, so unit tests check the exact output; the one I/O is a streamed report's (ctx.stream
 * set): the lists a replay prints whole go through temporary files, so that a run of any length
 * holds a bounded report. */
#ifndef QREL_DLQ_REPORT_H
#define QREL_DLQ_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "dlq.h"
#include "buf.h"

/* What the report says about where the dead letters came from. */
struct dlq_report_ctx {
    const char *source, *kind, *queue, *work_source;
    size_t sample; /* ids shown per class (and per skip reason) */
    double now;    /* unix seconds, for ages */
    int json;
    /* NULL: the report is built whole in the buffer. Else the lists a replay prints whole are
     * kept in temporary files and written to stream, after what the buffer holds before them;
     * the caller writes what the buffer holds at the end. */
    FILE *stream;
};

/* What the report keeps of a run, page after page (dlq_run.c), in bounded memory. */
struct dlq_sample {
    char *message_id, *work_id; /* malloc'd copies, NULL when the message had none */
    int64_t replays;
};
struct dlq_samples {
    struct dlq_sample *v; /* at most the tally's sample of them: the first ones, in order */
    size_t n;
};
struct dlq_list {
    FILE *f;        /* the formatted entries, with a stream; else in mem */
    struct buf mem; /* without a stream */
    size_t n;
};
struct dlq_tally {
    size_t sample;
    int json;
    struct dlq_summary s;
    struct dlq_samples cls[3];                    /* by enum dead_letter_work */
    struct dlq_samples poison;                    /* of every class */
    struct dlq_samples skipped[DLQ_CHOICE_COUNT]; /* by why a replay skipped them */
    struct dlq_list list[DLQ_FATE_COUNT];         /* every one of each fate but skipped */
    char *dead_letter_queue, *origin;             /* malloc'd, from the first page */
};
/* Sets t up for x (its sample, format and stream: with a stream, it opens one temporary file per
 * list). 0, or -1 with e set (nothing held then). dlq_tally_free frees and closes it all. */
int dlq_tally_init(struct dlq_tally *t, const struct dlq_report_ctx *x, struct err *e);
void dlq_tally_free(struct dlq_tally *t);
/* Adds a read and classified page: counts and samples; s.total is raised to the page's total. */
void dlq_tally_read(struct dlq_tally *t, const struct dlq_read *r);
/* Adds the page's fates after dlq_replay_page: skip samples, and each listed entry formatted.
 * 0, or -1 with e set when its temporary file cannot be written. */
int dlq_tally_fates(struct dlq_tally *t, const struct dlq_read *r, struct err *e);
/* The reports, from a tally. */
void dlq_report_inspect_tally(struct buf *out, const struct dlq_report_ctx *x,
                              const struct dlq_kind *k, const struct dlq_tally *t);
void dlq_report_replay_tally(struct buf *out, const struct dlq_report_ctx *x,
                             const struct dlq_kind *k, struct dlq_tally *t,
                             const struct dlq_replay_opts *o, const struct dlq_replay_result *res);

/* The same from one whole read (r's fates too, when it was replayed). */
/* inspect: counts per class, dead_since range, deliveries, samples, read_effect. */
void dlq_report_inspect(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r);

/* replay: the inspect part, then what was (or would be) moved, skipped and why, failed and why. */
void dlq_report_replay(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r,
                       const struct dlq_replay_opts *o, const struct dlq_replay_result *res);

#endif
