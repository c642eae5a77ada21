/* check_common_glob.c: the glob of every `pattern` key (collectors/common/glob.c) and the check
 * that tells a regular expression written where a glob is wanted. */
#include <check.h>
#include <stdlib.h>

#include "common/glob.h"
#include "support/check_run.h"

START_TEST(test_match)
{
    ck_assert(glob_match("jobs.*", "jobs.email"));
    ck_assert(!glob_match("jobs.*", "jobsemail")); /* the dot is a dot */
    ck_assert(glob_match("jobs*", "jobs"));
    ck_assert(glob_match("q?", "q1"));
    ck_assert(!glob_match("q?", "q12"));
    ck_assert(glob_match("[ab]-*", "b-x"));
    ck_assert(!glob_match("[ab]-*", "c-x"));
    ck_assert(glob_match("*", "a/b.c")); /* no flags: '*' crosses '/' and '.' as SCAN MATCH does */
    ck_assert(!glob_match("orders", "orders2")); /* the whole name */
}
END_TEST

START_TEST(test_regex_syntax)
{
    ck_assert_ptr_null(glob_regex_syntax("orders-*"));
    ck_assert_ptr_null(glob_regex_syntax("jobs.?[0-9]"));
    ck_assert_ptr_null(glob_regex_syntax("a[.]*"));
    ck_assert_str_eq(glob_regex_syntax("mail.*"), ".*");
    ck_assert_str_eq(glob_regex_syntax("^mail"), "^");
    ck_assert_str_eq(glob_regex_syntax("mail$"), "$");
    ck_assert_str_eq(glob_regex_syntax("a+"), "+");
    ck_assert_str_eq(glob_regex_syntax("(a)"), "(");
    ck_assert_str_eq(glob_regex_syntax("a|b"), "|");
    ck_assert_str_eq(glob_regex_syntax("a\\.b"), "\\");
    ck_assert_str_eq(glob_regex_syntax("a{2}"), "{");
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_match, 0},
        {test_regex_syntax, 0},
    };
    return check_run_tests("glob", tests, CHECK_ROWS(tests), 0);
}
