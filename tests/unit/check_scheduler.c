/* check_scheduler.c: the scheduler's promises, with fake collectors that sleep, hang until
 * released, fail or succeed: deadlines hold when a collector hangs, other sources are still
 * served, overlapping scrapes share one collection, failures are counted by reason and back off,
 * then recover; on a bounded pool no more collections run at once than it has threads, a collection
 * still queued at its deadline is reported as not started (without back-off), and healthy sources
 * go first.
 *
 * Time: a back-off or a min_interval is waited out by moving the clock (deadline_advance_for_tests,
 * core/deadline.c) instead of sleeping, and a collector that hangs blocks until the test releases
 * it instead of sleeping for longer than the deadline. What stays real is what only a real wait
 * shows: a scrape that returns at its deadline while a collector hangs (0.25 to 0.5 s each, on a
 * condition variable of the real clock), 300 ms for overlapping scrapes to reach a held
 * collection, and a pool of 4 threads taking 20 collections of 100 ms in five rounds. Before the
 * seam the suite slept about 12 s; now about 3.5 s. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "pool.h"
#include "scheduler.h"
#include "sources.h"
#include "alloc.h"
#include "support/check_run.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The pool of the test being run (a checked fixture makes and frees it). */
static struct pool *P;

static void pool_setup(void)
{
    struct err e;
    P = pool_new(16, &e);
    ck_assert_ptr_nonnull(P);
}

static void pool_teardown(void)
{
    pool_free(P); /* waits for collections a test left running */
    P = NULL;
}

/* Across all fakes: how many collect at once now and at most, and the order of calls. */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static int all_running, all_peak, all_calls;

struct fake {
    int sleep_ms; /* how long collect takes (it ignores the deadline, like a stuck library) */
    int hold;     /* collect blocks until release() (a library stuck past any deadline) */
    int finished; /* collect calls that returned */
    int fail;     /* fail with ERR_CONNECT */
    int bad_add;  /* add a sample of a family the catalogue does not know first */
    int calls;    /* collect calls so far */
    int order;    /* all_calls when it was last called (1 = first of all) */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* hold ended, or a call finished */
};

static int fake_collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                        struct err *e)
{
    struct fake *f = c->priv;
    pthread_mutex_lock(&all_mu);
    all_running++;
    if (all_running > all_peak)
        all_peak = all_running;
    int order = ++all_calls;
    pthread_mutex_unlock(&all_mu);
    pthread_mutex_lock(&f->mu);
    f->calls++;
    f->order = order;
    int delay = f->sleep_ms, fail = f->fail, bad_add = f->bad_add;
    pthread_mutex_unlock(&f->mu);
    (void)dl;
    if (delay)
        sleep_ms(delay);
    pthread_mutex_lock(&f->mu);
    while (f->hold)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_lock(&all_mu);
    all_running--;
    pthread_mutex_unlock(&all_mu);
    if (bad_add) /* not checked, as kinds do not: the scheduler notices */
        metric_set_add(out, "qrel_no_such_family", 1, "queue", "q", NULL);
    if (!fail)
        metric_set_add(out, "qrel_queue_messages", 7, "queue", "q", "state", "ready", NULL);
    pthread_mutex_lock(&f->mu);
    f->finished++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return fail ? err_set(e, ERR_CONNECT, "connection refused") : 0;
}

/* Lets a held collect return, and nothing more: f may be freed as soon as it has (when the
 * collection held the scheduler's last reference), so f is not touched after the unlock. The
 * pool's teardown (pool_free) waits for the collection to end. */
