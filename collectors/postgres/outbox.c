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

#include "tables.h"
#include "alloc.h"

/* The columns of an outbox, in their order in tables_specs: published_at or status, not both. */
enum { OUTBOX_CREATED_AT, OUTBOX_PUBLISHED_AT, OUTBOX_STATUS };

struct outbox {
    struct table_item t; /* table, name, columns, statement (first: tables_free) */
    char *pending_value; /* with status_column: the status of rows not yet published */
};

void outbox_free(void *item)
{
    struct outbox *o = item;
    if (o)
        free(o->pending_value);
    tables_free(o);
}

/* The one statement: pending rows, the age of the oldest, and those created after now(). */
static char *outbox_sql(const struct outbox *o)
{
    char *qtable = pg_table_sql(o->t.table);
    const char *published = o->t.col[OUTBOX_PUBLISHED_AT];
    char *qcreated = pg_quote_ident(o->t.col[OUTBOX_CREATED_AT]);
    char *qcond = pg_quote_ident(published ? published : o->t.col[OUTBOX_STATUS]);
    /* GREATEST: a row stamped in the future (clock skew between writers) is 0 s old, not less.
     * The pending rows created after now() are counted in the same pass (a clock-skew signal),
     * up to the cap the other tables' counts have. */
    char *sql = xasprintf("SELECT count(*), GREATEST(COALESCE(date_part('epoch', now() - min(%s)), "
                          "0), 0)::float8, LEAST(count(*) FILTER (WHERE %s > " PG_AHEAD_NOW
                          "), " PG_AHEAD_CAP ") FROM %s WHERE %s %s",
                          qcreated, qcreated, qtable, qcond, published ? "IS NULL" : "= $1");
    free(qcreated);
    free(qcond);
    free(qtable);
    return sql;
}

void *outbox_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct outbox *o = xcalloc(1, sizeof *o);
    if (tables_read(&o->t, &tables_specs[TABLES_OUTBOX], item, e) ||
        cfg_get_str(item, "pending_value", 0, &o->pending_value, e) ||
        tables_finish(&o->t, item, source, NULL, e))
        goto fail;
    const char *published = o->t.col[OUTBOX_PUBLISHED_AT], *status = o->t.col[OUTBOX_STATUS];
    if (!published == !status) {
        cfg_error(e, published ? cfg_at(item, "status_column") : item,
                  "want either published_at_column (pending: published_at IS NULL) or "
                  "status_column with pending_value (pending: status = pending_value), %s",
                  published ? "not both" : "got neither");
        goto fail;
    }
    if (status && !o->pending_value) {
        cfg_error(e, cfg_at(item, "status_column"),
                  "status_column: needs pending_value, the status of rows not yet published");
        goto fail;
    }
    if (o->pending_value && !status) {
        cfg_error(e, cfg_at(item, "pending_value"),
                  "pending_value: only with status_column (published_at_column needs none)");
        goto fail;
    }
    o->t.sql = outbox_sql(o);
    return o;
fail:
    outbox_free(o);
    return NULL;
}

int outbox_collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct outbox *o = item;
    const char *params[1] = {o->pending_value};
    struct table_item_row r = {.n = 3, .need = 7, .shape = "three numbers"};
    if (tables_query(&o->t, c, dl, o->pending_value ? 1 : 0, o->pending_value ? params : NULL, &r,
                     e))
        return -1;
    /* Adds are not checked: a failure is a bug the scheduler reports (collector.h). */
    const char *q = o->t.name;
    metric_set_add(out, "qrel_outbox_pending_messages", r.v[0], "queue", q, NULL);
    metric_set_add(out, "qrel_outbox_oldest_pending_age_seconds", r.v[1], "queue", q, NULL);
    metric_set_add(out, "qrel_future_stamped_rows", r.v[2], "queue", q, NULL);
    return 0;
}
