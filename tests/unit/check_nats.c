/* check_nats.c: unit tests for collectors/nats/nats.c.
 *
 * The parser is fed a /jsz?streams=true&consumers=true&config=true document recorded from
 * nats-server 2.9.10 (tests/fixtures/nats/jsz-2.9.10.json; only store_dir was replaced, it named
 * a temporary folder) after the workload of tests/integration/nats.sh: a work-queue stream whose
 * consumer gave up two messages, their advisories in a dead-letter stream, a limits stream with
 * a backoff consumer, an ack-none consumer and an ephemeral one. Its "now" is fixed, so ages are
 * exact. Variants of the document made with jansson cover what a server should never send:
 * the message must name the JSON path. configure() is tested with exact messages. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "metrics.h"
#include "nats/nats.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/sample.h"
#include "support/json_doc.h"

extern const struct collector_kind nats_kind;

/* nats-server 2.9.10's GET /jsz. The document holds reserved_memory 18446744073709551615, beyond
 * jansson's integers, which json_parse_body reads as the kinds do. */
static json_t *fixture(void)
{
    return json_doc_fixture("nats/jsz-2.9.10.json");
}

#define W "queue", "ORDERS", "group", "worker"
#define B "queue", "EVENTS", "group", "backoff"
#define F "queue", "EVENTS", "group", "fire"