static void let_go(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->hold = 0;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Lets a held collect return, and waits until it has; the test must still hold the scheduler,
 * which keeps f alive. */
static void release(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->hold = 0;
    pthread_cond_broadcast(&f->cv);
    while (f->finished < f->calls)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

/* Waits until the pool runs and queues nothing: its threads are idle. */
static void wait_idle(struct pool *p)
{
    for (;;) {
        struct pool_stats ps;
        pool_get_stats(p, &ps);
        if (ps.running == 0 && ps.waiting == 0)
            return;
        sleep_ms(1);
    }
}

static void fake_destroy(struct collector *c)
{
    struct fake *f = c->priv;
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

static const struct collector_kind fake_kind = {
    .name = "fake", .collect = fake_collect, .destroy = fake_destroy};

static struct fake *add_source(struct sources *s, const char *name, double timeout)
{
    struct collector *c = xcalloc(1, sizeof *c);
    struct fake *f = xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    c->name = xstrdup(name);
    c->kind = &fake_kind;
    c->timeout = timeout;
    c->priv = f;
    s->items = xrealloc(s->items, (s->n + 1) * sizeof *s->items);
    s->items[s->n++] = c;
    return f;
}

static struct sources *new_sources(void)
{
    struct sources *s = xcalloc(1, sizeof *s);
    s->path = xstrdup("test");
    s->timeout = 10;
    s->scrape_timeout_offset = 0.5;
    return s;
}

/* The value of the first sample of family whose labels include name=value (or any labels when
 * name is NULL); -1 when absent. */
static double find(const struct scheduler_scrape *sc, const char *source, const char *family,
                   const char *name, const char *value)
{
    size_t n;
    struct metric_set *const *sets = scheduler_scrape_sets(sc, &n);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < metric_set_len(sets[i]); j++) {
            struct metric_sample m;
            metric_set_get(sets[i], j, &m);
            if (strcmp(m.family->name, family) != 0)
                continue;
            int src_ok = 0, lbl_ok = name == NULL;
            for (size_t k = 0; k < m.nlabels; k++) {
                if (strcmp(m.labels[k].name, "source") == 0 &&
                    strcmp(m.labels[k].value, source) == 0)
                    src_ok = 1;
                if (name && strcmp(m.labels[k].name, name) == 0 &&
                    strcmp(m.labels[k].value, value) == 0)
                    lbl_ok = 1;
            }
            if (src_ok && lbl_ok)
                return m.value;
        }
    }
    return -1;
}

START_TEST(test_budget)
{
    ck_assert_double_eq(scheduler_budget(10, 0, 0.5), 10);    /* no header: the source timeout */
    ck_assert_double_eq(scheduler_budget(10, 2, 0.5), 1.5);   /* header minus offset */
    ck_assert_double_eq(scheduler_budget(1, 15, 0.5), 1);     /* the source timeout is shorter */
    ck_assert_double_eq(scheduler_budget(10, 0.6, 0.5), 0.3); /* never less than half */
    /* A header below the floor counts as the floor (0.5 s), then the rule above. */
    ck_assert_double_eq(scheduler_budget(10, 1e-9, 0.5), 0.25);
    ck_assert_double_eq(scheduler_budget(10, 4.9e-324, 0.5), 0.25);
}
END_TEST

START_TEST(test_hung_source_does_not_hold_the_scrape)
{
    struct sources *src = new_sources();
    struct fake *slow = add_source(src, "slow", 10);
    add_source(src, "fast", 10);
    slow->hold = 1;
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts o = {.scrape_timeout = 1.0, .only = NULL};
    int64_t t0 = deadline_now_ms();
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    int64_t took = deadline_now_ms() - t0;
    /* 1 s header minus 0.5 s offset: returns at about 500 ms, while the collector still hangs. */
    ck_assert_int_ge(took, 450);
    ck_assert_int_lt(took, 900);
    ck_assert_double_eq(find(sc, "slow", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "fast", "qrel_collector_up", NULL, NULL), 1);
    ck_assert_double_eq(find(sc, "fast", "qrel_queue_messages", "state", "ready"), 7);
    ck_assert_double_eq(find(sc, "slow", "qrel_queue_messages", "state", "ready"), -1);
    /* Late only for this scrape's short header, not for the source's own 10 s: not counted. */
    ck_assert_double_eq(find(sc, "slow", "qrel_collector_errors_total", "reason", "timeout"), 0);
    ck_assert_double_eq(find(sc, "fast", "qrel_collector_errors_total", "reason", "timeout"), 0);
    ck_assert_uint_eq(scheduler_scrape_failed(sc), 1);
    scheduler_scrape_free(sc);
    /* Drop our reference while the slow collection still runs: it must keep the scheduler
     * alive by itself and free everything when it ends (valgrind/ASan check the rest). */
    scheduler_unref(s);
    let_go(slow);
}
END_TEST

/* A collection late by the source's own timeout is a failure: counted, and it backs off. */
START_TEST(test_late_by_own_timeout_is_counted)
{
    struct sources *src = new_sources();
    struct fake *slow = add_source(src, "slow", 0.3);
    slow->hold = 1;
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    ck_assert_double_eq(find(sc, "slow", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "slow", "qrel_collector_errors_total", "reason", "timeout"), 1);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    let_go(slow);
}
END_TEST

/* Scrapes with a tiny header leave the source healthy: the next plain scrape joins or starts a
 * collection that succeeds, with no error counted and no back-off. */
START_TEST(test_tiny_header_does_not_fail_the_source)
{
    struct sources *src = new_sources();
    struct fake *f = add_source(src, "a", 10);
    f->hold = 1;
    struct scheduler *s = scheduler_new(src, P);
    /* The first waits 0.25 s for a collection that takes longer: up 0 in that answer only. */
    struct scheduler_opts tiny = {.scrape_timeout = 1e-9, .only = NULL};
    struct scheduler_scrape *first = scheduler_scrape(s, &tiny);
    ck_assert_double_eq(find(first, "a", "qrel_collector_up", NULL, NULL), 0);
    scheduler_scrape_free(first);
    release(f);
    struct scheduler_opts plain = {.scrape_timeout = 0, .only = NULL};
    struct scheduler_scrape *sc = scheduler_scrape(s, &plain);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 1);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "timeout"), 0);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
}
END_TEST

