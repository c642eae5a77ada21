/* pg.h: PostgreSQL access for collectors: one libpq connection per source instance, every query
 * read-only and bounded by the scrape's deadline, identifiers from the config always escaped.
 *
 * Safety rules this helper enforces so no collector can forget them:
 *   - connections are made with PQconnectdbParams (keywords/values, never a concatenated
 *     conninfo string) and connect_timeout taken from the deadline;
 *   - the session is read-only (default_transaction_read_only=on, set in the startup options) and
 *     tagged application_name=qrel;
 *   - GSS encryption is not tried (gssencmode=disable) unless the DSN or libpq's environment
 *     mentions GSSAPI: asks_gss below;
 *   - each query runs with statement_timeout set from the time left, is sent asynchronously and
 *     waited for with poll(); when the deadline passes first, PQcancel asks the server to stop it
 *     and the call fails with ERR_TIMEOUT;
 *   - a DSN or password never appears in an error message, a label or a log line: libpq's own
 *     messages are passed through pg_scrub() before they are used.
 * After any error the caller closes the connection; the next scrape reconnects. */
#ifndef QREL_PG_H
#define QREL_PG_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"
#include "deadline.h"
#include "err.h"

/* Connection settings of a postgres source, read from its mapping by pg_params_configure:
 *   dsn_file / dsn_env          a libpq connection URI or key=value string (secret)
 *   host, port, user, dbname, sslmode   plain keys (used when no DSN is given, or override it)
 *   password_file / password_env        secret
 * The secrets are read at configure time (file or environment), kept in memory only. */
struct pg_params {
    char *dsn;
    char *host;
    char *port;
    char *user;
    char *dbname;
    char *sslmode;
    char *password;
    char *dsn_password; /* a password written inside the DSN: masked like password */
    int asks_gss;       /* the DSN or libpq's environment says something about GSSAPI (see pg.c) */
    char *label;        /* "host:port/dbname", made by pg_params_configure */
};

/* Reads the keys above from map (a source mapping; no I/O except reading the secret files). On
 * error e holds a "file:line:col: " message and p may be half filled: pg_params_free it. */
int pg_params_configure(struct pg_params *p, struct cfg_node *map, const char *source,
                        struct err *e);
void pg_params_free(struct pg_params *p); /* wipes secrets; the struct itself is the caller's */
/* "host:port/dbname" for messages (never user, password or DSN options). Static per params. */
const char *pg_params_label(const struct pg_params *p);

struct pg_conn;

/* Connects under the deadline. Messages start with `postgres "SOURCE" host:port/db: `. */
struct pg_conn *pg_connect(const struct pg_params *p, const char *source, const struct deadline *dl,
                           struct err *e);
void pg_close(struct pg_conn *c);  /* NULL is fine */
PGconn *pg_raw(struct pg_conn *c); /* for PQescapeIdentifier and the like */

/* Runs sql with text parameters ($1..$n; NULL array when none). On success *out holds a result
 * of status PGRES_TUPLES_OK or PGRES_COMMAND_OK, which the caller PQclear()s. Errors:
 * ERR_TIMEOUT (cancelled on the server), ERR_QUERY (the server's message, e.g. a missing column:
 * `relation "claims" does not exist`), ERR_CONNECT (connection lost), ERR_AUTH (permission
 * denied). what names the query in messages ("dedup_table \"handled\""). */
int pg_query(struct pg_conn *c, const struct deadline *dl, const char *what, const char *sql,
             int nparams, const char *const *params, PGresult **out, struct err *e);
/* pg_query in two halves, so that the caller can do other work while the server runs the
 * statement: pg_query_send sends it whole under dl (0, or -1 with e set as pg_query's), and
 * pg_query_wait, which must come next on c, waits for its result as pg_query does. */
int pg_query_send(struct pg_conn *c, const struct deadline *dl, const char *what, const char *sql,
                  int nparams, const char *const *params, struct err *e);
int pg_query_wait(struct pg_conn *c, const struct deadline *dl, const char *what, PGresult **out,
                  struct err *e);

/* Quotes an identifier for SQL ("my table" -> "\"my table\""), malloc'd; NULL on failure. */
char *pg_ident(struct pg_conn *c, const char *name);

/* The same without a connection (for SQL built at configure time; connections are UTF8):
 * wraps name in double quotes, doubling any inside. malloc'd, never NULL. */
char *pg_quote_ident(const char *name);
/* A table name from the config, "table" or "schema.table", as SQL: "\"table\"" or
 * "\"schema\".\"table\"". NULL when name is empty, has more than one dot or an empty part
 * (configure errors say: want "table" or "schema.table"). malloc'd. */
char *pg_table_sql(const char *name);

/* Fails with code and `postgres "SOURCE" host:port/db: ` + the formatted text, for sections
 * reporting what they found (a missing column). Returns -1. */
int pg_error(struct pg_conn *c, struct err *e, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What a section's check wants of a column. */
enum pg_col_type {
    PG_COL_ANY,    /* exists */
    PG_COL_TIME,   /* timestamptz, timestamp or date */
    PG_COL_NUMBER, /* an integer, numeric or floating-point type */
};
struct pg_column {
    const char *name; /* as in the config (unquoted) */
    enum pg_col_type want;
};

/* For a section's check: verifies that table (as in the config, "t" or "s.t", found through the
 * search_path like the queries) exists, that the session may SELECT from it, and that each of the
 * n columns exists with the wanted type. One catalogue query with parameters. Errors, after the
 * prefix and "what: " (codes: ERR_QUERY, but ERR_AUTH for the permission):
 *   table "outbox" does not exist
 *   permission denied to SELECT from table "outbox"
 *   column "created_at" does not exist in table "outbox"
 *   column "created_at" of table "outbox" is text, want a timestamp (timestamptz, ...)
 * The first problem found is reported. */
int pg_check_columns(struct pg_conn *c, const struct deadline *dl, const char *what,
                     const char *table, const struct pg_column *cols, size_t n, struct err *e);

/* Copies msg into dst (cap bytes) with any password or DSN of p masked as "***". */
void pg_scrub(const struct pg_params *p, const char *msg, char *dst, size_t cap);

/* "300.000000 seconds": the text of an interval parameter ($n::interval) for seconds. */
void pg_interval_param(char *dst, size_t cap, double seconds);

/* A text[] literal of the strings, for a $n::text[] parameter: {"a","b\"c"} (every element
 * quoted, '"' and '\' escaped). malloc'd, never NULL. */
char *pg_text_array(const char *const *v, size_t n);

/* Parses a float8 / int8 text value of a result cell; 0 on success, -1 when NULL or malformed. */
int pg_cell_double(const PGresult *r, int row, int col, double *out);

#endif
