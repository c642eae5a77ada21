/* check_redis_stream.c: unit tests for collectors/redis_stream.c and the pure parts of
 * collectors/common/redis.c (address parsing).
 *
 * The parsers are fed replies recorded from redis-server 7.0.15 as raw RESP bytes, turned into
 * reply trees by hiredis's own reader, so the tests see exactly what the collector sees: the nil
 * lag after an XDEL, nil entries-read, extended XPENDING entries. Hand-made variants of those
 * bytes cover what a server should never send (bad ids, wrong types), where the message must
 * name the field. configure() is tested through cfg_parse_string with exact messages, because
 * they are what a user reads. Talking to a server is left to tests/integration/redis_stream.sh,
 * which runs a real one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis.h>

#include "collector.h"
#include "common/redis.h"
#include "config.h"
#include "redis_stream.h"

extern const struct collector_kind redis_stream_kind;

/* One reply from raw RESP bytes; fails the test when the bytes are not one complete reply. */
static redisReply *resp(const char *raw)
{
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    ck_assert_int_eq(redisReaderFeed(rd, raw, strlen(raw)), REDIS_OK);
    ck_assert_int_eq(redisReaderGetReply(rd, &reply), REDIS_OK);
    ck_assert_msg(reply != NULL, "incomplete RESP in the test: %s", raw);
    redisReaderFree(rd);
    return reply;
}

/* ---- recorded replies (redis-server 7.0.15) ---- */

/* XINFO GROUPS orders: "audit" created with $ (entries-read nil, lag 0), "workers" with 3
 * pending and 2 entries not yet delivered. */
static const char xinfo_orders[] =
    "*2\r\n"
    "*12\r\n$4\r\nname\r\n$5\r\naudit\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n"
    "$17\r\nlast-delivered-id\r\n$15\r\n1700000000600-0\r\n$12\r\nentries-read\r\n$-1\r\n"
    "$3\r\nlag\r\n:0\r\n"
    "*12\r\n$4\r\nname\r\n$7\r\nworkers\r\n$9\r\nconsumers\r\n:3\r\n$7\r\npending\r\n:3\r\n"
    "$17\r\nlast-delivered-id\r\n$15\r\n1700000000400-0\r\n$12\r\nentries-read\r\n:4\r\n"
    "$3\r\nlag\r\n:2\r\n";

/* XINFO GROUPS trimmed after XDEL of an entry the group had not read: lag is nil. */
static const char xinfo_trimmed[] =
    "*1\r\n"
    "*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n"
    "$17\r\nlast-delivered-id\r\n$15\r\n1700000001100-0\r\n$12\r\nentries-read\r\n:1\r\n"
    "$3\r\nlag\r\n$-1\r\n";

/* XPENDING orders workers - + 1000 after two XCLAIMs and an XAUTOCLAIM. */
static const char xpending_orders[] = "*3\r\n"
                                      "*4\r\n$15\r\n1700000000100-0\r\n$2\r\nc3\r\n:333\r\n:4\r\n"
                                      "*4\r\n$15\r\n1700000000200-0\r\n$2\r\nc2\r\n:350\r\n:2\r\n"
                                      "*4\r\n$15\r\n1700000000400-0\r\n$2\r\nc1\r\n:359\r\n:1\r\n";

/* XRANGE orders (1700000000400-0 + COUNT 1 */
static const char xrange_orders[] =
    "*1\r\n*2\r\n$15\r\n1700000000500-0\r\n*2\r\n$8\r\norder_id\r\n$1\r\n5\r\n";

static const char time_reply[] = "*2\r\n$10\r\n1795959044\r\n$6\r\n421199\r\n";

/* ---- stream ids ---- */

static const struct {
    const char *s;
    int ok;
    uint64_t ms, seq;
} ids[] = {
    {"0-0", 1, 0, 0},
    {"1700000000100-0", 1, 1700000000100ULL, 0},
    {"1700000000100-17", 1, 1700000000100ULL, 17},
    {"18446744073709551615-18446744073709551615", 1, UINT64_MAX, UINT64_MAX},
    {"", 0, 0, 0},
    {"-", 0, 0, 0},
    {"1", 0, 0, 0},
    {"1-", 0, 0, 0},
    {"-1", 0, 0, 0},
    {"1-2-3", 0, 0, 0},
    {"1--2", 0, 0, 0},
    {"+1-0", 0, 0, 0},
    {" 1-0", 0, 0, 0},
    {"1-0 ", 0, 0, 0},
    {"1-0x1", 0, 0, 0},
    {"a-1", 0, 0, 0},
    {"18446744073709551616-0", 0, 0, 0},
    {"0-18446744073709551616", 0, 0, 0},
    {"1.5-0", 0, 0, 0},
};

START_TEST(test_parse_id)
{
    struct redis_stream_id id = {42, 42};
    int rc = redis_stream_parse_id(ids[_i].s, strlen(ids[_i].s), &id);
    ck_assert_msg(rc == (ids[_i].ok ? 0 : -1), "\"%s\": rc %d", ids[_i].s, rc);
    if (ids[_i].ok) {
        ck_assert_uint_eq(id.ms, ids[_i].ms);
        ck_assert_uint_eq(id.seq, ids[_i].seq);
    } else {
        ck_assert_uint_eq(id.ms, 42);
    }
}
END_TEST

