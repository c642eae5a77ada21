/* pg.c: PostgreSQL access for collectors (see pg.h for the rules it enforces).
 *
 * libpq is driven asynchronously throughout: PQconnectStartParams + PQconnectPoll for the
 * connection and PQsendQueryParams + PQconsumeInput for queries, each wait a poll() on the
 * connection's socket bounded by the deadline. libpq's blocking calls only know whole seconds
 * (connect_timeout) or nothing at all, and a scrape deadline is counted in milliseconds. The
 * server gets two more guards in case we vanish mid-query: statement_timeout follows the time
 * left, and at the deadline PQcancel asks it to stop the query.
 *
 * Every text that can come from libpq passes through pg_scrub before it reaches an error: libpq
 * sometimes quotes parts of the connection string it was given, and that may hold a password. */
#include "common/pg.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"
#include "alloc.h"
#include "buf.h"

#define MASK "***"
/* statement_timeout is the deadline plus this: the server's timer backs up our cancel. */
#define STMT_SLACK_MS 100

struct pg_conn {
    PGconn *conn;
    const struct pg_params *p; /* the source's, which outlives the connection */
    char *prefix;              /* postgres "SOURCE" host:port/db */
    int64_t stmt_ms;           /* the session's statement_timeout as last set */
    int broken;                /* a query was abandoned: the connection is unusable */
};

/* ---- configuration ---- */

void pg_params_free(struct pg_params *p)
{
    if (!p)
        return;
    secret_free(p->dsn);
    free(p->host);
    free(p->port);
    free(p->user);
    free(p->dbname);
    free(p->sslmode);
    secret_free(p->password);
    secret_free(p->dsn_password);
    free(p->label);
    memset(p, 0, sizeof *p);
}

/* Takes what the label and the scrubber need out of a DSN: host, port, dbname, user for the
 * label (explicit keys win), the password to mask. The DSN is valid when this returns 0. */
/* Where a connection may ask for GSSAPI. Unless one of these is set, qrel connects with
 * gssencmode=disable: libpq's default, prefer, looks for a Kerberos credential cache before every
 * connection (initialising the krb5 library, its configuration and its heap) only to find none
 * on most hosts. GSSAPI authentication, which a server can still ask for, is unaffected. A
 * service (the DSN's or PGSERVICE) may set gssencmode in its file, so it is left to libpq too. */
static const char *const gss_keywords[] = {"gssencmode", "krbsrvname", "gsslib", "service"};
static const char *const gss_env[] = {"PGGSSENCMODE", "PGKRBSRVNAME", "PGGSSLIB", "PGSERVICE"};

static int gss_keyword(const char *kw)
{
    for (size_t i = 0; i < sizeof gss_keywords / sizeof gss_keywords[0]; i++)
        if (strcmp(kw, gss_keywords[i]) == 0)
            return 1;
    return 0;
}

static int gss_in_env(void)
{
    for (size_t i = 0; i < sizeof gss_env / sizeof gss_env[0]; i++) {
        const char *v = getenv(gss_env[i]);
        if (v && *v)
            return 1;
    }
    return 0;
}

static int dsn_parts(struct pg_params *p, char **host, char **port, char **dbname, char **user)
{
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(p->dsn, &errmsg);
    if (!opts) {
        /* errmsg may quote the DSN: never shown. */
        PQfreemem(errmsg);
        return -1;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val || !*o->val)
            continue;
        if (gss_keyword(o->keyword))
            p->asks_gss = 1;
        char **dst = strcmp(o->keyword, "host") == 0       ? host
                     : strcmp(o->keyword, "port") == 0     ? port
                     : strcmp(o->keyword, "dbname") == 0   ? dbname
                     : strcmp(o->keyword, "user") == 0     ? user
                     : strcmp(o->keyword, "password") == 0 ? &p->dsn_password
                                                           : NULL;
        if (dst && !*dst)
            *dst = xstrdup(o->val);
    }
    PQconninfoFree(opts); /* libpq does not wipe the copy it made of the password */
    return 0;
}

static const char *const sslmodes[] = {"disable", "allow",     "prefer",
                                       "require", "verify-ca", "verify-full"};

int pg_params_configure(struct pg_params *p, struct cfg_node *map, const char *source,
                        struct err *e)
{
    char *dhost = NULL, *dport = NULL, *ddb = NULL, *duser = NULL;
    int rc = -1;
    memset(p, 0, sizeof *p);

