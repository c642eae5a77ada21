/* expfmt.c: the Prometheus text format 0.0.4 and OpenMetrics 1.0.0 writers (see expfmt.h).
 *
 * A scrape merges the sets of every source, and both formats require all samples of a family to
 * sit together under one HELP/TYPE header. The writer therefore links each family's samples in
 * output order (set order, then insertion order) with one pass over the sets: a 32-bit "next"
 * per sample, not a copy of the samples. It then produces the text in pieces, each line written
 * straight into the caller's buffer when it surely fits, so that an exposition of 10 MB is
 * streamed to the client instead of held whole; expfmt_write is the same writer reading into a
 * growing buffer. The rest here is escaping, kept byte-exact because scrapers and promtool are
 * strict; samples are formatted in place because one scrape of a large Redis can hold hundreds
 * of thousands of them. Values are formatted by expfmt_value.c, the Accept header is read by
 * expfmt_negotiate.c. */
#include "expfmt.h"
#include "alloc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output buffer ---- */

/* Makes room for n more bytes and returns where they go. The writer formats straight into the
 * buffer because going through buf_append for every quote and comma costs more than all the
 * rest of the work at 200k samples. It relies only on what buf.h documents about struct buf
 * (data holds len bytes plus a NUL, cap is the allocation); callers add to len and terminate. */
static char *out_reserve(struct buf *b, size_t n)
{
    size_t need = b->len + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    return b->data + b->len;
}

static void out_commit(struct buf *b, char *end)
{
    b->len = (size_t)(end - b->data);
    b->data[b->len] = '\0';
}

/* ---- escaping ---- */

/* Copies s to p (room for 2 * strlen(s) bytes) with \\, \n and, when quote is set, \" escaped;
 * returns the end. Those are the only escapes either format defines. */
static char *escape_to(char *p, const char *s, int quote)
{
    for (; *s; s++) {
        char c = *s;
        if (c == '\\' || c == '\n' || (c == '"' && quote)) {
            *p++ = '\\';
            *p++ = c == '\n' ? 'n' : c;
        } else {
            *p++ = c;
        }
    }
    return p;
}

static void escape_into(struct buf *out, const char *s, int quote)
{
    char *p = out_reserve(out, 2 * strlen(s));
    out_commit(out, escape_to(p, s, quote));
}

void expfmt_escape_label_value(struct buf *out, const char *v)
{
    if (v)
        escape_into(out, v, 1);
}

void expfmt_escape_help(struct buf *out, const char *help, enum expfmt_format f)
{
    /* The 0.0.4 text format does not escape '"' in HELP; OpenMetrics does. */
    if (help)
        escape_into(out, help, f == EXPFMT_OPENMETRICS);
}

/* ---- the writer ---- */

#define END UINT32_MAX

enum writer_state { WRITE_HEADER, WRITE_SAMPLES, WRITE_EOF, WRITE_DONE };

/* Samples are numbered across the sets in output order within a family (set order, then
 * insertion order): global number g is sample g - set_end[k - 1] of set k. */
struct expfmt_writer {
    struct metric_set **sets; /* a copy of the caller's array; the sets are not owned */
    size_t nsets;
    size_t *set_end; /* one past the global number of each set's last sample */
    uint32_t *next;  /* the next sample of the same family, or END: the grouping index */
    uint32_t *head;  /* per family slot: its first sample, or END */
    /* Family slots in output order: the catalogue's, then the sets' dynamic families merged by
     * name and sorted by name. fams[slot] gives the HELP and TYPE (of the first set having it). */
    const struct metric_family **fams;
    size_t ncat;        /* catalogue families: slots [0, ncat) */
    size_t nfam;        /* all slots */
    size_t *dyn_start;  /* per set: where its dynamic families' slots start in dyn_slot */
    uint32_t *dyn_slot; /* the slot of set k's dynamic family j at dyn_start[k] + j */
    enum expfmt_format f;
    enum writer_state state;
    size_t fam;       /* the family being written */
    size_t name_len;  /* strlen of its name */
    uint32_t cur;     /* its next sample to write, or END */
    size_t cur_set;   /* the set that holds cur */
    struct buf carry; /* the one piece that did not fit the caller's buffer */
    size_t carry_off; /* how much of it was handed out already */
    struct metric_sample sm;
    /* 'name{l0="v0",l1="v1"' as last written, and the strings it was made of. A set stores each
     * string once, so the same pointers mean the same text: nearly every sample of a family in a
     * set starts with the same source and kind, and its line then starts with one copy. */
    struct buf prefix;
    const char *prefix_of[5];
};

