/* check_activemq.c: unit tests for collectors/activemq (parse.c and configure()).
 *
 * The parser is fed bulk Jolokia replies recorded from ActiveMQ 5.17.2 with Jolokia 1.7.1
 * (tests/fixtures/activemq/, made by tests/peers/activemq/AmqPeer.java's workload): orders with
 * three messages held by a consumer and an abortSlowAckConsumerStrategy of 120 s, emails with
 * three ready, and ActiveMQ.DLQ holding two dead letters of orders and one of emails, each with
 * the client's dlqDeliveryFailureCause (maximumRedeliveries = 2). bulk_truncated.json is the same
 * browse cut at 2 by maxCollectionSize, bulk_no_broker.json the reply for a brokerName that does
 * not exist. Variants made with jansson cover the individual DLQ.{queue} policy and replies no
 * broker should send. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activemq/activemq.h"
#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "metrics.h"
#include "support/check_refused.h"
#include "support/fixture.h"
#include "support/check_run.h"
#include "support/json_doc.h"
#include "support/kind_config.h"
#include "support/sample.h"

extern const struct collector_kind activemq_kind;

/* 2026-12-06T01:28:08Z, the JMSTimestamp of every recorded dead letter, plus 10 s */
#define NOW (1796520488.0 + 10)

static int run(const json_t *doc, const char *dlq, struct metric_set *s,
               struct activemq_result *res, struct entry_skips *skips, struct err *e)
{
    struct activemq_filter f = {.broker_name = "localhost", .dead_letter_queue = dlq};
    err_clear(e);
    return activemq_bulk_collect(doc, &f, NOW, s, skips, res, e);
}

START_TEST(test_recorded_shared)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_uint_eq(res.queues, 2); /* ActiveMQ.DLQ is no work queue */
    ck_assert_uint_eq(res.dlq_size, 3);
    ck_assert_uint_eq(res.browsed, 3);
    ck_assert_uint_eq(res.unread, 0);
    ck_assert_uint_eq(skips.n, 0);
    ck_assert_double_eq(
        sample_value(s, "qrel_queue_messages", "queue", "orders", "state", "ready", NULL), 0);
    ck_assert_double_eq(
        sample_value(s, "qrel_queue_messages", "queue", "orders", "state", "in_flight", NULL), 3);
    ck_assert_double_eq(
        sample_value(s, "qrel_queue_messages", "queue", "emails", "state", "ready", NULL), 3);
    ck_assert(isnan(sample_value(s, "qrel_queue_messages", "queue", "ActiveMQ.DLQ", NULL)));
    /* ConsumerCount: the workload's consumer holding orders, none on emails */
    ck_assert_double_eq(sample_value(s, "qrel_queue_consumers", "queue", "orders", NULL), 1);
    ck_assert_double_eq(sample_value(s, "qrel_queue_consumers", "queue", "emails", NULL), 0);
    ck_assert(isnan(sample_value(s, "qrel_queue_consumers", "queue", "ActiveMQ.DLQ", NULL)));
    ck_assert_double_eq(sample_value(s, "qrel_lease_timeout_seconds", "queue", "orders", NULL),
                        120);
    ck_assert(isnan(sample_value(s, "qrel_lease_timeout_seconds", "queue", "emails", NULL)));
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "orders",
                                     "dead_letter_queue", "ActiveMQ.DLQ", NULL),
                        2);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "emails", NULL), 1);
    ck_assert_double_eq(
        sample_value(s, "qrel_dead_letter_oldest_age_seconds", "queue", "orders", NULL), 10);
    ck_assert_double_eq(
        sample_value(s, "qrel_dead_letter_newest_age_seconds", "queue", "emails", NULL), 10);
    ck_assert_double_eq(sample_value(s, "qrel_max_deliveries", "queue", "orders", NULL), 3);
    ck_assert_double_eq(sample_value(s, "qrel_max_deliveries", "queue", "emails", NULL), 3);
    ck_assert(isnan(sample_value(s, "qrel_dead_letter_messages", "queue", "", NULL)));
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* The browse cut at 2 of 3: the third dead letter is counted apart, under queue "". */
START_TEST(test_recorded_truncated)
{
    json_t *doc = json_doc_fixture("activemq/bulk_truncated.json");
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(res.browsed, 2);
    ck_assert_uint_eq(res.unread, 1);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "orders", NULL), 2);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "emails", NULL), 0);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "", NULL), 1);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