    if (secret_get(map, "dsn", 0, &p->dsn, e) || cfg_get_nonempty(map, "host", &p->host, e) ||
        cfg_get_nonempty(map, "user", &p->user, e) ||
        cfg_get_nonempty(map, "dbname", &p->dbname, e) ||
        cfg_get_nonempty(map, "sslmode", &p->sslmode, e) ||
        secret_get(map, "password", 0, &p->password, e))
        goto out;
    long long port = 0;
    if (cfg_get_int(map, "port", 0, 1, 65535, &port, e))
        goto out;
    if (port)
        p->port = xasprintf("%lld", port);
    if (p->sslmode) {
        size_t i = 0;
        while (i < sizeof sslmodes / sizeof sslmodes[0] && strcmp(sslmodes[i], p->sslmode))
            i++;
        if (i == sizeof sslmodes / sizeof sslmodes[0]) {
            cfg_error(e, cfg_at(map, "sslmode"),
                      "sslmode: want one of disable, allow, prefer, require, verify-ca, "
                      "verify-full, got \"%s\"",
                      p->sslmode);
            goto out;
        }
    }
    if (!p->dsn && !p->host) {
        /* A misspelt key is the likelier story: its message names the typo and the known keys. */
        char where[300];
        snprintf(where, sizeof where, "source \"%s\"", source);
        if (cfg_finish(map, where, e))
            goto out;
        cfg_error(e, map,
                  "want host, dsn_file or dsn_env in source \"%s\" (the database to connect to)",
                  source);
        goto out;
    }
    if (p->dsn && dsn_parts(p, &dhost, &dport, &ddb, &duser)) {
        int from_file = cfg_at(map, "dsn_file") != map;
        cfg_error(e, cfg_at(map, from_file ? "dsn_file" : "dsn_env"),
                  "%s: want a libpq connection string (\"host=... dbname=...\") or URI "
                  "(\"postgresql://...\"), and what was found does not parse as either",
                  from_file ? "dsn_file" : "dsn_env");
        goto out;
    }
    if (gss_in_env())
        p->asks_gss = 1;
    const char *host = p->host ? p->host : dhost ? dhost : "localhost";
    const char *portv = p->port ? p->port : dport ? dport : "5432";
    const char *user = p->user ? p->user : duser;
    const char *db = p->dbname ? p->dbname : ddb ? ddb : user ? user : "postgres";
    p->label = xasprintf("%s:%s/%s", host, portv, db);
    rc = 0;
out:
    free(dhost);
    free(dport);
    free(ddb);
    free(duser);
    return rc;
}

const char *pg_params_label(const struct pg_params *p)
{
    return p && p->label ? p->label : "?";
}

/* ---- scrubbing ---- */

static int mask_at(const char *s, const char *secret, size_t *len)
{
    if (!secret || !*secret)
        return 0;
    size_t n = strlen(secret);
    if (strncmp(s, secret, n) == 0) {
        *len = n;
        return 1;
    }
    return 0;
}

/* Writes the separator a run of white space stands for: "; " where it held a line break
 * (libpq puts DETAIL and HINT on lines of their own) unless punctuation already separates, else
 * one space. Nothing at the start. */
static size_t put_sep(char *dst, size_t o, size_t cap, int sep)
{
    if (!sep || o == 0)
        return o;
    char last = dst[o - 1];
    if (sep == 2 && last != ':' && last != ';' && last != ',' && o + 2 < cap)
        dst[o++] = ';';
    if (o + 2 < cap)
        dst[o++] = ' ';
    return o;
}

void pg_scrub(const struct pg_params *p, const char *msg, char *dst, size_t cap)
{
    if (!cap)
        return;
    size_t o = 0;
    int sep = 0; /* 0 none, 1 spaces, 2 a line break */
    /* The DSN first: it contains the password. White space is folded (see put_sep) so that an
     * error is one line of a log. */
    for (const char *s = msg ? msg : ""; *s && o + 1 < cap;) {
        size_t n = 0;
        if (p && (mask_at(s, p->dsn, &n) || mask_at(s, p->password, &n) ||
                  mask_at(s, p->dsn_password, &n))) {
            o = put_sep(dst, o, cap, sep);
            sep = 0;
            for (const char *m = MASK; *m && o + 1 < cap; m++)
                dst[o++] = *m;
            s += n;
            continue;
        }
        char ch = *s++;
        if (ch == '\n' || ch == '\r') {
            sep = 2;
            continue;
        }
        if (ch == '\t' || ch == ' ') {
            if (!sep)
                sep = 1;
            continue;
        }
        o = put_sep(dst, o, cap, sep);
        sep = 0;
        if (o + 1 < cap)
            dst[o++] = ch;
    }
    dst[o] = '\0';
}

