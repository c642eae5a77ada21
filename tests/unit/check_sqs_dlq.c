/* check_sqs_dlq.c: unit tests for collectors/sqs/dlq_parse.c (the requests `qrel dlq` sends to
 * SQS and the answers it reads) and the sqs kind's check of a dead_letters entry.
 *
 * The answers are recorded from fauxqs 2.4.1: a message dead-lettered after maxReceiveCount 2,
 * received from its dead-letter queue with every attribute (its receive count carried over, its
 * SentTimestamp the original send's), and a ChangeMessageVisibilityBatch with one bad receipt
 * handle; plus what a server should never send, where the message must name the path. Reading,
 * replaying and releasing against a server are tests/integration/dlq_sqs.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "sources.h"
#include "sqs/dlq.h"
#include "sqs/sqs.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"

extern const struct collector_kind sqs_kind;

#define RECEIVED                                                                                   \
    "{\"Messages\":[{\"MessageId\":\"a9deb0ee-5b74-4dae-bf03-f048c25a91f9\",\"ReceiptHandle\":"    \
    "\"3945a0eb-e635-4907-8921-30605486c0e0\",\"MD5OfBody\":\"582f43f1bccd72f1600623006d3c2b1c\"," \
    "\"Body\":\"{\\\"order\\\":{\\\"id\\\":17}}\",\"MD5OfMessageAttributes\":"                     \
    "\"13b07ff236dfbaee82387f40db749286\",\"MessageAttributes\":{\"order_id\":{\"DataType\":"      \
    "\"String\",\"StringValue\":\"o-17\"},\"n\":{\"DataType\":\"Number\",\"StringValue\":\"3\"},"  \
    "\"b\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAEC\"}},\"Attributes\":{\"SenderId\":"      \
    "\"000000000000\",\"SentTimestamp\":\"1796148220838\",\"ApproximateReceiveCount\":\"4\","      \
    "\"ApproximateFirstReceiveTimestamp\":\"1796148220893\"}}]}"

/* Parses text, which the test wrote and must be JSON. */
static json_t *answer(const char *text)
{
    json_error_t je;
    json_t *d = json_loads(text, JSON_ALLOW_NUL, &je);
    ck_assert_msg(d != NULL, "JSON of the test: %s", je.text);
    return d;
}

/* The messages of a ReceiveMessage answer that must parse. */
static struct sqs_dead_letter **received(const char *text, size_t *n)
{
    json_t *d = answer(text);
    struct sqs_dead_letter **v = NULL;
    struct err e;
    err_clear(&e);
    ck_assert_msg(sqs_dlq_parse_receive(d, "AmazonSQS.ReceiveMessage \"o-dlq\"", &v, n, &e) == 0,
                  "%s", e.msg);
    json_decref(d);
    return v;
}

/* v, printed compactly with sorted keys, is want. */
static void assert_json(const json_t *v, const char *want)
{
    check_str_free(json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS), want);
}

static void letters_free(struct sqs_dead_letter **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sqs_dead_letter_free(v[i]);
    free(v);
}

START_TEST(test_receive_recorded)
{
    size_t n = 0;
    struct sqs_dead_letter **v = received(RECEIVED, &n);
    ck_assert_uint_eq(n, 1);
    struct sqs_dead_letter *m = v[0];
    ck_assert_str_eq(m->message_id, "a9deb0ee-5b74-4dae-bf03-f048c25a91f9");
    ck_assert_str_eq(m->receipt_handle, "3945a0eb-e635-4907-8921-30605486c0e0");
    ck_assert_str_eq(m->body, "{\"order\":{\"id\":17}}");
    ck_assert_uint_eq(m->body_len, strlen(m->body));
    ck_assert_str_eq(m->md5_of_body, "582f43f1bccd72f1600623006d3c2b1c");
    ck_assert_double_eq(m->receive_count, 4);
    ck_assert_double_eq_tol(m->sent, 1796148220.838, 1e-6);
    ck_assert_ptr_null(m->group_id);
    ck_assert_int_eq(m->held, 1);
    assert_json(m->attributes, "{\"b\":{\"BinaryValue\":\"AAEC\",\"DataType\":\"Binary\"},"
                               "\"n\":{\"DataType\":\"Number\",\"StringValue\":\"3\"},"
                               "\"order_id\":{\"DataType\":\"String\",\"StringValue\":\"o-17\"}}");
    letters_free(v, n);
}
END_TEST

