/* check_expfmt.c: unit tests for the exposition writers and content negotiation.
 *
 * Outputs are compared whole, byte for byte: Prometheus' parsers reject a scrape over one bad
 * byte, so "contains the right lines" is not enough. HELP texts come from the catalogue so that
 * rewording one does not break the structure tests. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expfmt.h"
#include "metrics.h"
#include "buf.h"
#include "support/check_run.h"
#include "support/random_samples.h"

/* Appends "# HELP <name> <help of family>\n# TYPE <name> <type>\n" as the writer should. */
static void expect_header(struct buf *b, const char *family, const char *header_name,
                          const char *type)
{
    const struct metric_family *f = metric_catalog_find(family);
    ck_assert_ptr_nonnull(f);
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", header_name, f->help, header_name, type);
}

/* Two collector sets sharing families, plus the exporter's own set without base labels. */
static void make_sets(struct metric_set *sets[3])
{
    sets[0] = metric_set_new("a", "redis_stream");
    ck_assert_int_eq(metric_set_add(sets[0], "qrel_queue_messages", 3, "queue", "orders", "group",
                                    "mailer", "state", "ready", NULL),
                     0);
    ck_assert_int_eq(
        metric_set_add(sets[0], "qrel_collector_errors_total", 2, "reason", "timeout", NULL), 0);
    ck_assert_int_eq(metric_set_add(sets[0], "qrel_queue_messages", 1, "queue", "orders", "group",
                                    "mailer", "state", "in_flight", NULL),
                     0);
    ck_assert_int_eq(metric_set_add(sets[0], "qrel_collector_up", 1, NULL), 0);

    sets[1] = metric_set_new("b", "redis_stream");
    ck_assert_int_eq(metric_set_add(sets[1], "qrel_collector_up", 0, NULL), 0);
    ck_assert_int_eq(metric_set_add(sets[1], "qrel_queue_messages", 0.5, "queue", "jobs", "group",
                                    "w", "state", "ready", NULL),
                     0);
    ck_assert_int_eq(
        metric_set_add(sets[1], "qrel_collector_errors_total", 5, "reason", "connect", NULL), 0);

    sets[2] = metric_set_new(NULL, NULL);
    ck_assert_int_eq(
        metric_set_add(sets[2], "qrel_build_info", 1, "version", "0.1.0", "revision", "abc", NULL),
        0);
}

static void free_sets(struct metric_set *sets[], size_t n)
{
    for (size_t i = 0; i < n; i++)
        metric_set_free(sets[i]);
}

/* The exposition through the streaming writer, read max bytes at a time into a buffer of exactly
 * that size (so that valgrind and ASan see any write past it). Every read but the last non-empty
 * one must fill the buffer, and once exhausted the writer keeps returning 0. */
static void read_all(struct buf *out, struct metric_set *const *sets, size_t nsets,
                     enum expfmt_format f, size_t max)
{
    struct expfmt_writer *w = expfmt_writer_new(sets, nsets, f);
    char *chunk = malloc(max);
    ck_assert_ptr_nonnull(chunk);
    size_t got;
    int was_short = 0;
    while ((got = expfmt_writer_read(w, chunk, max)) > 0) {
        ck_assert_msg(!was_short, "a short read before the end (max %zu)", max);
        ck_assert_uint_le(got, max);
        was_short = got < max;
        buf_append(out, chunk, got);
    }
    ck_assert_uint_eq(expfmt_writer_read(w, chunk, max), 0);
    free(chunk);
    expfmt_writer_free(w);
}

static const size_t read_sizes[] = {1, 7, 64, 4093, 65536};

/* expfmt_write, and the writer read in pieces of each size, all produce exactly want. */
static void check_output(struct metric_set *const *sets, size_t nsets, enum expfmt_format f,
                         const char *want)
{
    struct buf out;
    buf_init(&out);
    expfmt_write(&out, sets, nsets, f);
    ck_assert_str_eq(out.data, want);
    ck_assert_uint_eq(out.len, strlen(want));
    for (size_t i = 0; i < sizeof read_sizes / sizeof read_sizes[0]; i++) {
        buf_reset(&out);
        read_all(&out, sets, nsets, f, read_sizes[i]);
        ck_assert_msg(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
                      "read %zu bytes at a time: got %zu bytes, want %zu", read_sizes[i], out.len,
                      strlen(want));
    }
    buf_free(&out);
}

