/* check_dlq_report.c: what `qrel dlq` prints for numbers a broker should not send but can: a
 * dead_since of inf or far past any calendar (a Redis stream's "dead_since" field is free text),
 * and a rate or count at the edge of what the flags take. The JSON must stay JSON (no inf or nan
 * token) and the text must not turn such a time into a date (a cast of inf to time_t is undefined
 * behaviour, and gmtime of a year past 2^31 fails and leaves its struct tm unset). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlq.h"
#include "dlq_report.h"
#include "support/check_run.h"

static const struct dlq_kind kind = {0};

/* One dead letter that died at `a`, one at `b`, both done. */
static void two_times(struct dlq_read *r, double a, double b)
{
    memset(r, 0, sizeof *r);
    r->kind = &kind;
    r->released = 1;
    r->batch.dead_letter_queue = strdup("orders.dlq");
    r->batch.origin = strdup("orders");
    r->batch.total = 2;
    const double t[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        struct dlq_message *m = dlq_batch_push(&r->batch);
        m->message_id = strdup(i ? "2-0" : "1-0");
        m->deliveries = -1;
        m->dead_since = t[i];
    }
    r->work = calloc(2, sizeof *r->work);
}

static const struct dlq_report_ctx ctx = {.source = "s",
                                          .kind = "redis_stream",
                                          .queue = "orders",
                                          .work_source = "db",
                                          .now = 1700000100};

/* The dead_since part of the JSON of inspect over two such times. */
static char *json_dead_since(double a, double b)
{
    struct dlq_read r;
    two_times(&r, a, b);
    struct dlq_report_ctx x = ctx;
    x.json = 1;
    struct buf out;
    buf_init(&out);
    dlq_report_inspect(&out, &x, &r);
    dlq_read_free(&r);
    const char *from = strstr(out.data, "\"dead_since\":");
    ck_assert_ptr_nonnull(from);
    const char *to = strchr(from, '}');
    char *got = strndup(from, (size_t)(to - from + 1));
    buf_free(&out);
    return got;
}

static const struct {
    double a, b;
    const char *want;
} json_cases[] = {
    {1700000000, INFINITY, "\"dead_since\":{\"oldest\":1700000000,\"newest\":null}"},
    {INFINITY, INFINITY, "\"dead_since\":{\"oldest\":null,\"newest\":null}"},
    {1e300, 1700000000, "\"dead_since\":{\"oldest\":1700000000,\"newest\":1e+300}"},
};

START_TEST(test_json_never_non_finite)
{
    char *got = json_dead_since(json_cases[_i].a, json_cases[_i].b);
    ck_assert_str_eq(got, json_cases[_i].want);
    free(got);
}
END_TEST

/* The "dead since" line of the text report. */
static char *text_dead_since(double a, double b)
{
    struct dlq_read r;
    two_times(&r, a, b);
    struct buf out;
    buf_init(&out);
    dlq_report_inspect(&out, &ctx, &r);
    dlq_read_free(&r);
    const char *from = strstr(out.data, "dead since:");
    ck_assert_ptr_nonnull(from);
    char *got = strndup(from, strcspn(from, "\n"));
    buf_free(&out);
    return got;
}

static const struct {
    double a, b;
    const char *want;
} text_cases[] = {
    {1700000000, INFINITY,
     "dead since: oldest 2023-11-14T22:13:20Z (100s ago), newest out of range (+Inf)"},
    {1700000000, 1e300,
     "dead since: oldest 2023-11-14T22:13:20Z (100s ago), newest out of range (1e+300)"},
    {1700000000, 253402300800.0, /* 10000-01-01: past what the format prints */
     "dead since: oldest 2023-11-14T22:13:20Z (100s ago), newest out of range (253402300800)"},
    {1700000000, 253402300799.0,
     "dead since: oldest 2023-11-14T22:13:20Z (100s ago), newest 9999-12-31T23:59:59Z (0s ago)"},
};

START_TEST(test_text_time_out_of_range)
{
    char *got = text_dead_since(text_cases[_i].a, text_cases[_i].b);
    ck_assert_str_eq(got, text_cases[_i].want);
    free(got);
}
END_TEST

