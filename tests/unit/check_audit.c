/* check_audit.c: the reliability rules on hand-built metric sets: each rule fires with its exact
 * message and stays silent at its boundary; the report's order, counts and status; the
 * qrel_audit_failed series; the text and JSON of `qrel check`; the `audit:` configuration. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "audit_report.h"
#include "expfmt.h"
#include "sources.h"
#include "buf.h"
#include "support/check_run.h"

/* A collection under construction: up to 16 sets, freed by col_free. */
struct col {
    struct metric_set *sets[16];
    size_t n;
};

static struct metric_set *col_set(struct col *c, const char *source, const char *kind)
{
    struct metric_set *s = metric_set_new(source, kind);
    c->sets[c->n++] = s;
    return s;
}

/* The meta series of a source, as the scheduler adds them. */
static void col_up(struct col *c, const char *source, const char *kind, int up)
{
    metric_set_add(col_set(c, source, kind), "qrel_collector_up", up ? 1.0 : 0.0, NULL);
}

static void col_free(struct col *c)
{
    for (size_t i = 0; i < c->n; i++)
        metric_set_free(c->sets[i]);
    c->n = 0;
}

static struct audit_report *run(struct col *c, const struct audit_config *cfg)
{
    for (size_t i = 0; i < c->n; i++)
        ck_assert_msg(metric_set_error(c->sets[i]) == NULL, "%s", metric_set_error(c->sets[i]));
    return audit_run(c->sets, c->n, cfg);
}

/* The finding of rule on queue, or NULL. */
static const struct audit_finding *finding(const struct audit_report *r, enum audit_rule rule,
                                           const char *queue)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (r->findings[i].rule == rule && strcmp(r->findings[i].queue, queue) == 0)
            return &r->findings[i];
    return NULL;
}

/* ---- dead_letter_queue_not_empty ---- */

START_TEST(test_dead_letters)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "cache", "redis_stream");
    metric_set_add(s, "qrel_dead_letter_messages", 3, "queue", "orders", "dead_letter_queue",
                   "orders.dlq", NULL);
    metric_set_add(s, "qrel_dead_letter_oldest_age_seconds", 200, "queue", "orders",
                   "dead_letter_queue", "orders.dlq", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "empty", "dead_letter_queue",
                   "empty.dlq", NULL);
    col_up(&c, "cache", "redis_stream", 1);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_CRITICAL);
    ck_assert_str_eq(f->source, "cache");
    ck_assert_str_eq(f->kind, "redis_stream");
    ck_assert_ptr_null(f->group);
    ck_assert_double_eq(f->value, 3);
    ck_assert_str_eq(f->message,
                     "dead-letter queue orders.dlq holds 3 messages, the oldest 3m20s old: the "
                     "broker gave up on them, which does not mean their work was not done; "
                     "classify each against your dedup or claim table before replaying, and give "
                     "the dead-letter queue an owner");
    ck_assert_ptr_null(finding(r, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, "empty"));
    ck_assert_int_eq(r->status, AUDIT_CRITICAL);
    ck_assert_uint_eq(r->count[AUDIT_CRITICAL], 1);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* Where the dead_letters join classified them, the finding says how many were done (a replay
 * would repeat them) and what to run for the rest; with none not done, that nothing needs it. */
static const char *stamped_message(double done, double not_done, double unknown, double poison);
static const char *classified_message(double done, double not_done, double unknown)
{
    return stamped_message(done, not_done, unknown, -1);
}

/* ... and, with the replay stamps' counts (poison >= 0), how many of them are poison. */
static const char *stamped_message(double done, double not_done, double unknown, double poison)
{
    static char msg[900];
    struct col c = {0};
    struct metric_set *s = col_set(&c, "cache", "redis_stream");
    metric_set_add(s, "qrel_dead_letter_messages", done + not_done + unknown, "queue", "orders",
                   "dead_letter_queue", "orders.dlq", NULL);
    const char *works[] = {"done", "not_done", "unknown"};
    double v[] = {done, not_done, unknown};
    for (int i = 0; i < 3; i++)
        metric_set_add(s, "qrel_dead_letter_classified_messages", v[i], "queue", "orders",
                       "dead_letter_queue", "orders.dlq", "work", works[i], NULL);
    const char *replays[] = {"never", "once", "poison"};
    double rv[] = {done + not_done + unknown - poison, 0, poison};
    for (int i = 0; i < 3 && poison >= 0; i++)
        metric_set_add(s, "qrel_dead_letter_replayed_messages", rv[i], "queue", "orders",
                       "dead_letter_queue", "orders.dlq", "replays", replays[i], NULL);
    col_up(&c, "cache", "redis_stream", 1);
    struct audit_report *r = run(&c, NULL);
    const struct audit_finding *f = finding(r, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq(f->value, done + not_done + unknown);
    snprintf(msg, sizeof msg, "%s", f->message);
    audit_report_free(r);
    col_free(&c);
    return msg;
}

START_TEST(test_dead_letters_classified)
{
    ck_assert_str_eq(classified_message(22, 2, 0),
                     "dead-letter queue orders.dlq holds 24 messages, 22 of them done (replaying "
                     "those would repeat the work), 2 not done and 0 unknown by the work table: "
                     "replay only the not-done ones (`qrel dlq replay --source=cache "
                     "--queue=orders`) and give the dead-letter queue an owner");
    ck_assert_str_eq(classified_message(0, 0, 5),
                     "dead-letter queue orders.dlq holds 5 messages, 0 of them done, 0 not done "
                     "and 5 unknown by the work table: look at the unknown ones (`qrel dlq "
                     "inspect --source=cache --queue=orders`) and give the dead-letter queue an "
                     "owner");
    ck_assert_str_eq(classified_message(3, 0, 0),
                     "dead-letter queue orders.dlq holds 3 messages, 3 of them done (replaying "
                     "those would repeat the work), 0 not done and 0 unknown by the work table: "
                     "nothing needs replaying; give the dead-letter queue an owner");
    /* No poison among them: the message is the same. */
    ck_assert_str_eq(stamped_message(3, 0, 0, 0), classified_message(3, 0, 0));
    ck_assert_str_eq(stamped_message(1, 2, 0, 2),
                     "dead-letter queue orders.dlq holds 3 messages, 1 of them done (replaying "
                     "those would repeat the work), 2 not done and 0 unknown by the work table: "
                     "replay only the not-done ones (`qrel dlq replay --source=cache "
                     "--queue=orders`) and give the dead-letter queue an owner; 2 of them poison "
                     "(replayed 2 times or more and dead again each time: fix what fails on them "
                     "before replaying; `qrel dlq inspect --source=cache --queue=orders` lists "
                     "their ids, and a replay skips them unless --include-poison)");
}
END_TEST

/* ---- lease_margin_below_1 / lease_margin_below_2 ---- */

static struct audit_report *margin_case(struct col *c, double margin)
{
    struct metric_set *s = col_set(c, "db", "claim_table");
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "orders", NULL);
    metric_set_add(s, "qrel_handler_duration_seconds", 30 / margin, "queue", "orders", "quantile",
                   "0.99", NULL);
    metric_set_add(s, "qrel_handler_duration_seconds", 99, "queue", "orders", "quantile", "1",
                   NULL);
    metric_set_add(s, "qrel_max_deliveries", 3, "queue", "orders", NULL);
    metric_set_add(s, "qrel_lease_margin_ratio", margin, "queue", "orders", NULL);
    return run(c, NULL);
}

