/* check_scrape.c: what a scrape serves, assembled by scrape_run for every reader (scrape.h), with
 * a fake kind that is both a broker with a dead-letter queue and a work table: the whole file
 * gets the collections, the dead-letter join, the audit's series and the exporter's own series
 * in that order; one source (/probe, qrel scrape --source) the same without the own series; the
 * landing page (max_age) no join; a broker that is down no join; a report only when asked for,
 * and then with the findings of the series. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "support/check_run.h"
#include "pool.h"
#include "scrape.h"
#include "sources.h"

struct fake {
    int fail;      /* collect fails with ERR_CONNECT */
    int ids_calls; /* dead_letter_ids calls */
};

static int fake_collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                        struct err *e)
{
    struct fake *f = c->priv;
    if (f->fail)
        return err_set(e, ERR_CONNECT, "connection refused");
    /* A dead letter: the audit's dead_letter_queue_not_empty fires for queue q. */
    metric_set_add(out, "qrel_queue_messages", 4, "queue", "q", "state", "ready", NULL);
    metric_set_add(out, "qrel_dead_letter_messages", 3, "queue", "q", "dead_letter_queue", "q.dlq",
                   NULL);
    return 0;
}

/* Three dead letters, two of them with an id: "a" (done) and "b" (not done). */
static int fake_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                    const struct deadline *dl, struct dead_letter_read *out, struct err *e)
{
    struct fake *f = c->priv;
    f->ids_calls++;
    out->dead_letter_queue = xstrdup("q.dlq");
    dead_letter_read_add(out, "a", 1);
    dead_letter_read_add(out, "b", 1);
    /* their replay stamps: never, poison (3), and one that is no number (counted nowhere) */
    dead_letter_read_stamp(out, 0);
    dead_letter_read_stamp(out, 3);
    dead_letter_read_stamp(out, -1);
    out->read = 3;
    out->without_id = 1;
    out->total = 3;
    return 0;
}

static int fake_work_done(struct collector *c, void *table, const char *const *ids, size_t n,
                          const struct deadline *dl, enum dead_letter_work *work, struct err *e)
{
    for (size_t i = 0; i < n; i++)
        work[i] = strcmp(ids[i], "a") == 0 ? DL_WORK_DONE : DL_WORK_NOT_DONE;
    return 0;
}

static void fake_destroy(struct collector *c)
{
    free(c->priv);
}

static const struct collector_kind fake_kind = {.name = "fake",
                                                .collect = fake_collect,
                                                .destroy = fake_destroy,
                                                .dead_letter_ids = fake_ids,
                                                .work_done = fake_work_done};

static struct fake *add_source(struct sources *s, const char *name)
{
    struct collector *c = collector_new();
    struct fake *f = xcalloc(1, sizeof *f);
    c->name = xstrdup(name);
    c->kind = &fake_kind;
    c->timeout = 10;
    c->priv = f;
    s->items = xrealloc(s->items, (s->n + 1) * sizeof *s->items);
    s->items[s->n++] = c;
    return f;
}

/* Sources "broker" and "db", and a join of broker's queue q against db. */
static struct sources *new_sources(struct fake **broker)
{
    struct sources *s = xcalloc(1, sizeof *s);
    s->path = xstrdup("test");
    s->timeout = 10;
    s->scrape_timeout_offset = 0.5;
    audit_config_default(&s->audit);
    *broker = add_source(s, "broker");
    add_source(s, "db");
    s->dead_letters.v = xcalloc(1, sizeof *s->dead_letters.v);
    s->dead_letters.n = 1;
    struct dead_letter_join *j = &s->dead_letters.v[0];
    pthread_mutex_init(&j->mu, NULL);
    j->broker = s->items[0];
    j->work = s->items[1];
    j->queue = xstrdup("q");
    j->id_field = xstrdup("id");
    j->max_entries = 10;
    return s;
}

/* The value of the first sample of family in the sets whose labels include name=value (any
 * labels when name is NULL); -1 when absent. *at is the index of its set. */