START_TEST(test_recorded_no_broker)
{
    json_t *doc = json_doc_fixture("activemq/bulk_no_broker.json");
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    check_failed(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e), &e, ERR_QUERY,
                 "no broker with brokerName \"localhost\" (set broker_name to the broker's "
                 "brokerName)");
    ck_assert_uint_eq(metric_set_len(s), 0);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* DLQ.{queue}: the recorded queues plus DLQ.orders holding 2, and no browse. */
START_TEST(test_individual)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    json_array_remove(doc, 3);
    json_t *queues = json_object_get(json_array_get(doc, 1), "value");
    json_object_set_new(queues, "x",
                        json_pack("{s:s, s:i, s:i, s:i, s:n}", "Name", "DLQ.orders", "QueueSize", 2,
                                  "InFlightCount", 0, "ConsumerCount", 0, "SlowConsumerStrategy"));
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "DLQ.{queue}", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(res.queues, 3); /* ActiveMQ.DLQ is a work queue under this policy */
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "orders",
                                     "dead_letter_queue", "DLQ.orders", NULL),
                        2);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "emails",
                                     "dead_letter_queue", "DLQ.emails", NULL),
                        0);
    ck_assert(isnan(sample_value(s, "qrel_queue_messages", "queue", "DLQ.orders", NULL)));
    ck_assert(isnan(sample_value(s, "qrel_max_deliveries", "queue", "orders", NULL)));
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* A dead letter without OriginalDestination and one with a bad time: skipped and counted. */
START_TEST(test_bad_dead_letters)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    json_t *msgs = json_object_get(json_array_get(doc, 3), "value");
    json_object_del(json_array_get(msgs, 0), "OriginalDestination");
    json_object_set_new(json_array_get(msgs, 1), "JMSTimestamp", json_string("yesterday"));
    json_array_append_new(msgs, json_string("not a message"));
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(entry_skips_count(&skips, "", ENTRY_MISSING_FIELD), 1);
    ck_assert_double_eq(entry_skips_count(&skips, "", ENTRY_BAD_VALUE), 1);
    ck_assert_double_eq(entry_skips_count(&skips, "orders", ENTRY_BAD_TIMESTAMP), 1);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "orders", NULL), 1);
    entry_skips_free(&skips);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* A dead-letter queue size no exact count can hold (a fuzzer's 3.1e62): held to 2^53, the rest
 * of it counted unread, rather than converted to size_t out of range. */
START_TEST(test_huge_dlq_size)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    json_t *queues = json_object_get(json_array_get(doc, 1), "value");
    const char *key;
    json_t *q, *dlq = NULL;
    json_object_foreach(queues, key, q)
    {
        if (strcmp(json_string_value(json_object_get(q, "Name")), "ActiveMQ.DLQ") == 0)
            dlq = q;
    }
    ck_assert_ptr_nonnull(dlq);
    json_object_set_new(dlq, "QueueSize", json_real(3.1e62));
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(res.dlq_size, 9007199254740992ULL);
    ck_assert_uint_eq(res.browsed, 3);
    ck_assert_uint_eq(res.unread, 9007199254740992ULL - 3);
    ck_assert_double_eq(sample_value(s, "qrel_dead_letter_messages", "queue", "", NULL),
                        9007199254740989.0);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

static const struct check_case bad_docs[] = {
    {"{}", "$: want a list, got an object"},
    {"[]", "$: want 1 replies, got 0"},
    {"[{\"status\":200,\"value\":\"5.17.2\"},{\"status\":500,\"error_type\":\"java.lang."
     "OutOfMemoryError\"}]",
     "read queues: Jolokia answered status 500 (java.lang.OutOfMemoryError)"},
    {"[{\"status\":200,\"value\":1},{\"status\":200,\"value\":{\"a\":{\"QueueSize\":1}}},{"
     "\"status\":404},"
     "{\"status\":404}]",
     "$[1].value[0].Name: missing"},
    {"[{\"status\":200,\"value\":1},{\"status\":200,\"value\":{\"a\":{\"Name\":\"q\","
     "\"QueueSize\":\"1\"}}},"
     "{\"status\":404},{\"status\":404}]",
     "$[1].value[0].QueueSize: want a number, got a string"},
    {"[{\"status\":200,\"value\":1},{\"status\":200,\"value\":{\"a\":{\"Name\":\"q\","
     "\"QueueSize\":1,\"InFlightCount\":0}}},{\"status\":404},{\"status\":404}]",
     "$[1].value[0].ConsumerCount: missing"},
    {"[{\"status\":200,\"value\":1},{\"status\":404},{\"status\":404},{\"status\":200,"
     "\"value\":{}}]",
     "$[3].value: want a list, got an object"},
    {"[{\"status\":200,\"value\":1},{\"status\":404},{\"status\":404}]",
     "$: want 4 replies, got 3"},
};

START_TEST(test_bad_documents)
{
    json_t *doc = json_doc(bad_docs[_i].in);
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_int_eq(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e), -1);
    ck_assert_str_eq(e.msg, bad_docs[_i].want);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* An empty broker: every MBean pattern 404s, which is no error. */
START_TEST(test_empty_broker)
{
    json_t *doc = json_doc("[{\"status\":200,\"value\":\"5.17.2\"},{\"status\":404},"
                           "{\"status\":404},{\"status\":404}]");
    struct metric_set *s = metric_set_new("amq", "activemq");
    struct activemq_result res;
    struct entry_skips skips = {0};
    struct err e;
    ck_assert_msg(run(doc, "ActiveMQ.DLQ", s, &res, &skips, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(res.queues, 0);
    ck_assert_uint_eq(metric_set_len(s), 0);
    metric_set_free(s);
    json_decref(doc);
}
END_TEST

/* The cause as the 5.17.2 client wrote it into the recorded dead letters, and variants. */
START_TEST(test_cause)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    const json_t *m = json_array_get(json_object_get(json_array_get(doc, 3), "value"), 0);
    const char *cause = json_string_value(
        json_object_get(json_object_get(m, "StringProperties"), "dlqDeliveryFailureCause"));
    ck_assert_ptr_nonnull(cause);
    double v = 0;
    ck_assert_int_eq(activemq_cause_max_deliveries(cause, &v), 1);
    ck_assert_double_eq(v, 3);
    json_decref(doc);
    const char *pre = "java.lang.Throwable: Delivery[7] exceeds redelivery policy "
                      "limit:RedeliveryPolicy {destination = null, maximumRedeliveries = ";
    char text[300];
    snprintf(text, sizeof text, "%s6, initialRedeliveryDelay = 0}", pre);
    ck_assert_int_eq(activemq_cause_max_deliveries(text, &v), 1);
    ck_assert_double_eq(v, 7);
    snprintf(text, sizeof text, "%s-1, x = 0}", pre);
    ck_assert_int_eq(activemq_cause_max_deliveries(text, &v), 0);
    snprintf(text, sizeof text, "%s99999999999999999999}", pre);
    ck_assert_int_eq(activemq_cause_max_deliveries(text, &v), 0);
    snprintf(text, sizeof text, "%s", pre);
    ck_assert_int_eq(activemq_cause_max_deliveries(text, &v), 0);
    ck_assert_int_eq(activemq_cause_max_deliveries("java.lang.Throwable: Message expired", &v), 0);
    ck_assert_int_eq(activemq_cause_max_deliveries(NULL, &v), 0);
}
END_TEST

START_TEST(test_naming)
{
    ck_assert(activemq_is_dlq("ActiveMQ.DLQ", "ActiveMQ.DLQ"));
    ck_assert(!activemq_is_dlq("ActiveMQ.DLQ", "orders"));
    ck_assert(activemq_is_dlq("DLQ.{queue}", "DLQ.orders"));
    ck_assert(!activemq_is_dlq("DLQ.{queue}", "DLQ."));
    ck_assert(!activemq_is_dlq("DLQ.{queue}", "orders"));
    ck_assert(activemq_is_dlq("{queue}.dead", "orders.dead"));
    ck_assert(!activemq_is_dlq("{queue}.dead", ".dead"));
    char *n = activemq_dlq_name("DLQ.{queue}", "orders");
    ck_assert_str_eq(n, "DLQ.orders");
    free(n);
    n = activemq_dlq_name("ActiveMQ.DLQ", "orders");
    ck_assert_str_eq(n, "ActiveMQ.DLQ");
    free(n);
}
END_TEST

static int configure_text(const char *text, struct err *e)
{
    return configure_kind_text(&activemq_kind, text, e);
}

#define SRC "sources:\n  - name: amq\n    kind: activemq\n"
#define URL "    jolokia_url: http://127.0.0.1:8161/api/jolokia\n"
#define KNOWN                                                                                      \
    "(known keys: broker_name, dead_letter_browse_limit, dead_letter_queue, exclude, "             \
    "jolokia_url, kind, max_response_bytes, min_interval, name, password_env, password_file, "     \
    "queues, timeout, tls_config, username)"

static const struct check_case bad_configs[] = {
    {SRC "    queues: [a]\n",
     "x.yml:2:5: jolokia_url: want the Jolokia endpoint, like http://127.0.0.1:8161/api/jolokia"},
    {SRC URL "    url: x\n", "x.yml:5:5: unknown key \"url\" in source \"amq\" " KNOWN},
    {SRC URL "    username: admin\n",
     "x.yml:5:15: username: want username and password_file (or password_env) together"},
    {SRC URL "    broker_name: \"a,b\"\n",
     "x.yml:5:18: broker_name: want a brokerName without , = : \" * ? or \\"},
    {SRC URL "    dead_letter_queue: \"{queue}.{queue}\"\n",
     "x.yml:5:24: dead_letter_queue: want one queue name (ActiveMQ.DLQ, the shared one) or a "
     "pattern with {queue} once (DLQ.{queue}, individual)"},
    {SRC URL "    queues: []\n",
     "x.yml:5:13: queues: want at least one glob (leave queues out for every queue)"},
    {SRC URL "    queues: [\"^a.*\"]\n",
     "x.yml:5:14: queues: want a glob (* ? [...]), not a regular expression"},
    {SRC URL "    dead_letter_browse_limit: 0\n",
     "x.yml:5:31: dead_letter_browse_limit: want an integer from 1 to 100000, got \"0\""},
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
    const char *text =
        SRC URL "    broker_name: amq1\n    queues: [\"orders*\", emails]\n"
                "    exclude: [orders.test]\n    dead_letter_queue: \"DLQ.{queue}\"\n"
                "    dead_letter_browse_limit: 50\n";
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);
}
END_TEST

/* `qrel dlq`'s reading of one browsed dead letter: the recorded orders 0, and properties of
 * every integer type and the JSON body as the work id. */
START_TEST(test_dlq_letter)
{
    json_t *doc = json_doc_fixture("activemq/bulk_shared.json");
    const json_t *m = json_array_get(json_object_get(json_array_get(doc, 3), "value"), 0);
    struct activemq_letter l;
    ck_assert_int_eq(activemq_dlq_letter(m, "emails", "order.id", &l), 0);
    ck_assert_int_eq(activemq_dlq_letter(m, "orders", "order.id", &l), 1);
    ck_assert_str_eq(l.message_id, "ID:vm-38431-1796520486666-1:1:1:1:1");
    ck_assert_ptr_null(l.work_id); /* "orders 0" is no JSON */
    ck_assert_int_eq(l.deliveries, 3);
    ck_assert_int_eq(l.body_bytes, 8);
    double t;
    ck_assert_int_eq(json_parse_rfc3339("2026-12-06T01:28:08Z", &t), 0);
    ck_assert(l.sent == t);
    json_decref(doc);

    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:{s:s, s:s}, s:{s:I}, s:{s:i}}", "JMSMessageID", "ID:x", "Text",
        "{\"order\":{\"id\":\"o-7\"}}", "OriginalDestination", "queue://orders", "StringProperties",
        "order_id", "o-7", "dlqDeliveryFailureCause",
        "java.lang.Throwable: Delivery[11] exceeds redelivery policy limit:RedeliveryPolicy {}",
        "LongProperties", "seq", (json_int_t)12345678901LL, "IntProperties", "n", 5);
    const char *const want[][2] = {
        {"order.id", "o-7"}, {"property:order_id", "o-7"}, {"property:seq", "12345678901"},
        {"property:n", "5"}, {"property:none", NULL},      {"order.ref", NULL}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        ck_assert_int_eq(activemq_dlq_letter(o, "orders", want[i][0], &l), 1);
        if (want[i][1])
            ck_assert_str_eq(l.work_id, want[i][1]);
        else
            ck_assert_ptr_null(l.work_id);
        ck_assert_int_eq(l.deliveries, 11);
        ck_assert(l.sent == 0);
        free(l.work_id);
    }
    json_object_del(o, "JMSMessageID"); /* no id: nothing to replay it by */
    ck_assert_int_eq(activemq_dlq_letter(o, "orders", "order.id", &l), 0);
    json_decref(o);

    long long d = 0;
    ck_assert_int_eq(activemq_cause_deliveries("Delivery[7] exceeds redelivery policy limit:", &d),
                     1);
    ck_assert_int_eq(d, 7);
    ck_assert_int_eq(activemq_cause_deliveries("Delivery[] exceeds redelivery policy limit", &d),
                     0);
    ck_assert_int_eq(activemq_cause_deliveries("Delivery[7] was fine", &d), 0);
    ck_assert_int_eq(activemq_cause_deliveries(NULL, &d), 0);
    char why[300];
    ck_assert_int_eq(activemq_dlq_id_field_check("property:order_id", why, sizeof why), 0);
    ck_assert_int_eq(activemq_dlq_id_field_check("order.id", why, sizeof why), 0);
    ck_assert_int_eq(activemq_dlq_id_field_check("property:", why, sizeof why), -1);
    ck_assert_str_eq(why, "want a JSON key of the text message's body with dots between nested "
                          "keys (order.id) or property:NAME for a JMS property, got \"property:\"");
}
END_TEST

