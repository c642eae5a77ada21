/* postgres/tables.h: what the table sections (dedup_tables, claim_tables, outboxes) share.
 *
 * Each of their entries names one table, a queue label and some columns by string keys, and is
 * read with one statement that returns one row of numbers. A section describes its columns once,
 * in its row of tables_specs (key, required or not, the type its check wants), and these read
 * the keys, report what is missing, run the statement, check the columns and free the entry; the
 * section keeps only its own keys (windows, modes), its statement and its series. */
#ifndef QREL_POSTGRES_TABLES_H
#define QREL_POSTGRES_TABLES_H

#include "postgres.h"

#define TABLE_ITEM_MAX_COLS 3
/* The widest row a table section's statement returns. */
#define TABLE_ITEM_MAX_CELLS 12

struct table_item_col {
    const char *key; /* "id_column" */
    int required;
    enum pg_col_type type; /* what the check wants of the column */
};

struct table_item_spec {
    const char *list; /* the section's key: "claim_tables" */
    const char *noun; /* one entry, in messages: "claim_table" */
    struct table_item_col cols[TABLE_ITEM_MAX_COLS];
};

/* The table sections' specs, one row each (tables.c). */
enum { TABLES_DEDUP, TABLES_CLAIM, TABLES_OUTBOX };
extern const struct table_item_spec tables_specs[];

/* The first member of a table section's entry. Every string is owned, and seen by name and as
 * one array, which tables_free frees. */
#define TABLE_ITEM_NSTRINGS (4 + TABLE_ITEM_MAX_COLS)
struct table_item {
    const struct table_item_spec *spec;
    union {
        struct {
            char *table;                    /* as in the config: "t" or "schema.t" */
            char *name;                     /* the queue label; default: table */
            char *col[TABLE_ITEM_MAX_COLS]; /* the spec's column keys, in its order; or NULL */
            char *sql;                      /* built once at configure time, identifiers quoted */
            char *what;                     /* noun "NAME", for messages */
        };
        char *strings[TABLE_ITEM_NSTRINGS];
    };
};

/* Reads table, name and the spec's column keys of item into t (each a non-empty string when
 * given). The section reads its own keys after this, then calls tables_finish. */
int tables_read(struct table_item *t, const struct table_item_spec *spec, struct cfg_node *item,
                struct err *e);

/* Rejects unknown keys (cfg_finish), then a missing required key (missing: one of the section's
 * own, reported after the spec's), then a malformed table name; defaults name and sets what. */
int tables_finish(struct table_item *t, struct cfg_node *item, const char *source,
                  const char *missing, struct err *e);

/* A configured table name is "table" or "schema.table" (pg_table_sql); else an error at the
 * key's place: `table: want "table" or "schema.table", got "..."`. */
int tables_name_ok(struct cfg_node *map, const char *table, struct err *e);

/* The one row of a table section's statement: n cells (in), v and has (out); a NULL cell of
 * need (bit i for cell i) is malformed, the others leave has[i] 0. shape names the cells for
 * the error: "what: want one row of <shape>". */
struct table_item_row {
    int n;
    unsigned need;
    const char *shape;
    double v[TABLE_ITEM_MAX_CELLS];
    int has[TABLE_ITEM_MAX_CELLS];
};

/* Runs t->sql with the parameters and reads its row; ERR_PROTOCOL for another shape. */
int tables_query(const struct table_item *t, struct pg_conn *c, const struct deadline *dl,
                 int nparams, const char *const *params, struct table_item_row *row, struct err *e);

/* The section's check and destroy: the table and the given columns with the spec's types. */
int tables_check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e);
void tables_free(void *item);

#endif