struct scrape_thread {
    struct scheduler *s;
    struct scheduler_scrape *sc;
};

static int entered; /* scrape threads about to call scheduler_scrape; under all_mu */

static void *scrape_main(void *p)
{
    struct scrape_thread *t = p;
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    pthread_mutex_lock(&all_mu);
    entered++;
    pthread_mutex_unlock(&all_mu);
    t->sc = scheduler_scrape(t->s, &o);
    return NULL;
}

/* The collection is held until all four scrapes have started and had 300 ms more to reach it
 * (microseconds of work on a quiet machine): four threads created 20 ms apart around a 300 ms
 * collection, as before, failed under valgrind on a loaded machine, where the fourth thread ran
 * only after the collection had ended. */
START_TEST(test_overlapping_scrapes_share_one_collection)
{
    struct sources *src = new_sources();
    struct fake *f = add_source(src, "a", 10);
    f->hold = 1;
    struct scheduler *s = scheduler_new(src, P);
    struct scrape_thread t[4];
    pthread_t th[4];
    pthread_mutex_lock(&all_mu);
    entered = 0;
    pthread_mutex_unlock(&all_mu);
    for (int i = 0; i < 4; i++) {
        t[i].s = s;
        pthread_create(&th[i], NULL, scrape_main, &t[i]);
    }
    for (int n = 0; n < 4; sleep_ms(1)) {
        pthread_mutex_lock(&all_mu);
        n = entered;
        pthread_mutex_unlock(&all_mu);
    }
    sleep_ms(300);
    release(f);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_double_eq(find(t[i].sc, "a", "qrel_collector_up", NULL, NULL), 1);
        scheduler_scrape_free(t[i].sc);
    }
    ck_assert_int_eq(f->calls, 1);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_failure_counts_backs_off_and_recovers)
{
    struct sources *src = new_sources();
    struct fake *f = add_source(src, "a", 10);
    f->fail = 1;
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};

    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "connect"), 1);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_last_success_timestamp_seconds", NULL, NULL),
                        -1);
    scheduler_scrape_free(sc);

    /* Within the back-off (0.5 s after one failure) the broker is not asked again. */
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(f->calls, 1);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "connect"), 1);
    scheduler_scrape_free(sc);

    /* After it, the source is tried again and, once the broker is back, up again. */
    deadline_advance_for_tests(600);
    pthread_mutex_lock(&f->mu);
    f->fail = 0;
    pthread_mutex_unlock(&f->mu);
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(f->calls, 2);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 1);
    ck_assert_double_gt(find(sc, "a", "qrel_collector_last_success_timestamp_seconds", NULL, NULL),
                        1.7e9);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "connect"), 1);
    scheduler_scrape_free(sc);

    struct scheduler_status st;
    scheduler_status_at(s, 0, &st);
    ck_assert_int_eq(st.up, 1);
    ck_assert_str_eq(st.last_error, "");
    scheduler_unref(s);
}
END_TEST