static void expected_body(struct buf *b, const char *errors_header)
{
    expect_header(b, "qrel_build_info", "qrel_build_info", "gauge");
    buf_puts(b, "qrel_build_info{version=\"0.1.0\",revision=\"abc\"} 1\n");
    expect_header(b, "qrel_collector_errors_total", errors_header, "counter");
    buf_puts(b,
             "qrel_collector_errors_total{source=\"a\",kind=\"redis_stream\",reason=\"timeout\"} "
             "2\n"
             "qrel_collector_errors_total{source=\"b\",kind=\"redis_stream\",reason=\"connect\"} "
             "5\n");
    expect_header(b, "qrel_collector_up", "qrel_collector_up", "gauge");
    buf_puts(b, "qrel_collector_up{source=\"a\",kind=\"redis_stream\"} 1\n"
                "qrel_collector_up{source=\"b\",kind=\"redis_stream\"} 0\n");
    expect_header(b, "qrel_queue_messages", "qrel_queue_messages", "gauge");
    buf_puts(b, "qrel_queue_messages{source=\"a\",kind=\"redis_stream\",queue=\"orders\","
                "group=\"mailer\",state=\"ready\"} 3\n"
                "qrel_queue_messages{source=\"a\",kind=\"redis_stream\",queue=\"orders\","
                "group=\"mailer\",state=\"in_flight\"} 1\n"
                "qrel_queue_messages{source=\"b\",kind=\"redis_stream\",queue=\"jobs\","
                "group=\"w\",state=\"ready\"} 0.5\n");
}

/* The two formats of the same sets: the errors family's header name and what ends the body. */
static const struct {
    enum expfmt_format format;
    const char *errors_family; /* OpenMetrics' counter header drops _total; its samples keep it */
    const char *end;
} written[] = {
    {EXPFMT_TEXT, "qrel_collector_errors_total", ""},
    {EXPFMT_OPENMETRICS, "qrel_collector_errors", "# EOF\n"},
};

START_TEST(test_write_formats)
{
    struct metric_set *sets[3];
    make_sets(sets);
    struct buf want;
    buf_init(&want);
    expected_body(&want, written[_i].errors_family);
    buf_puts(&want, written[_i].end);
    check_output(sets, 3, written[_i].format, want.data);
    buf_free(&want);
    free_sets(sets, 3);
}
END_TEST

START_TEST(test_write_literal)
{
    /* One comparison with nothing computed, to pin the header layout itself. */
    struct metric_set *s = metric_set_new("x", "redis_stream");
    ck_assert_int_eq(metric_set_add(s, "qrel_sample_age_seconds", 2.25, NULL), 0);
    check_output(&s, 1, EXPFMT_OPENMETRICS,
                 "# HELP qrel_sample_age_seconds Age in seconds of the data behind "
                 "this source's values (cache age, cloud metric delay).\n"
                 "# TYPE qrel_sample_age_seconds gauge\n"
                 "qrel_sample_age_seconds{source=\"x\",kind=\"redis_stream\"} 2.25\n"
                 "# EOF\n");
    metric_set_free(s);
}
END_TEST

/* Handler-time quantiles are a summary without _sum/_count: promtool and OpenMetrics parsers
 * accept a quantile label only on a summary family. */
START_TEST(test_write_summary)
{
    struct metric_set *s = metric_set_new("db", "claim_table");
    metric_set_add(s, "qrel_handler_duration_seconds", 0.25, "queue", "claims", "quantile", "0.5",
                   NULL);
    metric_set_add(s, "qrel_handler_duration_seconds", 34, "queue", "claims", "quantile", "1",
                   NULL);
    const char *help = metric_catalog_find("qrel_handler_duration_seconds")->help;
    char want[1024];
    snprintf(want, sizeof want,
             "# HELP qrel_handler_duration_seconds %s\n"
             "# TYPE qrel_handler_duration_seconds summary\n"
             "qrel_handler_duration_seconds{source=\"db\",kind=\"claim_table\",queue=\"claims\","
             "quantile=\"0.5\"} 0.25\n"
             "qrel_handler_duration_seconds{source=\"db\",kind=\"claim_table\",queue=\"claims\","
             "quantile=\"1\"} 34\n",
             help);
    check_output(&s, 1, EXPFMT_TEXT, want);
    metric_set_free(s);
}
END_TEST

