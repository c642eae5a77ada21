/* entries.c: skipped entries and sane ages (entries.h). A collection skips few entries, usually
 * none, so the rows are a plain array searched in order. */
#include "entries.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct entry_skip_row {
    char *queue;
    double n[ENTRY_SKIP_COUNT];
};

const char *entry_skip_name(enum entry_skip why)
{
    static const char *const names[ENTRY_SKIP_COUNT] = {
        [ENTRY_NOT_JSON] = "not_json",   [ENTRY_MISSING_FIELD] = "missing_field",
        [ENTRY_BAD_VALUE] = "bad_value", [ENTRY_BAD_TIMESTAMP] = "bad_timestamp",
        [ENTRY_TOO_DEEP] = "too_deep",
    };
    return (unsigned)why < ENTRY_SKIP_COUNT ? names[why] : "unknown";
}

int entry_age(double now, double ts, double *age)
{
    if (!isfinite(ts) || !isfinite(now) || ts < ENTRY_MIN_TIMESTAMP || ts > now + ENTRY_CLOCK_SKEW)
        return -1;
    *age = now > ts ? now - ts : 0;
    return 0;
}

void entry_skips_add(struct entry_skips *s, const char *queue, enum entry_skip why)
{
    if ((unsigned)why >= ENTRY_SKIP_COUNT)
        return;
    if (!queue)
        queue = "";
    size_t i = 0;
    while (i < s->n && strcmp(s->rows[i].queue, queue) != 0)
        i++;
    if (i == s->n) {
        s->rows = xrealloc(s->rows, (s->n + 1) * sizeof *s->rows);
        memset(&s->rows[i], 0, sizeof *s->rows);
        s->rows[i].queue = xstrdup(queue);
        s->n++;
    }
    s->rows[i].n[why]++;
}

int entry_skips_age(struct entry_skips *s, const char *queue, double now, double ts, double *age)
{
    if (entry_age(now, ts, age) == 0)
        return 0;
    entry_skips_add(s, queue, ENTRY_BAD_TIMESTAMP);
    return -1;
}

double entry_skips_count(const struct entry_skips *s, const char *queue, enum entry_skip why)
{
    double total = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (queue && strcmp(s->rows[i].queue, queue) != 0)
            continue;
        for (int r = 0; r < ENTRY_SKIP_COUNT; r++)
            if (why == ENTRY_SKIP_COUNT || (int)why == r)
                total += s->rows[i].n[r];
    }
    return total;
}

void entry_skips_emit(const struct entry_skips *s, struct metric_set *out)
{
    for (size_t i = 0; i < s->n; i++)
        for (int r = 0; r < ENTRY_SKIP_COUNT; r++)
            if (s->rows[i].n[r] > 0)
                metric_set_add(out, "qrel_skipped_entries", s->rows[i].n[r], "queue",
                               s->rows[i].queue, "reason", entry_skip_name((enum entry_skip)r),
                               NULL);
}

void entry_skips_free(struct entry_skips *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->rows[i].queue);
    free(s->rows);
    s->rows = NULL;
    s->n = 0;
}
