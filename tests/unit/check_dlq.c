/* check_dlq.c: unit tests for the pure parts of `qrel dlq`: which dead letters a replay moves
 * (--only, --limit), the summary inspect prints (classes, dead_since, deliveries and their
 * histogram), the report in both forms, JSON compared byte for byte since scripts read it
 * (docs/dlq.md documents it field by field), and the order of a replay's calls through a kind
 * that records them (requeue before remove, no remove after a failed requeue, release once on
 * every way out). Reading and moving on a real broker are tests/integration/dlq_redis.sh. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlq.h"
#include "dlq_report.h"
#include "support/check_run.h"

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
    size_t chosen = dlq_select(mix, NULL, NMIX, selections[_i].only, 0, selections[_i].limit, c);
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
    ck_assert_uint_eq(dlq_select(mix, NULL, 0, DLQ_ONLY_ALL, 0, 5, c), 0);
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
                "\"replays\":{\"never\":0,\"once\":0,\"poison\":0,\"unknown\":3},"
                "\"samples\":{\"done\":[{\"message_id\":\"1-0\",\"work_id\":\"17\"}],"
                "\"not_done\":[{\"message_id\":\"2-0\",\"work_id\":\"a\\\"b\"}],"
                "\"unknown\":[{\"message_id\":\"3-0\",\"work_id\":null}],\"poison\":[]},"
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
    res.chosen = dlq_select(r.work, r.batch.v, 3, o.only, 0, o.limit, r.choice);
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
        ",\"replay\":{\"dry_run\":false,\"only\":\"all\",\"limit\":2,\"rate\":null,"
        "\"include_poison\":false,\"chosen\":2,\"poison_moved\":0,"
        "\"would_move\":[],\"moved\":[{\"message_id\":\"1-0\",\"work_id\":\"17\"}],"
        "\"failed\":[{\"message_id\":\"2-0\",\"work_id\":\"a\\\"b\",\"error\":\"not put back on "
        "orders, left dead: boom\"}],\"uncertain\":[],\"gone\":[],\"not_reached\":[],"
        "\"skipped\":{\"done\":{\"count\":0,\"sample\":[]},\"not_done\":{\"count\":0,\"sample\":[]}"
        ","
        "\"unknown\":{\"count\":0,\"sample\":[]},\"beyond_limit\":{\"count\":1,\"sample\":["
        "{\"message_id\":\"3-0\",\"work_id\":null}]},\"poison\":{\"count\":0,\"sample\":[]}},"
        "\"interrupted\":false,"
        "\"stopped_after_failures\":false}}\n");
    const char *head = "{\"command\":\"replay\",\"source\":";
    ck_assert_int_eq(strncmp(b.data, head, strlen(head)), 0);
    buf_free(&b);
    dlq_read_free(&r);
}
END_TEST

/* ---- the order of a replay, through a kind that records its calls ---- */

static char calls[256]; /* "q1 r1 q2 …": requeue / remove of message N, "R" release */
static const char *fail_requeue_of = "";

static void record(const char *what, const struct dlq_message *m)
{
    size_t n = strlen(calls);
    snprintf(calls + n, sizeof calls - n, "%s%s%s", n ? " " : "", what, m ? m->message_id : "");
}

static enum err_code fail_code = ERR_QUERY;

static int rec_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    (void)c, (void)b, (void)dl;
    record("q", m);
    return strcmp(m->message_id, fail_requeue_of) == 0 ? err_set(e, fail_code, "refused") : 0;
}

static int rec_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    (void)c, (void)b, (void)dl, (void)e;
    record("r", m);
    return 0;
}

static int rec_release(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                       struct err *e)
{
    (void)c, (void)b, (void)dl, (void)e;
    record("R", NULL);
    return 0;
}

static const char *refuse_origin = NULL; /* check_origin's refusal, or NULL */
static const char *gone_of = "";         /* move: this one is no longer dead */

