/* check_kafka_dlq.c: unit tests for what `qrel dlq` decides on a Kafka dead-letter topic without a
 * broker (collectors/kafka/dead_letter.c): the replay group's name, where a replay starts reading a
 * partition, which topic a dead letter goes back to, the delivery count of Spring's attempts
 * header; and the refusals of replay.c that come before any I/O (no origin in a shared topic,
 * a partition stopped by an earlier failure). Reading, producing and committing are
 * tests/integration/dlq_kafka.sh's (librdkafka's mock cluster). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka.h"
#include "kafka/replay.h"
#include "support/check_run.h"
#include "support/check_str.h"

START_TEST(test_replay_group)
{
    check_str_free(kafka_replay_group("orders"), "qrel-dlq-replay.orders");
}
END_TEST

static const struct {
    int64_t low, high, committed, want;
} starts[] = {
    {0, 10, -1, 0},  /* never replayed: from the log start */
    {4, 10, -1, 4},  /* ... which retention has moved */
    {0, 10, 6, 6},   /* from the commit */
    {0, 10, 10, 10}, /* all replayed: nothing to read */
    {5, 10, 3, 5},   /* commit behind the log start: what was between is gone */
    {0, 3, 8, 0},    /* commit past the end (topic recreated): everything is new */
    {0, 0, -1, 0},   /* empty */
};

START_TEST(test_read_from)
{
    ck_assert_int_eq(kafka_dlq_read_from(starts[_i].low, starts[_i].high, starts[_i].committed),
                     starts[_i].want);
}
END_TEST

START_TEST(test_origin)
{
    /* A topic's own dead-letter topic: back to the queue, whatever the header says. */
    ck_assert_str_eq(kafka_dlq_origin("orders", 0, NULL), "orders");
    ck_assert_str_eq(kafka_dlq_origin("orders", 0, "orders-retry-1"), "orders");
    /* Shared: only the header tells. */
    ck_assert_str_eq(kafka_dlq_origin("payments", 1, "refunds"), "refunds");
    ck_assert_ptr_null(kafka_dlq_origin("payments", 1, NULL));
    ck_assert_ptr_null(kafka_dlq_origin("payments", 1, ""));
}
END_TEST

static const struct {
    const char *bytes;
    size_t len;
    int64_t want;
} attempts[] = {
    {"\x00\x00\x00\x03", 4, 3},   /* Spring: a 4-byte big-endian int */
    {"\x00\x00\x01\x00", 4, 256}, /* big-endian, not little */
    {"\x80\x00\x00\x00", 4, -1},  /* negative: no count */
    {"3", 1, 3},                  /* decimal text */
    {"1234", 4, 1234},            /* 4 digits are text, not an int */
    {"12a", 3, -1},               /* neither */
    {"\x00\x03", 2, -1},          /* a short int */
    {"", 0, -1},                  /* empty */
    {"999999999999999999", 18, 999999999999999999},
    {"9999999999999999999", 19, -1}, /* more digits than an int64 surely holds */
};

START_TEST(test_deliveries)
{
    ck_assert_int_eq(kafka_dlq_deliveries(attempts[_i].bytes, attempts[_i].len), attempts[_i].want);
}
END_TEST

START_TEST(test_deliveries_absent)
{
    ck_assert_int_eq(kafka_dlq_deliveries(NULL, 0), -1);
}
END_TEST

/* The replay stamp header: absent is 0 (never replayed), decimal text its count, else unknown. */
START_TEST(test_replays)
{
    ck_assert_int_eq(kafka_dlq_replays(NULL, 0), 0);
    ck_assert_int_eq(kafka_dlq_replays("1", 1), 1);
    ck_assert_int_eq(kafka_dlq_replays("23", 2), 23);
    ck_assert_int_eq(kafka_dlq_replays("", 0), -1);
    ck_assert_int_eq(kafka_dlq_replays("\0\0\0\2", 4), -1);
    ck_assert_int_eq(kafka_dlq_replays("-1", 2), -1);
}
END_TEST

/* In a shared topic a record without an origin header is refused by name, and so is every later
 * record of its partition (the replay group must not pass the first); the other partition is
 * not stopped by it. No broker is reached: cfg is never read on these paths. */
START_TEST(test_requeue_refusals)
{
    struct kafka_replay *r = kafka_replay_new("bus", "payments", "money.dlq", 1);
    ck_assert_str_eq(kafka_replay_group_name(r), "qrel-dlq-replay.payments");
    struct deadline dl = deadline_in(1);
    struct kafka_dead_letter first = {.partition = 0, .offset = 5};
    struct kafka_dead_letter later = {.partition = 0, .offset = 7};
    struct kafka_dead_letter other = {.partition = 1, .offset = 2};
    struct err e;
    ck_assert_int_eq(kafka_replay_requeue(r, NULL, &first, &dl, &e), -1);
    ck_assert_msg(strstr(e.msg, "\"money.dlq\" is shared by several topics and this record has "
                                "no header naming its topic (kafka_dlt-original-topic or "
                                "__connect.errors.topic): not replayed"),
                  "%s", e.msg);
    ck_assert_int_eq(kafka_replay_requeue(r, NULL, &later, &dl, &e), -1);
    ck_assert_msg(strstr(e.msg, "partition 0 offset 5 failed before it"), "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "\"qrel-dlq-replay.payments\""), "%s", e.msg);
    /* partition 1 is refused for its own reason (no origin), not for partition 0's */
    ck_assert_int_eq(kafka_replay_requeue(r, NULL, &other, &dl, &e), -1);
    ck_assert_msg(strstr(e.msg, "no header naming its topic"), "%s", e.msg);
    kafka_replay_free(r);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

int main(void)
{
    Suite *s = suite_create("kafka_dlq");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, test_replay_group);
    tcase_add_loop_test(tc, test_read_from, 0, N(starts));
    tcase_add_test(tc, test_origin);
    tcase_add_loop_test(tc, test_deliveries, 0, N(attempts));
    tcase_add_test(tc, test_deliveries_absent);
    tcase_add_test(tc, test_replays);
    tcase_add_test(tc, test_requeue_refusals);
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