START_TEST(test_margin_below_1)
{
    struct col c = {0};
    struct audit_report *r = margin_case(&c, 30.0 / 34.0);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = &r->findings[0];
    ck_assert_int_eq(f->rule, AUDIT_LEASE_MARGIN_BELOW_1);
    ck_assert_int_eq(f->severity, AUDIT_CRITICAL);
    ck_assert_double_eq(f->limit, 1);
    ck_assert_str_eq(f->message,
                     "lease 30s, handler p99 34s → margin 0.88: leases expire under running "
                     "handlers, so slow messages are delivered again while still being handled, "
                     "up to 3 times; raise the lease above 68s or extend it while the handler "
                     "works");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

START_TEST(test_margin_boundaries)
{
    static const struct {
        double margin;
        int rule; /* -1: silent */
    } cases[] = {
        {0.999, AUDIT_LEASE_MARGIN_BELOW_1},
        {1.0, AUDIT_LEASE_MARGIN_BELOW_2}, /* exactly 1 is not below 1 */
        {1.999, AUDIT_LEASE_MARGIN_BELOW_2},
        {2.0, -1},
        {50, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct col c = {0};
        struct audit_report *r = margin_case(&c, cases[i].margin);
        if (cases[i].rule < 0) {
            ck_assert_msg(r->nfindings == 0, "margin %g: %zu findings", cases[i].margin,
                          r->nfindings);
        } else {
            ck_assert_msg(r->nfindings == 1, "margin %g: %zu findings", cases[i].margin,
                          r->nfindings);
            ck_assert_int_eq(r->findings[0].rule, cases[i].rule);
        }
        audit_report_free(r);
        col_free(&c);
    }
}
END_TEST

START_TEST(test_margin_below_2_message)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "cache", "redis_stream");
    /* A group's margin from the longest hold alone (Redis knows no handler times). */
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "orders", "group", "mailer", NULL);
    metric_set_add(s, "qrel_lease_oldest_age_seconds", 20, "queue", "orders", "group", "mailer",
                   NULL);
    metric_set_add(s, "qrel_lease_margin_ratio", 1.5, "queue", "orders", "group", "mailer", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "orders", "dead_letter_queue",
                   "orders.dlq", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = &r->findings[0];
    ck_assert_int_eq(f->rule, AUDIT_LEASE_MARGIN_BELOW_2);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_str_eq(f->group, "mailer");
    ck_assert_str_eq(f->message, "lease 30s, longest hold now 20s → margin 1.50: handlers 1.5 "
                                 "times slower than now would have their leases expire under "
                                 "them and make duplicates; raise the lease above 40s or extend "
                                 "it while the handler works");
    /* One row for the group, carrying the queue's dead-letter count. */
    ck_assert_uint_eq(r->nqueues, 1);
    ck_assert_str_eq(r->queues[0].group, "mailer");
    ck_assert_int_eq(r->queues[0].has_dead, 1);
    ck_assert_double_eq(r->queues[0].dead, 0);
    ck_assert_int_eq(r->queues[0].worst, AUDIT_WARNING);
    ck_assert_uint_eq(r->queues[0].rules, 1u << AUDIT_LEASE_MARGIN_BELOW_2);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- stale_claims ---- */

START_TEST(test_stale_claims)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "db", "claim_table");
    metric_set_add(s, "qrel_claims", 2, "queue", "mail", "state", "stale", NULL);
    metric_set_add(s, "qrel_claims", 9, "queue", "mail", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_claim_in_flight_window_seconds", 120, "queue", "mail", NULL);
    metric_set_add(s, "qrel_claims", 0, "queue", "fine", "state", "stale", NULL);
    metric_set_add(s, "qrel_claims", 5, "queue", "fine", "state", "in_flight", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_STALE_CLAIMS, "mail");
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq(f->value, 2);
    ck_assert_str_eq(f->message,
                     "2 stale claims (claimed, never done, older than the in-flight window 2m): "
                     "the attempts died between claim and done, so their effects may never have "
                     "happened; check each one and fix what stops the attempts");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- orphaned_messages ---- */

START_TEST(test_orphaned)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "jobs", "sidekiq");
    metric_set_add(s, "qrel_lease_orphaned_messages", 1, "queue", "mail", NULL);
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "mail", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "mail", "dead_letter_queue", "dead",
                   NULL);
    metric_set_add(s, "qrel_lease_orphaned_messages", 0, "queue", "fine", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "fine", "dead_letter_queue", "dead",
                   NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_ORPHANED_MESSAGES, "mail");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_CRITICAL);
    ck_assert_double_eq(f->value, 1);
    ck_assert_str_eq(f->message,
                     "1 message held by a consumer that stopped sending heartbeats, with no lease "
                     "to give it back: the work is lost unless it is enqueued again; find what "
                     "killed the process, and use a fetch that gives jobs back (a lease) where "
                     "there is one");
    audit_report_free(r);
    col_free(&c);
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_ORPHANED_MESSAGES] = 1;
    s = col_set(&c, "jobs", "sidekiq");
    metric_set_add(s, "qrel_lease_orphaned_messages", 2, "queue", "mail", NULL);
    r = run(&c, &cfg);
    ck_assert_ptr_null(finding(r, AUDIT_ORPHANED_MESSAGES, "mail"));
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- handler_timeout_not_below_lease ---- */

/* A worker timeout at or above the lease (Laravel's --timeout against retry_after) fires, equal
 * included; below it, or without a lease, nothing. */
START_TEST(test_handler_timeout)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "jobs", "laravel");
    metric_set_add(s, "qrel_handler_timeout_seconds", 90, "queue", "orders", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 90, "queue", "orders", NULL);
    metric_set_add(s, "qrel_handler_timeout_seconds", 60, "queue", "fine", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 90, "queue", "fine", NULL);
    metric_set_add(s, "qrel_handler_timeout_seconds", 600, "queue", "nolease", NULL);
    struct audit_report *r = run(&c, NULL);
    const struct audit_finding *f = finding(r, AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_CRITICAL);
    ck_assert_double_eq(f->value, 90);
    ck_assert_double_eq(f->limit, 90);
    ck_assert_str_eq(f->message,
                     "handler timeout 90s, lease 90s: a job running longer than the lease is "
                     "delivered to another worker while the first still runs it, so it runs "
                     "twice; set the worker's timeout several seconds below the lease (Laravel: "
                     "queue:work --timeout shorter than the connection's retry_after), or raise "
                     "the lease");
    ck_assert_ptr_null(finding(r, AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE, "fine"));
    ck_assert_ptr_null(finding(r, AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE, "nolease"));
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- eta_beyond_lease ---- */

START_TEST(test_eta_beyond)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "tasks", "celery");
    metric_set_add(s, "qrel_lease_eta_beyond_messages", 2, "queue", "celery", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 3600, "queue", "celery", NULL);
    metric_set_add(s, "qrel_lease_eta_beyond_messages", 0, "queue", "fine", NULL);
    struct audit_report *r = run(&c, NULL);
    const struct audit_finding *f = finding(r, AUDIT_ETA_BEYOND_LEASE, "celery");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_double_eq(f->value, 2);
    ck_assert_str_eq(f->message,
                     "2 messages held until an ETA or countdown beyond the lease 1h: each is "
                     "delivered again every lease while it waits and runs once per delivery; "
                     "raise the visibility timeout above the longest ETA, or schedule far tasks "
                     "elsewhere (a periodic scheduler, a database)");
    ck_assert_ptr_null(finding(r, AUDIT_ETA_BEYOND_LEASE, "fine"));
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- outbox_lagging ---- */

START_TEST(test_outbox_lagging)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "db", "outbox");
    metric_set_add(s, "qrel_outbox_pending_messages", 12, "queue", "late", NULL);
    metric_set_add(s, "qrel_outbox_oldest_pending_age_seconds", 60.5, "queue", "late", NULL);
    metric_set_add(s, "qrel_outbox_pending_messages", 3, "queue", "edge", NULL);
    metric_set_add(s, "qrel_outbox_oldest_pending_age_seconds", 60, "queue", "edge", NULL);
    struct audit_report *r = run(&c, NULL); /* default limit 60 s: strictly above fires */
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_OUTBOX_LAGGING, "late");
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq(f->limit, 60);
    ck_assert_str_eq(f->message, "12 rows unpublished, the oldest pending for 60.5s (limit 60s): "
                                 "the relay is behind or stopped; check the relay process and its "
                                 "errors");
    audit_report_free(r);

    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.outbox_lag = 30;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 2);
    ck_assert_ptr_nonnull(finding(r, AUDIT_OUTBOX_LAGGING, "edge"));
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- dedup_window_shorter_than_retry_horizon ---- */

