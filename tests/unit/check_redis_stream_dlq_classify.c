/* check_redis_stream/dlq_classify.c: unit tests for collectors/redis_stream/dlq_classify.c, the
 * dead_letter_classify block of a redis_stream entry.
 *
 * The block's configuration goes through the redis_stream kind's configure() as the core runs
 * it, with exact "file:line:col" messages, since they are what a user reads. The pure parts are
 * fed what they meet in practice: an XRANGE reply in the shape of the demo's dead-letter stream
 * (recorded from redis-server 7.0.15), ids spelt the ways producers spell them, and identifiers
 * that need quoting. Talking to Redis and PostgreSQL is left to
 * tests/integration/dead_letter_classify.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis.h>

#include "collector.h"
#include "config.h"
#include "redis_stream/dlq_classify.h"
#include "kind_config.h"

extern const struct collector_kind redis_stream_kind;

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

/* ---- configure() ---- */

static int configure_text(const char *text, struct err *e)
{
    return configure_kind_text(&redis_stream_kind, text, e);
}

#define SRC                                                                                        \
    "sources:\n  - name: cache\n    kind: redis_stream\n    address: h:1\n    streams:\n"          \
    "      - name: orders\n"
#define DLQ "        dead_letter_stream: orders.dlq\n"
#define BLOCK "        dead_letter_classify:\n"
/* Everything a good block needs, after the line that opens it. */
#define GOOD_KEYS                                                                                  \
    "          host: 127.0.0.1\n          table: claims\n          id_column: order_id\n"          \
    "          id_field: order\n"

static const struct {
    const char *text;
    const char *msg;
} bad_configs[] = {
    {SRC BLOCK GOOD_KEYS,
     "x.yml:8:11: dead_letter_classify: needs dead_letter_stream (the stream whose entries it "
     "classifies)"},
    {SRC DLQ "        dead_letter_classify: yes\n",
     "x.yml:8:31: dead_letter_classify: want a mapping, got a string"},
    {SRC DLQ BLOCK "          host: h\n          id_column: a\n          id_field: b\n",
     "x.yml:9:11: dead_letter_classify: table is required"},
    {SRC DLQ BLOCK "          host: h\n          table: t\n          id_field: b\n",
     "x.yml:9:11: dead_letter_classify: id_column is required"},
    {SRC DLQ BLOCK "          host: h\n          table: t\n          id_column: a\n",
     "x.yml:9:11: dead_letter_classify: id_field is required"},
    {SRC DLQ BLOCK "          table: t\n          id_column: a\n          id_field: b\n",
     "x.yml:9:11: dead_letter_classify: want dsn_file, dsn_env or host (the database holding "
     "table \"t\")"},
    /* A misspelt key next to a missing one: the typo is what the user must see. */
    {SRC DLQ BLOCK "          host: h\n          tabel: t\n          id_column: a\n"
                   "          id_field: b\n",
     "x.yml:10:11: unknown key \"tabel\" in dead_letter_classify of stream \"orders\" of source "
     "\"cache\" (known keys: dbname, done_column, dsn_env, dsn_file, host, id_column, id_field, "
     "max_entries, password_env, password_file, port, sslmode, table, user)"},
    {SRC DLQ BLOCK GOOD_KEYS "          done: sent_at\n",
     "x.yml:13:11: unknown key \"done\" in dead_letter_classify of stream \"orders\" of source "
     "\"cache\" (known keys: dbname, done_column, dsn_env, dsn_file, host, id_column, id_field, "
     "max_entries, password_env, password_file, port, sslmode, table, user)"},
    {SRC DLQ BLOCK GOOD_KEYS "          max_entries: 0\n",
     "x.yml:13:24: max_entries: want an integer from 1 to 1000000, got \"0\""},
    {SRC DLQ BLOCK GOOD_KEYS "          done_column: order_id\n",
     "x.yml:13:24: done_column: want a column other than id_column (\"order_id\")"},
    {SRC DLQ BLOCK GOOD_KEYS "          done_column: \"\"\n",
     "x.yml:13:24: done_column: want a non-empty string"},
    {SRC DLQ BLOCK "          host: h\n          table: a.b.c\n          id_column: a\n"
                   "          id_field: b\n",
     "x.yml:10:18: table: want \"table\" or \"schema.table\", got \"a.b.c\""},
    {SRC DLQ BLOCK GOOD_KEYS "          port: 0\n",
     "x.yml:13:17: port: want an integer from 1 to 65535, got \"0\""},
    {SRC DLQ BLOCK GOOD_KEYS "          password_env: QREL_TEST_UNSET_VARIABLE\n",
     "x.yml:13:25: password_env: environment variable \"QREL_TEST_UNSET_VARIABLE\" is not set"},
    {SRC DLQ BLOCK GOOD_KEYS "          password: hunter2\n",
     "x.yml:13:11: unknown key \"password\" in dead_letter_classify of stream \"orders\" of "
     "source \"cache\" (known keys: dbname, done_column, dsn_env, dsn_file, host, id_column, "
     "id_field, max_entries, password_env, password_file, port, sslmode, table, user)"},
    /* The stream entry's own keys are still checked after a good block. */
    {SRC DLQ BLOCK GOOD_KEYS "        grups: [g]\n",
     "x.yml:13:9: unknown key \"grups\" in stream \"orders\" of source \"cache\" (known keys: "
     "claim_min_idle, dead_letter_classify, dead_letter_stream, groups, max_deliveries, name, "
     "pattern)"},
};

