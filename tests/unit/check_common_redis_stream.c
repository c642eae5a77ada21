/* check_common_redis_stream.c: the streamed pipeline of collectors/common/redis.c
 * (redis_pipe_exec_stream) against a loopback peer on a thread of the test that answers every
 * command with its last argument, as Redis' ECHO would: commands formatted in many windows come
 * back whole and in order, with their indices counted across the windows and after commands
 * added before the call; the filler's failure and a filler that wants more but adds nothing stop
 * the pipeline; max_response_bytes holds for the stream as a whole; and a connection the server
 * closed while idle is reconnected and the whole stream answered once. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/redis.h"
#include "buf.h"
#include "support/check_run.h"

#define PEER_WAIT_MS 20000

/* The echo peer: answers each command with a bulk string of its last argument. When close_after
 * > 0, the first connection answers that many commands, then takes three windows of the next
 * pipeline without answering and closes: the client has formatted and sent several windows by
 * then, and must resend them all on its new connection. */
struct echo_peer {
    int port;
    int lfd;
    size_t close_after;
    int connections; /* accepted, set when joined */
    pthread_t thread;
};

/* Serves one connection until the client closes it, or until limit commands were answered (0:
 * no limit) and three windows' bytes more were read. */
static void serve(int fd, size_t limit)
{
    redisReader *rd = redisReaderCreate();
    char in[16384];
    size_t answered = 0;
    struct buf out;
    buf_init(&out);
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, PEER_WAIT_MS) != 1)
            break;
        ssize_t r = read(fd, in, sizeof in);
        if (r <= 0 || redisReaderFeed(rd, in, (size_t)r) != REDIS_OK)
            break;
        void *cmd = NULL;
        out.len = 0;
        while (redisReaderGetReply(rd, &cmd) == REDIS_OK && cmd) {
            const redisReply *c = cmd;
            const redisReply *last = c->element[c->elements - 1];
            buf_printf(&out, "$%zu\r\n", last->len);
            buf_append(&out, last->str, last->len);
            buf_puts(&out, "\r\n");
            freeReplyObject(cmd);
            if (++answered == limit)
                break;
        }
        for (size_t off = 0; off < out.len;) {
            ssize_t w = send(fd, out.data + off, out.len - off, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (answered == limit)
            break;
    }
    for (size_t unanswered = 0; limit && unanswered < 3 * REDIS_PIPE_WINDOW_BYTES;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r = poll(&p, 1, PEER_WAIT_MS) == 1 ? read(fd, in, sizeof in) : 0;
        if (r <= 0)
            break;
        unanswered += (size_t)r;
    }
    buf_free(&out);
    redisReaderFree(rd);
    close(fd);
}

static void *echo_peer_main(void *arg)
{
    struct echo_peer *p = arg;
    for (int k = 0; k < (p->close_after ? 2 : 1); k++) {
        struct pollfd l = {p->lfd, POLLIN, 0};
        if (poll(&l, 1, PEER_WAIT_MS) != 1)
            break;
        int fd = accept(p->lfd, NULL, NULL);
        if (fd < 0)
            break;
        p->connections++;
        serve(fd, k == 0 ? p->close_after : 0);
    }
    return NULL;
}

static void echo_peer_start(struct echo_peer *p)
{
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(p->lfd, 0);
    ck_assert_int_eq(bind(p->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(p->lfd, 4), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(p->lfd, (struct sockaddr *)&a, &al), 0);
    p->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&p->thread, NULL, echo_peer_main, p), 0);
}

static void echo_peer_join(struct echo_peer *p)
{
    pthread_join(p->thread, NULL);
    close(p->lfd);
}

/* The filler: GET <i> for i up to n, a window at a time; fails at fail_at when set. */
struct gets {
    size_t next, n, fail_at, calls;
    int add_nothing; /* wants more but adds nothing */
};

static int fill_gets(void *ctx, struct redis_pipe *p, struct err *e)
{
    struct gets *g = ctx;
    g->calls++;
    if (g->add_nothing)
        return 1;
    for (; g->next < g->n && !redis_pipe_window_full(p); g->next++) {
        if (g->fail_at && g->next == g->fail_at)
            return err_set(e, ERR_QUERY, "filler gave up at %zu", g->next);
        char arg[32];
        snprintf(arg, sizeof arg, "%zu", g->next);
        redis_pipe_addv(p, "GET", arg, NULL);
    }
    return g->next < g->n;
}

/* Every reply must be the index of its command, counted from the first command of the pipe. */
struct seen {
    size_t n, bad;
};

