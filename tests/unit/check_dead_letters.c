/* check_dead_letters.c: unit tests for the dead-letter join: the `dead_letters:` list as the core
 * loads it (exporter/dead_letters.c), the split it computes, the broker side of redis_stream
 * (the ids of an XRANGE reply) and the work-table side of postgres (ids in the id column's
 * canonical form, the array parameter, the statement).
 *
 * Configurations go through sources_load_string as the exporter loads a file, with exact
 * "file:line:col" messages, since they are what a user reads. The pure parts are fed what they
 * meet in practice: an XRANGE reply in the shape of the demo's dead-letter stream (recorded from
 * redis-server 7.0.15), ids spelt the ways producers spell them, and identifiers that need
 * quoting. Talking to Redis, Kafka and PostgreSQL is left to
 * tests/integration/dead_letters.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis.h>

#include "collector.h"
#include "dead_letters.h"
#include "dlq.h"
#include "postgres/work_table.h"
#include "redis_stream/redis_stream.h"
#include "sources.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"

static redisReply *resp(const char *raw, size_t len)
{
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    ck_assert_int_eq(redisReaderFeed(rd, raw, len), REDIS_OK);
    ck_assert_int_eq(redisReaderGetReply(rd, &reply), REDIS_OK);
    ck_assert_msg(reply != NULL, "incomplete RESP in the test: %s", raw);
    redisReaderFree(rd);
    return reply;
}
#define RESP(s) resp(s, sizeof(s) - 1)

/* ---- the dead_letters list, loaded as a file is ---- */

static int load_text(const char *text, struct err *e)
{
    err_clear(e);
    struct sources *s = sources_load_string("x.yml", text, e);
    sources_free(s);
    return s ? 0 : -1;
}

/* A redis_stream source with a named stream and a pattern, a postgres source, then the list. */
#define SOURCES                                                                                    \
    "sources:\n"                                                                                   \
    "  - name: cache\n    kind: redis_stream\n    address: h:1\n    streams:\n"                    \
    "      - name: orders\n        dead_letter_stream: orders.dlq\n"                               \
    "      - pattern: \"jobs:*\"\n        dead_letter_stream: \"{stream}.dlq\"\n"                  \
    "      - name: plain\n"                                                                        \
    "  - name: shop\n    kind: postgres\n    host: 127.0.0.1\n"                                    \
    "    claim_tables: [{table: claims, id_column: order_id, claimed_at_column: claimed_at,\n"     \
    "                    done_at_column: sent_at, in_flight_window: 5m}]\n"
/* Lines 1 to 15 are SOURCES; the list opens on line 16, its first entry on line 17. */
#define DL "dead_letters:\n"
#define ENTRY "  - source: cache\n    queue: orders\n    id_field: order\n"
#define WT "    work_table:\n      source: shop\n      table: claims\n      id_column: order_id\n"

