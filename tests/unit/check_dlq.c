/* check_dlq.c: unit tests for the pure parts of `qrel dlq`: which dead letters a replay moves
 * (--only, --limit), the summary inspect prints (classes, dead_since, deliveries and their
 * histogram), and the report in both forms, JSON compared byte for byte since scripts read it
 * (docs/dlq.md documents it field by field). Reading and moving are left to
 * tests/integration/dlq_redis.sh, against real servers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dlq.h"
#include "dlq_report.h"
#include "check_run.h"

#define D DL_WORK_DONE
#define N DL_WORK_NOT_DONE
#define U DL_WORK_UNKNOWN

static const enum dead_letter_work mix[] = {D, N, U, N, D, U, N};
#define NMIX (sizeof mix / sizeof mix[0])

static const struct {
    enum dlq_only only;
    size_t limit;
    const char *want; /* per message: m move, d done, n not_done, u unknown, l beyond limit */
    size_t chosen;
} selections[] = {
    {DLQ_ONLY_NOT_DONE, 0, "dmumdum", 3}, {DLQ_ONLY_NOT_DONE, 2, "dmumdul", 2},
    {DLQ_ONLY_UNKNOWN, 0, "dnmndmn", 2},  {DLQ_ONLY_UNKNOWN, 1, "dnmndln", 1},
    {DLQ_ONLY_ALL, 0, "mmmmmmm", 7},      {DLQ_ONLY_ALL, 3, "mmmllll", 3},
};

START_TEST(test_select)
{
    enum dlq_choice c[NMIX];
    size_t chosen = dlq_select(mix, NMIX, selections[_i].only, selections[_i].limit, c);
    char got[NMIX + 1];
    for (size_t i = 0; i < NMIX; i++)
        got[i] = "mdnul"[c[i]];
    got[NMIX] = '\0';
    ck_assert_str_eq(got, selections[_i].want);
    ck_assert_uint_eq(chosen, selections[_i].chosen);
}
END_TEST

START_TEST(test_select_empty)
{
    enum dlq_choice c[1];
    ck_assert_uint_eq(dlq_select(mix, 0, DLQ_ONLY_ALL, 5, c), 0);
}
END_TEST

START_TEST(test_only)
{
    struct err e = {0};
    enum dlq_only o = DLQ_ONLY_ALL;
    ck_assert_int_eq(dlq_parse_only("not_done", &o, &e), 0);
    ck_assert_int_eq(o, DLQ_ONLY_NOT_DONE);
    ck_assert_int_eq(dlq_parse_only("unknown", &o, &e), 0);
    ck_assert_int_eq(o, DLQ_ONLY_UNKNOWN);
    ck_assert_int_eq(dlq_parse_only("all", &o, &e), 0);
    ck_assert_str_eq(dlq_only_name(o), "all");
    ck_assert_int_eq(dlq_parse_only("done", &o, &e), -1);
    ck_assert_str_eq(e.msg, "--only: want not_done, unknown or all, got \"done\"");
}
END_TEST

/* Three dead letters as a kind reads them: one done, delivered 4 times; one not done with a
 * quote in its id, 12 deliveries; one without an id, delivery count and time unknown. */
static const struct dlq_kind fake_kind = {.read_effect = "each read raises a receive count"};

static void fill(struct dlq_read *r)
{
    memset(r, 0, sizeof *r);
    r->kind = &fake_kind;
    r->released = 1;
    r->batch.dead_letter_queue = strdup("orders.dlq");
    r->batch.origin = strdup("orders");
    r->batch.total = 5;
    struct dlq_message *m = dlq_batch_push(&r->batch);
    m->message_id = strdup("1-0");
    m->work_id = strdup("17");
    m->deliveries = 4;
    m->dead_since = 1700000000.5;
    m = dlq_batch_push(&r->batch);
    m->message_id = strdup("2-0");
    m->work_id = strdup("a\"b");
    m->deliveries = 12;
    m->dead_since = 1700000060;
    m = dlq_batch_push(&r->batch);
    m->message_id = strdup("3-0");
    static const enum dead_letter_work w[] = {D, N, U};
    r->work = calloc(3, sizeof *r->work);
    memcpy(r->work, w, sizeof w);
}

START_TEST(test_summary)
{
    struct dlq_read r;
    fill(&r);
    struct dlq_summary s;
    dlq_summarize(r.batch.v, r.work, r.batch.n, r.batch.total, &s);
    ck_assert_uint_eq(s.n[D], 1);
    ck_assert_uint_eq(s.n[N], 1);
    ck_assert_uint_eq(s.n[U], 1);
    ck_assert_uint_eq(s.without_id, 1);
    ck_assert_uint_eq(s.read, 3);
    ck_assert_uint_eq(s.total, 5);
    ck_assert(s.oldest == 1700000000.5 && s.newest == 1700000060);
    ck_assert_int_eq(s.min_deliveries, 4);
    ck_assert_int_eq(s.max_deliveries, 12);
    ck_assert_uint_eq(s.deliveries_unknown, 1);
    ck_assert_uint_eq(s.hist[3], 1); /* 4 */
    ck_assert_uint_eq(s.hist[6], 1); /* 11-100 */
    int64_t lo, hi;
    dlq_hist_bounds(6, &lo, &hi);
    ck_assert(lo == 11 && hi == 100);
    dlq_hist_bounds(DLQ_HIST_BUCKETS - 1, &lo, &hi);
    ck_assert(lo == 101 && hi == -1);
    dlq_read_free(&r);
}
END_TEST

static const struct dlq_report_ctx ctx = {.source = "shop-redis",
                                          .kind = "redis_stream",
                                          .queue = "orders",
                                          .work_source = "shop-db",
                                          .sample = 10,
                                          .now = 1700000100,
                                          .json = 1};

