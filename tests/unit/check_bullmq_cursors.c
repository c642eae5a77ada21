/* check_bullmq_cursors.c: unit tests for collectors/bullmq/cursors.c: the table of event cursors
 * kind bullmq keeps between scrapes (found again by name after it grew and after its index was
 * rebuilt, as each scrape rebuilds it) and the stream ids it keeps, as Redis writes them. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "bullmq/cursors.h"
#include "support/check_run.h"

START_TEST(test_table)
{
    struct bullmq_cursors t = {0};
    struct hashtab index = {0};
    char name[32];
    for (int i = 0; i < 1000; i++) { /* grows past its first room, names and entries both */
        snprintf(name, sizeof name, "q%d", i);
        ck_assert_uint_eq(bullmq_cursor_for(&t, &index, name), (size_t)i);
    }
    t.c[7].stalled_total = 3;
    hashtab_free(&index);
    struct hashtab again = {0}; /* the next scrape's index */
    bullmq_cursors_index(&t, &again);
    bullmq_cursors_reserve(&t, 2);
    ck_assert_uint_eq(bullmq_cursor_for(&t, &again, "q7"), 7);
    ck_assert_double_eq(t.c[7].stalled_total, 3);
    ck_assert_str_eq(bullmq_cursor_queue(&t, 999), "q999");
    ck_assert_uint_eq(bullmq_cursor_for(&t, &again, "a:b"), 1000); /* new, after the others */
    ck_assert_int_eq(t.c[1000].has_last, 0);
    ck_assert_str_eq(bullmq_cursor_queue(&t, 1000), "a:b");
    ck_assert_uint_eq(bullmq_cursor_for(&t, &again, "a:b"), 1000);
    ck_assert_uint_eq(t.n, 1001);
    hashtab_free(&again);
    bullmq_cursors_free(&t);
}
END_TEST

START_TEST(test_stream_ids)
{
    struct bullmq_stream_id id;
    char s[48];
    ck_assert_int_eq(bullmq_stream_id_parse("1796541471123-0", &id), 0);
    bullmq_stream_id_after(&id, s, sizeof s);
    ck_assert_str_eq(s, "(1796541471123-0");
    ck_assert_int_eq(bullmq_stream_id_parse("18446744073709551615-18446744073709551615", &id), 0);
    bullmq_stream_id_after(&id, s, sizeof s);
    ck_assert_str_eq(s, "(18446744073709551615-18446744073709551615");
    ck_assert_int_eq(bullmq_stream_id_parse("0-0", &id), 0);
    ck_assert(id.ms == 0 && id.seq == 0);
    const char *bad[] = {"",      "-",    "1",    "1-",   "-1",   "1-x",
                         "1-2-3", " 1-2", "+1-2", "1-+2", "1-2 ", "18446744073709551616-0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(bullmq_stream_id_parse(bad[i], &id) == -1, "\"%s\" taken", bad[i]);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {{test_table, 0}, {test_stream_ids, 0}};
    return check_run_tests("bullmq_cursors", tests, CHECK_ROWS(tests), 0);
}