static int rec_check(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                     struct err *e)
{
    (void)c, (void)b, (void)dl;
    record("C", NULL);
    return refuse_origin ? err_set(e, ERR_QUERY, "%s", refuse_origin) : 0;
}

static int rec_lock(struct collector *c, struct dlq_batch *b, double hold,
                    const struct deadline *dl, struct err *e)
{
    (void)c, (void)b, (void)dl, (void)e;
    ck_assert(hold > 2.0); /* two hook calls of 1 s, and a margin */
    record("L", NULL);
    return 0;
}

static int rec_unlock(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                      struct err *e)
{
    (void)c, (void)b, (void)dl, (void)e;
    record("U", NULL);
    return 0;
}

static int rec_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    (void)c, (void)b, (void)dl;
    record("m", m);
    if (strcmp(m->message_id, fail_requeue_of) == 0)
        return err_set(e, fail_code, "refused");
    return strcmp(m->message_id, gone_of) == 0;
}

static const struct dlq_kind rec_kind = {
    .requeue = rec_requeue, .remove = rec_remove, .release = rec_release};
static const struct dlq_kind guarded_kind = {.requeue = rec_requeue,
                                             .remove = rec_remove,
                                             .release = rec_release,
                                             .check_origin = rec_check};
static const struct dlq_kind atomic_kind = {
    .move = rec_move, .check_origin = rec_check, .lock = rec_lock, .unlock = rec_unlock};
static const struct dlq_kind no_replay_kind = {.release = rec_release,
                                               .cannot_replay = "the broker offers no way back"};
static const struct collector_kind broker_kind = {.name = "fake"};

/* Messages 1 to 4: not done, done, not done, not done. */
static void fill_rec(struct dlq_read *r, struct collector *c, struct dead_letter_join *j,
                     const struct dlq_kind *k)
{
    memset(r, 0, sizeof *r);
    memset(c, 0, sizeof *c);
    memset(j, 0, sizeof *j);
    c->name = "cache";
    c->kind = &broker_kind;
    pthread_mutex_init(&c->use, NULL);
    j->broker = c;
    j->queue = "orders";
    r->join = j;
    r->kind = k;
    r->timeout = 1;
    r->batch.origin = strdup("orders");
    static const enum dead_letter_work w[] = {N, D, N, N};
    r->work = calloc(4, sizeof *r->work);
    memcpy(r->work, w, sizeof w);
    for (int i = 1; i <= 4; i++) {
        char id[2] = {(char)('0' + i), '\0'};
        dlq_batch_push(&r->batch)->message_id = strdup(id);
    }
    calls[0] = '\0';
}

START_TEST(test_replay_order)
{
    struct dlq_read r;
    struct collector c;
    struct dead_letter_join j;
    struct err e = {0};
    struct dlq_replay_result res;
    struct dlq_replay_opts o = {.only = DLQ_ONLY_NOT_DONE, .yes = 1, .max_failures_in_a_row = 3};

    /* Requeue of 3 fails: 3 is not removed, the others are, release once at the end. */
    fill_rec(&r, &c, &j, &rec_kind);
    fail_requeue_of = "3";
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "q1 r1 q3 q4 r4 R");
    ck_assert_uint_eq(res.n[DLQ_FATE_MOVED], 2);
    ck_assert_uint_eq(res.n[DLQ_FATE_FAILED], 1);
    ck_assert_uint_eq(res.skipped[DLQ_SKIP_DONE], 1);
    ck_assert_str_eq(r.error[2], "not put back on orders, left dead: refused");
    dlq_read_free(&r); /* released already: not again */
    ck_assert_str_eq(calls, "q1 r1 q3 q4 r4 R");

    /* A dry run calls neither requeue nor remove, and releases. */
    fill_rec(&r, &c, &j, &rec_kind);
    o.yes = 0;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "R");
    ck_assert_uint_eq(res.n[DLQ_FATE_WOULD_MOVE], 3);
    dlq_read_free(&r);

    /* Stopped (a signal) before the first: nothing moved, all not reached, released. */
    fill_rec(&r, &c, &j, &rec_kind);
    volatile sig_atomic_t stop = 1;
    o.yes = 1;
    o.stop = &stop;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "R");
    ck_assert_uint_eq(res.n[DLQ_FATE_NOT_REACHED], 3);
    ck_assert(res.interrupted);
    dlq_read_free(&r);

    /* One failure with max_failures_in_a_row 1: the rest is not reached. */
    fill_rec(&r, &c, &j, &rec_kind);
    fail_requeue_of = "1";
    o.stop = NULL;
    o.max_failures_in_a_row = 1;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "q1 R");
    ck_assert(res.stopped_after_failures && !res.interrupted);
    ck_assert_uint_eq(res.n[DLQ_FATE_NOT_REACHED], 2);
    dlq_read_free(&r);

    /* A kind that cannot replay: refused with its text, released all the same. */
    fill_rec(&r, &c, &j, &no_replay_kind);
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), -1);
    ck_assert_str_eq(e.msg,
                     "source \"cache\" (fake) cannot be replayed: the broker offers no way back");
    ck_assert_str_eq(calls, "R");
    dlq_read_free(&r);
    pthread_mutex_destroy(&c.use);
}
END_TEST

