/* entries.h: what a kind does with an entry it reads but did not write (a job's JSON, a hash
 * field, a sorted-set score) when it cannot read it: skip that one entry and count it, so one
 * malformed or hostile job never takes the whole source down with every other series.
 *
 * Every kind counts alike: per queue and reason, emitted as the gauge qrel_skipped_entries (the
 * entries the last collection passed over; the same bad entry is met again on every scrape, so
 * a counter would count it once per scrape), which the skipped_entries audit rule turns into a
 * `qrel check` warning. And every kind turns a timestamp into an age with entry_age, which
 * refuses the ones no real job carries. */
#ifndef QREL_ENTRIES_H
#define QREL_ENTRIES_H

#include <stddef.h>

#include "metrics.h"

/* Why an entry was skipped: the `reason` label. */
enum entry_skip {
    ENTRY_NOT_JSON,      /* not JSON, or not the JSON shape the framework writes */
    ENTRY_MISSING_FIELD, /* a field every such entry has (a job's queue) is absent or empty */
    ENTRY_BAD_VALUE,     /* a field of the wrong type or not a number (a timeout "soon") */
    ENTRY_BAD_TIMESTAMP, /* a time that is no time, or outside the sane range (entry_age) */
    ENTRY_TOO_DEEP,      /* JSON nested deeper than the parser follows */
    ENTRY_SKIP_COUNT
};

const char *entry_skip_name(enum entry_skip why); /* "not_json", "missing_field", ... */

/* Timestamps before 2000-01-01 are no job's (a 0, a -5 or seconds read as milliseconds would
 * otherwise give an age of decades, which pages), and ones more than ENTRY_CLOCK_SKEW seconds
 * after the server's now are no job's either: a writer's clock a little ahead gives an age of 0,
 * one far ahead gives nothing. */
#define ENTRY_MIN_TIMESTAMP 946684800.0 /* 2000-01-01T00:00:00Z */
#define ENTRY_CLOCK_SKEW 60.0

/* The age at now of an entry stamped ts (both epoch seconds): 0 with *age >= 0, or -1 when ts is
 * not finite, before ENTRY_MIN_TIMESTAMP or after now + ENTRY_CLOCK_SKEW (the caller counts it as
 * ENTRY_BAD_TIMESTAMP and reports no age). */
int entry_age(double now, double ts, double *age);

/* The entries one collection skipped, by queue ("" when the entry names none it could read) and
 * reason. Zeroed, it is empty. */
struct entry_skips {
    struct entry_skip_row *rows;
    size_t n;
};

void entry_skips_add(struct entry_skips *s, const char *queue, enum entry_skip why);
/* entry_age, counting a refused ts as ENTRY_BAD_TIMESTAMP of queue. */
int entry_skips_age(struct entry_skips *s, const char *queue, double now, double ts, double *age);
/* How many of queue (NULL: of every queue) for why (ENTRY_SKIP_COUNT: every reason). */
double entry_skips_count(const struct entry_skips *s, const char *queue, enum entry_skip why);
/* One qrel_skipped_entries sample per queue and reason counted; none when nothing was skipped. */
void entry_skips_emit(const struct entry_skips *s, struct metric_set *out);
void entry_skips_free(struct entry_skips *s); /* leaves it zeroed */

#endif
