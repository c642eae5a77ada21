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

#include "dedup.h"
#include "alloc.h"
#include "buf.h"

#define DEDUP_DEFAULT_WINDOW 300.0

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
    char *t = pg_table_sql(d->t.table);
    if (!t)
        return NULL;
    char *id = pg_quote_ident(d->t.col[DEDUP_ID]);
    char *at = pg_quote_ident(d->t.col[DEDUP_HANDLED_AT]);
    const char *dcol = d->t.col[DEDUP_DUPLICATES];
    char *dup = dcol ? pg_quote_ident(dcol) : NULL;
    struct buf b;
    buf_init(&b);
    if (d->mode == DEDUP_ATTEMPTS_LOG)
        buf_printf(&b,
                   "SELECT (SELECT count(DISTINCT %s) FROM %s WHERE %s >= now() - $1::interval "
                   "AND %s <= " PG_AHEAD_NOW
                   ")::float8, (SELECT COALESCE(sum(n - 1), 0) FROM (SELECT "
                   "count(*) AS n FROM %s WHERE %s IS NOT NULL GROUP BY %s HAVING count(*) > 1) "
                   "AS d)::float8, ",
                   id, t, at, at, t, id, id);
    else
        buf_printf(&b,
                   "SELECT (SELECT count(*) FROM %s WHERE %s >= now() - $1::interval AND %s "
                   "<= " PG_AHEAD_NOW ")::float8, ",
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

void dedup_values(double declared_retention, const struct dedup_row *row, struct dedup_values *out)
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

void *dedup_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct dedup *d = xcalloc(1, sizeof *d);
    char *mode = NULL;
    if (tables_read(&d->t, &tables_specs[TABLES_DEDUP], item, e) ||
        cfg_get_str(item, "mode", 0, &mode, e) ||
        cfg_get_positive_duration(item, "window", DEDUP_DEFAULT_WINDOW, &d->window, e) ||
        cfg_get_positive_duration(item, "retention", 0, &d->retention, e) ||
        tables_finish(&d->t, item, source, NULL, e))
        goto fail;
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
    if (d->mode == DEDUP_ATTEMPTS_LOG && d->t.col[DEDUP_DUPLICATES]) {
        cfg_error(e, cfg_at(item, "duplicates_column"),
                  "duplicates_column: not with mode attempts_log, where every row is a delivery "
                  "and duplicates are the rows beyond the first of each id");
        goto fail;
    }
    d->t.sql = dedup_sql(d);
    pg_interval_param(d->window_param, sizeof d->window_param, d->window);
    free(mode);
    return d;
fail:
    free(mode);
    tables_free(d);
    return NULL;
}

/* ---- collection ---- */

int dedup_collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                  struct err *e)
{
    struct dedup *d = item;
    const char *params[1] = {d->window_param};
    int want_dups = d->mode == DEDUP_ATTEMPTS_LOG || d->t.col[DEDUP_DUPLICATES];
    struct table_item_row r = {
        .n = 4,
        .need = 1u << 0 | (want_dups ? 1u << 1 : 0) | 1u << 3,
        .shape = "numbers (handled, duplicates, age, ahead)",
    };
    if (tables_query(&d->t, c, dl, 1, params, &r, e))
        return -1;
    /* oldest_age NULL: retention declared, or the table is empty (no oldest row, no window) */
    struct dedup_row row = {.handled = r.v[0],
                            .has_duplicates = want_dups,
                            .duplicates = r.v[1],
                            .has_oldest_age = r.has[2],
                            .oldest_age = r.v[2]};
    double ahead = r.v[3]; /* rows stamped after now(), in no window */

    struct dedup_values v;
    dedup_values(d->retention, &row, &v);
    /* Adds are not checked: a failure is a bug the scheduler reports (collector.h). */
    const char *q = d->t.name;
    metric_set_add(out, "qrel_dedup_handled_messages", v.handled, "queue", q, NULL);
    metric_set_add(out, "qrel_future_stamped_rows", ahead, "queue", q, NULL);
    if (v.has_duplicates)
        metric_set_add(out, "qrel_dedup_duplicates_total", v.duplicates, "queue", q, NULL);
    if (v.has_window)
        metric_set_add(out, "qrel_dedup_window_seconds", v.window_seconds, "queue", q, NULL);
    return 0;
}
