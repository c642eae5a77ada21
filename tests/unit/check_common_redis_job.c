/* check_common_redis_job.c: the exclude key of the Redis job kinds (collectors/common/redis_job.c)
 * as each kind this build has takes it: accepted where the kind discovers its queues (rq,
 * sidekiq, bullmq), judged by the shared exclude rules, refused beside queues with the reason,
 * and unknown to celery, which names its queues and discovers none. A kind the build left out
 * is skipped. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "support/check_run.h"
#include "support/kind_config.h"

/* The kinds that discover, and where (the end of their refusal beside queues). */
static const struct check_case discovering[] = {
    {"rq", "the rq:queues set"},
    {"sidekiq", "the queues set and in the jobs of the sets and work hashes"},
    {"bullmq", "SCAN <prefix>:*:meta and <prefix>:*:id"},
};

/* Configures a source of kind (skipped when not built) whose keys after address are more. */
static int configure_more(const struct collector_kind *kind, const char *more, struct err *e)
{
    char text[512];
    snprintf(text, sizeof text, "sources:\n  - name: j\n    kind: %s\n    address: h:1\n%s",
             kind->name, more);
    return configure_kind_text(kind, text, e);
}

START_TEST(test_exclude)
{
    const struct collector_kind *kind = collector_kind_find(discovering[_i].in);
    if (!kind)
        return;
    struct err e;
    ck_assert_msg(configure_more(kind, "    exclude: [\"tmp-*\", scratch]\n", &e) == 0, "%s",
                  e.msg);
    char want[256];
    snprintf(want, sizeof want,
             "x.yml:6:14: exclude: only without queues (it leaves out queues found in %s)",
             discovering[_i].want);
    check_refused(configure_more(kind, "    queues: [a]\n    exclude: [b]\n", &e), &e, want);
    check_refused(configure_more(kind, "    exclude: []\n", &e), &e,
                  "x.yml:5:14: exclude: want at least one glob (leave exclude out to exclude "
                  "nothing)");
    check_refused(configure_more(kind, "    exclude: [\"tmp.*\"]\n", &e), &e,
                  "x.yml:5:15: exclude: \"tmp.*\" looks like a regular expression (it has "
                  "\".*\"): exclude takes globs (*, ?, [...]; \"[.]\" for a literal dot before a "
                  "star)");
}
END_TEST

START_TEST(test_celery_has_none)
{
    const struct collector_kind *kind = collector_kind_find("celery");
    if (!kind)
        return;
    struct err e;
    int rc = configure_more(kind, "    exclude: [b]\n", &e);
    ck_assert_int_eq(rc, -1);
    const char *want = "x.yml:5:5: unknown key \"exclude\" in source \"j\" (known keys:";
    ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_exclude, CHECK_ROWS(discovering)},
        {test_celery_has_none, 0},
    };
    return check_run_tests("redis_job", tests, CHECK_ROWS(tests), 0);
}
