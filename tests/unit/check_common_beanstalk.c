/* check_common_beanstalk.c: unit tests for the reply framing of collectors/common/beanstalk.c on
 * replies recorded from beanstalkd 1.12 (tests/fixtures/beanstalkd/) and hand-made variants:
 * replies split at every byte, pipelined replies back to back, and what is not beanstalkd; and
 * the whole reader (beanstalk_exec: socket, deadline, buffer) fed by a loopback peer one byte at a
 * time and cut in two at every point of a pipeline's replies (support/split_peer.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/beanstalk.h"
#include "alloc.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/fixture.h"
#include "support/split_check.h"
#include "support/split_peer.h"
#include "buf.h"

START_TEST(test_recorded_stats_tube)
{
    size_t len, used;
    char *text = fixture_text("beanstalkd/stats-tube-emails-1.12.txt", &len);
    struct beanstalk_reply r;
    struct err e;
    ck_assert_int_eq(beanstalk_frame(text, len, 1024, &used, &r, &e), 1);
    ck_assert_str_eq(r.status, "OK");
    ck_assert_uint_eq(used, len);
    ck_assert_uint_eq(r.body_len, strlen(r.body));
    ck_assert_ptr_nonnull(strstr(r.body, "current-jobs-buried: 1\n"));
    free(text);
}
END_TEST

START_TEST(test_every_split_needs_more)
{
    /* Any prefix of a reply is "need more", never an error or a short reply. */
    size_t len, used;
    char *text = fixture_text("beanstalkd/stats-1.12.txt", &len);
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = xstrndup(text, cut);
        struct beanstalk_reply r;
        struct err e;
        ck_assert_int_eq(beanstalk_frame(copy, cut, 1024, &used, &r, &e), 0);
        free(copy);
    }
    free(text);
}
END_TEST

/* The reader frames the same buffer again each time more bytes arrive: a prefix must leave the
 * bytes as they were, so that the whole reply parses once it is there (a 65,000-byte job at a
 * tube's head, a long list-tubes, or any network that splits a header from its body). Fed 1 and
 * 7 bytes at a time, as the fault proxy of issue 29 cuts them. */
static void feed_in_pieces(const char *text, size_t len, size_t step)
{
    char *data = xmalloc(len + 1);
    memcpy(data, text, len + 1);
    struct beanstalk_reply r;
    struct err e;
    size_t used = 0, have = 0;
    int f = 0;
    while (f == 0) {
        ck_assert_uint_lt(have, len);
        have = have + step < len ? have + step : len;
        f = beanstalk_frame(data, have, 1024, &used, &r, &e);
        ck_assert_int_ne(f, -1);
    }
    ck_assert_uint_eq(have, len);
    ck_assert_uint_eq(used, len);
    char *fresh = xmalloc(len + 1);
    memcpy(fresh, text, len + 1);
    struct beanstalk_reply want;
    size_t want_used;
    ck_assert_int_eq(beanstalk_frame(fresh, len, 1024, &want_used, &want, &e), 1);
    ck_assert_str_eq(r.status, want.status);
    ck_assert_str_eq(r.line, want.line);
    ck_assert_uint_eq(r.body_len, want.body_len);
    ck_assert_int_eq(memcmp(r.body, want.body, want.body_len), 0);
    free(fresh);
    free(data);
}

START_TEST(test_split_reads_in_one_buffer)
{
    size_t len;
    char *text = fixture_text("beanstalkd/stats-1.12.txt", &len);
    feed_in_pieces(text, len, 1);
    feed_in_pieces(text, len, 7);
    free(text);
    /* A peeked job of 65,000 bytes, as `peek-ready` answers for a large body. */
    size_t body = 65000;
    char head[64];
    int hl = snprintf(head, sizeof head, "FOUND 42 %zu\r\n", body);
    size_t big_len = (size_t)hl + body + 2;
    char *big = xmalloc(big_len + 1);
    memcpy(big, head, (size_t)hl);
    memset(big + hl, 'x', body);
    memcpy(big + hl + body, "\r\n", 3);
    feed_in_pieces(big, big_len, 7);
    feed_in_pieces(big, big_len, 4096);
    free(big);
}
END_TEST