static const struct check_case bad_configs[] = {
    {SOURCES DL "  - source: nope\n    queue: orders\n    id_field: order\n" WT,
     "x.yml:17:13: source: no source \"nope\" in this file (sources: cache, shop)"},
    {SOURCES DL ENTRY "    work_table:\n      source: cache\n      table: t\n      id_column: a\n",
     "x.yml:21:15: source: \"cache\" is a redis_stream source; want a source that can tell which "
     "ids are done (of kind postgres)"},
    {SOURCES DL ENTRY "    work_table:\n      source: gone\n      table: t\n      id_column: a\n",
     "x.yml:21:15: source: no source \"gone\" in this file (sources: cache, shop)"},
    {SOURCES DL "  - source: cache\n    queue: ordres\n    id_field: order\n" WT,
     "x.yml:18:12: queue: source \"cache\" watches no stream \"ordres\" (by name or pattern)"},
    {SOURCES DL "  - source: cache\n    queue: plain\n    id_field: order\n" WT,
     "x.yml:18:12: queue: stream \"plain\" of source \"cache\" has no dead_letter_stream"},
    {SOURCES DL ENTRY WT ENTRY WT,
     "x.yml:25:12: queue: \"orders\" of source \"cache\" is listed twice in dead_letters"},
    {SOURCES DL "  - source: cache\n    queue: orders\n" WT,
     "x.yml:17:5: missing required key \"id_field\" in this mapping"},
    {SOURCES DL ENTRY, "x.yml:17:5: missing required key \"work_table\" in this mapping"},
    {SOURCES DL ENTRY "    work_table:\n      source: shop\n      id_column: a\n",
     "x.yml:21:7: missing required key \"table\" in this mapping"},
    /* A misspelt key is what the user must see, before anything missing or wrong. */
    {SOURCES DL "  - source: nope\n    queue: orders\n    id_feld: order\n" WT,
     "x.yml:19:5: unknown key \"id_feld\" in entry 1 of dead_letters (known keys: id_field, "
     "max_entries, queue, source, work_table)"},
    {SOURCES DL ENTRY WT "      done: sent_at\n",
     "x.yml:24:7: unknown key \"done\" in work_table of entry 1 of dead_letters (known keys: "
     "done_column, id_column, source, table)"},
    {SOURCES DL ENTRY WT "      done_column: order_id\n",
     "x.yml:24:20: done_column: want a column other than id_column (\"order_id\")"},
    {SOURCES DL ENTRY "    work_table:\n      source: shop\n      table: a.b.c\n"
                      "      id_column: a\n",
     "x.yml:22:14: table: want \"table\" or \"schema.table\", got \"a.b.c\""},
    {SOURCES DL ENTRY "    max_entries: 0\n" WT,
     "x.yml:20:18: max_entries: want an integer from 1 to 1000000, got \"0\""},
    {SOURCES DL "  - source: cache\n    queue: \"\"\n    id_field: order\n" WT,
     "x.yml:18:12: queue: want a non-empty string"},
    {SOURCES DL "  - cache\n", "x.yml:17:5: each entry of dead_letters: want a mapping, got a "
                               "string"},
    {SOURCES "dead_letters: {source: cache}\n",
     "x.yml:16:15: dead_letters: want a list, got a mapping"},
};

START_TEST(test_config_bad)
{
    struct err e;
    check_refused(load_text(bad_configs[_i].in, &e), &e, bad_configs[_i].want);
}
END_TEST

/* The block of earlier releases: refused where it stands, with the new form filled in from the
 * block's own values, so that the upgrade is a copy-paste; no secret of the block is quoted. */
/* A postgres source is a broker only for the job runners qrel dlq reads (any preset of its queues
 * but pgmq); one without such an entry says so, where the queue is named. */
START_TEST(test_config_not_a_broker)
{
    struct err e;
    ck_assert_int_eq(
        load_text(SOURCES DL "  - source: shop\n    queue: orders\n    id_field: order\n" WT, &e),
        -1);
    ck_assert_str_eq(e.msg, "x.yml:18:12: queue: no job runner's entry of queues of source "
                            "\"shop\" watches queue \"orders\" (qrel dlq reads the job runners' "
                            "presets, not pgmq or delayed_job)");
}
END_TEST

START_TEST(test_config_migration)
{
    struct err e;
    const char *text =
        "sources:\n  - name: cache\n    kind: redis_stream\n    address: h:1\n    streams:\n"
        "      - name: orders\n        dead_letter_stream: orders.dlq\n"
        "        dead_letter_classify:\n"
        "          dsn_env: QREL_TEST_DSN\n          table: confirmation_claims\n"
        "          id_column: order_id\n          done_column: sent_at\n"
        "          id_field: order\n          max_entries: 500\n";
    setenv("QREL_TEST_DSN", "postgresql://qrel:hunter2@db/shop", 1);
    ck_assert_int_eq(load_text(text, &e), -1);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    ck_assert_str_eq(e.msg,
                     "x.yml:9:11: dead_letter_classify: moved to the top level, reading the table "
                     "through a postgres source of this file: dead_letters: [{source: cache, "
                     "queue: orders, id_field: order, max_entries: 500, work_table: {source: "
                     "<postgres source>, table: confirmation_claims, id_column: order_id, "
                     "done_column: sent_at}}]");
    ck_assert_ptr_null(strstr(e.msg, "hunter2"));
    /* Without a done column or a cap, and on a pattern: only what the block had. */
    const char *pat =
        "sources:\n  - name: cache\n    kind: redis_stream\n    address: h:1\n    streams:\n"
        "      - pattern: \"jobs:*\"\n        dead_letter_stream: dlq\n"
        "        dead_letter_classify: {host: h, table: t, id_column: a, id_field: b}\n";
    ck_assert_int_eq(load_text(pat, &e), -1);
    ck_assert_str_eq(e.msg,
                     "x.yml:8:31: dead_letter_classify: moved to the top level, reading the table "
                     "through a postgres source of this file: dead_letters: [{source: cache, "
                     "queue: <a stream of the pattern>, id_field: b, work_table: {source: "
                     "<postgres source>, table: t, id_column: a}}]");
    unsetenv("QREL_TEST_DSN");
}
END_TEST

