/* check_deadline.c: the one wait on a socket bounded by a deadline: a ready descriptor answers at
 * once with poll's revents, a silent one waits out the deadline (and no longer), a deadline
 * already past does not wait at all, and a closed descriptor is reported as poll reports it. */
#include <check.h>
#include <poll.h>
#include <unistd.h>

#include "deadline.h"
#include "support/check_run.h"

/* A pipe: nothing to read from fds[0] until something is written to fds[1]. */
static void pipe_open(int fds[2])
{
    ck_assert_int_eq(pipe(fds), 0);
}

static void pipe_close(const int fds[2])
{
    close(fds[0]);
    close(fds[1]);
}

START_TEST(test_ready)
{
    int fds[2];
    pipe_open(fds);
    ck_assert_int_eq(write(fds[1], "x", 1), 1);
    struct deadline dl = deadline_in(5);
    short revents = 0;
    ck_assert_int_eq(deadline_wait_fd(fds[0], POLLIN, &dl, &revents), 1);
    ck_assert(revents & POLLIN);
    /* The write end of an empty pipe is writable; revents may be left out. */
    ck_assert_int_eq(deadline_wait_fd(fds[1], POLLOUT, &dl, NULL), 1);
    pipe_close(fds);
}
END_TEST

START_TEST(test_deadline_passes)
{
    int fds[2];
    pipe_open(fds);
    int64_t t0 = deadline_now_ms();
    struct deadline dl = deadline_in(0.05);
    ck_assert_int_eq(deadline_wait_fd(fds[0], POLLIN, &dl, NULL), 0);
    int64_t waited = deadline_now_ms() - t0;
    ck_assert_int_ge(waited, 50);
    ck_assert(deadline_expired(&dl));
    /* Past already: no wait, even for a descriptor that would never be ready. */
    t0 = deadline_now_ms();
    ck_assert_int_eq(deadline_wait_fd(fds[0], POLLIN, &dl, NULL), 0);
    ck_assert_int_lt(deadline_now_ms() - t0, 1000); /* not a bound on speed: "did not wait" */
    pipe_close(fds);
}
END_TEST

START_TEST(test_closed_descriptor)
{
    int fds[2];
    pipe_open(fds);
    pipe_close(fds);
    struct deadline dl = deadline_in(5);
    short revents = 0;
    ck_assert_int_eq(deadline_wait_fd(fds[0], POLLIN, &dl, &revents), 1);
    ck_assert(revents & POLLNVAL);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_ready, 0},
        {test_deadline_passes, 0},
        {test_closed_descriptor, 0},
    };
    return check_run_tests("deadline", tests, CHECK_ROWS(tests), 0);
}