START_TEST(test_parse_id_uses_len)
{
    /* Ids come from bulk strings: the length bounds them, not a NUL. */
    struct redis_stream_id id;
    ck_assert_int_eq(redis_stream_parse_id("12-3garbage", 4, &id), 0);
    ck_assert_uint_eq(id.ms, 12);
    ck_assert_uint_eq(id.seq, 3);
    ck_assert_int_eq(redis_stream_parse_id("12-3\0", 5, &id), -1);
}
END_TEST

/* ---- XINFO GROUPS ---- */

START_TEST(test_groups_recorded)
{
    redisReply *r = resp(xinfo_orders);
    struct redis_stream_group *g = NULL;
    size_t n = 0;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_groups(r, "orders", &g, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(g[0].name, "audit");
    ck_assert_int_eq(g[0].consumers, 0);
    ck_assert_int_eq(g[0].pending, 0);
    ck_assert_uint_eq(g[0].last_delivered.ms, 1700000000600ULL);
    ck_assert_int_eq(g[0].has_entries_read, 0);
    ck_assert_int_eq(g[0].has_lag, 1);
    ck_assert_int_eq(g[0].lag, 0);
    ck_assert_str_eq(g[1].name, "workers");
    ck_assert_int_eq(g[1].consumers, 3);
    ck_assert_int_eq(g[1].pending, 3);
    ck_assert_uint_eq(g[1].last_delivered.ms, 1700000000400ULL);
    ck_assert_uint_eq(g[1].last_delivered.seq, 0);
    ck_assert_int_eq(g[1].has_entries_read, 1);
    ck_assert_int_eq(g[1].entries_read, 4);
    ck_assert_int_eq(g[1].has_lag, 1);
    ck_assert_int_eq(g[1].lag, 2);
    redis_stream_groups_free(g, n);
    freeReplyObject(r);
}
END_TEST

START_TEST(test_groups_nil_lag)
{
    redisReply *r = resp(xinfo_trimmed);
    struct redis_stream_group *g = NULL;
    size_t n = 0;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_groups(r, "trimmed", &g, &n, &e), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(g[0].pending, 1);
    ck_assert_int_eq(g[0].has_entries_read, 1);
    ck_assert_int_eq(g[0].has_lag, 0);
    redis_stream_groups_free(g, n);
    freeReplyObject(r);
}
END_TEST

START_TEST(test_groups_empty_and_redis6)
{
    /* A stream without groups, and a Redis 6.2 reply: no entries-read or lag (lag unknown). */
    redisReply *r = resp("*0\r\n");
    struct redis_stream_group *g = NULL;
    size_t n = 7;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_groups(r, "s", &g, &n, &e), 0);
    ck_assert_uint_eq(n, 0);
    redis_stream_groups_free(g, n);
    freeReplyObject(r);

    r = resp("*1\r\n*8\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n"
             "$17\r\nlast-delivered-id\r\n$3\r\n5-1\r\n");
    ck_assert_int_eq(redis_stream_parse_groups(r, "s", &g, &n, &e), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(g[0].has_lag, 0);
    ck_assert_int_eq(g[0].has_entries_read, 0);
    ck_assert_uint_eq(g[0].last_delivered.seq, 1);
    redis_stream_groups_free(g, n);
    freeReplyObject(r);

    /* A repeated key: the first name names the group, nothing leaks. */
    r = resp("*1\r\n*10\r\n$4\r\nname\r\n$1\r\ng\r\n$4\r\nname\r\n$1\r\nh\r\n"
             "$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n"
             "$17\r\nlast-delivered-id\r\n$3\r\n5-1\r\n");
    ck_assert_int_eq(redis_stream_parse_groups(r, "s", &g, &n, &e), 0);
    ck_assert_str_eq(g[0].name, "g");
    redis_stream_groups_free(g, n);
    freeReplyObject(r);

    /* Keys a newer server adds are skipped. */
    r = resp(
        "*1\r\n*10\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n"
        "$17\r\nlast-delivered-id\r\n$3\r\n5-1\r\n$7\r\nfuture!\r\n*1\r\n:1\r\n");
    ck_assert_int_eq(redis_stream_parse_groups(r, "s", &g, &n, &e), 0);
    ck_assert_uint_eq(n, 1);
    redis_stream_groups_free(g, n);
    freeReplyObject(r);
}
END_TEST

#define G_NAME "$4\r\nname\r\n$1\r\ng\r\n"
#define G_CONS "$9\r\nconsumers\r\n:1\r\n"
#define G_PEND "$7\r\npending\r\n:0\r\n"
#define G_LAST "$17\r\nlast-delivered-id\r\n$3\r\n5-1\r\n"

static const struct {
    const char *raw;
    const char *msg;
} bad_groups[] = {
    {"$2\r\nhi\r\n", "XINFO GROUPS \"s\": want an array, got string"},
    {"*1\r\n:5\r\n",
     "XINFO GROUPS \"s\": group 1: want a flat array of keys and values, got integer"},
    {"*1\r\n*3\r\n" G_NAME "$3\r\nlag\r\n",
     "XINFO GROUPS \"s\": group 1: want a flat array of keys and values, got an odd number of "
     "elements"},
    {"*1\r\n*8\r\n" G_NAME G_CONS "$7\r\npending\r\n$1\r\n3\r\n" G_LAST,
     "XINFO GROUPS \"s\": group \"g\": field \"pending\": want an integer >= 0, got string"},
    {"*1\r\n*8\r\n" G_NAME G_CONS "$7\r\npending\r\n:-1\r\n" G_LAST,
     "XINFO GROUPS \"s\": group \"g\": field \"pending\": want an integer >= 0, got integer"},
    {"*1\r\n*8\r\n" G_NAME "$9\r\nconsumers\r\n$-1\r\n" G_PEND G_LAST,
     "XINFO GROUPS \"s\": group \"g\": field \"consumers\": want an integer >= 0, got nil"},
    {"*1\r\n*8\r\n" G_NAME G_CONS G_PEND "$17\r\nlast-delivered-id\r\n$4\r\n5-1x\r\n",
     "XINFO GROUPS \"s\": group \"g\": field \"last-delivered-id\": want an id like "
     "\"1700000000000-0\", got \"5-1x\""},
    {"*1\r\n*8\r\n" G_NAME G_CONS G_PEND "$17\r\nlast-delivered-id\r\n:5\r\n",
     "XINFO GROUPS \"s\": group \"g\": field \"last-delivered-id\": want a string, got integer"},
    {"*1\r\n*10\r\n" G_NAME G_CONS G_PEND G_LAST "$3\r\nlag\r\n$1\r\n2\r\n",
     "XINFO GROUPS \"s\": group \"g\": field \"lag\": want an integer >= 0 or nil, got string"},
    {"*1\r\n*10\r\n" G_NAME G_CONS G_PEND G_LAST "$12\r\nentries-read\r\n*0\r\n",
     "XINFO GROUPS \"s\": group \"g\": field \"entries-read\": want an integer >= 0 or nil, got "
     "array"},
    {"*1\r\n*6\r\n" G_NAME G_CONS G_LAST,
     "XINFO GROUPS \"s\": group \"g\": field \"pending\" is missing"},
    {"*1\r\n*6\r\n" G_CONS G_PEND G_LAST, "XINFO GROUPS \"s\": group 1: field \"name\" is missing"},
    {"*1\r\n*8\r\n$4\r\nname\r\n:7\r\n" G_CONS G_PEND G_LAST,
     "XINFO GROUPS \"s\": group 1: field \"name\": want a string, got integer"},
    {"*1\r\n*8\r\n:1\r\n:2\r\n" G_CONS G_PEND G_LAST,
     "XINFO GROUPS \"s\": group 1: key 1: want a string, got integer"},
};

START_TEST(test_groups_bad)
{
    redisReply *r = resp(bad_groups[_i].raw);
    struct redis_stream_group *g = (void *)1;
    size_t n = 7;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_groups(r, "s", &g, &n, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg, bad_groups[_i].msg);
    ck_assert_ptr_null(g);
    ck_assert_uint_eq(n, 0);
    freeReplyObject(r);
}
END_TEST

/* ---- XPENDING (extended form) ---- */

START_TEST(test_pending_recorded)
{
    redisReply *r = resp(xpending_orders);
    struct redis_stream_pending p;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_pending(r, "orders", "workers", &p, &e), 0);
    ck_assert_uint_eq(p.scanned, 3);
    ck_assert_int_eq(p.max_idle_ms, 359);
    ck_assert_uint_eq(p.redelivered, 2);
    ck_assert_int_eq(p.has_oldest, 1);
    ck_assert_uint_eq(p.oldest.ms, 1700000000100ULL);
    freeReplyObject(r);

    r = resp("*0\r\n");
    ck_assert_int_eq(redis_stream_parse_pending(r, "orders", "workers", &p, &e), 0);
    ck_assert_uint_eq(p.scanned, 0);
    ck_assert_int_eq(p.has_oldest, 0);
    ck_assert_int_eq(p.max_idle_ms, 0);
    freeReplyObject(r);
}
END_TEST

