/* check_pool.c: the collection pool on its own: threads started only as jobs need them and never
 * more than its size, jobs run by (priority, start_by, arrival), a job that waited past its
 * start_by is expired instead of run, pool_cancel takes a waiting job out, pool_free expires what
 * waits and waits for what runs. Jobs record their order; a gate job holds the pool's threads. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "pool.h"
#include "support/check_run.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open;  /* gate jobs return once this is 1 */
static int gate_in;    /* gate jobs running */
static char trace[64]; /* 'r'un or 'x'expired, then the job's letter, in call order */

static void record(char what, const char *name)
{
    pthread_mutex_lock(&mu);
    size_t n = strlen(trace);
    if (n + 2 < sizeof trace) {
        trace[n] = what;
        trace[n + 1] = name[0];
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void run_job(void *arg)
{
    record('r', arg);
}

static void expire_job(void *arg)
{
    record('x', arg);
}

static void gate_job(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    gate_in++;
    pthread_cond_broadcast(&cv);
    while (!gate_open)
        pthread_cond_wait(&cv, &mu);
    gate_in--;
    pthread_mutex_unlock(&mu);
}

static void reset(void)
{
    pthread_mutex_lock(&mu);
    gate_open = 0;
    gate_in = 0;
    memset(trace, 0, sizeof trace);
    pthread_mutex_unlock(&mu);
}

static void wait_gate_in(int n)
{
    pthread_mutex_lock(&mu);
    while (gate_in < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void open_gate(void)
{
    pthread_mutex_lock(&mu);
    gate_open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void *open_gate_later(void *arg)
{
    (void)arg;
    sleep_ms(100);
    open_gate();
    return NULL;
}

static void wait_trace_len(size_t n)
{
    pthread_mutex_lock(&mu);
    while (strlen(trace) < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static uint64_t submit(struct pool *p, void (*run)(void *), const char *name, int64_t start_by,
                       int priority)
{
    struct err e;
    struct pool_job j = {run, expire_job, (void *)name, start_by, priority};
    uint64_t id = 0;
    ck_assert_int_eq(pool_submit(p, &j, &id, &e), 0);
    ck_assert_uint_ne(id, 0);
    return id;
}

/* A pool of one thread that a gate job holds until open_gate(), so that what a test submits next
 * waits; the gate job's id in *gate where gate is not NULL. */
static struct pool *gated_pool(uint64_t *gate)
{
    reset();
    struct err e;
    struct pool *p = pool_new(1, &e);
    uint64_t g = submit(p, gate_job, "g", 0, 0);
    if (gate)
        *gate = g;
    wait_gate_in(1);
    return p;
}

START_TEST(test_size_is_checked)
{
    struct err e;
    ck_assert_ptr_null(pool_new(0, &e));
    ck_assert_str_eq(e.msg, "collection pool: want 1 to 10000 threads, got 0");
    ck_assert_ptr_null(pool_new(POOL_MAX_THREADS + 1, &e));
    ck_assert_int_eq(e.code, ERR_CONFIG);
}
END_TEST

START_TEST(test_threads_start_as_needed_up_to_the_size)
{
    reset();
    struct err e;
    struct pool *p = pool_new(3, &e);
    struct pool_stats st;
    pool_get_stats(p, &st);
    ck_assert_uint_eq(st.threads, 0);
    submit(p, run_job, "a", 0, 0);
    wait_trace_len(2);
    sleep_ms(20); /* the thread goes back to idle */
    submit(p, run_job, "b", 0, 0);
    wait_trace_len(4);
    pool_get_stats(p, &st);
    ck_assert_uint_eq(st.threads, 1); /* one job at a time needs one thread */

    for (int i = 0; i < 5; i++)
        submit(p, gate_job, "g", 0, 0);
    wait_gate_in(3);
    sleep_ms(50);
    pool_get_stats(p, &st);
    ck_assert_uint_eq(st.threads, 3);
    ck_assert_uint_eq(st.running, 3);
    ck_assert_uint_eq(st.waiting, 2);
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(gate_in, 3);
    pthread_mutex_unlock(&mu);
    open_gate();
    pool_free(p);
}
END_TEST

START_TEST(test_order_is_priority_then_start_by_then_arrival)
{
    struct pool *p = gated_pool(NULL);
    int64_t now = deadline_now_ms();
    submit(p, run_job, "b", now + 5000, 1);
    submit(p, run_job, "c", now + 9000, 0);
    submit(p, run_job, "d", now + 5000, 0);
    submit(p, run_job, "e", now + 9000, 0);
    submit(p, run_job, "f", 0, 0); /* no start_by: after every dated job of its priority */
    open_gate();
    wait_trace_len(10);
    ck_assert_str_eq(trace, "rdrcrerfrb");
    pool_free(p);
}
END_TEST

START_TEST(test_a_job_waiting_past_its_start_by_is_expired)
{
    struct pool *p = gated_pool(NULL);
    submit(p, run_job, "a", deadline_now_ms() + 50, 0);
    submit(p, run_job, "b", deadline_now_ms() + 5000, 0);
    sleep_ms(100);
    open_gate();
    wait_trace_len(4);
    ck_assert_str_eq(trace, "xarb");
    struct pool_stats st;
    pool_get_stats(p, &st);
    ck_assert_uint_eq(st.expired, 1);
    pool_free(p);
}
END_TEST

START_TEST(test_cancel_takes_a_waiting_job_out)
{
    uint64_t g;
    struct pool *p = gated_pool(&g);
    uint64_t a = submit(p, run_job, "a", 0, 0);
    submit(p, run_job, "b", 0, 0);
    ck_assert_int_eq(pool_cancel(p, g), -1); /* running: too late */
    ck_assert_int_eq(pool_cancel(p, a), 0);
    ck_assert_int_eq(pool_cancel(p, a), -1); /* once */
    open_gate();
    wait_trace_len(2);
    sleep_ms(50);
    ck_assert_str_eq(trace, "rb"); /* a neither ran nor expired */
    pool_free(p);
}
END_TEST

START_TEST(test_free_expires_waiting_and_waits_for_running)
{
    struct pool *p = gated_pool(NULL);
    submit(p, run_job, "a", 0, 0);
    submit(p, run_job, "b", 0, 1);
    /* Open the gate from another thread while pool_free waits for the running job. */
    pthread_t t;
    pthread_create(&t, NULL, open_gate_later, NULL);
    pool_free(p);
    pthread_join(t, NULL);
    ck_assert_str_eq(trace, "xaxb");
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(gate_in, 0);
    pthread_mutex_unlock(&mu);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_size_is_checked, 0},
        {test_threads_start_as_needed_up_to_the_size, 0},
        {test_order_is_priority_then_start_by_then_arrival, 0},
        {test_a_job_waiting_past_its_start_by_is_expired, 0},
        {test_cancel_takes_a_waiting_job_out, 0},
        {test_free_expires_waiting_and_waits_for_running, 0},
    };
    return check_run_tests("pool", tests, CHECK_ROWS(tests), 30);
}