/* A replay never strands a message (issue 29): an origin that check_origin refuses moves
 * nothing, in a dry run too; one replay at a time (lock before the check, unlock at the end); a
 * requeue that timed out is "may have been put back", not "left dead", and is not removed; an
 * atomic move of an entry that is gone is not counted as moved. */
START_TEST(test_replay_guarded)
{
    struct dlq_read r;
    struct collector c;
    struct dead_letter_join j;
    struct err e = {0};
    struct dlq_replay_result res;
    struct dlq_replay_opts o = {.only = DLQ_ONLY_NOT_DONE, .yes = 1, .max_failures_in_a_row = 3};
    fail_requeue_of = "";
    fail_code = ERR_QUERY;

    /* A refused origin: nothing requeued or removed, released, -1 with the reason. */
    for (int yes = 0; yes <= 1; yes++) {
        fill_rec(&r, &c, &j, &guarded_kind);
        refuse_origin = "stream \"orders\" has no consumer group";
        o.yes = yes;
        ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), -1);
        ck_assert_str_eq(calls, "C R");
        ck_assert_int_eq(e.code, ERR_QUERY);
        ck_assert_str_eq(e.msg, "replay of orders refused, every dead letter left dead: stream "
                                "\"orders\" has no consumer group");
        dlq_read_free(&r);
    }
    refuse_origin = NULL;

    /* A requeue that timed out: may have been put back, still dead, not removed. */
    fill_rec(&r, &c, &j, &guarded_kind);
    fail_requeue_of = "3";
    fail_code = ERR_TIMEOUT;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "C q1 r1 q3 q4 r4 R");
    ck_assert_uint_eq(res.n[DLQ_FATE_UNCERTAIN], 1);
    ck_assert_uint_eq(res.n[DLQ_FATE_FAILED], 0);
    ck_assert_str_eq(r.error[2], "may have been put back (timed out); still dead in the dead "
                                 "letters (a rerun may put it back on orders again): refused");
    dlq_read_free(&r);

    /* The atomic kind: lock, check, moves, unlock; a gone one is not moved; a timed-out one
     * is uncertain; a lost connection too. */
    fill_rec(&r, &c, &j, &atomic_kind);
    r.batch.dead_letter_queue = strdup("orders.dlq");
    gone_of = "4";
    fail_code = ERR_CONNECT;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "L C m1 m3 m4 U");
    ck_assert_uint_eq(res.n[DLQ_FATE_MOVED], 1);
    ck_assert_uint_eq(res.n[DLQ_FATE_GONE], 1);
    ck_assert_uint_eq(res.n[DLQ_FATE_UNCERTAIN], 1);
    ck_assert_str_eq(r.error[2], "may have been put back (connection lost); still dead unless "
                                 "the move ran (it is atomic: on orders or in orders.dlq, never "
                                 "both): refused");
    struct buf b;
    buf_init(&b);
    struct dlq_report_ctx x = {.source = "cache", .kind = "fake", .queue = "orders"};
    dlq_report_replay(&b, &x, &r, &o, &res);
    ck_assert_ptr_nonnull(strstr(b.data, "\nmay have been put back 1:\n  3: may have been put "
                                         "back (connection lost); still dead unless"));
    ck_assert_ptr_nonnull(strstr(b.data, "\ngone 1 (removed from orders.dlq by another replay "
                                         "or client first; not put back): 4\n"));
    buf_free(&b);
    dlq_read_free(&r);

    /* A dry run of the atomic kind checks the origin but takes no lock and moves nothing. */
    fill_rec(&r, &c, &j, &atomic_kind);
    o.yes = 0;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "C");
    ck_assert_uint_eq(res.n[DLQ_FATE_WOULD_MOVE], 3);
    dlq_read_free(&r);
    fail_requeue_of = "";
    gone_of = "";
    fail_code = ERR_QUERY;
    pthread_mutex_destroy(&c.use);
}
END_TEST

