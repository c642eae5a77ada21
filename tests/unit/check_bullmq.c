/* check_bullmq.c: unit tests for collectors/bullmq/parse.c: queue names from the `meta` keys
 * BullMQ 6.7 creates (as the integration test's SCAN finds them), and stalled events as BullMQ
 * writes them to a queue's events stream, and what `qrel dlq` reads of a failed job's hash (its
 * work id, attempts, failure time and replay stamp), as BullMQ 6.7 and the replay write it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bullmq/bullmq.h"
#include "support/check_run.h"
#include "support/check_str.h"
#include "support/fixture.h"

static char *queue_of(const char *key, const char *prefix)
{
    return bullmq_queue_of_meta_key(key, strlen(key), prefix);
}

START_TEST(test_meta_keys)
{
    check_str_free(queue_of("bull:email:meta", "bull"), "email");
    check_str_free(queue_of("bull:a:b:meta", "bull"), "a:b"); /* a queue name may hold ':' */
    check_str_free(queue_of("myapp:email:meta", "myapp"), "email");
    ck_assert_ptr_null(queue_of("bull::meta", "bull"));
    ck_assert_ptr_null(queue_of("bull:meta", "bull"));
    ck_assert_ptr_null(queue_of("bullx:email:meta", "bull"));
    ck_assert_ptr_null(queue_of("bull:email:metadata", "bull"));
    ck_assert_ptr_null(queue_of("other:email:meta", "bull"));
}
END_TEST

static char *found(const char *key)
{
    return bullmq_queue_of_found_key(key, strlen(key), "bull");
}

/* Discovery's keys: BullMQ's `meta`, and the job counter `id` that Bull 4.16.5's addJob-6.lua
 * INCRs on every add (Bull writes no `meta`); Bull's other keys of the same glob are no queue. */
START_TEST(test_found_keys)
{
    check_str_free(found("bull:email:meta"), "email");
    check_str_free(found("bull:email:id"), "email");
    check_str_free(found("bull:a:b:id"), "a:b");
    ck_assert_ptr_null(found("bull:email:meta-paused")); /* Bull's paused flag */
    ck_assert_ptr_null(found("bull:email:idle"));
    ck_assert_ptr_null(found("bull::id"));
    ck_assert_ptr_null(found("bull:id"));
    ck_assert_ptr_null(found("bullx:email:id"));
    ck_assert_ptr_null(found("bull:email:7")); /* a job hash */
    char *m = bullmq_discovery_match("{bull}");
    ck_assert_str_eq(m, "{bull}:*:[im][de]*");
    free(m);
}
END_TEST

START_TEST(test_stalled)
{
    /* As recorded: XRANGE bull:cpu:events after a worker blocked past its lock. */
    const char *stalled_n[] = {"event", "jobId"}, *stalled_v[] = {"stalled", "1"};
    const char *waiting_n[] = {"event", "jobId", "prev"}, *waiting_v[] = {"waiting", "1", "active"};
    ck_assert(bullmq_is_stalled_event(stalled_n, stalled_v, 2));
    ck_assert(!bullmq_is_stalled_event(waiting_n, waiting_v, 3));
    const char *odd_n[] = {"jobId", "event"}, *odd_v[] = {"stalled", "completed"};
    ck_assert(!bullmq_is_stalled_event(odd_n, odd_v, 2)); /* the field, not any value */
    ck_assert(!bullmq_is_stalled_event(NULL, NULL, 0));
}
END_TEST

START_TEST(test_hash_tag)
{
    /* Every key <prefix>:<queue>:<suffix> of a queue hashes by one tag (a cluster's one slot). */
    ck_assert(bullmq_queue_tagged("{bull}", "email"));
    ck_assert(bullmq_queue_tagged("bull", "{a}"));
    ck_assert(bullmq_queue_tagged("app{x}", "email"));
    ck_assert(bullmq_queue_tagged("bull", "a:{b}:c"));
    ck_assert(!bullmq_queue_tagged("bull", "email"));
    ck_assert(!bullmq_queue_tagged("{}bull", "email")); /* "{}" is no tag */
    ck_assert(!bullmq_queue_tagged("bull", "{email"));  /* closed only in the suffix: no tag */
    ck_assert(!bullmq_queue_tagged("bull}", "{email"));
    /* the first "{" counts: "{}" then "{x}" is no tag either, as Redis reads it */
    ck_assert(!bullmq_queue_tagged("{}", "{x}"));
}
END_TEST