static double find_at(const struct scrape *x, const char *family, const char *name,
                      const char *value, size_t *at)
{
    size_t n;
    struct metric_set *const *sets = scrape_sets(x, &n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < metric_set_len(sets[i]); j++) {
            struct metric_sample m;
            metric_set_get(sets[i], j, &m);
            if (strcmp(m.family->name, family) != 0)
                continue;
            int ok = name == NULL;
            for (size_t k = 0; k < m.nlabels && !ok; k++)
                ok = strcmp(m.labels[k].name, name) == 0 && strcmp(m.labels[k].value, value) == 0;
            if (ok) {
                if (at)
                    *at = i;
                return m.value;
            }
        }
    return -1;
}

static double find(const struct scrape *x, const char *family, const char *name, const char *value)
{
    return find_at(x, family, name, value, NULL);
}

static struct pool *P;

static void pool_setup(void)
{
    struct err e;
    P = pool_new(4, &e);
    ck_assert_ptr_nonnull(P);
}

static void pool_teardown(void)
{
    pool_free(P);
    P = NULL;
}

START_TEST(test_the_whole_file_in_order)
{
    struct fake *broker;
    struct scheduler *s = scheduler_new(new_sources(&broker), P);
    struct scrape_self self = {.config_ok = 0, .config_loaded = 1234.5};
    struct scrape_opts o = {.self = &self};
    struct scrape *x = scrape_run(s, &o);
    size_t n, up, join, audit, own;
    scrape_sets(x, &n);
    ck_assert_double_eq(find_at(x, "qrel_collector_up", NULL, NULL, &up), 1);
    ck_assert_double_eq(find_at(x, "qrel_dead_letter_classified_messages", "work", "done", &join),
                        1);
    ck_assert_double_eq(find(x, "qrel_dead_letter_classified_messages", "work", "not_done"), 1);
    ck_assert_double_eq(find(x, "qrel_dead_letter_classified_messages", "work", "unknown"), 1);
    ck_assert_double_eq(find(x, "qrel_dead_letter_replayed_messages", "replays", "never"), 1);
    ck_assert_double_eq(find(x, "qrel_dead_letter_replayed_messages", "replays", "once"), 0);
    ck_assert_double_eq(find(x, "qrel_dead_letter_replayed_messages", "replays", "poison"), 1);
    ck_assert_double_eq(
        find_at(x, "qrel_audit_failed", "rule", "dead_letter_queue_not_empty", &audit), 1);
    /* One count per source, kind and rule: broker's queue q and db's. */
    ck_assert_double_eq(find(x, "qrel_audit_failed_queues", "source", "broker"), 1);
    ck_assert_double_eq(find(x, "qrel_audit_failed_queues", "source", "db"), 1);
    ck_assert_double_eq(find_at(x, "qrel_build_info", NULL, NULL, &own), 1);
    /* The own series say what the caller passed. */
    ck_assert_double_eq(find(x, "qrel_config_last_reload_successful", NULL, NULL), 0);
    ck_assert_double_eq(find(x, "qrel_config_last_reload_success_timestamp_seconds", NULL, NULL),
                        1234.5);
    /* Collections, joins, audit, own: in that order, the own series last. */
    ck_assert_uint_lt(up, join);
    ck_assert_uint_lt(join, audit);
    ck_assert_uint_lt(audit, own);
    ck_assert_uint_eq(own, n - 1);
    /* No process series unless the caller asks (qrel scrape does not), no request counts
     * without the server's table. */
    ck_assert_double_eq(find(x, "process_resident_memory_bytes", NULL, NULL), -1);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", NULL, NULL), -1);
    ck_assert_uint_eq(scrape_failed(x), 0);
    ck_assert_ptr_null(scrape_report(x));
    scrape_free(x);
    scheduler_unref(s);
}
END_TEST

/* The exporter's /metrics: the process families and one request series per handler and code
 * that has answered. */
