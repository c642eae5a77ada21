/* redis_stream/dlq_classify.h: `dead_letter_classify`, the block of a redis_stream entry that sorts
 * the entries of its dead-letter stream by whether their work was done.
 *
 * A dead-letter stream holds what the consumers gave up on, which is not the work that did not
 * happen: after a lease-expiry storm it is full of entries whose effect (the email) was made,
 * often several times, and a replay would make it again. The application's dedup or claim table
 * knows: each dead-letter entry carries the message's id in a field, and a row with that id (and,
 * when a done column is named, that column not null) means the work was done. Per scrape the
 * collector reads the dead-letter stream's entries (XRANGE, capped at max_entries, in the
 * pipeline it already sends) and asks PostgreSQL once, read-only, with every id as one text[]
 * parameter:
 *   SELECT id::text, (done IS NOT NULL) FROM table WHERE id = ANY($1)
 * The result is qrel_dead_letter_classified_messages{work="done"|"not_done"|"unknown"}.
 *
 * The PostgreSQL connection belongs to the block and is kept between scrapes like a postgres
 * source's; on (re)connect one catalogue query learns the id column's type, because how an id
 * from Redis is compared depends on it (see enum dlq_id_kind). */
#ifndef QREL_REDIS_DLQ_CLASSIFY_H
#define QREL_REDIS_DLQ_CLASSIFY_H

#include <stddef.h>

#include <hiredis.h>

#include "config.h"
#include "deadline.h"
#include "err.h"

#define DLQ_CLASSIFY_DEFAULT_MAX_ENTRIES 10000

/* How ids from Redis are compared with the id column, by the column's type:
 *   DLQ_ID_INT     int2/int4/int8: an optional sign and decimal digits within the type's range,
 *                  compared as the type (the column's index serves); canonical form: no '+', no
 *                  leading zeros ("007" is 7, as the server reads it);
 *   DLQ_ID_UUID    uuid: 32 hex digits, optionally in braces and with '-' between groups of
 *                  four, compared as uuid; canonical form: lowercase 8-4-4-4-12;
 *   DLQ_ID_TEXT    text, varchar, name: compared as the type, exactly;
 *   DLQ_ID_BPCHAR  char(n): as text, trailing spaces ignored (as char(n) compares);
 *   DLQ_ID_OTHER   anything else (numeric, a domain, ...): the column's text form is compared
 *                  with the id (column::text = ANY($1::text[])), which cannot use a plain index.
 * An id that cannot be a value of the column (not valid UTF-8, a NUL byte, "abc" for a bigint
 * column) has no row by definition, and is counted as unknown rather than failing the query. */
enum dlq_id_kind { DLQ_ID_INT, DLQ_ID_UUID, DLQ_ID_TEXT, DLQ_ID_BPCHAR, DLQ_ID_OTHER };

/* The kind for a column type as pg_type names it ("int8", "uuid", "varchar", ...). */
enum dlq_id_kind dlq_id_kind_of(const char *typname);

/* Writes the canonical form of the len bytes at id for kind into out (cap bytes, NUL-terminated;
 * typname picks the integer range for DLQ_ID_INT: "int2", "int4" or "int8"). Returns the length,
 * or -1 when the id cannot be a value of such a column or does not fit. */
long dlq_id_canonical(enum dlq_id_kind kind, const char *typname, const char *id, size_t len,
                      char *out, size_t cap);

/* A PostgreSQL array literal of the strings: {"a","b\"c"} (every element quoted, '"' and '\'
 * escaped). malloc'd, never NULL. */
char *dlq_text_array(const char *const *v, size_t n);

/* The one statement for a table, built from config names (quoted here) and the id kind. */
char *dlq_classify_sql(const char *table, const char *id_column, const char *done_column,
                       enum dlq_id_kind kind);

/* What one scrape read from a dead-letter stream: the id of each entry that had one, and how
 * many had none. */
struct dlq_tally {
    char **ids; /* malloc'd copies of the id_field values, NUL-terminated */
    size_t nids, cap;
    size_t read;       /* entries XRANGE returned */
    size_t without_id; /* of them, without the field (or with an empty value, or one that holds a
                        * NUL byte) */
};

void dlq_tally_free(struct dlq_tally *t); /* frees the members; the struct is the caller's */

/* Adds the entries of an `XRANGE <dlq> - + COUNT n` reply: [[id, [field, value, ...]], ...].
 * The first field named id_field counts. ERR_PROTOCOL (without a prefix: the caller names the
 * command) when the reply is not an array of [id, fields] pairs. */
int dlq_tally_add(struct dlq_tally *t, const char *id_field, const redisReply *r, struct err *e);

/* The split emitted as qrel_dead_letter_classified_messages. */
struct dlq_split {
    double done;
    double not_done;
    double unknown;
};

struct dlq_classify;

/* Parses the block (a mapping: table, id_column, done_column, id_field, max_entries and the
 * connection keys of a postgres source: dsn_file / dsn_env, host, port, user, dbname, sslmode,
 * password_file / password_env). where names the stream entry for messages ("stream \"orders\"
 * of source \"cache\""). No I/O except reading the secret files. NULL with e set
 * ("file:line:col: ..."). */
struct dlq_classify *dlq_classify_configure(struct cfg_node *block, const char *where,
                                            struct err *e);
void dlq_classify_free(struct dlq_classify *c); /* closes the connection, wipes secrets */
long long dlq_classify_max_entries(const struct dlq_classify *c);
const char *dlq_classify_id_field(const struct dlq_classify *c);

/* Classifies what t holds: connects when not connected (source names it in messages), learns the
 * id column's type on connect, runs the statement under the deadline. xlen is the stream's XLEN:
 * entries beyond those read are unknown. Errors start with "dead_letter_classify: " and keep the
 * code (connect, timeout, auth, query, protocol); after one, the connection is closed. */
int dlq_classify_run(struct dlq_classify *c, const char *source, const char *dlq,
                     const struct dlq_tally *t, long long xlen, const struct deadline *dl,
                     struct dlq_split *out, struct err *e);

/* For --config.check: connects, verifies that the table and columns exist and may be read, then
 * closes. what names the stream entry in messages ("stream \"orders\""). Errors as
 * dlq_classify_run's. */
int dlq_classify_check(struct dlq_classify *c, const char *source, const char *what,
                       const struct deadline *dl, struct err *e);

#endif
