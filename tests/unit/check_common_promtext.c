/* check_common_promtext.c: unit tests for collectors/common/promtext.c, the strict reader of the
 * Prometheus text format, on text recorded from rabbitmq_prometheus 3.10.8
 * (/metrics/detailed?family=queue_coarse_metrics) and hand-made variants: escapes, NaN and
 * infinities, comments, timestamps, a missing final newline, and what must be refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/promtext.h"
#include "buf.h"
#include "support/check_run.h"

/* Recorded, with a queue name holding a quote, a backslash and a newline added by hand. */
static const char recorded[] =
    "# TYPE rabbitmq_detailed_queue_messages_ready gauge\n"
    "# HELP rabbitmq_detailed_queue_messages_ready Messages ready to be delivered to consumers\n"
    "rabbitmq_detailed_queue_messages_ready{vhost=\"/\",queue=\"orders\"} 0\n"
    "rabbitmq_detailed_queue_messages_ready{vhost=\"/\",queue=\"orders.dlq\"} 2\n"
    "rabbitmq_detailed_queue_messages_ready{vhost=\"/\",queue=\"odd\\\"na\\\\me\\nx\"} 7\n"
    "# TYPE rabbitmq_detailed_queue_messages_unacked gauge\n"
    "rabbitmq_detailed_queue_messages_unacked{vhost=\"/\",queue=\"orders\"} 2\n"
    "\n"
    "rabbitmq_queue_head_message_timestamp{vhost=\"/\",queue=\"orders\"} NaN\n"
    "rabbitmq_build_info{rabbitmq_version=\"3.10.8\",erlang_version=\"25.2.3\"} 1\n"
    "some_total 1.5e3 1700000000000\n"
    "inf_gauge{a=\"x\",} +Inf\n"
    "neg -Inf";

struct seen {
    struct buf text; /* one line per sample: name|label=value|...|value */
    int n;
};

static int collect_sample(void *ctx, const struct promtext_sample *s, struct err *e)
{
    struct seen *sn = ctx;
    buf_append(&sn->text, s->name, s->name_len);
    for (size_t i = 0; i < s->nlabels; i++) {
        buf_putc(&sn->text, '|');
        buf_append(&sn->text, s->labels[i].name, s->labels[i].name_len);
        buf_putc(&sn->text, '=');
        buf_puts(&sn->text, s->labels[i].value);
    }
    if (isnan(s->value))
        buf_puts(&sn->text, "|NaN\n");
    else
        buf_printf(&sn->text, "|%g\n", s->value);
    sn->n++;
    return 0;
}

START_TEST(test_recorded)
{
    struct seen sn = {{0}, 0};
    struct err e;
    buf_init(&sn.text);
    ck_assert_int_eq(promtext_parse(recorded, strlen(recorded), "GET /m", collect_sample, &sn, &e),
                     0);
    ck_assert_int_eq(sn.n, 9);
    ck_assert_str_eq(sn.text.data,
                     "rabbitmq_detailed_queue_messages_ready|vhost=/|queue=orders|0\n"
                     "rabbitmq_detailed_queue_messages_ready|vhost=/|queue=orders.dlq|2\n"
                     "rabbitmq_detailed_queue_messages_ready|vhost=/|queue=odd\"na\\me\nx|7\n"
                     "rabbitmq_detailed_queue_messages_unacked|vhost=/|queue=orders|2\n"
                     "rabbitmq_queue_head_message_timestamp|vhost=/|queue=orders|NaN\n"
                     "rabbitmq_build_info|rabbitmq_version=3.10.8|erlang_version=25.2.3|1\n"
                     "some_total|1500\n"
                     "inf_gauge|a=x|inf\n"
                     "neg|-inf\n");
    buf_free(&sn.text);
}
END_TEST

static int find_label(void *ctx, const struct promtext_sample *s, struct err *e)
{
    int *hits = ctx;
    const struct promtext_label *q = promtext_label(s, "queue");
    if (promtext_name_is(s, "rabbitmq_detailed_queue_messages_unacked") && q &&
        strcmp(q->value, "orders") == 0 && s->value == 2)
        (*hits)++;
    ck_assert_ptr_null(promtext_label(s, "nope"));
    return 0;
}

START_TEST(test_helpers)
{
    int hits = 0;
    struct err e;
    ck_assert_int_eq(promtext_parse(recorded, strlen(recorded), "GET /m", find_label, &hits, &e),
                     0);
    ck_assert_int_eq(hits, 1);
}
END_TEST

static int stop_at_second(void *ctx, const struct promtext_sample *s, struct err *e)
{
    int *n = ctx;
    if (++*n == 2)
        return err_set(e, ERR_LIMIT, "enough");
    return 0;
}