/* ---- the replay stamp: never, once, poison, unknown (issue 24) ---- */

/* Five not-done dead letters by their stamp: none, once, twice (poison), three times (poison),
 * and one of a kind that cannot stamp. */
static void stamped(struct dlq_read *r)
{
    static const int64_t replays[] = {0, 1, 2, 3, -1};
    memset(r, 0, sizeof *r);
    r->kind = &kind;
    r->released = 1;
    r->batch.dead_letter_queue = strdup("orders.dlq");
    r->batch.origin = strdup("orders");
    r->batch.total = 5;
    for (int i = 0; i < 5; i++) {
        struct dlq_message *m = dlq_batch_push(&r->batch);
        char id[8], work[8];
        snprintf(id, sizeof id, "%d-0", i + 1);
        snprintf(work, sizeof work, "o%d", i + 1);
        m->message_id = strdup(id);
        m->work_id = strdup(work);
        m->replays = replays[i];
    }
    r->work = calloc(5, sizeof *r->work);
    for (int i = 0; i < 5; i++)
        r->work[i] = DL_WORK_NOT_DONE;
}

static char *report(int json, size_t sample, const struct dlq_replay_opts *o)
{
    struct dlq_read r;
    stamped(&r);
    struct dlq_report_ctx x = ctx;
    x.json = json;
    x.sample = sample;
    struct buf out;
    buf_init(&out);
    if (o) {
        struct dlq_replay_result res = {0};
        r.choice = calloc(5, sizeof *r.choice);
        r.fate = calloc(5, sizeof *r.fate);
        r.error = calloc(5, sizeof *r.error);
        res.chosen =
            dlq_select(r.work, r.batch.v, 5, o->only, o->include_poison, o->limit, r.choice);
        for (size_t i = 0; i < 5; i++) { /* a dry run's fates, as dlq_replay sets them */
            r.fate[i] = r.choice[i] == DLQ_MOVE ? DLQ_FATE_WOULD_MOVE : DLQ_FATE_SKIPPED;
            res.n[r.fate[i]]++;
            if (r.fate[i] == DLQ_FATE_SKIPPED)
                res.skipped[r.choice[i]]++;
            else if (dlq_is_poison(&r.batch.v[i]))
                res.poison_moved++;
        }
        dlq_report_replay(&out, &x, &r, o, &res);
    } else {
        dlq_report_inspect(&out, &x, &r);
    }
    dlq_read_free(&r);
    char *got = strdup(out.data);
    buf_free(&out);
    return got;
}

/* The part of s from the first from to the end of the line that holds to (or to the end). */
static char *part(const char *s, const char *from, const char *to)
{
    const char *a = strstr(s, from);
    ck_assert_msg(a != NULL, "no \"%s\" in %s", from, s);
    const char *b = to ? strstr(a, to) : NULL;
    return strndup(a, b ? (size_t)(b - a) + strlen(to) : strlen(a));
}

START_TEST(test_stamp_inspect_text)
{
    char *got = report(0, 1, NULL);
    char *tail = part(got, "replayed before:", NULL);
    ck_assert_str_eq(tail,
                     "replayed before: never 1, once 1, poison 2 (2 times or more); unknown: 1\n"
                     "sample not_done: 1-0 (o1), … (4 more)\n"
                     "sample poison: 3-0 (o3) x2, … (1 more)\n");
    free(tail);
    free(got);
    got = report(0, 10, NULL);
    tail = part(got, "sample poison:", "\n");
    ck_assert_str_eq(tail, "sample poison: 3-0 (o3) x2, 4-0 (o4) x3\n");
    free(tail);
    free(got);
}
END_TEST

START_TEST(test_stamp_inspect_json)
{
    char *got = report(1, 1, NULL);
    char *p = part(got, "\"replays\":", "}");
    ck_assert_str_eq(p, "\"replays\":{\"never\":1,\"once\":1,\"poison\":2,\"unknown\":1}");
    free(p);
    p = part(got, "\"poison\":[", "]");
    ck_assert_str_eq(p, "\"poison\":[{\"message_id\":\"3-0\",\"work_id\":\"o3\",\"replays\":2}]");
    free(p);
    free(got);
}
END_TEST

