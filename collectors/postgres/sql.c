/* postgres/sql.c: the `queries` section of a postgres source (kind label `sql`): the escape hatch.
 *
 * Where no section knows an application's tables, the user writes the SELECT and says which
 * columns are values and which are labels; each row becomes one sample per configured metric.
 * The families are the user's, outside the catalogue (metric_set_add_family), so they are
 * checked at configure time as strictly as the catalogue is by its tests: a valid name, not
 * under qrel_, counters ending in _total, help text, valid label names that cannot clash with
 * the base labels source and kind.
 *
 * Safety: the session is read-only and every statement runs alone (the extended protocol takes
 * one), and the user's SQL is wrapped as a subquery, `SELECT * FROM (<sql>) q LIMIT max_rows+1`,
 * which only a SELECT (or VALUES, or a read-only WITH) survives and which bounds the rows the
 * exporter ever receives. There is no per-query min_interval: the source's min_interval caches
 * the whole source, and is how an expensive query is kept from running on every scrape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql.h"
#include "alloc.h"
#include "buf.h"

#define DEFAULT_MAX_ROWS 10000
#define MAX_MAX_ROWS 1000000
/* The base labels source and kind come first. */
#define MAX_QUERY_LABELS (METRIC_MAX_LABELS - 2)

void sql_destroy(void *item)
{
    struct sql_query *q = item;
    if (!q)
        return;
    for (size_t i = 0; i < q->nmetrics; i++) {
        free(q->metrics[i].at);
        free(q->metrics[i].name);
        free(q->metrics[i].help);
        free(q->metrics[i].value_column);
    }
    free(q->metrics);
    cfg_strv_free(q->labels);
    free(q->name);
    free(q->sql);
    free(q->collect);
    free(q->check_sql);
    free(q->what);
    free(q);
}

/* A required string key, read already: missing or empty is an error. */
static int required(struct cfg_node *map, const char *key, const char *value, const char *where,
                    struct err *e)
{
    if (!value)
        return cfg_error(e, map, "%s: required in each %s", key, where);
    if (!*value)
        return cfg_error(e, cfg_at(map, key), "%s: want a non-empty string", key);
    return 0;
}

/* A metric of the list: name, type, help, value_column, all required. */
static int configure_metric(struct sql_query *q, struct cfg_node *m, const char *where,
                            struct err *e)
{
    struct sql_metric *sm = &q->metrics[q->nmetrics];
    char *type = NULL;
    int rc = -1;
    memset(sm, 0, sizeof *sm);
    q->nmetrics++; /* from here destroy frees what is set */
    if (cfg_expect(m, CFG_MAP, "each entry of metrics", e))
        return -1;
    /* Every key read first: a misspelt key is reported before the "required" it causes. */
    if (cfg_get_str(m, "name", 0, &sm->name, e) || cfg_get_str(m, "type", 0, &type, e) ||
        cfg_get_str(m, "help", 0, &sm->help, e) ||
        cfg_get_str(m, "value_column", 0, &sm->value_column, e) || cfg_finish(m, where, e))
        goto out;
    const char *w = "entry of metrics";
    if (required(m, "name", sm->name, w, e) || required(m, "type", type, w, e) ||
        required(m, "help", sm->help, w, e) || required(m, "value_column", sm->value_column, w, e))
        goto out;
    if (strcmp(type, "gauge") == 0) {
        sm->fam.type = METRIC_GAUGE;
    } else if (strcmp(type, "counter") == 0) {
        sm->fam.type = METRIC_COUNTER;
    } else {
        cfg_error(e, cfg_at(m, "type"), "type: want gauge or counter, got \"%s\"", type);
        goto out;
    }
    sm->fam.name = sm->name;
    sm->fam.help = sm->help;
    const struct cfg_node *name_node = cfg_at(m, "name");
    sm->at = xasprintf("%s:%d:%d", name_node->file, name_node->line, name_node->col);
    char why[160];
    if (metric_family_validate(sm->fam.name, sm->fam.type, sm->fam.help, why, sizeof why)) {
        cfg_error(e, cfg_at(m, "name"), "metric \"%s\": %s", sm->name, why);
        goto out;
    }
    for (size_t i = 0; i + 1 < q->nmetrics; i++) {
        if (strcmp(q->metrics[i].name, sm->name) == 0) {
            cfg_error(e, cfg_at(m, "name"), "metric \"%s\": defined twice in query \"%s\"",
                      sm->name, q->name);
            goto out;
        }
    }
    rc = 0;
out:
    free(type);
    return rc;
}