/* A dynamic family met in a set, for the merge by name: seq keeps set order among equal names. */
struct dyn_ref {
    const struct metric_family *fam;
    size_t seq;
};

static int dyn_ref_cmp(const void *a, const void *b)
{
    const struct dyn_ref *x = a, *y = b;
    int c = strcmp(x->fam->name, y->fam->name);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Lays out the family slots: the catalogue, then the dynamic families of all sets, one slot per
 * name, sorted by name, HELP and TYPE from the first set (in set order) that has the name. Sets
 * hold a handful of dynamic families at most, so the sort and searches cost nothing. */
static void layout_families(struct expfmt_writer *w)
{
    w->ncat = metric_catalog_count();
    w->dyn_start = xcalloc(w->nsets + 1, sizeof *w->dyn_start);
    size_t nref = 0;
    for (size_t k = 0; k < w->nsets; k++) {
        w->dyn_start[k] = nref;
        nref += metric_set_dynamic_count(w->sets[k]);
    }
    w->dyn_start[w->nsets] = nref;
    struct dyn_ref *refs = xmalloc((nref ? nref : 1) * sizeof *refs);
    for (size_t k = 0, r = 0; k < w->nsets; k++) {
        for (size_t j = 0; j < metric_set_dynamic_count(w->sets[k]); j++, r++)
            refs[r] = (struct dyn_ref){metric_set_dynamic_at(w->sets[k], j), r};
    }
    qsort(refs, nref, sizeof *refs, dyn_ref_cmp);
    w->fams = xmalloc((w->ncat + nref + 1) * sizeof *w->fams);
    for (size_t i = 0; i < w->ncat; i++)
        w->fams[i] = metric_catalog_at(i);
    /* refs[r] sorted; slot of each: the first of its run of equal names. */
    w->dyn_slot = xmalloc((nref ? nref : 1) * sizeof *w->dyn_slot);
    size_t nfam = w->ncat;
    for (size_t r = 0; r < nref; r++) {
        if (r == 0 || strcmp(refs[r].fam->name, refs[r - 1].fam->name) != 0)
            w->fams[nfam++] = refs[r].fam;
        w->dyn_slot[refs[r].seq] = (uint32_t)(nfam - 1);
    }
    w->nfam = nfam;
    free(refs);
}

struct expfmt_writer *expfmt_writer_new(struct metric_set *const *sets, size_t nsets,
                                        enum expfmt_format f)
{
    struct expfmt_writer *w = xcalloc(1, sizeof *w);
    w->f = f;
    w->nsets = sets ? nsets : 0;
    w->sets = xcalloc(w->nsets + 1, sizeof *w->sets);
    w->set_end = xcalloc(w->nsets + 1, sizeof *w->set_end);
    size_t total = 0;
    for (size_t k = 0; k < w->nsets; k++) {
        w->sets[k] = sets[k];
        total += metric_set_len(sets[k]);
        w->set_end[k] = total;
    }
    if (total >= END) {
        /* 16 bytes a sample at least: 64 GiB of sets. Nothing can be written correctly. */
        fprintf(stderr, "qrel: %zu samples in one exposition, more than it can index\n", total);
        abort();
    }

    layout_families(w);

    /* One pass in output order links each family's samples; tail[] is the last one so far. */
    w->head = xmalloc((w->nfam + 1) * sizeof *w->head);
    uint32_t *tail = xmalloc((w->nfam + 1) * sizeof *tail);
    for (size_t i = 0; i <= w->nfam; i++)
        w->head[i] = END;
    w->next = xmalloc((total ? total : 1) * sizeof *w->next);
    uint32_t g = 0;
    for (size_t k = 0; k < w->nsets; k++) {
        size_t n = metric_set_len(w->sets[k]);
        const uint32_t *dyn = w->dyn_slot + w->dyn_start[k];
        size_t ndyn = w->dyn_start[k + 1] - w->dyn_start[k];
        for (size_t i = 0; i < n; i++, g++) {
            size_t fi = metric_set_family_index(w->sets[k], i);
            if (fi >= w->ncat) /* slot nfam catches strays (a bug upstream); it is never written */
                fi = fi - w->ncat < ndyn ? dyn[fi - w->ncat] : w->nfam;
            if (w->head[fi] == END)
                w->head[fi] = g;
            else
                w->next[tail[fi]] = g;
            tail[fi] = g;
            w->next[g] = END;
        }
    }
    free(tail);
    buf_init(&w->carry);
    buf_init(&w->prefix);
    w->state = WRITE_HEADER;
    return w;
}

void expfmt_writer_free(struct expfmt_writer *w)
{
    if (!w)
        return;
    buf_free(&w->carry);
    buf_free(&w->prefix);
    free(w->next);
    free(w->head);
    free(w->fams);
    free(w->dyn_start);
    free(w->dyn_slot);
    free(w->set_end);
    free(w->sets);
    free(w);
}

/* "# HELP name help\n# TYPE name type\n"; at most 2 * (name + help) + 32 bytes. */
static char *header_to(char *p, const struct metric_family *fam, size_t name_len,
                       enum expfmt_format f)
{
    /* OpenMetrics names a counter family without the _total its samples carry. */
    if (f == EXPFMT_OPENMETRICS && fam->type == METRIC_COUNTER && name_len > 6 &&
        strcmp(fam->name + name_len - 6, "_total") == 0)
        name_len -= 6;
    memcpy(p, "# HELP ", 7);
    p += 7;
    memcpy(p, fam->name, name_len);
    p += name_len;
    *p++ = ' ';
    /* The 0.0.4 text format does not escape '"' in HELP; OpenMetrics does. */
    p = escape_to(p, fam->help, f == EXPFMT_OPENMETRICS);
    memcpy(p, "\n# TYPE ", 8);
    p += 8;
    memcpy(p, fam->name, name_len);
    p += name_len;
    const char *type = fam->type == METRIC_COUNTER   ? " counter\n"
                       : fam->type == METRIC_SUMMARY ? " summary\n"
                                                     : " gauge\n";
    size_t type_len = strlen(type);
    memcpy(p, type, type_len);
    return p + type_len;
}

/* The most bytes labels_to writes for labels [from, to): escaping at most doubles a value. */
static size_t labels_bound(const struct metric_sample *sm, size_t from, size_t to)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        const struct metric_label *l = &sm->labels[i];
        n += l->name_len + (l->value_escape ? 2 * l->value_len : l->value_len) + 4; /* ,="" */
    }
    return n;
}