static const struct {
    const char *raw;
    const char *msg;
} bad_pending[] = {
    {":3\r\n", "XPENDING \"s\" \"g\": want an array, got integer"},
    {"*1\r\n*3\r\n$3\r\n1-0\r\n$1\r\nc\r\n:1\r\n",
     "XPENDING \"s\" \"g\": entry 1: want [id, consumer, idle, deliveries], got another number of "
     "elements"},
    {"*1\r\n$3\r\n1-0\r\n",
     "XPENDING \"s\" \"g\": entry 1: want [id, consumer, idle, deliveries], got string"},
    {"*2\r\n*4\r\n$3\r\n1-0\r\n$1\r\nc\r\n:1\r\n:1\r\n*4\r\n$2\r\n1x\r\n$1\r\nc\r\n:1\r\n:1\r\n",
     "XPENDING \"s\" \"g\": entry 2: field \"id\": want an id like \"1700000000000-0\", got "
     "\"1x\""},
    {"*1\r\n*4\r\n:1\r\n$1\r\nc\r\n:1\r\n:1\r\n",
     "XPENDING \"s\" \"g\": entry 1: field \"id\": want a string, got integer"},
    {"*1\r\n*4\r\n$3\r\n1-0\r\n$1\r\nc\r\n$2\r\n10\r\n:1\r\n",
     "XPENDING \"s\" \"g\": entry 1: field \"idle\": want an integer >= 0, got string"},
    {"*1\r\n*4\r\n$3\r\n1-0\r\n$1\r\nc\r\n:1\r\n$-1\r\n",
     "XPENDING \"s\" \"g\": entry 1: field \"deliveries\": want an integer >= 0, got nil"},
};