START_TEST(test_dlq_id_field)
{
    enum bullmq_id_field f;
    char why[300];
    ck_assert_int_eq(bullmq_dlq_id_field("job_id", &f, why, sizeof why), 0);
    ck_assert_int_eq(f, BULLMQ_ID_JOB_ID);
    ck_assert_int_eq(bullmq_dlq_id_field("name", &f, why, sizeof why), 0);
    ck_assert_int_eq(f, BULLMQ_ID_NAME);
    ck_assert_int_eq(bullmq_dlq_id_field("order.id", &f, why, sizeof why), 0);
    ck_assert_int_eq(f, BULLMQ_ID_DATA);
    const char *bad[] = {"", ".id", "order.", "order..id"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(bullmq_dlq_id_field(bad[i], &f, why, sizeof why), -1);
        ck_assert_ptr_nonnull(strstr(why, "want job_id (the job id), name (the job's name)"));
    }
}
END_TEST

static void check_work_id(enum bullmq_id_field f, const char *path, const char *data,
                          const char *want)
{
    char *got = bullmq_dlq_work_id(f, path, "17", "charge", data, data ? strlen(data) : 0);
    if (!want) {
        ck_assert_ptr_null(got);
        return;
    }
    check_str_free(got, want);
}

START_TEST(test_dlq_work_id)
{
    /* data as Queue.add stores it: JSON.stringify of the job's data */
    const char *data = "{\"order\":{\"id\":\"o-1\",\"n\":42},\"nul\":\"a\\u0000b\",\"e\":\"\"}";
    check_work_id(BULLMQ_ID_JOB_ID, "job_id", data, "17");
    check_work_id(BULLMQ_ID_NAME, "name", data, "charge");
    check_work_id(BULLMQ_ID_DATA, "order.id", data, "o-1");
    check_work_id(BULLMQ_ID_DATA, "order.n", data, "42");
    check_work_id(BULLMQ_ID_DATA, "order", data, NULL); /* an object is no id */
    check_work_id(BULLMQ_ID_DATA, "missing", data, NULL);
    check_work_id(BULLMQ_ID_DATA, "nul", data, NULL); /* a NUL: no text a table holds */
    check_work_id(BULLMQ_ID_DATA, "e", data, NULL);   /* empty */
    check_work_id(BULLMQ_ID_DATA, "order.id", "not json", NULL);
    check_work_id(BULLMQ_ID_DATA, "order.id", NULL, NULL); /* the hash has no data */
    ck_assert_ptr_null(bullmq_dlq_work_id(BULLMQ_ID_NAME, "name", "17", NULL, NULL, 0));
}
END_TEST

START_TEST(test_dlq_counts)
{
    /* BullMQ 6.7 counts attempts in atm; releases before 5 wrote attemptsMade */
    ck_assert_int_eq(bullmq_dlq_deliveries("2", NULL), 2);
    ck_assert_int_eq(bullmq_dlq_deliveries(NULL, "3"), 3);
    ck_assert_int_eq(bullmq_dlq_deliveries("1", "3"), 1);
    ck_assert_int_eq(bullmq_dlq_deliveries(NULL, NULL), -1);
    ck_assert_int_eq(bullmq_dlq_deliveries("-1", "x"), -1);
    ck_assert_int_eq(bullmq_dlq_deliveries("2.5", NULL), -1);
    /* the replay stamp: what the move script writes, else 0 */
    ck_assert_int_eq(bullmq_dlq_replays(NULL), 0);
    ck_assert_int_eq(bullmq_dlq_replays("1"), 1);
    ck_assert_int_eq(bullmq_dlq_replays("2"), 2);
    ck_assert_int_eq(bullmq_dlq_replays("x"), 0);
    ck_assert_int_eq(bullmq_dlq_replays("-3"), 0);
    ck_assert_int_eq(bullmq_dlq_replays("99999999999999999999"), 0); /* out of range */
}
END_TEST