START_TEST(test_callback_stops)
{
    int n = 0;
    struct err e;
    ck_assert_int_eq(promtext_parse(recorded, strlen(recorded), "GET /m", stop_at_second, &n, &e),
                     -1);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(e.code, ERR_LIMIT);
    ck_assert_str_eq(e.msg, "enough");
}
END_TEST

static const struct check_case bad[] = {
    {"<html>oops</html>\n", "GET /m: line 1: want a metric name, a comment or an empty line"},
    {"a 1\nb{x=\"1\" 2\n", "GET /m: line 2: want ',' or '}' after a label value"},
    {"a{x=1} 2\n", "GET /m: line 1: want '\"' to open a label value"},
    {"a{x=\"1} 2\n", "GET /m: line 1: label value not closed by '\"'"},
    {"a{x\"1\"} 2\n", "GET /m: line 1: want '=' after a label name"},
    {"a{x=\"\\t\"} 2\n", "GET /m: line 1: unknown escape in a label value"},
    {"a{1=\"x\"} 2\n", "GET /m: line 1: want a label name or '}'"},
    {"a 0x10\n", "GET /m: line 1: want a sample value (a number, NaN, +Inf or -Inf)"},
    {"a\n", "GET /m: line 1: want a sample value (a number, NaN, +Inf or -Inf)"},
    {"a 1 x\n", "GET /m: line 1: want a timestamp or the end of the line after the value"},
    {"a 1 12 13\n", "GET /m: line 1: want the end of the line after the timestamp"},
    {"a 1e999\n", "GET /m: line 1: want a sample value (a number, NaN, +Inf or -Inf)"},
    {"a{vhost=\"/\",queue=\"trunc", "GET /m: line 1: label value not closed by '\"'"},
};

static int ignore(void *ctx, const struct promtext_sample *s, struct err *e)
{
    return 0;
}

START_TEST(test_bad)
{
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(promtext_parse(bad[_i].in, strlen(bad[_i].in), "GET /m", ignore, NULL, &e),
                     -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_str_eq(e.msg, bad[_i].want);
}
END_TEST

START_TEST(test_nul_and_empty)
{
    struct err e;
    static const char nul[] = "a 1\nb\0 2\n";
    ck_assert_int_eq(promtext_parse(nul, sizeof nul - 1, "GET /m", ignore, NULL, &e), -1);
    ck_assert_str_eq(e.msg, "GET /m: line 2: a NUL byte");
    ck_assert_int_eq(promtext_parse("", 0, "GET /m", ignore, NULL, &e), 0);
    ck_assert_int_eq(promtext_parse("# only\n\n", 8, "GET /m", ignore, NULL, &e), 0);
}
END_TEST

/* The reader of a few families: the others are passed over unparsed, even when malformed. */
static int want_ready(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    return len == 5 && memcmp(name, "ready", 5) == 0;
}

START_TEST(test_some)
{
    static const char page[] = "# TYPE ready gauge\n"
                               "ready{queue=\"a\"} 1\n"
                               "total{queue=\"a\",oops 2\n"
                               "ready_not{queue=\"a\"} x\n"
                               "ready{queue=\"b\"} 3\n";
    struct seen sn = {{0}, 0};
    struct err e;
    err_clear(&e);
    buf_init(&sn.text);
    ck_assert_int_eq(
        promtext_parse_some(page, sizeof page - 1, "GET /m", want_ready, collect_sample, &sn, &e),
        0);
    ck_assert_int_eq(sn.n, 2);
    ck_assert_str_eq(sn.text.data, "ready|queue=a|1\nready|queue=b|3\n");
    /* a wanted sample is as strict as ever; a line that starts with no name still fails */
    static const char wanted_bad[] = "ready{queue=\"a\"} x\n";
    ck_assert_int_eq(promtext_parse_some(wanted_bad, sizeof wanted_bad - 1, "GET /m", want_ready,
                                         collect_sample, &sn, &e),
                     -1);
    ck_assert_str_eq(e.msg, "GET /m: line 1: want a sample value (a number, NaN, +Inf or -Inf)");
    static const char noname[] = "{queue=\"a\"} 1\n";
    ck_assert_int_eq(promtext_parse_some(noname, sizeof noname - 1, "GET /m", want_ready,
                                         collect_sample, &sn, &e),
                     -1);
    /* without want, every sample is read: the malformed one fails */
    ck_assert_int_eq(
        promtext_parse_some(page, sizeof page - 1, "GET /m", NULL, collect_sample, &sn, &e), -1);
    buf_free(&sn.text);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded, 0},          {test_helpers, 0},       {test_callback_stops, 0},
        {test_bad, CHECK_ROWS(bad)}, {test_nul_and_empty, 0}, {test_some, 0},
    };
    return check_run_tests("promtext", tests, CHECK_ROWS(tests), 0);
}
