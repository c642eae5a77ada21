/* postgres/work_table.h: the postgres side of the dead-letter join (exporter/dead_letters.h):
 * "which of these ids are done in table T", asked on the source's own connection.
 *
 * A row with the id (and, when a done column is named, that column not null) means the work was
 * done. Per scrape and join one read-only statement, with every id as one text[] parameter:
 *   SELECT id::text, (done IS NOT NULL) FROM table WHERE id = ANY($1)
 * How an id is compared depends on the id column's type, learnt by one catalogue query per
 * connection (see enum work_table_id_kind). */
#ifndef QREL_POSTGRES_WORK_TABLE_H
#define QREL_POSTGRES_WORK_TABLE_H

#include <stddef.h>

#include "collector.h"
#include "common/pg.h"

/* How ids from a broker are compared with the id column, by the column's type:
 *   WT_ID_INT     int2/int4/int8: an optional sign and decimal digits within the type's range,
 *                 compared as the type (the column's index serves); canonical form: no '+', no
 *                 leading zeros ("007" is 7, as the server reads it);
 *   WT_ID_UUID    uuid: 32 hex digits, optionally in braces and with '-' between groups of
 *                 four, compared as uuid; canonical form: lowercase 8-4-4-4-12;
 *   WT_ID_TEXT    text, varchar, name: compared as the type, exactly;
 *   WT_ID_BPCHAR  char(n): as text, trailing spaces ignored (as char(n) compares);
 *   WT_ID_OTHER   anything else (numeric, a domain, ...): the column's text form is compared
 *                 with the id (column::text = ANY($1::text[])), which cannot use a plain index.
 * An id that cannot be a value of the column (not valid UTF-8, a NUL byte, "abc" for a bigint
 * column) has no row by definition: its work is unknown, and it does not fail the query. */
enum work_table_id_kind { WT_ID_INT, WT_ID_UUID, WT_ID_TEXT, WT_ID_BPCHAR, WT_ID_OTHER };

/* The kind for a column type as pg_type names it ("int8", "uuid", "varchar", ...). */
enum work_table_id_kind work_table_id_kind_of(const char *typname);

/* Writes the canonical form of the len bytes at id for kind into out (cap bytes, NUL-terminated;
 * typname picks the integer range for WT_ID_INT: "int2", "int4" or "int8"). Returns the length,
 * or -1 when the id cannot be a value of such a column or does not fit. */
long work_table_id_canonical(enum work_table_id_kind kind, const char *typname, const char *id,
                             size_t len, char *out, size_t cap);

/* The one statement for a table, built from config names (quoted here) and the id kind. */
char *work_table_sql(const char *table, const char *id_column, const char *done_column,
                     enum work_table_id_kind kind);

struct work_table;

/* Parses the work_table mapping (table, id_column, done_column; the core read `source`). No I/O.
 * NULL with e set ("file:line:col: ..."). */
struct work_table *work_table_configure(struct cfg_node *map, const char *where, struct err *e);
void work_table_free(struct work_table *t);

/* Sets work[i] for each id on conn (gen: the connection's number, so that the column's type is
 * learnt again on a new one). Errors name the table; the caller drops the connection. */
int work_table_run(struct work_table *t, struct pg_conn *conn, unsigned long gen,
                   const char *const *ids, size_t n, const struct deadline *dl,
                   enum dead_letter_work *work, struct err *e);

/* For --config.check: the table and columns exist and may be read. */
int work_table_check(struct work_table *t, struct pg_conn *conn, const struct deadline *dl,
                     struct err *e);

#endif