START_TEST(test_dlq_dead_since)
{
    /* finishedOn in epoch ms, as moveToFinished writes it; else the failed set's score */
    ck_assert_double_eq_tol(bullmq_dlq_dead_since("1796148607866", "1"), 1796148607.866, 1e-6);
    ck_assert_double_eq_tol(bullmq_dlq_dead_since(NULL, "1796148607866"), 1796148607.866, 1e-6);
    ck_assert_double_eq_tol(bullmq_dlq_dead_since("NaN", "1796148607000"), 1796148607.0, 1e-6);
    ck_assert_double_eq(bullmq_dlq_dead_since("5", "-5"), 0); /* 1970: no time */
    ck_assert_double_eq(bullmq_dlq_dead_since("inf", NULL), 0);
    ck_assert_double_eq(bullmq_dlq_dead_since("", "12x"), 0);
}
END_TEST

/* CLIENT LIST recorded from Redis 7.0 with BullMQ 6.7.0 and Bull 4.16.5 peers: two Workers of
 * email (one named billing), one of ledger-eu, a QueueEvents of email (`:qe`, no worker), a
 * Bull 4 Queue#process of legacy, and unnamed connections (producers, the subscriber, redis-cli).
 * BullMQ's own getWorkersCount() of email said 2. */
START_TEST(test_workers)
{
    size_t len;
    char *list = fixture_text("bullmq/client_list.txt", &len);
    char **q;
    size_t n = bullmq_worker_queues(list, len, "bull", &q);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(bullmq_workers_of(q, n, "email"), 2);
    ck_assert_uint_eq(bullmq_workers_of(q, n, "ledger-eu"), 1);
    ck_assert_uint_eq(bullmq_workers_of(q, n, "legacy"), 1);
    ck_assert_uint_eq(bullmq_workers_of(q, n, "emai"), 0);
    ck_assert_uint_eq(bullmq_workers_of(q, n, "zzz"), 0);
    for (size_t i = 0; i < n; i++)
        free(q[i]);
    free(q);
    /* another prefix sees none of them */
    ck_assert_uint_eq(bullmq_worker_queues(list, len, "bul", &q), 0);
    free(q);
    free(list);
    /* names that stand for no worker: another suffix, no base64, a NUL, an empty one */
    static const char other[] = "id=1 name=bull:ZW1haWw=:x:billing\n"
                                "id=2 name=bull:!!!!\n"
                                "id=3 name=bull:AA==\n"
                                "id=4 name=bull:\n"
                                "id=5 lib-name=bull:ZW1haWw= name=\n"
                                "id=6 name=bull:ZW1haWw=:w:\r\n";
    n = bullmq_worker_queues(other, strlen(other), "bull", &q);
    ck_assert_uint_eq(n, 1); /* only the last: a Worker named "" */
    ck_assert_str_eq(q[0], "email");
    free(q[0]);
    free(q);
}
END_TEST

START_TEST(test_metrics_count)
{
    double n;
    ck_assert_int_eq(bullmq_metrics_count("0", &n), 0);
    ck_assert_double_eq(n, 0);
    ck_assert_int_eq(bullmq_metrics_count("12345", &n), 0);
    ck_assert_double_eq(n, 12345);
    ck_assert_int_eq(bullmq_metrics_count(NULL, &n), -1);
    ck_assert_int_eq(bullmq_metrics_count("", &n), -1);
    ck_assert_int_eq(bullmq_metrics_count("-1", &n), -1);
    ck_assert_int_eq(bullmq_metrics_count("1.5", &n), -1);
    ck_assert_int_eq(bullmq_metrics_count("99999999999999999999", &n), -1);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_meta_keys, 0},     {test_found_keys, 0},     {test_stalled, 0},
        {test_hash_tag, 0},      {test_dlq_id_field, 0},   {test_dlq_work_id, 0},
        {test_dlq_counts, 0},    {test_dlq_dead_since, 0}, {test_workers, 0},
        {test_metrics_count, 0},
    };
    return check_run_tests("bullmq", tests, CHECK_ROWS(tests), 0);
}