START_TEST(test_write_empty)
{
    struct metric_set *sets[2] = {metric_set_new("a", "redis_stream"), NULL};
    check_output(sets, 2, EXPFMT_TEXT, "");
    check_output(NULL, 0, EXPFMT_TEXT, "");
    check_output(sets, 2, EXPFMT_OPENMETRICS, "# EOF\n");
    check_output(NULL, 0, EXPFMT_OPENMETRICS, "# EOF\n");
    metric_set_free(sets[0]);

    /* NULL writers are harmless. */
    char c;
    ck_assert_uint_eq(expfmt_writer_read(NULL, &c, 1), 0);
    expfmt_writer_free(NULL);
}
END_TEST

START_TEST(test_write_appends)
{
    struct metric_set *s = metric_set_new(NULL, NULL);
    ck_assert_int_eq(metric_set_add(s, "qrel_config_last_reload_successful", 1, NULL), 0);
    struct buf out, want;
    buf_init(&out);
    buf_init(&want);
    buf_puts(&out, "keep\n");
    expfmt_write(&out, &s, 1, EXPFMT_TEXT);
    buf_puts(&want, "keep\n");
    expect_header(&want, "qrel_config_last_reload_successful", "qrel_config_last_reload_successful",
                  "gauge");
    buf_puts(&want, "qrel_config_last_reload_successful 1\n");
    ck_assert_str_eq(out.data, want.data);
    buf_free(&out);
    buf_free(&want);
    metric_set_free(s);
}
END_TEST

START_TEST(test_write_escapes_labels)
{
    struct metric_set *s = metric_set_new("s\"1", "redis_stream");
    ck_assert_int_eq(
        metric_set_add(s, "qrel_queue_oldest_message_age_seconds", 7, "queue", "a\"b\\c\nd", NULL),
        0);
    for (int f = EXPFMT_TEXT; f <= EXPFMT_OPENMETRICS; f++) {
        struct buf want;
        buf_init(&want);
        expect_header(&want, "qrel_queue_oldest_message_age_seconds",
                      "qrel_queue_oldest_message_age_seconds", "gauge");
        buf_puts(&want, "qrel_queue_oldest_message_age_seconds{source=\"s\\\"1\","
                        "kind=\"redis_stream\",queue=\"a\\\"b\\\\c\\nd\"} 7\n");
        if (f == EXPFMT_OPENMETRICS)
            buf_puts(&want, "# EOF\n");
        check_output(&s, 1, (enum expfmt_format)f, want.data);
        buf_free(&want);
    }
    metric_set_free(s);
}
END_TEST

START_TEST(test_write_long_lines)
{
    /* Lines longer than any read buffer and than the set's 64 KiB storage chunks, plain and with
     * escapes, between short ones: they go out through the writer's carry buffer. */
    static const size_t sizes[] = {100000, 5, 70000, 65536};
    struct metric_set *s = metric_set_new("src", "redis_stream");
    struct buf want;
    buf_init(&want);
    expect_header(&want, "qrel_queue_messages", "qrel_queue_messages", "gauge");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *v = malloc(sizes[i] + 1);
        ck_assert_ptr_nonnull(v);
        for (size_t k = 0; k < sizes[i]; k++)
            v[k] = (char)('a' + k % 26);
        if (i % 2 == 0)
            v[sizes[i] / 3] = '\n';
        v[sizes[i]] = '\0';
        ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", (double)i, "queue", v, NULL), 0);
        buf_puts(&want, "qrel_queue_messages{source=\"src\",kind=\"redis_stream\",queue=\"");
        expfmt_escape_label_value(&want, v);
        buf_printf(&want, "\"} %zu\n", i);
        free(v);
    }
    check_output(&s, 1, EXPFMT_TEXT, want.data);
    buf_free(&want);
    metric_set_free(s);
}
END_TEST