START_TEST(test_config_good)
{
    struct err e;
    const char *text = SOURCES DL ENTRY WT "      done_column: sent_at\n"
                                           "  - source: cache\n    queue: \"jobs:mail\"\n"
                                           "    id_field: job\n    max_entries: 3\n"
                                           "    work_table: {source: shop, table: app.handled, "
                                           "id_column: job_id}\n";
    struct sources *s = sources_load_string("x.yml", text, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_uint_eq(s->dead_letters.n, 2);
    const struct dead_letter_join *j = &s->dead_letters.v[0];
    ck_assert_str_eq(j->broker->name, "cache");
    ck_assert_str_eq(j->work->name, "shop");
    ck_assert_str_eq(j->queue, "orders");
    ck_assert_str_eq(j->id_field, "order");
    ck_assert_uint_eq(j->max_entries, DEAD_LETTERS_DEFAULT_MAX_ENTRIES);
    j = &s->dead_letters.v[1];
    ck_assert_str_eq(j->queue, "jobs:mail"); /* found through the pattern */
    ck_assert_uint_eq(j->max_entries, 3);
    sources_free(s);
    /* The list may come before the sources it names. */
    s = sources_load_string("x.yml", DL ENTRY WT SOURCES, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_uint_eq(s->dead_letters.n, 1);
    sources_free(s);
}
END_TEST

/* ---- the split ---- */

START_TEST(test_split)
{
    struct dead_letter_read r = {0};
    dead_letter_read_add(&r, "1", 1);
    dead_letter_read_add(&r, "2", 1);
    dead_letter_read_add(&r, "1", 1);
    dead_letter_read_add(&r, "abc", 3);
    dead_letter_read_add(&r, NULL, 0);   /* no id field */
    dead_letter_read_add(&r, "", 0);     /* an empty one */
    dead_letter_read_add(&r, "a\0b", 3); /* a NUL byte */
    r.total = 10;                        /* three more than read */
    ck_assert_uint_eq(r.read, 7);
    ck_assert_uint_eq(r.nids, 4);
    ck_assert_uint_eq(r.without_id, 3);
    enum dead_letter_work work[4] = {DL_WORK_DONE, DL_WORK_NOT_DONE, DL_WORK_DONE, DL_WORK_UNKNOWN};
    struct dead_letter_split sp;
    dead_letter_split_of(&r, work, &sp);
    ck_assert_double_eq(sp.done, 2);
    ck_assert_double_eq(sp.not_done, 1);
    ck_assert_double_eq(sp.unknown, 1 + 3 + 3);
    /* A total below what was read (added between two reads) adds nothing. */
    r.total = 0;
    dead_letter_split_of(&r, work, &sp);
    ck_assert_double_eq(sp.unknown, 1 + 3);
    dead_letter_read_free(&r);
    ck_assert_uint_eq(r.nids, 0);
    ck_assert_ptr_null(r.ids);
}
END_TEST

/* ---- ids ---- */

static const struct {
    const char *typname;
    const char *id;
    const char *want; /* NULL: refused */
} ids[] = {
    {"int8", "42", "42"},
    {"int8", "0003", "3"},
    {"int8", "+7", "7"},
    {"int8", " 7 ", "7"},
    {"int8", "-0", "0"},
    {"int8", "-12", "-12"},
    {"int8", "9223372036854775807", "9223372036854775807"},
    {"int8", "-9223372036854775808", "-9223372036854775808"},
    {"int8", "9223372036854775808", NULL},
    {"int8", "99999999999999999999999", NULL},
    {"int4", "2147483647", "2147483647"},
    {"int4", "2147483648", NULL},
    {"int4", "-2147483648", "-2147483648"},
    {"int2", "32768", NULL},
    {"int8", "abc", NULL},
    {"int8", "1.5", NULL},
    {"int8", "-", NULL},
    {"int8", "1 2", NULL},
    {"int8", "", NULL},
    {"uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {"uuid", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {"uuid", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {"uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", NULL},
    {"uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", NULL},
    {"uuid", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {"uuid", "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {"uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-", NULL},
    {"uuid", "a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {"uuid", "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {"text", "Order 7 ", "Order 7 "},
    {"text", "caf\xc3\xa9", "caf\xc3\xa9"},
    {"text", "caf\xe9", NULL},          /* Latin-1, not UTF-8 */
    {"text", "\xc0\xaf", NULL},         /* overlong '/' */
    {"text", "\xed\xa0\x80", NULL},     /* a surrogate */
    {"text", "\xf4\x90\x80\x80", NULL}, /* above U+10FFFF */
    {"text", "\xe2\x82", NULL},         /* cut short */
    {"bpchar", "ab  ", "ab"},
    {"int8", "\v6\f", "6"}, /* the server's isspace() */
    /* numeric: what PostgreSQL 15's numeric input takes, passed as it is (the server compares) */
    {"numeric", "2.0", "2.0"},
    {"numeric", "02", "02"},
    {"numeric", " 6", " 6"},
    {"numeric", "8e0", "8e0"},
    {"numeric", "8E+1", "8E+1"},
    {"numeric", "8e 1", "8e 1"}, /* the exponent is read by strtol: spaces and a sign */
    {"numeric", "-.5", "-.5"},
    {"numeric", "5.", "5."},
    {"numeric", "1e-1000", "1e-1000"},
    {"numeric", " NaN ", " NaN "},
    {"numeric", "-Infinity", "-Infinity"},
    {"numeric", "inf", "inf"},
    {"numeric", "1e20", "1e20"}, /* beyond numeric(12,2): still a number, compared as numeric */
    {"numeric", "abc", NULL},
    {"numeric", ".", NULL},
    {"numeric", "1e", NULL},
    {"numeric", "1e+", NULL},
    {"numeric", "1.2.3", NULL},
    {"numeric", "1_000", NULL},
    {"numeric", "0x10", NULL},
    {"numeric", "+NaN", NULL},
    {"numeric", "infinit", NULL},
    {"numeric", "1e1001", NULL}, /* an exponent beyond 1000: never an id (kept below the limits) */
    {"numeric", "6 x", NULL},
    {"numeric", "--1", NULL},
    /* citext and varchar: any text, compared by the server (case-insensitively for citext) */
    {"citext", "Order-A", "Order-A"},
    {"citext", "\xff", NULL},
    {"varchar", "abcdefghij", "abcdefghij"},
    /* name: longer than 63 bytes would be cut by the server and could match another row */
    {"name", "123456789012345678901234567890123456789012345678901234567890123",
     "123456789012345678901234567890123456789012345678901234567890123"},
    {"name", "1234567890123456789012345678901234567890123456789012345678901234", NULL},
    /* a type qrel cannot compare ids with: every id unknown */
    {"float8", "1", NULL},
    {"jsonb", "1", NULL},
};

START_TEST(test_id_canonical)
{
    char out[128];
    long n = work_table_id_canonical(work_table_id_kind_of(ids[_i].typname), ids[_i].typname,
                                     ids[_i].id, strlen(ids[_i].id), out, sizeof out);
    if (!ids[_i].want) {
        ck_assert_msg(n == -1, "%s: want refused, got \"%s\"", ids[_i].id, out);
        return;
    }
    ck_assert_msg(n >= 0, "%s: refused", ids[_i].id);
    ck_assert_str_eq(out, ids[_i].want);
    ck_assert_int_eq(n, (long)strlen(ids[_i].want));
}
END_TEST

START_TEST(test_id_limits)
{
    char out[8], big[1100];
    /* Does not fit the caller's buffer: refused, nothing overrun. */
    ck_assert_int_eq(work_table_id_canonical(WT_ID_TEXT, "text", "12345678", 8, out, sizeof out),
                     -1);
    ck_assert_int_eq(work_table_id_canonical(WT_ID_TEXT, "text", "1234567", 7, out, sizeof out), 7);
    /* A NUL byte inside the given length. */
    ck_assert_int_eq(work_table_id_canonical(WT_ID_TEXT, "text", "a\0b", 3, out, sizeof out), -1);
    /* Longer than 1024 bytes: not an id. */
    memset(big, 'x', sizeof big);
    char *o = malloc(2048);
    ck_assert_int_eq(work_table_id_canonical(WT_ID_TEXT, "text", big, 1024, o, 2048), 1024);
    ck_assert_int_eq(work_table_id_canonical(WT_ID_TEXT, "text", big, 1025, o, 2048), -1);
    free(o);
    ck_assert_int_eq(work_table_id_kind_of("int8"), WT_ID_INT);
    ck_assert_int_eq(work_table_id_kind_of("int2"), WT_ID_INT);
    ck_assert_int_eq(work_table_id_kind_of("uuid"), WT_ID_UUID);
    ck_assert_int_eq(work_table_id_kind_of("varchar"), WT_ID_TEXT);
    ck_assert_int_eq(work_table_id_kind_of("bpchar"), WT_ID_BPCHAR);
    ck_assert_int_eq(work_table_id_kind_of("numeric"), WT_ID_NUMERIC);
    ck_assert_int_eq(work_table_id_kind_of("citext"), WT_ID_TEXT);
    ck_assert_int_eq(work_table_id_kind_of("float8"), WT_ID_UNSUPPORTED);
    ck_assert_int_eq(work_table_id_kind_of("my_domain"), WT_ID_UNSUPPORTED);
}
END_TEST

START_TEST(test_text_array)
{
    const char *v[] = {"1", "a\"b", "c\\d", "e,f}", ""};
    check_str_free(pg_text_array(v, 5), "{\"1\",\"a\\\"b\",\"c\\\\d\",\"e,f}\",\"\"}");
    check_str_free(pg_text_array(NULL, 0), "{}");
}
END_TEST

START_TEST(test_sql)
{
    check_str_free(
        work_table_sql("confirmation_claims", "order_id", "sent_at", "pg_catalog", "numeric"),
        "SELECT i.n, bool_or(w.\"sent_at\" IS NOT NULL) FROM unnest($1::text[]) WITH ORDINALITY "
        "AS i(id, n) JOIN \"confirmation_claims\" AS w ON w.\"order_id\" "
        "OPERATOR(\"pg_catalog\".=) i.id::\"pg_catalog\".\"numeric\" GROUP BY i.n");
    check_str_free(work_table_sql("app.Handled \"x\"", "id", NULL, "ext s", "citext"),
                   "SELECT i.n, bool_or(true) FROM unnest($1::text[]) WITH ORDINALITY AS i(id, n) "
                   "JOIN \"app\".\"Handled \"\"x\"\"\" AS w ON w.\"id\" OPERATOR(\"ext s\".=) "
                   "i.id::\"ext s\".\"citext\" GROUP BY i.n");
    ck_assert_ptr_null(work_table_sql("a.b.c", "id", NULL, "pg_catalog", "text"));
}
END_TEST

/* ---- the ids of a dead-letter stream (redis_stream) ---- */

/* XRANGE orders.dlq - + COUNT 10 of the demo's dead-letter stream (fields id, order, deliveries,
 * reason), with an entry without `order` and one with an empty value added by hand. */
static const char xrange_dlq[] =
    "*4\r\n"
    "*2\r\n$15\r\n1795959044100-0\r\n*8\r\n$2\r\nid\r\n$15\r\n1795959010000-0\r\n"
    "$5\r\norder\r\n$2\r\n17\r\n$10\r\ndeliveries\r\n$1\r\n4\r\n$6\r\nreason\r\n"
    "$14\r\nmax_deliveries\r\n"
    "*2\r\n$15\r\n1795959044200-0\r\n*4\r\n$5\r\norder\r\n$3\r\n018\r\n$5\r\norder\r\n$2\r\n99\r\n"
    "*2\r\n$15\r\n1795959044300-0\r\n*2\r\n$6\r\nreason\r\n$1\r\nx\r\n"
    "*2\r\n$15\r\n1795959044400-0\r\n*2\r\n$5\r\norder\r\n$0\r\n\r\n";

START_TEST(test_tally)
{
    struct dead_letter_read t = {0};
    struct err e = {0};
    redisReply *r = RESP(xrange_dlq);
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 4);
    ck_assert_uint_eq(t.without_id, 2);
    ck_assert_uint_eq(t.nids, 2);
    ck_assert_str_eq(t.ids[0], "17");
    ck_assert_str_eq(t.ids[1], "018"); /* the first field of that name counts */

    /* A value with a NUL byte cannot be passed on as text: counted without an id. */
    r = RESP("*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$5\r\norder\r\n$3\r\na\0b\r\n");
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 5);
    ck_assert_uint_eq(t.without_id, 3);
    ck_assert_uint_eq(t.nids, 2);

    r = RESP("*0\r\n");
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 5);
    dead_letter_read_free(&t);
    ck_assert_uint_eq(t.nids, 0);
}
END_TEST

START_TEST(test_tally_bad)
{
    struct dead_letter_read t = {0};
    struct err e = {0};
    redisReply *r = RESP("$-1\r\n");
    check_failed(redis_stream_dead_letter_ids(r, "order", &t, &e), &e, ERR_PROTOCOL,
                 "want an array of entries, got nil");
    freeReplyObject(r);
    r = RESP("*1\r\n*1\r\n$3\r\n1-1\r\n");
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), -1);
    ck_assert_str_eq(e.msg, "entry 1: want [id, fields], got another number of elements");
    freeReplyObject(r);
    r = RESP("*2\r\n*2\r\n$3\r\n1-1\r\n*0\r\n:5\r\n");
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), -1);
    ck_assert_str_eq(e.msg, "entry 2: want [id, fields], got integer");
    freeReplyObject(r);
    dead_letter_read_free(&t);
}
END_TEST