/* ---- windows of moves: one round trip for up to DLQ_MOVE_WINDOW atomic moves ---- */

static size_t cut_after = SIZE_MAX; /* move_window: the round trip fails after this many replies */

static size_t rec_window(struct collector *c, struct dlq_batch *b, struct dlq_message *const *m,
                         size_t n, const struct deadline *dl, struct dlq_move_outcome *out,
                         struct err *e)
{
    char w[24];
    snprintf(w, sizeof w, "w%zu", n);
    record(w, NULL);
    for (size_t i = 0; i < n; i++) {
        if (i == cut_after)
            return err_set(e, ERR_TIMEOUT, "timed out"), i;
        err_clear(&out[i].e);
        out[i].rc = rec_move(c, b, m[i], dl, &out[i].e);
    }
    return n;
}

static const struct dlq_kind window_kind = {.move = rec_move,
                                            .move_window = rec_window,
                                            .check_origin = rec_check,
                                            .lock = rec_lock,
                                            .unlock = rec_unlock};

/* Messages 1 to n, all not done. */
static void fill_many(struct dlq_read *r, struct collector *c, struct dead_letter_join *j, size_t n)
{
    fill_rec(r, c, j, &window_kind);
    r->work = realloc(r->work, n * sizeof *r->work);
    for (size_t i = 0; i < n; i++)
        r->work[i] = N;
    for (size_t i = 4; i < n; i++) {
        char id[24];
        snprintf(id, sizeof id, "%zu", i + 1);
        dlq_batch_push(&r->batch)->message_id = strdup(id);
    }
    r->batch.dead_letter_queue = strdup("orders.dlq");
}

