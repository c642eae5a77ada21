/* metrics.h: the metric catalogue (the public API of names, types and HELP) and the metric set,
 * a list of samples built fresh by one collection.
 *
 * Collectors name a family from the catalogue; the set refuses names it does not know, so a
 * typo fails in tests instead of reaching a dashboard, and every family has HELP by
 * construction. The set copies every string it is given; label values are made valid UTF-8.
 * A set of a large Redis holds hundreds of thousands of samples, so it stores them compactly
 * (every distinct string once, about 31 bytes for a sample with five labels) and hands a sample
 * out by filling in a caller's struct rather than keeping one struct per sample.
 * Families outside the catalogue, defined by the user (SQL queries), are added with
 * metric_set_add_family: the caller validates and owns them; qrel_ names stay the catalogue's. */
#ifndef QREL_METRICS_H
#define QREL_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* A summary here is quantile series only (label `quantile`), without _sum and _count: the
 * Prometheus type that says so, which promtool and OpenMetrics parsers expect for them. */
enum metric_type { METRIC_GAUGE, METRIC_COUNTER, METRIC_SUMMARY };

struct metric_family {
    const char *name; /* full sample name; counters end in _total */
    enum metric_type type;
    const char *help;
};

/* The catalogue: every family qrel can emit, sorted by name. */
const struct metric_family *metric_catalog_find(const char *name);
size_t metric_catalog_count(void);
const struct metric_family *metric_catalog_at(size_t i);

/* Checks a family defined outside the catalogue (the `queries` of a postgres source): the name
 * matches [a-zA-Z_:][a-zA-Z0-9_:]*, is not a catalogue name and does not start with qrel_ (the
 * namespace of the catalogue), a counter's name ends in _total and a gauge's does not, and help
 * is not empty. Base units (_seconds, _bytes, _ratio) are advice for the docs, not checked.
 * Returns 0, or -1 with a short reason copied to why (cap bytes, NUL-terminated; why may be NULL)
 * such as "a counter's name must end in _total"; callers prefix the name and where it came from. */
int metric_family_validate(const char *name, enum metric_type type, const char *help, char *why,
                           size_t cap);

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__". */
int metric_label_name_valid(const char *name);

/* Most labels one sample may have, the base labels source and kind included. */
#define METRIC_MAX_LABELS 16

struct metric_label {
    const char *name;  /* NUL-terminated; owned by the set */
    const char *value; /* NUL-terminated, valid UTF-8; owned by the set */
    size_t name_len;   /* strlen(name) and strlen(value), so writers need not measure them */
    size_t value_len;
    int value_escape; /* value holds a '\\', '"' or '\n' (which the exposition escapes) */
};

/* One sample, as metric_set_get fills it in. The strings belong to the set: they stay valid
 * until the set is next changed (metric_set_add, metric_set_set_kind) or freed. */
struct metric_sample {
    const struct metric_family *family; /* NULL when metric_set_get found no such sample;
                                         * catalogue or the caller's (metric_set_add_family) */
    double value;
    size_t nlabels;
    /* labels[0, nlabels): `source` and `kind` first when the set has them */
    struct metric_label labels[METRIC_MAX_LABELS];
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
 * adds nothing) when the family is not in the catalogue, a label name is invalid or repeated, a
 * value is NULL, or the sample would have more than METRIC_MAX_LABELS labels: those are
 * programming errors, and the set remembers the first one (metric_set_error). */
int metric_set_add(struct metric_set *s, const char *family, double value, ...)
    __attribute__((sentinel));

/* metric_set_add_family(s, &fam, 2.0, "table", "orders", NULL)
 * Like metric_set_add for a family that is not in the catalogue (one the user defined). The set
 * keeps the pointer f, not a copy: f and its strings belong to the caller and must outlive the
 * set (and any exposition writer reading it). The first sample of a family in a set checks it
 * with metric_family_validate; a family refused there, like the errors of metric_set_add, adds
 * nothing, returns -1 and is remembered as the set's error. Another pointer with the same name
 * as a family the set has is taken as that family (its HELP and TYPE win). A pointer into the
 * catalogue (from metric_catalog_find) is accepted too and is the catalogue family. */
int metric_set_add_family(struct metric_set *s, const struct metric_family *f, double value, ...)
    __attribute__((sentinel));
