/* check_sd.c: the /sd body (Prometheus http_sd: one target group per source, pointing
 * Prometheus at /probe?target=<source>) and the advertised address: the flag as given when it is
 * a reachable host:port, else the bound address with the host name for a wildcard. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sd.h"
#include "alloc.h"
#include "buf.h"
#include "support/check_run.h"

static const struct collector_kind redis_kind = {.name = "redis_stream"};
static const struct collector_kind pg_kind = {.name = "postgres"};

static void add(struct sources *s, const char *name, const struct collector_kind *k)
{
    struct collector *c = xcalloc(1, sizeof *c);
    c->name = xstrdup(name);
    c->kind = k;
    s->items = xrealloc(s->items, (s->n + 1) * sizeof *s->items);
    s->items[s->n++] = c;
}

static void free_sources(struct sources *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i]->name);
        free(s->items[i]);
    }
    free(s->items);
}

START_TEST(test_one_group_per_source)
{
    struct sources s = {0};
    add(&s, "orders", &redis_kind);
    add(&s, "billing:db", &pg_kind);
    struct buf b;
    buf_init(&b);
    sd_render(&b, &s, "qrel-1.example:19318");
    ck_assert_str_eq(b.data,
                     "[\n"
                     "{\"targets\":[\"qrel-1.example:19318\"],\"labels\":{\"__metrics_path__\":"
                     "\"/probe\",\"__param_target\":\"orders\",\"source\":\"orders\",\"kind\":"
                     "\"redis_stream\"}},\n"
                     "{\"targets\":[\"qrel-1.example:19318\"],\"labels\":{\"__metrics_path__\":"
                     "\"/probe\",\"__param_target\":\"billing:db\",\"source\":\"billing:db\","
                     "\"kind\":\"postgres\"}}\n"
                     "]\n");
    buf_free(&b);
    free_sources(&s);
}
END_TEST

START_TEST(test_no_sources_is_an_empty_list)
{
    struct sources s = {0};
    struct buf b;
    buf_init(&b);
    sd_render(&b, &s, "h:1");
    ck_assert_str_eq(b.data, "[]\n");
    buf_free(&b);
}
END_TEST

START_TEST(test_strings_are_escaped)
{
    struct sources s = {0};
    add(&s, "a\"b\\c\n", &redis_kind);
    struct buf b;
    buf_init(&b);
    sd_render(&b, &s, "h:1");
    ck_assert_ptr_nonnull(strstr(b.data, "\"source\":\"a\\\"b\\\\c\\n\""));
    buf_free(&b);
    free_sources(&s);
}
END_TEST

struct addr_case {
    const char *flag, *host;
    unsigned port;
    const char *want; /* NULL: an error */
};

static const struct addr_case addrs[] = {
    {NULL, "127.0.0.1", 19318, "127.0.0.1:19318"},
    {NULL, "", 19318, "box:19318"}, /* ":19318": all interfaces, so the host name */
    {NULL, "0.0.0.0", 9, "box:9"},
    {NULL, "::", 9, "box:9"},
    {NULL, "::1", 9, "[::1]:9"},
    {"qrel.internal:80", "", 19318, "qrel.internal:80"},
    {"[fd00::1]:19318", "", 1, "[fd00::1]:19318"},
    {"qrel.internal", "", 1, NULL},
    {":19318", "", 1, NULL},
    {"0.0.0.0:19318", "", 1, NULL},
    {"h:0", "", 1, NULL},
    {"h:65536", "", 1, NULL},
    {"h:12a", "", 1, NULL},
    /* The host is a DNS name, an IPv4 address or a bracketed IPv6 one: any other byte would
     * reach /sd's JSON (invalid UTF-8 made it invalid JSON) and Prometheus' target list. */
    {"qrel_1.example-a.com:80", "", 1, "qrel_1.example-a.com:80"},
    {"\xff\xfe:80", "", 1, NULL},
    {"caf\xc3\xa9.example:80", "", 1, NULL},
    {"a b:80", "", 1, NULL},
    {"a\"b:80", "", 1, NULL},
    {"h/x:80", "", 1, NULL},
    {"user@h:80", "", 1, NULL},
    {"::1:80", "", 1, NULL},
    {"[fd00::1:80", "", 1, NULL},
    {"[h]:80", "", 1, NULL},
    {"[]:80", "", 1, NULL},
};

START_TEST(test_advertise_address)
{
    const struct addr_case *c = &addrs[_i];
    char out[64];
    struct err e;
    err_clear(&e);
    int rc = sd_advertise_address(c->flag, c->host, c->port, "box", out, sizeof out, &e);
    if (c->want) {
        ck_assert_int_eq(rc, 0);
        ck_assert_str_eq(out, c->want);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(e.code, ERR_CONFIG);
        ck_assert_ptr_nonnull(strstr(e.msg, "--web.advertise-address"));
    }
}
END_TEST

START_TEST(test_advertise_error_message)
{
    char out[64];
    struct err e;
    ck_assert_int_eq(sd_advertise_address(":19318", "", 1, "box", out, sizeof out, &e), -1);
    ck_assert_str_eq(e.msg, "--web.advertise-address \":19318\": want host:port as Prometheus "
                            "reaches this exporter (a DNS name, IPv4 or [IPv6] host, not a "
                            "wildcard; port 1 to 65535)");
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_one_group_per_source, 0},    {test_no_sources_is_an_empty_list, 0},
        {test_strings_are_escaped, 0},     {test_advertise_address, CHECK_ROWS(addrs)},
        {test_advertise_error_message, 0},
    };
    return check_run_tests("sd", tests, CHECK_ROWS(tests), 0);
}