/* `qrel dlq`'s reading of the same entries: every field kept, in order, for the requeue; the id,
 * the delivery count and the time each entry carries. */
START_TEST(test_dlq_entry)
{
    struct err e = {0};
    redisReply *r = RESP(xrange_dlq);
    struct dlq_batch b = {0};
    for (size_t i = 0; i < r->elements; i++)
        ck_assert_int_eq(redis_stream_dlq_entry(r->element[i], "order", dlq_batch_push(&b), &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(b.n, 4);
    const struct dlq_message *m = &b.v[0];
    ck_assert_str_eq(m->message_id, "1795959044100-0");
    ck_assert_str_eq(m->work_id, "17");
    ck_assert_int_eq(m->deliveries, 4);
    ck_assert(m->dead_since == 1795959044.1); /* the entry id's time: no dead_since field */
    const struct redis_stream_fields *f = m->kind_data;
    ck_assert_uint_eq(f->n, 8);
    ck_assert_str_eq(f->v[0], "id");
    ck_assert_str_eq(f->v[7], "max_deliveries");
    ck_assert_uint_eq(m->body_bytes, 15 + 2 + 1 + 14);
    ck_assert_str_eq(b.v[1].work_id, "018"); /* the first field of that name counts */
    ck_assert_int_eq(b.v[1].deliveries, -1);
    ck_assert_ptr_null(b.v[2].work_id);
    ck_assert_ptr_null(b.v[3].work_id); /* empty */
    dlq_batch_free(&b, collector_kind_find("redis_stream")->dlq);

    /* dead_since as unix seconds or RFC 3339; a NUL byte in a value is kept for the requeue. */
    r = RESP("*2\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$10\r\ndead_since\r\n$12\r\n1700000000.5\r\n"
             "$1\r\nk\r\n$3\r\na\0b\r\n"
             "*2\r\n$3\r\n2-1\r\n*2\r\n$10\r\ndead_since\r\n$20\r\n2023-11-14T22:13:20Z\r\n");
    for (size_t i = 0; i < r->elements; i++)
        ck_assert_int_eq(redis_stream_dlq_entry(r->element[i], "order", dlq_batch_push(&b), &e), 0);
    freeReplyObject(r);
    ck_assert(b.v[0].dead_since == 1700000000.5);
    ck_assert(b.v[1].dead_since == 1700000000.0);
    f = b.v[0].kind_data;
    ck_assert_uint_eq(f->len[3], 3);
    ck_assert_int_eq(memcmp(f->v[3], "a\0b", 3), 0);
    dlq_batch_free(&b, collector_kind_find("redis_stream")->dlq);

    /* Times no dead letter carries (before 2000, not finite) are unknown, 0, not 1970: the id
     * 1-1 a writer chose, a dead_since of 5 or inf over a real id (the id's time then). */
    r = RESP("*3\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
             "*2\r\n$15\r\n1700000000000-0\r\n*2\r\n$10\r\ndead_since\r\n$1\r\n5\r\n"
             "*2\r\n$15\r\n1700000000000-1\r\n*2\r\n$10\r\ndead_since\r\n$3\r\ninf\r\n");
    for (size_t i = 0; i < r->elements; i++)
        ck_assert_int_eq(redis_stream_dlq_entry(r->element[i], "order", dlq_batch_push(&b), &e), 0);
    freeReplyObject(r);
    ck_assert(b.v[0].dead_since == 0);
    ck_assert(b.v[1].dead_since == 1700000000.0);
    ck_assert(b.v[2].dead_since == 1700000000.0);
    dlq_batch_free(&b, collector_kind_find("redis_stream")->dlq);

    /* The replay stamp: none is 0, a count is the count, anything else unknown (-1). */
    r = RESP("*3\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
             "*2\r\n$3\r\n1-2\r\n*2\r\n$13\r\nqrel-replayed\r\n$1\r\n2\r\n"
             "*2\r\n$3\r\n1-3\r\n*2\r\n$13\r\nqrel-replayed\r\n$2\r\n-1\r\n");
    for (size_t i = 0; i < r->elements; i++)
        ck_assert_int_eq(redis_stream_dlq_entry(r->element[i], "order", dlq_batch_push(&b), &e), 0);
    /* the exporter's read of the same entries counts them by stamp: never 1, poison 1 (the
     * unreadable one in none) */
    struct dead_letter_read t = {0};
    ck_assert_int_eq(redis_stream_dead_letter_ids(r, "order", &t, &e), 0);
    ck_assert(t.stamps && t.replays[0] == 1 && t.replays[1] == 0 && t.replays[2] == 1);
    dead_letter_read_free(&t);
    freeReplyObject(r);
    ck_assert_int_eq(b.v[0].replays, 0);
    ck_assert_int_eq(b.v[1].replays, 2);
    ck_assert_int_eq(b.v[2].replays, -1);
    dlq_batch_free(&b, collector_kind_find("redis_stream")->dlq);

    /* Another shape: refused. */
    r = RESP("*2\r\n$3\r\n1-1\r\n*1\r\n$5\r\norder\r\n");
    ck_assert_int_eq(redis_stream_dlq_entry(r, "order", dlq_batch_push(&b), &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    freeReplyObject(r);
    dlq_batch_free(&b, collector_kind_find("redis_stream")->dlq);
}
END_TEST

/* `qrel dlq` finds its entry among the file's, or says which there are. */
START_TEST(test_dlq_find)
{
    struct err e = {0};
    struct sources *s = sources_load_string("x.yml", SOURCES DL ENTRY WT, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    struct dead_letter_join *j = NULL;
    ck_assert_int_eq(dlq_find(s, "cache", "orders", &j, &e), 0);
    ck_assert_ptr_eq(j, &s->dead_letters.v[0]);
    ck_assert_int_eq(dlq_find(s, "cache", "jobs", &j, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml: no dead_letters entry for source \"cache\" and queue \"jobs\" "
                            "(entries: --source=cache --queue=orders)");
    sources_free(s);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *dead_letters_suite(void)
{
    Suite *s = suite_create("dead_letters");
    TCase *tc = tcase_create("configure");
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_test(tc, test_config_not_a_broker);
    tcase_add_test(tc, test_config_migration);
    tcase_add_test(tc, test_config_good);
    suite_add_tcase(s, tc);
    tc = tcase_create("pure");
    tcase_add_test(tc, test_split);
    tcase_add_loop_test(tc, test_id_canonical, 0, N(ids));
    tcase_add_test(tc, test_id_limits);
    tcase_add_test(tc, test_text_array);
    tcase_add_test(tc, test_sql);
    tcase_add_test(tc, test_tally);
    tcase_add_test(tc, test_tally_bad);
    tcase_add_test(tc, test_dlq_entry);
    tcase_add_test(tc, test_dlq_find);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(dead_letters_suite(), CK_ENV);
}
