/* postgres/outbox.c: the `outboxes` section of a postgres source (kind label `outbox`).
 *
 * A transactional outbox is a table the application writes its events to in the same
 * transaction as its data; a relay publishes the rows to the broker and marks them. Its health
 * is how many rows wait and how old the oldest is: a relay that died or lags shows as growth of
 * both, long before anyone misses an event. A row is pending while its published_at column is
 * NULL, or, for tables that keep a status instead, while its status column holds pending_value.
 *
 * One aggregate query per outbox. With the partial index the docs recommend
 * (`CREATE INDEX ON outbox (created_at) WHERE published_at IS NULL`) it reads only pending rows,
 * however large the table's published history grows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres.h"
#include "util.h"

struct outbox {
    char *table;     /* as in the config: "outbox" or "schema.outbox" */
    char *name;      /* the queue label; default: table */
    char *created;   /* created_at_column */
    char *published; /* published_at_column, or NULL in status mode */
    char *status;    /* status_column, or NULL */
    char *pending_value;
    char *sql;  /* built once at configure time, identifiers quoted */
    char *what; /* outbox "NAME", for messages */
};

static void destroy(void *item)
{
    struct outbox *o = item;
    if (!o)
        return;
    free(o->table);
    free(o->name);
    free(o->created);
    free(o->published);
    free(o->status);
    free(o->pending_value);
    free(o->sql);
    free(o->what);
    free(o);
}

static void *configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct outbox *o = xcalloc(1, sizeof *o);
    char where[400];
    snprintf(where, sizeof where, "an outbox of source \"%s\"", source);

    if (cfg_get_nonempty(item, "table", &o->table, e) ||
        cfg_get_nonempty(item, "name", &o->name, e) ||
        cfg_get_nonempty(item, "created_at_column", &o->created, e) ||
        cfg_get_nonempty(item, "published_at_column", &o->published, e) ||
        cfg_get_nonempty(item, "status_column", &o->status, e))
        goto fail;
    if (cfg_get_str(item, "pending_value", 0, &o->pending_value, e))
        goto fail;
    int missing = !o->table || !o->created;
    if (!o->name && o->table)
        o->name = xstrdup(o->table);
    if (!missing) /* else an outbox: the entry is not one yet */
        snprintf(where, sizeof where, "outbox \"%s\" of source \"%s\"", o->name, source);
    if (cfg_finish(item, where, e))
        goto fail;
    if (missing) {
        cfg_error(e, item, "%s: required in each entry of outboxes",
                  !o->table ? "table" : "created_at_column");
        goto fail;
    }
    char *qtable = pg_table_sql(o->table);
    if (!qtable) {
        cfg_error(e, cfg_at(item, "table"), "table: want \"table\" or \"schema.table\", got \"%s\"",
                  o->table);
        goto fail;
    }
    if (!o->published == !o->status) {
        cfg_error(e, o->published ? cfg_at(item, "status_column") : item,
                  "want either published_at_column (pending: published_at IS NULL) or "
                  "status_column with pending_value (pending: status = pending_value), %s",
                  o->published ? "not both" : "got neither");
        goto free_qtable;
    }
    if (o->status && !o->pending_value) {
        cfg_error(e, cfg_at(item, "status_column"),
                  "status_column: needs pending_value, the status of rows not yet published");
        goto free_qtable;
    }
    if (o->pending_value && !o->status) {
        cfg_error(e, cfg_at(item, "pending_value"),
                  "pending_value: only with status_column (published_at_column needs none)");
        goto free_qtable;
    }

    char *qcreated = pg_quote_ident(o->created);
    char *qcond = pg_quote_ident(o->published ? o->published : o->status);
    /* GREATEST: a row stamped in the future (clock skew between writers) is 0 s old, not less. */
    /* The pending rows created after now() are counted in the same pass (a clock-skew signal),
     * up to the cap the other tables' counts have. */
    o->sql = xasprintf("SELECT count(*), GREATEST(COALESCE(EXTRACT(EPOCH FROM now() - min(%s)), "
                       "0), 0)::float8, LEAST(count(*) FILTER (WHERE %s > now()), " PG_AHEAD_CAP
                       ") FROM %s WHERE %s %s",
                       qcreated, qcreated, qtable, qcond, o->published ? "IS NULL" : "= $1");
    o->what = xasprintf("outbox \"%s\"", o->name);
    free(qcreated);
    free(qcond);
    free(qtable);
    return o;
free_qtable:
    free(qtable);
fail:
    destroy(o);
    return NULL;
}

static int collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct outbox *o = item;
    const char *params[1] = {o->pending_value};
    PGresult *r = NULL;
    if (pg_query(c, dl, o->what, o->sql, o->status ? 1 : 0, o->status ? params : NULL, &r, e))
        return -1;
    double pending, age, ahead;
    int rc = -1;
    if (PQntuples(r) != 1 || PQnfields(r) != 3 || pg_cell_double(r, 0, 0, &pending) ||
        pg_cell_double(r, 0, 1, &age) || pg_cell_double(r, 0, 2, &ahead)) {
        pg_error(c, e, ERR_PROTOCOL, "%s: want one row of three numbers", o->what);
        goto out;
    }
    /* Adds are not checked: a failure is a bug the scheduler reports (collector.h). */
    metric_set_add(out, "qrel_outbox_pending_messages", pending, "queue", o->name, NULL);
    metric_set_add(out, "qrel_outbox_oldest_pending_age_seconds", age, "queue", o->name, NULL);
    metric_set_add(out, "qrel_future_stamped_rows", ahead, "queue", o->name, NULL);
    rc = 0;
out:
    PQclear(r);
    return rc;
}

static int check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct outbox *o = item;
    struct pg_column cols[2] = {
        {o->created, PG_COL_TIME},
        /* published_at only has to be NULL or not: any type will do */
        {o->published ? o->published : o->status, PG_COL_ANY},
    };
    return pg_check_columns(c, dl, o->what, o->table, cols, 2, e);
}

const struct pg_section_kind pg_outbox_section = {
    .key = "outboxes",
    .kind_label = "outbox",
    .configure = configure,
    .collect = collect,
    .check = check,
    .destroy = destroy,
};