START_TEST(test_the_exporter_serves_process_and_requests)
{
    struct fake *broker;
    struct scheduler *s = scheduler_new(new_sources(&broker), P);
    struct http_requests *req = xcalloc(1, sizeof *req);
    http_requests_count(req, HTTP_HANDLER_METRICS, 200);
    http_requests_count(req, HTTP_HANDLER_METRICS, 503);
    http_requests_count(req, HTTP_HANDLER_METRICS, 503);
    http_requests_count(req, HTTP_HANDLER_HEALTHY, 401);
    struct scrape_self self = {.config_ok = 1, .process = 1, .requests = req};
    struct scrape_opts o = {.self = &self};
    struct scrape *x = scrape_run(s, &o);
    ck_assert_double_gt(find(x, "process_resident_memory_bytes", NULL, NULL), 0);
    ck_assert_double_gt(find(x, "process_virtual_memory_bytes", NULL, NULL), 0);
    ck_assert_double_gt(find(x, "process_open_fds", NULL, NULL), 0);
    ck_assert_double_gt(find(x, "process_start_time_seconds", NULL, NULL), 1e9);
    ck_assert_double_ge(find(x, "process_cpu_seconds_total", NULL, NULL), 0);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", "code", "503"), 2);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", "code", "401"), 1);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", "handler", "/-/healthy"), 1);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", "code", "404"), -1);
    scrape_free(x);
    /* A probe of one source serves neither: they are the exporter's, not the target's. */
    o.only = "broker";
    x = scrape_run(s, &o);
    ck_assert_double_eq(find(x, "process_resident_memory_bytes", NULL, NULL), -1);
    ck_assert_double_eq(find(x, "qrel_http_requests_total", NULL, NULL), -1);
    scrape_free(x);
    free(req);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_one_source_has_no_own_series)
{
    struct fake *broker;
    struct scheduler *s = scheduler_new(new_sources(&broker), P);
    struct scrape_self self = {.config_ok = 1, .config_loaded = 1};
    struct scrape_opts o = {.only = "broker", .self = &self};
    struct scrape *x = scrape_run(s, &o);
    ck_assert_double_eq(find(x, "qrel_collector_up", "source", "db"), -1);
    ck_assert_double_eq(find(x, "qrel_dead_letter_classified_messages", "work", "done"), 1);
    ck_assert_double_eq(find(x, "qrel_audit_failed_queues", "rule", "dead_letter_queue_not_empty"),
                        1);
    ck_assert_double_eq(find(x, "qrel_build_info", NULL, NULL), -1);
    ck_assert_double_eq(find(x, "qrel_config_last_reload_successful", NULL, NULL), -1);
    scrape_free(x);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_the_landing_page_runs_no_join_and_gets_a_report)
{
    struct fake *broker;
    struct scheduler *s = scheduler_new(new_sources(&broker), P);
    struct scrape_opts o = {.max_age = 30, .report = 1};
    struct scrape *x = scrape_run(s, &o);
    ck_assert_int_eq(broker->ids_calls, 0);
    ck_assert_double_eq(find(x, "qrel_dead_letter_classified_messages", "work", "done"), -1);
    const struct audit_report *r = scrape_report(x);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, AUDIT_CRITICAL);
    ck_assert_uint_eq(r->count[AUDIT_CRITICAL], 2);
    /* The series are the report's. */
    ck_assert_double_eq(find(x, "qrel_audit_failed_queues", "source", "broker"), 1);
    ck_assert_double_eq(find(x, "qrel_audit_failed_queues", "source", "db"), 1);
    scrape_free(x);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_a_broker_down_has_no_join)
{
    struct fake *broker;
    struct scheduler *s = scheduler_new(new_sources(&broker), P);
    broker->fail = 1;
    struct scrape_opts o = {.report = 1};
    struct scrape *x = scrape_run(s, &o);
    ck_assert_uint_eq(scrape_failed(x), 1);
    ck_assert_int_eq(broker->ids_calls, 0);
    ck_assert_double_eq(find(x, "qrel_dead_letter_classified_messages", "work", "done"), -1);
    ck_assert_double_eq(find(x, "qrel_collector_up", "source", "broker"), 0);
    ck_assert_int_eq(scrape_report(x)->status, AUDIT_CRITICAL); /* db's dead letter */
    scrape_free(x);
    scheduler_unref(s);
}
END_TEST

static Suite *scrape_suite(void)
{
    Suite *s = suite_create("scrape");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, pool_setup, pool_teardown);
    tcase_add_test(tc, test_the_whole_file_in_order);
    tcase_add_test(tc, test_one_source_has_no_own_series);
    tcase_add_test(tc, test_the_exporter_serves_process_and_requests);
    tcase_add_test(tc, test_the_landing_page_runs_no_join_and_gets_a_report);
    tcase_add_test(tc, test_a_broker_down_has_no_join);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(scrape_suite(), CK_NORMAL);
}
