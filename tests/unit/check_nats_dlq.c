/* check_nats_dlq.c: unit tests for collectors/nats/dead_letter.c, the pure part of `qrel dlq` on
 * JetStream, and for the nats source's nats_* keys.
 *
 * The replies were recorded from nats-server 2.9.10 (tests/fixtures/nats/, each NAME-2.9.10.json)
 * after a worker nakked a message of a work-queue stream ORDERS up to max_deliver 2: the message as
 * STREAM.MSG.GET returns it (with a producer's Nats-Msg-Id, a trace header and a stamp), its
 * MAX_DELIVERIES advisory from ORDERS_DLQ (next_by_subj), "no message found", STREAM.INFO with a
 * subjects_filter, a missing stream, STREAM.MSG.DELETE of a deleted and of a never-used
 * sequence, and a PubAck and its duplicate. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "dlq_kind.h"
#include "nats/nats.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/fixture.h"
#include "support/json_doc.h"
#include "support/kind_config.h"

extern const struct collector_kind nats_kind;

static json_t *fix(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "nats/%s-2.9.10.json", name);
    return json_doc_fixture(path);
}

START_TEST(test_message_and_headers)
{
    json_t *doc = fix("msg-get");
    struct nats_stored m;
    struct err e;
    ck_assert_int_eq(nats_msg_get_parse(doc, "get", &m, &e), 0);
    ck_assert_str_eq(m.subject, "orders.created");
    ck_assert_int_eq(m.seq, 1);
    ck_assert_int_eq(m.data_len, 20);
    ck_assert_str_eq((char *)m.data, "{\"order\": {\"id\": 7}}");
    ck_assert(m.time > 1.7e9);
    struct nats_headers h;
    ck_assert_int_eq(nats_headers_parse(m.hdrs, m.hdrs_len, &h), 0);
    ck_assert_int_eq(h.n, 3);
    ck_assert_str_eq(h.v[0].key, "Nats-Msg-Id");
    ck_assert_str_eq(h.v[0].value, "src-7");
    ck_assert_str_eq(nats_headers_get(&h, "TRACE"), "t-7");
    ck_assert_int_eq(nats_dlq_replays(nats_headers_get(&h, DLQ_STAMP)), 1);
    ck_assert_ptr_null(nats_headers_get(&h, "absent"));
    /* what a replay does not copy */
    ck_assert_int_eq(nats_header_replaced("Nats-Msg-Id"), 1);
    ck_assert_int_eq(nats_header_replaced("nats-expected-last-sequence"), 1);
    ck_assert_int_eq(nats_header_replaced(DLQ_STAMP), 1);
    ck_assert_int_eq(nats_header_replaced("trace"), 0);
    nats_headers_free(&h);
    nats_stored_free(&m);
    json_decref(doc);

    static const char bad[] = "NATS/1.0\r\nno colon here\r\n\r\n";
    ck_assert_int_eq(nats_headers_parse((const unsigned char *)bad, strlen(bad), &h), -1);
    static const char notnats[] = "HTTP/1.1\r\nA: b\r\n\r\n";
    ck_assert_int_eq(nats_headers_parse((const unsigned char *)notnats, strlen(notnats), &h), -1);
    ck_assert_int_eq(nats_headers_parse(NULL, 0, &h), 0);
    ck_assert_int_eq(h.n, 0);
}
END_TEST