/* ---- identifiers ---- */

char *pg_quote_ident(const char *name)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '"');
    for (const char *s = name; *s; s++) {
        if (*s == '"')
            buf_putc(&b, '"');
        buf_putc(&b, *s);
    }
    buf_putc(&b, '"');
    return buf_steal(&b);
}

char *pg_table_sql(const char *name)
{
    if (!name || !*name)
        return NULL;
    const char *dot = strchr(name, '.');
    if (!dot)
        return pg_quote_ident(name);
    if (dot == name || !dot[1] || strchr(dot + 1, '.'))
        return NULL;
    char *schema = xstrndup(name, (size_t)(dot - name));
    char *qs = pg_quote_ident(schema), *qt = pg_quote_ident(dot + 1);
    char *r = xasprintf("%s.%s", qs, qt);
    free(schema);
    free(qs);
    free(qt);
    return r;
}

char *pg_ident(struct pg_conn *c, const char *name)
{
    if (!c || !c->conn || !name)
        return NULL;
    char *q = PQescapeIdentifier(c->conn, name, strlen(name));
    if (!q)
        return NULL;
    char *r = xstrdup(q);
    PQfreemem(q);
    return r;
}

/* ---- errors ---- */

static int conn_fail(struct pg_conn *c, struct err *e, enum err_code code, const char *what,
                     const char *libpq_msg)
{
    char clean[400];
    pg_scrub(c->p, libpq_msg, clean, sizeof clean);
    if (!*clean)
        snprintf(clean, sizeof clean, "%s", "no message from libpq");
    return err_set(e, code, "%s: %s: %s", c->prefix, what, clean);
}

int pg_error(struct pg_conn *c, struct err *e, enum err_code code, const char *fmt, ...)
{
    char text[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return err_set(e, code, "%s: %s", c ? c->prefix : "postgres", text);
}

/* A connection refused by the server for who we are. libpq has no SQLSTATE for startup errors,
 * so the server's (English) messages are recognised; anything else is a connect error. */
static int is_auth_failure(PGconn *conn)
{
    if (PQconnectionNeedsPassword(conn))
        return 1;
    const char *m = PQerrorMessage(conn);
    static const char *const phrases[] = {
        "password authentication failed",
        "authentication failed for user",
        "no password supplied",
        "no pg_hba.conf entry",
        "pg_hba.conf rejects",
        "permission denied for database",
        "must be superuser",
        "SCRAM authentication",
        "server requested SCRAM",
        "does not have CONNECT privilege",
    };
    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (strstr(m, phrases[i]))
            return 1;
    /* FATAL:  role "x" does not exist */
    const char *r = strstr(m, "role \"");
    return r && strstr(r, "\" does not exist");
}

/* ---- connections ---- */

static void add_kv(const char **kw, const char **val, int *n, const char *k, const char *v)
{
    if (v) {
        kw[*n] = k;
        val[(*n)++] = v;
    }
}

struct pg_conn *pg_connect(const struct pg_params *p, const char *source, const struct deadline *dl,
                           struct err *e)
{
    struct pg_conn *c = xcalloc(1, sizeof *c);
    c->p = p;
    c->prefix = xasprintf("postgres \"%s\" %s", source, pg_params_label(p));

    int64_t left = deadline_remaining_ms(dl);
    if (left <= 0) {
        err_set(e, ERR_TIMEOUT, "%s: connect: no time left before the deadline", c->prefix);
        goto fail;
    }
    /* libpq's connect_timeout counts whole seconds (at least 2 in libpq 15 when set to 1); the
     * poll loop below holds the deadline to the millisecond, this only bounds libpq's own
     * internal waits. */
    long long secs = (left + 999) / 1000;
    char timeout[32], options[128];
    snprintf(timeout, sizeof timeout, "%lld", secs < 1 ? 1 : secs);
    c->stmt_ms = left + STMT_SLACK_MS;
    snprintf(options, sizeof options,
             "-c default_transaction_read_only=on -c jit=off -c statement_timeout=%lld",
             (long long)c->stmt_ms);

    const char *kw[16], *val[16];
    int n = 0;
    /* Order matters: with expand_dbname, the first dbname may be a whole connection string, and
     * every later keyword overrides what it says. The safety settings come last. */
    if (p->dsn) {
        kw[n] = "dbname";
        val[n++] = p->dsn;
    }
    add_kv(kw, val, &n, "host", p->host);
    add_kv(kw, val, &n, "port", p->port);
    add_kv(kw, val, &n, "user", p->user);
    add_kv(kw, val, &n, "dbname", p->dbname);
    add_kv(kw, val, &n, "sslmode", p->sslmode);
    add_kv(kw, val, &n, "gssencmode", p->asks_gss ? NULL : "disable");
    add_kv(kw, val, &n, "password", p->password);
    add_kv(kw, val, &n, "connect_timeout", timeout);
    add_kv(kw, val, &n, "application_name", "qrel");
    add_kv(kw, val, &n, "client_encoding", "UTF8");
    add_kv(kw, val, &n, "options", options);
    kw[n] = NULL;
    val[n] = NULL;

    c->conn = PQconnectStartParams(kw, val, 1);
    if (!c->conn) {
        err_set(e, ERR_INTERNAL, "%s: connect: libpq is out of memory", c->prefix);
        goto fail;
    }
    PostgresPollingStatusType st =
        PQstatus(c->conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED) {
            conn_fail(c, e, is_auth_failure(c->conn) ? ERR_AUTH : ERR_CONNECT, "connect",
                      PQerrorMessage(c->conn));
            goto fail;
        }
        int fd = PQsocket(c->conn);
        if (fd >= 0) {
            int r = deadline_wait_fd(fd, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, dl, NULL);
            if (r == 0) {
                err_set(e, ERR_TIMEOUT, "%s: connect: no connection within the deadline (%lld ms)",
                        c->prefix, (long long)left);
                goto fail;
            }
            if (r < 0) {
                err_set(e, ERR_CONNECT, "%s: connect: poll: %s", c->prefix, strerror(errno));
                goto fail;
            }
        } else if (deadline_expired(dl)) {
            err_set(e, ERR_TIMEOUT, "%s: connect: no connection within the deadline (%lld ms)",
                    c->prefix, (long long)left);
            goto fail;
        }
        st = PQconnectPoll(c->conn);
    }
    if (PQsetnonblocking(c->conn, 1)) {
        conn_fail(c, e, ERR_INTERNAL, "connect", PQerrorMessage(c->conn));
        goto fail;
    }
    return c;
fail:
    pg_close(c);
    return NULL;
}

