/* check_number.c: the strict number parser of flags and config keys (core/number.h): plain
 * decimal text within the caller's range, and nothing strtod or strtoll would also take (spaces,
 * '+', hex, exponents, inf, nan); durations in Prometheus' syntax within a range; and the clamp
 * from seconds to an int of milliseconds. */
#include <check.h>
#include <limits.h>
#include <math.h>

#include "number.h"
#include "support/check_run.h"

static const char *const bad_ints[] = {
    "",
    " 5",
    "5 ",
    "+5",
    "0x10",
    "1e3",
    "5.0",
    "-",
    "--5",
    "inf",
    "nan",
    "١",
    "-5", /* min is 0 below: no sign */
    "18446744073709551616",
    "9223372036854775808",
    "1001",
};

START_TEST(test_int_refused)
{
    long long v = 42;
    ck_assert_msg(num_parse_int(bad_ints[_i], 0, 1000, &v) == -1, "\"%s\" accepted", bad_ints[_i]);
    ck_assert_int_eq(v, 42);
}
END_TEST

START_TEST(test_int_accepted)
{
    long long v = 0;
    ck_assert_int_eq(num_parse_int("0", 0, 10, &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(num_parse_int("007", 0, 10, &v), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(num_parse_int("-3", -5, 10, &v), 0);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(num_parse_int("9223372036854775807", 0, LLONG_MAX, &v), 0);
    ck_assert(v == LLONG_MAX);
    ck_assert_int_eq(num_parse_int("-6", -5, 10, &v), -1);
    ck_assert_int_eq(num_parse_int(NULL, 0, 10, &v), -1);
}
END_TEST

static const char *const bad_decimals[] = {
    "",
    " 1",
    "1 ",
    "+1",
    "0x10",
    "1e-300",
    "1E3",
    "inf",
    "nan",
    "Infinity",
    ".5",
    "5.",
    "1..2",
    "1/s",
    "-1",
    "0",
    "1e6",
    "0.0001",  /* below min */
    "1000001", /* above max */
    "999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
    "999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
    "999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
    "999999999999999999999999999999999999999999",
};

START_TEST(test_decimal_refused)
{
    double v = 42;
    ck_assert_msg(num_parse_decimal(bad_decimals[_i], 0.001, 1e6, &v) == -1, "\"%s\" accepted",
                  bad_decimals[_i]);
    ck_assert(v == 42);
}
END_TEST

START_TEST(test_decimal_accepted)
{
    double v = 0;
    ck_assert_int_eq(num_parse_decimal("50", 0.001, 1e6, &v), 0);
    ck_assert(v == 50);
    ck_assert_int_eq(num_parse_decimal("0.5", 0.001, 1e6, &v), 0);
    ck_assert(v == 0.5);
    ck_assert_int_eq(num_parse_decimal("1000000", 0.001, 1e6, &v), 0);
    ck_assert(v == 1e6);
    ck_assert_int_eq(num_parse_decimal("-2.5", -10, 10, &v), 0);
    ck_assert(v == -2.5);
}
END_TEST

START_TEST(test_duration)
{
    double v = 42;
    ck_assert_int_eq(num_parse_duration("1h30m", 0, 86400, &v), 0);
    ck_assert(v == 5400);
    ck_assert_int_eq(num_parse_duration("0", 0, 86400, &v), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(num_parse_duration("500ms", 0.001, 86400, &v), 0);
    ck_assert(v == 0.5);
    v = 42;
    /* Out of range, bad syntax, and past int64 nanoseconds (Prometheus refuses it too). */
    for (const char *const *s = (const char *const[]){"25d", "0", "5", " 5s", "5s ", "-5s", "1.5s",
                                                      "inf", "s", "300y", "9223372037s", NULL};
         *s; s++)
        ck_assert_msg(num_parse_duration(*s, 0.001, 86400, &v) == -1, "\"%s\" accepted", *s);
    ck_assert(v == 42);
}
END_TEST

START_TEST(test_seconds_to_ms)
{
    ck_assert_int_eq(num_seconds_to_ms(2.5, 1000, INT_MAX), 2500);
    ck_assert_int_eq(num_seconds_to_ms(0.1, 1000, INT_MAX), 1000);
    /* 24.8 days and more: past INT_MAX milliseconds, where a cast is undefined. */
    ck_assert_int_eq(num_seconds_to_ms(30 * 86400.0, 1000, INT_MAX), INT_MAX);
    ck_assert_int_eq(num_seconds_to_ms(INFINITY, 1000, INT_MAX), INT_MAX);
    ck_assert_int_eq(num_seconds_to_ms(NAN, 1000, INT_MAX), 1000);
    ck_assert_int_eq(num_seconds_to_ms(-INFINITY, 1000, INT_MAX), 1000);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_int_refused, CHECK_ROWS(bad_ints)},
        {test_int_accepted, 0},
        {test_decimal_refused, CHECK_ROWS(bad_decimals)},
        {test_decimal_accepted, 0},
        {test_duration, 0},
        {test_seconds_to_ms, 0},
    };
    return check_run_tests("number", tests, CHECK_ROWS(tests), 0);
}