START_TEST(test_pending_bad)
{
    redisReply *r = resp(bad_pending[_i].raw);
    struct redis_stream_pending p;
    struct err e = {0};
    ck_assert_int_eq(redis_stream_parse_pending(r, "s", "g", &p, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg, bad_pending[_i].msg);
    freeReplyObject(r);
}
END_TEST

/* ---- XRANGE COUNT 1 and TIME ---- */

START_TEST(test_first_entry)
{
    struct err e = {0};
    struct redis_stream_id id;
    int found = -1;
    redisReply *r = resp(xrange_orders);
    ck_assert_int_eq(redis_stream_parse_first_entry(r, "XRANGE", &found, &id, &e), 0);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(id.ms, 1700000000500ULL);
    freeReplyObject(r);

    r = resp("*0\r\n");
    ck_assert_int_eq(redis_stream_parse_first_entry(r, "XRANGE", &found, &id, &e), 0);
    ck_assert_int_eq(found, 0);
    freeReplyObject(r);

    r = resp("*1\r\n*2\r\n$3\r\n1-x\r\n*0\r\n");
    ck_assert_int_eq(redis_stream_parse_first_entry(r, "XRANGE \"q\"", &found, &id, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg,
                     "XRANGE \"q\": entry 1: want an id like \"1700000000000-0\", got \"1-x\"");
    freeReplyObject(r);

    r = resp("$-1\r\n");
    ck_assert_int_eq(redis_stream_parse_first_entry(r, "XRANGE \"q\"", &found, &id, &e), -1);
    ck_assert_str_eq(e.msg, "XRANGE \"q\": want an array, got nil");
    freeReplyObject(r);
}
END_TEST

START_TEST(test_time)
{
    struct err e = {0};
    int64_t now = 0;
    redisReply *r = resp(time_reply);
    ck_assert_int_eq(redis_stream_parse_time(r, &now, &e), 0);
    ck_assert_int_eq(now, 1795959044421LL);
    freeReplyObject(r);

    r = resp("*2\r\n$10\r\n1795959044\r\n$7\r\n1000000\r\n");
    ck_assert_int_eq(redis_stream_parse_time(r, &now, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg, "TIME: want two decimal numbers");
    freeReplyObject(r);

    r = resp("*1\r\n$1\r\n1\r\n");
    ck_assert_int_eq(redis_stream_parse_time(r, &now, &e), -1);
    ck_assert_str_eq(e.msg, "TIME: want [seconds, microseconds], got array");
    freeReplyObject(r);

    r = resp("*2\r\n$2\r\n-1\r\n$1\r\n0\r\n");
    ck_assert_int_eq(redis_stream_parse_time(r, &now, &e), -1);
    freeReplyObject(r);
}
END_TEST

/* ---- small helpers ---- */

START_TEST(test_age_and_dlq_name)
{
    ck_assert_double_eq_tol(redis_stream_age_seconds(10500, 10000), 0.5, 1e-12);
    ck_assert_double_eq(redis_stream_age_seconds(10000, 10000), 0.0);
    ck_assert_double_eq(redis_stream_age_seconds(10000, 20000), 0.0); /* future id: clamped */
    ck_assert_double_eq(redis_stream_age_seconds(-1, 0), 0.0);

    char *s = redis_stream_dlq_name("{stream}.dlq", "orders");
    ck_assert_str_eq(s, "orders.dlq");
    free(s);
    s = redis_stream_dlq_name("dlq:{stream}:{stream}", "a");
    ck_assert_str_eq(s, "dlq:a:a");
    free(s);
    s = redis_stream_dlq_name("all.dlq", "a");
    ck_assert_str_eq(s, "all.dlq");
    free(s);
    s = redis_stream_dlq_name("{strea}{stream", "a");
    ck_assert_str_eq(s, "{strea}{stream");
    free(s);
}
END_TEST

/* ---- the values of a group's series ---- */

START_TEST(test_values_worked_example)
{
    /* The recorded workers group at the recorded TIME. */
    redisReply *g_r = resp(xinfo_orders), *p_r = resp(xpending_orders);
    struct redis_stream_group *g;
    size_t n;
    struct redis_stream_pending p;
    struct err e;
    ck_assert_int_eq(redis_stream_parse_groups(g_r, "orders", &g, &n, &e), 0);
    ck_assert_int_eq(redis_stream_parse_pending(p_r, "orders", "workers", &p, &e), 0);
    struct redis_stream_id first = {1700000000500ULL, 0};
    struct redis_stream_policy pol = {30.0, 3};
    struct redis_stream_group_values v;
    int64_t now = 1700000010100LL; /* 10 s after the oldest pending entry */
    redis_stream_group_values(now, &g[1], &p, 1, &first, &pol, &v);
    ck_assert_int_eq(v.has_ready, 1);
    ck_assert_double_eq(v.ready, 2);
    ck_assert_double_eq(v.in_flight, 3);
    ck_assert_double_eq_tol(v.consumer_lag_seconds, 9.6, 1e-9);
    ck_assert_double_eq_tol(v.oldest_message_age_seconds, 10.0, 1e-9);
    ck_assert_int_eq(v.has_lease_timeout, 1);
    ck_assert_double_eq(v.lease_timeout_seconds, 30);
    ck_assert_double_eq_tol(v.lease_oldest_age_seconds, 0.359, 1e-9);
    ck_assert_int_eq(v.has_lease_margin, 1);
    ck_assert_double_eq_tol(v.lease_margin_ratio, 30 / 0.359, 1e-9);
    ck_assert_int_eq(v.has_max_deliveries, 1);
    ck_assert_double_eq(v.max_deliveries, 3);
    ck_assert_int_eq(v.has_retry_horizon, 1);
    ck_assert_double_eq(v.retry_horizon_seconds, 90);
    ck_assert_double_eq(v.messages_redelivered, 2);

    /* The audit group: lag 0, nothing pending, no policy: zeros and no lease series. */
    struct redis_stream_policy none = {-1, 0};
    redis_stream_group_values(now, &g[0], NULL, 0, &first, &none, &v);
    ck_assert_int_eq(v.has_ready, 1);
    ck_assert_double_eq(v.ready, 0);
    ck_assert_double_eq(v.in_flight, 0);
    ck_assert_double_eq(v.consumer_lag_seconds, 0);
    ck_assert_double_eq(v.oldest_message_age_seconds, 0);
    ck_assert_double_eq(v.lease_oldest_age_seconds, 0);
    ck_assert_int_eq(v.has_lease_timeout, 0);
    ck_assert_int_eq(v.has_lease_margin, 0);
    ck_assert_int_eq(v.has_max_deliveries, 0);
    ck_assert_int_eq(v.has_retry_horizon, 0);
    ck_assert_double_eq(v.messages_redelivered, 0);

    redis_stream_groups_free(g, n);
    freeReplyObject(g_r);
    freeReplyObject(p_r);
}
END_TEST

START_TEST(test_values_edges)
{
    struct redis_stream_group g = {0};
    struct redis_stream_group_values v;
    struct redis_stream_id first = {5000, 0};
    struct redis_stream_policy lease_only = {30.0, 0}, md_only = {-1, 5};

    /* nil lag: no ready series, but the first undelivered entry still gives the lag in time. */
    g.pending = 0;
    g.has_lag = 0;
    redis_stream_group_values(8000, &g, NULL, 1, &first, &lease_only, &v);
    ck_assert_int_eq(v.has_ready, 0);
    ck_assert_double_eq_tol(v.consumer_lag_seconds, 3.0, 1e-9);
    ck_assert_double_eq_tol(v.oldest_message_age_seconds, 3.0, 1e-9);
    ck_assert_int_eq(v.has_lease_timeout, 1);
    ck_assert_int_eq(v.has_lease_margin, 0); /* nothing held: no margin */
    ck_assert_double_eq(v.lease_oldest_age_seconds, 0);

    /* lag 0 wins over a stale XRANGE answer. */
    g.has_lag = 1;
    g.lag = 0;
    redis_stream_group_values(8000, &g, NULL, 1, &first, &lease_only, &v);
    ck_assert_double_eq(v.consumer_lag_seconds, 0);
    ck_assert_double_eq(v.oldest_message_age_seconds, 0);

    /* An undelivered entry older than the oldest pending one (ids set by hand) is the oldest. */
    struct redis_stream_pending p = {1, 0, 0, 1, {6000, 0}};
    g.lag = 1;
    g.pending = 1;
    redis_stream_group_values(8000, &g, &p, 1, &first, &lease_only, &v);
    ck_assert_double_eq_tol(v.oldest_message_age_seconds, 3.0, 1e-9);
    /* Held for 0 ms: counted as 1 ms, a large finite margin. */
    ck_assert_int_eq(v.has_lease_margin, 1);
    ck_assert_double_eq_tol(v.lease_margin_ratio, 30000.0, 1e-6);

    /* The XPENDING reply came back empty (acknowledged in between): pending says 1, scanned 0. */
    struct redis_stream_pending none = {0};
    redis_stream_group_values(8000, &g, &none, 0, &first, &lease_only, &v);
    ck_assert_int_eq(v.has_lease_margin, 0);
    ck_assert_double_eq(v.oldest_message_age_seconds, 0);

    /* max_deliveries without a lease: no retry horizon. */
    redis_stream_group_values(8000, &g, NULL, 0, &first, &md_only, &v);
    ck_assert_int_eq(v.has_max_deliveries, 1);
    ck_assert_int_eq(v.has_retry_horizon, 0);
    ck_assert_int_eq(v.has_lease_timeout, 0);
}
END_TEST

/* ---- addresses (collectors/common/redis.c) ---- */

static const struct {
    const char *s;
    int ok, is_unix, port;
    const char *host_or_path;
    const char *msg;
} addresses[] = {
    {"127.0.0.1:6379", 1, 0, 6379, "127.0.0.1", NULL},
    {"redis.internal", 1, 0, 6379, "redis.internal", NULL},
    {"[::1]:7000", 1, 0, 7000, "::1", NULL},
    {"[fe80::1%eth0]", 1, 0, 6379, "fe80::1%eth0", NULL},
    {"unix:/run/redis/redis.sock", 1, 1, 0, "/run/redis/redis.sock", NULL},
    {"unix:", 0, 0, 0, NULL, "want a socket path after \"unix:\", got \"unix:\""},
    {"::1:6379", 0, 0, 0, NULL,
     "an IPv6 address needs brackets, as in \"[::1]:6379\", got \"::1:6379\""},
    {"[::1", 0, 0, 0, NULL, "want \"[ipv6]:port\", got \"[::1\""},
    {"[::1]6379", 0, 0, 0, NULL, "want \"[ipv6]:port\", got \"[::1]6379\""},
    {"[]:1", 0, 0, 0, NULL, "want \"[ipv6]:port\", got \"[]:1\""},
    {":6379", 0, 0, 0, NULL, "want \"host:port\", got \":6379\""},
    {"", 0, 0, 0, NULL, "want \"host:port\", got \"\""},
    {"h:0", 0, 0, 0, NULL, "want a port from 1 to 65535 in \"h:0\""},
    {"h:65536", 0, 0, 0, NULL, "want a port from 1 to 65535 in \"h:65536\""},
    {"h:", 0, 0, 0, NULL, "want a port from 1 to 65535 in \"h:\""},
    {"h:+1", 0, 0, 0, NULL, "want a port from 1 to 65535 in \"h:+1\""},
    {"redis://:hunter2@h:6379", 0, 0, 0, NULL,
     "want \"host:port\", \"[ipv6]:port\" or \"unix:/path\", not a URL (credentials go in "
     "username and password_file)"},
};

START_TEST(test_address)
{
    struct redis_address a;
    struct err e = {0};
    int rc = redis_address_parse(addresses[_i].s, &a, &e);
    if (!addresses[_i].ok) {
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(e.code, ERR_CONFIG);
        ck_assert_str_eq(e.msg, addresses[_i].msg);
        return;
    }
    ck_assert_msg(rc == 0, "\"%s\": %s", addresses[_i].s, e.msg);
    ck_assert_int_eq(a.is_unix, addresses[_i].is_unix);
    if (a.is_unix) {
        ck_assert_str_eq(a.path, addresses[_i].host_or_path);
    } else {
        ck_assert_str_eq(a.host, addresses[_i].host_or_path);
        ck_assert_int_eq(a.port, addresses[_i].port);
    }
    redis_address_free(&a);
}
END_TEST

START_TEST(test_reply_helpers)
{
    redisReply *r = resp("-NOGROUP No such key 'x' or consumer group 'y'\r\n");
    ck_assert_int_eq(redis_reply_is_error(r, NULL), 1);
    ck_assert_int_eq(redis_reply_is_error(r, "NOGROUP"), 1);
    ck_assert_int_eq(redis_reply_is_error(r, "NOGROUPS"), 0);
    ck_assert_str_eq(redis_reply_type_name(r), "error");
    freeReplyObject(r);
    r = resp("+OK\r\n");
    ck_assert_int_eq(redis_reply_is_error(r, NULL), 0);
    ck_assert_str_eq(redis_reply_type_name(r), "status");
    freeReplyObject(r);
    ck_assert_int_eq(redis_reply_is_error(NULL, NULL), 0);
}
END_TEST

/* ---- configure() ---- */

static char tmpdir[256];

/* Runs the kind's configure on the first source of text as the core does (name, kind and
 * timeout read by the core, cfg_finish on the source map afterwards). */
static int configure_text(const char *text, struct err *e)
{
    err_clear(e);
    struct cfg_doc *d = cfg_parse_string("x.yml", text, strlen(text), e);
    ck_assert_msg(d != NULL, "YAML of the test: %s", e->msg);
    struct cfg_node *seq = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "sources", CFG_SEQ, &seq, e), 0);
    struct cfg_node *map = seq->items[0];
    char *name = NULL, *kind = NULL;
    double timeout;
    ck_assert_int_eq(cfg_get_str(map, "name", 1, &name, e), 0);
    ck_assert_int_eq(cfg_get_str(map, "kind", 1, &kind, e), 0);
    ck_assert_int_eq(cfg_get_duration(map, "timeout", 10, &timeout, e), 0);
    struct collector c = {name, &redis_stream_kind, timeout, NULL};
    int rc = redis_stream_kind.configure(&c, map, e);
    if (rc == 0)
        rc = cfg_finish(map, "source \"cache\"", e);
    redis_stream_kind.destroy(&c);
    ck_assert_ptr_null(c.priv);
    free(name);
    free(kind);
    cfg_doc_free(d);
    return rc;
}

#define SRC "sources:\n  - name: cache\n    kind: redis_stream\n"

static const struct {
    const char *text;
    const char *msg;
} bad_configs[] = {
    {SRC "    streams: [{name: a}]\n",
     "x.yml:2:5: missing required key \"address\" in this mapping"},
    {SRC "    address: \"::1:6379\"\n    streams: [{name: a}]\n",
     "x.yml:4:14: address: an IPv6 address needs brackets, as in \"[::1]:6379\", got \"::1:6379\""},
    {SRC "    address: \"redis://:hunter2@h:1\"\n    streams: [{name: a}]\n",
     "x.yml:4:14: address: want \"host:port\", \"[ipv6]:port\" or \"unix:/path\", not a URL "
     "(credentials go in username and password_file)"},
    {SRC "    address: h:1\n", "x.yml:2:5: streams: want a list of at least one {name: ...} or "
                               "{pattern: ...}"},
    {SRC "    address: h:1\n    streams: []\n",
     "x.yml:5:14: streams: want a list of at least one {name: ...} or {pattern: ...}"},
    {SRC "    address: h:1\n    streams: {name: a}\n",
     "x.yml:5:14: streams: want a list, got a mapping"},
    {SRC "    address: h:1\n    streams: [a]\n",
     "x.yml:5:15: each entry of streams: want a mapping, got a string"},
    {SRC "    address: h:1\n    streams: [{groups: [g]}]\n",
     "x.yml:5:15: want exactly one of name and pattern in each entry of streams"},
    {SRC "    address: h:1\n    streams: [{name: a, pattern: \"a*\"}]\n",
     "x.yml:5:15: want exactly one of name and pattern in each entry of streams"},
    {SRC "    address: h:1\n    streams: [{name: \"\"}]\n",
     "x.yml:5:22: name: want a non-empty string"},
    {SRC "    address: h:1\n    streams: [{name: a}, {name: a}]\n",
     "x.yml:5:33: name: \"a\" is listed twice"},
    {SRC "    address: h:1\n    streams: [{pattern: a*}, {pattern: a*}]\n",
     "x.yml:5:40: pattern: \"a*\" is listed twice"},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        grups: [g]\n",
     "x.yml:7:9: unknown key \"grups\" in stream \"a\" of source \"cache\" (known keys: "
     "claim_min_idle, dead_letter_stream, groups, max_deliveries, name, pattern)"},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        groups: []\n",
     "x.yml:7:17: groups: want at least one group name (leave groups out for every group)"},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        groups: g\n",
     "x.yml:7:17: groups: want a list, got a string"},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        claim_min_idle: 0s\n",
     "x.yml:7:25: claim_min_idle: want a duration above 0"},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        claim_min_idle: 30\n",
     "x.yml:7:25: claim_min_idle: want a duration like \"5s\", got \"30\""},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        max_deliveries: 0\n",
     "x.yml:7:25: max_deliveries: want an integer from 1 to 1000000, got \"0\""},
    {SRC "    address: h:1\n    streams:\n      - name: a\n        dead_letter_stream: \"\"\n",
     "x.yml:7:29: dead_letter_stream: want a non-empty stream name"},
    {SRC "    address: h:1\n    db: -1\n    streams: [{name: a}]\n",
     "x.yml:5:9: db: want an integer from 0 to 1000000, got \"-1\""},
    {SRC "    address: h:1\n    max_streams: 0\n    streams: [{name: a}]\n",
     "x.yml:5:18: max_streams: want an integer from 1 to 10000000, got \"0\""},
    {SRC "    address: h:1\n    pending_scan_limit: lots\n    streams: [{name: a}]\n",
     "x.yml:5:25: pending_scan_limit: want an integer from 1 to 1000000, got \"lots\""},
    {SRC "    address: h:1\n    max_reply_bytes: 100\n    streams: [{name: a}]\n",
     "x.yml:5:22: max_reply_bytes: want an integer from 4096 to 1099511627776, got \"100\""},
    {SRC "    address: h:1\n    username: qrel\n    streams: [{name: a}]\n",
     "x.yml:5:15: username: needs password_file or password_env (Redis authenticates a user "
     "with a password)"},
    {SRC "    address: h:1\n    password_env: QREL_TEST_UNSET_VARIABLE\n    streams: [{name: a}]\n",
     "x.yml:5:19: password_env: environment variable \"QREL_TEST_UNSET_VARIABLE\" is not set"},
    {SRC "    address: h:1\n    password_env: QREL_TEST_EMPTY_VARIABLE\n    streams: [{name: a}]\n",
     "x.yml:5:19: password_env: environment variable \"QREL_TEST_EMPTY_VARIABLE\" is empty"},
    {SRC "    address: h:1\n    password_file: a\n    password_env: B\n    streams: [{name: a}]\n",
     "x.yml:6:19: password_env: want either password_file or password_env, not both"},
    /* A missing required key next to a misspelt one: the typo is what the user must see. */
    {SRC "    adress: h:1\n    streams: [{name: a}]\n",
     "x.yml:4:5: unknown key \"adress\" in source \"cache\" (known keys: address, db, kind, "
     "max_reply_bytes, max_streams, name, password_env, password_file, pending_scan_limit, "
     "streams, timeout, username)"},
    {SRC "    address: h:1\n    stream: [{name: a}]\n",
     "x.yml:5:5: unknown key \"stream\" in source \"cache\" (known keys: address, db, kind, "
     "max_reply_bytes, max_streams, name, password_env, password_file, pending_scan_limit, "
     "streams, timeout, username)"},
    {SRC "    address: h:1\n    streams: [{nmae: a}]\n",
     "x.yml:5:16: unknown key \"nmae\" in entry 1 of streams of source \"cache\" (known keys: "
     "claim_min_idle, dead_letter_stream, groups, max_deliveries, name, pattern)"},
    {SRC "    address: h:1\n    password: hunter2\n    streams: [{name: a}]\n",
     "x.yml:5:5: unknown key \"password\" in source \"cache\" (known keys: address, db, kind, "
     "max_reply_bytes, max_streams, name, password_env, password_file, pending_scan_limit, "
     "streams, timeout, username)"},
};