START_TEST(test_dedup_window)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "db", "dedup_table");
    metric_set_add(s, "qrel_dedup_window_seconds", 300, "queue", "orders", NULL);
    metric_set_add(s, "qrel_dedup_window_seconds", 90, "queue", "equal", NULL);
    metric_set_add(s, "qrel_dedup_window_seconds", 10, "queue", "alone", NULL);
    metric_set_set_kind(s, "claim_table");
    metric_set_add(s, "qrel_retry_horizon_seconds", 420, "queue", "orders", NULL);
    metric_set_add(s, "qrel_retry_horizon_seconds", 90, "queue", "equal", NULL);
    /* Another source's queue of the same name is another queue. */
    struct metric_set *o = col_set(&c, "other", "redis_stream");
    metric_set_add(o, "qrel_retry_horizon_seconds", 9000, "queue", "alone", "group", "g", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f =
        finding(r, AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->kind, "dedup_table");
    ck_assert_double_eq(f->value, 300);
    ck_assert_double_eq(f->limit, 420);
    ck_assert_str_eq(f->message,
                     "dedup window 5m is shorter than the retry horizon 7m (claim_table): a retry "
                     "after the window is handled again as a new message; keep dedup keys longer "
                     "than 7m or make the retries end sooner");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- no_dead_letter_queue ---- */

START_TEST(test_no_dead_letter_queue)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "mq", "sqs");
    metric_set_add(s, "qrel_queue_messages", 4, "queue", "bare", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "orders", "state", "ready", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "orders", "dead_letter_queue",
                   "orders-dlq", NULL);
    /* The DLQ is a queue too, and needs no DLQ of its own. */
    metric_set_add(s, "qrel_queue_messages", 0, "queue", "orders-dlq", "state", "ready", NULL);
    /* Only the lease is known: no depth, no rule. */
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "nodepth", NULL);
    struct metric_set *p = col_set(&c, "db", "pgmq"); /* pgmq has no dead-letter queue to ask */
    metric_set_add(p, "qrel_queue_messages", 4, "queue", "jobs", "state", "ready", NULL);
    struct metric_set *k = col_set(&c, "cache", "redis_stream");
    metric_set_add(k, "qrel_queue_messages", 4, "queue", "events", "group", "a", "state", "ready",
                   NULL);
    metric_set_add(k, "qrel_queue_messages", 4, "queue", "events", "group", "b", "state", "ready",
                   NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 2);
    const struct audit_finding *f = finding(r, AUDIT_NO_DEAD_LETTER_QUEUE, "bare");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->message, "no dead-letter queue: a message that always fails is retried "
                                 "without end or dropped, with nothing to alert on; add a "
                                 "RedrivePolicy with a dead-letter queue and maxReceiveCount");
    f = finding(r, AUDIT_NO_DEAD_LETTER_QUEUE, "events"); /* once per queue, not per group */
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_null(f->group);
    /* Both groups' rows show the queue's finding. */
    size_t rows = 0;
    for (size_t i = 0; i < r->nqueues; i++)
        if (strcmp(r->queues[i].queue, "events") == 0) {
            rows++;
            ck_assert_uint_eq(r->queues[i].rules, 1u << AUDIT_NO_DEAD_LETTER_QUEUE);
        }
    ck_assert_uint_eq(rows, 2);
    audit_report_free(r);

    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_NO_DEAD_LETTER_QUEUE] = 1;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 0);
    ck_assert_int_eq(r->status, AUDIT_OK);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- dead_letters_expire_unread ---- */

/* A dead-letter queue that keeps messages no longer than the source keeps them plus the retry
 * horizon warns, with the kind's fix (SQS) or the generic one; a longer one, one without a limit
 * (+Inf) and a queue without a dead-letter retention do not; a source without a limit against a
 * finite dead-letter queue does. Equal counts as too short. */
START_TEST(test_dead_letters_expire_unread)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "aws", "sqs");
    /* SQS defaults: 4 days both, a retry horizon of 4 s. */
    metric_set_add(s, "qrel_queue_retention_seconds", 345600, "queue", "orders", NULL);
    metric_set_add(s, "qrel_retry_horizon_seconds", 4, "queue", "orders", NULL);
    metric_set_add(s, "qrel_dead_letter_retention_seconds", 345600, "queue", "orders",
                   "dead_letter_queue", "orders-dlq", NULL);
    /* One second more than the queue, still within its horizon. */
    metric_set_add(s, "qrel_queue_retention_seconds", 200, "queue", "refunds", NULL);
    metric_set_add(s, "qrel_retry_horizon_seconds", 200, "queue", "refunds", NULL);
    metric_set_add(s, "qrel_dead_letter_retention_seconds", 201, "queue", "refunds",
                   "dead_letter_queue", "refunds-dlq", NULL);
    /* The fix: 14 days against 4. */
    metric_set_add(s, "qrel_queue_retention_seconds", 345600, "queue", "billing", NULL);
    metric_set_add(s, "qrel_retry_horizon_seconds", 140, "queue", "billing", NULL);
    metric_set_add(s, "qrel_dead_letter_retention_seconds", 1209600, "queue", "billing",
                   "dead_letter_queue", "billing-dlq", NULL);
    /* No dead-letter retention stated: nothing to judge. */
    metric_set_add(s, "qrel_queue_retention_seconds", 60, "queue", "plain", NULL);
    struct metric_set *b = col_set(&c, "mq", "nats");
    /* Two dead-letter streams: the shorter one is named. No horizon. */
    metric_set_add(b, "qrel_queue_retention_seconds", INFINITY, "queue", "EVENTS", NULL);
    metric_set_add(b, "qrel_dead_letter_retention_seconds", INFINITY, "queue", "EVENTS",
                   "dead_letter_queue", "EVENTS_ALL", NULL);
    metric_set_add(b, "qrel_dead_letter_retention_seconds", 86400, "queue", "EVENTS",
                   "dead_letter_queue", "EVENTS_DLQ", NULL);
    /* Both without a limit. */
    metric_set_add(b, "qrel_queue_retention_seconds", INFINITY, "queue", "LOGS", NULL);
    metric_set_add(b, "qrel_dead_letter_retention_seconds", INFINITY, "queue", "LOGS",
                   "dead_letter_queue", "LOGS_DLQ", NULL);
    /* A day against an hour and its horizon. */
    metric_set_add(b, "qrel_queue_retention_seconds", 3600, "queue", "MAIL", NULL);
    metric_set_add(b, "qrel_retry_horizon_seconds", 150, "queue", "MAIL", "group", "w", NULL);
    metric_set_add(b, "qrel_dead_letter_retention_seconds", 3600, "queue", "MAIL",
                   "dead_letter_queue", "MAIL_DLQ", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 4);
    const struct audit_finding *f = finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_double_eq(f->value, 345600);
    ck_assert_double_eq(f->limit, 345604);
    ck_assert_str_eq(f->message,
                     "dead-letter queue orders-dlq keeps messages 96h, no longer than the queue "
                     "keeps them (96h) plus its retry horizon (4s): a message dead-lettered late "
                     "in its life expires there before anyone reads it, lost with the error that "
                     "killed it; a standard queue's dead letter keeps its original enqueue time, "
                     "so it may arrive with its retention nearly spent (FIFO queues restart it); "
                     "set the dead-letter queue's MessageRetentionPeriod to 1209600 (14 days, the "
                     "most SQS allows) or to the queue's plus the time you need to read them");
    ck_assert_ptr_nonnull(finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "refunds"));
    ck_assert_ptr_null(finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "billing"));
    ck_assert_ptr_null(finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "plain"));
    ck_assert_ptr_null(finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "LOGS"));
    f = finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "EVENTS");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->message,
                     "dead-letter queue EVENTS_DLQ keeps messages 24h, while the queue keeps them "
                     "without limit: a message dead-lettered late in its life expires there "
                     "before anyone reads it, lost with the error that killed it; keep dead "
                     "letters longer than the queue keeps messages plus its retry horizon, by the "
                     "time you need to read them");
    /* The horizon of a group is not the queue's: MAIL's entry has none, equal is too short. */
    f = finding(r, AUDIT_DEAD_LETTERS_EXPIRE_UNREAD, "MAIL");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(strstr(f->message, "keeps messages 1h, no longer than the queue keeps "
                                             "them (1h): a message"));
    ck_assert_int_eq(r->status, AUDIT_WARNING);
    ck_assert_str_eq(audit_rule_name(AUDIT_DEAD_LETTERS_EXPIRE_UNREAD),
                     "dead_letters_expire_unread");
    audit_report_free(r);

    /* Disabled: no finding. */
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_DEAD_LETTERS_EXPIRE_UNREAD] = 1;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 0);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- backlog_without_consumer ---- */

