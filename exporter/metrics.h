/* metrics.h: the metric catalogue (the public API of names, types and HELP) and the metric set,
 * a list of samples built fresh by one collection.
 *
 * Collectors name a family from the catalogue; the set refuses names it does not know, so a
 * typo fails in tests instead of reaching a dashboard, and every family has HELP by
 * construction. The set copies every string it is given; label values are made valid UTF-8. */
#ifndef QREL_METRICS_H
#define QREL_METRICS_H

#include <stddef.h>

enum metric_type { METRIC_GAUGE, METRIC_COUNTER };

struct metric_family {
    const char *name; /* full sample name; counters end in _total */
    enum metric_type type;
    const char *help;
};

/* The catalogue: every family qrel can emit, sorted by name. */
const struct metric_family *metric_catalog_find(const char *name);
size_t metric_catalog_count(void);
const struct metric_family *metric_catalog_at(size_t i);

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__". */
int metric_label_name_valid(const char *name);

struct metric_label {
    char *name;
    char *value;
};

struct metric_sample {
    const struct metric_family *family;
    struct metric_label *labels; /* `source` and `kind` first when the set has them */
    size_t nlabels;
    double value;
};

struct metric_set;

/* source and kind become the first two labels of every sample (both copied). A set made with
 * source == NULL adds no base labels (for exporter-wide series such as qrel_build_info). */
struct metric_set *metric_set_new(const char *source, const char *kind);
void metric_set_free(struct metric_set *s); /* NULL is fine */
/* Changes the kind label of samples added from now on (postgres sources emit several kinds). */
void metric_set_set_kind(struct metric_set *s, const char *kind);

/* metric_set_add(s, "qrel_queue_messages", 3.0, "queue", "orders", "state", "ready", NULL)
 * Adds one sample with the base labels plus the NULL-terminated name/value pairs. Returns -1 (and
 * adds nothing) when the family is not in the catalogue, a label name is invalid, or a value is
 * NULL: those are programming errors, and the set remembers the first one (metric_set_error). */
int metric_set_add(struct metric_set *s, const char *family, double value, ...)
    __attribute__((sentinel));

size_t metric_set_len(const struct metric_set *s);
const struct metric_sample *metric_set_at(const struct metric_set *s, size_t i);
/* The first programming error met by metric_set_add, or NULL. */
const char *metric_set_error(const struct metric_set *s);

#endif