START_TEST(test_config_bad)
{
    struct err e;
    setenv("QREL_TEST_EMPTY_VARIABLE", "", 1);
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
    setenv("QREL_TEST_REDIS_PW", "s3cret", 1);
    const char *text = SRC "    address: \"[::1]:6380\"\n"
                           "    username: qrel\n"
                           "    password_env: QREL_TEST_REDIS_PW\n"
                           "    db: 3\n"
                           "    max_streams: 50\n"
                           "    pending_scan_limit: 10\n"
                           "    max_reply_bytes: 1048576\n"
                           "    streams:\n"
                           "      - name: orders\n"
                           "        groups: [mailer]\n"
                           "        claim_min_idle: 30s\n"
                           "        max_deliveries: 3\n"
                           "        dead_letter_stream: orders.dlq\n"
                           "      - pattern: \"jobs:*\"\n"
                           "        dead_letter_stream: \"{stream}.dlq\"\n"
                           "        max_deliveries: ~\n";
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);
    ck_assert_msg(configure_text(SRC "    address: unix:/run/redis.sock\n"
                                     "    streams: [{name: a}]\n",
                                 &e) == 0,
                  "%s", e.msg);
}
END_TEST

static void write_file(const char *path, const char *content, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(content, 1, len, f), len);
    fclose(f);
}

