/* check_postgres.c: unit tests for collectors/common/pg.c, postgres.c and the outbox section.
 *
 * Configuration errors are user-facing, so they are compared with the exact message a user sees
 * (through sources_load_string, as the exporter loads a file). The scrubber, identifier quoting
 * and result-cell parsing are pure and tested directly (results built with PQmakeEmptyPGresult).
 * A "live" case runs against a real server when PGTEST_PORT names one on 127.0.0.1 (user
 * postgres, trust): the integration test tests/integration/postgres.sh runs this program that
 * way; without it those tests say loudly that they were skipped. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pg.h"
#include "postgres/postgres.h"
#include "sources.h"
#include "support/check_run.h"
#include "support/check_str.h"

static char tmpdir[256];

static void setup_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/check_postgres.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown_tmpdir(void)
{
    char path[512];
    static const char *const files[] = {"pw", "empty", "dsn", "bad.dsn"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Replaces every "@T" in text with the temp dir. */
static char *with_tmpdir(const char *text)
{
    size_t cap = strlen(text) * 2 + 1024;
    char *out = malloc(cap);
    size_t o = 0;
    for (const char *s = text; *s;) {
        if (s[0] == '@' && s[1] == 'T') {
            o += (size_t)snprintf(out + o, cap - o, "%s", tmpdir);
            s += 2;
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
    return out;
}

static struct sources *load(const char *text, struct err *e)
{
    err_clear(e);
    char *t = with_tmpdir(text);
    struct sources *s = sources_load_string("x.yml", t, e);
    free(t);
    return s;
}

/* ---- configuration errors ---- */

#define SRC "sources:\n  - name: db\n    kind: postgres\n"
#define OB "    outboxes: [{table: outbox, created_at_column: c, published_at_column: p}]\n"
#define KNOWN                                                                                      \
    "(known keys: claim_tables, dbname, dedup_tables, dsn_env, dsn_file, host, kind, "             \
    "min_interval, name, outboxes, password_env, password_file, port, queries, queues, sslmode, "  \
    "timeout, user)"

static const struct check_case bad_configs[] = {
    {SRC OB, "x.yml:2:5: want host, dsn_file or dsn_env in source \"db\" (the database to "
             "connect to)"},
    {SRC "    hots: h\n" OB, "x.yml:4:5: unknown key \"hots\" in source \"db\" " KNOWN},
    {SRC "    host: h\n    outboxs: []\n",
     "x.yml:5:5: unknown key \"outboxs\" in source \"db\" " KNOWN},
    {SRC "    host: h\n",
     "x.yml:2:5: want at least one entry in dedup_tables, claim_tables, outboxes, queues or "
     "queries of source \"db\""},
    {SRC "    host: h\n    outboxes: []\n",
     "x.yml:2:5: want at least one entry in dedup_tables, claim_tables, outboxes, queues or "
     "queries of source \"db\""},
    {SRC "    host: \"\"\n" OB, "x.yml:4:11: host: want a non-empty string"},
    {SRC "    host: h\n    port: 0\n" OB,
     "x.yml:5:11: port: want an integer from 1 to 65535, got \"0\""},
    {SRC "    host: h\n    port: pg\n" OB,
     "x.yml:5:11: port: want an integer from 1 to 65535, got \"pg\""},
    {SRC "    host: h\n    sslmode: maybe\n" OB,
     "x.yml:5:14: sslmode: want one of disable, allow, prefer, require, verify-ca, verify-full, "
     "got \"maybe\""},
    {SRC "    host: h\n    password_file: a\n    password_env: B\n" OB,
     "x.yml:6:19: password_env: want either password_file or password_env, not both"},
    {SRC "    host: h\n    password_env: QREL_TEST_UNSET_VARIABLE\n" OB,
     "x.yml:5:19: password_env: environment variable \"QREL_TEST_UNSET_VARIABLE\" is not set"},
    {SRC "    host: h\n    password_file: @T/none\n" OB,
     "x.yml:5:20: password_file: cannot read \"@T/none\": No such file or directory"},
    {SRC "    host: h\n    password_file: @T/empty\n" OB,
     "x.yml:5:20: password_file: \"@T/empty\" is empty"},
    {SRC "    dsn_file: @T/bad.dsn\n" OB,
     "x.yml:4:15: dsn_file: want a libpq connection string (\"host=... dbname=...\") or URI "
     "(\"postgresql://...\"), and what was found does not parse as either"},
    {SRC "    dsn_file: a\n    dsn_env: B\n" OB,
     "x.yml:5:14: dsn_env: want either dsn_file or dsn_env, not both"},
    {SRC "    host: h\n    password: hunter2\n" OB,
     "x.yml:5:5: unknown key \"password\" in source \"db\" " KNOWN},
    {SRC "    host: h\n    outboxes: {table: t}\n",
     "x.yml:5:15: outboxes: want a list, got a mapping"},
    {SRC "    host: h\n    outboxes: [t]\n",
     "x.yml:5:16: each entry of outboxes: want a mapping, got a string"},
    /* the outbox section */
    {SRC "    host: h\n    outboxes: [{created_at_column: c, published_at_column: p}]\n",
     "x.yml:5:16: table: required in each entry of outboxes"},
    {SRC "    host: h\n    outboxes: [{table: t, published_at_column: p}]\n",
     "x.yml:5:16: created_at_column: required in each entry of outboxes"},
    {SRC "    host: h\n    outboxes: [{tabel: t, created_at_column: c, published_at_column: p}]\n",
     "x.yml:5:17: unknown key \"tabel\" in an outbox of source \"db\" (known keys: "
     "created_at_column, name, pending_value, published_at_column, status_column, table)"},
    {SRC "    host: h\n    outboxes: [{table: t, created_at_column: c}]\n",
     "x.yml:5:16: want either published_at_column (pending: published_at IS NULL) or "
     "status_column with pending_value (pending: status = pending_value), got neither"},
    {SRC "    host: h\n    outboxes: [{table: t, created_at_column: c, published_at_column: p, "
         "status_column: s, pending_value: new}]\n",
     "x.yml:5:88: want either published_at_column (pending: published_at IS NULL) or "
     "status_column with pending_value (pending: status = pending_value), not both"},
    {SRC "    host: h\n    outboxes: [{table: t, created_at_column: c, status_column: s}]\n",
     "x.yml:5:64: status_column: needs pending_value, the status of rows not yet published"},
    {SRC "    host: h\n    outboxes: [{table: t, created_at_column: c, published_at_column: p, "
         "pending_value: new}]\n",
     "x.yml:5:88: pending_value: only with status_column (published_at_column needs none)"},
    {SRC "    host: h\n    outboxes: [{table: a.b.c, created_at_column: c, published_at_column: "
         "p}]\n",
     "x.yml:5:24: table: want \"table\" or \"schema.table\", got \"a.b.c\""},
    {SRC "    host: h\n    outboxes: [{table: .t, created_at_column: c, published_at_column: p}]\n",
     "x.yml:5:24: table: want \"table\" or \"schema.table\", got \".t\""},
    {SRC "    host: h\n    outboxes: [{table: t, created_at_column: \"\", published_at_column: "
         "p}]\n",
     "x.yml:5:46: created_at_column: want a non-empty string"},
    {SRC
     "    host: h\n    outboxes:\n      - table: t\n        name: n\n        created_at_column: "
     "c\n        published_at_column: p\n        extra: 1\n",
     "x.yml:10:9: unknown key \"extra\" in outbox \"n\" of source \"db\" (known keys: "
     "created_at_column, name, pending_value, published_at_column, status_column, table)"},
};

START_TEST(test_config_bad)
{
    write_file("empty", "\n");
    write_file("bad.dsn", "host=h password=sekrit-in-dsn junk\n");
    struct err e;
    struct sources *s = load(bad_configs[_i].in, &e);
    ck_assert_ptr_null(s);
    char *want = with_tmpdir(bad_configs[_i].want);
    ck_assert_str_eq(e.msg, want);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    ck_assert_ptr_null(strstr(e.msg, "sekrit"));
    free(want);
}
END_TEST

/* ---- parameters, labels, secrets ---- */

static struct cfg_doc *doc_of(const char *text, struct cfg_node **map)
{
    struct err e;
    char *t = with_tmpdir(text);
    struct cfg_doc *d = cfg_parse_string("x.yml", t, strlen(t), &e);
    free(t);
    ck_assert_msg(d != NULL, "%s", e.msg);
    *map = cfg_doc_root(d);
    return d;
}

static const struct check_case labels[] = {
    {"host: db.internal\n", "db.internal:5432/postgres"},
    {"host: h\nport: 6432\ndbname: shop\nuser: qrel\n", "h:6432/shop"},
    {"host: h\nuser: qrel\n", "h:5432/qrel"},
    {"dsn_file: @T/dsn\n", "dsnhost:5433/dsndb"},
    {"dsn_file: @T/dsn\nhost: over\ndbname: odb\n", "over:5433/odb"},
};

START_TEST(test_labels)
{
    write_file("dsn", "postgresql://u:pw-in-uri@dsnhost:5433/dsndb?sslmode=disable\n");
    struct cfg_node *map;
    struct cfg_doc *d = doc_of(labels[_i].in, &map);
    struct pg_params p;
    struct err e;
    ck_assert_msg(pg_params_configure(&p, map, "db", &e) == 0, "%s", e.msg);
    ck_assert_str_eq(pg_params_label(&p), labels[_i].want);
    pg_params_free(&p);
    pg_params_free(NULL);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_secrets_read)
{
    write_file("pw", "s3cret-pw\n");
    write_file("dsn", "host=h dbname=d password='in dsn'\n");
    struct cfg_node *map;
    struct cfg_doc *d = doc_of("dsn_file: @T/dsn\npassword_file: @T/pw\n", &map);
    struct pg_params p;
    struct err e;
    ck_assert_msg(pg_params_configure(&p, map, "db", &e) == 0, "%s", e.msg);
    ck_assert_str_eq(p.password, "s3cret-pw"); /* the newline chomped */
    ck_assert_str_eq(p.dsn, "host=h dbname=d password='in dsn'");
    ck_assert_str_eq(p.dsn_password, "in dsn");
    ck_assert_str_eq(pg_params_label(&p), "h:5432/d");
    pg_params_free(&p);
    cfg_doc_free(d);

    setenv("QREL_TEST_PG_PASSWORD", "from-env", 1);
    d = doc_of("host: h\npassword_env: QREL_TEST_PG_PASSWORD\n", &map);
    ck_assert_msg(pg_params_configure(&p, map, "db", &e) == 0, "%s", e.msg);
    ck_assert_str_eq(p.password, "from-env");
    ck_assert_ptr_null(p.dsn);
    pg_params_free(&p);
    cfg_doc_free(d);
}
END_TEST

/* GSS encryption is disabled unless the DSN or libpq's environment mentions GSSAPI. */
static const struct {
    const char *dsn; /* NULL: host only */
    const char *env; /* a variable set during the configure, or NULL */
    int asks;
} gss_cases[] = {
    {NULL, NULL, 0},
    {"host=h dbname=d sslmode=require", NULL, 0},
    {"host=h gssencmode=prefer", NULL, 1},
    {"postgresql://h/d?gssencmode=require", NULL, 1},
    {"host=h krbsrvname=pg", NULL, 1},
    {"service=shop", NULL, 1},
    {NULL, "PGGSSENCMODE", 1},
    {NULL, "PGSERVICE", 1},
};

START_TEST(test_gss_default)
{
    write_file("dsn", gss_cases[_i].dsn ? gss_cases[_i].dsn : "");
    if (gss_cases[_i].env)
        setenv(gss_cases[_i].env, "prefer", 1);
    struct cfg_node *map;
    struct cfg_doc *d = doc_of(gss_cases[_i].dsn ? "dsn_file: @T/dsn\n" : "host: h\n", &map);
    struct pg_params p;
    struct err e;
    ck_assert_msg(pg_params_configure(&p, map, "db", &e) == 0, "%s", e.msg);
    if (gss_cases[_i].env)
        unsetenv(gss_cases[_i].env);
    ck_assert_int_eq(p.asks_gss, gss_cases[_i].asks);
    pg_params_free(&p);
    cfg_doc_free(d);
}
END_TEST

static const struct check_case scrubs[] = {
    {"password authentication failed for user \"qrel\"",
     "password authentication failed for user \"qrel\""},
    {"bad value hunter2 in options", "bad value *** in options"},
    {"hunter2hunter2", "******"},
    {"invalid: host=h password=p2 dbname=d junk", "invalid: ***"},
    {"uri pw p2 here", "uri pw *** here"},
    {"connection to server at \"h\", port 5432 failed:\n  FATAL:  x\n\tDETAIL: y\n",
     "connection to server at \"h\", port 5432 failed: FATAL: x; DETAIL: y"},
    {"failed: Connection refused\n\tIs the server running?\n",
     "failed: Connection refused; Is the server running?"},
    {"", ""},
    {"  leading", "leading"},
};

START_TEST(test_scrub)
{
    struct pg_params p = {
        .password = "hunter2", .dsn = "host=h password=p2 dbname=d junk", .dsn_password = "p2"};
    char out[256];
    pg_scrub(&p, scrubs[_i].in, out, sizeof out);
    ck_assert_str_eq(out, scrubs[_i].want);
}
END_TEST

START_TEST(test_scrub_edges)
{
    struct pg_params p = {.password = "hunter2"};
    char out[8];
    pg_scrub(&p, "abcdefghijkl", out, sizeof out);
    ck_assert_str_eq(out, "abcdefg");
    pg_scrub(&p, "ab hunter2", out, sizeof out);
    ck_assert_str_eq(out, "ab ***");
    /* cut short, a secret is never shown in part */
    pg_scrub(&p, "abcdhunter2", out, sizeof out);
    ck_assert_str_eq(out, "abcd***");
    pg_scrub(&p, "abcdefhunter2", out, sizeof out);
    ck_assert_ptr_null(strstr(out, "hu"));
    pg_scrub(NULL, "x\ny z", out, sizeof out);
    ck_assert_str_eq(out, "x; y z");
    pg_scrub(&p, NULL, out, sizeof out);
    ck_assert_str_eq(out, "");
    char one[1] = {'z'};
    pg_scrub(&p, "abc", one, 1);
    ck_assert_int_eq(one[0], 0);
}
END_TEST

/* ---- identifiers ---- */

/* in: a table name; want: the SQL it gives, NULL where it is refused */
static const struct check_case tables[] = {
    {"outbox", "\"outbox\""},
    {"app.outbox", "\"app\".\"outbox\""},
    {"Mixed Case", "\"Mixed Case\""},
    {"we\"ird", "\"we\"\"ird\""},
    {"s\".t", "\"s\"\"\".\"t\""},
    {"", NULL},
    {".t", NULL},
    {"s.", NULL},
    {"a.b.c", NULL},
    {"ünïcode.tábla", "\"ünïcode\".\"tábla\""},
};

START_TEST(test_table_sql)
{
    char *got = pg_table_sql(tables[_i].in);
    if (!tables[_i].want) {
        ck_assert_ptr_null(got);
        return;
    }
    ck_assert_ptr_nonnull(got);
    check_str_free(got, tables[_i].want);
}
END_TEST

START_TEST(test_quote_ident)
{
    check_str_free(pg_quote_ident("a.b"), "\"a.b\"");
    check_str_free(pg_quote_ident("\"\""), "\"\"\"\"\"\"");
    ck_assert_ptr_null(pg_table_sql(NULL));
    ck_assert_ptr_null(pg_ident(NULL, "x"));
}
END_TEST

/* ---- result cells ---- */

START_TEST(test_cell_double)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc att[1] = {{.name = "v", .format = 0, .typid = 701, .typlen = 8, .atttypmod = -1}};
    ck_assert_int_eq(PQsetResultAttrs(r, 1, att), 1);
    static const char *const vals[] = {"1.5", "abc", "", "Infinity", "12x", "-0.25", "1e999"};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(PQsetvalue(r, i, 0, (char *)vals[i], (int)strlen(vals[i])), 1);
    ck_assert_int_eq(PQsetvalue(r, 7, 0, NULL, -1), 1); /* SQL NULL */
    double v = 0;
    ck_assert_int_eq(pg_cell_double(r, 0, 0, &v), 0);
    ck_assert_double_eq(v, 1.5);
    ck_assert_int_eq(pg_cell_double(r, 1, 0, &v), -1);
    ck_assert_int_eq(pg_cell_double(r, 2, 0, &v), -1);
    ck_assert_int_eq(pg_cell_double(r, 3, 0, &v), 0);
    ck_assert_int_eq(pg_cell_double(r, 4, 0, &v), -1);
    ck_assert_int_eq(pg_cell_double(r, 5, 0, &v), 0);
    ck_assert_double_eq(v, -0.25);
    ck_assert_int_eq(pg_cell_double(r, 6, 0, &v), -1);
    ck_assert_int_eq(pg_cell_double(r, 7, 0, &v), -1);
    ck_assert_int_eq(pg_cell_double(r, 8, 0, &v), -1); /* no such row */
    ck_assert_int_eq(pg_cell_double(r, 0, 1, &v), -1); /* no such column */
    ck_assert_int_eq(pg_cell_double(NULL, 0, 0, &v), -1);
    PQclear(r);
}
END_TEST

/* ---- a good configuration ---- */

START_TEST(test_config_good)
{
    write_file("pw", "pw\n");
    struct err e;
    struct sources *s = load(SRC "    host: 127.0.0.1\n    port: 5432\n    user: qrel\n"
                                 "    password_file: @T/pw\n    sslmode: disable\n"
                                 "    outboxes:\n"
                                 "      - table: app.outbox\n"
                                 "        created_at_column: created_at\n"
                                 "        published_at_column: published_at\n"
                                 "      - table: events\n"
                                 "        name: events-out\n"
                                 "        created_at_column: ts\n"
                                 "        status_column: state\n"
                                 "        pending_value: new\n",
                             &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    struct collector *c = sources_find(s, "db");
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->kind->name, "postgres");
    ck_assert_ptr_nonnull(c->kind->check);
    sources_free(s);
}
END_TEST

/* ---- against a real server (PGTEST_PORT) ---- */

static struct pg_params live_params;
static int live_port(void)
{
    const char *p = getenv("PGTEST_PORT");
    return p && *p ? (int)strtol(p, NULL, 10) : 0;
}

static struct pg_conn *live_connect(double seconds)
{
    memset(&live_params, 0, sizeof live_params);
    live_params.host = "127.0.0.1";
    live_params.port = (char *)getenv("PGTEST_PORT");
    live_params.user = "postgres";
    live_params.dbname = "postgres";
    live_params.label = "127.0.0.1:test/postgres";
    struct deadline dl = deadline_in(seconds);
    struct err e;
    err_clear(&e);
    struct pg_conn *c = pg_connect(&live_params, "live", &dl, &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    return c;
}

static char *live_value(struct pg_conn *c, const char *sql)
{
    struct deadline dl = deadline_in(5);
    struct err e;
    PGresult *r = NULL;
    ck_assert_msg(pg_query(c, &dl, "test", sql, 0, NULL, &r, &e) == 0, "%s", e.msg);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

#define LIVE_OR_SKIP()                                                                             \
    do {                                                                                           \
        if (!live_port()) {                                                                        \
            fprintf(stderr,                                                                        \
                    "SKIPPED %s: set PGTEST_PORT to run it against a real server "                 \
                    "(tests/integration/postgres.sh does)\n",                                      \
                    __func__);                                                                     \
            return;                                                                                \
        }                                                                                          \
    } while (0)

START_TEST(test_live_session)
{
    LIVE_OR_SKIP();
    struct pg_conn *c = live_connect(5);
    check_str_free(live_value(c, "SHOW default_transaction_read_only"), "on");
    check_str_free(live_value(c, "SELECT application_name FROM pg_stat_activity WHERE pid = "
                                 "pg_backend_pid()"),
                   "qrel");
    check_str_free(live_value(c, "SHOW client_encoding"), "UTF8");
    /* nothing asked for GSSAPI: libpq did not look for a Kerberos credential cache */
    PQconninfoOption *opts = PQconninfo(pg_raw(c));
    const char *gss = NULL;
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "gssencmode") == 0)
            gss = o->val;
    ck_assert_str_eq(gss ? gss : "(unset)", "disable");
    PQconninfoFree(opts);
    /* statement_timeout follows the deadline: about 5 s here */
    char *v = live_value(c, "SELECT setting FROM pg_settings WHERE name = 'statement_timeout'");
    long ms = strtol(v, NULL, 10);
    ck_assert_msg(ms > 4000 && ms <= 5100, "statement_timeout %ld", ms);
    free(v);

    /* writing is refused by the server: read-only transaction (SQLSTATE 25006) */
    struct deadline dl = deadline_in(5);
    struct err e;
    PGresult *r = NULL;
    ck_assert_int_eq(
        pg_query(c, &dl, "write", "CREATE TABLE qrel_must_not_exist (x int)", 0, NULL, &r, &e), -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: write: cannot execute "
                            "CREATE TABLE in a read-only transaction");
    /* the connection is still good after a query error */
    check_str_free(live_value(c, "SELECT 1"), "1");

    /* parameters */
    const char *params[2] = {"4", "it's"};
    ck_assert_msg(pg_query(c, &dl, "params", "SELECT $1::int * 2, length($2)", 2, params, &r, &e) ==
                      0,
                  "%s", e.msg);
    double d;
    ck_assert_int_eq(pg_cell_double(r, 0, 0, &d), 0);
    ck_assert_double_eq(d, 8);
    PQclear(r);

    /* an undefined column names it */
    ck_assert_int_eq(pg_query(c, &dl, "outbox \"o\"", "SELECT nope FROM pg_class", 0, NULL, &r, &e),
                     -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: outbox \"o\": column "
                            "\"nope\" does not exist");
    check_str_free(pg_ident(c, "we\"ird"), "\"we\"\"ird\"");
    pg_close(c);
}
END_TEST

START_TEST(test_live_checks)
{
    LIVE_OR_SKIP();
    struct pg_conn *c = live_connect(5);
    struct deadline dl = deadline_in(5);
    struct err e;
    /* pg_catalog.pg_class: relname is a name, relpages an integer, no timestamp column */
    struct pg_column ok[] = {{"relname", PG_COL_ANY}, {"relpages", PG_COL_NUMBER}};
    ck_assert_msg(pg_check_columns(c, &dl, "t", "pg_catalog.pg_class", ok, 2, &e) == 0, "%s",
                  e.msg);
    struct pg_column missing[] = {{"relname", PG_COL_ANY}, {"created_at", PG_COL_TIME}};
    ck_assert_int_eq(pg_check_columns(c, &dl, "outbox \"x\"", "pg_class", missing, 2, &e), -1);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: outbox \"x\": column "
                            "\"created_at\" does not exist in table \"pg_class\"");
    struct pg_column wrong[] = {{"relname", PG_COL_TIME}};
    ck_assert_int_eq(pg_check_columns(c, &dl, "w", "pg_class", wrong, 1, &e), -1);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: w: column \"relname\" of "
                            "table \"pg_class\" is name, want a timestamp (timestamptz, "
                            "timestamp or date)");
    ck_assert_int_eq(pg_check_columns(c, &dl, "w", "no_such_schema.t", ok, 1, &e), -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: w: table "
                            "\"no_such_schema.t\" does not exist");
    pg_close(c);
}
END_TEST