START_TEST(test_inspect_json)
{
    struct dlq_read r;
    fill(&r);
    struct buf b;
    buf_init(&b);
    dlq_report_inspect(&b, &ctx, &r);
    ck_assert_str_eq(
        b.data, "{\"command\":\"inspect\",\"source\":\"shop-redis\",\"kind\":\"redis_stream\","
                "\"queue\":\"orders\",\"dead_letter_queue\":\"orders.dlq\",\"origin\":\"orders\","
                "\"work_table_source\":\"shop-db\",\"total\":5,\"read\":3,\"unread\":2,"
                "\"classes\":{\"done\":1,\"not_done\":1,\"unknown\":1},\"without_id\":1,"
                "\"dead_since\":{\"oldest\":1700000000.5,\"newest\":1700000060},"
                "\"deliveries\":{\"min\":4,\"max\":12,\"unknown\":1,\"histogram\":["
                "{\"from\":4,\"to\":4,\"messages\":1},{\"from\":11,\"to\":100,\"messages\":1}]},"
                "\"samples\":{\"done\":[{\"message_id\":\"1-0\",\"work_id\":\"17\"}],"
                "\"not_done\":[{\"message_id\":\"2-0\",\"work_id\":\"a\\\"b\"}],"
                "\"unknown\":[{\"message_id\":\"3-0\",\"work_id\":null}]},"
                "\"read_effect\":\"each read raises a receive count\",\"cannot_replay\":null}\n");
    buf_free(&b);
    dlq_read_free(&r);
}
END_TEST

START_TEST(test_inspect_text)
{
    struct dlq_read r;
    fill(&r);
    struct dlq_report_ctx x = ctx;
    x.json = 0;
    x.sample = 0;
    struct buf b;
    buf_init(&b);
    dlq_report_inspect(&b, &x, &r);
    ck_assert_str_eq(
        b.data,
        "dead letters of queue orders (source shop-redis, redis_stream) in orders.dlq, origin "
        "orders\nread 3 of 5 (2 not read: raise --limit to see them); classified against "
        "work_table source shop-db\n"
        "  done           1  its work was done: replaying it would repeat the work\n"
        "  not_done       1  its work was not done: replay moves these\n"
        "  unknown        1  no id, or the work table cannot tell (1 without an id)\n"
        "dead since: oldest 2023-11-14T22:13:20Z (100s ago), newest 2023-11-14T22:14:20Z (40s "
        "ago)\n"
        "deliveries: min 4, max 12; 4: 1, 11-100: 1; unknown: 1\n"
        "reading changed: each read raises a receive count\n");
    buf_free(&b);
    dlq_read_free(&r);
}
END_TEST

/* A replay's part, as a dry run would leave it and as a run that failed one move. */
START_TEST(test_replay_json)
{
    struct dlq_read r;
    fill(&r);
    struct dlq_replay_opts o = {.only = DLQ_ONLY_ALL, .limit = 2, .yes = 1};
    struct dlq_replay_result res = {0};
    r.choice = calloc(3, sizeof *r.choice);
    r.fate = calloc(3, sizeof *r.fate);
    r.error = calloc(3, sizeof *r.error);
    res.chosen = dlq_select(r.work, 3, o.only, o.limit, r.choice);
    r.fate[0] = DLQ_FATE_MOVED;
    r.fate[1] = DLQ_FATE_FAILED;
    r.error[1] = strdup("not put back on orders, left dead: boom");
    r.fate[2] = DLQ_FATE_SKIPPED;
    res.skipped[DLQ_SKIP_LIMIT] = 1;
    struct buf b;
    buf_init(&b);
    dlq_report_replay(&b, &ctx, &r, &o, &res);
    const char *replay = strstr(b.data, ",\"replay\":");
    ck_assert_ptr_nonnull(replay);
    ck_assert_str_eq(
        replay,
        ",\"replay\":{\"dry_run\":false,\"only\":\"all\",\"limit\":2,\"rate\":null,\"chosen\":2,"
        "\"would_move\":[],\"moved\":[{\"message_id\":\"1-0\",\"work_id\":\"17\"}],"
        "\"failed\":[{\"message_id\":\"2-0\",\"work_id\":\"a\\\"b\",\"error\":\"not put back on "
        "orders, left dead: boom\"}],\"not_reached\":[],"
        "\"skipped\":{\"done\":{\"count\":0,\"sample\":[]},\"not_done\":{\"count\":0,\"sample\":[]}"
        ","
        "\"unknown\":{\"count\":0,\"sample\":[]},\"beyond_limit\":{\"count\":1,\"sample\":["
        "{\"message_id\":\"3-0\",\"work_id\":null}]}},\"interrupted\":false,"
        "\"stopped_after_failures\":false}}\n");
    const char *head = "{\"command\":\"replay\",\"source\":";
    ck_assert_int_eq(strncmp(b.data, head, strlen(head)), 0);
    buf_free(&b);
    dlq_read_free(&r);
}
END_TEST

#define LEN(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *dlq_suite(void)
{
    Suite *s = suite_create("dlq");
    TCase *tc = tcase_create("select");
    tcase_add_loop_test(tc, test_select, 0, LEN(selections));
    tcase_add_test(tc, test_select_empty);
    tcase_add_test(tc, test_only);
    suite_add_tcase(s, tc);
    tc = tcase_create("report");
    tcase_add_test(tc, test_summary);
    tcase_add_test(tc, test_inspect_json);
    tcase_add_test(tc, test_inspect_text);
    tcase_add_test(tc, test_replay_json);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(dlq_suite(), CK_ENV);
}