/* A failed metric add is a programming error: the kind does not check it, the scheduler fails
 * the collection as internal with the set's first error, even when the kind then returned 0 or
 * failed for a reason of its own. */
START_TEST(test_failed_metric_add_fails_the_collection_as_internal)
{
    for (int fail = 0; fail <= 1; fail++) {
        struct sources *src = new_sources();
        struct fake *f = add_source(src, "a", 10);
        f->bad_add = 1;
        f->fail = fail;
        struct scheduler *s = scheduler_new(src, P);
        struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
        struct scheduler_scrape *sc = scheduler_scrape(s, &o);
        ck_assert_int_eq(f->calls, 1);
        ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 0);
        ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "internal"), 1);
        ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "connect"), 0);
        ck_assert_double_eq(find(sc, "a", "qrel_queue_messages", "state", "ready"), -1);
        ck_assert_uint_eq(scheduler_scrape_failed(sc), 1);
        scheduler_scrape_free(sc);
        struct scheduler_status st;
        scheduler_status_at(s, 0, &st);
        ck_assert_int_eq(st.up, 0);
        ck_assert_str_eq(st.last_error, "unknown metric family \"qrel_no_such_family\"");
        scheduler_unref(s);
    }
}
END_TEST

START_TEST(test_only_collects_one_source)
{
    struct sources *src = new_sources();
    struct fake *a = add_source(src, "a", 10);
    struct fake *b = add_source(src, "b", 10);
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = "b"};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    ck_assert_uint_eq(scheduler_scrape_matched(sc), 1);
    ck_assert_int_eq(a->calls, 0);
    ck_assert_int_eq(b->calls, 1);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), -1);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_min_interval_serves_a_recent_result_again)
{
    struct sources *src = new_sources();
    struct fake *f = add_source(src, "a", 10);
    src->items[0]->min_interval = 0.4;
    add_source(src, "b", 10); /* no min_interval: asked every time, no sample age */
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};

    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 1);
    ck_assert_double_le(find(sc, "a", "qrel_sample_age_seconds", NULL, NULL), 0.05);
    ck_assert_double_eq(find(sc, "b", "qrel_sample_age_seconds", NULL, NULL), -1);
    scheduler_scrape_free(sc);

    deadline_advance_for_tests(200);
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(f->calls, 1); /* served from the cache */
    ck_assert_double_eq(find(sc, "a", "qrel_queue_messages", "state", "ready"), 7);
    double age = find(sc, "a", "qrel_sample_age_seconds", NULL, NULL);
    ck_assert_double_ge(age, 0.19);
    ck_assert_double_le(age, 0.35);
    scheduler_scrape_free(sc);

    deadline_advance_for_tests(300); /* past min_interval: asked again */
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(f->calls, 2);
    ck_assert_double_le(find(sc, "a", "qrel_sample_age_seconds", NULL, NULL), 0.05);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
}
END_TEST

START_TEST(test_max_age_serves_the_latest_success)
{
    struct sources *src = new_sources();
    struct fake *f = add_source(src, "a", 10);
    struct scheduler *s = scheduler_new(src, P);
    struct scheduler_opts plain = {.scrape_timeout = 0, .only = NULL};
    struct scheduler_opts page = {.scrape_timeout = 0, .only = NULL, .max_age = 0.3};

    /* Nothing collected yet: the page collects. */
    struct scheduler_scrape *sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 1);
    ck_assert_double_eq(find(sc, "a", "qrel_queue_messages", "state", "ready"), 7);
    scheduler_scrape_free(sc);
    /* Within max_age the page is served that collection again; a scrape still collects. */
    sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 1);
    ck_assert_double_eq(find(sc, "a", "qrel_queue_messages", "state", "ready"), 7);
    ck_assert_double_eq(find(sc, "a", "qrel_sample_age_seconds", NULL, NULL), -1);
    scheduler_scrape_free(sc);
    sc = scheduler_scrape(s, &plain);
    ck_assert_int_eq(f->calls, 2);
    scheduler_scrape_free(sc);
    /* A plain scrape's set is not kept (nothing would serve it again without min_interval), and
     * the page's older one is not served after it: the page collects, and keeps what it got. */
    sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 3);
    scheduler_scrape_free(sc);
    sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 3);
    scheduler_scrape_free(sc);
    /* Past max_age the page collects again. */
    deadline_advance_for_tests(350);
    sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 4);
    scheduler_scrape_free(sc);
    /* A failure after the latest success is the last word: the page asks again (after the
     * back-off) instead of showing the older success as up. */
    pthread_mutex_lock(&f->mu);
    f->fail = 1;
    pthread_mutex_unlock(&f->mu);
    sc = scheduler_scrape(s, &plain);
    ck_assert_int_eq(f->calls, 5);
    scheduler_scrape_free(sc);
    sc = scheduler_scrape(s, &page);
    ck_assert_int_eq(f->calls, 5); /* within the back-off */
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "a", "qrel_queue_messages", "state", "ready"), -1);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
}
END_TEST