START_TEST(test_config_password_file)
{
    char good[400], empty[400], nul[400], missing[400], text[1200], want[1200];
    snprintf(good, sizeof good, "%s/good.pass", tmpdir);
    snprintf(empty, sizeof empty, "%s/empty.pass", tmpdir);
    snprintf(nul, sizeof nul, "%s/nul.pass", tmpdir);
    snprintf(missing, sizeof missing, "%s/missing.pass", tmpdir);
    write_file(good, "hunter2\n", 8);
    write_file(empty, "\n", 1);
    write_file(nul, "hun\0ter2\n", 9);
    struct err e;

    snprintf(text, sizeof text,
             SRC "    address: h:1\n    password_file: %s\n    streams: [{name: a}]\n", good);
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);

    const char *files[] = {empty, nul, missing};
    const char *why[] = {"is empty", "contains a NUL byte", NULL};
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text,
                 SRC "    address: h:1\n    password_file: %s\n    streams: [{name: a}]\n",
                 files[i]);
        ck_assert_int_eq(configure_text(text, &e), -1);
        if (why[i])
            snprintf(want, sizeof want, "x.yml:5:20: password_file: \"%s\" %s", files[i], why[i]);
        else
            snprintf(want, sizeof want,
                     "x.yml:5:20: password_file: cannot read \"%s\": No such file or directory",
                     files[i]);
        ck_assert_str_eq(e.msg, want);
        ck_assert_ptr_null(strstr(e.msg, "hunter2"));
        ck_assert_ptr_null(strstr(e.msg, "ter2"));
    }
    unlink(good);
    unlink(empty);
    unlink(nul);
}
END_TEST

