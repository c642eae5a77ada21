/* check_sidekiq_dlq.c: unit tests for collectors/sidekiq/dlq_parse.c, `qrel dlq`'s pure parts for
 * Sidekiq: what a job of the dead set says (recorded from Sidekiq 6.4 as tests/integration/
 * dlq_sidekiq.sh makes it: a job with retry: 0 that raised), and the payload a replay pushes
 * back, edited as Sidekiq's SortedEntry#retry edits it, plus the replay stamp. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sidekiq/sidekiq.h"
#include "support/check_run.h"

static const char dead64[] =
    "{\"retry\":0,\"queue\":\"emails\",\"class\":\"ChargeJob\",\"args\":[\"o2\",{\"n\":7}],"
    "\"jid\":\"f6c2a4bd0c7e3f1b2a9d8e77\",\"created_at\":1796138815.1538267,\"enqueued_at\":"
    "1796138815.1540854,\"error_message\":\"the provider said no\",\"error_class\":"
    "\"RuntimeError\",\"failed_at\":1796138822.4,\"retry_count\":0}";

START_TEST(test_dead_job)
{
    struct sidekiq_dead d;
    enum entry_skip why;
    struct err e = {0};
    ck_assert_int_eq(sidekiq_dlq_job(dead64, strlen(dead64), "args.0", &d, &why, &e), 0);
    ck_assert_str_eq(d.queue, "emails");
    ck_assert_str_eq(d.jid, "f6c2a4bd0c7e3f1b2a9d8e77");
    ck_assert_str_eq(d.work_id, "o2");
    ck_assert_int_eq(d.deliveries, 1); /* retry_count 0: it failed once */
    ck_assert_int_eq(d.replays, 0);    /* no stamp */
    sidekiq_dead_free(&d);
    /* the jid itself, a nested key in an array, an integer; absent and of another type: no id */
    const char *fields[] = {"jid", "args.1.n", "retry_count", "args.2", "args.0.x", "error"};
    const char *want[] = {"f6c2a4bd0c7e3f1b2a9d8e77", "7", "0", NULL, NULL, NULL};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        ck_assert_int_eq(sidekiq_dlq_job(dead64, strlen(dead64), fields[i], &d, &why, &e), 0);
        if (want[i])
            ck_assert_str_eq(d.work_id, want[i]);
        else
            ck_assert_ptr_null(d.work_id);
        sidekiq_dead_free(&d);
    }
}
END_TEST

START_TEST(test_stamp_read)
{
    static const char stamped[] = "{\"queue\":\"q\",\"jid\":\"j\",\"retry_count\":4,"
                                  "\"qrel-replayed\":2,\"args\":[\"\\u0000x\"]}";
    struct sidekiq_dead d;
    enum entry_skip why;
    struct err e = {0};
    ck_assert_int_eq(sidekiq_dlq_job(stamped, strlen(stamped), "args.0", &d, &why, &e), 0);
    ck_assert_int_eq(d.replays, 2);
    ck_assert_int_eq(d.deliveries, 5);
    ck_assert_ptr_null(d.work_id); /* an id holding a NUL is no id */
    sidekiq_dead_free(&d);
}
END_TEST

static const struct {
    const char *json;
    enum entry_skip why;
} bad[] = {
    {"not json", ENTRY_NOT_JSON},
    {"[1]", ENTRY_NOT_JSON},
    {"{\"queue\":\"a\",\"queue\":\"b\"}", ENTRY_NOT_JSON}, /* a member twice */
    {"{\"jid\":\"j\"}", ENTRY_MISSING_FIELD},
    {"{\"queue\":7}", ENTRY_MISSING_FIELD},
};

START_TEST(test_dead_refused)
{
    struct sidekiq_dead d;
    enum entry_skip why = ENTRY_BAD_VALUE;
    struct err e = {0};
    ck_assert_int_eq(sidekiq_dlq_job(bad[_i].json, strlen(bad[_i].json), "jid", &d, &why, &e), -1);
    ck_assert_int_eq(why, bad[_i].why);
    ck_assert_ptr_null(d.queue);
}
END_TEST