static void reset_counts(void)
{
    pthread_mutex_lock(&all_mu);
    all_running = all_peak = all_calls = 0;
    pthread_mutex_unlock(&all_mu);
}

START_TEST(test_pool_bounds_running_collections)
{
    struct err e;
    struct pool *pool = pool_new(4, &e);
    struct sources *src = new_sources();
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        add_source(src, name, 10)->sleep_ms = 100;
    }
    reset_counts();
    struct scheduler *s = scheduler_new(src, pool);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    int64_t t0 = deadline_now_ms();
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    int64_t took = deadline_now_ms() - t0;
    ck_assert_uint_eq(scheduler_scrape_failed(sc), 0);
    ck_assert_int_eq(all_peak, 4);
    /* 20 collections of 100 ms, 4 at a time: five rounds. */
    ck_assert_int_ge(took, 480);
    ck_assert_int_lt(took, 1500);
    struct pool_stats ps;
    pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.threads, 4);
    ck_assert_uint_eq(ps.expired, 0);
    scheduler_scrape_free(sc);

    /* The threads are kept: a second scrape starts none. */
    sc = scheduler_scrape(s, &o);
    ck_assert_uint_eq(scheduler_scrape_failed(sc), 0);
    pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.threads, 4);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    pool_free(pool);
}
END_TEST

START_TEST(test_queued_past_the_deadline_is_not_started)
{
    struct err e;
    struct pool *pool = pool_new(1, &e);
    struct sources *src = new_sources();
    /* The sources' own timeouts (0.5 s) are the deadlines here: a scrape-timeout header only
     * bounds the wait and never fails a source (test_tiny_header_does_not_fail_the_source). */
    struct fake *hog = add_source(src, "hog", 0.5);
    hog->hold = 1; /* holds the only thread past the sources' deadline */
    struct fake *a = add_source(src, "a", 0.5);
    struct fake *b = add_source(src, "b", 0.5);
    struct scheduler *s = scheduler_new(src, pool);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    int64_t t0 = deadline_now_ms();
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    int64_t took = deadline_now_ms() - t0;
    /* The scrape still ends at its deadline (the sources' 0.5 s). */
    ck_assert_int_ge(took, 450);
    ck_assert_int_lt(took, 900);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "b", "qrel_collector_up", NULL, NULL), 0);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_errors_total", "reason", "timeout"), 1);
    ck_assert_int_eq(a->calls, 0);
    ck_assert_int_eq(b->calls, 0);
    /* Its duration is the time it waited: the whole budget. */
    ck_assert_double_ge(find(sc, "a", "qrel_collector_duration_seconds", NULL, NULL), 0.45);
    struct scheduler_status st;
    scheduler_status_at(s, 1, &st);
    ck_assert_int_eq(st.up, 0);
    ck_assert_str_eq(st.last_error, "collection not started before the deadline: all 1 "
                                    "collection threads were busy (--collector.concurrency)");
    /* Taken out of the queue at once: nothing waits, and both count as never started. */
    struct pool_stats ps;
    pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.waiting, 0);
    ck_assert_uint_eq(ps.expired, 2);
    scheduler_scrape_free(sc);

    /* No back-off for a source that never ran: once the thread is free it is asked at once. */
    release(hog);
    wait_idle(pool);
    o.only = "a";
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(a->calls, 1);
    ck_assert_double_eq(find(sc, "a", "qrel_collector_up", NULL, NULL), 1);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    pool_free(pool);
}
END_TEST