/* Label names come from column names: valid Prometheus names, not the base labels, once each. */
static int check_labels(struct sql_query *q, struct cfg_node *item, struct err *e)
{
    struct cfg_node *at = cfg_at(item, "labels");
    if (q->nlabels > MAX_QUERY_LABELS)
        return cfg_error(e, at, "labels: at most %d (with source and kind, %d labels a series)",
                         MAX_QUERY_LABELS, METRIC_MAX_LABELS);
    for (size_t i = 0; i < q->nlabels; i++) {
        const char *l = q->labels[i];
        if (!metric_label_name_valid(l))
            return cfg_error(e, at,
                             "labels: \"%s\" is not a valid label name (want "
                             "[a-zA-Z_][a-zA-Z0-9_]*, not starting with __); rename the column "
                             "with AS",
                             l);
        if (strcmp(l, "source") == 0 || strcmp(l, "kind") == 0)
            return cfg_error(e, at,
                             "labels: \"%s\" is set by qrel on every series; rename the column "
                             "with AS",
                             l);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(q->labels[k], l) == 0)
                return cfg_error(e, at, "labels: \"%s\" is listed twice", l);
        }
    }
    return 0;
}

void sql_trim(char *sql)
{
    size_t n = strlen(sql);
    while (n && (sql[n - 1] == ';' || sql[n - 1] == ' ' || sql[n - 1] == '\t' ||
                 sql[n - 1] == '\n' || sql[n - 1] == '\r'))
        sql[--n] = '\0';
}

void *sql_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct sql_query *q = xcalloc(1, sizeof *q);
    char where[400];
    struct cfg_node *metrics = NULL;

    /* Every key asked for first: a misspelt key is reported before anything missing. */
    if (cfg_get_str(item, "name", 0, &q->name, e) || cfg_get_str(item, "sql", 0, &q->sql, e) ||
        cfg_get_node(item, "metrics", CFG_SEQ, &metrics, e) ||
        cfg_get_strlist(item, "labels", &q->labels, &q->nlabels, e) ||
        cfg_get_int(item, "max_rows", DEFAULT_MAX_ROWS, 1, MAX_MAX_ROWS, &q->max_rows, e))
        goto fail;
    snprintf(where, sizeof where, "query \"%s\" of source \"%s\"", q->name ? q->name : "?", source);
    if (cfg_finish(item, where, e))
        goto fail;
    if (!q->name || !*q->name) {
        cfg_error(e, q->name ? cfg_at(item, "name") : item,
                  q->name ? "name: want a non-empty string"
                          : "name: required in each entry of "
                            "queries");
        goto fail;
    }
    if (q->sql)
        sql_trim(q->sql);
    if (!q->sql || !*q->sql) {
        cfg_error(e, q->sql ? cfg_at(item, "sql") : item, "sql: %s in query \"%s\"",
                  q->sql ? "want a SELECT statement" : "required", q->name);
        goto fail;
    }
    if (!metrics || metrics->n == 0) {
        cfg_error(e, metrics ? metrics : item,
                  "metrics: want at least one {name, type, help, value_column} in query \"%s\"",
                  q->name);
        goto fail;
    }
    q->metrics = xcalloc(metrics->n, sizeof *q->metrics);
    char mwhere[460];
    snprintf(mwhere, sizeof mwhere, "a metric of %s", where);
    for (size_t i = 0; i < metrics->n; i++) {
        if (configure_metric(q, metrics->items[i], mwhere, e))
            goto fail;
    }
    if (check_labels(q, item, e))
        goto fail;

    q->collect = xasprintf("SELECT * FROM (%s\n) q LIMIT %lld", q->sql, q->max_rows + 1);
    q->check_sql = xasprintf("SELECT * FROM (%s\n) q LIMIT 0", q->sql);
    q->what = xasprintf("query \"%s\"", q->name);
    return q;
fail:
    sql_destroy(q);
    return NULL;
}

/* The result column named exactly col (PQfnumber would fold case unless quoted), or -1 with e
 * naming the query and the column; a name the result has twice is ambiguous. */
static int find_column(struct sql_query *q, struct pg_conn *c, const PGresult *r, const char *col,
                       struct err *e)
{
    int found = -1, n = PQnfields(r), times = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(PQfname(r, i), col) == 0) {
            if (found < 0)
                found = i;
            times++;
        }
    }
    if (times == 1)
        return found;
    if (times > 1) {
        pg_error(c, e, ERR_QUERY, "%s: column \"%s\" appears %d times in the result", q->what, col,
                 times);
        return -1;
    }
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < n && b.len < 200; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", PQfname(r, i));
    pg_error(c, e, ERR_QUERY, "%s: column \"%s\" is not in the result (columns: %s)", q->what, col,
             n ? b.data : "none");
    buf_free(&b);
    return -1;
}

/* Column numbers of the metrics' values and of the labels: vcol[nmetrics], lcol[nlabels]. */
static int find_columns(struct sql_query *q, struct pg_conn *c, const PGresult *r, int *vcol,
                        int *lcol, struct err *e)
{
    for (size_t i = 0; i < q->nmetrics; i++) {
        if ((vcol[i] = find_column(q, c, r, q->metrics[i].value_column, e)) < 0)
            return -1;
    }
    for (size_t i = 0; i < q->nlabels; i++) {
        if ((lcol[i] = find_column(q, c, r, q->labels[i], e)) < 0)
            return -1;
    }
    return 0;
}

