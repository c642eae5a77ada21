/* deadline.c: see deadline.h.
 *
 * Every reading of "now" in the engine (deadlines, back-off, min_interval ages, durations, the
 * wall-clock timestamps it exports) comes through deadline_now_ms and deadline_wall_now, so this
 * file is the one seam where a unit test moves time: deadline_advance_for_tests adds to an offset
 * both clocks read, and a test of the back-off or of min_interval advances the clock instead of
 * sleeping. An offset rather than a replaceable clock function, because the waits on threads
 * (pthread_cond_timedwait) stay real: deadline_timespec turns a deadline back into the real
 * monotonic time at which it falls, so a wait ends when the real time has passed. Outside tests
 * the offset is 0 and costs one relaxed atomic load. */
#include "deadline.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <time.h>

static _Atomic int_least64_t offset_ms;

static int64_t offset_now(void)
{
    return (int64_t)atomic_load_explicit(&offset_ms, memory_order_relaxed);
}

int64_t deadline_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + offset_now();
}

struct deadline deadline_in(double seconds)
{
    struct deadline d = {deadline_now_ms() + (int64_t)(seconds * 1000.0)};
    return d;
}

int64_t deadline_remaining_ms(const struct deadline *d)
{
    int64_t left = d->at_ms - deadline_now_ms();
    return left > 0 ? left : 0;
}

int deadline_expired(const struct deadline *d)
{
    return deadline_now_ms() >= d->at_ms;
}

struct deadline deadline_min(struct deadline a, struct deadline b)
{
    return a.at_ms <= b.at_ms ? a : b;
}

struct timespec deadline_timespec(const struct deadline *d)
{
    int64_t at = d->at_ms - offset_now();
    if (at < 0)
        at = 0;
    struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000L};
    return ts;
}

int deadline_wait_fd(int fd, short events, const struct deadline *d, short *revents)
{
    for (;;) {
        int64_t left = deadline_remaining_ms(d);
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        /* A poll that returns 0 is checked against the clock again: its milliseconds are
         * rounded, so it may wake a little before the deadline. */
        int n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n > 0) {
            if (revents)
                *revents = pfd.revents;
            return 1;
        }
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

double deadline_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + (double)offset_now() / 1000.0;
}

void deadline_advance_for_tests(int64_t ms)
{
    if (ms > 0)
        atomic_fetch_add_explicit(&offset_ms, ms, memory_order_relaxed);
}
