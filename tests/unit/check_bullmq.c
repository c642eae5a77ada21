/* check_bullmq.c: unit tests for collectors/bullmq/parse.c: queue names from the `meta` keys
 * BullMQ 6.7 creates (as the integration test's SCAN finds them), and stalled events as BullMQ
 * writes them to a queue's events stream. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bullmq/bullmq.h"
#include "support/check_run.h"
#include "support/check_str.h"

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

int main(void)
{
    const struct check_test tests[] = {
        {test_meta_keys, 0},
        {test_stalled, 0},
        {test_hash_tag, 0},
    };
    return check_run_tests("bullmq", tests, CHECK_ROWS(tests), 0);
}