/* Ready messages and a consumer count of 0 is a warning, per queue or per group, with the fix
 * the kind names (or a plain one); a consumer, no ready message, or no consumer series (a kind
 * that cannot tell) is none. */
START_TEST(test_backlog_without_consumer)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "broker", "rabbitmq");
    metric_set_add(s, "qrel_queue_messages", 4, "queue", "orders", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_messages", 2, "queue", "orders", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_queue_consumers", 0, "queue", "orders", NULL);
    metric_set_add(s, "qrel_queue_messages", 4, "queue", "served", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_consumers", 2, "queue", "served", NULL);
    /* in flight only: the consumer left, its messages are not ready yet */
    metric_set_add(s, "qrel_queue_messages", 0, "queue", "idle", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "idle", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_queue_consumers", 0, "queue", "idle", NULL);
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "unknown", "state", "ready", NULL);
    /* a dead-letter queue (of served) is read by a person, not a consumer */
    metric_set_add(s, "qrel_dead_letter_messages", 2, "queue", "served", "dead_letter_queue",
                   "served.dlq", NULL);
    metric_set_add(s, "qrel_queue_messages", 2, "queue", "served.dlq", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_consumers", 0, "queue", "served.dlq", NULL);
    struct metric_set *g = col_set(&c, "streams", "custom");
    metric_set_add(g, "qrel_queue_messages", 1, "queue", "events", "group", "dead", "state",
                   "ready", NULL);
    metric_set_add(g, "qrel_queue_consumers", 0, "queue", "events", "group", "dead", NULL);
    metric_set_add(g, "qrel_queue_messages", 7, "queue", "events", "group", "live", "state",
                   "ready", NULL);
    metric_set_add(g, "qrel_queue_consumers", 1, "queue", "events", "group", "live", NULL);
    /* kafka's per-partition series repeat the total: counted once */
    metric_set_add(g, "qrel_queue_messages", 5, "queue", "t", "group", "g", "state", "ready", NULL);
    metric_set_add(g, "qrel_queue_messages", 5, "queue", "t", "group", "g", "state", "ready",
                   "partition", "0", NULL);
    metric_set_add(g, "qrel_queue_consumers", 0, "queue", "t", "group", "g", NULL);
    struct audit_report *r = run(&c, NULL);
    size_t nrule = 0;
    for (size_t i = 0; i < r->nfindings; i++)
        nrule += r->findings[i].rule == AUDIT_BACKLOG_WITHOUT_CONSUMER;
    ck_assert_uint_eq(nrule, 3); /* beside no_dead_letter_queue and the dead letters of served */
    const struct audit_finding *f = finding(r, AUDIT_BACKLOG_WITHOUT_CONSUMER, "orders");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_ptr_null(f->group);
    ck_assert(f->value == 4);
    ck_assert_str_eq(f->message, "4 messages ready and no consumer: nothing takes them, so the "
                                 "backlog only grows and ages; start the workers that consume "
                                 "this queue (a basic.consume on it, in its vhost), or delete the "
                                 "queue if nothing should read it");
    f = finding(r, AUDIT_BACKLOG_WITHOUT_CONSUMER, "events");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->group, "dead");
    ck_assert_str_eq(f->message, "1 message ready and no consumer: nothing takes them, so the "
                                 "backlog only grows and ages; start its consumers");
    f = finding(r, AUDIT_BACKLOG_WITHOUT_CONSUMER, "t");
    ck_assert_ptr_nonnull(f);
    ck_assert(f->value == 5);
    ck_assert_ptr_null(finding(r, AUDIT_BACKLOG_WITHOUT_CONSUMER, "served.dlq"));
    ck_assert_str_eq(audit_rule_name(AUDIT_BACKLOG_WITHOUT_CONSUMER), "backlog_without_consumer");
    audit_report_free(r);

    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_BACKLOG_WITHOUT_CONSUMER] = 1;
    cfg.disabled[AUDIT_NO_DEAD_LETTER_QUEUE] = 1;
    cfg.disabled[AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY] = 1;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 0);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- no_broker_lease ---- */

START_TEST(test_no_broker_lease)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "amq", "activemq");
    /* orders has an abortSlowAckConsumerStrategy, emails none; the shared DLQ is no work queue */
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "orders", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 120, "queue", "orders", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "orders", "dead_letter_queue",
                   "ActiveMQ.DLQ", NULL);
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "emails", "state", "ready", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "emails", "dead_letter_queue",
                   "ActiveMQ.DLQ", NULL);
    /* a kind without the hint is never asked for one */
    struct metric_set *n = col_set(&c, "mq", "rabbitmq");
    metric_set_add(n, "qrel_queue_messages", 1, "queue", "jobs", "state", "ready", NULL);
    metric_set_add(n, "qrel_dead_letter_messages", 0, "queue", "jobs", "dead_letter_queue",
                   "jobs.dlq", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_NO_BROKER_LEASE, "emails");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_str_eq(f->message,
                     "no broker-side lease: a consumer that hangs holds its in-flight messages "
                     "for as long as its connection lives, and nothing delivers them again; give "
                     "the queue's destination policy an abortSlowAckConsumerStrategy with "
                     "maxTimeSinceLastAck above the longest handler, so the broker aborts a "
                     "consumer that stops acknowledging and its messages go to another");
    ck_assert_int_eq(r->status, AUDIT_WARNING);
    audit_report_free(r);
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_NO_BROKER_LEASE] = 1;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 0);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- delivery_limit_drops ---- */

START_TEST(test_delivery_limit_drops)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "broker", "rabbitmq");
    /* A quorum queue with a delivery limit (20, so 21 deliveries) and no dead-letter exchange. */
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "jobs", "state", "ready", NULL);
    metric_set_add(s, "qrel_max_deliveries", 21, "queue", "jobs", NULL);
    /* The same with a dead-letter queue: nothing is dropped. */
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "mail", "state", "ready", NULL);
    metric_set_add(s, "qrel_max_deliveries", 21, "queue", "mail", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "mail", "dead_letter_queue",
                   "mail.dlq", NULL);
    /* A classic queue without a limit: retried without end, the warning's case. */
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "plain", "state", "ready", NULL);
    struct metric_set *n = col_set(&c, "js", "nats");
    metric_set_add(n, "qrel_queue_messages", 2, "queue", "ORDERS", "group", "worker", "state",
                   "ready", NULL);
    metric_set_add(n, "qrel_max_deliveries", 5, "queue", "ORDERS", "group", "worker", NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 3);
    const struct audit_finding *f = finding(r, AUDIT_DELIVERY_LIMIT_DROPS, "jobs");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_CRITICAL);
    ck_assert_str_eq(f->message,
                     "a delivery limit of 21 and no dead-letter target: a message delivered that "
                     "many times is dropped, its work lost with nothing to alert on, and the "
                     "redelivery figures fall back as if it had recovered; set a dead-letter "
                     "exchange (x-dead-letter-exchange, by policy) so that RabbitMQ dead-letters "
                     "the message instead");
    ck_assert_ptr_null(finding(r, AUDIT_NO_DEAD_LETTER_QUEUE, "jobs")); /* in its place */
    ck_assert_ptr_null(finding(r, AUDIT_DELIVERY_LIMIT_DROPS, "mail"));
    ck_assert_ptr_nonnull(finding(r, AUDIT_NO_DEAD_LETTER_QUEUE, "plain"));
    f = finding(r, AUDIT_DELIVERY_LIMIT_DROPS, "ORDERS");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(strstr(f->message, "a delivery limit of 5 and no dead-letter target"));
    ck_assert_ptr_nonnull(strstr(f->message, "name it dead_letter_stream"));
    ck_assert_int_eq(r->status, AUDIT_CRITICAL);
    audit_report_free(r);

    /* Disabled, the queue falls back to the warning its kind has (NATS has none). */
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_DELIVERY_LIMIT_DROPS] = 1;
    r = run(&c, &cfg);
    ck_assert_uint_eq(r->nfindings, 2);
    ck_assert_ptr_nonnull(finding(r, AUDIT_NO_DEAD_LETTER_QUEUE, "jobs"));
    ck_assert_ptr_null(finding(r, AUDIT_DELIVERY_LIMIT_DROPS, "ORDERS"));
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- claim_window_too_short ---- */