/* The most bytes sample_to can write for sm: "} " before the value, "\n" after. */
static size_t sample_bound(const struct metric_sample *sm, size_t name_len)
{
    return name_len + labels_bound(sm, 0, sm->nlabels) + EXPFMT_VALUE_MAX + 3;
}

/* '{l0="v0",l1="v1"' for labels [from, to), with ',' instead of '{' when from > 0. The set knows
 * every string's length and whether it needs escaping (almost none does): plain copies. */
static char *labels_to(char *p, const struct metric_sample *sm, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const struct metric_label *l = &sm->labels[i];
        *p++ = i ? ',' : '{';
        memcpy(p, l->name, l->name_len);
        p += l->name_len;
        *p++ = '=';
        *p++ = '"';
        if (l->value_escape) {
            p = escape_to(p, l->value, 1);
        } else {
            memcpy(p, l->value, l->value_len);
            p += l->value_len;
        }
        *p++ = '"';
    }
    return p;
}

/* name{l0="v0",...} value\n for the writer's current sample, at most sample_bound bytes. */
static char *sample_to(struct expfmt_writer *w, char *p)
{
    const struct metric_sample *sm = &w->sm;
    const char *name = w->fams[w->fam]->name;
    size_t k = sm->nlabels < 2 ? 0 : 2;
    if (k) {
        const char *of[5] = {name, sm->labels[0].name, sm->labels[0].value, sm->labels[1].name,
                             sm->labels[1].value};
        if (memcmp(of, w->prefix_of, sizeof of) != 0) {
            w->prefix.len = 0;
            char *q = out_reserve(&w->prefix, w->name_len + labels_bound(sm, 0, 2));
            memcpy(q, name, w->name_len);
            q = labels_to(q + w->name_len, sm, 0, 2);
            w->prefix.len = (size_t)(q - w->prefix.data);
            memcpy(w->prefix_of, of, sizeof of);
        }
        memcpy(p, w->prefix.data, w->prefix.len);
        p += w->prefix.len;
    } else {
        memcpy(p, name, w->name_len);
        p += w->name_len;
    }
    p = labels_to(p, sm, k, sm->nlabels);
    if (sm->nlabels)
        *p++ = '}';
    *p++ = ' ';
    p += expfmt_value_to(p, sm->value);
    *p++ = '\n';
    return p;
}

