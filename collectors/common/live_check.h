/* live_check.h: the `--config.check` of kinds whose configuration can only be judged by the
 * broker (SQS, Pub/Sub): one collection, as a scrape would run it, and for each queue that a
 * `dead_letters` entry names, the dead-letter queue `qrel dlq` would read, resolved as it would
 * be and left untouched. So the check fails on what a scrape or `qrel dlq` would fail on, at the
 * time the file is written rather than at the first scrape or the first incident.
 *
 * The queues come from the kind's dead_letter_validate, which notes each one it accepts with
 * live_check_note (the hook sees the entries, the check does not). */
#ifndef QREL_LIVE_CHECK_H
#define QREL_LIVE_CHECK_H

#include "collector.h"
#include "deadline.h"
#include "err.h"

/* Adds queue to *queues (a NULL-terminated malloc'd list, NULL when empty, freed with
 * cfg_strv_free), once however many entries name it. */
void live_check_note(char ***queues, const char *queue);

/* Collects c once (the samples are dropped), then reads none of the dead letters of each of
 * queues through c's dlq hooks: the dead-letter queue is found as `qrel dlq` finds it. 0, or -1
 * with e set; a dead-letter error names the entry's queue. */
int live_check(struct collector *c, char *const *queues, const struct deadline *dl, struct err *e);

#endif