START_TEST(test_live_deadline)
{
    LIVE_OR_SKIP();
    struct pg_conn *c = live_connect(5);
    struct deadline dl = deadline_in(0.3);
    int64_t t0 = deadline_now_ms();
    struct err e;
    PGresult *r = NULL;
    ck_assert_int_eq(pg_query(c, &dl, "sleep", "SELECT pg_sleep(5)", 0, NULL, &r, &e), -1);
    int64_t took = deadline_now_ms() - t0;
    ck_assert_int_eq(e.code, ERR_TIMEOUT);
    ck_assert_msg(took >= 250 && took < 600, "took %lld ms", (long long)took);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(e.msg, "postgres \"live\" 127.0.0.1:test/postgres: sleep: no answer within "
                            "the deadline; query cancelled");
    /* abandoned after the cancel: further queries fail at once */
    dl = deadline_in(1);
    ck_assert_int_eq(pg_query(c, &dl, "after", "SELECT 1", 0, NULL, &r, &e), -1);
    ck_assert_int_eq(e.code, ERR_CONNECT);
    pg_close(c);

    /* a deadline already past: no connection attempt */
    dl = deadline_in(0);
    ck_assert_ptr_null(pg_connect(&live_params, "live", &dl, &e));
    ck_assert_int_eq(e.code, ERR_TIMEOUT);
}
END_TEST

