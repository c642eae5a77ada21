/* deadline.c: see deadline.h. */
#include "deadline.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <time.h>

int64_t deadline_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