START_TEST(test_writers_independent)
{
    /* Two writers over the same sets (overlapping scrapes) read in turns: each gets it all. */
    struct metric_set *sets[3];
    make_sets(sets);
    struct buf want, want_om, a, b;
    buf_init(&want);
    buf_init(&want_om);
    buf_init(&a);
    buf_init(&b);
    expfmt_write(&want, sets, 3, EXPFMT_TEXT);
    expfmt_write(&want_om, sets, 3, EXPFMT_OPENMETRICS);
    struct expfmt_writer *wa = expfmt_writer_new(sets, 3, EXPFMT_TEXT);
    struct expfmt_writer *wb = expfmt_writer_new(sets, 3, EXPFMT_OPENMETRICS);
    char chunk[13];
    size_t ga, gb;
    do {
        ga = expfmt_writer_read(wa, chunk, sizeof chunk);
        buf_append(&a, chunk, ga);
        gb = expfmt_writer_read(wb, chunk, 5);
        buf_append(&b, chunk, gb);
    } while (ga || gb);
    ck_assert_str_eq(a.data, want.data);
    ck_assert_str_eq(b.data, want_om.data);
    expfmt_writer_free(wa);
    expfmt_writer_free(wb);
    buf_free(&want);
    buf_free(&want_om);
    buf_free(&a);
    buf_free(&b);
    free_sets(sets, 3);
}
END_TEST

static const struct check_case label_escapes[] = {
    {"", ""},
    {"plain", "plain"},
    {"a\"b\\c\n", "a\\\"b\\\\c\\n"},
    {"\\\\", "\\\\\\\\"},
    {"\n\n", "\\n\\n"},
    {"tab\there\r", "tab\there\r"}, /* only \\, \" and \n are escaped */
    {"caf\xc3\xa9", "caf\xc3\xa9"},
};

START_TEST(test_escape_label_value)
{
    struct buf out;
    buf_init(&out);
    expfmt_escape_label_value(&out, label_escapes[_i].in);
    ck_assert_str_eq(out.data ? out.data : "", label_escapes[_i].want);
    buf_free(&out);
}
END_TEST

START_TEST(test_escape_help)
{
    struct buf out;
    buf_init(&out);
    expfmt_escape_help(&out, "a\\b\nc \"d\"", EXPFMT_TEXT);
    ck_assert_str_eq(out.data, "a\\\\b\\nc \"d\"");
    buf_reset(&out);
    expfmt_escape_help(&out, "a\\b\nc \"d\"", EXPFMT_OPENMETRICS);
    ck_assert_str_eq(out.data, "a\\\\b\\nc \\\"d\\\"");
    buf_reset(&out);
    expfmt_escape_help(&out, "plain text.", EXPFMT_OPENMETRICS);
    ck_assert_str_eq(out.data, "plain text.");
    buf_free(&out);
}
END_TEST

static const struct {
    double v;
    const char *text;
} values[] = {
    {0, "0"},
    {-0.0, "0"},
    {1, "1"},
    {-1, "-1"},
    {0.1, "0.1"},
    {1e-9, "1e-09"},
    {123456789, "123456789"},
    {1.5e300, "1.5e+300"},
    {0.5, "0.5"},
    {-2.25, "-2.25"},
    {1e15, "1000000000000000"},
    {-1e15, "-1000000000000000"},
    {1e16, "1e+16"},
    {1234567.5, "1234567.5"},
    {1764422481.123, "1764422481.123"},
    {0.1 + 0.2, "0.30000000000000004"},
    {1.0 / 3.0, "0.3333333333333333"},
    {9007199254740993.0, "9007199254740992"}, /* 2^53 + 1 is not a double: 2^53 */
    {123.456, "123.456"},
    {0.0001, "0.0001"},
    {0.000099999999999999991, "9.999999999999999e-05"}, /* the double below 1e-4 */
    {999999999999999.875, "999999999999999.9"},
    {148740915202746.125, "148740915202746.12"}, /* an exact tie rounds to even, like printf */
    {-18260190091498.0625, "-18260190091498.062"},
    {0.125, "0.125"},
    {1764422481.123456 - 1764422400.0, "81.12345600128174"},
    {5e-324, "4.94065645841247e-324"},
    {1.7976931348623157e308, "1.7976931348623157e+308"},
    {INFINITY, "+Inf"},
    {-INFINITY, "-Inf"},
    {NAN, "NaN"},
    {-NAN, "NaN"},
};

START_TEST(test_format_value)
{
    struct buf out;
    buf_init(&out);
    expfmt_format_value(&out, values[_i].v);
    ck_assert_str_eq(out.data, values[_i].text);
    buf_free(&out);
}
END_TEST

/* What expfmt_format_value promises, written the slow and obvious way: integers up to 1e15
 * plainly, otherwise the first of %.15g, %.16g, %.17g that reads back. The writer takes faster
 * routes; they must print exactly this. */