START_TEST(test_live_refused)
{
    LIVE_OR_SKIP();
    struct pg_params p = {.host = "127.0.0.1",
                          .port = "1",
                          .user = "postgres",
                          .password = "pw-never-shown",
                          .label = "127.0.0.1:1/postgres"};
    struct deadline dl = deadline_in(2);
    struct err e;
    ck_assert_ptr_null(pg_connect(&p, "down", &dl, &e));
    ck_assert_int_eq(e.code, ERR_CONNECT);
    ck_assert_msg(strncmp(e.msg, "postgres \"down\" 127.0.0.1:1/postgres: connect: ", 47) == 0,
                  "%s", e.msg);
    ck_assert_ptr_null(strstr(e.msg, "pw-never-shown"));
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *pg_suite(void)
{
    Suite *s = suite_create("pg");
    TCase *tc = tcase_create("configure");
    tcase_add_checked_fixture(tc, setup_tmpdir, teardown_tmpdir);
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_loop_test(tc, test_labels, 0, N(labels));
    tcase_add_test(tc, test_secrets_read);
    tcase_add_loop_test(tc, test_gss_default, 0, N(gss_cases));
    tcase_add_test(tc, test_config_good);
    suite_add_tcase(s, tc);

    tc = tcase_create("pure");
    tcase_add_loop_test(tc, test_scrub, 0, N(scrubs));
    tcase_add_test(tc, test_scrub_edges);
    tcase_add_loop_test(tc, test_table_sql, 0, N(tables));
    tcase_add_test(tc, test_quote_ident);
    tcase_add_test(tc, test_cell_double);
    suite_add_tcase(s, tc);

    tc = tcase_create("live");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_live_session);
    tcase_add_test(tc, test_live_checks);
    tcase_add_test(tc, test_live_deadline);
    tcase_add_test(tc, test_live_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(pg_suite(), CK_ENV);
}