static void setup_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/check_redis_stream.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown_tmpdir(void)
{
    rmdir(tmpdir);
}

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *redis_stream_suite(void)
{
    Suite *s = suite_create("redis_stream");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, test_parse_id, 0, N(ids));
    tcase_add_test(tc, test_parse_id_uses_len);
    tcase_add_test(tc, test_groups_recorded);
    tcase_add_test(tc, test_groups_nil_lag);
    tcase_add_test(tc, test_groups_empty_and_redis6);
    tcase_add_loop_test(tc, test_groups_bad, 0, N(bad_groups));
    tcase_add_test(tc, test_pending_recorded);
    tcase_add_loop_test(tc, test_pending_bad, 0, N(bad_pending));
    tcase_add_test(tc, test_first_entry);
    tcase_add_test(tc, test_time);
    tcase_add_test(tc, test_age_and_dlq_name);
    tcase_add_test(tc, test_values_worked_example);
    tcase_add_test(tc, test_values_edges);
    tcase_add_loop_test(tc, test_address, 0, N(addresses));
    tcase_add_test(tc, test_reply_helpers);
    suite_add_tcase(s, tc);

    tc = tcase_create("configure");
    tcase_add_checked_fixture(tc, setup_tmpdir, teardown_tmpdir);
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_test(tc, test_config_good);
    tcase_add_test(tc, test_config_password_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(redis_stream_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