START_TEST(test_recorded_document)
{
    json_t *doc = fixture();
    struct metric_set *s = metric_set_new("ev", "nats");
    struct nats_filter f = {0};
    struct nats_page pg;
    struct err e;
    err_clear(&e);
    ck_assert_msg(nats_jsz_collect(doc, &f, 0, s, &pg, &e) == 0, "%s", e.msg);
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_double_eq(pg.accounts_total, 1);
    ck_assert_uint_eq(pg.accounts_in_page, 1);
    ck_assert_uint_eq(pg.naccounts, 1);
    ck_assert_str_eq(pg.accounts[0], "$G");
    ck_assert_uint_eq(pg.streams, 3);
    ck_assert_uint_eq(pg.consumers, 3); /* the ephemeral consumer is left out */
    nats_page_free(&pg);

    ck_assert_double_eq(sample_value(s, "qrel_queue_messages", W, "state", "ready", NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_queue_messages", W, "state", "in_flight", NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_messages_redelivered", W, NULL), 2);
    ck_assert_double_eq(sample_value(s, "qrel_lease_timeout_seconds", W, NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_max_deliveries", W, NULL), 3);
    ck_assert_double_eq(sample_value(s, "qrel_retry_horizon_seconds", W, NULL), 3);
    ck_assert_double_eq(sample_value(s, "qrel_dedup_window_seconds", "queue", "ORDERS", NULL), 90);
    ck_assert_double_eq(sample_value(s, "qrel_dedup_window_seconds", "queue", "EVENTS", NULL), 120);
    ck_assert_double_eq(sample_value(s, "qrel_dedup_window_seconds", "queue", "ORDERS_DLQ", NULL),
                        120);
    /* now 15:36:25.534282113, first_ts 15:36:17.592491986 (work queue) */
    ck_assert_double_eq_tol(
        sample_value(s, "qrel_queue_oldest_message_age_seconds", "queue", "ORDERS", NULL),
        7.941790127, 1e-5);
    ck_assert_uint_eq(sample_count(s, "qrel_queue_oldest_message_age_seconds"),
                      1); /* limits streams */

    ck_assert_double_eq(sample_value(s, "qrel_queue_messages", B, "state", "ready", NULL), 2);
    ck_assert_double_eq(sample_value(s, "qrel_lease_timeout_seconds", B, NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_max_deliveries", B, NULL), 5);
    ck_assert_double_eq(sample_value(s, "qrel_retry_horizon_seconds", B, NULL), 18);
    ck_assert_double_eq(sample_value(s, "qrel_queue_messages", F, "state", "ready", NULL), 2);
    ck_assert(isnan(sample_value(s, "qrel_lease_timeout_seconds", F, NULL)));
    ck_assert(isnan(sample_value(s, "qrel_max_deliveries", F, NULL)));
    ck_assert_uint_eq(sample_count(s, "qrel_messages_redelivered"), 3);
    /* worker (pull) delivered 0.1 s before the document's now; backoff and fire never did */
    ck_assert_double_eq(sample_value(s, "qrel_queue_consumers", W, NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_queue_consumers", B, NULL), 0);
    ck_assert_double_eq(sample_value(s, "qrel_queue_consumers", F, NULL), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_dead_letter_messages"), 0); /* none configured */
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

START_TEST(test_filter_and_dead_letters)
{
    json_t *doc = fixture();
    char *fire[] = {"fire", NULL};
    struct nats_stream_spec specs[] = {
        {.name = "ORDERS", .dead_letter_stream = "ORDERS_DLQ"},
        {.name = "EVENTS", .consumers = fire, .nconsumers = 1},
        {.name = "MISSING"},
    };
    struct nats_filter f = {.specs = specs, .nspecs = 3};
    struct metric_set *s = metric_set_new("ev", "nats");
    struct nats_page pg;
    struct err e;
    err_clear(&e);
    ck_assert_msg(nats_jsz_collect(doc, &f, 0, s, &pg, &e) == 0, "%s", e.msg);
    nats_page_free(&pg);
    ck_assert_ptr_null(metric_set_error(s));
    const char *dl[] = {"queue", "ORDERS", "dead_letter_queue", "ORDERS_DLQ"};
    ck_assert_double_eq(
        sample_value(s, "qrel_dead_letter_messages", dl[0], dl[1], dl[2], dl[3], NULL), 2);
    /* now 15:36:25.534282113, the first advisory 15:36:25.427476232 */
    ck_assert_double_eq_tol(
        sample_value(s, "qrel_dead_letter_oldest_age_seconds", dl[0], dl[1], dl[2], dl[3], NULL),
        0.106805881, 1e-5);
    ck_assert_uint_eq(sample_count(s, "qrel_messages_redelivered"), 2); /* worker and fire */
    ck_assert(isnan(sample_value(s, "qrel_queue_messages", B, "state", "ready", NULL)));
    ck_assert(isnan(sample_value(s, "qrel_dedup_window_seconds", "queue", "ORDERS_DLQ", NULL)));
    metric_set_free(s);

    /* Another account's streams are labelled ACCOUNT/STREAM; only_account skips the others. */
    json_t *acc = json_array_get(json_object_get(doc, "account_details"), 0);
    json_object_set_new(acc, "name", json_string("SHOP"));
    struct nats_filter all = {0};
    s = metric_set_new("ev", "nats");
    ck_assert_msg(nats_jsz_collect(doc, &all, 0, s, &pg, &e) == 0, "%s", e.msg);
    nats_page_free(&pg);
    ck_assert_double_eq(sample_value(s, "qrel_dedup_window_seconds", "queue", "SHOP/ORDERS", NULL),
                        90);
    metric_set_free(s);
    struct nats_filter other = {.only_account = "B"};
    s = metric_set_new("ev", "nats");
    ck_assert_msg(nats_jsz_collect(doc, &other, 0, s, &pg, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(pg.accounts_in_page, 1);
    ck_assert_uint_eq(pg.naccounts, 0);
    ck_assert_uint_eq(metric_set_len(s), 0);
    nats_page_free(&pg);
    metric_set_free(s);
    const char *done[] = {"SHOP"};
    struct nats_filter skip = {.skip_accounts = done, .nskip = 1};
    s = metric_set_new("ev", "nats");
    ck_assert_msg(nats_jsz_collect(doc, &skip, 0, s, &pg, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(metric_set_len(s), 0);
    nats_page_free(&pg);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* A variant of the recorded document: the value at a path (keys, or #N for list items) is
 * replaced by replacement (NULL: removed). */
static const struct {
    const char *path[8];
    const char *replacement; /* JSON text, or NULL to remove */
    enum err_code code;
    const char *msg;
} bad_docs[] = {
    {{"account_details", "#0", "stream_detail", "#1", "consumer_detail", "#0", "num_pending"},
     "\"3\"",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].consumer_detail[0].num_pending: want a number, got a "
     "string"},
    {{"account_details", "#0", "stream_detail", "#1", "consumer_detail", "#0", "num_ack_pending"},
     NULL,
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].consumer_detail[0].num_ack_pending: missing"},
    {{"account_details", "#0", "stream_detail", "#1", "consumer_detail", "#0", "config"},
     NULL,
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].consumer_detail[0].config: missing"},
    {{"account_details", "#0", "stream_detail", "#2", "consumer_detail", "#0", "config", "backoff"},
     "[1000000000, -1]",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[2].consumer_detail[0].config.backoff[1]: want a "
     "duration in nanoseconds above 0, got a number"},
    {{"account_details", "#0", "stream_detail", "#1", "config", "duplicate_window"},
     "\"2m\"",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].config.duplicate_window: want a number, got a "
     "string"},
    {{"account_details", "#0", "stream_detail", "#1", "state", "first_ts"},
     "\"yesterday\"",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].state.first_ts: want an RFC 3339 time, got "
     "\"yesterday\""},
    {{"account_details", "#0", "stream_detail", "#0", "state"},
     "[]",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[0].state: want an object, got a list"},
    {{"account_details", "#0", "stream_detail", "#1"},
     "7",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1]: want an object, got a number"},
    {{"account_details", "#0", "name"}, NULL, ERR_PROTOCOL, "$.account_details[0].name: missing"},
    {{"account_details"}, "{}", ERR_PROTOCOL, "$.account_details: want a list, got an object"},
    {{"now"}, "\"soon\"", ERR_PROTOCOL, "$.now: want an RFC 3339 time, got \"soon\""},
    {{"account_details", "#0", "stream_detail", "#1", "consumer_detail", "#0", "delivered",
      "last_active"},
     "\"soon\"",
     ERR_PROTOCOL,
     "$.account_details[0].stream_detail[1].consumer_detail[0].delivered.last_active: want an "
     "RFC 3339 time, got \"soon\""},
    {{"disabled"}, "true", ERR_QUERY, "JetStream is disabled on this server (start it with -js)"},
};

START_TEST(test_bad_documents)
{
    json_t *doc = fixture();
    json_t *parent = doc;
    const char *const *p = bad_docs[_i].path;
    size_t depth = 0;
    while (depth < 8 && p[depth])
        depth++;
    for (size_t k = 0; k + 1 < depth; k++)
        parent = p[k][0] == '#' ? json_array_get(parent, strtoul(p[k] + 1, NULL, 10))
                                : json_object_get(parent, p[k]);
    ck_assert_msg(parent != NULL, "case %d: path not in the fixture", _i);
    const char *last = p[depth - 1];
    if (bad_docs[_i].replacement) {
        json_error_t je;
        json_t *v = json_loads(bad_docs[_i].replacement, JSON_DECODE_ANY, &je);
        ck_assert_ptr_nonnull(v);
        if (last[0] == '#')
            json_array_set_new(parent, strtoul(last + 1, NULL, 10), v);
        else
            json_object_set_new(parent, last, v);
    } else {
        json_object_del(parent, last);
    }
    struct metric_set *s = metric_set_new("ev", "nats");
    struct nats_filter f = {0};
    struct nats_page pg;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(nats_jsz_collect(doc, &f, 0, s, &pg, &e), -1);
    ck_assert_int_eq(e.code, bad_docs[_i].code);
    ck_assert_str_eq(e.msg, bad_docs[_i].msg);
    nats_page_free(&pg);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* A consumer's clients: push by push_bound, pull by num_waiting, else by a delivery within the
 * window (both ends: 300 s is in, 300.5 s is out). */
START_TEST(test_consumer_clients)
{
    static const struct {
        const char *cons, *cfg;
        double want;
    } rows[] = {
        {"{\"push_bound\":true,\"num_waiting\":0}", "{\"deliver_subject\":\"d.x\"}", 1},
        {"{\"num_waiting\":0}", "{\"deliver_subject\":\"d.x\"}", 0},
        {"{\"push_bound\":false}", "{\"deliver_subject\":\"d.x\"}", 0},
        {"{\"num_waiting\":3}", "{}", 3},
        {"{\"num_waiting\":0,\"delivered\":{\"last_active\":\"2026-11-29T15:31:25Z\"}}", "{}", 1},
        {"{\"num_waiting\":0,\"delivered\":{\"last_active\":\"2026-11-29T15:31:24.5Z\"}}", "{}", 0},
        {"{\"num_waiting\":0,\"delivered\":{\"consumer_seq\":0}}", "{}", 0},
    };
    double now;
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:36:25Z", &now), 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_error_t je;
        json_t *cons = json_loads(rows[i].cons, 0, &je), *cfg = json_loads(rows[i].cfg, 0, &je);
        double got = -1;
        struct err e;
        err_clear(&e);
        ck_assert_int_eq(nats_consumer_clients(cons, "$", cfg, "$.config", now, 300, &got, &e), 0);
        ck_assert_msg(got == rows[i].want, "row %zu: got %g, want %g", i, got, rows[i].want);
        json_decref(cons);
        json_decref(cfg);
    }
    json_error_t je;
    json_t *cons = json_loads("{\"push_bound\":\"yes\"}", 0, &je);
    json_t *cfg = json_loads("{\"deliver_subject\":\"d.x\"}", 0, &je);
    double got;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(nats_consumer_clients(cons, "$", cfg, "$.config", now, 300, &got, &e), -1);
    ck_assert_str_eq(e.msg, "$.push_bound: want a boolean, got a string");
    json_decref(cons);
    json_decref(cfg);
}
END_TEST

START_TEST(test_no_now_uses_local_time)
{
    json_t *doc = fixture();
    json_object_del(doc, "now");
    struct metric_set *s = metric_set_new("ev", "nats");
    struct nats_filter f = {0};
    struct nats_page pg;
    struct err e;
    double first_ts;
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:36:17.592491986Z", &first_ts), 0);
    ck_assert_msg(nats_jsz_collect(doc, &f, first_ts + 60, s, &pg, &e) == 0, "%s", e.msg);
    ck_assert_double_eq_tol(
        sample_value(s, "qrel_queue_oldest_message_age_seconds", "queue", "ORDERS", NULL), 60,
        1e-5);
    nats_page_free(&pg);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

START_TEST(test_retry_horizon)
{
    const double bo[] = {1, 2, 5};
    ck_assert_double_eq(nats_retry_horizon(30, 3, NULL, 0), 90);
    ck_assert_double_eq(nats_retry_horizon(1, 5, bo, 3), 18);
    ck_assert_double_eq(nats_retry_horizon(1, 2, bo, 3), 3);
    ck_assert_double_eq(nats_retry_horizon(30, -1, NULL, 0), -1);
}
END_TEST

static int configure_text(const char *text, struct err *e)
{
    return configure_kind_text(&nats_kind, text, e);
}

#define SRC "sources:\n  - name: ev\n    kind: nats\n"
#define KNOWN                                                                                      \
    "(known keys: account, consumer_active_window, exclude, exclude_consumers, kind, "             \
    "max_response_bytes, min_interval, name, nats_creds_file, nats_password_env, "                 \
    "nats_password_file, nats_token_env, nats_token_file, nats_url, nats_username, page_size, "    \
    "password_env, password_file, streams, timeout, tls_config, url, username)"

static const struct check_case bad_configs[] = {
    {SRC "    streams: [{name: A}]\n",
     "x.yml:2:5: url: want the monitoring URL, like http://127.0.0.1:8222"},
    {SRC "    ulr: http://h:8222\n", "x.yml:4:5: unknown key \"ulr\" in source \"ev\" " KNOWN},
    {SRC "    url: nats://h:4222\n", "x.yml:4:10: url: want an http:// or https:// URL"},
    {SRC "    url: http://u:p@h:8222\n",
     "x.yml:4:10: url: credentials do not belong in the URL; use username and password_file"},
    {SRC "    url: http://h:8222\n    page_size: 0\n",
     "x.yml:5:16: page_size: want an integer from 1 to 100000, got \"0\""},
    {SRC "    url: http://h:8222\n    username: qrel\n",
     "x.yml:5:15: username: want username and password_file (or password_env) together, for a "
     "proxy in front of the monitoring port"},
    {SRC "    url: http://h:8222\n    streams: []\n",
     "x.yml:5:14: streams: want at least one {name: ...} (leave streams out for every stream)"},
    {SRC "    url: http://h:8222\n    streams: [{consumers: [a]}]\n",
     "x.yml:5:15: streams: want a name in each entry"},
    {SRC "    url: http://h:8222\n    streams: [{name: A}, {name: A}]\n",
     "x.yml:5:33: name: \"A\" is listed twice"},
    {SRC "    url: http://h:8222\n    streams: [{name: A, consumers: []}]\n",
     "x.yml:5:36: consumers: want at least one consumer name (leave consumers out for every "
     "durable consumer)"},
    {SRC "    url: http://h:8222\n    streams: [{name: A, dlq: B}]\n",
     "x.yml:5:25: unknown key \"dlq\" in stream \"A\" of source \"ev\" (known keys: consumers, "
     "dead_letter_stream, name)"},
};

START_TEST(test_config_bad)
{
    struct err e;
    check_refused(configure_text(bad_configs[_i].in, &e), &e, bad_configs[_i].want);
}
END_TEST

START_TEST(test_config_good)
{
    struct err e;
    const char *text = SRC "    url: https://nats.example:8222/\n    account: SHOP\n"
                           "    page_size: 10\n    max_response_bytes: 100000\n"
                           "    streams:\n      - name: ORDERS\n        consumers: [worker]\n"
                           "        dead_letter_stream: ORDERS_DLQ\n      - name: EVENTS\n";
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded_document, 0},
        {test_filter_and_dead_letters, 0},
        {test_bad_documents, CHECK_ROWS(bad_docs)},
        {test_consumer_clients, 0},
        {test_no_now_uses_local_time, 0},
        {test_retry_horizon, 0},
        {test_config_bad, CHECK_ROWS(bad_configs)},
        {test_config_good, 0},
    };
    return check_run_tests("nats", tests, CHECK_ROWS(tests), 0);
}
