/* check_flags.c: the Prometheus-style flag parser shared by qrel_exporter and qrel. */
#include <check.h>
#include <string.h>

#include "flags.h"
#include "support/check_run.h"

static struct flag proto[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "", NULL, 0},
    {"config.check", FLAG_BOOL, "false", "", NULL, 0},
    {"web.listen-address", FLAG_STRING, ":19318", "", NULL, 0},
};
#define N (sizeof proto / sizeof proto[0])

static int parse(struct flag *f, int argc, char **argv, int *npos, int *help, struct err *e)
{
    memcpy(f, proto, sizeof proto);
    return flags_parse(f, N, argc, argv, 1, npos, help, e);
}

START_TEST(test_forms)
{
    struct flag f[N];
    struct err e;
    int npos, help;
    char *argv[] = {
        "p", "--config.file=a.yml", "--web.listen-address", "127.0.0.1:1", "pos", "--config.check",
        NULL};
    ck_assert_int_eq(parse(f, 6, argv, &npos, &help, &e), 0);
    ck_assert_str_eq(flags_find(f, N, "config.file")->value, "a.yml");
    ck_assert_str_eq(flags_find(f, N, "web.listen-address")->value, "127.0.0.1:1");
    ck_assert(flags_bool(flags_find(f, N, "config.check")));
    ck_assert_int_eq(npos, 1);
    ck_assert_str_eq(argv[1], "pos");
    ck_assert_int_eq(help, 0);
}
END_TEST

START_TEST(test_defaults_and_help)
{
    struct flag f[N];
    struct err e;
    int npos, help;
    char *argv[] = {"p", "-h", "--config.check=false", NULL};
    ck_assert_int_eq(parse(f, 3, argv, &npos, &help, &e), 0);
    ck_assert_str_eq(flags_find(f, N, "config.file")->value, "qrel.yml");
    ck_assert_int_eq(flags_find(f, N, "config.file")->given, 0);
    ck_assert(!flags_bool(flags_find(f, N, "config.check")));
    ck_assert_int_eq(help, 1);
}
END_TEST

START_TEST(test_errors)
{
    struct flag f[N];
    struct err e;
    int npos, help;
    char *a1[] = {"p", "--nope=1", NULL};
    ck_assert_int_eq(parse(f, 2, a1, &npos, &help, &e), -1);
    ck_assert_str_eq(e.msg, "unknown flag --nope (see --help)");
    char *a2[] = {"p", "--config.file", NULL};
    ck_assert_int_eq(parse(f, 2, a2, &npos, &help, &e), -1);
    ck_assert_str_eq(e.msg, "flag --config.file needs a value");
    char *a3[] = {"p", "--config.check=yes", NULL};
    ck_assert_int_eq(parse(f, 2, a3, &npos, &help, &e), -1);
    ck_assert_str_eq(e.msg, "flag --config.check: want true or false, got \"yes\"");
    char *a4[] = {"p", "--config.fil=x", NULL}; /* a prefix is not the flag */
    ck_assert_int_eq(parse(f, 2, a4, &npos, &help, &e), -1);
}
END_TEST

/* A repeated flag: every value in order, both forms, not a flag that only starts with the name;
 * more than max is an error. */
START_TEST(test_collect)
{
    struct err e;
    const char *out[2];
    size_t n;
    char *argv[] = {"p",
                    "--web.listen-address=127.0.0.1:1",
                    "--web.listen-addressx=no",
                    "--web.listen-address",
                    "[::1]:2",
                    "pos",
                    NULL};
    ck_assert_int_eq(flags_collect(6, argv, 1, "web.listen-address", out, 2, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(out[0], "127.0.0.1:1");
    ck_assert_str_eq(out[1], "[::1]:2");
    char *none[] = {"p", "--config.file=a", NULL};
    ck_assert_int_eq(flags_collect(2, none, 1, "web.listen-address", out, 2, &n, &e), 0);
    ck_assert_uint_eq(n, 0);
    char *three[] = {"p", "--a=1", "--a=2", "--a=3", NULL};
    ck_assert_int_eq(flags_collect(4, three, 1, "a", out, 2, &n, &e), -1);
    ck_assert_str_eq(e.msg, "flag --a: at most 2 values");
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_forms, 0},
        {test_defaults_and_help, 0},
        {test_errors, 0},
        {test_collect, 0},
    };
    return check_run_tests("flags", tests, CHECK_ROWS(tests), 0);
}