START_TEST(test_replay_window)
{
    struct dlq_read r;
    struct collector c;
    struct dead_letter_join j;
    struct err e = {0};
    struct dlq_replay_result res;
    struct dlq_replay_opts o = {.only = DLQ_ONLY_NOT_DONE, .yes = 1, .max_failures_in_a_row = 3};

    /* Unpaced: the chosen go in one window, each with its own outcome, in order. */
    fill_rec(&r, &c, &j, &window_kind);
    r.batch.dead_letter_queue = strdup("orders.dlq");
    gone_of = "4";
    fail_requeue_of = "3";
    fail_code = ERR_QUERY;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "L C w3 m1 m3 m4 U");
    ck_assert_int_eq(r.fate[0], DLQ_FATE_MOVED);
    ck_assert_int_eq(r.fate[1], DLQ_FATE_SKIPPED);
    ck_assert_int_eq(r.fate[2], DLQ_FATE_FAILED);
    ck_assert_int_eq(r.fate[3], DLQ_FATE_GONE);
    ck_assert_str_eq(r.error[2], "not put back on orders, left dead: refused");
    dlq_read_free(&r);

    /* A round trip cut short after one reply: the rest may have moved, whole. */
    fill_rec(&r, &c, &j, &window_kind);
    r.batch.dead_letter_queue = strdup("orders.dlq");
    fail_requeue_of = gone_of = "";
    cut_after = 1;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "L C w3 m1 U");
    ck_assert_uint_eq(res.n[DLQ_FATE_MOVED], 1);
    ck_assert_uint_eq(res.n[DLQ_FATE_UNCERTAIN], 2);
    ck_assert_str_eq(r.error[3], "may have been put back (timed out); still dead unless the move "
                                 "ran (it is atomic: on orders or in orders.dlq, never both): "
                                 "timed out");
    dlq_read_free(&r);
    cut_after = SIZE_MAX;

    /* --rate paces one move at a time: no window. */
    fill_rec(&r, &c, &j, &window_kind);
    r.batch.dead_letter_queue = strdup("orders.dlq");
    o.rate = 1000000;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "L C m1 m3 m4 U");
    dlq_read_free(&r);
    o.rate = 0;

    /* 130 messages: windows of 64, 64 and 2, one round trip each. */
    fill_many(&r, &c, &j, 130);
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_uint_eq(res.n[DLQ_FATE_MOVED], 130);
    ck_assert_ptr_nonnull(strstr(calls, "L C w64 m1 m2 "));
    dlq_read_free(&r);

    /* Failures in a row stop the run between two windows: the next one is not sent. */
    fill_many(&r, &c, &j, 130);
    fail_requeue_of = "2";
    o.max_failures_in_a_row = 1;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert(res.stopped_after_failures && !res.interrupted);
    ck_assert_uint_eq(res.n[DLQ_FATE_MOVED], 63);
    ck_assert_uint_eq(res.n[DLQ_FATE_FAILED], 1);
    ck_assert_uint_eq(res.n[DLQ_FATE_NOT_REACHED], 66);
    dlq_read_free(&r);

    /* A signal before the first window: nothing sent. */
    fill_many(&r, &c, &j, 130);
    volatile sig_atomic_t stop = 1;
    o.stop = &stop;
    ck_assert_int_eq(dlq_replay(&r, &o, &res, &e), 0);
    ck_assert_str_eq(calls, "L C U");
    ck_assert(res.interrupted);
    ck_assert_uint_eq(res.n[DLQ_FATE_NOT_REACHED], 130);
    dlq_read_free(&r);
    fail_requeue_of = "";
    pthread_mutex_destroy(&c.use);
}
END_TEST

#define LEN(a) (int)(sizeof(a) / sizeof((a)[0]))

/* ---- a run by pages gives what one whole read gives ---- */

/* dlq_select_from on mix cut into two pages at each point: the choices and counts of the whole. */
START_TEST(test_select_pages)
{
    for (size_t cut = 0; cut <= NMIX; cut++) {
        enum dlq_choice c[NMIX];
        size_t a =
            dlq_select_from(mix, NULL, cut, selections[_i].only, 0, selections[_i].limit, 0, c);
        size_t b = dlq_select_from(mix + cut, NULL, NMIX - cut, selections[_i].only, 0,
                                   selections[_i].limit, a, c + cut);
        char got[NMIX + 1];
        for (size_t i = 0; i < NMIX; i++)
            got[i] = "mdnul"[c[i]];
        got[NMIX] = '\0';
        ck_assert_str_eq(got, selections[_i].want);
        ck_assert_uint_eq(a + b, selections[_i].chosen);
    }
}
END_TEST

/* r's messages [from, to) as a page of their own (pointers into r: nothing to free). */
static struct dlq_read page_of(const struct dlq_read *r, size_t from, size_t to)
{
    struct dlq_read p = *r;
    p.batch.v = r->batch.v + from;
    p.batch.n = to - from;
    p.work = r->work + from;
    p.choice = r->choice ? r->choice + from : NULL;
    p.fate = r->fate ? r->fate + from : NULL;
    p.error = r->error ? r->error + from : NULL;
    return p;
}

/* The replay report of fill's three dead letters, whole, then tallied as pages of 2 and 1, in
 * memory and streamed through temporary files: the same bytes, text and JSON. */