/* The same with the n label pairs in arrays (names[i]=values[i]), for callers whose label count
 * is known only at run time (one label per configured column). The arrays are read, not kept. */
int metric_set_add_familyv(struct metric_set *s, const struct metric_family *f, double value,
                           const char *const *names, const char *const *values, size_t n);

/* ---- many series with their labels resolved once ----
 * A collector that adds several series an object (a queue's depth by state, its ages, its dead
 * letters) checks their label names and finds their strings once, not once a series: a shape is
 * a family with its label names checked (metric_set_shape), a label value is found once per set
 * (metric_set_value), and metric_set_add_shaped adds a sample from the two without reading a name
 * or hashing a value (about 110 instructions a sample, where metric_set_add_family took 574 in a
 * sidekiq scrape). The sample is the very one metric_set_add_family would store. Both handles
 * belong to the set they were made with (a value's string is kept until the set is freed); used
 * with another set they are a programming error that is not detected.
 *
 *     struct metric_shape depth;
 *     metric_value ready, queue;
 *     metric_set_shape(s, fam, &depth, "queue", "state", NULL);
 *     metric_set_value(s, "ready", &ready);   (once a collection)
 *     metric_set_value(s, name, &queue);      (once an object)
 *     metric_set_add_shaped(s, &depth, 3.0, (metric_value[]){queue, ready});
 */
typedef uint32_t metric_value;

struct metric_shape {
    const struct metric_family *family; /* NULL: refused by metric_set_shape */
    uint16_t index;                     /* the set's family index */
    uint16_t schema;                    /* the set's list of these label names */
    unsigned char nlabels;              /* label values a sample takes */
    unsigned char nbase;                /* the set's base labels when made (source, kind) */
};

/* Checks f and the NULL-terminated label names as metric_set_add_family would (the catalogue's
 * families or the caller's), once. -1 with the set's error remembered (and out->family NULL, so
 * that every add of it is refused) on the same programming errors. */
int metric_set_shape(struct metric_set *s, const struct metric_family *f, struct metric_shape *out,
                     ...) __attribute__((sentinel));
/* The string v, made valid UTF-8, as the set keeps it. -1 with the set's error (and *out none,
 * which every add refuses) for a NULL v or a full set (4 GiB). */
int metric_set_value(struct metric_set *s, const char *v, metric_value *out);
/* Adds a sample of shape sh with its labels' values in order (sh->nlabels of them). -1 (nothing
 * added) for a refused shape, or one made before metric_set_set_kind changed whether the set has
 * a kind label. */
int metric_set_add_shaped(struct metric_set *s, const struct metric_shape *sh, double value,
                          const metric_value *values);

/* Reading a set changes nothing in it, so several threads may read one set at once (overlapping
 * scrapes share a collection) as long as nobody adds to it meanwhile. */
size_t metric_set_len(const struct metric_set *s);
/* Fills *out with sample i (0 <= i < metric_set_len); out of range, or s == NULL, it sets
 * out->family to NULL and out->nlabels to 0. */
void metric_set_get(const struct metric_set *s, size_t i, struct metric_sample *out);
/* Just the family of sample i (NULL out of range): cheaper than metric_set_get for callers that
 * only group samples, such as the exposition writer. */
const struct metric_family *metric_set_family(const struct metric_set *s, size_t i);
/* The family index of sample i, cheaper still for writers that group: an index below
 * metric_catalog_count() is that catalogue family; index metric_catalog_count() + k is the set's
 * dynamic family k. SIZE_MAX out of range. */
size_t metric_set_family_index(const struct metric_set *s, size_t i);
/* The families of the set that are not in the catalogue, in the order of their first sample. */
size_t metric_set_dynamic_count(const struct metric_set *s);
const struct metric_family *metric_set_dynamic_at(const struct metric_set *s, size_t k);
/* How many distinct non-empty values the label name has over the samples of the set: with
 * "queue", the queues (objects) a collection exported, served as qrel_source_queues. */
size_t metric_set_distinct_values(const struct metric_set *s, const char *name);
/* The first programming error met by metric_set_add, or NULL. Owned by the set. */
const char *metric_set_error(const struct metric_set *s);
/* Bytes the set has allocated, everything included except the allocator's own overhead (for
 * tests and capacity planning); 0 for NULL. */
size_t metric_set_bytes(const struct metric_set *s);

#endif
