/* dlq_run.h: one run of `qrel dlq inspect` or `qrel dlq replay`, from the first read to the
 * report, a page of dead letters at a time where the kind reads by pages (dlq_kind.read_page).
 *
 * A dead-letter queue after an incident can hold hundreds of thousands of messages. Holding them
 * all (with their bodies, for a replay) made qrel's memory grow with the queue, about 1.2 KiB a
 * dead letter. So a run reads a page, classifies it with one work-table statement, moves its
 * chosen messages, hands what the report needs to the tally (counts, bounded samples, the listed
 * ids written to temporary files) and drops the page before it reads the next: what it holds is
 * one page, however long the queue. A kind without read_page is read whole, as one page. */
#ifndef QREL_DLQ_RUN_H
#define QREL_DLQ_RUN_H

#include <stddef.h>

#include "buf.h"
#include "dlq.h"
#include "dlq_report.h"

/* Dead letters a page: the unit of memory, of the work-table lookup (one statement a page) and
 * of the kind's read (one XRANGE a page on Redis). Large enough that the lookups cost little
 * beside the moves (100 statements for 100,000 dead letters), small enough that a page of
 * dead letters with their bodies is about a MiB. */
#define DLQ_PAGE 1000

struct dlq_run_opts {
    int replay;     /* 0: inspect */
    size_t max;     /* dead letters read at most (max_entries, or inspect's --limit) */
    size_t limit;   /* replay's --limit: the fallback read of a kind that reads whole */
    size_t page;    /* dead letters a page (DLQ_PAGE; tests use fewer) */
    double timeout; /* seconds: each page's read and lookup, and each hook call */
    const struct dlq_replay_opts *o; /* replay's */
};

/* Runs it and writes the report: into out, or, with x->stream, the lists straight to the stream
 * and the rest into out, which the caller writes after (dlq_report.h). Errors and warnings go to
 * stderr. Returns the exit status: 0; 1 when a message failed, was not reached, may have been
 * put back, or the read failed or stopped part-way (the report says what was done); 2 when a
 * replay was refused as a configuration error. */
int dlq_run(struct dead_letter_join *j, const struct dlq_run_opts *ro,
            const struct dlq_report_ctx *x, struct buf *out);

#endif