static struct audit_report *claim_case(struct col *c, double window, double lease,
                                       double deliveries)
{
    struct metric_set *s = col_set(c, "db", "claim_table");
    metric_set_add(s, "qrel_claim_in_flight_window_seconds", window, "queue", "mail", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", lease, "queue", "mail", NULL);
    metric_set_add(s, "qrel_max_deliveries", deliveries, "queue", "mail", NULL);
    return run(c, NULL);
}

START_TEST(test_claim_window)
{
    static const struct {
        double window, lease, deliveries;
        int fires;
    } cases[] = {
        {120, 30, 3, 1}, /* the domain's example: the last delivery at 60 s finds a young claim */
        {60, 30, 3, 1},  /* exactly 60 s old is still in flight (claimed_at >= now() - window) */
        {59, 30, 3, 0},  /* the 3rd delivery at 60 s takes over */
        {120, 30, 5, 1}, /* the 5th at 120 s: still in flight */
        {120, 30, 6, 0}, /* the 6th at 150 s takes over */
        {1, 30, 1, 1},   /* one delivery: nothing can ever take over */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct col c = {0};
        struct audit_report *r =
            claim_case(&c, cases[i].window, cases[i].lease, cases[i].deliveries);
        const struct audit_finding *f = finding(r, AUDIT_CLAIM_WINDOW_TOO_SHORT, "mail");
        ck_assert_msg((f != NULL) == cases[i].fires, "case %zu", i);
        ck_assert_uint_eq(r->nfindings, (size_t)cases[i].fires);
        audit_report_free(r);
        col_free(&c);
    }
    struct col c = {0};
    struct audit_report *r = claim_case(&c, 120, 30, 3);
    ck_assert_str_eq(r->findings[0].message,
                     "in-flight window 2m with a lease of 30s and 3 deliveries: the last delivery "
                     "comes 60s after the first, while the claim of a crashed attempt still looks "
                     "in flight, so the message is dead-lettered with its effect possibly never "
                     "done; make the in-flight window shorter than 60s or allow at least 6 "
                     "deliveries");
    ck_assert_double_eq(r->findings[0].value, 120);
    ck_assert_double_eq(r->findings[0].limit, 60);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- the report: status, order, series, text, JSON ---- */

static void mixed(struct col *c)
{
    struct metric_set *s = col_set(c, "cache", "redis_stream");
    metric_set_add(s, "qrel_queue_messages", 5, "queue", "orders", "group", "g", "state", "ready",
                   NULL);
    metric_set_add(s, "qrel_queue_oldest_message_age_seconds", 42, "queue", "orders", "group", "g",
                   NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "orders", "group", "g", NULL);
    metric_set_add(s, "qrel_lease_margin_ratio", 0.5, "queue", "orders", "group", "g", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 2, "queue", "orders", "dead_letter_queue",
                   "orders.dlq", NULL);
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "plain", "group", "g", "state", "ready",
                   NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "plain", "dead_letter_queue",
                   "plain.dlq", NULL);
    metric_set_add(s, "qrel_queue_messages", 7, "queue", "nodlq", "group", "g", "state", "ready",
                   NULL);
    col_up(c, "cache", "redis_stream", 1);
    col_up(c, "db", "postgres", 0);
}

START_TEST(test_report_order_and_status)
{
    struct col c = {0};
    mixed(&c);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 3);
    ck_assert_int_eq(r->findings[0].rule, AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY);
    ck_assert_int_eq(r->findings[1].rule, AUDIT_LEASE_MARGIN_BELOW_1);
    ck_assert_int_eq(r->findings[2].rule, AUDIT_NO_DEAD_LETTER_QUEUE);
    ck_assert_uint_eq(r->count[AUDIT_CRITICAL], 2);
    ck_assert_uint_eq(r->count[AUDIT_WARNING], 1);
    ck_assert_uint_eq(r->count[AUDIT_UNKNOWN], 1);
    ck_assert_int_eq(r->status, AUDIT_CRITICAL);
    ck_assert_uint_eq(r->nsources, 2);
    ck_assert_int_eq(r->sources[1].up, 0);
    ck_assert_uint_eq(r->nqueues, 3);
    ck_assert_str_eq(r->queues[0].queue, "orders");
    ck_assert_int_eq(r->queues[0].worst, AUDIT_CRITICAL);
    ck_assert_double_eq(r->queues[0].dead, 2);
    ck_assert_double_eq(r->queues[0].age, 42);
    ck_assert_double_eq(r->queues[0].depth, 5);
    ck_assert_str_eq(r->queues[1].queue, "nodlq");
    ck_assert_str_eq(r->queues[2].queue, "plain");
    ck_assert_int_eq(r->queues[2].worst, AUDIT_OK);
    audit_report_free(r);

    /* Without the criticals, an unreadable source outranks a warning. */
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.disabled[AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY] = 1;
    cfg.disabled[AUDIT_LEASE_MARGIN_BELOW_1] = 1;
    r = run(&c, &cfg);
    ck_assert_int_eq(r->status, AUDIT_UNKNOWN);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

START_TEST(test_audit_series)
{
    struct col c = {0};
    mixed(&c);
    struct audit_report *r = run(&c, NULL);
    struct metric_set *out = metric_set_new(NULL, NULL);
    ck_assert_int_eq(audit_add_metrics(r, out), 0);
    struct buf b;
    buf_init(&b);
    expfmt_write(&b, &out, 1, EXPFMT_TEXT);
    const char *want =
        "qrel_audit_failed{source=\"cache\",kind=\"redis_stream\",queue=\"orders\","
        "rule=\"dead_letter_queue_not_empty\",severity=\"critical\"} 1\n"
        "qrel_audit_failed{source=\"cache\",kind=\"redis_stream\",queue=\"orders\",group=\"g\","
        "rule=\"lease_margin_below_1\",severity=\"critical\"} 1\n"
        "qrel_audit_failed{source=\"cache\",kind=\"redis_stream\",queue=\"nodlq\","
        "rule=\"no_dead_letter_queue\",severity=\"warning\"} 1\n"
        "# HELP qrel_audit_failed_queues ";
    const char *samples = strstr(b.data, "qrel_audit_failed{");
    ck_assert_ptr_nonnull(samples);
    ck_assert_int_eq(strncmp(samples, want, strlen(want)), 0);
    const char *counts = "qrel_audit_failed_queues{source=\"cache\",kind=\"redis_stream\","
                         "rule=\"dead_letter_queue_not_empty\",severity=\"critical\"} 1\n"
                         "qrel_audit_failed_queues{source=\"cache\",kind=\"redis_stream\","
                         "rule=\"lease_margin_below_1\",severity=\"critical\"} 1\n"
                         "qrel_audit_failed_queues{source=\"cache\",kind=\"redis_stream\","
                         "rule=\"no_dead_letter_queue\",severity=\"warning\"} 1\n";
    ck_assert_str_eq(strstr(samples, "qrel_audit_failed_queues{"), counts);
    buf_free(&b);
    metric_set_free(out);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* The lines of text that start with prefix. */
static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, len) == 0;
    return n;
}

/* 1,000 queues of one source without a dead-letter queue and 30 with dead letters (queue dN
 * holding N): the body has one count per rule, exact, and only the worst queues of each. */
static struct audit_report *fleet(struct col *c, long queue_series)
{
    struct metric_set *s = col_set(c, "mq", "sqs");
    char q[32], d[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(q, sizeof q, "q%04d", i);
        metric_set_add(s, "qrel_queue_messages", 1, "queue", q, "state", "ready", NULL);
    }
    for (int i = 1; i <= 30; i++) {
        snprintf(q, sizeof q, "d%02d", i);
        snprintf(d, sizeof d, "d%02d-dlq", i);
        metric_set_add(s, "qrel_queue_messages", 1, "queue", q, "state", "ready", NULL);
        metric_set_add(s, "qrel_dead_letter_messages", i, "queue", q, "dead_letter_queue", d, NULL);
        metric_set_add(s, "qrel_queue_messages", i, "queue", d, "state", "ready", NULL);
    }
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.queue_series = queue_series;
    return run(c, &cfg);
}