/* Another query of the source defining one of our names would produce clashing series. finish()
 * refuses that when the source is configured; this guard keeps a set consistent regardless. */
static int check_unique(struct sql_query *q, struct pg_conn *c, struct metric_set *out,
                        struct err *e)
{
    size_t n = metric_set_dynamic_count(out);
    for (size_t k = 0; k < n; k++) {
        const struct metric_family *f = metric_set_dynamic_at(out, k);
        for (size_t i = 0; i < q->nmetrics; i++) {
            if (f != &q->metrics[i].fam && strcmp(f->name, q->metrics[i].name) == 0)
                return pg_error(c, e, ERR_CONFIG,
                                "%s: metric \"%s\" is also defined by another query of the "
                                "source; each metric name may be defined once",
                                q->what, f->name);
        }
    }
    return 0;
}

int sql_collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                struct err *e)
{
    struct sql_query *q = item;
    PGresult *r = NULL;
    int rc = -1;
    int vcol[16], lcol[MAX_QUERY_LABELS];
    double *values = NULL;
    int *vcols = q->nmetrics > 16 ? xcalloc(q->nmetrics, sizeof *vcols) : vcol;
    if (check_unique(q, c, out, e))
        goto out;
    if (pg_query(c, dl, q->what, q->collect, 0, NULL, &r, e))
        goto out;
    if (find_columns(q, c, r, vcols, lcol, e))
        goto out;
    int rows = PQntuples(r);
    if (rows > q->max_rows) {
        pg_error(c, e, ERR_LIMIT, "%s: more than %lld rows (max_rows)", q->what, q->max_rows);
        goto out;
    }
    /* Every value parsed before any sample is added: a bad cell adds nothing of this query. */
    size_t ncells = (size_t)rows * q->nmetrics;
    values = xmalloc((ncells ? ncells : 1) * sizeof *values);
    for (int row = 0; row < rows; row++) {
        for (size_t m = 0; m < q->nmetrics; m++) {
            double *v = &values[(size_t)row * q->nmetrics + m];
            if (PQgetisnull(r, row, vcols[m])) {
                *v = 0;
                continue;
            }
            if (pg_cell_double(r, row, vcols[m], v)) {
                const char *text = PQgetvalue(r, row, vcols[m]);
                pg_error(c, e, ERR_QUERY,
                         "%s: row %d, column \"%s\": want a number, got \"%.32s%s\"", q->what,
                         row + 1, q->metrics[m].value_column, text, strlen(text) > 32 ? "..." : "");
                goto out;
            }
        }
    }
    const char *lvals[MAX_QUERY_LABELS];
    for (int row = 0; row < rows; row++) {
        for (size_t l = 0; l < q->nlabels; l++)
            lvals[l] = PQgetvalue(r, row, lcol[l]); /* "" for NULL */
        for (size_t m = 0; m < q->nmetrics; m++) {
            if (PQgetisnull(r, row, vcols[m]))
                continue; /* no value, no sample: never a made-up 0 */
            /* Not checked: names and label counts were validated by configure, so a failed add
             * is a bug, which the scheduler reports (collector.h). */
            metric_set_add_familyv(out, &q->metrics[m].fam, values[(size_t)row * q->nmetrics + m],
                                   (const char *const *)q->labels, lvals, q->nlabels);
        }
    }
    rc = 0;
out:
    free(values);
    if (vcols != vcol)
        free(vcols);
    PQclear(r);
    return rc;
}

/* The query with LIMIT 0: the server parses and plans it (tables, columns, permissions) and
 * returns the result's columns without running it. */
int sql_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct sql_query *q = item;
    PGresult *r = NULL;
    int vcol[16], lcol[MAX_QUERY_LABELS];
    int *vcols = q->nmetrics > 16 ? xcalloc(q->nmetrics, sizeof *vcols) : vcol;
    int rc = pg_query(c, dl, q->what, q->check_sql, 0, NULL, &r, e);
    if (rc == 0)
        rc = find_columns(q, c, r, vcols, lcol, e);
    PQclear(r);
    if (vcols != vcol)
        free(vcols);
    return rc;
}

/* The same metric name in two queries of a source would give clashing series. */
int sql_finish(void *const *items, size_t n, struct err *e)
{
    for (size_t a = 0; a < n; a++) {
        const struct sql_query *qa = items[a];
        for (size_t i = 0; i < qa->nmetrics; i++)
            for (size_t b = 0; b < a; b++) {
                const struct sql_query *qb = items[b];
                for (size_t j = 0; j < qb->nmetrics; j++)
                    if (strcmp(qa->metrics[i].name, qb->metrics[j].name) == 0)
                        return err_set(e, ERR_CONFIG,
                                       "%s: metric \"%s\": already defined by query \"%s\" at %s",
                                       qa->metrics[i].at, qa->metrics[i].name, qb->name,
                                       qb->metrics[j].at);
            }
    }
    return 0;
}
