/* check_pubsub_message.c: unit tests for the pure parts of `qrel dlq` on Pub/Sub
 * (collectors/pubsub/message.c) and the load-time checks of its configuration (dlq.c).
 *
 * A pull reply recorded from Google's Pub/Sub emulator 0.8.20 after it dead-lettered two messages
 * (tests/fixtures/pubsub) and hand-made variants feed the parser; errors must name the JSON path.
 * The work id and the bodies of publish, acknowledge and modifyAckDeadline are checked value by
 * value. Reading, replaying and releasing against the emulator are left to
 * tests/integration/dlq_pubsub.sh. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "pubsub/pubsub.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"
#include "support/json_doc.h"

extern const struct collector_kind pubsub_kind;

START_TEST(test_recorded_pull)
{
    json_t *doc = json_doc_fixture("pubsub/pull-dead-letters-emulator-0.8.20.json"), *list = NULL;
    struct err e;
    ck_assert_int_eq(pubsub_pull_list(doc, &list, &e), 0);
    ck_assert_uint_eq(json_array_size(list), 2);
    struct pubsub_received r[2];
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(pubsub_received_parse(json_array_get(list, i), "$", &r[i], &e) == 0, "%s",
                      e.msg);
    ck_assert_str_eq(r[0].ack_id, "projects/shop/subscriptions/dead:11");
    ck_assert_str_eq(r[0].message_id, "3");
    ck_assert_str_eq(r[0].data, "eyJvcmRlcl9pZCI6MX0=");
    ck_assert_ptr_null(r[0].ordering_key);
    ck_assert_int_eq(r[0].source_deliveries, 5);
    ck_assert_uint_eq(json_object_size(r[0].attributes), 5);
    /* 2026-12-01T17:59:54.526Z */
    ck_assert_double_eq_tol(r[0].publish_time, 1796147994.526, 1e-3);
    ck_assert_str_eq(r[1].message_id, "4");
    ck_assert_str_eq(r[1].ordering_key, "o1");
    size_t bytes = 0;
    char *id = pubsub_work_id(&r[1], "order_id", &bytes);
    ck_assert_str_eq(id, "2");
    ck_assert_uint_eq(bytes, strlen("{\"order_id\":2}"));
    free(id);
    /* what a replay publishes: the original attributes only and the replay stamp (never
     * replayed: 1), the ordering key kept */
    ck_assert_int_eq(r[0].replays, 0);
    char *body = pubsub_publish_body(&r[0]);
    json_t *got = json_doc(body),
           *want = json_doc("{\"messages\":[{\"data\":\"eyJvcmRlcl9pZCI6MX0=\","
                            "\"attributes\":{\"k\":\"v\",\"qrel-replayed\":\"1\"}}]}");
    ck_assert_msg(json_equal(got, want), "publish body %s", body);
    json_decref(got);
    json_decref(want);
    free(body);
    body = pubsub_publish_body(&r[1]);
    got = json_doc(body);
    want = json_doc("{\"messages\":[{\"data\":\"eyJvcmRlcl9pZCI6Mn0=\",\"orderingKey\":\"o1\","
                    "\"attributes\":{\"qrel-replayed\":\"1\"}}]}");
    ck_assert_msg(json_equal(got, want), "publish body %s", body);
    json_decref(got);
    json_decref(want);
    free(body);
    pubsub_received_free(&r[0]);
    pubsub_received_free(&r[1]);
    pubsub_received_free(NULL);
    json_decref(doc);
}
END_TEST

/* The replay stamp: read from the attribute, replaced (one attribute, its count + 1) by the
 * replay; an unreadable one is unknown, and its replay stamps 1. */
static const struct {
    const char *stamp; /* NULL: no attribute */
    long long replays;
    const char *published;
} stamps[] = {
    {NULL, 0, "1"}, {"1", 1, "2"}, {"17", 17, "18"}, {"", -1, "1"}, {"x", -1, "1"}, {"-2", -1, "1"},
};

