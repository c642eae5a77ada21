/* metrics.c: the metric set (see metrics.h), the storage of one collection's samples; the
 * catalogue of families it accepts is metric_catalog.c.
 *
 * A set may hold hundreds of thousands of samples (a Redis with many streams and groups), built
 * and thrown away on every scrape, so it is laid out for size and for few allocations:
 * - every distinct string (label names and values) is stored once, in a string arena, and found
 *   again through an open-addressing hash table; samples refer to strings by arena offset;
 * - the base labels source and kind are not stored per sample: the set keeps source once and a
 *   short list of kind runs (set_kind starts a new run);
 * - the label names of a sample form a "schema" (a family is nearly always added with the same
 *   names), interned too, so a sample stores only its value offsets: a 16-byte record plus four
 *   bytes per label beyond the base ones;
 * - records, value offsets and strings live in arenas (metric_arena.h) of 64 KiB chunks that
 *   never move once full (the first chunk grows from 256 bytes so that small sets stay small):
 *   no per-sample malloc, no reallocation copies of the whole set, and at most one partly used
 *   chunk of slack;
 * - a collector that adds several series an object resolves their label names and shared values
 *   once (metric_set_shape, metric_set_value) and adds each sample from those
 *   (metric_set_add_shaped): the record and its value offsets, nothing looked up.
 * Everything is addressed by 32-bit offsets, never by pointer, so a set holds at most 4 GiB of
 * each kind of data: far beyond anything a scrape can produce. */
#include "metrics.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "metric_catalog.h"
#include "alloc.h"
#include "buf.h"
#include "metric_arena.h"

/* Family indexes below this are the catalogue's rows (metric_catalog.c). */
#define CATALOG_LEN metric_catalog_len

/* ---- the set ---- */

#define NONE UINT32_MAX
#define FAMILY_CACHE 32 /* the slot is the top 5 bits of a multiplicative hash */
#define RECENT 4        /* values remembered per label position (intern_value) */

/* One sample. Its labels are the base ones (from the set) followed by the names of its schema
 * with the values whose string offsets are stored at vals in the values arena. */
struct sample_rec {
    double value;
    uint32_t vals;
    uint16_t family; /* catalogue index */
    uint16_t schema;
};

_Static_assert(ARENA_CHUNK % sizeof(struct sample_rec) == 0, "sample i is at i * 16");

struct schema {
    uint32_t start; /* names are schema_names[start, start + n) */
    uint16_t n;
    uint16_t base_names; /* bit 0: one name is "source", bit 1: one is "kind" */
};

/* Samples from first on (up to the next run) have this kind, or no kind label when NONE. */
struct kind_run {
    uint32_t first;
    uint32_t kind;
};

/* The families a set has that are not in the catalogue (user-defined SQL queries), in the order
 * of their first sample; dynamic family k has family index CATALOG_LEN + k. Kept behind one
 * pointer so that a set of catalogue families only pays 8 bytes for them. */
struct dyn_families {
    const struct metric_family **fams; /* the caller's, which outlive the set */
    uint16_t *schema;                  /* like metric_set.family_schema */
    size_t n;
    size_t cap;
};

struct metric_set {
    uint32_t source; /* string offset, or NONE for a set without base labels */
    uint32_t kind;   /* for samples added from now on */
    struct kind_run *runs;
    size_t nruns;
    size_t runs_cap;
    size_t len;
    struct metric_arena records; /* struct sample_rec, sample i at offset i * sizeof */
    struct metric_arena values;  /* uint32 string offsets, one run per sample */
    struct metric_arena strings; /* a varint (length << 1 | escape flag), the bytes, a NUL */
    struct hashtab index;        /* string offsets by hash */
    /* The values last interned at each label position (NONE: unset), a ring in the order they
     * were first met, and the slot of the last one used: a collector adds a queue's families in
     * a row, so its name repeats at one position, and a label such as `state` cycles through a
     * few values at another, in the same order for every queue. */
    uint32_t recent[METRIC_MAX_LABELS][RECENT];
    unsigned char recent_at[METRIC_MAX_LABELS];
    struct schema *schemas;
    size_t nschemas;
    size_t schemas_cap;
    uint32_t *schema_names; /* string offsets */
    size_t nschema_names;
    size_t schema_names_cap;
    uint16_t *family_schema; /* by catalogue index: last schema added with it, + 1; 0: none */
    uint16_t last_index;     /* the family index of last_family (in the padding) */
    const struct metric_family *last_family;
    /* metric_set_add's family lookup, by the address of the name the caller passed: nearly
     * always a string literal, so a collector that alternates between a dozen families (one
     * queue's series) finds each here instead of by a binary search of the catalogue, which was
     * 130 instructions an add. A hit is confirmed by strcmp: the address may be a buffer that
     * holds another name since. */
    const char *family_names[FAMILY_CACHE];
    uint16_t family_index[FAMILY_CACHE];
    struct dyn_families *dyn; /* families from outside the catalogue; NULL until the first */
    char *error;              /* the first programming error, or NULL */
    struct buf scratch;       /* sanitized values */
};

