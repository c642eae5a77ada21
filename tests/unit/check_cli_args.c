/* check_cli_args.c: the numbers the qrel commands' flags take (cli/args.h), judged before
 * anything runs: plain decimal text within the ranges docs/dlq.md and docs/operations.md state,
 * and a usage error (exit status 2, 3 for check) for the rest. Before core/number.h, --rate took
 * "1e-300" (whose pacing interval overflowed a cast and turned pacing off), "0x10" and " 5", and
 * --limit took 2^63, which only the broker refused (exit status 1). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "support/check_run.h"

/* cli_args_parse over "qrel <command> <flags...>" (at most 6 flags). */
static int parse(enum cli_command cmd, const char *const *flags, struct cli_args *a)
{
    static const char *const names[] = {"scrape", "check", "dlq"};
    char *argv[10] = {"qrel", (char *)names[cmd]};
    int argc = 2;
    for (; flags[argc - 2] && argc < 9; argc++)
        argv[argc] = (char *)flags[argc - 2];
    return cli_args_parse(cmd, argc, argv, a);
}

/* A dlq replay with one more flag. */
static int replay_with(const char *flag, struct cli_args *a)
{
    const char *const flags[] = {"replay", "--source=s", "--queue=q", flag, NULL};
    return parse(CLI_DLQ, flags, a);
}

static const char *const refused[] = {
    "--rate=1e-300",
    "--rate=0x10",
    "--rate= 5",
    "--rate=5 ",
    "--rate=+5",
    "--rate=inf",
    "--rate=nan",
    "--rate=1e3",
    "--rate=0",
    "--rate=0.0001",
    "--rate=1000001",
    "--rate=5/m",
    "--limit=9223372036854775808",
    "--limit=18446744073709551615",
    "--limit=1000001",
    "--limit=0",
    "--limit=+5",
    "--limit=5.0",
    "--sample=1000001",
    "--sample=-1",
    "--timeout=25h",
    "--timeout=300y",
    "--timeout=0",
    "--timeout=5",
};

START_TEST(test_refused)
{
    struct cli_args a;
    ck_assert_msg(replay_with(refused[_i], &a) == 2, "%s was not refused", refused[_i]);
}
END_TEST

START_TEST(test_accepted)
{
    struct cli_args a;
    ck_assert_int_eq(replay_with("--rate=50/s", &a), -1);
    ck_assert(a.o.rate == 50);
    ck_assert_int_eq(replay_with("--rate=0.5", &a), -1);
    ck_assert(a.o.rate == 0.5);
    ck_assert_int_eq(replay_with("--rate=0.001", &a), -1);
    ck_assert(a.o.rate == 0.001);
    ck_assert_int_eq(replay_with("--rate=1000000", &a), -1);
    ck_assert_int_eq(replay_with("--limit=1000000", &a), -1);
    ck_assert_uint_eq(a.o.limit, 1000000);
    ck_assert_int_eq(replay_with("--sample=0", &a), -1);
    ck_assert_uint_eq(a.sample, 0);
    ck_assert_int_eq(replay_with("--timeout=24h", &a), -1);
    ck_assert(a.timeout == 86400);
    ck_assert_int_eq(replay_with("--yes", &a), -1);
    ck_assert_str_eq(a.source, "s");
    ck_assert_str_eq(a.queue, "q");
    ck_assert_uint_eq(a.sample, 10);
}
END_TEST

/* check answers a usage error as a Nagios plugin: UNKNOWN, 3. */
START_TEST(test_check_timeout)
{
    struct cli_args a;
    ck_assert_int_eq(parse(CLI_CHECK, (const char *const[]){"--timeout=25h", NULL}, &a), 3);
    ck_assert_int_eq(parse(CLI_CHECK, (const char *const[]){"--timeout=1e3s", NULL}, &a), 3);
    ck_assert_int_eq(parse(CLI_CHECK, (const char *const[]){"--timeout=10s", NULL}, &a), -1);
    ck_assert(a.timeout == 10);
}
END_TEST

int main(void)
{
    /* The refusals' messages (on stderr) are the test's noise, not its output. */
    if (!freopen("/dev/null", "w", stderr))
        return 1;
    const struct check_test tests[] = {
        {test_refused, CHECK_ROWS(refused)},
        {test_accepted, 0},
        {test_check_timeout, 0},
    };
    return check_run_tests("cli_args", tests, CHECK_ROWS(tests), 0);
}