START_TEST(test_config_bad)
{
    struct err e;
    unsetenv("QREL_TEST_UNSET_VARIABLE");
    ck_assert_int_eq(configure_text(bad_configs[_i].text, &e), -1);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    ck_assert_str_eq(e.msg, bad_configs[_i].msg);
    ck_assert_ptr_null(strstr(e.msg, "hunter2"));
}
END_TEST

START_TEST(test_config_good)
{
    struct err e;
    ck_assert_msg(configure_text(SRC DLQ BLOCK GOOD_KEYS, &e) == 0, "%s", e.msg);
    const char *base = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/check_dlq_classify.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char dsn[300], text[1024];
    snprintf(dsn, sizeof dsn, "%s/shop.dsn", dir);
    FILE *f = fopen(dsn, "w");
    ck_assert_ptr_nonnull(f);
    fputs("postgresql://qrel:hunter2@db.example:5433/shop\n", f);
    fclose(f);
    snprintf(text, sizeof text,
             "sources:\n  - name: cache\n    kind: redis_stream\n    address: h:1\n"
             "    streams:\n      - pattern: \"jobs:*\"\n"
             "        dead_letter_stream: \"{stream}.dlq\"\n"
             "        dead_letter_classify:\n"
             "          dsn_file: %s\n          table: app.handled\n          id_column: job_id\n"
             "          done_column: finished_at\n          id_field: job\n"
             "          max_entries: 500\n",
             dsn);
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);
    /* A DSN that does not parse: the message names the key, never the content. */
    f = fopen(dsn, "w");
    ck_assert_ptr_nonnull(f);
    fputs("host=h password='hunter2\n", f);
    fclose(f);
    ck_assert_int_eq(configure_text(text, &e), -1);
    ck_assert_ptr_null(strstr(e.msg, "hunter2"));
    ck_assert_msg(strstr(e.msg, "x.yml:9:21: dsn_file: want a libpq connection string") == e.msg,
                  "%s", e.msg);
    unlink(dsn);
    rmdir(dir);
}
END_TEST

/* ---- ids ---- */

