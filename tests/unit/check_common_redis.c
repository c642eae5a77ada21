/* check_common_redis.c: the reply reading of collectors/common/redis.c (its own socket I/O and
 * deadline, hiredis's parser, the arena of redis_arena.c) fed by a loopback peer
 * (support/split_peer.h) with replies recorded from Redis 7.0 (tests/fixtures/redis/): a pipeline
 * of eight replies (nested arrays, a bulk string holding a CRLF, nil, an error, integers) one byte
 * at a time, 7 at a time, and cut in two at every point. Each way must hand the callback the
 * replies it gets when they arrive whole. Issue 29: every reader survives any split of any reply.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redis.h"
#include "buf.h"
#include "support/check_run.h"
#include "support/fixture.h"
#include "support/split_check.h"
#include "support/split_peer.h"

/* The recorded replies, in the order of the commands that asked for them. */
static const char *const fixtures[] = {
    "redis/xinfo-groups-7.0.resp", "redis/xpending-7.0.resp", "redis/xrange-7.0.resp",
    "redis/get-crlf-7.0.resp",     "redis/get-nil-7.0.resp",  "redis/wrongtype-7.0.resp",
    "redis/time-7.0.resp",         "redis/scan-7.0.resp",
};

static char *pipeline_replies(size_t *len)
{
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < CHECK_ROWS(fixtures); i++) {
        size_t n;
        char *text = fixture_text(fixtures[i], &n);
        buf_append(&b, text, n);
        free(text);
    }
    *len = b.len;
    return buf_steal(&b);
}

/* A reply tree as text: type, value, and the elements in brackets. */
static void dump(struct buf *b, const redisReply *r)
{
    buf_printf(b, "%s", redis_reply_type_name(r));
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        buf_printf(b, " %lld", r->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        buf_printf(b, " %zu:", r->len);
        buf_append(b, r->str, r->len);
        break;
    case REDIS_REPLY_ARRAY:
        buf_puts(b, " [");
        for (size_t i = 0; i < r->elements; i++) {
            buf_puts(b, i ? ", " : "");
            dump(b, r->element[i]);
        }
        buf_puts(b, "]");
        break;
    default:
        break;
    }
}

static int dump_reply(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    (void)e;
    struct buf *b = ctx;
    buf_printf(b, "#%zu ", index);
    dump(b, r);
    buf_putc(b, '\n');
    return 0;
}

/* Sends the eight commands those replies answer to a split_peer that answers as step/cut say;
 * returns what the callback saw, or NULL with e set when the pipeline failed. */
static char *exec_split(const char *reply, size_t len, size_t step, size_t cut, struct err *e,
                        size_t *pieces)
{
    struct split_peer p = {reply, len, "COUNT\r\n$3\r\n100\r\n", step, cut, 0, 0, -1, 0};
    split_peer_start(&p);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", p.port);
    struct deadline dl = deadline_in(30);
    struct buf seen;
    buf_init(&seen);
    struct redis_pipe *pipe = redis_pipe_new();
    redis_pipe_addv(pipe, "XINFO", "GROUPS", "orders", NULL);
    redis_pipe_addv(pipe, "XPENDING", "orders", "workers", NULL);
    redis_pipe_addv(pipe, "XRANGE", "orders", "-", "+", NULL);
    redis_pipe_addv(pipe, "GET", "odd", NULL);
    redis_pipe_addv(pipe, "GET", "nothere", NULL);
    redis_pipe_addv(pipe, "LLEN", "orders", NULL);
    redis_pipe_addv(pipe, "TIME", NULL);
    redis_pipe_addv(pipe, "SCAN", "0", "COUNT", "100", NULL);
    struct redis_conn *c = redis_conn_open("split", addr, NULL, NULL, 0, &dl, e);
    int rc = c ? redis_pipe_exec_each(c, pipe, &dl, 0, dump_reply, &seen, e) : -1;
    redis_conn_close(c);
    redis_pipe_free(pipe);
    split_peer_join(&p);
    *pieces = p.pieces;
    if (rc) {
        buf_free(&seen);
        return NULL;
    }
    return buf_steal(&seen);
}

START_TEST(test_one_byte_at_a_time)
{
    size_t len;
    char *reply = pipeline_replies(&len);
    char *whole = split_check_pieces(exec_split, reply, len);
    /* What the recorded replies hold, to know the comparisons compare something. */
    ck_assert_ptr_nonnull(strstr(whole, "#3 string 4:a\r\nb\n"));
    ck_assert_ptr_nonnull(strstr(whole, "#4 nil\n"));
    ck_assert_ptr_nonnull(strstr(whole, "#5 error 65:WRONGTYPE"));
    ck_assert_ptr_nonnull(strstr(whole, "#1 array [integer 1, string 15:1700000000000-0"));
    free(whole);
    free(reply);
}
END_TEST

START_TEST(test_every_cut)
{
    size_t len;
    char *reply = pipeline_replies(&len);
    split_check_every_cut(exec_split, reply, len);
    free(reply);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_one_byte_at_a_time, 0},
        {test_every_cut, 0},
    };
    return check_run_tests("common_redis", tests, CHECK_ROWS(tests), 0);
}