/* Records the first programming error; returns -1 so callers can `return set_error(...)`. */
static int set_error(struct metric_set *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int set_error(struct metric_set *s, const char *fmt, ...)
{
    if (!s->error) {
        va_list ap;
        va_start(ap, fmt);
        s->error = xvasprintf(fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- the string table ---- */

/* Reads the string at off. Nearly every string is shorter than 64 bytes: a one-byte header.
 * Forced inline: every label of every sample read comes through here, and as a call it was 8% of
 * a RabbitMQ scrape's instructions. */
static inline __attribute__((always_inline)) const char *
str_at(const struct metric_set *s, uint32_t off, size_t *len, int *escape)
{
    const unsigned char *p = (const unsigned char *)metric_arena_at(&s->strings, off);
    size_t v = *p & 0x7F;
    for (unsigned shift = 7; *p++ & 0x80; shift += 7)
        v |= (size_t)(*p & 0x7F) << shift;
    *len = v >> 1;
    *escape = (int)(v & 1);
    return (const char *)p;
}

/* The hash a string was interned with, for the index when it grows. */
static uint64_t string_hash_of(const void *ctx, uint32_t off)
{
    size_t len;
    int escape;
    const char *p = str_at(ctx, off, &len, &escape);
    return hashtab_hash(p, len, 0);
}

/* Finds or stores the string p[0, len) (no NUL inside); -1 when the arena is full. */
static int intern(struct metric_set *s, const char *p, size_t len, uint32_t *off)
{
    struct hashtab_probe probe;
    for (uint32_t o = hashtab_first(&s->index, hashtab_hash(p, len, 0), &probe); o != HASHTAB_END;
         o = hashtab_next(&s->index, &probe)) {
        size_t l;
        int escape;
        const char *q = str_at(s, o, &l, &escape);
        if (l == len && memcmp(q, p, len) == 0) {
            *off = o;
            return 0;
        }
    }
    if (len > ARENA_LIMIT / 2)
        return -1;
    int escape = 0;
    for (size_t k = 0; k < len && !escape; k++)
        escape = p[k] == '\\' || p[k] == '"' || p[k] == '\n';
    unsigned char head[8];
    size_t nhead = 0;
    for (size_t v = len << 1 | (size_t)escape; v >= 0x80; v >>= 7)
        head[nhead++] = (unsigned char)(v | 0x80);
    head[nhead] = (unsigned char)((len << 1 | (size_t)escape) >> (7 * nhead));
    nhead++;
    if (metric_arena_alloc(&s->strings, nhead + len + 1, off) != 0)
        return -1;
    char *dst = metric_arena_at(&s->strings, *off);
    memcpy(dst, head, nhead);
    memcpy(dst + nhead, p, len);
    dst[nhead + len] = '\0';
    /* *off < ARENA_LIMIT == HASHTAB_END: the block holds at least one byte */
    hashtab_add(&s->index, &probe, *off, string_hash_of, s);
    return 0;
}

/* Is the string at off exactly v (NUL-terminated)? strcmp, which reads v no further than its NUL
 * and takes it several bytes at a time (a byte loop cost 6 instructions a byte), behind a test
 * of the first byte, where a recent value of another state or dead-letter queue mostly differs. */
static inline __attribute__((always_inline)) int str_is(const struct metric_set *s, uint32_t off,
                                                        const char *v)
{
    size_t len;
    int escape;
    const char *p = str_at(s, off, &len, &escape);
    return p[0] == v[0] && (len == 0 || strcmp(p + 1, v + 1) == 0);
}

/* Interns a label value, made valid UTF-8 first when it has any non-ASCII byte (rare: checking
 * for that while measuring it is nearly free). The recent values at its position are tried first,
 * by comparison alone: in a job-queue scrape nearly every value is one of them, and the hash
 * lookup they save cost about 170 instructions a value. They are tried from the last one used
 * on, so that a repeated value is found first and each value of a cycle (a queue's states) next;
 * a new value takes the slot after it. A stored string is valid UTF-8, so v equal to one needs
 * no sanitizing. pos is METRIC_MAX_LABELS for a value outside the samples. */
static int intern_value(struct metric_set *s, const char *v, size_t pos, uint32_t *off)
{
    uint32_t *recent = pos < METRIC_MAX_LABELS ? s->recent[pos] : NULL;
    unsigned at = recent ? s->recent_at[pos] : 0;
    if (recent) {
        for (unsigned k = 0; k < RECENT; k++) {
            unsigned slot = (at + k) % RECENT;
            if (recent[slot] != NONE && str_is(s, recent[slot], v)) {
                s->recent_at[pos] = (unsigned char)slot;
                *off = recent[slot];
                return 0;
            }
        }
    }
    size_t n = 0;
    unsigned char high = 0;
    for (; v[n]; n++)
        high |= (unsigned char)v[n];
    int rc;
    if (!(high & 0x80)) {
        rc = intern(s, v, n, off);
    } else {
        buf_reset(&s->scratch);
        buf_utf8_sanitize(&s->scratch, v, n);
        rc = intern(s, s->scratch.data, s->scratch.len, off);
    }
    if (rc == 0 && recent) {
        at = (at + 1) % RECENT;
        recent[at] = *off;
        s->recent_at[pos] = (unsigned char)at;
    }
    return rc;
}

/* ---- set life cycle ---- */

struct metric_set *metric_set_new(const char *source, const char *kind)
{
    struct metric_set *s = xcalloc(1, sizeof *s);
    s->source = NONE;
    s->kind = NONE;
    s->family_schema = xcalloc(CATALOG_LEN, sizeof *s->family_schema);
    for (size_t i = 0; i < METRIC_MAX_LABELS; i++)
        for (size_t k = 0; k < RECENT; k++)
            s->recent[i][k] = NONE;
    buf_init(&s->scratch);
    if (source) {
        if (intern_value(s, source, METRIC_MAX_LABELS, &s->source) != 0)
            set_error(s, "source name too long");
        metric_set_set_kind(s, kind);
    }
    return s;
}

void metric_set_free(struct metric_set *s)
{
    if (!s)
        return;
    metric_arena_free(&s->records);
    metric_arena_free(&s->values);
    metric_arena_free(&s->strings);
    hashtab_free(&s->index);
    free(s->family_schema);
    free(s->schemas);
    free(s->schema_names);
    free(s->runs);
    if (s->dyn) {
        free(s->dyn->fams);
        free(s->dyn->schema);
        free(s->dyn);
    }
    free(s->error);
    buf_free(&s->scratch);
    free(s);
}

void metric_set_set_kind(struct metric_set *s, const char *kind)
{
    if (!s || s->source == NONE)
        return; /* a set without base labels stays without them */
    s->kind = NONE;
    if (kind && intern_value(s, kind, METRIC_MAX_LABELS, &s->kind) != 0) {
        s->kind = NONE;
        set_error(s, "kind name too long");
    }
    if (s->nruns && s->runs[s->nruns - 1].first == s->len) {
        s->runs[s->nruns - 1].kind = s->kind; /* no sample has the previous kind yet */
        return;
    }
    if (s->nruns == s->runs_cap) {
        s->runs_cap = s->runs_cap ? s->runs_cap * 2 : 4;
        s->runs = xrealloc(s->runs, s->runs_cap * sizeof *s->runs);
    }
    s->runs[s->nruns].first = (uint32_t)s->len;
    s->runs[s->nruns].kind = s->kind;
    s->nruns++;
}

/* ---- adding ---- */

/* strcmp(a, b) == 0 for the short strings label names are: inline beats a library call. */
static inline int streq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* Inline: it runs once per sample, and as a call it was 8.8M instructions of sidekiq's 10,000
 * queues. */
static inline __attribute__((always_inline)) int
schema_has_names(const struct metric_set *s, size_t id, const char *const *names, size_t n)
{
    const struct schema *sc = &s->schemas[id];
    if (sc->n != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        int escape;
        if (!streq(str_at(s, s->schema_names[sc->start + i], &len, &escape), names[i]))
            return 0;
    }
    return 1;
}

/* The cached schema of family index fi (catalogue or dynamic). */
static uint16_t *schema_slot(struct metric_set *s, size_t fi)
{
    return fi < CATALOG_LEN ? &s->family_schema[fi] : &s->dyn->schema[fi - CATALOG_LEN];
}

/* The family behind family index fi, which the set holds. */
static const struct metric_family *family_at(const struct metric_set *s, size_t fi)
{
    return fi < CATALOG_LEN ? &metric_catalog_rows[fi] : s->dyn->fams[fi - CATALOG_LEN];
}

/* The schema for these validated label names: one the set has (they are few), or a new one. */
static int find_schema(struct metric_set *s, const struct metric_family *f, size_t fi,
                       const char *const *names, size_t n, uint16_t *id)
{
    uint32_t offs[METRIC_MAX_LABELS];
    for (size_t i = 0; i < n; i++) {
        if (intern(s, names[i], strlen(names[i]), &offs[i]) != 0)
            return set_error(s, "%s: the set's strings exceed 4 GiB", f->name);
    }
    size_t k = 0;
    for (; k < s->nschemas; k++) {
        const struct schema *sc = &s->schemas[k];
        if (sc->n == n && (n == 0 || memcmp(&s->schema_names[sc->start], offs, n * 4) == 0))
            break;
    }
    if (k == s->nschemas) {
        if (k >= UINT16_MAX)
            return set_error(s, "%s: more than %u different label name lists", f->name,
                             (unsigned)UINT16_MAX - 1);
        if (s->nschemas == s->schemas_cap) {
            s->schemas_cap = s->schemas_cap ? s->schemas_cap * 2 : 8;
            s->schemas = xrealloc(s->schemas, s->schemas_cap * sizeof *s->schemas);
        }
        while (s->nschema_names + n > s->schema_names_cap) {
            s->schema_names_cap = s->schema_names_cap ? s->schema_names_cap * 2 : 32;
            s->schema_names =
                xrealloc(s->schema_names, s->schema_names_cap * sizeof *s->schema_names);
        }
        struct schema *sc = &s->schemas[k];
        sc->start = (uint32_t)s->nschema_names;
        sc->n = (uint16_t)n;
        sc->base_names = 0;
        for (size_t i = 0; i < n; i++) {
            s->schema_names[s->nschema_names++] = offs[i];
            if (streq(names[i], "source"))
                sc->base_names |= 1;
            if (streq(names[i], "kind"))
                sc->base_names |= 2;
        }
        s->nschemas++;
    }
    *schema_slot(s, fi) = (uint16_t)(k + 1);
    *id = (uint16_t)k;
    return 0;
}

/* Is name already a label of the add in progress (base labels included)? */
static int label_taken(const char *const *names, size_t n, size_t nbase, const char *name)
{
    if (nbase >= 1 && streq(name, "source"))
        return 1;
    if (nbase >= 2 && streq(name, "kind"))
        return 1;
    for (size_t i = 0; i < n; i++) {
        if (names[i][0] == name[0] && streq(names[i], name))
            return 1;
    }
    return 0;
}

/* The checks of metric_set_add, in the order of the labels so that the error names the first
 * bad one. names[room] (room = METRIC_MAX_LABELS - nbase), when given, is one label too many. */
static int check_labels(struct metric_set *s, const struct metric_family *f,
                        const char *const *names, const char *const *values, size_t n, size_t nbase)
{
    for (size_t i = 0; i < n; i++) {
        if (!metric_label_name_valid(names[i]))
            return set_error(s, "%s: invalid label name \"%s\"", f->name, names[i]);
        if (!values[i])
            return set_error(s, "%s: label \"%s\" has a NULL value", f->name, names[i]);
        if (label_taken(names, i, nbase, names[i]))
            return set_error(s, "%s: duplicate label \"%s\"", f->name, names[i]);
        if (nbase + i == METRIC_MAX_LABELS)
            return set_error(s, "%s: more than %d labels", f->name, METRIC_MAX_LABELS);
    }
    return 0;
}

/* Reads the NULL-terminated name/value pairs of a variadic add into names/values (room for
 * METRIC_MAX_LABELS + 1), no further than a NULL value (it may be the terminator) or one label
 * too many, which check_labels then reports. Returns how many it read. */
static inline __attribute__((always_inline)) size_t read_pairs(va_list ap, const char **names,
                                                               const char **values)
{
    size_t n = 0;
    while (n <= METRIC_MAX_LABELS) {
        const char *name = va_arg(ap, const char *);
        if (!name)
            break;
        names[n] = name;
        values[n] = va_arg(ap, const char *);
        if (!values[n++])
            break;
    }
    return n;
}

/* Stores a checked sample: its record and its values' string offsets. The tail of add_sample and
 * metric_set_add_shaped; -1 only when an arena is full (4 GiB). */
static inline __attribute__((always_inline)) int
store_sample(struct metric_set *s, const struct metric_family *f, size_t fi, uint16_t schema,
             double value, const uint32_t *offs, size_t n)
{
    uint32_t vals = 0, rec;
    if (n && metric_arena_alloc(&s->values, n * sizeof *offs, &vals) != 0)
        return set_error(s, "%s: the set holds too many labels", f->name);
    if (metric_arena_alloc(&s->records, sizeof(struct sample_rec), &rec) != 0)
        return set_error(s, "%s: the set holds too many samples", f->name);
    /* Most samples have one or two labels beyond the base ones: a call to memcpy for them cost
     * more than the copy (a quarter of metric_set_add_shaped). */
    uint32_t *dst = n ? (uint32_t *)(void *)metric_arena_at(&s->values, vals) : NULL;
    if (n > 2)
        memcpy(dst, offs, n * sizeof *offs);
    else if (n)
        dst[0] = offs[0], dst[n - 1] = offs[n - 1];
    struct sample_rec *r = (struct sample_rec *)(void *)metric_arena_at(&s->records, rec);
    r->value = value;
    r->vals = vals;
    r->family = (uint16_t)fi;
    r->schema = schema;
    s->len++;
    s->last_family = f;
    s->last_index = (uint16_t)fi;
    return 0;
}

/* Adds one sample of family f (family index fi) with labels names[i]=values[i], i < n: the
 * common part of metric_set_add, metric_set_add_family and metric_set_add_familyv. Forced
 * inline: as a call it cost metric_set_add 12% at 200k samples. */
static inline __attribute__((always_inline)) int
add_sample(struct metric_set *s, const struct metric_family *f, size_t fi, double value,
           const char *const *names, const char *const *values, size_t n)
{
    size_t nbase = s->source == NONE ? 0 : s->kind == NONE ? 1 : 2;
    size_t room = METRIC_MAX_LABELS - nbase;

    /* Nearly always the label names are those of the family's previous sample, which were
     * validated then: only set_kind may have made one of them clash with a base label since. */
    size_t cached = *schema_slot(s, fi);
    uint16_t schema = 0;
    if (cached && n <= room && (n == 0 || values[n - 1]) &&
        schema_has_names(s, cached - 1, names, n) &&
        !(s->schemas[cached - 1].base_names & ((1u << nbase) - 1))) {
        schema = (uint16_t)(cached - 1);
    } else {
        if (check_labels(s, f, names, values, n, nbase) != 0 ||
            find_schema(s, f, fi, names, n, &schema) != 0)
            return -1;
    }

    /* Valid: from here on only a full arena (4 GiB) can fail. */
    uint32_t offs[METRIC_MAX_LABELS];
    for (size_t i = 0; i < n; i++) {
        if (intern_value(s, values[i], i, &offs[i]) != 0)
            return set_error(s, "%s: the set's strings exceed 4 GiB", f->name);
    }
    return store_sample(s, f, fi, schema, value, offs, n);
}

/* add_sample with the name/value pairs of a variadic add: the tail of metric_set_add and
 * metric_set_add_family. */
static inline __attribute__((always_inline)) int
add_pairs(struct metric_set *s, const struct metric_family *f, size_t fi, double value, va_list ap)
{
    const char *names[METRIC_MAX_LABELS + 1];
    const char *values[METRIC_MAX_LABELS + 1];
    size_t n = read_pairs(ap, names, values);
    return add_sample(s, f, fi, value, names, values, n);
}

int metric_set_add(struct metric_set *s, const char *family, double value, ...)
{
    if (!s)
        return -1;
    const struct metric_family *f = NULL;
    /* a name has two places, a pair, so that two names of one pair both stay */
    size_t slot = (size_t)(((uint64_t)(uintptr_t)family * 0x9E3779B97F4A7C15u) >> 59) & ~(size_t)1;
    for (size_t k = slot; k <= slot + 1 && family; k++)
        if (s->family_names[k] == family &&
            strcmp(family, metric_catalog_rows[s->family_index[k]].name) == 0) {
            f = &metric_catalog_rows[s->family_index[k]];
            break;
        }
    if (!f) {
        f = metric_catalog_find(family);
        if (!f)
            return set_error(s, "unknown metric family \"%s\"", family ? family : "(null)");
        if (s->family_names[slot])
            slot++; /* the pair's first stays; a third name takes the second's place */
        s->family_names[slot] = family;
        s->family_index[slot] = (uint16_t)(f - metric_catalog_rows);
    }
    va_list ap;
    va_start(ap, value);
    int rc = add_pairs(s, f, (size_t)(f - metric_catalog_rows), value, ap);
    va_end(ap);
    return rc;
}

/* The dynamic index of f, a family outside the catalogue, registering f (validated once) on
 * first sight. -1 with the set's error set. */
static int dyn_index(struct metric_set *s, const struct metric_family *f, size_t *fi)
{
    struct dyn_families *d = s->dyn;
    size_t n = d ? d->n : 0;
    for (size_t k = 0; k < n; k++) {
        if (d->fams[k] == f) {
            *fi = CATALOG_LEN + k;
            return 0;
        }
    }
    /* Another pointer with the same name (two sources of one definition) is the same family:
     * one name, one header, HELP and TYPE from the first. */
    for (size_t k = 0; k < n; k++) {
        if (f->name && strcmp(d->fams[k]->name, f->name) == 0) {
            *fi = CATALOG_LEN + k;
            return 0;
        }
    }
    char why[128];
    if (metric_family_validate(f->name, f->type, f->help, why, sizeof why) != 0)
        return set_error(s, "invalid metric family \"%s\": %s", f->name ? f->name : "(null)", why);
    if (CATALOG_LEN + n >= UINT16_MAX)
        return set_error(s, "%s: more than %u metric families in one set", f->name,
                         (unsigned)(UINT16_MAX - 1 - CATALOG_LEN));
    if (!d)
        d = s->dyn = xcalloc(1, sizeof *d);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 4;
        d->fams = xrealloc(d->fams, d->cap * sizeof *d->fams);
        d->schema = xrealloc(d->schema, d->cap * sizeof *d->schema);
    }
    d->fams[d->n] = f;
    d->schema[d->n] = 0;
    *fi = CATALOG_LEN + d->n++;
    return 0;
}

/* The family index of f in s: its catalogue index when f points into the catalogue, else its
 * dynamic index (dyn_index). The catalogue case inline: collectors that look their families up
 * once a collection add through metric_set_add_family with catalogue pointers, alternating
 * between a queue's families, and as a call it was 35 instructions a sample. */
static inline __attribute__((always_inline)) int
family_index(struct metric_set *s, const struct metric_family *f, size_t *fi)
{
    const struct metric_family *catalog = metric_catalog_rows;
    /* relational < on unrelated pointers is undefined */
    uintptr_t at = (uintptr_t)f, base = (uintptr_t)catalog;
    if (at - base < CATALOG_LEN * sizeof *catalog) {
        *fi = (size_t)(f - catalog);
        return 0;
    }
    return dyn_index(s, f, fi);
}

int metric_set_add_family(struct metric_set *s, const struct metric_family *f, double value, ...)
{
    if (!s)
        return -1;
    if (!f)
        return set_error(s, "metric_set_add_family: NULL family");
    size_t fi = s->last_index;
    if (f != s->last_family && family_index(s, f, &fi) != 0)
        return -1;
    va_list ap;
    va_start(ap, value);
    int rc = add_pairs(s, f, fi, value, ap);
    va_end(ap);
    return rc;
}

int metric_set_add_familyv(struct metric_set *s, const struct metric_family *f, double value,
                           const char *const *names, const char *const *values, size_t n)
{
    if (!s)
        return -1;
    if (!f)
        return set_error(s, "metric_set_add_familyv: NULL family");
    if (n && (!names || !values))
        return set_error(s, "%s: NULL label arrays", f->name);
    size_t fi = s->last_index;
    if (f != s->last_family && family_index(s, f, &fi) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            return set_error(s, "%s: label %zu has a NULL name", f->name, i);
    }
    if (n > METRIC_MAX_LABELS) /* check_labels reports it; it reads no further than the limit */
        n = METRIC_MAX_LABELS + 1;
    return add_sample(s, f, fi, value, names, values, n);
}

/* ---- many series with their labels resolved once ---- */

int metric_set_shape(struct metric_set *s, const struct metric_family *f, struct metric_shape *out,
                     ...)
{
    out->family = NULL;
    if (!s)
        return -1;
    if (!f)
        return set_error(s, "metric_set_shape: NULL family");
    size_t fi;
    if (family_index(s, f, &fi) != 0)
        return -1;
    const char *names[METRIC_MAX_LABELS + 1];
    size_t n = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *name; n <= METRIC_MAX_LABELS && (name = va_arg(ap, const char *));)
        names[n++] = name;
    va_end(ap);
    size_t nbase = s->source == NONE ? 0 : s->kind == NONE ? 1 : 2;
    uint16_t schema;
    /* names stand in for the values, which are not known yet: none is NULL */
    if (check_labels(s, f, names, names, n, nbase) != 0 ||
        find_schema(s, f, fi, names, n, &schema) != 0)
        return -1;
    *out = (struct metric_shape){f, (uint16_t)fi, schema, (unsigned char)n, (unsigned char)nbase};
    return 0;
}

int metric_set_value(struct metric_set *s, const char *v, metric_value *out)
{
    *out = NONE;
    if (!s)
        return -1;
    if (!v)
        return set_error(s, "metric_set_value: NULL value");
    if (intern_value(s, v, METRIC_MAX_LABELS, out) != 0)
        return set_error(s, "the set's strings exceed 4 GiB");
    return 0;
}

int metric_set_add_shaped(struct metric_set *s, const struct metric_shape *sh, double value,
                          const metric_value *values)
{
    if (!s || !sh->family)
        return -1; /* the shape's error is the set's already */
    size_t nbase = s->source == NONE ? 0 : s->kind == NONE ? 1 : 2;
    if (sh->nbase != nbase)
        return set_error(s, "%s: shape made before the set's kind label changed", sh->family->name);
    for (size_t i = 0; i < sh->nlabels; i++)
        if (values[i] == NONE)
            return set_error(s, "%s: label %zu has no value", sh->family->name, i);
    return store_sample(s, sh->family, sh->index, sh->schema, value, values, sh->nlabels);
}

/* ---- reading ---- */

size_t metric_set_len(const struct metric_set *s)
{
    return s ? s->len : 0;
}

static const struct sample_rec *rec_at(const struct metric_set *s, size_t i)
{
    return (const struct sample_rec *)(void *)metric_arena_at(
        &s->records, (uint32_t)(i * sizeof(struct sample_rec)));
}

/* The kind of sample i: the last run starting at or before it (runs[0] starts at 0). */
static uint32_t kind_of(const struct metric_set *s, size_t i)
{
    size_t lo = 0, hi = s->nruns;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->runs[mid].first <= i)
            lo = mid;
        else
            hi = mid;
    }
    return s->runs[lo].kind;
}

