/* postgres/work_table.h: the postgres side of the dead-letter join (exporter/dead_letters.h):
 * "which of these ids are done in table T", asked on the source's own connection.
 *
 * A row with the id (and, when a done column is named, that column not null) means the work was
 * done. Per scrape and join one read-only statement, with every id as one text[] parameter, each
 * cast by the server to the id column's type and compared with that type's equality, the
 * column's index serving:
 *   SELECT i.n, bool_or(w.done IS NOT NULL) FROM unnest($1::text[]) WITH ORDINALITY AS i(id, n)
 *   JOIN table AS w ON w.id OPERATOR(pg_catalog.=) i.id::pg_catalog.int8 GROUP BY i.n
 * The type (a domain's base type, without typmod) is learnt by one catalogue query per
 * connection (see enum work_table_id_kind). */
#ifndef QREL_POSTGRES_WORK_TABLE_H
#define QREL_POSTGRES_WORK_TABLE_H

#include <stddef.h>

#include "collector.h"
#include "common/pg.h"

/* Which ids the server can read as a value of the id column, by the column's type. Every id is
 * compared by the server in that type; these are the checks made first, with the server's own
 * input rules, so that no id makes the cast fail the whole statement:
 *   WT_ID_INT      int2/int4/int8: spaces around, an optional sign and decimal digits within the
 *                  type's range; canonical form: no '+', no leading zeros ("007" is 7);
 *   WT_ID_NUMERIC  numeric: PostgreSQL 15's numeric input (" 6", "2.0", "8e0", "NaN"), with an
 *                  exponent within +-1000; passed as it is;
 *   WT_ID_UUID     uuid: 32 hex digits, optionally in braces and with '-' between groups of
 *                  four; canonical form: lowercase 8-4-4-4-12;
 *   WT_ID_TEXT     text, varchar, citext, name: any text (name: at most 63 bytes, as the server
 *                  cuts a longer one); compared by the type (citext ignoring case);
 *   WT_ID_BPCHAR   char(n): as text, trailing spaces dropped (char(n) ignores them);
 *   WT_ID_UNSUPPORTED  any other type: the join fails naming the type (comparing its text form
 *                  would get spellings wrong, and casting unchecked ids could fail the query).
 * An id that cannot be a value of the column (not valid UTF-8, a NUL byte, "abc" for a bigint
 * column) has no row by definition: its work is unknown, and it does not fail the query. */
enum work_table_id_kind {
    WT_ID_INT,
    WT_ID_NUMERIC,
    WT_ID_UUID,
    WT_ID_TEXT,
    WT_ID_BPCHAR,
    WT_ID_UNSUPPORTED
};

/* The kind for a column type as pg_type names it ("int8", "uuid", "varchar", "citext", ...). */
enum work_table_id_kind work_table_id_kind_of(const char *typname);

/* Writes the canonical form of the len bytes at id for kind into out (cap bytes, NUL-terminated;
 * typname picks the integer range for WT_ID_INT: "int2", "int4" or "int8", and the length limit
 * of "name"). Returns the length, or -1 when the id cannot be a value of such a column (always
 * for WT_ID_UNSUPPORTED) or does not fit. */
long work_table_id_canonical(enum work_table_id_kind kind, const char *typname, const char *id,
                             size_t len, char *out, size_t cap);

/* The one statement for a table, built from config names and the id column's base type as the
 * catalogue names it (schema and typname), all quoted here. NULL for a malformed table name. */
char *work_table_sql(const char *table, const char *id_column, const char *done_column,
                     const char *type_schema, const char *type_name);

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

/* work_table_run in two halves, so that the caller can do other work while the server looks
 * the ids up: work_table_send sends the statement (NULL with e set: the caller drops the
 * connection), and work_table_collect, which must come next on conn, waits for its rows, sets
 * work[i] for each of the n ids sent and frees p (-1 with e set: the caller drops the
 * connection). work_table_pending_free drops p unread (with the connection, which still owes
 * its result). */
struct work_table_pending;
struct work_table_pending *work_table_send(struct work_table *t, struct pg_conn *conn,
                                           unsigned long gen, const char *const *ids, size_t n,
                                           const struct deadline *dl, struct err *e);
int work_table_collect(struct work_table_pending *p, const struct deadline *dl,
                       enum dead_letter_work *work, struct err *e);
void work_table_pending_free(struct work_table_pending *p);

/* For --config.check (and on each new connection): the table and columns exist and may be read,
 * and the id column's type is one ids can be compared with. */
int work_table_check(struct work_table *t, struct pg_conn *conn, const struct deadline *dl,
                     struct err *e);

#endif