START_TEST(test_pipelined)
{
    char text[] = "USING emails\r\nFOUND 7 5\r\nhello\r\nNOT_FOUND\r\n";
    size_t len = strlen(text), off = 0, used;
    struct beanstalk_reply r;
    struct err e;
    ck_assert_int_eq(beanstalk_frame(text, len, 1024, &used, &r, &e), 1);
    ck_assert_str_eq(r.status, "USING");
    ck_assert_str_eq(r.line, "USING emails");
    ck_assert_ptr_null(r.body);
    off += used;
    ck_assert_int_eq(beanstalk_frame(text + off, len - off, 1024, &used, &r, &e), 1);
    ck_assert_str_eq(r.status, "FOUND");
    ck_assert_str_eq(r.body, "hello");
    ck_assert_str_eq(r.line, "FOUND 7 5");
    off += used;
    ck_assert_int_eq(beanstalk_frame(text + off, len - off, 1024, &used, &r, &e), 1);
    ck_assert_str_eq(r.status, "NOT_FOUND");
    ck_assert_uint_eq(off + used, len);
}
END_TEST

/* What a pipeline's callback saw, reply by reply, as text to compare. */
static int dump_reply(void *ctx, size_t index, const struct beanstalk_reply *r, struct err *e)
{
    (void)e;
    struct buf *b = ctx;
    buf_printf(b, "#%zu [%s] [%s] ", index, r->status, r->line);
    if (r->body) {
        buf_printf(b, "%zu:", r->body_len);
        buf_append(b, r->body, r->body_len);
    }
    buf_putc(b, '\n');
    return 0;
}

/* A pipeline a collector sends (use, stats-tube, peek-ready, list-tubes, stats, peek-buried) and
 * beanstalkd's replies to it, recorded ones where we have them. */
static const char *const pipeline_cmds[] = {
    "use emails", "stats-tube emails", "peek-ready", "list-tubes", "stats", "peek-buried"};

static char *pipeline_replies(size_t *len)
{
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "USING emails\r\n");
    const char *files[] = {"beanstalkd/stats-tube-emails-1.12.txt", NULL,
                           "beanstalkd/list-tubes-1.12.txt", "beanstalkd/stats-1.12.txt"};
    for (size_t i = 0; i < 4; i++) {
        if (!files[i]) {
            buf_puts(&b, "FOUND 7 5\r\nhe\r\no\r\n"); /* a body holding a CRLF */
            continue;
        }
        size_t n;
        char *text = fixture_text(files[i], &n);
        buf_append(&b, text, n);
        free(text);
    }
    buf_puts(&b, "NOT_FOUND\r\n");
    *len = b.len;
    return buf_steal(&b);
}

/* Runs the pipeline against a split_peer answering with reply cut as step/cut say; returns what
 * the callback saw, or NULL with e set when the pipeline failed. */
static char *exec_split(const char *reply, size_t len, size_t step, size_t cut, struct err *e,
                        size_t *pieces)
{
    struct split_peer p = {reply, len, "peek-buried\r\n", step, cut, 0, 0, -1, 0};
    split_peer_start(&p);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", p.port);
    struct deadline dl = deadline_in(30);
    struct buf seen;
    buf_init(&seen);
    struct beanstalk_conn *c = beanstalk_conn_open("split", addr, &dl, e);
    int rc = c ? beanstalk_exec(c, pipeline_cmds, CHECK_ROWS(pipeline_cmds), &dl, 0, dump_reply,
                                &seen, e)
               : -1;
    beanstalk_conn_close(c);
    split_peer_join(&p);
    *pieces = p.pieces;
    if (rc) {
        buf_free(&seen);
        return NULL;
    }
    return buf_steal(&seen);
}

