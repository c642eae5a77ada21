/* check_common_entries.c: the skipped-entry counts and the sane ages every kind reading entries
 * it did not write uses (collectors/common/entries.c): the timestamps hostile or broken writers
 * leave (BullMQ's processedOn -5, NaN, 1970, a year ahead) give no age, and skipped entries are
 * counted per queue and reason and emitted as qrel_skipped_entries. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "common/entries.h"
#include "support/check_run.h"
#include "support/sample.h"

#define NOW 1796138815.0 /* 2026-12-01 */

START_TEST(test_age)
{
    double age = -1;
    ck_assert_int_eq(entry_age(NOW, NOW - 30, &age), 0);
    ck_assert_double_eq(age, 30);
    ck_assert_int_eq(entry_age(NOW, NOW + ENTRY_CLOCK_SKEW, &age), 0); /* a clock a bit ahead */
    ck_assert_double_eq(age, 0);
    ck_assert_int_eq(entry_age(NOW, ENTRY_MIN_TIMESTAMP, &age), 0);
    age = 7;
    ck_assert_int_eq(entry_age(NOW, -5.0 / 1000, &age), -1); /* processedOn -5 (ms) */
    ck_assert_int_eq(entry_age(NOW, -5, &age), -1);
    ck_assert_int_eq(entry_age(NOW, 0, &age), -1);
    ck_assert_int_eq(entry_age(NOW, 5, &age), -1);          /* near the epoch: decades */
    ck_assert_int_eq(entry_age(NOW, NOW * 1000, &age), -1); /* milliseconds read as seconds */
    ck_assert_int_eq(entry_age(NOW, NOW + ENTRY_CLOCK_SKEW + 1, &age), -1);
    ck_assert_int_eq(entry_age(NOW, NAN, &age), -1);
    ck_assert_int_eq(entry_age(NOW, INFINITY, &age), -1);
    ck_assert_int_eq(entry_age(NOW, -INFINITY, &age), -1);
    ck_assert_double_eq(age, 7); /* left alone when refused */
}
END_TEST

START_TEST(test_skips)
{
    struct entry_skips s = {0};
    double age;
    ck_assert_int_eq(entry_skips_count(&s, NULL, ENTRY_SKIP_COUNT), 0);
    entry_skips_add(&s, "emails", ENTRY_NOT_JSON);
    entry_skips_add(&s, "emails", ENTRY_NOT_JSON);
    entry_skips_add(&s, NULL, ENTRY_MISSING_FIELD);  /* names no queue: "" */
    entry_skips_add(&s, "emails", ENTRY_SKIP_COUNT); /* no such reason: nothing */
    ck_assert_int_eq(entry_skips_age(&s, "active", NOW, -0.005, &age), -1);
    ck_assert_int_eq(entry_skips_age(&s, "active", NOW, NOW - 2, &age), 0);
    ck_assert_double_eq(age, 2);
    ck_assert_double_eq(entry_skips_count(&s, "emails", ENTRY_NOT_JSON), 2);
    ck_assert_double_eq(entry_skips_count(&s, "emails", ENTRY_SKIP_COUNT), 2);
    ck_assert_double_eq(entry_skips_count(&s, "active", ENTRY_BAD_TIMESTAMP), 1);
    ck_assert_double_eq(entry_skips_count(&s, NULL, ENTRY_SKIP_COUNT), 4);

    struct metric_set *out = metric_set_new("jobs", "bullmq");
    entry_skips_emit(&s, out);
    ck_assert_int_eq(metric_set_len(out), 3); /* only what was counted */
    ck_assert_double_eq(
        sample_value(out, "qrel_skipped_entries", "queue", "emails", "reason", "not_json", NULL),
        2);
    ck_assert_double_eq(
        sample_value(out, "qrel_skipped_entries", "queue", "", "reason", "missing_field", NULL), 1);
    ck_assert_double_eq(sample_value(out, "qrel_skipped_entries", "queue", "active", "reason",
                                     "bad_timestamp", NULL),
                        1);
    metric_set_free(out);
    entry_skips_free(&s);
    ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(entry_skip_name(ENTRY_NOT_JSON), "not_json");
    ck_assert_str_eq(entry_skip_name(ENTRY_MISSING_FIELD), "missing_field");
    ck_assert_str_eq(entry_skip_name(ENTRY_BAD_VALUE), "bad_value");
    ck_assert_str_eq(entry_skip_name(ENTRY_BAD_TIMESTAMP), "bad_timestamp");
    ck_assert_str_eq(entry_skip_name(ENTRY_TOO_DEEP), "too_deep");
    ck_assert_str_eq(entry_skip_name(ENTRY_SKIP_COUNT), "unknown");
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {{test_age, 0}, {test_skips, 0}, {test_names, 0}};
    return check_run_tests("common_entries", tests, CHECK_ROWS(tests), 0);
}