START_TEST(test_tally_pages)
{
    struct dlq_read r;
    fill(&r);
    struct dlq_replay_opts o = {.only = DLQ_ONLY_ALL, .limit = 2, .yes = 1};
    struct dlq_replay_result res = {0};
    r.choice = calloc(3, sizeof *r.choice);
    r.fate = calloc(3, sizeof *r.fate);
    r.error = calloc(3, sizeof *r.error);
    res.chosen = dlq_select(r.work, r.batch.v, 3, o.only, 0, o.limit, r.choice);
    r.fate[0] = DLQ_FATE_MOVED;
    r.fate[1] = DLQ_FATE_FAILED;
    r.error[1] = strdup("not put back on orders, left dead: boom");
    r.fate[2] = DLQ_FATE_SKIPPED;
    res.n[DLQ_FATE_MOVED] = res.n[DLQ_FATE_FAILED] = res.n[DLQ_FATE_SKIPPED] = 1;
    res.skipped[DLQ_SKIP_LIMIT] = 1;
    for (int json = 0; json < 2; json++) {
        struct dlq_report_ctx x = ctx;
        x.json = json;
        struct buf whole;
        buf_init(&whole);
        dlq_report_replay(&whole, &x, &r, &o, &res);
        for (int streamed = 0; streamed < 2; streamed++) {
            char *text = NULL;
            size_t len = 0;
            x.stream = streamed ? open_memstream(&text, &len) : NULL;
            struct dlq_tally t;
            struct err e = {0};
            ck_assert_int_eq(dlq_tally_init(&t, &x, &e), 0);
            struct dlq_read a = page_of(&r, 0, 2), b = page_of(&r, 2, 3);
            dlq_tally_read(&t, &a);
            ck_assert_int_eq(dlq_tally_fates(&t, &a, &e), 0);
            dlq_tally_read(&t, &b);
            ck_assert_int_eq(dlq_tally_fates(&t, &b, &e), 0);
            struct buf got;
            buf_init(&got);
            dlq_report_replay_tally(&got, &x, r.kind, &t, &o, &res);
            if (streamed) {
                fwrite(got.data ? got.data : "", 1, got.len, x.stream);
                fclose(x.stream);
                ck_assert_str_eq(text, whole.data);
                free(text);
            } else {
                ck_assert_str_eq(got.data, whole.data);
            }
            buf_free(&got);
            dlq_tally_free(&t);
        }
        buf_free(&whole);
    }
    dlq_read_free(&r);
}
END_TEST

/* A sample keeps the first ones only, however many pages come. */
START_TEST(test_tally_sample_bounded)
{
    struct dlq_read r;
    fill(&r);
    struct dlq_report_ctx x = ctx;
    x.sample = 1;
    struct dlq_tally t;
    struct err e = {0};
    ck_assert_int_eq(dlq_tally_init(&t, &x, &e), 0);
    for (int page = 0; page < 4; page++)
        dlq_tally_read(&t, &r);
    ck_assert_uint_eq(t.s.read, 12);
    ck_assert_uint_eq(t.s.n[D], 4);
    ck_assert_uint_eq(t.cls[D].n, 1);
    ck_assert_str_eq(t.cls[D].v[0].message_id, "1-0");
    ck_assert_uint_eq(t.cls[U].n, 1);
    ck_assert_ptr_null(t.cls[U].v[0].work_id);
    dlq_tally_free(&t);
    dlq_read_free(&r);
}
END_TEST

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
    tcase_add_loop_test(tc, test_select_pages, 0, LEN(selections));
    tcase_add_test(tc, test_tally_pages);
    tcase_add_test(tc, test_tally_sample_bounded);
    suite_add_tcase(s, tc);
    tc = tcase_create("replay");
    tcase_add_test(tc, test_replay_order);
    tcase_add_test(tc, test_replay_guarded);
    tcase_add_test(tc, test_replay_window);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(dlq_suite(), CK_ENV);
}