static void fleet_body(struct buf *b, long queue_series)
{
    struct col c = {0};
    struct audit_report *r = fleet(&c, queue_series);
    ck_assert_uint_eq(r->nfindings, 1030); /* `qrel check` and the page still see every queue */
    ck_assert_uint_eq(r->nqueues, 1060);
    struct metric_set *out = metric_set_new(NULL, NULL);
    ck_assert_int_eq(audit_add_metrics(r, out), 0);
    buf_reset(b);
    expfmt_write(b, &out, 1, EXPFMT_TEXT);
    metric_set_free(out);
    /* What the exporter runs on every scrape: the same series, without the report. */
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.queue_series = queue_series;
    struct metric_set *served = metric_set_new(NULL, NULL);
    ck_assert_int_eq(audit_run_series(c.sets, c.n, &cfg, served), 0);
    struct buf sb;
    buf_init(&sb);
    expfmt_write(&sb, &served, 1, EXPFMT_TEXT);
    ck_assert_str_eq(sb.data, b->data);
    buf_free(&sb);
    metric_set_free(served);
    audit_report_free(r);
    col_free(&c);
}

START_TEST(test_audit_series_bounded)
{
    struct buf b;
    buf_init(&b);
    fleet_body(&b, AUDIT_DEFAULT_QUEUE_SERIES);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed{"), 20);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed_queues{"), 2);
    ck_assert_ptr_nonnull(strstr(b.data, "qrel_audit_failed_queues{source=\"mq\",kind=\"sqs\","
                                         "rule=\"dead_letter_queue_not_empty\",severity=\""
                                         "critical\"} 30\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "qrel_audit_failed_queues{source=\"mq\",kind=\"sqs\","
                                         "rule=\"no_dead_letter_queue\",severity=\"warning\"} "
                                         "1000\n"));
    /* The worst dead-letter queues (d30 down to d21); equally bad, the first by name. */
    const char *p = strstr(b.data, "qrel_audit_failed{");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(strstr(p, "queue=\"d30\",rule=\"dead_letter_queue_not_empty\""));
    ck_assert_ptr_nonnull(strstr(p, "queue=\"d21\",rule=\"dead_letter_queue_not_empty\""));
    ck_assert_ptr_null(strstr(p, "queue=\"d20\",rule=\"dead_letter_queue_not_empty\""));
    ck_assert_ptr_nonnull(strstr(p, "queue=\"q0000\",rule=\"no_dead_letter_queue\""));
    ck_assert_ptr_nonnull(strstr(p, "queue=\"q0009\",rule=\"no_dead_letter_queue\""));
    ck_assert_ptr_null(strstr(p, "queue=\"q0010\",rule=\"no_dead_letter_queue\""));
    ck_assert(strstr(p, "queue=\"d30\"") < strstr(p, "queue=\"d29\""));

    fleet_body(&b, 0);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed{"), 0);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed_queues{"), 2);
    fleet_body(&b, AUDIT_QUEUE_SERIES_ALL);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed{"), 1030);
    ck_assert_uint_eq(count_lines(b.data, "qrel_audit_failed_queues{"), 2);
    buf_free(&b);
}
END_TEST

/* ---- skipped_entries ---- */

/* A queue whose collection passed over entries it could not read is a warning, with every reason
 * summed; one without (or with none counted) is not; an entry that names no queue ("") is one. */
START_TEST(test_skipped_entries)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "jobs", "sidekiq");
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "emails", "state", "ready", NULL);
    metric_set_add(s, "qrel_skipped_entries", 2, "queue", "emails", "reason", "not_json", NULL);
    metric_set_add(s, "qrel_skipped_entries", 1, "queue", "emails", "reason", "bad_timestamp",
                   NULL);
    metric_set_add(s, "qrel_skipped_entries", 1, "queue", "", "reason", "missing_field", NULL);
    metric_set_add(s, "qrel_skipped_entries", 0, "queue", "fine", "reason", "too_deep", NULL);
    struct audit_report *r = run(&c, NULL);
    const struct audit_finding *f = finding(r, AUDIT_SKIPPED_ENTRIES, "emails");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_double_eq(f->value, 3);
    ck_assert_str_eq(f->message,
                     "3 unreadable items skipped (not JSON, a field missing or of the wrong type, "
                     "a timestamp out of range): the queue's figures leave them out; find what "
                     "writes them (another client or version, a hand edit) and fix or remove "
                     "them");
    f = finding(r, AUDIT_SKIPPED_ENTRIES, "");
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq(f->value, 1);
    ck_assert_ptr_null(finding(r, AUDIT_SKIPPED_ENTRIES, "fine"));
    ck_assert_str_eq(audit_rule_name(AUDIT_SKIPPED_ENTRIES), "skipped_entries");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- source_watches_nothing ---- */

/* A source that is up and found no queue (qrel_source_queues 0, as the scheduler adds it to the
 * meta series) is a warning at the source's own place (queue ""); one that found a queue is not,
 * and adds no queue "" to the report. */
START_TEST(test_source_watches_nothing)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "jobs", "bullmq");
    metric_set_add(s, "qrel_queue_messages", 3, "queue", "emails", "state", "ready", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "queue", "emails", "dead_letter_queue",
                   "failed", NULL);
    struct metric_set *m = col_set(&c, "jobs", "bullmq");
    metric_set_add(m, "qrel_collector_up", 1, NULL);
    metric_set_add(m, "qrel_source_queues", 1, NULL);
    m = col_set(&c, "legacy", "bullmq");
    metric_set_add(m, "qrel_collector_up", 1, NULL);
    metric_set_add(m, "qrel_source_queues", 0, NULL);
    struct audit_report *r = run(&c, NULL);
    ck_assert_uint_eq(r->nfindings, 1);
    const struct audit_finding *f = finding(r, AUDIT_SOURCE_WATCHES_NOTHING, "");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->source, "legacy");
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_int_eq(r->status, AUDIT_WARNING);
    ck_assert_str_eq(f->message,
                     "source legacy watches nothing: its discovery/pattern matched no queue, so "
                     "no alert on its queues can fire; check its prefix, pattern or exclude "
                     "against the names the broker has, or name the queues (queues:)");
    ck_assert_uint_eq(r->nqueues, 2); /* emails, and legacy's own place */
    ck_assert_str_eq(audit_rule_name(AUDIT_SOURCE_WATCHES_NOTHING), "source_watches_nothing");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

/* ---- an entry with many families ---- */

/* The families of three rules on one queue, after fillers (families no rule fires on here):
 * with 7 fillers the entry outgrows its inline figures in the middle of the rules' own. */
static struct audit_report *many_families(struct col *c, int fillers)
{
    static const char *const filler_families[] = {
        "qrel_queue_messages",          "qrel_queue_oldest_message_age_seconds",
        "qrel_outbox_pending_messages", "qrel_outbox_oldest_pending_age_seconds",
        "qrel_dedup_window_seconds",    "qrel_lease_eta_beyond_messages",
        "qrel_lease_orphaned_messages",
    };
    struct metric_set *s = col_set(c, "db", "claim_table");
    for (int i = 0; i < fillers; i++)
        metric_set_add(s, filler_families[i],
                       i == 4   ? 300
                       : i == 3 ? 10
                                : 0,
                       "queue", "mail", i == 0 ? "state" : NULL, "ready",
                       NULL); /* NULL ends early */
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "mail", NULL);
    metric_set_add(s, "qrel_lease_margin_ratio", 0.5, "queue", "mail", NULL);
    metric_set_add(s, "qrel_max_deliveries", 3, "queue", "mail", NULL);
    metric_set_add(s, "qrel_lease_oldest_age_seconds", 20, "queue", "mail", NULL);
    metric_set_add(s, "qrel_claim_in_flight_window_seconds", 120, "queue", "mail", NULL);
    metric_set_add(s, "qrel_claims", 2, "queue", "mail", "state", "stale", NULL);
    metric_set_add(s, "qrel_lease_margin_ratio", 0.75, "queue", "mail", NULL); /* the worse stays */
    return run(c, NULL);
}