START_TEST(test_failing_sources_wait_behind_healthy_ones)
{
    struct err e;
    struct pool *pool = pool_new(1, &e);
    struct sources *src = new_sources();
    struct fake *bad = add_source(src, "bad", 10);
    struct fake *good = add_source(src, "good", 10);
    bad->fail = 1;
    struct scheduler *s = scheduler_new(src, pool);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    ck_assert_double_eq(find(sc, "bad", "qrel_collector_up", NULL, NULL), 0);
    scheduler_scrape_free(sc);

    /* After bad's back-off, with the only thread idle: good is handed over first, though bad
     * comes first in the configuration (an idle thread takes the first job it gets). */
    deadline_advance_for_tests(600);
    wait_idle(pool);
    reset_counts();
    sc = scheduler_scrape(s, &o);
    ck_assert_int_eq(good->order, 1);
    ck_assert_int_eq(bad->order, 2);
    ck_assert_int_eq(bad->calls, 2);
    ck_assert_double_eq(find(sc, "good", "qrel_collector_up", NULL, NULL), 1);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    pool_free(pool);
}
END_TEST

START_TEST(test_a_failing_source_not_started_keeps_its_back_off)
{
    struct err e;
    struct pool *pool = pool_new(1, &e);
    struct sources *src = new_sources();
    struct fake *bad = add_source(src, "bad", 0.5);
    struct fake *hog = add_source(src, "hog", 0.5);
    bad->fail = 1;
    struct scheduler *s = scheduler_new(src, pool);
    struct scheduler_opts o = {.scrape_timeout = 0, .only = NULL};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    scheduler_scrape_free(sc);

    /* Past bad's back-off: hog (healthy, first) holds the thread, bad is not started. */
    deadline_advance_for_tests(600);
    wait_idle(pool);
    pthread_mutex_lock(&hog->mu);
    hog->hold = 1;
    pthread_mutex_unlock(&hog->mu);
    sc = scheduler_scrape(s, &o);
    ck_assert_double_eq(find(sc, "bad", "qrel_collector_up", NULL, NULL), 0);
    scheduler_scrape_free(sc);
    struct pool_stats ps;
    pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.expired, 1);

    /* bad was failing: it is backed off again instead of queueing behind hog at every scrape. */
    o.only = "bad";
    int64_t t0 = deadline_now_ms();
    sc = scheduler_scrape(s, &o);
    ck_assert_int_lt(deadline_now_ms() - t0, 100);
    ck_assert_double_eq(find(sc, "bad", "qrel_collector_up", NULL, NULL), 0);
    pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.expired, 1);
    ck_assert_int_eq(bad->calls, 1);
    scheduler_scrape_free(sc);
    release(hog);
    scheduler_unref(s);
    pool_free(pool);
}
END_TEST

static Suite *scheduler_suite(void)
{
    Suite *s = suite_create("scheduler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, pool_setup, pool_teardown);
    tcase_add_test(tc, test_budget);
    tcase_add_test(tc, test_hung_source_does_not_hold_the_scrape);
    tcase_add_test(tc, test_late_by_own_timeout_is_counted);
    tcase_add_test(tc, test_tiny_header_does_not_fail_the_source);
    tcase_add_test(tc, test_overlapping_scrapes_share_one_collection);
    tcase_add_test(tc, test_failure_counts_backs_off_and_recovers);
    tcase_add_test(tc, test_failed_metric_add_fails_the_collection_as_internal);
    tcase_add_test(tc, test_only_collects_one_source);
    tcase_add_test(tc, test_min_interval_serves_a_recent_result_again);
    tcase_add_test(tc, test_max_age_serves_the_latest_success);
    tcase_add_test(tc, test_pool_bounds_running_collections);
    tcase_add_test(tc, test_queued_past_the_deadline_is_not_started);
    tcase_add_test(tc, test_failing_sources_wait_behind_healthy_ones);
    tcase_add_test(tc, test_a_failing_source_not_started_keeps_its_back_off);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(scheduler_suite(), CK_NORMAL);
}
