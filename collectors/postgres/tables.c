/* postgres/tables.c: the parts every table section (dedup, claim, outbox) has alike: reading
 * its table and column keys, the errors of a missing one, the statement's one row of numbers,
 * the column check and the free (tables.h). */
#include "tables.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define A PG_COL_ANY
#define T PG_COL_TIME
#define N PG_COL_NUMBER
/* An outbox's published_at or status only has to be NULL or equal: any type will do. */
const struct table_item_spec tables_specs[] = {
    [TABLES_DEDUP] = {"dedup_tables",
                      "dedup_table",
                      {{"id_column", 1, A},
                       {"handled_at_column", 1, T},
                       {"duplicates_column", 0, N}}},
    [TABLES_CLAIM] = {"claim_tables",
                      "claim_table",
                      {{"id_column", 1, A}, {"claimed_at_column", 1, T}, {"done_at_column", 1, T}}},
    [TABLES_OUTBOX] = {"outboxes",
                       "outbox",
                       {{"created_at_column", 1, T},
                        {"published_at_column", 0, A},
                        {"status_column", 0, A}}},
};
#undef A
#undef T
#undef N

int tables_read(struct table_item *t, const struct table_item_spec *spec, struct cfg_node *item,
                struct err *e)
{
    t->spec = spec;
    if (cfg_get_nonempty(item, "table", &t->table, e) ||
        cfg_get_nonempty(item, "name", &t->name, e))
        return -1;
    for (size_t i = 0; i < TABLE_ITEM_MAX_COLS; i++)
        if (cfg_get_nonempty(item, spec->cols[i].key, &t->col[i], e))
            return -1;
    return 0;
}

int tables_name_ok(struct cfg_node *map, const char *table, struct err *e)
{
    char *q = pg_table_sql(table);
    if (!q)
        return cfg_error(e, cfg_at(map, "table"),
                         "table: want \"table\" or \"schema.table\", got \"%s\"", table);
    free(q);
    return 0;
}

int tables_finish(struct table_item *t, struct cfg_node *item, const char *source,
                  const char *missing, struct err *e)
{
    const struct table_item_spec *s = t->spec;
    const char *first = !t->table ? "table" : NULL;
    for (size_t i = 0; !first && i < TABLE_ITEM_MAX_COLS; i++)
        if (s->cols[i].required && !t->col[i])
            first = s->cols[i].key;
    if (first)
        missing = first;
    if (!t->name && t->table)
        t->name = xstrdup(t->table);
    /* An entry is named in messages once it is one (nothing required is missing). */
    char where[400];
    if (missing)
        snprintf(where, sizeof where, "%s %s of source \"%s\"",
                 strchr("aeiou", s->noun[0]) ? "an" : "a", s->noun, source);
    else
        snprintf(where, sizeof where, "%s \"%s\" of source \"%s\"", s->noun, t->name, source);
    if (cfg_finish(item, where, e))
        return -1;
    if (missing)
        return cfg_error(e, item, "%s: required in each entry of %s", missing, s->list);
    if (tables_name_ok(item, t->table, e))
        return -1;
    t->what = xasprintf("%s \"%s\"", s->noun, t->name);
    return 0;
}

int tables_query(const struct table_item *t, struct pg_conn *c, const struct deadline *dl,
                 int nparams, const char *const *params, struct table_item_row *row, struct err *e)
{
    PGresult *r = NULL;
    if (pg_query(c, dl, t->what, t->sql, nparams, params, &r, e))
        return -1;
    int ok = PQntuples(r) == 1 && PQnfields(r) == row->n;
    for (int i = 0; ok && i < row->n; i++) {
        row->has[i] = pg_cell_double(r, 0, i, &row->v[i]) == 0;
        if (!row->has[i] && (row->need >> i & 1))
            ok = 0;
    }
    PQclear(r);
    if (!ok)
        return pg_error(c, e, ERR_PROTOCOL, "%s: want one row of %s", t->what, row->shape);
    return 0;
}

int tables_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    const struct table_item *t = item;
    struct pg_column cols[TABLE_ITEM_MAX_COLS];
    size_t n = 0;
    for (size_t i = 0; i < TABLE_ITEM_MAX_COLS; i++)
        if (t->col[i])
            cols[n++] = (struct pg_column){t->col[i], t->spec->cols[i].type};
    return pg_check_columns(c, dl, t->what, t->table, cols, n, e);
}

_Static_assert(sizeof(struct table_item) ==
                   offsetof(struct table_item, strings) + TABLE_ITEM_NSTRINGS * sizeof(char *),
               "every string of a table_item is in strings[]");

void tables_free(void *item)
{
    struct table_item *t = item;
    for (size_t i = 0; t && i < TABLE_ITEM_NSTRINGS; i++)
        free(t->strings[i]);
    free(t);
}
