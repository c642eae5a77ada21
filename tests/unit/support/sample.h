/* sample.h: finding a sample in a metric set the way the collector tests read what a collect
 * produced: by family and a few label pairs, so that every such test looks samples up one way.
 * Included by one test file each (static inline functions). */
#ifndef QREL_TESTS_SAMPLE_H
#define QREL_TESTS_SAMPLE_H

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "metrics.h"

/* Whether sample m has every name=value pair of the NULL-terminated list ap. */
static inline int sample_has_labels(const struct metric_sample *m, va_list ap)
{
    const char *name;
    while ((name = va_arg(ap, const char *)) != NULL) {
        const char *want = va_arg(ap, const char *);
        int found = 0;
        for (size_t k = 0; k < m->nlabels && !found; k++)
            found = strcmp(m->labels[k].name, name) == 0 && strcmp(m->labels[k].value, want) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

/* The value of the sample of family whose labels include every name=value pair given ("queue",
 * "q", ..., NULL); NAN when there is none, and the test fails when there are several. */
static inline double sample_value(const struct metric_set *s, const char *family, ...)
{
    double found = NAN;
    int hits = 0;
    for (size_t i = 0; i < metric_set_len(s); i++) {
        struct metric_sample m;
        metric_set_get(s, i, &m);
        if (strcmp(m.family->name, family) != 0)
            continue;
        va_list ap;
        va_start(ap, family);
        if (sample_has_labels(&m, ap)) {
            found = m.value;
            hits++;
        }
        va_end(ap);
    }
    ck_assert_msg(hits <= 1, "%d samples of %s have these labels", hits, family);
    return found;
}

/* How many samples of family s holds. */
static inline size_t sample_count(const struct metric_set *s, const char *family)
{
    size_t n = 0;
    for (size_t i = 0; i < metric_set_len(s); i++)
        n += strcmp(metric_set_family(s, i)->name, family) == 0;
    return n;
}

#endif