/* Where the next piece (at most bound bytes) goes: straight into the caller's buffer when it
 * surely fits, else into the carry buffer, which read then hands out over several calls. */
static char *piece_start(struct expfmt_writer *w, char *dst, size_t room, size_t bound)
{
    if (bound <= room)
        return dst;
    w->carry.len = 0;
    w->carry_off = 0;
    return out_reserve(&w->carry, bound);
}

size_t expfmt_writer_read(struct expfmt_writer *w, char *dst, size_t max)
{
    if (!w)
        return 0;
    size_t n = 0;
    while (n < max) {
        if (w->carry_off < w->carry.len) {
            size_t k = w->carry.len - w->carry_off;
            if (k > max - n)
                k = max - n;
            memcpy(dst + n, w->carry.data + w->carry_off, k);
            n += k;
            w->carry_off += k;
            continue;
        }
        char *p, *end;
        const struct metric_family *fam;
        switch (w->state) {
        case WRITE_HEADER:
            while (w->fam < w->nfam && w->head[w->fam] == END)
                w->fam++; /* a family without samples is not written at all */
            if (w->fam == w->nfam) {
                w->state = WRITE_EOF;
                continue;
            }
            fam = w->fams[w->fam];
            w->name_len = strlen(fam->name);
            p = piece_start(w, dst + n, max - n, 2 * (w->name_len + strlen(fam->help)) + 32);
            end = header_to(p, fam, w->name_len, w->f);
            w->cur = w->head[w->fam];
            w->cur_set = 0;
            w->state = WRITE_SAMPLES;
            break;
        case WRITE_SAMPLES:
            if (w->cur == END) {
                w->fam++;
                w->state = WRITE_HEADER;
                continue;
            }
            while (w->cur >= w->set_end[w->cur_set])
                w->cur_set++;
            metric_set_get(w->sets[w->cur_set],
                           w->cur - (w->cur_set ? w->set_end[w->cur_set - 1] : 0), &w->sm);
            w->cur = w->next[w->cur];
            p = piece_start(w, dst + n, max - n, sample_bound(&w->sm, w->name_len));
            end = sample_to(w, p);
            break;
        case WRITE_EOF:
            w->state = WRITE_DONE;
            if (w->f != EXPFMT_OPENMETRICS)
                continue;
            p = piece_start(w, dst + n, max - n, 6);
            memcpy(p, "# EOF\n", 6);
            end = p + 6;
            break;
        default:
            return n;
        }
        if (p == dst + n)
            n += (size_t)(end - p);
        else
            w->carry.len = (size_t)(end - p);
    }
    return n;
}

void expfmt_write(struct buf *out, struct metric_set *const *sets, size_t nsets,
                  enum expfmt_format f)
{
    struct expfmt_writer *w = expfmt_writer_new(sets, nsets, f);
    for (;;) {
        /* Read straight into out, into whatever room it has, doubling it when short. */
        size_t room = out->cap > out->len + 1 ? out->cap - out->len - 1 : 0;
        if (room < 4096)
            room = out->cap > 4096 ? out->cap : 4096;
        char *p = out_reserve(out, room);
        size_t n = expfmt_writer_read(w, p, room);
        out_commit(out, p + n);
        if (n < room)
            break; /* a short read is the end */
    }
    expfmt_writer_free(w);
}