static inline __attribute__((always_inline)) void fill_label(const struct metric_set *s,
                                                             struct metric_label *l, uint32_t value)
{
    l->value = str_at(s, value, &l->value_len, &l->value_escape);
}

void metric_set_get(const struct metric_set *s, size_t i, struct metric_sample *out)
{
    out->nlabels = 0;
    if (!s || i >= s->len) {
        out->family = NULL;
        out->value = 0;
        return;
    }
    const struct sample_rec *r = rec_at(s, i);
    out->family = family_at(s, r->family);
    out->value = r->value;
    struct metric_label *l = out->labels;
    if (s->source != NONE) {
        l->name = "source";
        l->name_len = 6;
        fill_label(s, l++, s->source);
        uint32_t kind = kind_of(s, i);
        if (kind != NONE) {
            l->name = "kind";
            l->name_len = 4;
            fill_label(s, l++, kind);
        }
    }
    const struct schema *sc = &s->schemas[r->schema];
    if (sc->n) {
        const uint32_t *names = &s->schema_names[sc->start];
        const uint32_t *vals = (const uint32_t *)(void *)metric_arena_at(&s->values, r->vals);
        for (size_t k = 0; k < sc->n; k++, l++) {
            int escape;
            l->name = str_at(s, names[k], &l->name_len, &escape);
            fill_label(s, l, vals[k]);
        }
    }
    out->nlabels = (size_t)(l - out->labels);
}