START_TEST(test_stamp)
{
    json_t *item = json_doc("{\"ackId\":\"a\",\"message\":{\"messageId\":\"9\",\"data\":\"e30=\","
                            "\"attributes\":{\"k\":\"v\"}}}");
    json_t *attrs = json_object_get(json_object_get(item, "message"), "attributes");
    if (stamps[_i].stamp)
        json_object_set_new(attrs, "qrel-replayed", json_string(stamps[_i].stamp));
    struct pubsub_received r;
    struct err e;
    ck_assert_msg(pubsub_received_parse(item, "$", &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.replays, stamps[_i].replays);
    char *body = pubsub_publish_body(&r);
    json_t *got = json_doc(body);
    json_t *a = json_object_get(json_array_get(json_object_get(got, "messages"), 0), "attributes");
    ck_assert_uint_eq(json_object_size(a), 2);
    ck_assert_str_eq(json_string_value(json_object_get(a, "qrel-replayed")), stamps[_i].published);
    json_decref(got);
    free(body);
    pubsub_received_free(&r);
    json_decref(item);
}
END_TEST

START_TEST(test_empty_pull)
{
    json_t *doc = json_doc("{}"), *list = (json_t *)1;
    struct err e;
    ck_assert_int_eq(pubsub_pull_list(doc, &list, &e), 0);
    ck_assert_ptr_null(list);
    json_decref(doc);
}
END_TEST

static const struct check_case bad_pulls[] = {
    {"[]", "$: want an object, got a list"},
    {"{\"receivedMessages\": {}}", "$.receivedMessages: want a list, got an object"},
    {"{\"receivedMessages\": [{\"message\": {\"messageId\": \"1\"}}]}",
     "$.receivedMessages[0].ackId: missing"},
    {"{\"receivedMessages\": [{\"ackId\": \"a\"}]}", "$.receivedMessages[0].message: missing"},
    {"{\"receivedMessages\": [{\"ackId\": \"a\", \"message\": {}}]}",
     "$.receivedMessages[0].message.messageId: missing"},
    {"{\"receivedMessages\": [{\"ackId\": \"a\", \"message\": {\"messageId\": \"1\", "
     "\"attributes\": {\"n\": 5}}}]}",
     "$.receivedMessages[0].message.attributes.n: want a string, got a number"},
    {"{\"receivedMessages\": [{\"ackId\": \"a\", \"message\": {\"messageId\": \"1\", "
     "\"publishTime\": \"yesterday\"}}]}",
     "$.receivedMessages[0].message.publishTime: want an RFC 3339 time, got \"yesterday\""},
    {"{\"receivedMessages\": [{\"ackId\": \"a\", \"message\": {\"messageId\": \"1\", "
     "\"data\": 7}}]}",
     "$.receivedMessages[0].message.data: want a string, got a number"},
};

START_TEST(test_bad_pull)
{
    json_t *doc = json_doc(bad_pulls[_i].in), *list = NULL;
    struct err e;
    err_clear(&e);
    int rc = pubsub_pull_list(doc, &list, &e);
    if (rc == 0) {
        struct pubsub_received r;
        ck_assert_ptr_nonnull(list);
        rc = pubsub_received_parse(json_array_get(list, 0), "$.receivedMessages[0]", &r, &e);
    }
    check_failed(rc, &e, ERR_PROTOCOL, bad_pulls[_i].want);
    json_decref(doc);
}
END_TEST

static const struct {
    const char *message; /* the "message" object of a received message */
    const char *id_field;
    const char *want; /* NULL: no id */
    size_t bytes;
} work_ids[] = {
    /* {"order":{"id":17}} */
    {"{\"messageId\":\"1\",\"data\":\"eyJvcmRlciI6eyJpZCI6MTd9fQ==\"}", "order.id", "17", 19},
    {"{\"messageId\":\"1\",\"data\":\"eyJvcmRlciI6eyJpZCI6MTd9fQ==\"}", "order.no", NULL, 19},
    {"{\"messageId\":\"1\",\"data\":\"eyJvcmRlciI6eyJpZCI6MTd9fQ==\",\"attributes\":{\"order\":"
     "\"A-9\"}}",
     "attribute:order", "A-9", 19},
    {"{\"messageId\":\"1\",\"attributes\":{\"order\":\"A-9\"}}", "attribute:order", "A-9", 0},
    {"{\"messageId\":\"1\",\"attributes\":{\"order\":\"\"}}", "attribute:order", NULL, 0},
    {"{\"messageId\":\"1\",\"attributes\":{\"order\":\"a\\u0000b\"}}", "attribute:order", NULL, 0},
    {"{\"messageId\":\"1\"}", "attribute:order", NULL, 0},
    {"{\"messageId\":\"1\",\"data\":\"not base64!\"}", "order.id", NULL, 0},
    /* "plain text" is no JSON */
    {"{\"messageId\":\"1\",\"data\":\"cGxhaW4gdGV4dA==\"}", "order.id", NULL, 10},
};

START_TEST(test_work_id)
{
    char text[512];
    snprintf(text, sizeof text, "{\"ackId\":\"a\",\"message\":%s}", work_ids[_i].message);
    json_t *doc = json_doc(text);
    struct pubsub_received r;
    struct err e;
    ck_assert_msg(pubsub_received_parse(doc, "$", &r, &e) == 0, "%s", e.msg);
    size_t bytes = 99;
    char *id = pubsub_work_id(&r, work_ids[_i].id_field, &bytes);
    if (work_ids[_i].want) {
        ck_assert_ptr_nonnull(id);
        ck_assert_str_eq(id, work_ids[_i].want);
    } else {
        ck_assert_msg(id == NULL, "want no id, got \"%s\"", id);
    }
    ck_assert_uint_eq(bytes, work_ids[_i].bytes);
    ck_assert_int_eq(r.source_deliveries, -1);
    free(id);
    pubsub_received_free(&r);
    json_decref(doc);
}
END_TEST

START_TEST(test_ack_bodies)
{
    const char *ids[] = {"projects/p/subscriptions/d:1", "x\"y"};
    check_str_free(pubsub_ack_body(ids, 2, -1),
                   "{\"ackIds\":[\"projects/p/subscriptions/d:1\",\"x\\\"y\"]}");
    check_str_free(pubsub_ack_body(ids, 1, 0),
                   "{\"ackDeadlineSeconds\":0,\"ackIds\":[\"projects/p/subscriptions/d:1\"]}");
}
END_TEST

/* ---- configuration: dead_letter_subscriptions and the dead_letters entry ---- */

#define SRC "sources:\n  - name: gcp\n    kind: pubsub\n    project: shop\n"

static const struct check_case bad_configs[] = {
    {SRC "    dead_letter_subscriptions: [a]\n",
     "x.yml:5:32: dead_letter_subscriptions: want a mapping, got a list"},
    {SRC "    dead_letter_subscriptions: {orders: [a]}\n",
     "x.yml:5:41: dead_letter_subscriptions: orders: want the subscription on its dead-letter "
     "topic to read dead letters from (an id or projects/PROJECT/subscriptions/ID)"},
    {SRC "    dead_letter_subscriptions: {orders: a/b}\n",
     "x.yml:5:41: dead_letter_subscriptions: orders: want the subscription on its dead-letter "
     "topic to read dead letters from (an id or projects/PROJECT/subscriptions/ID)"},
    {SRC "    dead_letter_subscriptions: {a/b: dead}\n",
     "x.yml:5:38: dead_letter_subscriptions: want subscription ids or "
     "projects/PROJECT/subscriptions/ID as keys, got \"a/b\""},
    {SRC "    subscriptions: [orders, projects/shop/subscriptions/pay]\n"
         "    dead_letter_subscriptions: {refunds: dead}\n",
     "x.yml:6:42: dead_letter_subscriptions: source \"gcp\" does not watch subscription "
     "\"refunds\" (subscriptions: orders, projects/shop/subscriptions/pay)"},
    /* every subscription of the project but those exclude leaves out */
    {SRC "    exclude: [\"tmp-*\"]\n    dead_letter_subscriptions: {tmp-a: dead}\n",
     "x.yml:6:40: dead_letter_subscriptions: source \"gcp\" does not watch subscription "
     "\"tmp-a\" (its exclude leaves it out)"},
};

START_TEST(test_config_bad)
{
    struct err e;
    check_refused(configure_kind_text(&pubsub_kind, bad_configs[_i].in, &e), &e,
                  bad_configs[_i].want);
}
END_TEST

/* in: YAML of one dead_letters entry; want: its error, NULL where it is accepted */
static const struct check_case entries[] = {
    {"{queue: orders, id_field: order.id}", NULL},
    {"{queue: projects/shop/subscriptions/orders, id_field: \"attribute:order\"}", NULL},
    {"{queue: pay, id_field: id}", NULL}, /* listed by its full name */
    {"{queue: orders, id_field: \"attribute:\"}",
     "e.yml:1:27: id_field: want an attribute name after \"attribute:\""},
    {"{queue: orders, id_field: order..id}",
     "e.yml:1:27: id_field: want a JSON key with dots between nested keys (order.id) or "
     "attribute:NAME, got \"order..id\""},
    {"{queue: a/b, id_field: id}",
     "e.yml:1:9: queue: want a subscription id or projects/PROJECT/subscriptions/ID, got \"a/b\""},
    {"{queue: refunds, id_field: id}",
     "e.yml:1:9: queue: source \"gcp\" does not watch subscription \"refunds\" (subscriptions: "
     "orders, projects/shop/subscriptions/pay)"},
    {"{queue: projects/other/subscriptions/orders, id_field: id}",
     "e.yml:1:9: queue: source \"gcp\" does not watch subscription "
     "\"projects/other/subscriptions/orders\" (subscriptions: orders, "
     "projects/shop/subscriptions/pay)"},
};

START_TEST(test_entry)
{
    struct collector c;
    struct cfg_doc *d;
    struct err e;
    ck_assert_int_eq(configure_kind_keep(&pubsub_kind,
                                         SRC "    subscriptions: [orders, "
                                             "projects/shop/subscriptions/pay]\n",
                                         &c, &d, &e),
                     0);
    struct cfg_doc *ed = cfg_parse_string("e.yml", entries[_i].in, strlen(entries[_i].in), &e);
    ck_assert_ptr_nonnull(ed);
    kind_config_check_entry(&c, cfg_doc_root(ed), entries[_i].want);
    cfg_doc_free(ed);
    kind_config_free(&c, d);
}
END_TEST

START_TEST(test_kind_offers_dlq)
{
    const struct dlq_kind *k = pubsub_kind.dlq;
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(k->read);
    ck_assert_ptr_nonnull(k->requeue);
    ck_assert_ptr_nonnull(k->remove);
    ck_assert_ptr_nonnull(k->release);
    ck_assert_ptr_nonnull(k->read_effect);
    ck_assert_ptr_null(k->cannot_replay);
    /* reading has side effects: the exporter must not classify on every scrape */
    ck_assert_ptr_null(pubsub_kind.dead_letter_ids);
    struct collector c;
    struct cfg_doc *d;
    struct err e;
    ck_assert_int_eq(configure_kind_keep(&pubsub_kind,
                                         SRC "    dead_letter_subscriptions:\n"
                                             "      orders: orders-dead-replay\n"
                                             "      projects/shop/subscriptions/pay: "
                                             "projects/ops/subscriptions/pay-dead\n",
                                         &c, &d, &e),
                     0);
    kind_config_free(&c, d);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

int main(void)
{
    Suite *s = suite_create("pubsub_message");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, test_recorded_pull);
    tcase_add_test(tc, test_empty_pull);
    tcase_add_loop_test(tc, test_stamp, 0, N(stamps));
    tcase_add_loop_test(tc, test_bad_pull, 0, N(bad_pulls));
    tcase_add_loop_test(tc, test_work_id, 0, N(work_ids));
    tcase_add_test(tc, test_ack_bodies);
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_loop_test(tc, test_entry, 0, N(entries));
    tcase_add_test(tc, test_kind_offers_dlq);
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