START_TEST(test_exec_one_byte_at_a_time)
{
    size_t len;
    char *reply = pipeline_replies(&len);
    char *whole = split_check_pieces(exec_split, reply, len);
    ck_assert_ptr_nonnull(strstr(whole, "#2 [FOUND] [FOUND 7 5] 5:he\r\no\n"));
    free(whole);
    free(reply);
}
END_TEST

START_TEST(test_exec_every_cut)
{
    size_t len;
    char *reply = pipeline_replies(&len);
    split_check_every_cut(exec_split, reply, len);
    free(reply);
}
END_TEST

static const struct check_case bad[] = {
    {"\x00\xffHELLO\r\n", "a reply line with a NUL byte"},
    {"ok 5\r\n", "a reply that does not start with a status word"},
    {"OK\r\n", "OK without a body size"},
    {"OK -1\r\n", "OK without a body size"},
    {"FOUND 5\r\nhello\r\n", "FOUND without a job id"},
    {"OK 2\r\nabcd\r\n", "a body that does not end in CRLF after 2 bytes"},
    {"OK 2\nab\r\n", "a reply line that does not end in CRLF"},
    {"USING caf\xc3\xa9\r\n", "a reply line with a byte that is not printable ASCII"},
    {"A_VERY_LONG_STATUS_WORD_INDEED\r\n", "a reply that does not start with a status word"},
};

START_TEST(test_refused)
{
    /* The first case starts with a NUL byte: its length is given, not measured. */
    size_t len = _i == 0 ? 9 : strlen(bad[_i].in), used;
    char *copy = xmalloc(len + 1);
    memcpy(copy, bad[_i].in, len + 1);
    struct beanstalk_reply r;
    struct err e;
    check_failed(beanstalk_frame(copy, len, 1024, &used, &r, &e), &e, ERR_PROTOCOL, bad[_i].want);
    free(copy);
}
END_TEST

START_TEST(test_long_line)
{
    char line[100];
    memset(line, 'A', sizeof line);
    size_t used;
    struct beanstalk_reply r;
    struct err e;
    ck_assert_int_eq(beanstalk_frame(line, sizeof line, 32, &used, &r, &e), -1);
    ck_assert_str_eq(e.msg, "a reply line longer than 32 bytes");
    ck_assert_int_eq(beanstalk_frame(line, 20, 32, &used, &r, &e), 0);
}
END_TEST

START_TEST(test_address)
{
    char *host;
    int port;
    struct err e;
    ck_assert_int_eq(beanstalk_address_parse("127.0.0.1", &host, &port, &e), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(port, 11300);
    free(host);
    ck_assert_int_eq(beanstalk_address_parse("[::1]:4000", &host, &port, &e), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 4000);
    free(host);
    ck_assert_int_eq(beanstalk_address_parse(":11300", &host, &port, &e), -1);
    ck_assert_str_eq(e.msg, "want \"host:port\", got \":11300\"");
    ck_assert_int_eq(beanstalk_address_parse("::1", &host, &port, &e), -1);
    ck_assert_int_eq(beanstalk_address_parse("h:0", &host, &port, &e), -1);
    ck_assert_str_eq(e.msg, "want a port from 1 to 65535, got \"0\"");
    ck_assert_ptr_null(host);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded_stats_tube, 0},
        {test_every_split_needs_more, 0},
        {test_split_reads_in_one_buffer, 0},
        {test_pipelined, 0},
        {test_exec_one_byte_at_a_time, 0},
        {test_exec_every_cut, 0},
        {test_refused, CHECK_ROWS(bad)},
        {test_long_line, 0},
        {test_address, 0},
    };
    return check_run_tests("common_beanstalk", tests, CHECK_ROWS(tests), 0);
}
