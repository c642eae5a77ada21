/* audit_series.c: see audit_series.h.
 *
 * Each (source, kind, rule) keeps its candidates in an array that may grow to twice the number
 * it keeps; when full, it is sorted and cut back to the worst ones. Every finding thus costs a
 * copy of three pointers and a double and, amortised, a share of one sort of a short array,
 * whatever the number of queues. audit_add_metrics feeds a report's findings through here too,
 * so the exporter's series and a report's are ordered and cut in one place. */
#include "audit_series.h"

#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "alloc.h"

struct candidate {
    const char *queue, *group;
    double badness;
};

/* One (source, kind, rule): how many findings, and the worst ones so far. */
struct series_group {
    enum audit_rule rule;
    const char *source, *kind;
    size_t count;
    struct candidate *v;
    size_t n, cap;
};

struct audit_series {
    long keep;
    struct series_group *groups;
    size_t ngroups, cap;
    struct hashtab index; /* (rule, source, kind) to groups[id] */
};

struct audit_series *audit_series_new(long keep)
{
    struct audit_series *s = xcalloc(1, sizeof *s);
    s->keep = keep;
    return s;
}

void audit_series_free(struct audit_series *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ngroups; i++)
        free(s->groups[i].v);
    free(s->groups);
    hashtab_free(&s->index);
    free(s);
}

static uint64_t group_hash(enum audit_rule rule, const char *source, const char *kind)
{
    return hashtab_hash(kind, strlen(kind), hashtab_hash(source, strlen(source), (uint64_t)rule));
}

static uint64_t group_hash_of(const void *ctx, uint32_t id)
{
    const struct series_group *g = &((const struct audit_series *)ctx)->groups[id];
    return group_hash(g->rule, g->source, g->kind);
}

static struct series_group *find_group(struct audit_series *s, enum audit_rule rule,
                                       const char *source, const char *kind)
{
    uint64_t h = group_hash(rule, source, kind);
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&s->index, h, &p); id != HASHTAB_END;
         id = hashtab_next(&s->index, &p)) {
        struct series_group *g = &s->groups[id];
        if (g->rule == rule && strcmp(g->source, source) == 0 && strcmp(g->kind, kind) == 0)
            return g;
    }
    if (s->ngroups == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->groups = xrealloc(s->groups, s->cap * sizeof *s->groups);
    }
    struct series_group *g = &s->groups[s->ngroups];
    memset(g, 0, sizeof *g);
    g->rule = rule;
    g->source = source;
    g->kind = kind;
    hashtab_add(&s->index, &p, (uint32_t)s->ngroups++, group_hash_of, s);
    return g;
}

/* Worst first, then by name, so that equally bad queues keep a stable choice from scrape to
 * scrape. */
static int cmp_candidate(const void *pa, const void *pb)
{
    const struct candidate *a = pa, *b = pb;
    if (a->badness != b->badness)
        return a->badness > b->badness ? -1 : 1;
    int c = audit_cmp_name(a->queue, b->queue);
    return c ? c : audit_cmp_name(a->group, b->group);
}

static void trim(struct series_group *g, size_t keep)
{
    if (g->n > 1)
        qsort(g->v, g->n, sizeof *g->v, cmp_candidate);
    if (g->n > keep)
        g->n = keep;
}

void audit_series_add(struct audit_series *s, enum audit_rule rule, const char *source,
                      const char *kind, const char *queue, const char *group, double badness)
{
    struct series_group *g = find_group(s, rule, source, kind);
    g->count++;
    if (s->keep == 0)
        return;
    if (g->n == g->cap) {
        if (s->keep != AUDIT_QUEUE_SERIES_ALL && g->n >= 2 * (size_t)s->keep) {
            trim(g, (size_t)s->keep);
        } else {
            g->cap = g->cap ? g->cap * 2 : 16;
            if (s->keep != AUDIT_QUEUE_SERIES_ALL && g->cap > 2 * (size_t)s->keep)
                g->cap = 2 * (size_t)s->keep;
            g->v = xrealloc(g->v, g->cap * sizeof *g->v);
        }
    }
    g->v[g->n++] = (struct candidate){queue, group, badness};
}

/* As audit_add_metrics orders its groups: criticals first, then by rule, source and kind. */
static int cmp_group(const void *pa, const void *pb)
{
    const struct series_group *a = pa, *b = pb;
    int c = audit_status_rank(audit_rule_severity(b->rule)) -
            audit_status_rank(audit_rule_severity(a->rule));
    if (c)
        return c;
    if (a->rule != b->rule)
        return (int)a->rule - (int)b->rule;
    if ((c = strcmp(a->source, b->source)))
        return c;
    return strcmp(a->kind, b->kind);
}

/* The count of one (source, kind, rule), and one finding's qrel_audit_failed. */
static int put_count(struct metric_set *out, enum audit_rule rule, const char *source,
                     const char *kind, size_t count)
{
    return metric_set_add(out, "qrel_audit_failed_queues", (double)count, "source", source, "kind",
                          kind, "rule", audit_rule_name(rule), "severity",
                          audit_status_label(audit_rule_severity(rule)), NULL);
}

static int put_queue(struct metric_set *out, enum audit_rule rule, const char *source,
                     const char *kind, const char *queue, const char *group)
{
    const char *name = audit_rule_name(rule);
    const char *sev = audit_status_label(audit_rule_severity(rule));
    return group
               ? metric_set_add(out, "qrel_audit_failed", 1.0, "source", source, "kind", kind,
                                "queue", queue, "group", group, "rule", name, "severity", sev, NULL)
               : metric_set_add(out, "qrel_audit_failed", 1.0, "source", source, "kind", kind,
                                "queue", queue, "rule", name, "severity", sev, NULL);
}

int audit_series_write(struct audit_series *s, struct metric_set *out)
{
    /* The index is not used again: sorting the groups may leave its ids stale. */
    hashtab_free(&s->index);
    if (s->ngroups > 1)
        qsort(s->groups, s->ngroups, sizeof *s->groups, cmp_group);
    int rc = 0;
    for (size_t i = 0; i < s->ngroups && rc == 0; i++) {
        struct series_group *g = &s->groups[i];
        trim(g, s->keep == AUDIT_QUEUE_SERIES_ALL ? g->n : (size_t)s->keep);
        rc = put_count(out, g->rule, g->source, g->kind, g->count);
        for (size_t k = 0; k < g->n && rc == 0; k++)
            rc = put_queue(out, g->rule, g->source, g->kind, g->v[k].queue, g->v[k].group);
    }
    return rc ? -1 : 0;
}