START_TEST(test_advisory)
{
    json_t *doc = fix("advisory-get");
    struct nats_stored m;
    struct err e;
    ck_assert_int_eq(nats_msg_get_parse(doc, "get", &m, &e), 0);
    ck_assert_str_eq(m.subject, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.worker");
    ck_assert_ptr_null(m.hdrs);
    struct nats_advisory a;
    ck_assert_int_eq(nats_advisory_parse((char *)m.data, m.data_len, &a), 0);
    ck_assert_str_eq(a.stream, "ORDERS");
    ck_assert_str_eq(a.consumer, "worker");
    ck_assert_int_eq(a.stream_seq, 1);
    ck_assert_int_eq(a.deliveries, 2);
    /* 2026-12-06T01:53:06.332030745Z */
    ck_assert_double_eq_tol(a.time, 1796521986.332, 0.001);
    nats_advisory_free(&a);
    nats_stored_free(&m);
    json_decref(doc);

    static const char noseq[] = "{\"stream\":\"ORDERS\",\"deliveries\":2}";
    ck_assert_int_eq(nats_advisory_parse(noseq, strlen(noseq), &a), -1);
    ck_assert_int_eq(a.stream_seq, -1);
    nats_advisory_free(&a);
    ck_assert_int_eq(nats_advisory_parse("not json", 8, &a), -1);
    nats_advisory_free(&a);
}
END_TEST

START_TEST(test_api_errors)
{
    struct err e;
    struct nats_stored m;
    json_t *doc = fix("msg-get-none");
    ck_assert_int_eq(nats_msg_get_parse(doc, "get", &m, &e), 1);
    json_decref(doc);

    struct nats_stream_state s;
    doc = fix("stream-info-missing");
    check_failed(nats_stream_state_parse(doc, "STREAM.INFO NOPE", &s, &e), &e, ERR_QUERY,
                 "STREAM.INFO NOPE: stream not found (code 404, err_code 10059)");
    json_decref(doc);

    doc = fix("stream-info-filter");
    ck_assert_int_eq(nats_stream_state_parse(doc, "info", &s, &e), 0);
    ck_assert_int_eq(s.messages, 1);
    ck_assert_int_eq(s.first_seq, 1);
    ck_assert_int_eq(s.last_seq, 1);
    ck_assert_int_eq(s.filtered, 1);
    json_decref(doc);

    doc = fix("msg-delete-deleted");
    ck_assert_int_eq(nats_msg_delete_parse(doc, "del", &e), 1);
    json_decref(doc);
    doc = fix("msg-delete-none");
    ck_assert_int_eq(nats_msg_delete_parse(doc, "del", &e), 1);
    json_decref(doc);
    doc = json_doc("{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\","
                   "\"success\":true}");
    ck_assert_int_eq(nats_msg_delete_parse(doc, "del", &e), 0);
    json_decref(doc);
    doc = json_doc("{\"error\":{\"code\":403,\"err_code\":10076,\"description\":\"message "
                   "delete not permitted\"}}");
    check_failed(nats_msg_delete_parse(doc, "del", &e), &e, ERR_AUTH,
                 "del: message delete not permitted (code 403, err_code 10076)");
    json_decref(doc);
    doc = json_doc("{\"message\":{\"subject\":\"a\",\"seq\":1,\"data\":\"!!!\"}}");
    check_failed(nats_msg_get_parse(doc, "get", &m, &e), &e, ERR_PROTOCOL,
                 "get: $.message.data: want base64");
    json_decref(doc);
}
END_TEST

START_TEST(test_pub_ack)
{
    struct err e;
    int dup = -1;
    size_t len;
    char *text = fixture_text("nats/pub-ack-2.9.10.json", &len);
    ck_assert_int_eq(nats_pub_ack_parse(text, len, "ORDERS", &dup, &e), 0);
    ck_assert_int_eq(dup, 0);
    check_failed(nats_pub_ack_parse(text, len, "INVOICES", &dup, &e), &e, ERR_QUERY,
                 "the subject is now stored by stream \"ORDERS\", not \"INVOICES\": the copy "
                 "went there");
    free(text);
    text = fixture_text("nats/pub-ack-duplicate-2.9.10.json", &len);
    ck_assert_int_eq(nats_pub_ack_parse(text, len, "ORDERS", &dup, &e), 0);
    ck_assert_int_eq(dup, 1);
    free(text);
    static const char err[] = "{\"error\":{\"code\":503,\"err_code\":10077,\"description\":"
                              "\"maximum messages exceeded\"}}";
    check_failed(nats_pub_ack_parse(err, strlen(err), "ORDERS", &dup, &e), &e, ERR_QUERY,
                 "the publish ack: maximum messages exceeded (code 503, err_code 10077)");
}
END_TEST

START_TEST(test_names_and_stamps)
{
    char *id = nats_replay_msg_id("ORDERS", 42);
    ck_assert_str_eq(id, "qrel-replay:ORDERS:42");
    free(id);
    ck_assert_str_eq(nats_dlq_stream_name("SHOP/ORDERS"), "ORDERS");
    ck_assert_str_eq(nats_dlq_stream_name("ORDERS"), "ORDERS");
    ck_assert_int_eq(nats_dlq_replays(NULL), 0);
    ck_assert_int_eq(nats_dlq_replays("3"), 3);
    ck_assert_int_eq(nats_dlq_replays(""), -1);
    ck_assert_int_eq(nats_dlq_replays("2x"), -1);
    ck_assert_int_eq(nats_dlq_replays("1234567890123456789"), -1);
}
END_TEST

#define SRC "sources:\n  - name: ev\n    kind: nats\n    url: http://h:8222\n"

static const struct check_case bad_configs[] = {
    {SRC "    nats_url: http://h:4222\n",
     "x.yml:5:15: nats_url: want nats://HOST:PORT or tls://HOST:PORT (the client port, like "
     "nats://127.0.0.1:4222)"},
    {SRC "    nats_url: nats://u:p@h:4222\n",
     "x.yml:5:15: nats_url: credentials in the URL are refused: use nats_username with "
     "nats_password_file, nats_token_file or nats_creds_file"},
    {SRC "    nats_url: nats://h:4222\n    nats_username: q\n",
     "x.yml:6:20: nats_username: want nats_username and nats_password_file (or "
     "nats_password_env) together"},
    {SRC "    nats_url: nats://h:4222\n    nats_username: q\n    nats_password_env: HOME\n"
         "    nats_creds_file: /nonexistent.creds\n",
     "x.yml:2:5: nats_username, nats_token_file and nats_creds_file: want one way to log in at "
     "most"},
    {SRC "    nats_creds_file: /nonexistent.creds\n",
     "x.yml:2:5: nats_url: want it with the nats_* login keys"},
};

START_TEST(test_config_bad)
{
    struct err e;
    check_refused(configure_kind_text(&nats_kind, bad_configs[_i].in, &e), &e,
                  bad_configs[_i].want);
}
END_TEST

START_TEST(test_config_good)
{
    struct err e;
    ck_assert_msg(configure_kind_text(&nats_kind,
                                      SRC "    nats_url: tls://nats.example:4222\n"
                                          "    nats_username: qrel\n"
                                          "    nats_password_env: HOME\n",
                                      &e) == 0,
                  "%s", e.msg);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_message_and_headers, 0}, {test_advisory, 0},
        {test_api_errors, 0},          {test_pub_ack, 0},
        {test_names_and_stamps, 0},    {test_config_bad, CHECK_ROWS(bad_configs)},
        {test_config_good, 0},
    };
    return check_run_tests("nats_dlq", tests, CHECK_ROWS(tests), 0);
}