START_TEST(test_many_families)
{
    struct col few = {0}, many = {0};
    struct audit_report *a = many_families(&few, 0), *b = many_families(&many, 7);
    ck_assert_uint_eq(a->nfindings, 3); /* lease margin, stale claims, claim window */
    ck_assert_uint_eq(b->nfindings, a->nfindings);
    for (size_t i = 0; i < a->nfindings; i++) {
        ck_assert_int_eq(b->findings[i].rule, a->findings[i].rule);
        ck_assert_str_eq(b->findings[i].message, a->findings[i].message);
    }
    ck_assert_ptr_nonnull(strstr(a->findings[0].message, "lease 30s, longest hold now 20s → "
                                                         "margin 0.50"));
    ck_assert_uint_eq(b->nqueues, 1);
    ck_assert_double_eq(b->queues[0].margin, 0.5);
    ck_assert_int_eq(b->queues[0].has_depth, 1);
    ck_assert_double_eq(b->queues[0].age, 0);
    ck_assert_int_eq(a->queues[0].has_depth, 0);
    audit_report_free(a);
    audit_report_free(b);
    col_free(&few);
    col_free(&many);
}
END_TEST

/* ---- the exporter's series path against the report ---- */

/* A varied collection from a seed: two sources of two kinds, each over two sets (a queue's dead
 * letters in the second), queues with and without groups, five rules firing with few distinct
 * figures so that equally bad findings tie (margins give two rules), and dead-letter queues that
 * must not be reported as lacking one. */
static void varied(struct col *c, unsigned seed)
{
    static const char *const sources[] = {"b", "a"}, *const kinds[] = {"sqs", "redis_stream"};
    static const double margins[] = {0.5, 1.5, 0.25, 3, 1.5};
    char q[32], g[32], d[40];
    for (int si = 0; si < 2; si++) {
        for (int ki = 0; ki < 2; ki++) {
            struct metric_set *s = col_set(c, sources[si], kinds[ki]);
            struct metric_set *late = col_set(c, sources[si], kinds[ki]);
            for (int i = 0; i < 40; i++) {
                seed = seed * 1103515245u + 12345u;
                unsigned r = seed >> 8;
                snprintf(q, sizeof q, "q%02d", (i * 7) % 40); /* not in name order */
                snprintf(g, sizeof g, "g%u", r % 3);
                snprintf(d, sizeof d, "%s.dlq", q);
                const char *grp = r % 4 == 1 ? g : NULL;
                if (r % 5)
                    metric_set_add(s, "qrel_queue_messages", r % 9, "queue", q, "state", "ready",
                                   grp ? "group" : NULL, grp, NULL); /* NULL ends early */
                if (r % 3 == 0) {
                    metric_set_add(late, "qrel_dead_letter_messages", (r >> 4) % 4, "queue", q,
                                   "dead_letter_queue", d, NULL);
                    metric_set_add(s, "qrel_queue_messages", 1, "queue", d, "state", "ready", NULL);
                }
                if (grp)
                    metric_set_add(s, "qrel_lease_margin_ratio", margins[(r >> 6) % 5], "queue", q,
                                   "group", grp, NULL);
                if (r % 7 < 2)
                    metric_set_add(s, "qrel_claims", (r >> 3) % 3, "queue", q, "state", "stale",
                                   NULL);
                if (r % 11 < 3)
                    metric_set_add(late, "qrel_lease_orphaned_messages", (r >> 5) % 2 + 1, "queue",
                                   q, NULL);
            }
            col_up(c, sources[si], kinds[ki], 1);
        }
    }
}

/* The series of the collection in exposition text, by the report (audit_run, then
 * audit_add_metrics) or by the exporter's path (audit_run_series). */
static void series_text(struct col *c, long queue_series, int by_report, struct buf *b)
{
    struct audit_config cfg;
    audit_config_default(&cfg);
    cfg.queue_series = queue_series;
    struct metric_set *out = metric_set_new(NULL, NULL);
    if (by_report) {
        struct audit_report *r = run(c, &cfg);
        ck_assert_int_eq(audit_add_metrics(r, out), 0);
        audit_report_free(r);
    } else {
        ck_assert_int_eq(audit_run_series(c->sets, c->n, &cfg, out), 0);
    }
    buf_reset(b);
    expfmt_write(b, &out, 1, EXPFMT_TEXT);
    metric_set_free(out);
}

/* Equal texts, or a failure that shows the line where they part. */
static void assert_same_text(const char *got, const char *want)
{
    size_t i = 0, line;
    while (got[i] && got[i] == want[i])
        i++;
    for (line = i; line > 0 && got[line - 1] != '\n'; line--)
        ;
    ck_assert_msg(got[i] == want[i],
                  "the series path differs from the report at\n%.200s\nwant\n%.200s", got + line,
                  want + line);
}

START_TEST(test_series_path_matches_report)
{
    static const long keep[] = {AUDIT_QUEUE_SERIES_ALL, 0, 1, 3, AUDIT_DEFAULT_QUEUE_SERIES};
    struct buf want, got;
    buf_init(&want);
    buf_init(&got);
    for (unsigned seed = 1; seed <= 8; seed++) {
        struct col c = {0};
        varied(&c, seed);
        struct audit_report *r = run(&c, NULL);
        size_t nfindings = r->nfindings;
        audit_report_free(r);
        ck_assert_uint_gt(nfindings, 40); /* the cut below leaves findings out */
        for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
            series_text(&c, keep[k], 1, &want);
            series_text(&c, keep[k], 0, &got);
            assert_same_text(got.data, want.data);
            size_t lines = count_lines(got.data, "qrel_audit_failed{");
            if (keep[k] == AUDIT_QUEUE_SERIES_ALL)
                ck_assert_uint_eq(lines, nfindings);
            else if (keep[k] == 0)
                ck_assert_uint_eq(lines, 0);
            else
                ck_assert_uint_lt(lines, nfindings);
            /* six rules, each broken in both sources and both kinds */
            ck_assert_uint_eq(count_lines(got.data, "qrel_audit_failed_queues{"), 24);
        }
        col_free(&c);
    }
    buf_free(&want);
    buf_free(&got);
}
END_TEST

START_TEST(test_text_and_json)
{
    struct col c = {0};
    mixed(&c);
    struct audit_report *r = run(&c, NULL);
    const char *errors[] = {"", "pg \"db\": cannot connect: Connection refused"};
    struct buf b;
    buf_init(&b);
    audit_write_text(&b, r, errors);
    ck_assert_str_eq(
        b.data,
        "QREL CRITICAL - 2 critical, 1 warning, 1 unknown | critical=2;;;0 warning=1;;;0 "
        "unknown=1;;;0 queues=3;;;0\n"
        "CRITICAL cache orders: dead-letter queue orders.dlq holds 2 messages: the broker gave up "
        "on them, which does not mean their work was not done; classify each against your dedup "
        "or claim table before replaying, and give the dead-letter queue an owner "
        "[dead_letter_queue_not_empty]\n"
        "CRITICAL cache orders (group g): lease 30s → margin 0.50: leases expire under running "
        "handlers, so slow messages are delivered again while still being handled; raise the "
        "lease above 2m or extend it while the handler works [lease_margin_below_1]\n"
        "UNKNOWN db (postgres): cannot be read, so its queues were not checked: pg \"db\": "
        "cannot connect: Connection refused\n"
        "WARNING cache nodlq: no dead-letter queue: a message that always fails is retried "
        "without end or dropped, with nothing to alert on; have the consumers move given-up "
        "entries to a stream and name it in dead_letter_stream [no_dead_letter_queue]\n"
        "checked 3 queues in 2 sources\n");
    buf_reset(&b);
    audit_write_json(&b, r, errors);
    ck_assert_ptr_nonnull(strstr(b.data, "{\"status\":\"critical\",\"exit_code\":2,\"counts\":{"
                                         "\"critical\":2,\"warning\":1,\"unknown\":1},"));
    ck_assert_ptr_nonnull(strstr(
        b.data,
        "\"sources\":[{\"name\":\"cache\",\"kind\":\"redis_stream\",\"up\":true,\"error\":"
        "null},{\"name\":\"db\",\"kind\":\"postgres\",\"up\":false,\"error\":\"pg \\\"db\\\":"
        " cannot connect: Connection refused\"}]"));
    ck_assert_ptr_nonnull(
        strstr(b.data, "{\"source\":\"cache\",\"kind\":\"redis_stream\",\"queue\":\"orders\","
                       "\"group\":\"g\",\"status\":\"critical\",\"margin\":0.5,"
                       "\"dead_letter_messages\":2,\"oldest_age_seconds\":42,\"depth\":5,"
                       "\"rules\":[\"dead_letter_queue_not_empty\",\"lease_margin_below_1\"]}"));
    buf_free(&b);
    audit_report_free(r);
    col_free(&c);
}
END_TEST

