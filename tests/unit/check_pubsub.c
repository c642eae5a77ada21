/* check_pubsub.c: unit tests for collectors/pubsub/pubsub.c and collectors/pubsub/auth.c.
 *
 * A subscription recorded from Google's Pub/Sub emulator 0.8.20 (tests/fixtures/pubsub) and
 * hand-made variants feed the subscription parser; timeSeries.list pages in the documented shape
 * (int64Value as a string, doubleValue as a number, newest point first) feed the monitoring
 * parser; errors must name the JSON path. The JWT grant is checked with a key the test makes:
 * its header and claims are decoded and its signature verified with OpenSSL. configure() is
 * tested with exact messages, which must never quote the key. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "metrics.h"
#include "pubsub/pubsub.h"
#include "pubsub/auth.h"
#include "alloc.h"
#include "buf.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"
#include "support/json_doc.h"

extern const struct collector_kind pubsub_kind;

START_TEST(test_recorded_subscription)
{
    json_t *d = json_doc_fixture("pubsub/subscription-emulator-0.8.20.json");
    struct pubsub_sub s;
    struct err e;
    ck_assert_msg(pubsub_sub_parse(d, "$", &s, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(s.id, "orders-mailer");
    ck_assert_str_eq(s.topic, "projects/shop/topics/orders");
    ck_assert_double_eq(s.ack_deadline, 30);
    ck_assert_double_eq(s.retention, 604800);
    ck_assert_str_eq(s.dead_letter_topic, "projects/shop/topics/orders-dlq");
    ck_assert_int_eq(s.max_delivery_attempts, 5);
    ck_assert_int_eq(s.has_retry_policy, 1);
    ck_assert_double_eq(s.min_backoff, 10);
    ck_assert_double_eq(s.max_backoff, 60);
    ck_assert_int_eq(s.exactly_once, 1);
    ck_assert_int_eq(s.ordered, 0);
    /* 5 × 30 s + backoffs 10, 20, 40, 60 (capped) */
    ck_assert_double_eq(pubsub_retry_horizon(&s), 280);

    struct metric_set *m = metric_set_new("gcp", "pubsub");
    pubsub_sub_series(&s, m);
    ck_assert_ptr_null(metric_set_error(m));
    ck_assert_uint_eq(metric_set_len(m), 5);
    struct metric_sample x;
    metric_set_get(m, 3, &x);
    ck_assert_str_eq(x.family->name, "qrel_queue_retention_seconds");
    ck_assert_double_eq(x.value, 604800);
    metric_set_get(m, 4, &x);
    ck_assert_str_eq(x.family->name, "qrel_queue_info");
    ck_assert_uint_eq(x.nlabels, 6);
    ck_assert_str_eq(x.labels[3].value, "orders-dlq");
    ck_assert_str_eq(x.labels[4].value, "true");
    ck_assert_str_eq(x.labels[5].value, "false");
    metric_set_free(m);
    json_decref(d);
}
END_TEST