void pg_close(struct pg_conn *c)
{
    if (!c)
        return;
    if (c->conn)
        PQfinish(c->conn);
    free(c->prefix);
    free(c);
}

PGconn *pg_raw(struct pg_conn *c)
{
    return c ? c->conn : NULL;
}

/* ---- queries ---- */

/* Asks the server to stop what it runs. The connection is then abandoned (the caller closes it;
 * a backend still busy notices the Terminate that PQfinish sends once the cancel lands). */
static void cancel(struct pg_conn *c)
{
    PGcancel *cn = PQgetCancel(c->conn);
    if (cn) {
        char buf[256];
        PQcancel(cn, buf, sizeof buf);
        PQfreeCancel(cn);
    }
    c->broken = 1;
}

/* The code for a failed result: by SQLSTATE class, so it does not depend on the message's
 * language. */
static enum err_code code_of(const PGresult *r)
{
    const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (!s || strlen(s) != 5)
        return ERR_QUERY;
    if (strncmp(s, "28", 2) == 0 || strcmp(s, "42501") == 0)
        return ERR_AUTH;
    if (strcmp(s, "57014") == 0) /* query_canceled: statement_timeout */
        return ERR_TIMEOUT;
    if (strncmp(s, "08", 2) == 0 || strncmp(s, "57P", 3) == 0)
        return ERR_CONNECT; /* connection exception; admin or crash shutdown */
    return ERR_QUERY;
}

static int timeout_fail(struct pg_conn *c, const char *what, struct err *e)
{
    cancel(c);
    return err_set(e, ERR_TIMEOUT, "%s: %s: no answer within the deadline; query cancelled",
                   c->prefix, what);
}