static const struct {
    enum dlq_id_kind kind;
    const char *typname;
    const char *id;
    const char *want; /* NULL: refused */
} ids[] = {
    {DLQ_ID_INT, "int8", "42", "42"},
    {DLQ_ID_INT, "int8", "0003", "3"},
    {DLQ_ID_INT, "int8", "+7", "7"},
    {DLQ_ID_INT, "int8", " 7 ", "7"},
    {DLQ_ID_INT, "int8", "-0", "0"},
    {DLQ_ID_INT, "int8", "-12", "-12"},
    {DLQ_ID_INT, "int8", "9223372036854775807", "9223372036854775807"},
    {DLQ_ID_INT, "int8", "-9223372036854775808", "-9223372036854775808"},
    {DLQ_ID_INT, "int8", "9223372036854775808", NULL},
    {DLQ_ID_INT, "int8", "99999999999999999999999", NULL},
    {DLQ_ID_INT, "int4", "2147483647", "2147483647"},
    {DLQ_ID_INT, "int4", "2147483648", NULL},
    {DLQ_ID_INT, "int4", "-2147483648", "-2147483648"},
    {DLQ_ID_INT, "int2", "32768", NULL},
    {DLQ_ID_INT, "int8", "abc", NULL},
    {DLQ_ID_INT, "int8", "1.5", NULL},
    {DLQ_ID_INT, "int8", "-", NULL},
    {DLQ_ID_INT, "int8", "1 2", NULL},
    {DLQ_ID_INT, "int8", "", NULL},
    {DLQ_ID_UUID, "uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {DLQ_ID_UUID, "uuid", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {DLQ_ID_UUID, "uuid", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {DLQ_ID_UUID, "uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", NULL},
    {DLQ_ID_UUID, "uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", NULL},
    {DLQ_ID_UUID, "uuid", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {DLQ_ID_UUID, "uuid", "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {DLQ_ID_UUID, "uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-", NULL},
    {DLQ_ID_UUID, "uuid", "a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {DLQ_ID_UUID, "uuid", "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", NULL},
    {DLQ_ID_TEXT, "text", "Order 7 ", "Order 7 "},
    {DLQ_ID_TEXT, "text", "caf\xc3\xa9", "caf\xc3\xa9"},
    {DLQ_ID_TEXT, "text", "caf\xe9", NULL},          /* Latin-1, not UTF-8 */
    {DLQ_ID_TEXT, "text", "\xc0\xaf", NULL},         /* overlong '/' */
    {DLQ_ID_TEXT, "text", "\xed\xa0\x80", NULL},     /* a surrogate */
    {DLQ_ID_TEXT, "text", "\xf4\x90\x80\x80", NULL}, /* above U+10FFFF */
    {DLQ_ID_TEXT, "text", "\xe2\x82", NULL},         /* cut short */
    {DLQ_ID_BPCHAR, "bpchar", "ab  ", "ab"},
    {DLQ_ID_OTHER, "numeric", "1.50", "1.50"},
};

START_TEST(test_id_canonical)
{
    char out[64];
    long n = dlq_id_canonical(ids[_i].kind, ids[_i].typname, ids[_i].id, strlen(ids[_i].id), out,
                              sizeof out);
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
    ck_assert_int_eq(dlq_id_canonical(DLQ_ID_TEXT, "text", "12345678", 8, out, sizeof out), -1);
    ck_assert_int_eq(dlq_id_canonical(DLQ_ID_TEXT, "text", "1234567", 7, out, sizeof out), 7);
    /* A NUL byte inside the given length. */
    ck_assert_int_eq(dlq_id_canonical(DLQ_ID_TEXT, "text", "a\0b", 3, out, sizeof out), -1);
    /* Longer than 1024 bytes: not an id. */
    memset(big, 'x', sizeof big);
    char *o = malloc(2048);
    ck_assert_int_eq(dlq_id_canonical(DLQ_ID_TEXT, "text", big, 1024, o, 2048), 1024);
    ck_assert_int_eq(dlq_id_canonical(DLQ_ID_TEXT, "text", big, 1025, o, 2048), -1);
    free(o);
    ck_assert_int_eq(dlq_id_kind_of("int8"), DLQ_ID_INT);
    ck_assert_int_eq(dlq_id_kind_of("int2"), DLQ_ID_INT);
    ck_assert_int_eq(dlq_id_kind_of("uuid"), DLQ_ID_UUID);
    ck_assert_int_eq(dlq_id_kind_of("varchar"), DLQ_ID_TEXT);
    ck_assert_int_eq(dlq_id_kind_of("bpchar"), DLQ_ID_BPCHAR);
    ck_assert_int_eq(dlq_id_kind_of("numeric"), DLQ_ID_OTHER);
    ck_assert_int_eq(dlq_id_kind_of("my_domain"), DLQ_ID_OTHER);
}
END_TEST

START_TEST(test_text_array)
{
    const char *v[] = {"1", "a\"b", "c\\d", "e,f}", ""};
    char *a = dlq_text_array(v, 5);
    ck_assert_str_eq(a, "{\"1\",\"a\\\"b\",\"c\\\\d\",\"e,f}\",\"\"}");
    free(a);
    a = dlq_text_array(NULL, 0);
    ck_assert_str_eq(a, "{}");
    free(a);
}
END_TEST

START_TEST(test_sql)
{
    char *s = dlq_classify_sql("confirmation_claims", "order_id", "sent_at", DLQ_ID_INT);
    ck_assert_str_eq(s, "SELECT \"order_id\"::text, (\"sent_at\" IS NOT NULL) FROM "
                        "\"confirmation_claims\" WHERE \"order_id\" = ANY($1)");
    free(s);
    s = dlq_classify_sql("app.Handled \"x\"", "id", NULL, DLQ_ID_OTHER);
    ck_assert_str_eq(s, "SELECT \"id\"::text, true FROM \"app\".\"Handled \"\"x\"\"\" WHERE "
                        "\"id\"::text = ANY($1::text[])");
    free(s);
    ck_assert_ptr_null(dlq_classify_sql("a.b.c", "id", NULL, DLQ_ID_TEXT));
}
END_TEST

/* ---- entries ---- */

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
    struct dlq_tally t = {0};
    struct err e = {0};
    redisReply *r = RESP(xrange_dlq);
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 4);
    ck_assert_uint_eq(t.without_id, 2);
    ck_assert_uint_eq(t.nids, 2);
    ck_assert_str_eq(t.ids[0], "17");
    ck_assert_str_eq(t.ids[1], "018"); /* the first field of that name counts */

    /* A value with a NUL byte cannot be passed on as text: counted without an id. */
    r = RESP("*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$5\r\norder\r\n$3\r\na\0b\r\n");
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 5);
    ck_assert_uint_eq(t.without_id, 3);
    ck_assert_uint_eq(t.nids, 2);

    r = RESP("*0\r\n");
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), 0);
    freeReplyObject(r);
    ck_assert_uint_eq(t.read, 5);
    dlq_tally_free(&t);
    ck_assert_uint_eq(t.nids, 0);
}
END_TEST