const struct metric_family *metric_set_family(const struct metric_set *s, size_t i)
{
    return s && i < s->len ? family_at(s, rec_at(s, i)->family) : NULL;
}

size_t metric_set_family_index(const struct metric_set *s, size_t i)
{
    return s && i < s->len ? rec_at(s, i)->family : SIZE_MAX;
}

size_t metric_set_dynamic_count(const struct metric_set *s)
{
    return s && s->dyn ? s->dyn->n : 0;
}

const struct metric_family *metric_set_dynamic_at(const struct metric_set *s, size_t k)
{
    return k < metric_set_dynamic_count(s) ? s->dyn->fams[k] : NULL;
}

/* A set keeps each string once, so two samples with the same value have the same offset: the
 * index holds the offsets themselves (each < ARENA_LIMIT, below HASHTAB_END) and hashes them. */
static uint64_t offset_hash(const void *ctx, uint32_t off)
{
    (void)ctx;
    return hashtab_hash(&off, sizeof off, 0);
}

size_t metric_set_distinct_values(const struct metric_set *s, const char *name)
{
    if (!s || !s->len)
        return 0;
    /* Where name is among each schema's labels (-1: not there), found once per schema. */
    int *pos = xcalloc(s->nschemas ? s->nschemas : 1, sizeof *pos);
    for (size_t i = 0; i < s->nschemas; i++) {
        pos[i] = -1;
        for (size_t k = 0; k < s->schemas[i].n; k++) {
            size_t len;
            int escape;
            const char *n = str_at(s, s->schema_names[s->schemas[i].start + k], &len, &escape);
            if (strcmp(n, name) == 0)
                pos[i] = (int)k;
        }
    }
    struct hashtab seen = {0};
    size_t count = 0;
    uint32_t prev = NONE;
    for (size_t i = 0; i < s->len; i++) {
        const struct sample_rec *r = rec_at(s, i);
        if (pos[r->schema] < 0)
            continue;
        uint32_t off =
            ((const uint32_t *)(void *)metric_arena_at(&s->values, r->vals))[pos[r->schema]];
        /* A queue's samples are mostly added in a row: its value was just counted (or skipped). */
        if (off == prev)
            continue;
        prev = off;
        size_t len;
        int escape;
        str_at(s, off, &len, &escape);
        if (!len)
            continue; /* an empty value names nothing (qrel_skipped_entries{queue=""}) */
        struct hashtab_probe p;
        uint32_t id = hashtab_first(&seen, offset_hash(NULL, off), &p);
        while (id != HASHTAB_END && id != off)
            id = hashtab_next(&seen, &p);
        if (id == HASHTAB_END) {
            hashtab_add(&seen, &p, off, offset_hash, NULL);
            count++;
        }
    }
    hashtab_free(&seen);
    free(pos);
    return count;
}

const char *metric_set_error(const struct metric_set *s)
{
    return s ? s->error : NULL;
}

size_t metric_set_bytes(const struct metric_set *s)
{
    if (!s)
        return 0;
    return sizeof *s + CATALOG_LEN * sizeof *s->family_schema + metric_arena_bytes(&s->records) +
           metric_arena_bytes(&s->values) + metric_arena_bytes(&s->strings) +
           s->index.nslots * (sizeof *s->index.slots + sizeof *s->index.tags) +
           s->schemas_cap * sizeof *s->schemas + s->schema_names_cap * sizeof *s->schema_names +
           s->runs_cap * sizeof *s->runs + s->scratch.cap + (s->error ? strlen(s->error) + 1 : 0) +
           (s->dyn ? sizeof *s->dyn + s->dyn->cap * (sizeof *s->dyn->fams + sizeof *s->dyn->schema)
                   : 0);
}