START_TEST(test_id_field)
{
    char why[300];
    const char *ok[] = {"jid", "args.0", "args.0.order_id"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        ck_assert_int_eq(sidekiq_dlq_id_field(ok[i], why, sizeof why), 0);
    const char *refused[] = {"", ".jid", "args.", "args..0"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        ck_assert_int_eq(sidekiq_dlq_id_field(refused[i], why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "want a key of the job payload"));
}
END_TEST

/* The payload a replay pushes: every member kept byte for byte and in order, retry_count one
 * less, enqueued_at now, the stamp; what Sidekiq's retry keeps (error fields) is kept. */
START_TEST(test_requeue_payload)
{
    char *out;
    size_t len;
    struct err e = {0};
    ck_assert_int_eq(
        sidekiq_dlq_requeue_payload(dead64, strlen(dead64), 1796140000.25, 1, &out, &len, &e), 0);
    ck_assert_uint_eq(strlen(out), len);
    ck_assert_str_eq(out,
                     "{\"retry\":0,\"queue\":\"emails\",\"class\":\"ChargeJob\",\"args\":[\"o2\","
                     "{\"n\":7}],\"jid\":\"f6c2a4bd0c7e3f1b2a9d8e77\",\"created_at\":"
                     "1796138815.1538267,\"error_message\":\"the provider said no\","
                     "\"error_class\":\"RuntimeError\",\"failed_at\":1796138822.4,"
                     "\"retry_count\":-1,\"enqueued_at\":1796140000.250000,"
                     "\"qrel-replayed\":1}");
    /* read back: the stamp counts on, and no member is there twice */
    char *again;
    size_t alen;
    ck_assert_int_eq(sidekiq_dlq_requeue_payload(out, len, 1796140001.0, 2, &again, &alen, &e), 0);
    json_error_t je;
    json_t *v = json_loadb(again, alen, JSON_REJECT_DUPLICATES, &je);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(json_integer_value(json_object_get(v, "qrel-replayed")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(v, "retry_count")), -2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "args"), 0)), "o2");
    json_decref(v);
    free(again);
    free(out);
    /* no retry_count (a job killed by hand): none is written; an empty object */
    ck_assert_int_eq(sidekiq_dlq_requeue_payload("{}", 2, 5.5, 3, &out, &len, &e), 0);
    ck_assert_str_eq(out, "{\"enqueued_at\":5.500000,\"qrel-replayed\":3}");
    free(out);
    /* a retry_count that is no integer is left as it is */
    static const char odd[] = "{ \"retry_count\" : \"x\" , \"a\":[1,{\"b\":\"}\"}] }";
    ck_assert_int_eq(sidekiq_dlq_requeue_payload(odd, strlen(odd), 1, 1, &out, &len, &e), 0);
    ck_assert_str_eq(out, "{\"retry_count\" : \"x\",\"a\":[1,{\"b\":\"}\"}],\"enqueued_at\":"
                          "1.000000,\"qrel-replayed\":1}");
    free(out);
}
END_TEST

START_TEST(test_requeue_refused)
{
    const char *refused[] = {"[]", "{\"a\":1,\"a\":2}", "{\"retry\\u005fcount\":1}",
                             "{\"a\":", "nope"};
    char *out;
    size_t len;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        struct err e = {0};
        ck_assert_int_eq(
            sidekiq_dlq_requeue_payload(refused[i], strlen(refused[i]), 1, 1, &out, &len, &e), -1);
        ck_assert_ptr_null(out);
        ck_assert_int_ne(e.msg[0], '\0');
    }
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_dead_job, 0}, {test_stamp_read, 0},      {test_dead_refused, CHECK_ROWS(bad)},
        {test_id_field, 0}, {test_requeue_payload, 0}, {test_requeue_refused, 0},
    };
    return check_run_tests("sidekiq_dlq", tests, CHECK_ROWS(tests), 0);
}