static int check_echo(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    (void)e;
    struct seen *s = ctx;
    char want[32];
    snprintf(want, sizeof want, "%zu", index);
    if (index != s->n || r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
        s->bad++;
    s->n++;
    return 0;
}

/* Streams n GETs (after `before` added first) to a fresh echo peer; returns the exec's result. */
static int stream(struct echo_peer *peer, size_t before, struct gets *g, size_t max_bytes,
                  struct seen *s, struct err *e)
{
    echo_peer_start(peer);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", peer->port);
    struct deadline dl = deadline_in(30);
    struct redis_conn *c = redis_conn_open("stream", addr, NULL, NULL, 0, &dl, e);
    ck_assert_ptr_nonnull(c);
    struct redis_pipe *p = redis_pipe_new();
    if (peer->close_after) { /* a first pipeline makes the connection used, then it is closed */
        redis_pipe_addv(p, "GET", "0", NULL);
        struct seen first = {0};
        ck_assert_int_eq(redis_pipe_exec_each(c, p, &dl, 0, check_echo, &first, e), 0);
        ck_assert_uint_eq(first.n, 1);
        redis_pipe_reset(p);
    }
    for (size_t i = 0; i < before; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "%zu", i);
        redis_pipe_addv(p, "GET", arg, NULL);
    }
    g->next = before;
    int rc = redis_pipe_exec_stream(c, p, &dl, max_bytes, fill_gets, g, check_echo, s, e);
    if (rc == 0)
        ck_assert_uint_eq(redis_conn_stats(c)->reconnects, peer->close_after ? 1 : 0);
    redis_conn_close(c);
    redis_pipe_free(p);
    echo_peer_join(peer);
    return rc;
}

START_TEST(test_windows_in_order)
{
    struct echo_peer peer = {0};
    struct gets g = {.n = 20000};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_int_eq(stream(&peer, 0, &g, 0, &s, &e), 0);
    ck_assert_uint_eq(s.n, 20000);
    ck_assert_uint_eq(s.bad, 0);
    ck_assert_uint_gt(g.calls, 4); /* 20,000 commands of ~26 bytes: several 32 KiB windows */
}
END_TEST

START_TEST(test_commands_added_before)
{
    struct echo_peer peer = {0};
    struct gets g = {.n = 5000};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_int_eq(stream(&peer, 7, &g, 0, &s, &e), 0);
    ck_assert_uint_eq(s.n, 5000);
    ck_assert_uint_eq(s.bad, 0);
}
END_TEST

START_TEST(test_nothing_to_stream)
{
    struct echo_peer peer = {0};
    struct gets g = {.n = 0};
    struct seen s = {0};
    struct err e = {0};
    /* The peer is never sent a command: the filler had none, so no round trip. */
    echo_peer_start(&peer);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", peer.port);
    struct deadline dl = deadline_in(30);
    struct redis_conn *c = redis_conn_open("stream", addr, NULL, NULL, 0, &dl, &e);
    ck_assert_ptr_nonnull(c);
    struct redis_pipe *p = redis_pipe_new();
    ck_assert_int_eq(redis_pipe_exec_stream(c, p, &dl, 0, fill_gets, &g, check_echo, &s, &e), 0);
    ck_assert_uint_eq(g.calls, 1);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_uint_eq(redis_conn_stats(c)->round_trips, 0);
    redis_conn_close(c);
    redis_pipe_free(p);
    echo_peer_join(&peer);
}
END_TEST

START_TEST(test_filler_fails)
{
    struct echo_peer peer = {0};
    struct gets g = {.n = 20000, .fail_at = 9000};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_int_eq(stream(&peer, 0, &g, 0, &s, &e), -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    ck_assert_str_eq(e.msg, "filler gave up at 9000");
    ck_assert_uint_le(s.n, 9000);
    ck_assert_uint_eq(s.bad, 0);
}
END_TEST

START_TEST(test_filler_adds_nothing)
{
    struct echo_peer peer = {0};
    struct gets g = {.n = 10, .add_nothing = 1};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_int_eq(stream(&peer, 3, &g, 0, &s, &e), -1);
    ck_assert_int_eq(e.code, ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "added nothing"));
}
END_TEST

START_TEST(test_max_bytes_over_the_stream)
{
    /* 20,000 replies of about 10 bytes: past 64 KiB only in a late window. */
    struct echo_peer peer = {0};
    struct gets g = {.n = 20000};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_int_eq(stream(&peer, 0, &g, 65536, &s, &e), -1);
    ck_assert_int_eq(e.code, ERR_LIMIT);
    ck_assert_uint_gt(g.calls, 2);
    ck_assert_uint_lt(s.n, 20000);
}
END_TEST

START_TEST(test_stale_connection_resent)
{
    struct echo_peer peer = {.close_after = 1};
    struct gets g = {.n = 20000};
    struct seen s = {0};
    struct err e = {0};
    ck_assert_msg(stream(&peer, 0, &g, 0, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(peer.connections, 2);
    ck_assert_uint_eq(s.n, 20000); /* every reply once, none twice */
    ck_assert_uint_eq(s.bad, 0);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_windows_in_order, 0},        {test_commands_added_before, 0},
        {test_nothing_to_stream, 0},       {test_filler_fails, 0},
        {test_filler_adds_nothing, 0},     {test_max_bytes_over_the_stream, 0},
        {test_stale_connection_resent, 0},
    };
    return check_run_tests("common_redis_stream", tests, CHECK_ROWS(tests), 0);
}