START_TEST(test_receive_fifo_and_bare)
{
    /* AWS's documented shape: list members it reserves are dropped; a FIFO group id is kept; a
     * message without attributes has no counts (unknown, not 0) */
    size_t n = 0;
    struct sqs_dead_letter **v = received(
        "{\"Messages\":[{\"MessageId\":\"m1\",\"ReceiptHandle\":\"h1\",\"Body\":\"a\\u0000b\","
        "\"Attributes\":{\"MessageGroupId\":\"g7\",\"ApproximateReceiveCount\":\"1\","
        "\"SequenceNumber\":\"18849\"},\"MessageAttributes\":{\"k\":{\"DataType\":\"String\","
        "\"StringValue\":\"v\",\"StringListValues\":[],\"BinaryListValues\":[]}}},"
        "{\"MessageId\":\"m2\",\"ReceiptHandle\":\"h2\",\"Body\":\"\"}]}",
        &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(v[0]->group_id, "g7");
    ck_assert_uint_eq(v[0]->body_len, 3);
    ck_assert_int_eq(memcmp(v[0]->body, "a\0b", 3), 0);
    ck_assert_double_eq(v[0]->receive_count, 1);
    ck_assert_double_eq(v[0]->sent, 0);
    assert_json(v[0]->attributes, "{\"k\":{\"DataType\":\"String\",\"StringValue\":\"v\"}}");
    ck_assert_ptr_null(v[1]->attributes);
    ck_assert_ptr_null(v[1]->md5_of_body);
    ck_assert_double_eq(v[1]->receive_count, -1);
    ck_assert_uint_eq(v[1]->body_len, 0);
    letters_free(v, n);
    /* an empty queue: SQS leaves Messages out (fauxqs) or sends an empty list */
    ck_assert_ptr_null(received("{}", &n));
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(received("{\"Messages\":[]}", &n));
    ck_assert_uint_eq(n, 0);
}
END_TEST

static const struct check_case bad_receives[] = {
    {"[]", "R: $: want an object, got a list"},
    {"{\"Messages\":{}}", "R: $.Messages: want a list, got an object"},
    {"{\"Messages\":[7]}", "R: $.Messages[0]: want an object, got a number"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"Body\":\"b\"}]}",
     "R: $.Messages[0].ReceiptHandle: missing"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"h\",\"Body\":3}]}",
     "R: $.Messages[0].Body: want a string, got a number"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"h\",\"Body\":\"\"},"
     "{\"MessageId\":\"m2\",\"ReceiptHandle\":\"h\",\"Body\":\"\",\"Attributes\":"
     "{\"ApproximateReceiveCount\":[1]}}]}",
     "R: $.Messages[1].Attributes.ApproximateReceiveCount: want a number, got a list"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"h\",\"Body\":\"\","
     "\"MessageAttributes\":{\"k\":{\"StringValue\":\"v\"}}}]}",
     "R: $.Messages[0].MessageAttributes.k.DataType: missing"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"h\",\"Body\":\"\","
     "\"MessageAttributes\":{\"k\":\"v\"}}]}",
     "R: $.Messages[0].MessageAttributes.k: want an object, got a string"},
};

START_TEST(test_receive_bad)
{
    json_t *d = answer(bad_receives[_i].in);
    struct sqs_dead_letter **v = (void *)1;
    size_t n = 99;
    struct err e;
    err_clear(&e);
    check_failed(sqs_dlq_parse_receive(d, "R", &v, &n, &e), &e, ERR_PROTOCOL,
                 bad_receives[_i].want);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    json_decref(d);
}
END_TEST

/* in: an id_field; want: the id it reads, NULL where none */
static const struct check_case work_ids[] = {
    {"order.id", "17"},       {"order", NULL},
    {"order.id.x", NULL},     {"attribute:order_id", "o-17"},
    {"attribute:n", "3"},     {"attribute:b", NULL}, /* binary: no id */
    {"attribute:nope", NULL}, {"nope", NULL},
};

START_TEST(test_work_id)
{
    size_t n = 0;
    struct sqs_dead_letter **v = received(RECEIVED, &n);
    char *id = NULL;
    size_t len = 0;
    sqs_dlq_work_id(v[0], work_ids[_i].in, &id, &len);
    if (work_ids[_i].want) {
        ck_assert_str_eq(id, work_ids[_i].want);
        ck_assert_uint_eq(len, strlen(work_ids[_i].want));
    } else {
        ck_assert_ptr_null(id);
        ck_assert_uint_eq(len, 0);
    }
    free(id);
    letters_free(v, n);
}
END_TEST

START_TEST(test_work_id_body_not_json)
{
    struct sqs_dead_letter m = {.body = (char *)"order 17", .body_len = 8};
    char *id = (char *)"x";
    size_t len = 9;
    sqs_dlq_work_id(&m, "order", &id, &len);
    ck_assert_ptr_null(id);
    sqs_dlq_work_id(&m, "attribute:order", &id, &len);
    ck_assert_ptr_null(id);
    ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(test_id_field_check)
{
    char why[300];
    ck_assert_int_eq(sqs_dlq_id_field_check("order.id", why, sizeof why), 0);
    ck_assert_int_eq(sqs_dlq_id_field_check("id", why, sizeof why), 0);
    ck_assert_int_eq(sqs_dlq_id_field_check("attribute:order-id", why, sizeof why), 0);
    const char *bad[] = {"attribute:", "order..id", ".id", "id.", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(sqs_dlq_id_field_check(bad[i], why, sizeof why), -1);
        char want[300];
        snprintf(want, sizeof want,
                 "want a JSON key of the message body with dots between nested keys (order.id) "
                 "or attribute:NAME for a message attribute, got \"%s\"",
                 bad[i]);
        ck_assert_str_eq(why, want);
    }
}
END_TEST

/* The replay stamp: read from the attribute qrel-replayed, replaced (not added) by a replay, and
 * left off, every attribute kept, on a message that has SQS's 10 already. */
START_TEST(test_stamp)
{
    size_t n = 0;
    struct sqs_dead_letter **v = received(
        "{\"Messages\":[{\"MessageId\":\"m1\",\"ReceiptHandle\":\"h1\",\"Body\":\"x\","
        "\"MessageAttributes\":{\"qrel-replayed\":{\"DataType\":\"Number\",\"StringValue\":"
        "\"2\"},\"a\":{\"DataType\":\"String\",\"StringValue\":\"v\"}}},"
        "{\"MessageId\":\"m2\",\"ReceiptHandle\":\"h2\",\"Body\":\"y\",\"MessageAttributes\":{"
        "\"a0\":{\"DataType\":\"String\",\"StringValue\":\"v\"},\"a1\":{\"DataType\":\"String\","
        "\"StringValue\":\"v\"},\"a2\":{\"DataType\":\"String\",\"StringValue\":\"v\"},\"a3\":{"
        "\"DataType\":\"String\",\"StringValue\":\"v\"},\"a4\":{\"DataType\":\"String\","
        "\"StringValue\":\"v\"},\"a5\":{\"DataType\":\"String\",\"StringValue\":\"v\"},\"a6\":{"
        "\"DataType\":\"String\",\"StringValue\":\"v\"},\"a7\":{\"DataType\":\"String\","
        "\"StringValue\":\"v\"},\"a8\":{\"DataType\":\"String\",\"StringValue\":\"v\"},\"a9\":{"
        "\"DataType\":\"String\",\"StringValue\":\"v\"}}},"
        "{\"MessageId\":\"m3\",\"ReceiptHandle\":\"h3\",\"Body\":\"z\",\"MessageAttributes\":{"
        "\"qrel-replayed\":{\"DataType\":\"String\",\"StringValue\":\"two\"}}}]}",
        &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(v[0]->replays, 2);
    ck_assert_int_eq(v[1]->replays, 0);
    ck_assert_int_eq(v[2]->replays, -1);
    int stamped = 0;
    char *s = sqs_dlq_send_body("http://q/1/o", v[0], NULL, &stamped);
    json_t *d = answer(s);
    free(s);
    assert_json(json_object_get(d, "MessageAttributes"),
                "{\"a\":{\"DataType\":\"String\",\"StringValue\":\"v\"},\"qrel-replayed\":"
                "{\"DataType\":\"Number\",\"StringValue\":\"3\"}}");
    json_decref(d);
    ck_assert_int_eq(stamped, 1);
    s = sqs_dlq_send_body("http://q/1/o", v[1], NULL, &stamped);
    d = answer(s);
    free(s);
    ck_assert_int_eq(stamped, 0);
    ck_assert_uint_eq(json_object_size(json_object_get(d, "MessageAttributes")), 10);
    ck_assert_ptr_null(json_object_get(json_object_get(d, "MessageAttributes"), "qrel-replayed"));
    json_decref(d);
    s = sqs_dlq_send_body("http://q/1/o", v[2], NULL, &stamped); /* unreadable: as none */
    d = answer(s);
    free(s);
    assert_json(json_object_get(d, "MessageAttributes"),
                "{\"qrel-replayed\":{\"DataType\":\"Number\",\"StringValue\":\"1\"}}");
    json_decref(d);
    for (size_t i = 0; i < n; i++)
        sqs_dead_letter_free(v[i]);
    free(v);
}
END_TEST

START_TEST(test_requests)
{
    check_str_free(sqs_dlq_receive_body("http://q/1/o-dlq", 10, 30, 0),
                   "{\"QueueUrl\":\"http://q/1/o-dlq\",\"MaxNumberOfMessages\":10,"
                   "\"VisibilityTimeout\":30,\"WaitTimeSeconds\":0,\"AttributeNames\":"
                   "[\"All\"],\"MessageSystemAttributeNames\":[\"All\"],"
                   "\"MessageAttributeNames\":[\"All\"]}");

    size_t n = 0;
    struct sqs_dead_letter **v = received(RECEIVED, &n);
    /* a standard queue: body and attributes as read, no group or dedup id */
    /* ... and the replay stamp: never replayed, so 1 */
    ck_assert_int_eq(v[0]->replays, 0);
    int stamped = 0;
    char *s = sqs_dlq_send_body("http://q/1/o", v[0], NULL, &stamped);
    json_t *d = answer(s);
    free(s);
    assert_json(d, "{\"MessageAttributes\":{\"b\":{\"BinaryValue\":\"AAEC\",\"DataType\":"
                   "\"Binary\"},\"n\":{\"DataType\":\"Number\",\"StringValue\":\"3\"},"
                   "\"order_id\":{\"DataType\":\"String\",\"StringValue\":\"o-17\"},"
                   "\"qrel-replayed\":{\"DataType\":\"Number\",\"StringValue\":\"1\"}},"
                   "\"MessageBody\":\"{\\\"order\\\":{\\\"id\\\":17}}\",\"QueueUrl\":"
                   "\"http://q/1/o\"}");
    json_decref(d);
    ck_assert_int_eq(stamped, 1);
    /* FIFO: the message's group and the fresh dedup id */
    v[0]->group_id = strdup("g7");
    char *dedup = sqs_dlq_dedup_id(v[0], 1796148220838LL);
    ck_assert_str_eq(dedup, "qrel-a9deb0ee-5b74-4dae-bf03-f048c25a91f9-1796148220838");
    s = sqs_dlq_send_body("http://q/1/o.fifo", v[0], dedup, NULL);
    d = answer(s);
    ck_assert_str_eq(json_string_value(json_object_get(d, "MessageGroupId")), "g7");
    ck_assert_str_eq(json_string_value(json_object_get(d, "MessageDeduplicationId")), dedup);
    json_decref(d);
    free(s);
    free(dedup);
    /* SQS takes 128 characters: a long message id is cut */
    free(v[0]->message_id);
    v[0]->message_id = malloc(201);
    memset(v[0]->message_id, 'x', 200);
    v[0]->message_id[200] = '\0';
    dedup = sqs_dlq_dedup_id(v[0], 1796148220838LL);
    ck_assert_uint_eq(strlen(dedup), 5 + 100 + 1 + 13);
    free(dedup);

    check_str_free(sqs_dlq_visibility_body("http://q/1/o-dlq", v, 1, 0),
                   "{\"QueueUrl\":\"http://q/1/o-dlq\",\"Entries\":[{\"Id\":\"m0\","
                   "\"ReceiptHandle\":\"3945a0eb-e635-4907-8921-30605486c0e0\","
                   "\"VisibilityTimeout\":0}]}");
    letters_free(v, n);
}
END_TEST

START_TEST(test_check_sent)
{
    size_t n = 0;
    struct sqs_dead_letter **v = received(RECEIVED, &n);
    struct err e;
    err_clear(&e);
    json_t *d = answer("{\"MessageId\":\"e7b6\",\"MD5OfMessageBody\":"
                       "\"582f43f1bccd72f1600623006d3c2b1c\"}");
    ck_assert_int_eq(sqs_dlq_check_sent(d, "S", v[0], &e), 0);
    json_decref(d);
    d = answer(
        "{\"MessageId\":\"e7b6\",\"MD5OfMessageBody\":\"9dd4e461268c8034f5c8564e155c67a6\"}");
    ck_assert_int_eq(sqs_dlq_check_sent(d, "S", v[0], &e), -1);
    ck_assert_str_eq(e.msg, "S: the body SQS stored (MD5 9dd4e461268c8034f5c8564e155c67a6) is not "
                            "the body read (MD5 582f43f1bccd72f1600623006d3c2b1c)");
    json_decref(d);
    d = answer("{\"MD5OfMessageBody\":\"582f43f1bccd72f1600623006d3c2b1c\"}");
    ck_assert_int_eq(sqs_dlq_check_sent(d, "S", v[0], &e), -1);
    ck_assert_str_eq(e.msg, "S: $.MessageId: missing");
    json_decref(d);
    letters_free(v, n);
}
END_TEST

START_TEST(test_check_batch)
{
    size_t n = 0;
    struct sqs_dead_letter **v =
        received("{\"Messages\":[{\"MessageId\":\"m-a\",\"ReceiptHandle\":\"h\",\"Body\":\"\"},"
                 "{\"MessageId\":\"m-b\",\"ReceiptHandle\":\"bogus\",\"Body\":\"\"}]}",
                 &n);
    struct err e;
    err_clear(&e);
    json_t *d = answer("{\"Successful\":[{\"Id\":\"m0\"},{\"Id\":\"m1\"}]}");
    ck_assert_int_eq(sqs_dlq_check_batch(d, "B", v, n, &e), 0);
    json_decref(d);
    /* recorded from fauxqs: the second entry's receipt handle is not one it gave */
    d = answer("{\"Successful\":[{\"Id\":\"m0\"}],\"Failed\":[{\"Id\":\"m1\",\"SenderFault\":true,"
               "\"Code\":\"ReceiptHandleIsInvalid\",\"Message\":\"The input receipt handle is "
               "invalid.\"}]}");
    ck_assert_int_eq(sqs_dlq_check_batch(d, "B", v, n, &e), -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    ck_assert_str_eq(e.msg, "B: 1 of 2 entries failed, first: message m-b: "
                            "ReceiptHandleIsInvalid: The input receipt handle is invalid.");
    json_decref(d);
    /* an Id we did not send is named as it came */
    d = answer("{\"Failed\":[{\"Id\":\"m9\"}]}");
    ck_assert_int_eq(sqs_dlq_check_batch(d, "B", v, n, &e), -1);
    ck_assert_str_eq(e.msg, "B: 1 of 2 entries failed, first: message m9: error");
    json_decref(d);
    d = answer("{\"Failed\":{}}");
    ck_assert_int_eq(sqs_dlq_check_batch(d, "B", v, n, &e), -1);
    ck_assert_str_eq(e.msg, "B: $.Failed: want a list, got an object");
    json_decref(d);
    letters_free(v, n);
}
END_TEST

/* ---- the sqs kind's check of a dead_letters entry (at load, no I/O) ---- */

#define SOURCES                                                                                    \
    "sources:\n  - name: aws\n    kind: sqs\n    region: eu-west-1\n    access_key_id: AKID\n"     \
    "    secret_access_key_env: T_SECRET\n"                                                        \
    "    queues: [orders, \"https://sqs.eu-west-1.amazonaws.com/1/billing\"]\n"                    \
    "    queue_name_prefix: jobs-\n    exclude: [\"jobs-tmp-*\"]\n"

/* in: queue and id_field of a dead_letters entry; want: its error, NULL where it is accepted */
static const struct check_case entries[] = {
    {"{queue: orders, id_field: order.id}", NULL},
    {"{queue: billing, id_field: \"attribute:order_id\"}", NULL},
    {"{queue: jobs-mail, id_field: id}", NULL},
    {"{queue: shipping, id_field: id}",
     "x.yml:11:13: queue: source \"aws\" does not watch a queue named \"shipping\" (want one of "
     "its queues, or a name its queue_name_prefix matches and its exclude does not)"},
    /* found by the prefix but left out by exclude: not watched, unless listed in queues */
    {"{queue: jobs-tmp-1, id_field: id}",
     "x.yml:11:13: queue: source \"aws\" does not watch a queue named \"jobs-tmp-1\" (want one "
     "of its queues, or a name its queue_name_prefix matches and its exclude does not)"},
    {"{queue: orders, id_field: \"attribute:\"}",
     "x.yml:11:31: id_field: want a JSON key of the message body with dots between nested keys "
     "(order.id) or attribute:NAME for a message attribute, got \"attribute:\""},
};

START_TEST(test_entry)
{
    setenv("T_SECRET", "very-secret-value", 1);
    char text[2048];
    snprintf(text, sizeof text, "%sdead_letters:\n  - %s\n", SOURCES, entries[_i].in);
    struct err e;
    err_clear(&e);
    struct cfg_doc *doc = cfg_parse_string("x.yml", text, strlen(text), &e);
    ck_assert_msg(doc != NULL, "YAML of the test: %s", e.msg);
    struct cfg_node *seq = NULL, *dl = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "sources", CFG_SEQ, &seq, &e), 0);
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "dead_letters", CFG_SEQ, &dl, &e), 0);
    struct sources s = {.timeout = SOURCES_DEFAULT_TIMEOUT};
    struct collector c = {0};
    ck_assert_msg(sources_configure(&s, &c, seq->items[0], &e) == 0, "%s", e.msg);
    ck_assert_ptr_eq(c.kind->dlq, &sqs_dlq_kind);
    kind_config_check_entry(&c, dl->items[0], entries[_i].want);
    collector_release(&c);
    free(c.name);
    cfg_doc_free(doc);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

int main(void)
{
    Suite *s = suite_create("sqs_dlq");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, test_receive_recorded);
    tcase_add_test(tc, test_receive_fifo_and_bare);
    tcase_add_loop_test(tc, test_receive_bad, 0, N(bad_receives));
    tcase_add_loop_test(tc, test_work_id, 0, N(work_ids));
    tcase_add_test(tc, test_work_id_body_not_json);
    tcase_add_test(tc, test_id_field_check);
    tcase_add_test(tc, test_requests);
    tcase_add_test(tc, test_stamp);
    tcase_add_test(tc, test_check_sent);
    tcase_add_test(tc, test_check_batch);
    tcase_add_loop_test(tc, test_entry, 0, N(entries));
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
