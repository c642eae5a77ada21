/* check_sources.c: loading whole configuration files: the core's keys (global, name, kind,
 * timeout) and their exact error messages, with the real registry behind `kind`. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "sources.h"
#include "support/check_run.h"

struct bad_case {
    const char *yaml;
    const char *msg;
};

static const struct bad_case bad[] = {
    {"sources:\n  - kind: redis_stream\n",
     "x.yml:2:5: missing required key \"name\" in this mapping"},
    {"sources:\n  - name: a\n", "x.yml:2:5: missing required key \"kind\" in this mapping"},
    {"sources:\n  - name: a\n    kind: redus\n",
     "x.yml:3:11: kind: want one of KINDS, got \"redus\""}, /* KINDS: the registry's list */
    {"sources:\n  - name: a b\n    kind: redis_stream\n",
     "x.yml:2:11: name: want letters, digits, '_', '-', '.' or ':' (1 to 128), got \"a b\""},
    {"sources:\n  - name: a\n    kind: redis_stream\n    address: h:1\n    streams: [{name: s}]\n"
     "  - name: a\n    kind: redis_stream\n",
     "x.yml:6:11: name: source \"a\" is defined twice"},
    {"sources:\n  - name: a\n    kind: redis_stream\n    timeout: 0\n",
     "x.yml:4:14: timeout: want a duration from 1ms to 1d, got \"0\""},
    {"global:\n  timeout: 5\n", "x.yml:2:12: timeout: want a duration like \"5s\", got \"5\""},
    {"global:\n  timeout: 0s\n", "x.yml:2:12: timeout: want a duration from 1ms to 1d, got \"0s\""},
    /* A day at most: past 24.8 days a timeout overflowed the int of milliseconds a library
     * takes (kafka's became 1 s). */
    {"global:\n  timeout: 25d\n",
     "x.yml:2:12: timeout: want a duration from 1ms to 1d, got \"25d\""},
    {"sources:\n  - name: a\n    kind: redis_stream\n    timeout: 1d1ms\n",
     "x.yml:4:14: timeout: want a duration from 1ms to 1d, got \"1d1ms\""},
    {"global:\n  scrape_timeout_offset: 2d\n",
     "x.yml:2:26: scrape_timeout_offset: want a duration from 0 to 1d, got \"2d\""},
    {"global:\n  scrape_timeout: 1s\n",
     "x.yml:2:3: unknown key \"scrape_timeout\" in global (known keys: scrape_timeout_offset, "
     "timeout)"},
    {"source:\n  - name: a\n", "x.yml:1:1: unknown key \"source\" in the top level (known keys: "
                               "audit, dead_letters, global, sources)"},
    {"sources:\n  name: a\n", "x.yml:2:3: sources: want a list, got a mapping"},
    {"sources:\n  - just-a-string\n",
     "x.yml:2:5: each entry of sources: want a mapping, got a string"},
};

/* The expected message with KINDS replaced by the kinds this build has, in registry order. */
static void expected(const char *msg, char *out, size_t cap)
{
    char kinds[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < collector_kind_count(); i++)
        len += (size_t)snprintf(kinds + len, sizeof kinds - len, "%s%s", i ? ", " : "",
                                collector_kind_at(i)->name);
    const char *at = strstr(msg, "KINDS");
    if (!at) {
        snprintf(out, cap, "%s", msg);
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(at - msg), msg, kinds, at + 5);
}

START_TEST(test_bad_config)
{
    struct err e;
    char want[600];
    err_clear(&e);
    struct sources *s = sources_load_string("x.yml", bad[_i].yaml, &e);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    expected(bad[_i].msg, want, sizeof want);
    ck_assert_str_eq(e.msg, want);
}
END_TEST

START_TEST(test_good_config)
{
    struct err e;
    err_clear(&e);
    struct sources *s = sources_load_string(
        "x.yml",
        "global:\n  timeout: 7s\n  scrape_timeout_offset: 250ms\nsources:\n"
        "  - name: a\n    kind: redis_stream\n    address: 127.0.0.1:6379\n"
        "    streams: [{name: s}]\n"
        "  - name: b\n    kind: redis_stream\n    timeout: 2s\n    address: 127.0.0.1:6379\n"
        "    streams: [{pattern: \"s*\"}]\n",
        &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_uint_eq(s->n, 2);
    ck_assert_double_eq(s->timeout, 7);
    ck_assert_double_eq(s->scrape_timeout_offset, 0.25);
    ck_assert_double_eq(sources_find(s, "a")->timeout, 7);
    ck_assert_double_eq(sources_find(s, "b")->timeout, 2);
    ck_assert_str_eq(sources_find(s, "b")->kind->name, "redis_stream");
    ck_assert_ptr_null(sources_find(s, "c"));
    sources_free(s);
}
END_TEST

START_TEST(test_empty_config)
{
    struct err e;
    err_clear(&e);
    struct sources *s = sources_load_string("x.yml", "", &e);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->n, 0);
    ck_assert_double_eq(s->timeout, SOURCES_DEFAULT_TIMEOUT);
    sources_free(s);
}
END_TEST

/* The packaged /etc/qrel/qrel.yml ends in an empty `sources:` (a null, not a list) so that the
 * first source is added under it: it must load as zero sources, like `sources: []`. */
static const char *const empty_lists[] = {"sources:\n", "sources: []\n", "sources: ~\n",
                                          "global:\n  timeout: 5s\nsources:\n"};

START_TEST(test_empty_sources)
{
    struct err e;
    err_clear(&e);
    struct sources *s = sources_load_string("qrel.yml", empty_lists[_i], &e);
    ck_assert_msg(s != NULL, "%s: %s", empty_lists[_i], e.msg);
    ck_assert_uint_eq(s->n, 0);
    sources_free(s);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_bad_config, CHECK_ROWS(bad)},
        {test_good_config, 0},
        {test_empty_config, 0},
        {test_empty_sources, CHECK_ROWS(empty_lists)},
    };
    return check_run_tests("sources", tests, CHECK_ROWS(tests), 0);
}