/* ---- activemq_reply_parse: the browsed dead letters cut down, the series the same ---- */

/* 1 when a and b hold the same samples in the same order. */
static int same_series(const struct metric_set *a, const struct metric_set *b)
{
    if (metric_set_len(a) != metric_set_len(b))
        return 0;
    for (size_t i = 0; i < metric_set_len(a); i++) {
        struct metric_sample x, y;
        metric_set_get(a, i, &x);
        metric_set_get(b, i, &y);
        if (x.family != y.family || x.nlabels != y.nlabels ||
            !(x.value == y.value || (isnan(x.value) && isnan(y.value))))
            return 0;
        for (size_t k = 0; k < x.nlabels; k++)
            if (strcmp(x.labels[k].name, y.labels[k].name) ||
                strcmp(x.labels[k].value, y.labels[k].value))
                return 0;
    }
    return 1;
}

/* text read by activemq_reply_parse and by jansson whole: the same outcome and series under
 * both policies. */
static void assert_same_as_jansson(const char *text)
{
    static const char *const dlqs[] = {"ActiveMQ.DLQ", "DLQ.{queue}"};
    struct err e1, e2;
    err_clear(&e1);
    err_clear(&e2);
    json_t *slim = activemq_reply_parse(text, strlen(text), "POST jolokia", &e1);
    json_t *whole = json_parse_body(text, strlen(text), "POST jolokia", &e2);
    ck_assert_msg(!slim == !whole, "%s: %s / %s", text, e1.msg, e2.msg);
    if (!whole) {
        ck_assert_str_eq(e1.msg, e2.msg);
        return;
    }
    for (size_t d = 0; d < 2; d++) {
        struct metric_set *a = metric_set_new("amq", "activemq"),
                          *b = metric_set_new("amq", "activemq");
        struct activemq_result ra, rb;
        struct entry_skips sa = {0}, sb = {0};
        int rca = run(slim, dlqs[d], a, &ra, &sa, &e1), rcb = run(whole, dlqs[d], b, &rb, &sb, &e2);
        ck_assert_int_eq(rca, rcb);
        if (rca)
            ck_assert_str_eq(e1.msg, e2.msg);
        else {
            ck_assert_msg(same_series(a, b), "%s under %s", text, dlqs[d]);
            ck_assert_mem_eq(&ra, &rb, sizeof ra);
            ck_assert_uint_eq(sa.n, sb.n);
        }
        entry_skips_free(&sa);
        entry_skips_free(&sb);
        metric_set_free(a);
        metric_set_free(b);
    }
    json_decref(slim);
    json_decref(whole);
}

