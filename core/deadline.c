/* deadline.c: see deadline.h. */
#include "deadline.h"

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

double deadline_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