START_TEST(test_names_are_quoted)
{
    struct buf b;
    buf_init(&b);
    audit_write_name(&b, "orders");
    buf_putc(&b, '|');
    audit_write_name(&b, "a b\"\n");
    buf_putc(&b, '|');
    audit_write_name(&b, "");
    ck_assert_str_eq(b.data, "orders|\"a b\\\"\\n\"|\"\"");
    buf_free(&b);
}
END_TEST

START_TEST(test_format_seconds)
{
    static const struct {
        double s;
        const char *want;
    } cases[] = {{30, "30s"},    {34.2, "34.2s"}, {0.25, "0.25s"}, {99.4, "99.4s"},
                 {100, "1m40s"}, {300, "5m"},     {3600, "1h"},    {5405, "1h30m5s"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b;
        buf_init(&b);
        audit_format_seconds(&b, cases[i].s);
        ck_assert_str_eq(b.data, cases[i].want);
        buf_free(&b);
    }
}
END_TEST

/* ---- the audit: section ---- */

START_TEST(test_config)
{
    struct err e;
    err_clear(&e);
    struct sources *s = sources_load_string(
        "x.yml", "audit:\n  outbox_lag: 5m\n  disabled_rules: [no_dead_letter_queue]\n", &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_double_eq(s->audit.outbox_lag, 300);
    ck_assert_int_eq(s->audit.disabled[AUDIT_NO_DEAD_LETTER_QUEUE], 1);
    ck_assert_int_eq(s->audit.disabled[AUDIT_STALE_CLAIMS], 0);
    ck_assert_int_eq(s->audit.queue_series, AUDIT_DEFAULT_QUEUE_SERIES);
    sources_free(s);

    s = sources_load_string("x.yml", "audit:\n  queue_series: 0\n", &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_int_eq(s->audit.queue_series, 0);
    sources_free(s);
    s = sources_load_string("x.yml", "audit:\n  queue_series: all\n", &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    ck_assert_int_eq(s->audit.queue_series, AUDIT_QUEUE_SERIES_ALL);
    sources_free(s);

    s = sources_load_string("x.yml", "sources: []\n", &e);
    ck_assert_ptr_nonnull(s);
    ck_assert_double_eq(s->audit.outbox_lag, AUDIT_DEFAULT_OUTBOX_LAG);
    sources_free(s);

    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"audit:\n  outbox_lag: 0s\n", "x.yml:2:15: outbox_lag: want a duration above 0"},
        {"audit:\n  outbox_lag: 5\n", "x.yml:2:15: outbox_lag: want a duration like \"5s\", "
                                      "got \"5\""},
        {"audit:\n  disabled_rules: [no_dlq]\n",
         "x.yml:2:20: disabled_rules: want rule names (dead_letter_queue_not_empty, "
         "lease_margin_below_1, lease_margin_below_2, stale_claims, outbox_lagging, "
         "dedup_window_shorter_than_retry_horizon, no_dead_letter_queue, "
         "claim_window_too_short, orphaned_messages, eta_beyond_lease, skipped_entries, "
         "dead_letters_not_kept, source_watches_nothing, handler_timeout_not_below_lease, "
         "delivery_limit_drops, no_broker_lease, backlog_without_consumer, "
         "dead_letters_expire_unread), got "
         "\"no_dlq\""},
        {"audit:\n  outbox_lags: 5m\n",
         "x.yml:2:3: unknown key \"outbox_lags\" in audit (known keys: disabled_rules, "
         "outbox_lag, queue_series)"},
        {"audit: []\n", "x.yml:1:8: audit: want a mapping, got a list"},
        {"audit:\n  queue_series: -1\n", "x.yml:2:17: queue_series: want a number of series from 0 "
                                         "to 1000000 or \"all\", got \"-1\""},
        {"audit:\n  queue_series: 10x\n", "x.yml:2:17: queue_series: want a number of series from "
                                          "0 to 1000000 or \"all\", got \"10x\""},
        {"audit:\n  queue_series: [1]\n", "x.yml:2:17: queue_series: want a string, got a list"},
        /* Plain digits only, as every count: strtoll alone took a space and a sign. */
        {"audit:\n  queue_series: \" 5\"\n", "x.yml:2:17: queue_series: want a number of series "
                                             "from 0 to 1000000 or \"all\", got \" 5\""},
        {"audit:\n  queue_series: \"+5\"\n", "x.yml:2:17: queue_series: want a number of series "
                                             "from 0 to 1000000 or \"all\", got \"+5\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err_clear(&e);
        s = sources_load_string("x.yml", bad[i].yaml, &e);
        ck_assert_ptr_null(s);
        ck_assert_int_eq(e.code, ERR_CONFIG);
        ck_assert_str_eq(e.msg, bad[i].msg);
    }
}
END_TEST

/* ---- dead_letters_not_kept ---- */

/* A queue whose runner deletes the jobs it gives up on is a warning, with what is lost and the
 * fix; 0 (kept) is not. */
START_TEST(test_not_kept)
{
    struct col c = {0};
    struct metric_set *s = col_set(&c, "db", "pg_jobs");
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "doomed", "state", "ready", NULL);
    metric_set_add(s, "qrel_dead_letters_not_kept", 1, "queue", "doomed", NULL);
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "billing", "state", "ready", NULL);
    metric_set_add(s, "qrel_dead_letters_not_kept", 0, "queue", "billing", NULL);
    struct audit_report *r = run(&c, NULL);
    const struct audit_finding *f = finding(r, AUDIT_DEAD_LETTERS_NOT_KEPT, "doomed");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->severity, AUDIT_WARNING);
    ck_assert_double_eq(f->value, 1);
    ck_assert_str_eq(f->message,
                     "jobs that fail for good are deleted, not kept as dead letters: what each "
                     "was, its last error and how many there were are lost, and none can be "
                     "replayed; keep them (delayed_job: Delayed::Worker.destroy_failed_jobs = "
                     "false) and give the failed jobs an owner");
    ck_assert_ptr_null(finding(r, AUDIT_DEAD_LETTERS_NOT_KEPT, "billing"));
    ck_assert_str_eq(audit_rule_name(AUDIT_DEAD_LETTERS_NOT_KEPT), "dead_letters_not_kept");
    audit_report_free(r);
    col_free(&c);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_dead_letters, 0},
        {test_dead_letters_classified, 0},
        {test_margin_below_1, 0},
        {test_margin_boundaries, 0},
        {test_margin_below_2_message, 0},
        {test_stale_claims, 0},
        {test_orphaned, 0},
        {test_eta_beyond, 0},
        {test_handler_timeout, 0},
        {test_skipped_entries, 0},
        {test_not_kept, 0},
        {test_source_watches_nothing, 0},
        {test_outbox_lagging, 0},
        {test_dedup_window, 0},
        {test_no_dead_letter_queue, 0},
        {test_delivery_limit_drops, 0},
        {test_no_broker_lease, 0},
        {test_backlog_without_consumer, 0},
        {test_dead_letters_expire_unread, 0},
        {test_claim_window, 0},
        {test_report_order_and_status, 0},
        {test_audit_series, 0},
        {test_audit_series_bounded, 0},
        {test_series_path_matches_report, 0},
        {test_many_families, 0},
        {test_text_and_json, 0},
        {test_names_are_quoted, 0},
        {test_format_seconds, 0},
        {test_config, 0},
    };
    return check_run_tests("audit", tests, CHECK_ROWS(tests), 0);
}