/* A kind that cannot stamp: no line in the text (it would say nothing), all unknown in JSON; and
 * dead letters never replayed: no line either. */
START_TEST(test_stamp_unknown)
{
    struct dlq_read r;
    two_times(&r, 1700000000, 1700000001);
    struct buf out;
    buf_init(&out);
    dlq_report_inspect(&out, &ctx, &r);
    ck_assert_ptr_null(strstr(out.data, "replayed before"));
    buf_free(&out);
    struct dlq_report_ctx x = ctx;
    x.json = 1;
    buf_init(&out);
    dlq_report_inspect(&out, &x, &r);
    ck_assert_ptr_nonnull(
        strstr(out.data, "\"replays\":{\"never\":0,\"once\":0,\"poison\":0,\"unknown\":2}"));
    buf_free(&out);
    r.batch.v[0].replays = r.batch.v[1].replays = 0;
    buf_init(&out);
    dlq_report_inspect(&out, &ctx, &r);
    ck_assert_ptr_null(strstr(out.data, "replayed before"));
    buf_free(&out);
    dlq_read_free(&r);
}
END_TEST

/* A replay skips the poison ones by default, and they do not count towards --limit. */
START_TEST(test_stamp_replay_skips_poison)
{
    struct dlq_replay_opts o = {.only = DLQ_ONLY_NOT_DONE, .limit = 3};
    char *got = report(0, 10, &o);
    char *p = part(got, "replay --only", NULL);
    ck_assert_str_eq(p, "replay --only=not_done --limit=3: 3 chosen\n"
                        "dry run, nothing changed: would move 3 to orders: 1-0 (o1), 2-0 (o2), "
                        "5-0 (o5)\n"
                        "run again with --yes to move them\n"
                        "skipped 2 poison: 3-0 (o3), 4-0 (o4)\n");
    free(p);
    free(got);
    got = report(1, 10, &o);
    p = part(got, "\"include_poison\"", "poison_moved\":0");
    ck_assert_str_eq(p, "\"include_poison\":false,\"chosen\":3,\"poison_moved\":0");
    free(p);
    p = part(got, "\"poison\":{\"count\"", "]}");
    ck_assert_str_eq(p, "\"poison\":{\"count\":2,\"sample\":[{\"message_id\":\"3-0\",\"work_id\":"
                        "\"o3\"},{\"message_id\":\"4-0\",\"work_id\":\"o4\"}]}");
    free(p);
    free(got);
}
END_TEST

START_TEST(test_stamp_replay_include_poison)
{
    struct dlq_replay_opts o = {.only = DLQ_ONLY_NOT_DONE, .include_poison = 1};
    char *got = report(0, 10, &o);
    char *p = part(got, "replay --only", NULL);
    ck_assert_str_eq(p, "replay --only=not_done: 5 chosen\n"
                        "dry run, nothing changed: would move 5 to orders: 1-0 (o1), 2-0 (o2), "
                        "3-0 (o3), 4-0 (o4), 5-0 (o5)\n"
                        "of them poison (replayed 2 times or more, --include-poison): 2\n"
                        "run again with --yes to move them\n");
    free(p);
    free(got);
    got = report(1, 10, &o);
    p = part(got, "\"include_poison\"", "poison_moved\":2");
    ck_assert_str_eq(p, "\"include_poison\":true,\"chosen\":5,\"poison_moved\":2");
    free(p);
    free(got);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_json_never_non_finite, CHECK_ROWS(json_cases)},
        {test_text_time_out_of_range, CHECK_ROWS(text_cases)},
        {test_stamp_inspect_text, 1},
        {test_stamp_inspect_json, 1},
        {test_stamp_unknown, 1},
        {test_stamp_replay_skips_poison, 1},
        {test_stamp_replay_include_poison, 1},
    };
    return check_run_tests("dlq_report", tests, CHECK_ROWS(tests), 0);
}
