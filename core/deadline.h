/* deadline.h: the clocks. A deadline is a point in monotonic time by which a collection must be
 * complete; deadline_wall_now is the wall clock that broker timestamps are compared with; and
 * deadline_wait_fd, the one wait on a socket bounded by a deadline that the helpers share.
 *
 * C cannot stop a thread, so every blocking helper turns the deadline into its library's own
 * timeout (poll timeout, CURLOPT_TIMEOUT_MS, statement_timeout). Monotonic, so wall-clock jumps
 * never stretch or cut a scrape.
 *
 * Both clocks are read here and nowhere else in the engine, so a unit test can move time forward
 * (deadline_advance_for_tests) instead of sleeping; see deadline.c. */
#ifndef QREL_DEADLINE_H
#define QREL_DEADLINE_H

#include <stdint.h>
#include <time.h>

struct deadline {
    int64_t at_ms; /* CLOCK_MONOTONIC milliseconds */
};

int64_t deadline_now_ms(void);
struct deadline deadline_in(double seconds);
/* Milliseconds left, never negative. */
int64_t deadline_remaining_ms(const struct deadline *d);
int deadline_expired(const struct deadline *d);
/* The earlier of two deadlines. */
struct deadline deadline_min(struct deadline a, struct deadline b);

/* The CLOCK_MONOTONIC time at which d falls, for pthread_cond_timedwait on a condition variable
 * set to that clock: the wait is real even when a test has moved the clock (then it may last
 * longer than the moved clock says, never shorter). */
struct timespec deadline_timespec(const struct deadline *d);

/* Waits until fd is ready for events (POLLIN, POLLOUT, ...) or the deadline passes, retrying
 * when a signal interrupts the wait. Returns 1 ready (*revents, if not NULL, gets poll's
 * revents), 0 the deadline passed (also when it already had), -1 poll failed (errno says why).
 * The caller words the error: each names its own connection and what it was waiting for. */
int deadline_wait_fd(int fd, short events, const struct deadline *d, short *revents);

/* Wall-clock now in seconds since the epoch (CLOCK_REALTIME): for ages of timestamps a broker or
 * a table wrote, never for deadlines. */
double deadline_wall_now(void);

/* Tests only: moves both clocks forward by ms (never back), for every thread at once. Production
 * code never calls it; tests/unit/check_scheduler.c does, between scrapes, instead of sleeping
 * through a back-off or a min_interval. */
void deadline_advance_for_tests(int64_t ms);

#endif