START_TEST(test_defaults_and_horizons)
{
    struct pubsub_sub s;
    struct err e;
    json_t *d = json_doc("{\"name\": \"projects/p/subscriptions/plain\"}");
    ck_assert_msg(pubsub_sub_parse(d, "$", &s, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(s.ack_deadline, 10);
    ck_assert_double_eq(s.retention, 7 * 86400);
    ck_assert_ptr_null(s.dead_letter_topic);
    ck_assert_double_eq(pubsub_retry_horizon(&s), 7 * 86400); /* retried until it expires */
    struct metric_set *m = metric_set_new("gcp", "pubsub");
    pubsub_sub_series(&s, m);
    ck_assert_uint_eq(metric_set_len(m), 4); /* no qrel_max_deliveries */
    metric_set_free(m);
    json_decref(d);

    /* maxDeliveryAttempts left out means 5; no retry policy: immediate redelivery. */
    d = json_doc("{\"name\": \"s\", \"ackDeadlineSeconds\": 20, \"deadLetterPolicy\": "
                 "{\"deadLetterTopic\": \"projects/p/topics/d\"}}");
    ck_assert_msg(pubsub_sub_parse(d, "$", &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.max_delivery_attempts, 5);
    ck_assert_double_eq(pubsub_retry_horizon(&s), 100);
    json_decref(d);

    /* A retry policy without values takes 10 s and 600 s; the retention caps the horizon. */
    d = json_doc("{\"name\": \"s\", \"ackDeadlineSeconds\": 600, \"messageRetentionDuration\": "
                 "\"1800s\", \"retryPolicy\": {}, \"deadLetterPolicy\": {\"deadLetterTopic\": "
                 "\"projects/p/topics/d\", \"maxDeliveryAttempts\": 100}}");
    ck_assert_msg(pubsub_sub_parse(d, "$", &s, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(s.min_backoff, 10);
    ck_assert_double_eq(s.max_backoff, 600);
    ck_assert_double_eq(pubsub_retry_horizon(&s), 1800);
    json_decref(d);

    ck_assert_double_eq(pubsub_duration("3.5s"), 3.5);
    ck_assert_double_eq(pubsub_duration("0s"), 0);
    ck_assert_double_eq(pubsub_duration("10"), -1);
    ck_assert_double_eq(pubsub_duration("-1s"), -1);
    ck_assert_double_eq(pubsub_duration("1m"), -1);
}
END_TEST

/* A topic's retention is a floor under its subscriptions': an unacknowledged message stays at
 * least that long, which lengthens a horizon that the retention capped. */
START_TEST(test_topic_retention)
{
    struct err e;
    double keep = -1;
    json_t *d = json_doc_fixture("pubsub/topic-emulator-0.8.20.json");
    ck_assert_msg(pubsub_topic_retention(d, "$", &keep, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(keep, 172800);
    json_decref(d);
    d = json_doc("{\"name\": \"projects/p/topics/plain\"}");
    ck_assert_msg(pubsub_topic_retention(d, "$", &keep, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(keep, 0); /* none: its subscriptions decide */
    json_decref(d);
    d = json_doc("{\"name\": \"t\", \"messageRetentionDuration\": 600}");
    ck_assert_int_eq(pubsub_topic_retention(d, "$", &keep, &e), -1);
    ck_assert_str_eq(e.msg, "$.messageRetentionDuration: want a string, got a number");
    json_decref(d);
    d = json_doc("[]");
    ck_assert_int_eq(pubsub_topic_retention(d, "$", &keep, &e), -1);
    json_decref(d);

    struct pubsub_sub s;
    d = json_doc("{\"name\": \"s\", \"ackDeadlineSeconds\": 600, \"messageRetentionDuration\": "
                 "\"1800s\", \"deadLetterPolicy\": {\"deadLetterTopic\": \"projects/p/topics/d\", "
                 "\"maxDeliveryAttempts\": 5}}");
    ck_assert_msg(pubsub_sub_parse(d, "$", &s, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(s.topic_retention, 0);
    ck_assert_double_eq(pubsub_sub_retention(&s), 1800);
    ck_assert_double_eq(pubsub_retry_horizon(&s), 1800);
    s.topic_retention = 600; /* shorter than the subscription's: no change */
    ck_assert_double_eq(pubsub_sub_retention(&s), 1800);
    s.topic_retention = 2 * 86400;
    ck_assert_double_eq(pubsub_sub_retention(&s), 2 * 86400);
    ck_assert_double_eq(pubsub_retry_horizon(&s), 5 * 600);
    /* A topic that could not be read: no retention series rather than the subscription's alone. */
    struct metric_set *m = metric_set_new("gcp", "pubsub");
    pubsub_sub_series(&s, m);
    size_t with = metric_set_len(m);
    metric_set_free(m);
    s.topic_unreadable = 1;
    m = metric_set_new("gcp", "pubsub");
    pubsub_sub_series(&s, m);
    ck_assert_uint_eq(metric_set_len(m), with - 1);
    for (size_t i = 0; i < metric_set_len(m); i++) {
        struct metric_sample x;
        metric_set_get(m, i, &x);
        ck_assert_str_ne(x.family->name, "qrel_queue_retention_seconds");
    }
    metric_set_free(m);
    json_decref(d);

    /* A dead letter lives as long as the longest-keeping subscription of the dead-letter topic
     * keeps it, at least the topic's retention; with neither, nothing keeps it. */
    const double subs[] = {3600, 14 * 86400.0, 86400};
    ck_assert_double_eq(pubsub_dead_letter_retention(0, subs, 3), 14 * 86400);
    ck_assert_double_eq(pubsub_dead_letter_retention(31 * 86400.0, subs, 3), 31 * 86400);
    ck_assert_double_eq(pubsub_dead_letter_retention(7200, NULL, 0), 7200);
    ck_assert_double_eq(pubsub_dead_letter_retention(0, NULL, 0), 0);
}
END_TEST

static const struct check_case bad_subs[] = {
    {"[]", "$: want an object, got a list"},
    {"{\"topic\": \"t\"}", "$.name: missing"},
    {"{\"name\": \"s\", \"ackDeadlineSeconds\": \"ten\"}",
     "$.ackDeadlineSeconds: want a number, got the string \"ten\""},
    {"{\"name\": \"s\", \"messageRetentionDuration\": \"7d\"}",
     "$.messageRetentionDuration: want a duration like \"10s\", got \"7d\""},
    {"{\"name\": \"s\", \"deadLetterPolicy\": {\"maxDeliveryAttempts\": [5]}}",
     "$.deadLetterPolicy.maxDeliveryAttempts: want a number, got a list"},
    {"{\"name\": \"s\", \"retryPolicy\": {\"minimumBackoff\": 10}}",
     "$.retryPolicy.minimumBackoff: want a string, got a number"},
    {"{\"name\": \"s\", \"enableExactlyOnceDelivery\": \"yes\"}",
     "$.enableExactlyOnceDelivery: want a boolean, got a string"},
};

START_TEST(test_bad_subscriptions)
{
    json_t *d = json_doc(bad_subs[_i].in);
    struct pubsub_sub s;
    struct err e;
    err_clear(&e);
    check_failed(pubsub_sub_parse(d, "$", &s, &e), &e, ERR_PROTOCOL, bad_subs[_i].want);
    json_decref(d);
}
END_TEST

#define SERIES(metric, sub, points)                                                                \
    "{\"metric\": {\"type\": \"pubsub.googleapis.com/subscription/" metric "\"}, "                 \
    "\"resource\": {\"type\": \"pubsub_subscription\", \"labels\": {\"subscription_id\": \"" sub   \
    "\"}}, \"points\": [" points "]}"
#define POINT(end, value)                                                                          \
    "{\"interval\": {\"startTime\": \"2026-11-29T10:00:00Z\", \"endTime\": \"" end "\"}, "         \
    "\"value\": " value "}"

START_TEST(test_monitoring_page)
{
    json_t *d = json_doc("{\"timeSeries\": [" SERIES(
        "num_undelivered_messages", "orders",
        POINT("2026-11-29T10:02:00Z", "{\"int64Value\": \"42\"}") ", " POINT(
            "2026-11-29T10:01:00Z",
            "{\"int64Value\": \"40\"}")) ", " SERIES("oldest_unacked_message_age", "orders",
                                                     POINT(
                                                         "2026-11-29T10:02:00Z",
                                                         "{\"doubleValue\": 12.5}")) ", " SERIES("a"
                                                                                                 "c"
                                                                                                 "k"
                                                                                                 "_"
                                                                                                 "m"
                                                                                                 "e"
                                                                                                 "s"
                                                                                                 "s"
                                                                                                 "a"
                                                                                                 "g"
                                                                                                 "e"
                                                                                                 "_"
                                                                                                 "c"
                                                                                                 "o"
                                                                                                 "u"
                                                                                                 "n"
                                                                                                 "t",
                                                                                                 "o"
                                                                                                 "r"
                                                                                                 "d"
                                                                                                 "e"
                                                                                                 "r"
                                                                                                 "s",
                                                                                                 POINT(
                                                                                                     "2026-11-29T10:02:00Z",
                                                                                                     "{\"int64Value\": \"1\"}")) "], "
                                                                                                                                 "\"nextPageToken\": \"abc\"}");
    struct pubsub_monitoring m = {0};
    struct err e;
    ck_assert_msg(pubsub_monitoring_parse(d, &m, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(m.n, 2); /* ack_message_count is not read */
    ck_assert_str_eq(m.next_page_token, "abc");
    const struct pubsub_series *s = pubsub_monitoring_find(&m, "orders", PUBSUB_UNDELIVERED);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->n, 2);
    ck_assert_double_eq(s->points[0].value, 42);
    double t;
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T10:02:00Z", &t), 0);
    ck_assert_double_eq(s->points[0].end, t);
    s = pubsub_monitoring_find(&m, "orders", PUBSUB_OLDEST_UNACKED);
    ck_assert_double_eq(s->points[0].value, 12.5);
    ck_assert_ptr_null(pubsub_monitoring_find(&m, "orders", PUBSUB_EXPIRED_ACKS));
    ck_assert_ptr_null(pubsub_monitoring_find(&m, "other", PUBSUB_UNDELIVERED));
    json_decref(d);
    /* An empty page (no data in the window) ends the paging. */
    d = json_doc("{}");
    ck_assert_int_eq(pubsub_monitoring_parse(d, &m, &e), 0);
    ck_assert_ptr_null(m.next_page_token);
    ck_assert_uint_eq(m.n, 2);
    pubsub_monitoring_free(&m);
    json_decref(d);
}
END_TEST

static const struct check_case bad_pages[] = {
    {"{\"timeSeries\": {}}", "$.timeSeries: want a list, got an object"},
    {"{\"timeSeries\": [{\"metric\": {}}]}", "$.timeSeries[0].metric.type: missing"},
    {"{\"timeSeries\": [{\"metric\": {\"type\": "
     "\"pubsub.googleapis.com/subscription/num_undelivered_messages\"}, \"resource\": "
     "{\"labels\": {}}, \"points\": []}]}",
     "$.timeSeries[0].resource.labels.subscription_id: missing"},
    {"{\"timeSeries\": [" SERIES("num_undelivered_messages", "s",
                                 POINT("2026-11-29T10:02:00Z", "{\"int64Value\": \"many\"}")) "]}",
     "$.timeSeries[0].points[0].value.int64Value: want a number, got the string \"many\""},
    {"{\"timeSeries\": [" SERIES("num_undelivered_messages", "s",
                                 POINT("yesterday", "{\"int64Value\": \"1\"}")) "]}",
     "$.timeSeries[0].points[0].interval.endTime: want an RFC 3339 time, got \"yesterday\""},
    {"{\"timeSeries\": [" SERIES("num_undelivered_messages", "s",
                                 POINT("2026-11-29T10:02:00Z", "{\"boolValue\": true}")) "]}",
     "$.timeSeries[0].points[0].value: want int64Value or doubleValue"},
};

START_TEST(test_bad_pages)
{
    json_t *d = json_doc(bad_pages[_i].in);
    struct pubsub_monitoring m = {0};
    struct err e;
    err_clear(&e);
    check_failed(pubsub_monitoring_parse(d, &m, &e), &e, ERR_PROTOCOL, bad_pages[_i].want);
    pubsub_monitoring_free(&m);
    json_decref(d);
}
END_TEST

/* ---- the JWT grant ---- */

/* The PEM of the test key the build made (tests/CMakeLists.txt): RSA, or EC to be refused. */
static char *new_key_pem(int rsa)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", QREL_TEST_KEYS, rsa ? "rsa.pem" : "ec.pem");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    struct buf b;
    buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(b.data ? b.data : "", "-----BEGIN PRIVATE KEY-----"));
    return b.data;
}

static unsigned char *b64url_decode(const char *s, size_t n, size_t *out_len)
{
    struct buf b;
    buf_init(&b);
    buf_append(&b, s, n);
    for (size_t i = 0; i < b.len; i++)
        b.data[i] = b.data[i] == '-' ? '+' : b.data[i] == '_' ? '/' : b.data[i];
    while (b.len % 4)
        buf_putc(&b, '=');
    unsigned char *out = xmalloc(b.len);
    int len = EVP_DecodeBlock(out, (unsigned char *)b.data, (int)b.len);
    ck_assert_int_ge(len, 0);
    size_t pad = 0;
    for (size_t i = b.len; i > 0 && b.data[i - 1] == '='; i--)
        pad++;
    *out_len = (size_t)len - pad;
    buf_free(&b);
    return out;
}

START_TEST(test_base64url)
{
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *want[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        check_str_free(pubsub_base64url((const unsigned char *)in[i], strlen(in[i])), want[i]);
    }
    const unsigned char bin[] = {0xfb, 0xff, 0xbf};
    check_str_free(pubsub_base64url(bin, 3), "-_-_");
}
END_TEST

START_TEST(test_jwt_verifies)
{
    char *pem = new_key_pem(1);
    struct pubsub_key k = {.client_email = "mon@p.iam.gserviceaccount.com",
                           .private_key_id = "kid-1",
                           .token_uri = "https://oauth2.googleapis.com/token"};
    struct err e;
    char *jwt = pubsub_jwt(pem, &k, 1700000000, &e);
    ck_assert_msg(jwt != NULL, "%s", e.msg);
    char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    ck_assert_ptr_nonnull(dot2);
    size_t n;
    unsigned char *h = b64url_decode(jwt, (size_t)(dot1 - jwt), &n);
    json_t *hd = json_loadb((char *)h, n, 0, NULL);
    ck_assert_ptr_nonnull(hd);
    ck_assert_str_eq(json_string_value(json_object_get(hd, "alg")), "RS256");
    ck_assert_str_eq(json_string_value(json_object_get(hd, "kid")), "kid-1");
    unsigned char *c = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &n);
    json_t *cl = json_loadb((char *)c, n, 0, NULL);
    ck_assert_ptr_nonnull(cl);
    ck_assert_str_eq(json_string_value(json_object_get(cl, "iss")), k.client_email);
    ck_assert_str_eq(json_string_value(json_object_get(cl, "aud")), k.token_uri);
    ck_assert_str_eq(json_string_value(json_object_get(cl, "scope")), PUBSUB_SCOPES);
    ck_assert_int_eq(json_integer_value(json_object_get(cl, "iat")), 1700000000);
    ck_assert_int_eq(json_integer_value(json_object_get(cl, "exp")), 1700003600);

    /* The signature verifies with the key's public half over "header.claims". */
    size_t slen;
    unsigned char *sig = b64url_decode(dot2 + 1, strlen(dot2 + 1), &slen);
    ck_assert_uint_eq(slen, 256);
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    ck_assert_int_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    ck_assert_int_eq(EVP_DigestVerify(ctx, sig, slen, (unsigned char *)jwt, (size_t)(dot2 - jwt)),
                     1);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    BIO_free(bio);
    free(sig);
    free(h);
    free(c);
    json_decref(hd);
    json_decref(cl);
    free(jwt);

    /* Not RSA, not a key: refused without quoting it. */
    char *ec = new_key_pem(0);
    ck_assert_ptr_null(pubsub_jwt(ec, &k, 1700000000, &e));
    ck_assert_str_eq(e.msg, "$.private_key: want an RSA key (RS256)");
    ck_assert_ptr_null(pubsub_jwt("-----BEGIN PRIVATE KEY-----\nxx\n", &k, 1700000000, &e));
    ck_assert_str_eq(e.msg, "$.private_key: want a PEM private key");
    free(ec);
    free(pem);
}
END_TEST

static const struct check_case bad_keys[] = {
    {"{\"type\": \"authorized_user\"}",
     "$.type: want \"service_account\", got \"authorized_user\" (for other credentials, write "
     "an access token to token_file)"},
    {"{\"type\": \"service_account\", \"private_key\": \"k\"}", "$.client_email: missing"},
    {"{\"type\": \"service_account\", \"client_email\": \"a@b\", \"private_key\": 7}",
     "$.private_key: want a string, got a number"},
    {"{\"type\": \"service_account\", \"client_email\": \"a@b\", \"private_key\": \"k\", "
     "\"token_uri\": \"ftp://x\"}",
     "$.token_uri: want an http:// or https:// URL"},
};

START_TEST(test_bad_keys)
{
    json_t *d = json_doc(bad_keys[_i].in);
    struct pubsub_key k;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(pubsub_key_parse(d, &k, &e), -1);
    ck_assert_str_eq(e.msg, bad_keys[_i].want);
    json_decref(d);
}
END_TEST

/* ---- configuration ---- */

static int configure_text(const char *text, struct err *e)
{
    return configure_kind_text(&pubsub_kind, text, e);
}

#define SRC "sources:\n  - name: gcp\n    kind: pubsub\n"

static const struct check_case bad_configs[] = {
    {SRC "    subscriptions: [a]\n", "x.yml:2:5: project: want the Google Cloud project id"},
    {SRC "    projet: shop\n",
     "x.yml:4:5: unknown key \"projet\" in source \"gcp\" (known keys: credentials_env, "
     "credentials_file, dead_letter_subscriptions, endpoint, exclude, kind, max_response_bytes, "
     "min_interval, monitoring, "
     "monitoring_endpoint, monitoring_window, name, project, subscriptions, timeout, tls_config, "
     "token_file)"},
    {SRC "    project: a/b\n", "x.yml:4:14: project: want a project id, without \"/\""},
    {SRC "    project: p\n    subscriptions: []\n",
     "x.yml:5:20: subscriptions: want at least one name (leave subscriptions out for every "
     "subscription of the project)"},
    {SRC "    project: p\n    subscriptions: [a/b]\n",
     "x.yml:5:21: subscriptions: want a subscription id or projects/PROJECT/subscriptions/ID, "
     "got \"a/b\""},
    {SRC "    project: p\n    endpoint: localhost:8085\n",
     "x.yml:5:15: endpoint: want an http:// or https:// URL"},
    {SRC "    project: p\n    monitoring_window: 0s\n",
     "x.yml:5:24: monitoring_window: want a duration above 0"},
    {SRC "    project: p\n    credentials_file: /nonexistent/sa.json\n",
     "x.yml:5:23: credentials_file: cannot read \"/nonexistent/sa.json\": No such file or "
     "directory"},
    {SRC "    project: p\n    subscriptions: [a]\n    exclude: [\"tmp-*\"]\n",
     "x.yml:6:14: exclude: only without subscriptions (it leaves out subscriptions "
     "subscriptions.list finds)"},
    {SRC "    project: p\n    exclude: {tmp: 1}\n",
     "x.yml:5:14: exclude: want a list of strings, got a mapping"},
    {SRC "    project: p\n    exclude: [\"\"]\n",
     "x.yml:5:15: exclude: want a non-empty glob in each entry"},
    {SRC "    project: p\n    credentials_file: a\n    token_file: b\n",
     "x.yml:6:17: token_file: want either credentials_file or token_file, not both"},
};

START_TEST(test_config_bad)
{
    struct err e;
    check_refused(configure_text(bad_configs[_i].in, &e), &e, bad_configs[_i].want);
}
END_TEST

/* A key file that is not what it should be: the message names the file's key, never its text. */
START_TEST(test_config_key_files)
{
    char dir[] = "/tmp/check_pubsub.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], text[512];
    snprintf(path, sizeof path, "%s/sa.json", dir);
    const char *bodies[] = {
        "not json, secret-material-123\n",
        "{\"type\": \"service_account\", \"client_email\": \"a@b\", "
        "\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nsecret-material-123\"}"};
    const char *want[] = {"x.yml:5:23: credentials: want a service-account key (JSON) in the "
                          "file, it is not JSON",
                          "x.yml:5:23: credentials: $.private_key: want a PEM private key"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(bodies[i], f);
        fclose(f);
        snprintf(text, sizeof text, SRC "    project: p\n    credentials_file: %s\n", path);
        struct err e;
        ck_assert_int_eq(configure_text(text, &e), -1);
        ck_assert_str_eq(e.msg, want[i]);
        ck_assert_ptr_null(strstr(e.msg, "secret-material"));
    }
    /* A good one. */
    char *pem = new_key_pem(1);
    json_t *key = json_pack("{s:s, s:s, s:s}", "type", "service_account", "client_email",
                            "a@b.iam.gserviceaccount.com", "private_key", pem);
    ck_assert_int_eq(json_dump_file(key, path, 0), 0);
    json_decref(key);
    free(pem);
    snprintf(text, sizeof text,
             SRC "    project: p\n    credentials_file: %s\n    monitoring: true\n"
                 "    subscriptions: [a, projects/q/subscriptions/b]\n",
             path);
    struct err e;
    ck_assert_msg(configure_text(text, &e) == 0, "%s", e.msg);
    unlink(path);
    rmdir(dir);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *pubsub_suite(void)
{
    Suite *s = suite_create("pubsub");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_recorded_subscription);
    tcase_add_test(tc, test_defaults_and_horizons);
    tcase_add_test(tc, test_topic_retention);
    tcase_add_loop_test(tc, test_bad_subscriptions, 0, N(bad_subs));
    tcase_add_test(tc, test_monitoring_page);
    tcase_add_loop_test(tc, test_bad_pages, 0, N(bad_pages));
    tcase_add_test(tc, test_base64url);
    tcase_add_test(tc, test_jwt_verifies);
    tcase_add_loop_test(tc, test_bad_keys, 0, N(bad_keys));
    tcase_add_loop_test(tc, test_config_bad, 0, N(bad_configs));
    tcase_add_test(tc, test_config_key_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(pubsub_suite(), CK_ENV);
}