START_TEST(test_tally_bad)
{
    struct dlq_tally t = {0};
    struct err e = {0};
    redisReply *r = RESP("$-1\r\n");
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg, "want an array of entries, got nil");
    freeReplyObject(r);
    r = RESP("*1\r\n*1\r\n$3\r\n1-1\r\n");
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), -1);
    ck_assert_str_eq(e.msg, "entry 1: want [id, fields], got another number of elements");
    freeReplyObject(r);
    r = RESP("*2\r\n*2\r\n$3\r\n1-1\r\n*0\r\n:5\r\n");
    ck_assert_int_eq(dlq_tally_add(&t, "order", r, &e), -1);
    ck_assert_str_eq(e.msg, "entry 2: want [id, fields], got integer");
    freeReplyObject(r);
    dlq_tally_free(&t);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *dlq_classify_suite(void)
{
    Suite *s = suite_create("redis_dlq_classify");
    TCase *tc = tcase_create("configure");
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_test(tc, test_config_good);
    suite_add_tcase(s, tc);
    tc = tcase_create("pure");
    tcase_add_loop_test(tc, test_id_canonical, 0, N(ids));
    tcase_add_test(tc, test_id_limits);
    tcase_add_test(tc, test_text_array);
    tcase_add_test(tc, test_sql);
    tcase_add_test(tc, test_tally);
    tcase_add_test(tc, test_tally_bad);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dlq_classify_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