START_TEST(test_reply_recorded)
{
    static const char *const names[] = {"activemq/bulk_shared.json", "activemq/bulk_truncated.json",
                                        "activemq/bulk_no_broker.json"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        char *text = fixture_text(names[i], &len);
        assert_same_as_jansson(text);
        free(text);
    }
    /* what the scrape keeps of a recorded dead letter: its three members, no body */
    size_t len;
    char *text = fixture_text("activemq/bulk_shared.json", &len);
    struct err e;
    err_clear(&e);
    json_t *doc = activemq_reply_parse(text, len, "POST jolokia", &e);
    free(text);
    ck_assert_ptr_nonnull(doc);
    json_t *letter = json_array_get(json_object_get(json_array_get(doc, 3), "value"), 0);
    ck_assert_uint_eq(json_object_size(letter), 3);
    ck_assert_ptr_nonnull(json_object_get(letter, "OriginalDestination"));
    ck_assert_ptr_nonnull(json_object_get(letter, "JMSTimestamp"));
    json_t *props = json_object_get(letter, "StringProperties");
    ck_assert_uint_eq(json_object_size(props), 1);
    ck_assert_ptr_nonnull(json_object_get(props, "dlqDeliveryFailureCause"));
    json_decref(doc);
}
END_TEST

/* Replies the walk reads itself and ones it leaves to jansson, all with jansson's outcome. */
static const char *const reply_texts[] = {
    "",
    "{}",
    "[]",
    "[1,2",
    "[{\"status\":404}]",
    /* a browse reply the walk cuts: members repeated, the last counts; odd values */
    "[{\"status\":200,\"value\":\"5\"},{\"status\":200,\"value\":{\"q\":{\"Name\":\"a\","
    "\"QueueSize\":3,\"InFlightCount\":0,\"ConsumerCount\":0}}},{\"status\":200,\"value\":{}},"
    "{\"status\":200,\"value\":[{\"OriginalDestination\":\"queue://b\",\"Text\":\"x\","
    "\"OriginalDestination\":\"queue://a\",\"JMSTimestamp\":\"2026-12-06T01:28:08Z\","
    "\"StringProperties\":{\"dlqDeliveryFailureCause\":\"x\"},\"StringProperties\":"
    "{\"x\":[1,{\"y\":\"]\"}],\"dlqDeliveryFailureCause\":\"Delivery[3] exceeds redelivery "
    "policy limit:RedeliveryPolicy {maximumRedeliveries = 2}\"}},"
    "7,null,[],{\"StringProperties\":[]},{\"StringProperties\":\"s\"},"
    "{\"OriginalDestination\":\"queue://\\u0061\",\"JMSTimestamp\":5}],\"value\":[]}]",
    /* an escaped member name: that letter (or reply) read by jansson whole */
    "[{\"status\":200,\"value\":\"5\"},{\"status\":200,\"value\":{\"q\":{\"Name\":\"a\","
    "\"QueueSize\":3,\"InFlightCount\":0,\"ConsumerCount\":0}}},{\"status\":200,\"value\":{}},"
    "{\"status\":200,\"value\":[{\"Original\\u0044estination\":\"queue://a\"},"
    "{\"OriginalDestination\":\"queue://a\",\"StringProperties\":{\"dlqDeliveryFailure\\u0043"
    "ause\":\"Delivery[3] exceeds redelivery policy limit: maximumRedeliveries = 4\"}}]},"
    "{\"st\\u0061tus\":200}]",
    /* broken where the walk reads, or a number jansson reads only as a double */
    "[{\"status\":200},{\"status\":200},{\"status\":200},{\"status\":200,\"value\":[{\"Origin"
    "alDestination\":\"queue://a}]}]",
    "[{\"status\":200,\"value\":\"5\"},{\"status\":200,\"value\":{}},{\"status\":200,"
    "\"value\":{}},{\"status\":200,\"value\":[{\"JMSTimestamp\":99999999999999999999999}]}]",
};

START_TEST(test_reply_texts)
{
    assert_same_as_jansson(reply_texts[_i]);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded_shared, 0},
        {test_recorded_truncated, 0},
        {test_recorded_no_broker, 0},
        {test_individual, 0},
        {test_bad_dead_letters, 0},
        {test_huge_dlq_size, 0},
        {test_bad_documents, CHECK_ROWS(bad_docs)},
        {test_empty_broker, 0},
        {test_cause, 0},
        {test_naming, 0},
        {test_config_bad, CHECK_ROWS(bad_configs)},
        {test_config_good, 0},
        {test_dlq_letter, 0},
        {test_reply_recorded, 0},
        {test_reply_texts, CHECK_ROWS(reply_texts)},
    };
    return check_run_tests("activemq", tests, CHECK_ROWS(tests), 0);
}