/* Sends one statement whole to the server under the deadline, without waiting for its result. */
static int send_stmt(struct pg_conn *c, const struct deadline *dl, const char *what,
                     const char *sql, int nparams, const char *const *params, struct err *e)
{
    PGconn *conn = c->conn;
    if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0)) {
        c->broken = 1;
        return conn_fail(c, e, ERR_CONNECT, what, PQerrorMessage(conn));
    }
    int fd = PQsocket(conn);
    int f;
    while ((f = PQflush(conn)) == 1) {
        int r = deadline_wait_fd(fd, POLLOUT | POLLIN, dl, NULL);
        if (r == 0)
            return timeout_fail(c, what, e);
        if (r < 0 || !PQconsumeInput(conn)) {
            c->broken = 1;
            return conn_fail(c, e, ERR_CONNECT, what, PQerrorMessage(conn));
        }
    }
    if (f < 0) {
        c->broken = 1;
        return conn_fail(c, e, ERR_CONNECT, what, PQerrorMessage(conn));
    }
    return 0;
}

/* Waits under the deadline for the result of the statement send_stmt sent. */
static int wait_result(struct pg_conn *c, const struct deadline *dl, const char *what,
                       PGresult **out, struct err *e)
{
    PGconn *conn = c->conn;
    int fd = PQsocket(conn);
    *out = NULL;
    PGresult *keep = NULL;
    for (;;) {
        while (PQisBusy(conn)) {
            int r = deadline_wait_fd(fd, POLLIN, dl, NULL);
            if (r == 0) {
                PQclear(keep);
                return timeout_fail(c, what, e);
            }
            if (r < 0 || !PQconsumeInput(conn)) {
                PQclear(keep);
                c->broken = 1;
                return conn_fail(c, e, ERR_CONNECT, what, PQerrorMessage(conn));
            }
        }
        PGresult *r = PQgetResult(conn);
        if (!r)
            break;
        /* The first failure wins; otherwise the last result. */
        if (keep && PQresultStatus(keep) != PGRES_TUPLES_OK &&
            PQresultStatus(keep) != PGRES_COMMAND_OK) {
            PQclear(r);
        } else {
            PQclear(keep);
            keep = r;
        }
    }
    if (!keep) {
        c->broken = 1;
        return conn_fail(c, e, ERR_CONNECT, what, PQerrorMessage(conn));
    }
    ExecStatusType s = PQresultStatus(keep);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        enum err_code code = code_of(keep);
        const char *m = PQresultErrorField(keep, PG_DIAG_MESSAGE_PRIMARY);
        if (!m)
            m = PQresultErrorMessage(keep);
        if (PQstatus(conn) == CONNECTION_BAD) {
            code = ERR_CONNECT;
            c->broken = 1;
        }
        conn_fail(c, e, code, what, m);
        PQclear(keep);
        return -1;
    }
    *out = keep;
    return 0;
}

/* Sends one statement and waits for its result under the deadline. */
static int run(struct pg_conn *c, const struct deadline *dl, const char *what, const char *sql,
               int nparams, const char *const *params, PGresult **out, struct err *e)
{
    *out = NULL;
    if (send_stmt(c, dl, what, sql, nparams, params, e))
        return -1;
    return wait_result(c, dl, what, out, e);
}

int pg_query(struct pg_conn *c, const struct deadline *dl, const char *what, const char *sql,
             int nparams, const char *const *params, PGresult **out, struct err *e)
{
    *out = NULL;
    if (pg_query_send(c, dl, what, sql, nparams, params, e))
        return -1;
    return wait_result(c, dl, what, out, e);
}

int pg_query_send(struct pg_conn *c, const struct deadline *dl, const char *what, const char *sql,
                  int nparams, const char *const *params, struct err *e)
{
    if (!c || !c->conn)
        return err_set(e, ERR_INTERNAL, "postgres: %s: not connected", what);
    if (c->broken || PQstatus(c->conn) != CONNECTION_OK)
        return err_set(e, ERR_CONNECT, "%s: %s: the connection was lost", c->prefix, what);
    int64_t left = deadline_remaining_ms(dl);
    if (left <= 0)
        return err_set(e, ERR_TIMEOUT, "%s: %s: no time left before the deadline", c->prefix, what);
    /* statement_timeout follows the time left, so the server stops on its own even if our
     * cancel never reaches it; a little later than our deadline, so that normally our own
     * cancel acts and the server's timer is only the safety net. A separate SET costs a round
     * trip: done only when the setting would cut the query short or is more than 10 % too
     * long, which steady scrapes with the same timeout rarely are. */
    int64_t target = left + STMT_SLACK_MS;
    if (c->stmt_ms < left || c->stmt_ms > target + target / 10) {
        char set[64];
        snprintf(set, sizeof set, "SET statement_timeout = %lld", (long long)target);
        PGresult *r = NULL;
        if (run(c, dl, what, set, 0, NULL, &r, e))
            return -1;
        PQclear(r);
        c->stmt_ms = target;
    }
    return send_stmt(c, dl, what, sql, nparams, params, e);
}

