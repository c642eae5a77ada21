/* check_common_exclude.c: the exclude keys every discovering kind shares
 * (collectors/common/exclude.c): globs and a whole-name regex, the errors at file:line:col, and
 * the count qrel_excluded_objects serves. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/exclude.h"
#include "metrics.h"
#include "support/check_run.h"
#include "support/sample.h"

/* Reads and checks the exclude keys of the mapping text (regex_key may be NULL); returns the
 * result, e holding the message. */
static int load(const char *text, const char *regex_key, struct exclude *x, struct err *e)
{
    err_clear(e);
    struct cfg_doc *d = cfg_parse_string("x.yml", text, strlen(text), e);
    ck_assert_msg(d != NULL, "YAML of the test: %s", e->msg);
    struct cfg_node *map = cfg_doc_root(d);
    int rc = exclude_read(x, map, "exclude", regex_key, e);
    if (!rc)
        rc = exclude_check(x, map, e);
    cfg_doc_free(d);
    return rc;
}

START_TEST(test_globs_and_regex)
{
    struct exclude x;
    struct err e;
    ck_assert_int_eq(load("exclude: [\"amq.gen-*\", \"rpc.?\"]\n"
                          "exclude_regex: \"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                          "[0-9a-f]{12}\"\n",
                          "exclude_regex", &x, &e),
                     0);
    ck_assert(exclude_any(&x));
    ck_assert(exclude_match(&x, "amq.gen-JzTY20BRgKO-HjmUJj0wLg"));
    ck_assert(exclude_match(&x, "rpc.1"));
    ck_assert(!exclude_match(&x, "rpc.12"));
    ck_assert(!exclude_match(&x, "orders"));
    ck_assert(exclude_match(&x, "6f1c2d3e-aaaa-4bbb-8ccc-0123456789ab"));
    /* the whole name: a UUID inside a longer name is not excluded */
    ck_assert(!exclude_match(&x, "billing-6f1c2d3e-aaaa-4bbb-8ccc-0123456789ab"));
    ck_assert(exclude_drop(&x, "rpc.2"));
    ck_assert(!exclude_drop(&x, "orders"));
    ck_assert_uint_eq(x.dropped, 1);

    struct metric_set *s = metric_set_new("src", "rabbitmq");
    exclude_emit(&x, s, "queue");
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_double_eq(sample_value(s, "qrel_excluded_objects", "object", "queue", NULL), 1);
    ck_assert_uint_eq(x.dropped, 0); /* starts again for the next collection */
    metric_set_free(s);
    exclude_free(&x);
    ck_assert_ptr_null(x.globs);
}
END_TEST

START_TEST(test_absent)
{
    struct exclude x;
    struct err e;
    ck_assert_int_eq(load("other: 1\n", "exclude_regex", &x, &e), 0);
    ck_assert(!exclude_any(&x));
    ck_assert(!exclude_drop(&x, "anything"));
    struct metric_set *s = metric_set_new("src", "rabbitmq");
    exclude_emit(&x, s, "queue"); /* nothing configured: no series */
    ck_assert_uint_eq(sample_count(s, "qrel_excluded_objects"), 0);
    metric_set_free(s);
    exclude_free(&x);
}
END_TEST

static void refused(const char *text, const char *regex_key, const char *want)
{
    struct exclude x;
    struct err e;
    ck_assert_int_eq(load(text, regex_key, &x, &e), -1);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    ck_assert_str_eq(e.msg, want);
    exclude_free(&x);
}

START_TEST(test_errors)
{
    refused("exclude: \"amq.gen-*\"\n", NULL,
            "x.yml:1:10: exclude: want a list of strings, got a string");
    refused("exclude: []\n", NULL,
            "x.yml:1:10: exclude: want at least one glob (leave exclude out to exclude nothing)");
    refused("exclude: [a, \"\"]\n", NULL,
            "x.yml:1:14: exclude: want a non-empty glob in each entry");
    refused("exclude: [a, \"reply.*\"]\n", "exclude_regex",
            "x.yml:1:14: exclude: \"reply.*\" looks like a regular expression (it has \".*\"): "
            "exclude takes globs (*, ?, [...]); write exclude_regex: for a regular expression");
    refused("exclude: [\"^tmp\"]\n", NULL,
            "x.yml:1:11: exclude: \"^tmp\" looks like a regular expression (it has \"^\"): "
            "exclude takes globs (*, ?, [...]; \"[.]\" for a literal dot before a star)");
    refused("exclude_regex: \"(\"\n", "exclude_regex",
            "x.yml:1:16: exclude_regex: want a regular expression (POSIX extended): "
            "Unmatched ( or \\(");
    refused("exclude_regex: \"\"\n", "exclude_regex",
            "x.yml:1:16: exclude_regex: want a non-empty regular expression");
    refused("exclude_regex: [a]\n", "exclude_regex",
            "x.yml:1:16: exclude_regex: want a string, got a list");
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_globs_and_regex, 0},
        {test_absent, 0},
        {test_errors, 0},
    };
    return check_run_tests("exclude", tests, CHECK_ROWS(tests), 0);
}