static void reference_format(char *out, size_t n, double v)
{
    if (fabs(v) <= 1e15 && v == floor(v)) {
        snprintf(out, n, "%.0f", v == 0 ? 0.0 : v);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static unsigned long long xorshift(unsigned long long *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

START_TEST(test_format_value_matches_reference)
{
    /* Deterministic spreads over the kinds of values collectors produce: arbitrary mantissas at
     * every magnitude, short decimals, noisy "now - timestamp" ages, powers of two and their
     * neighbours (where the rounding interval is lopsided). Every one must also read back. */
    unsigned long long x = 88172645463325252ULL;
    struct buf out;
    buf_init(&out);
    char want[64];
    const int n = random_samples(200000);
    for (int i = 0; i < n; i++) {
        unsigned long long r = xorshift(&x);
        double v;
        switch (i % 4) {
        case 0:
            v = ldexp((double)(r >> 11) / 9007199254740992.0 + 0.5, (int)(xorshift(&x) % 120) - 60);
            break;
        case 1:
            v = (double)(r % 100000000000ULL) / pow(10, (double)(xorshift(&x) % 12));
            break;
        case 2:
            v = 1764422481.123456 - (1764422481.0 - (double)(r % 1000000) * 0.001);
            break;
        default:
            v = ldexp(1.0, (int)(r % 80) - 30);
            for (int d = (int)(xorshift(&x) % 5) - 2; d != 0; d += d > 0 ? -1 : 1)
                v = nextafter(v, d > 0 ? INFINITY : 0);
            break;
        }
        if (xorshift(&x) & 1)
            v = -v;
        buf_reset(&out);
        expfmt_format_value(&out, v);
        reference_format(want, sizeof want, v);
        ck_assert_msg(strcmp(out.data, want) == 0, "%.17g: got %s, want %s", v, out.data, want);
        ck_assert_msg(strtod(out.data, NULL) == v, "%s does not read back", out.data);
    }
    buf_free(&out);
}
END_TEST

#define PROMETHEUS_2_42_ACCEPT                                                                     \
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"       \
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
#define PROMETHEUS_3_ACCEPT                                                                        \
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"                       \
    "application/openmetrics-text;version=0.0.1;q=0.5,"                                            \
    "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

static const struct {
    const char *accept;
    enum expfmt_format want;
} accepts[] = {
    {NULL, EXPFMT_TEXT},
    {"", EXPFMT_TEXT},
    {"   ", EXPFMT_TEXT},
    {PROMETHEUS_2_42_ACCEPT, EXPFMT_OPENMETRICS},
    {PROMETHEUS_3_ACCEPT, EXPFMT_OPENMETRICS},
    {"text/plain", EXPFMT_TEXT},
    {"text/plain;version=0.0.4", EXPFMT_TEXT},
    {"text/plain;version=0.0.4;q=1,*/*;q=0.1", EXPFMT_TEXT},
    {"*/*", EXPFMT_TEXT},
    {"text/*", EXPFMT_TEXT},
    {"application/json", EXPFMT_TEXT},
    {"application/openmetrics-text", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;version=1.0.0", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;version=0.0.1", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;version=2.0.0", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.000", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.001", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;q=0, text/plain;q=0", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.5,text/plain;q=0.6", EXPFMT_TEXT},
    {"text/plain;q=0.6,application/openmetrics-text;q=0.5", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.6,text/plain;q=0.5", EXPFMT_OPENMETRICS},
    {"text/plain;q=0.5,application/openmetrics-text;q=0.5", EXPFMT_OPENMETRICS}, /* tie */
    {"text/plain, application/openmetrics-text;q=0.9", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.9, */*", EXPFMT_TEXT},
    {"application/openmetrics-text;q=0.9, text/*", EXPFMT_TEXT},
    {"application/openmetrics-text, */*", EXPFMT_OPENMETRICS},
    /* RFC 9110: the most specific range gives text/plain its q, whatever the wildcard says. */
    {"application/openmetrics-text;q=0.5, text/plain;q=0.1, */*;q=0.9", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;q=0.5, text/*;q=0.1, */*;q=0.9", EXPFMT_OPENMETRICS},
    {"APPLICATION/OpenMetrics-Text; Version=1.0.0; Q=0.8, Text/Plain; q=0.2", EXPFMT_OPENMETRICS},
    {" application/openmetrics-text ; q=1 ", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text; version=\"1.0.0\"; q=0.8, text/plain;q=0.2",
     EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;foo=\"a,b\";q=0.3, text/plain;q=0.2", EXPFMT_OPENMETRICS},
    {"application/openmetrics-text;q=2", EXPFMT_OPENMETRICS}, /* clamped to 1 */
    {"application/openmetrics-text;q=abc", EXPFMT_TEXT},      /* malformed: ignored */
    {"application/openmetrics-text;q=", EXPFMT_TEXT},
    {"application/openmetrics-text;q", EXPFMT_TEXT},
    {"application/openmetrics-text;version=\"1.0.0", EXPFMT_TEXT},
    {"application/openmetrics-textx", EXPFMT_TEXT},
    {"application/openmetrics", EXPFMT_TEXT},
    {"application/*", EXPFMT_TEXT},
    {",,application/openmetrics-text;;,", EXPFMT_OPENMETRICS},
};

START_TEST(test_negotiate)
{
    ck_assert_msg(expfmt_negotiate(accepts[_i].accept) == accepts[_i].want, "Accept: %s",
                  accepts[_i].accept ? accepts[_i].accept : "(null)");
}
END_TEST

START_TEST(test_content_type)
{
    ck_assert_str_eq(expfmt_content_type(EXPFMT_TEXT), "text/plain; version=0.0.4; charset=utf-8");
    ck_assert_str_eq(expfmt_content_type(EXPFMT_OPENMETRICS),
                     "application/openmetrics-text; version=1.0.0; charset=utf-8");
}
END_TEST

/* ---- families outside the catalogue ---- */

static const struct metric_family app_pending = {"app_orders_pending", METRIC_GAUGE,
                                                 "Orders not \"shipped\" yet\nby region."};
static const struct metric_family app_refunds = {"app_refunds_total", METRIC_COUNTER,
                                                 "Refunds made."};
/* the same name defined again elsewhere: the first set's HELP and TYPE win */
static const struct metric_family app_pending_again = {"app_orders_pending", METRIC_GAUGE,
                                                       "Another help."};
static const struct metric_family zz_last = {"zz_last", METRIC_GAUGE, "Sorted after app_."};

/* Dynamic families in three sets, interleaved with catalogue ones; "app_" sorts before "qrel_"
 * but is written after every catalogue family. */
static void make_dynamic_sets(struct metric_set *sets[3])
{
    sets[0] = metric_set_new("db1", "sql");
    ck_assert_int_eq(metric_set_add_family(sets[0], &zz_last, 7, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(sets[0], &app_pending, 3, "region", "eu", NULL), 0);
    metric_set_set_kind(sets[0], "outbox");
    ck_assert_int_eq(
        metric_set_add(sets[0], "qrel_outbox_pending_messages", 2, "queue", "outbox", NULL), 0);
    metric_set_set_kind(sets[0], "sql");
    ck_assert_int_eq(metric_set_add_family(sets[0], &app_refunds, 10, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(sets[0], &app_pending, 4, "region", "us", NULL), 0);

    sets[1] = NULL; /* skipped */

    sets[2] = metric_set_new("db2", "sql");
    ck_assert_int_eq(metric_set_add_family(sets[2], &app_pending_again, 1, "region", "a\"b", NULL),
                     0);
    ck_assert_int_eq(metric_set_add(sets[2], "qrel_collector_up", 1, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(sets[2], &app_refunds, 0.5, NULL), 0);
}

static const char dynamic_body[] =
    "# HELP qrel_collector_up %s\n"
    "# TYPE qrel_collector_up gauge\n"
    "qrel_collector_up{source=\"db2\",kind=\"sql\"} 1\n"
    "# HELP qrel_outbox_pending_messages %s\n"
    "# TYPE qrel_outbox_pending_messages gauge\n"
    "qrel_outbox_pending_messages{source=\"db1\",kind=\"outbox\",queue=\"outbox\"} 2\n"
    "# HELP app_orders_pending Orders not %s yet\\nby region.\n"
    "# TYPE app_orders_pending gauge\n"
    "app_orders_pending{source=\"db1\",kind=\"sql\",region=\"eu\"} 3\n"
    "app_orders_pending{source=\"db1\",kind=\"sql\",region=\"us\"} 4\n"
    "app_orders_pending{source=\"db2\",kind=\"sql\",region=\"a\\\"b\"} 1\n"
    "# HELP %s Refunds made.\n"
    "# TYPE %s counter\n"
    "app_refunds_total{source=\"db1\",kind=\"sql\"} 10\n"
    "app_refunds_total{source=\"db2\",kind=\"sql\"} 0.5\n"
    "# HELP zz_last Sorted after app_.\n"
    "# TYPE zz_last gauge\n"
    "zz_last{source=\"db1\",kind=\"sql\"} 7\n"
    "%s";

static void expected_dynamic(struct buf *b, enum expfmt_format f)
{
    int om = f == EXPFMT_OPENMETRICS;
    struct buf up, outbox;
    buf_init(&up);
    buf_init(&outbox);
    expfmt_escape_help(&up, metric_catalog_find("qrel_collector_up")->help, f);
    expfmt_escape_help(&outbox, metric_catalog_find("qrel_outbox_pending_messages")->help, f);
    buf_printf(b, dynamic_body, up.data, outbox.data, om ? "\\\"shipped\\\"" : "\"shipped\"",
               om ? "app_refunds" : "app_refunds_total", om ? "app_refunds" : "app_refunds_total",
               om ? "# EOF\n" : "");
    buf_free(&up);
    buf_free(&outbox);
}

START_TEST(test_write_dynamic)
{
    enum expfmt_format f = _i ? EXPFMT_OPENMETRICS : EXPFMT_TEXT;
    struct metric_set *sets[3];
    make_dynamic_sets(sets);
    struct buf want;
    buf_init(&want);
    expected_dynamic(&want, f);
    check_output(sets, 3, f, want.data); /* also read 1, 7, 64, ... bytes at a time */
    buf_free(&want);
    free_sets(sets, 3);
}
END_TEST

START_TEST(test_write_dynamic_literal)
{
    /* Nothing computed: one dynamic family alone, in OpenMetrics. */
    struct metric_set *s = metric_set_new("db", "sql");
    ck_assert_int_eq(metric_set_add_family(s, &app_refunds, 3, "table", "refunds", NULL), 0);
    check_output(&s, 1, EXPFMT_OPENMETRICS,
                 "# HELP app_refunds Refunds made.\n"
                 "# TYPE app_refunds counter\n"
                 "app_refunds_total{source=\"db\",kind=\"sql\",table=\"refunds\"} 3\n"
                 "# EOF\n");
    check_output(&s, 1, EXPFMT_TEXT,
                 "# HELP app_refunds_total Refunds made.\n"
                 "# TYPE app_refunds_total counter\n"
                 "app_refunds_total{source=\"db\",kind=\"sql\",table=\"refunds\"} 3\n");
    metric_set_free(s);
}
END_TEST

START_TEST(test_write_dynamic_same_pointer_many_sets)
{
    /* Many sets sharing one family pointer, each with a family of its own too. */
    enum { NS = 40 };
    static struct metric_family own[NS];
    static char names[NS][16];
    struct metric_set *sets[NS];
    for (int k = 0; k < NS; k++) {
        char src[16];
        snprintf(src, sizeof src, "s%02d", k);
        snprintf(names[k], sizeof names[k], "own_%02d", NS - 1 - k);
        own[k] = (struct metric_family){names[k], METRIC_GAUGE, "h"};
        sets[k] = metric_set_new(src, "sql");
        ck_assert_int_eq(metric_set_add_family(sets[k], &own[k], k, NULL), 0);
        ck_assert_int_eq(metric_set_add_family(sets[k], &app_pending, k, NULL), 0);
    }
    struct buf want;
    buf_init(&want);
    buf_puts(&want, "# HELP app_orders_pending Orders not \"shipped\" yet\\nby region.\n"
                    "# TYPE app_orders_pending gauge\n");
    for (int k = 0; k < NS; k++)
        buf_printf(&want, "app_orders_pending{source=\"s%02d\",kind=\"sql\"} %d\n", k, k);
    for (int k = NS - 1; k >= 0; k--)
        buf_printf(&want,
                   "# HELP own_%02d h\n# TYPE own_%02d gauge\nown_%02d{source=\"s%02d\","
                   "kind=\"sql\"} %d\n",
                   NS - 1 - k, NS - 1 - k, NS - 1 - k, k, k);
    check_output(sets, NS, EXPFMT_TEXT, want.data);
    buf_free(&want);
    free_sets(sets, NS);
}
END_TEST

START_TEST(test_write_large)
{
    /* 200k samples over two sets and interleaved families: linear grouping, exact line count. */
    const int N = large_count(100000);
    struct metric_set *sets[2] = {metric_set_new("a", "redis_stream"),
                                  metric_set_new("b", "redis_stream")};
    char queue[32];
    for (int si = 0; si < 2; si++) {
        for (int i = 0; i < N; i++) {
            snprintf(queue, sizeof queue, "stream:%d", i);
            const char *fam = i % 2 ? "qrel_queue_messages" : "qrel_consumer_lag_seconds";
            ck_assert_int_eq(
                metric_set_add(sets[si], fam, i * 0.5, "queue", queue, "group", "g", NULL), 0);
        }
    }
    struct buf out, streamed;
    buf_init(&out);
    buf_init(&streamed);
    expfmt_write(&out, sets, 2, EXPFMT_OPENMETRICS);
    /* Streamed the way the HTTP server does, and with an odd buffer size: the same bytes. */
    read_all(&streamed, sets, 2, EXPFMT_OPENMETRICS, 65536);
    ck_assert_uint_eq(streamed.len, out.len);
    ck_assert(memcmp(streamed.data, out.data, out.len) == 0);
    buf_reset(&streamed);
    read_all(&streamed, sets, 2, EXPFMT_OPENMETRICS, 1021);
    ck_assert_uint_eq(streamed.len, out.len);
    ck_assert(memcmp(streamed.data, out.data, out.len) == 0);
    buf_free(&streamed);
    size_t lines = 0;
    for (size_t i = 0; i < out.len; i++)
        lines += out.data[i] == '\n';
    ck_assert_uint_eq(lines, 2 * N + 2 * 2 + 1);
    /* The consumer_lag family comes first and holds set a's samples before set b's. */
    const char *first = strstr(out.data, "qrel_consumer_lag_seconds{");
    const char *b_lag = strstr(out.data, "qrel_consumer_lag_seconds{source=\"b\"");
    const char *queue_msgs = strstr(out.data, "# HELP qrel_queue_messages");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(b_lag);
    ck_assert_ptr_nonnull(queue_msgs);
    ck_assert(first < b_lag && b_lag < queue_msgs);
    const char *want_first = "qrel_consumer_lag_seconds{source=\"a\",kind=\"redis_stream\","
                             "queue=\"stream:0\",group=\"g\"} 0\n";
    ck_assert(strncmp(first, want_first, strlen(want_first)) == 0);
    buf_free(&out);
    free_sets(sets, 2);
}
END_TEST

static Suite *expfmt_suite(void)
{
    Suite *s = suite_create("expfmt");
    TCase *tc = tcase_create("write");
    tcase_add_loop_test(tc, test_write_formats, 0, sizeof written / sizeof written[0]);
    tcase_add_test(tc, test_write_literal);
    tcase_add_test(tc, test_write_empty);
    tcase_add_test(tc, test_write_summary);
    tcase_add_test(tc, test_write_appends);
    tcase_add_test(tc, test_write_escapes_labels);
    tcase_add_test(tc, test_write_long_lines);
    tcase_add_test(tc, test_writers_independent);
    tcase_add_test(tc, test_write_large);
    tcase_add_loop_test(tc, test_write_dynamic, 0, 2);
    tcase_add_test(tc, test_write_dynamic_literal);
    tcase_add_test(tc, test_write_dynamic_same_pointer_many_sets);
    tcase_set_timeout(tc, 60); /* the large write under valgrind */
    suite_add_tcase(s, tc);

    tc = tcase_create("pieces");
    tcase_add_loop_test(tc, test_escape_label_value, 0,
                        sizeof label_escapes / sizeof label_escapes[0]);
    tcase_add_test(tc, test_escape_help);
    tcase_add_loop_test(tc, test_format_value, 0, sizeof values / sizeof values[0]);
    tcase_add_test(tc, test_format_value_matches_reference);
    suite_add_tcase(s, tc);

    tc = tcase_create("negotiate");
    tcase_add_loop_test(tc, test_negotiate, 0, sizeof accepts / sizeof accepts[0]);
    tcase_add_test(tc, test_content_type);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(expfmt_suite(), CK_NORMAL);
}