int pg_query_wait(struct pg_conn *c, const struct deadline *dl, const char *what, PGresult **out,
                  struct err *e)
{
    *out = NULL;
    if (!c || !c->conn)
        return err_set(e, ERR_INTERNAL, "postgres: %s: not connected", what);
    return wait_result(c, dl, what, out, e);
}

int pg_cell_double(const PGresult *r, int row, int col, double *out)
{
    if (!r || row < 0 || col < 0 || row >= PQntuples(r) || col >= PQnfields(r) ||
        PQgetisnull(r, row, col))
        return -1;
    const char *s = PQgetvalue(r, row, col);
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* ---- checks ---- */

static const char *want_phrase(enum pg_col_type t)
{
    return t == PG_COL_TIME     ? "a timestamp (timestamptz, timestamp or date)"
           : t == PG_COL_NUMBER ? "a number (integer, numeric or floating point)"
                                : "any type";
}

static int type_ok(enum pg_col_type want, const char *typname, const char *category)
{
    if (want == PG_COL_TIME)
        return strcmp(typname, "timestamptz") == 0 || strcmp(typname, "timestamp") == 0 ||
               strcmp(typname, "date") == 0;
    if (want == PG_COL_NUMBER)
        return strcmp(category, "N") == 0 && strcmp(typname, "oid") != 0 &&
               strcmp(typname, "money") != 0;
    return 1;
}

int pg_check_columns(struct pg_conn *c, const struct deadline *dl, const char *what,
                     const char *table, const struct pg_column *cols, size_t n, struct err *e)
{
    char *qtable = pg_table_sql(table);
    if (!qtable)
        return pg_error(c, e, ERR_CONFIG,
                        "%s: table: want \"table\" or \"schema.table\", got \"%s\"", what, table);
    /* One row per column of the table (one row of NULLs when it has none or does not exist);
     * to_regclass resolves the name exactly as the collecting query will, search_path included. */
    static const char sql[] =
        "SELECT r.oid IS NOT NULL, COALESCE(has_table_privilege(r.oid, 'SELECT'), false), "
        "a.attname, t.typname, t.typcategory, format_type(a.atttypid, a.atttypmod) "
        "FROM (SELECT to_regclass($1) AS oid) r "
        "LEFT JOIN pg_catalog.pg_attribute a "
        "ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid";
    const char *params[1] = {qtable};
    PGresult *r = NULL;
    int rc = -1;
    if (pg_query(c, dl, what, sql, 1, params, &r, e))
        goto out;
    if (PQntuples(r) < 1 || strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        pg_error(c, e, ERR_QUERY, "%s: table \"%s\" does not exist", what, table);
        goto out;
    }
    if (strcmp(PQgetvalue(r, 0, 1), "t") != 0) {
        pg_error(c, e, ERR_AUTH, "%s: permission denied to SELECT from table \"%s\"", what, table);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        int found = -1;
        for (int row = 0; row < PQntuples(r) && found < 0; row++)
            if (!PQgetisnull(r, row, 2) && strcmp(PQgetvalue(r, row, 2), cols[i].name) == 0)
                found = row;
        if (found < 0) {
            pg_error(c, e, ERR_QUERY, "%s: column \"%s\" does not exist in table \"%s\"", what,
                     cols[i].name, table);
            goto out;
        }
        if (!type_ok(cols[i].want, PQgetvalue(r, found, 3), PQgetvalue(r, found, 4))) {
            pg_error(c, e, ERR_QUERY, "%s: column \"%s\" of table \"%s\" is %s, want %s", what,
                     cols[i].name, table, PQgetvalue(r, found, 5), want_phrase(cols[i].want));
            goto out;
        }
    }
    rc = 0;
out:
    PQclear(r);
    free(qtable);
    return rc;
}

void pg_interval_param(char *dst, size_t cap, double seconds)
{
    snprintf(dst, cap, "%.6f seconds", seconds);
}

char *pg_text_array(const char *const *v, size_t n)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_putc(&b, '"');
        for (const char *s = v[i]; *s; s++) {
            if (*s == '"' || *s == '\\')
                buf_putc(&b, '\\');
            buf_putc(&b, *s);
        }
        buf_putc(&b, '"');
    }
    buf_putc(&b, '}');
    return buf_steal(&b);
}
