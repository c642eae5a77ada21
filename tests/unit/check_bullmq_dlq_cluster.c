/* check_bullmq_dlq_cluster.c: unit tests for `qrel dlq` on a bullmq source with cluster: true
 * (collectors/bullmq/dlq_cluster_reply.c, dlq_cluster.c): every key a replay of a hash-tagged queue
 * touches, the replay lock qrel:replay-lock:<prefix>:<queue>:failed included, hashes to the queue's
 * slot (so the move's EVAL runs on one master), and what a cluster's refusal of a dead-letter
 * command says. The replies are Redis 7.0's texts. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bullmq/bullmq.h"
#include "bullmq/dlq_cluster.h"
#include "common/redis_cluster.h"
#include "support/check_run.h"

static unsigned slot_of(const char *prefix, const char *queue, const char *suffix, int lock)
{
    char *key = xasprintf("%s%s:%s:%s", lock ? "qrel:replay-lock:" : "", prefix, queue, suffix);
    unsigned slot = redis_cluster_key_slot(key, strlen(key));
    free(key);
    return slot;
}

/* The keys of the move script (dlq.c) and the lock, against the failed set's slot. */
static int one_slot(const char *prefix, const char *queue)
{
    static const char *const suffix[] = {"wait", "meta",   "active", "marker", "prioritized",
                                         "pc",   "events", "o17",    "failed"};
    unsigned failed = slot_of(prefix, queue, "failed", 0);
    if (slot_of(prefix, queue, "failed", 1) != failed)
        return 0;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++)
        if (slot_of(prefix, queue, suffix[i], 0) != failed)
            return 0;
    return 1;
}

START_TEST(test_lock_in_the_queue_slot)
{
    static const char *const tagged[][2] = {
        {"{bull}", "email"}, {"bull", "{a}"},       {"bull", "{d}"},    {"app{x}", "email"},
        {"bull", "a:{b}:c"}, {"{bull}", "{inner}"}, {"dq", "{orders}"}, {"a{b}c", "charges"},
    };
    for (size_t i = 0; i < sizeof tagged / sizeof tagged[0]; i++) {
        /* the case of a tagged queue (dead_letter_validate's condition) */
        ck_assert_msg(bullmq_queue_tagged(tagged[i][0], tagged[i][1]), "%s %s", tagged[i][0],
                      tagged[i][1]);
        ck_assert_msg(one_slot(tagged[i][0], tagged[i][1]), "%s:%s: keys in more than one slot",
                      tagged[i][0], tagged[i][1]);
    }
    /* Without a tag the lock and the queue's keys spread: the validation refuses such a queue. */
    ck_assert(!bullmq_queue_tagged("bull", "email"));
    ck_assert(!one_slot("bull", "email"));
    ck_assert(!one_slot("bull", "{email")); /* closed only in a suffix: no tag of the queue */
}
END_TEST

static void expect_reply(const char *msg, enum bullmq_dlq_cluster_reply want, const char *why)
{
    char got[400] = "unchanged";
    ck_assert_int_eq(bullmq_dlq_cluster_reply(msg, strlen(msg), got, sizeof got), want);
    ck_assert_str_eq(got, why);
}

START_TEST(test_cluster_replies)
{
    expect_reply("MOVED 3300 127.0.0.1:7002", BULLMQ_DLQ_CLUSTER_MOVED,
                 "MOVED 3300 127.0.0.1:7002: the queue's slot is served by another master now (a "
                 "failover or a resharding); the command did nothing");
    expect_reply("ASK 3300 127.0.0.1:7003", BULLMQ_DLQ_CLUSTER_ASK,
                 "ASK 3300 127.0.0.1:7003: the queue's slot is migrating to another master: run "
                 "it again once the migration ends; the command did nothing");
    expect_reply("CROSSSLOT Keys in request don't hash to the same slot",
                 BULLMQ_DLQ_CLUSTER_CROSSSLOT,
                 "CROSSSLOT Keys in request don't hash to the same slot: the keys of one command "
                 "are in different hash slots: the prefix or the queue name needs a hash tag; the "
                 "command did nothing");
    expect_reply("CLUSTERDOWN Hash slot not served", BULLMQ_DLQ_CLUSTER_CLUSTERDOWN,
                 "CLUSTERDOWN Hash slot not served: the cluster does not serve the queue's slot "
                 "now; the command did nothing");
    expect_reply("CLUSTERDOWN The cluster is down", BULLMQ_DLQ_CLUSTER_CLUSTERDOWN,
                 "CLUSTERDOWN The cluster is down: the cluster does not serve the queue's slot "
                 "now; the command did nothing");
    expect_reply("TRYAGAIN Multiple keys request during rehashing of slot",
                 BULLMQ_DLQ_CLUSTER_TRYAGAIN,
                 "TRYAGAIN Multiple keys request during rehashing of slot: the queue's slot is "
                 "being resharded: run it again once that ends; the command did nothing");
    /* Anything else is the command's own reply: left to the hook, why untouched. */
    expect_reply("ERR Error running script: QREL job o1 belongs to a flow",
                 BULLMQ_DLQ_CLUSTER_OTHER, "unchanged");
    expect_reply("MOVEDX 1 a:1", BULLMQ_DLQ_CLUSTER_OTHER, "unchanged");
    expect_reply("ASK", BULLMQ_DLQ_CLUSTER_OTHER, "unchanged");
    expect_reply("", BULLMQ_DLQ_CLUSTER_OTHER, "unchanged");
    /* A huge text is cut at 200 bytes. */
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "CLUSTERDOWN ", 12);
    char got[600];
    ck_assert_int_eq(bullmq_dlq_cluster_reply(big, strlen(big), got, sizeof got),
                     BULLMQ_DLQ_CLUSTER_CLUSTERDOWN);
    ck_assert_int_eq((int)(strchr(got, ':') - got), 200);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {{test_lock_in_the_queue_slot, 0}, {test_cluster_replies, 0}};
    return check_run_tests("bullmq_dlq_cluster", tests, CHECK_ROWS(tests), 0);
}
