/* postgres/dedup.c: the `dedup_tables` section of a postgres source (kind label `dedup_table`).
 *
 * A consumer that makes its effect idempotent records each message id it has handled, with a
 * unique key, in the same transaction as the effect; a second delivery of the id is then refused
 * (ON CONFLICT ... DO NOTHING, or DO UPDATE SET dup = dup + 1 to count it). The table is the
 * consumer's dedup window: an id is remembered as long as its row is kept (the table's
 * retention), and a retry arriving later than that repeats the effect. So for each table this
 * section reports how many messages were handled within the window, how many deliveries the
 * table recorded as duplicates, and how long it remembers an id.
 *
 * Two layouts are supported. `unique` (the default): one row per id, duplicates counted in an
 * optional duplicates_column. `attempts_log`: one row per delivery, so duplicates are the rows
 * beyond the first of each id.
 *
 * qrel_dedup_duplicates_total is a counter, so it is the table's cumulative number (every row,
 * not only the window): it only grows while rows are kept, and drops (a counter reset, which
 * rate() handles) when retention deletes rows that carried duplicates. A windowed number under a
 * _total name would make rate() invent resets every time a duplicate leaves the window.
 *
 * One statement per table, built at configure time with every identifier quoted: the window count
 * is bounded by an indexable `handled_at >= now() - $1::interval` and by now() (rows stamped
 * ahead of the database's clock are counted on their own, up to a cap), the duplicate sum
 * reads only rows with duplicates > 0 (a partial index makes that an index-only scan of those
 * rows), and the measured retention is min(handled_at), one index probe. attempts_log's duplicate
 * count needs a pass over every id (no index can avoid it in PostgreSQL 15): docs/kinds/postgres.md
 * says what that costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres.h"
#include "util.h"

#define DEDUP_DEFAULT_WINDOW 300.0

enum dedup_mode { DEDUP_UNIQUE, DEDUP_ATTEMPTS_LOG };

struct dedup {
    char *table;      /* as in the config: "handled" or "schema.handled" */
    char *name;       /* the queue label; default: table */
    char *id;         /* id_column */
    char *handled_at; /* handled_at_column */
    char *duplicates; /* duplicates_column, or NULL */
    enum dedup_mode mode;
    double window;    /* seconds, > 0 */
    double retention; /* seconds as declared; 0: measured as now() - min(handled_at) */
    char *sql;        /* built once at configure time, identifiers quoted */
    char *what;       /* dedup_table "NAME", for messages */
    char window_param[64];
};

static void dedup_destroy(void *item)
{
    struct dedup *d = item;
    if (!d)
        return;
    free(d->table);
    free(d->name);
    free(d->id);
    free(d->handled_at);
    free(d->duplicates);
    free(d->sql);
    free(d->what);
    free(d);
}

/* ---- the statement and its values (pure; tests/unit/check_postgres_sections.c) ---- */

/* The one statement of a table: one row of four float8 columns,
 *   handled     messages handled within the window ($1, an interval, up to now())
 *   duplicates  cumulative duplicates of the whole table; NULL when the table records none
 *   oldest_age  now() - min(handled_at) in seconds; NULL when retention is declared or the table
 *               is empty
 *   ahead       rows whose handled_at lies after now(), up to PG_AHEAD_CAP (postgres.h): in no
 *               window, counted on their own
 * Each part is a scalar subquery with its own predicate, so each gets its own index: the window
 * and the rows ahead are two ranges of the handled_at index, the second read at most
 * PG_AHEAD_CAP entries far. */
