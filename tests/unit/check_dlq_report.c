/* check_dlq_report.c: what `qrel dlq` prints for numbers a broker should not send but can: a
 * dead_since of inf or far past any calendar (a Redis stream's "dead_since" field is free text),
 * and a rate or count at the edge of what the flags take. The JSON must stay JSON (no inf or nan
 * token) and the text must not turn such a time into a date (a cast of inf to time_t is undefined
 * behaviour, and gmtime of a year past 2^31 fails and leaves its struct tm unset). */
#include <check.h>
#include <math.h>
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

int main(void)
{
    const struct check_test tests[] = {
        {test_json_never_non_finite, CHECK_ROWS(json_cases)},
        {test_text_time_out_of_range, CHECK_ROWS(text_cases)},
    };
    return check_run_tests("dlq_report", tests, CHECK_ROWS(tests), 0);
}