static char *dedup_sql(const struct dedup *d)
{
    char *t = pg_table_sql(d->table);
    if (!t)
        return NULL;
    char *id = pg_quote_ident(d->id), *at = pg_quote_ident(d->handled_at);
    char *dup = d->duplicates ? pg_quote_ident(d->duplicates) : NULL;
    struct buf b;
    buf_init(&b);
    if (d->mode == DEDUP_ATTEMPTS_LOG)
        buf_printf(&b,
                   "SELECT (SELECT count(DISTINCT %s) FROM %s WHERE %s >= now() - $1::interval "
                   "AND %s <= now())::float8, (SELECT COALESCE(sum(n - 1), 0) FROM (SELECT "
                   "count(*) AS n FROM %s WHERE %s IS NOT NULL GROUP BY %s HAVING count(*) > 1) "
                   "AS d)::float8, ",
                   id, t, at, at, t, id, id);
    else
        buf_printf(&b,
                   "SELECT (SELECT count(*) FROM %s WHERE %s >= now() - $1::interval AND %s <= "
                   "now())::float8, ",
                   t, at, at);
    if (d->mode == DEDUP_UNIQUE && dup)
        buf_printf(&b, "(SELECT COALESCE(sum(%s), 0) FROM %s WHERE %s > 0)::float8, ", dup, t, dup);
    else if (d->mode == DEDUP_UNIQUE)
        buf_puts(&b, "NULL::float8, ");
    if (d->retention > 0)
        buf_puts(&b, "NULL::float8, ");
    else
        buf_printf(&b, "(SELECT date_part('epoch', now() - min(%s)) FROM %s), ", at, t);
    buf_printf(&b, PG_AHEAD_SQL, t, at);
    free(t);
    free(id);
    free(at);
    free(dup);
    return buf_steal(&b);
}

/* What the statement returned (has_* = the cell was not NULL). */
struct dedup_row {
    double handled;
    int has_duplicates;
    double duplicates;
    int has_oldest_age;
    double oldest_age;
};

/* The values of the series; has_* = 0 leaves a series out. */
struct dedup_values {
    double handled;
    int has_duplicates;
    double duplicates;
    int has_window;
    double window_seconds;
};

static void dedup_values(double declared_retention, const struct dedup_row *row,
                         struct dedup_values *out)
{
    memset(out, 0, sizeof *out);
    out->handled = row->handled;
    out->has_duplicates = row->has_duplicates;
    out->duplicates = row->duplicates;
    if (declared_retention > 0) {
        out->has_window = 1;
        out->window_seconds = declared_retention;
    } else if (row->has_oldest_age) {
        /* A row stamped in the future (clock skew between writers) is 0 s old, not less. */
        out->has_window = 1;
        out->window_seconds = row->oldest_age > 0 ? row->oldest_age : 0;
    }
}

/* ---- configuration ---- */

static void *dedup_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct dedup *d = xcalloc(1, sizeof *d);
    char where[400];
    char *mode = NULL;
    snprintf(where, sizeof where, "a dedup_table of source \"%s\"", source);

    d->window = DEDUP_DEFAULT_WINDOW;
    if (cfg_get_nonempty(item, "table", &d->table, e) ||
        cfg_get_nonempty(item, "name", &d->name, e) ||
        cfg_get_nonempty(item, "id_column", &d->id, e) ||
        cfg_get_nonempty(item, "handled_at_column", &d->handled_at, e) ||
        cfg_get_nonempty(item, "duplicates_column", &d->duplicates, e) ||
        cfg_get_str(item, "mode", 0, &mode, e) ||
        cfg_get_positive_duration(item, "window", DEDUP_DEFAULT_WINDOW, &d->window, e) ||
        cfg_get_positive_duration(item, "retention", 0, &d->retention, e))
        goto fail;
    const char *missing = !d->table        ? "table"
                          : !d->id         ? "id_column"
                          : !d->handled_at ? "handled_at_column"
                                           : NULL;
    if (!d->name && d->table)
        d->name = xstrdup(d->table);
    if (!missing) /* else a dedup_table: the entry is not one yet */
        snprintf(where, sizeof where, "dedup_table \"%s\" of source \"%s\"", d->name, source);
    if (cfg_finish(item, where, e))
        goto fail;
    if (missing) {
        cfg_error(e, item, "%s: required in each entry of dedup_tables", missing);
        goto fail;
    }
    char *qtable = pg_table_sql(d->table);
    if (!qtable) {
        cfg_error(e, cfg_at(item, "table"), "table: want \"table\" or \"schema.table\", got \"%s\"",
                  d->table);
        goto fail;
    }
    free(qtable);

    if (!mode || strcmp(mode, "unique") == 0) {
        d->mode = DEDUP_UNIQUE;
    } else if (strcmp(mode, "attempts_log") == 0) {
        d->mode = DEDUP_ATTEMPTS_LOG;
    } else {
        cfg_error(e, cfg_at(item, "mode"),
                  "mode: want unique (one row per id) or attempts_log (one row per delivery), "
                  "got \"%s\"",
                  mode);
        goto fail;
    }
    if (d->mode == DEDUP_ATTEMPTS_LOG && d->duplicates) {
        cfg_error(e, cfg_at(item, "duplicates_column"),
                  "duplicates_column: not with mode attempts_log, where every row is a delivery "
                  "and duplicates are the rows beyond the first of each id");
        goto fail;
    }

    d->sql = dedup_sql(d);
    d->what = xasprintf("dedup_table \"%s\"", d->name);
    pg_interval_param(d->window_param, sizeof d->window_param, d->window);
    free(mode);
    return d;
fail:
    free(mode);
    dedup_destroy(d);
    return NULL;
}

/* ---- collection ---- */

static int dedup_collect(void *item, struct pg_conn *c, const struct deadline *dl,
                         struct metric_set *out, struct err *e)
{
    struct dedup *d = item;
    const char *params[1] = {d->window_param};
    PGresult *r = NULL;
    if (pg_query(c, dl, d->what, d->sql, 1, params, &r, e))
        return -1;
    int rc = -1;
    struct dedup_row row;
    memset(&row, 0, sizeof row);
    double ahead; /* rows stamped after now(), in no window */
    int want_dups = d->mode == DEDUP_ATTEMPTS_LOG || d->duplicates;
    if (PQntuples(r) != 1 || PQnfields(r) != 4 || pg_cell_double(r, 0, 0, &row.handled) ||
        (want_dups && pg_cell_double(r, 0, 1, &row.duplicates)) ||
        pg_cell_double(r, 0, 3, &ahead)) {
        pg_error(c, e, ERR_PROTOCOL,
                 "%s: want one row of numbers (handled, duplicates, age, ahead)", d->what);
        goto out;
    }
    row.has_duplicates = want_dups;
    /* NULL: retention declared, or the table is empty (no oldest row, no window to tell) */
    row.has_oldest_age = pg_cell_double(r, 0, 2, &row.oldest_age) == 0;

    struct dedup_values v;
    dedup_values(d->retention, &row, &v);
    /* Adds are not checked: a failure is a bug the scheduler reports (collector.h). */
    metric_set_add(out, "qrel_dedup_handled_messages", v.handled, "queue", d->name, NULL);
    metric_set_add(out, "qrel_future_stamped_rows", ahead, "queue", d->name, NULL);
    if (v.has_duplicates)
        metric_set_add(out, "qrel_dedup_duplicates_total", v.duplicates, "queue", d->name, NULL);
    if (v.has_window)
        metric_set_add(out, "qrel_dedup_window_seconds", v.window_seconds, "queue", d->name, NULL);
    rc = 0;
out:
    PQclear(r);
    return rc;
}

static int dedup_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct dedup *d = item;
    struct pg_column cols[3] = {
        {d->id, PG_COL_ANY},
        {d->handled_at, PG_COL_TIME},
        {d->duplicates, PG_COL_NUMBER},
    };
    return pg_check_columns(c, dl, d->what, d->table, cols, d->duplicates ? 3 : 2, e);
}

const struct pg_section_kind pg_dedup_section = {
    .key = "dedup_tables",
    .kind_label = "dedup_table",
    .configure = dedup_configure,
    .collect = dedup_collect,
    .check = dedup_check,
    .destroy = dedup_destroy,
};
