/* check_sqs.c: unit tests for collectors/sqs/parse.c, collectors/sqs/cloudwatch.c and sqs.c's
 * configure().
 *
 * The parsers are fed answers recorded from fauxqs 2.4.1 (which echoes RedrivePolicy as it was
 * set, maxReceiveCount as a string) and variants in AWS's documented shapes (a number), plus
 * what a server should never send, where the message must name the queue and the field.
 * configure() is tested through cfg_parse_string with exact messages, because they are what a
 * user reads. Talking to a server is left to tests/integration/sqs.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "config.h"
#include "sqs/sqs.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"
#include "support/json_doc.h"

extern const struct collector_kind sqs_kind;

/* ---- RedrivePolicy and ARNs ---- */

/* Policies that parse: as fauxqs (and SQS) echo one set with "maxReceiveCount":"3", and in
 * AWS's documented shape (a number), in another partition. */
static const struct {
    const char *policy, *queue;
    double count;
    const char *dlq_name, *dlq_account, *dlq_arn;
} policies[] = {
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:orders-dlq\","
     "\"maxReceiveCount\":\"3\"}",
     "orders", 3, "orders-dlq", "000000000000", "arn:aws:sqs:us-east-1:000000000000:orders-dlq"},
    {"{\"maxReceiveCount\": 5, \"deadLetterTargetArn\": "
     "\"arn:aws-cn:sqs:cn-north-1:123456789012:jobs-dlq.fifo\"}",
     "jobs.fifo", 5, "jobs-dlq.fifo", "123456789012",
     "arn:aws-cn:sqs:cn-north-1:123456789012:jobs-dlq.fifo"},
};

START_TEST(test_redrive)
{
    struct sqs_redrive r;
    struct err e;
    err_clear(&e);
    ck_assert_msg(sqs_parse_redrive_policy(policies[_i].policy, policies[_i].queue, &r, &e) == 0,
                  "%s", e.msg);
    ck_assert_double_eq(r.max_receive_count, policies[_i].count);
    ck_assert_str_eq(r.dlq_name, policies[_i].dlq_name);
    ck_assert_str_eq(r.dlq_account, policies[_i].dlq_account);
    ck_assert_str_eq(r.dlq_arn, policies[_i].dlq_arn);
    sqs_redrive_free(&r);
}
END_TEST

static const struct check_case bad_policies[] = {
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d\"}",
     "queue \"q\": RedrivePolicy.maxReceiveCount: missing"},
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d\",\"maxReceiveCount\":\"three\"}",
     "queue \"q\": RedrivePolicy.maxReceiveCount: want a number, got the string \"three\""},
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d\",\"maxReceiveCount\":[3]}",
     "queue \"q\": RedrivePolicy.maxReceiveCount: want a number, got a list"},
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d\",\"maxReceiveCount\":0}",
     "queue \"q\": RedrivePolicy.maxReceiveCount: want a whole number >= 1, got 0"},
    {"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d\",\"maxReceiveCount\":2.5}",
     "queue \"q\": RedrivePolicy.maxReceiveCount: want a whole number >= 1, got 2.5"},
    {"{\"maxReceiveCount\":3}", "queue \"q\": RedrivePolicy.deadLetterTargetArn: missing"},
    {"{\"deadLetterTargetArn\":\"arn:aws:sns:r:1:topic\",\"maxReceiveCount\":3}",
     "queue \"q\": RedrivePolicy.deadLetterTargetArn: want an ARN like "
     "\"arn:aws:sqs:REGION:ACCOUNT:NAME\", got \"arn:aws:sns:r:1:topic\""},
    {"[]", "queue \"q\": RedrivePolicy: want an object, got a list"},
};

START_TEST(test_redrive_bad)
{
    struct sqs_redrive r;
    struct err e;
    err_clear(&e);
    check_failed(sqs_parse_redrive_policy(bad_policies[_i].in, "q", &r, &e), &e, ERR_PROTOCOL,
                 bad_policies[_i].want);
    ck_assert_ptr_null(r.dlq_name);
}
END_TEST

START_TEST(test_redrive_not_json)
{
    struct sqs_redrive r;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(sqs_parse_redrive_policy("{\"deadLetterTargetArn\":", "q", &r, &e), -1);
    ck_assert_msg(strncmp(e.msg, "queue \"q\": RedrivePolicy: not JSON (", 36) == 0, "%s", e.msg);
}
END_TEST

static const struct {
    const char *arn;
    const char *account, *name; /* NULL: refused */
} arns[] = {
    {"arn:aws:sqs:eu-west-1:123456789012:orders", "123456789012", "orders"},
    {"arn:aws-us-gov:sqs:us-gov-west-1:1:a.fifo", "1", "a.fifo"},
    {"arn:aws:sqs:eu-west-1:123456789012:", NULL, NULL},
    {"arn:aws:sqs:eu-west-1:123456789012", NULL, NULL},
    {"arn:aws:sns:eu-west-1:123456789012:orders", NULL, NULL},
    {"arn::sqs:eu-west-1:123456789012:orders", NULL, NULL},
    {"urn:aws:sqs:eu-west-1:123456789012:orders", NULL, NULL},
    {"arn:aws:sqs:eu-west-1:123456789012:a:b", NULL, NULL},
    {"", NULL, NULL},
};

START_TEST(test_arn)
{
    char *account = NULL, *name = NULL;
    int rc = sqs_arn_parse(arns[_i].arn, &account, &name);
    if (!arns[_i].name) {
        ck_assert_msg(rc == -1, "\"%s\" accepted", arns[_i].arn);
        return;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(account, arns[_i].account);
    ck_assert_str_eq(name, arns[_i].name);
    free(account);
    free(name);
}
END_TEST

START_TEST(test_queue_name_from_url)
{
    check_str_free(
        sqs_queue_name_from_url("https://sqs.eu-west-1.amazonaws.com/123456789012/orders"),
        "orders");
    check_str_free(
        sqs_queue_name_from_url("http://sqs.us-east-1.localhost:9324/000000000000/a.fifo/"),
        "a.fifo");
    ck_assert_ptr_null(sqs_queue_name_from_url("https://sqs.eu-west-1.amazonaws.com"));
    ck_assert_ptr_null(sqs_queue_name_from_url("https://sqs.eu-west-1.amazonaws.com/"));
}
END_TEST

/* ---- GetQueueAttributes ---- */

START_TEST(test_attributes_recorded)
{
    /* fauxqs 2.4.1, GetQueueAttributes All of a queue with VisibilityTimeout 2 and a RedrivePolicy,
     * 1 ready, 2 in flight, 1 delayed (tests/fixtures/sqs/, as it came over the wire). */
    json_t *d = json_doc_fixture("sqs/get-queue-attributes-fauxqs-2.4.1.json");
    struct sqs_attrs a;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(sqs_parse_attributes(d, "orders", &a, &e), 0);
    ck_assert(a.has_ready && a.has_in_flight && a.has_delayed && a.has_visibility);
    ck_assert_double_eq(a.ready, 1);
    ck_assert_double_eq(a.in_flight, 2);
    ck_assert_double_eq(a.delayed, 1);
    ck_assert_double_eq(a.visibility_timeout, 2);
    ck_assert_double_eq(a.retention, 345600);
    ck_assert_int_eq(a.fifo, 0);
    ck_assert_str_eq(a.arn, "arn:aws:sqs:us-east-1:000000000000:orders");
    ck_assert_int_eq(a.has_redrive, 1);
    ck_assert_double_eq(a.redrive.max_receive_count, 2);
    ck_assert_str_eq(a.redrive.dlq_name, "orders-dlq");
    ck_assert_double_eq(sqs_retry_horizon(&a), 4);
    sqs_attrs_free(&a);
    json_decref(d);
}
END_TEST

START_TEST(test_attributes_fifo_and_absent)
{
    /* FIFO, no policy (removed: SQS reads it back as ""), counts left out */
    json_t *d = json_doc("{\"Attributes\":{\"FifoQueue\":\"true\",\"VisibilityTimeout\":\"10\","
                         "\"MessageRetentionPeriod\":\"600\",\"RedrivePolicy\":\"\"}}");
    struct sqs_attrs a;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(sqs_parse_attributes(d, "e.fifo", &a, &e), 0);
    ck_assert_int_eq(a.fifo, 1);
    ck_assert_int_eq(a.has_ready + a.has_in_flight + a.has_delayed, 0);
    ck_assert_int_eq(a.has_redrive, 0);
    ck_assert_ptr_null(a.arn);
    ck_assert_double_eq(sqs_retry_horizon(&a), 600); /* no policy: until the message expires */
    sqs_attrs_free(&a);
    json_decref(d);

    d = json_doc("{}"); /* SQS leaves Attributes out when it has none */
    ck_assert_int_eq(sqs_parse_attributes(d, "x", &a, &e), 0);
    ck_assert_int_eq(a.has_visibility, 0);
    ck_assert_double_eq(sqs_retry_horizon(&a), -1);
    sqs_attrs_free(&a);
    json_decref(d);
}
END_TEST

static const struct check_case bad_attrs[] = {
    {"{\"Attributes\":{\"ApproximateNumberOfMessages\":[1]}}",
     "queue \"q\": $.Attributes.ApproximateNumberOfMessages: want a number, got a list"},
    {"{\"Attributes\":{\"VisibilityTimeout\":\"-1\"}}",
     "queue \"q\": $.Attributes.VisibilityTimeout: want a number >= 0, got -1"},
    {"{\"Attributes\":{\"FifoQueue\":true}}",
     "queue \"q\": $.Attributes.FifoQueue: want a string, got a boolean"},
    {"{\"Attributes\":[]}", "queue \"q\": $.Attributes: want an object, got a list"},
    {"[]", "queue \"q\": $: want an object, got a list"},
    {"{\"Attributes\":{\"RedrivePolicy\":\"{\\\"maxReceiveCount\\\":1}\"}}",
     "queue \"q\": RedrivePolicy.deadLetterTargetArn: missing"},
};

START_TEST(test_attributes_bad)
{
    json_t *d = json_doc(bad_attrs[_i].in);
    struct sqs_attrs a;
    struct err e;
    err_clear(&e);
    check_failed(sqs_parse_attributes(d, "q", &a, &e), &e, ERR_PROTOCOL, bad_attrs[_i].want);
    json_decref(d);
}
END_TEST

START_TEST(test_retry_horizon)
{
    struct sqs_attrs a;
    memset(&a, 0, sizeof a);
    a.has_redrive = 1;
    a.redrive.max_receive_count = 3;
    a.has_visibility = 1;
    a.visibility_timeout = 45;
    a.delay_seconds = 5;
    ck_assert_double_eq(sqs_retry_horizon(&a), 140); /* 5 + 3 x 45 */
    a.has_retention = 1;
    a.retention = 100;
    ck_assert_double_eq(sqs_retry_horizon(&a), 100); /* a message expires first */
    a.has_visibility = 0;
    ck_assert_double_eq(sqs_retry_horizon(&a), -1);
}
END_TEST

/* ---- error answers ---- */

static const struct {
    long status;
    const char *body;
    enum err_code code;
    int missing;
    const char *msg;
} errors[] = {
    {400,
     "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\",\"message\":\"The specified queue does "
     "not exist.\"}",
     ERR_QUERY, 1, "X: the queue does not exist"},
    {403,
     "{\"__type\":\"com.amazon.coral.service#SignatureDoesNotMatch\",\"message\":\"The request "
     "signature we calculated does not match the signature you provided.\"}",
     ERR_AUTH, 0,
     "X: HTTP 403 SignatureDoesNotMatch (the credentials were refused or lack a permission): The "
     "request signature we calculated does not match the signature you provided."},
    {400,
     "{\"__type\":\"com.amazon.coral.service#UnrecognizedClientException\",\"message\":\"The "
     "security token included in the request is invalid.\"}",
     ERR_AUTH, 0,
     "X: HTTP 400 UnrecognizedClientException (the credentials were refused or lack a "
     "permission): The security token included in the request is invalid."},
    {400, "{\"__type\":\"AccessDenied\"}", ERR_AUTH, 0,
     "X: HTTP 400 AccessDenied (the credentials were refused or lack a permission)"},
    {400, "{\"__type\":\"com.amazonaws.sqs#RequestThrottled\",\"message\":\"slow down\"}",
     ERR_QUERY, 0, "X: HTTP 400 RequestThrottled: slow down"},
    {401, "", ERR_AUTH, 0, "X: HTTP 401 (the credentials were refused or lack a permission)"},
    {502, "<html>\n<b>Bad gateway</b></html>", ERR_QUERY, 0,
     "X: HTTP 502: <html> <b>Bad gateway</b></html>"},
};

START_TEST(test_error_answers)
{
    struct err e;
    err_clear(&e);
    int missing = -1;
    ck_assert_int_eq(sqs_error_from_response(errors[_i].status, errors[_i].body,
                                             strlen(errors[_i].body), "X", &missing, &e),
                     -1);
    ck_assert_int_eq(e.code, errors[_i].code);
    ck_assert_int_eq(missing, errors[_i].missing);
    ck_assert_str_eq(e.msg, errors[_i].msg);
}
END_TEST

/* ---- CloudWatch ---- */

START_TEST(test_cw_request_body)
{
    const char *queues[] = {"orders", "orders-dlq"};
    char *body = sqs_cw_request_body(queues, 2, 1795966000.7, 1795966900.2, 60, "tok");
    json_t *d = json_doc(body);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "StartTime")), 1795966000);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "EndTime")), 1795966901);
    ck_assert_str_eq(json_string_value(json_object_get(d, "ScanBy")), "TimestampDescending");
    ck_assert_str_eq(json_string_value(json_object_get(d, "NextToken")), "tok");
    json_t *qs = json_object_get(d, "MetricDataQueries");
    ck_assert_uint_eq(json_array_size(qs), 2);
    json_t *q1 = json_array_get(qs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(q1, "Id")), "q1");
    json_t *ms = json_object_get(q1, "MetricStat");
    ck_assert_str_eq(json_string_value(json_object_get(ms, "Stat")), "Maximum");
    ck_assert_int_eq(json_integer_value(json_object_get(ms, "Period")), 60);
    json_t *m = json_object_get(ms, "Metric");
    ck_assert_str_eq(json_string_value(json_object_get(m, "Namespace")), "AWS/SQS");
    ck_assert_str_eq(json_string_value(json_object_get(m, "MetricName")),
                     "ApproximateAgeOfOldestMessage");
    json_t *dim = json_array_get(json_object_get(m, "Dimensions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(dim, "Name")), "QueueName");
    ck_assert_str_eq(json_string_value(json_object_get(dim, "Value")), "orders-dlq");
    json_decref(d);
    free(body);
}
END_TEST

START_TEST(test_cw_parse)
{
    /* q0: two data, newest first; q1: none; a second page adds an older datum for q0 */
    json_t *d = json_doc("{\"MetricDataResults\":[{\"Id\":\"q0\",\"Label\":\"x\",\"StatusCode\":"
                         "\"Complete\",\"Timestamps\":[1795966860,1795966800],\"Values\":[75,70]},"
                         "{\"Id\":\"q1\",\"Timestamps\":[],\"Values\":[]}],\"NextToken\":\"n2\","
                         "\"Messages\":[]}");
    struct sqs_cw_datum out[2];
    memset(out, 0, sizeof out);
    char *next = NULL;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(sqs_cw_parse(d, 2, out, &next, &e), 0);
    check_str_free(next, "n2");
    json_decref(d);
    ck_assert_int_eq(out[0].found, 1);
    ck_assert_double_eq(out[0].value, 75);
    ck_assert_double_eq(out[0].timestamp, 1795966860);
    ck_assert_int_eq(out[1].found, 0);
    d = json_doc(
        "{\"MetricDataResults\":[{\"Id\":\"q0\",\"Timestamps\":[1795966740],\"Values\":[9]}]}");
    ck_assert_int_eq(sqs_cw_parse(d, 2, out, &next, &e), 0);
    ck_assert_ptr_null(next);
    ck_assert_double_eq(out[0].value, 75); /* the newer datum stays */
    json_decref(d);
}
END_TEST

static const struct check_case bad_cw[] = {
    {"{}", "$.MetricDataResults: missing"},
    {"{\"MetricDataResults\":[{\"Id\":\"q7\"}]}",
     "$.MetricDataResults[0].Id: \"q7\" is not one of the queries sent"},
    {"{\"MetricDataResults\":[{\"Id\":\"q01\"}]}",
     "$.MetricDataResults[0].Id: \"q01\" is not one of the queries sent"},
    {"{\"MetricDataResults\":[{\"Id\":\"q0\",\"Timestamps\":[1],\"Values\":[]}]}",
     "$.MetricDataResults[0]: 1 Timestamps but 0 Values (want one value per timestamp)"},
    {"{\"MetricDataResults\":[{\"Id\":\"q0\",\"Timestamps\":[\"2026-11-29T15:00:00Z\"],"
     "\"Values\":[1]}]}",
     "$.MetricDataResults[0]: Timestamps[0] and Values[0]: want epoch seconds and a number, got "
     "a string and a number"},
};

START_TEST(test_cw_parse_bad)
{
    json_t *d = json_doc(bad_cw[_i].in);
    struct sqs_cw_datum out[2];
    memset(out, 0, sizeof out);
    char *next = NULL;
    struct err e;
    err_clear(&e);
    check_failed(sqs_cw_parse(d, 2, out, &next, &e), &e, ERR_PROTOCOL, bad_cw[_i].want);
    json_decref(d);
}
END_TEST

/* ---- configure() ---- */

/* Configures the first source of text; returns configure's result, the message in e. */
static int configure_text(const char *text, struct err *e)
{
    return configure_kind_text(&sqs_kind, text, e);
}

static void clear_aws_env(void)
{
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_REGION");
    unsetenv("AWS_DEFAULT_REGION");
}

#define HEAD "sources:\n  - name: aws\n    kind: sqs\n"

/* want: the error, NULL where the configuration is accepted */
static const struct check_case configs[] = {
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: [orders, \"https://sqs.eu-west-1.amazonaws.com/1/billing\"]\n"
          "    queue_name_prefix: jobs\n    cloudwatch: true\n    cloudwatch_lookback: 5m\n",
     NULL},
    {HEAD "    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n",
     "x.yml:2:5: missing region (or the environment variable AWS_REGION)"},
    {HEAD "    region: EU West\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n",
     "x.yml:4:13: region: want a region name like \"eu-west-1\", got \"EU West\""},
    {HEAD "    region: eu-west-1\n",
     "x.yml:2:5: missing AWS credentials: set access_key_id (or access_key_id_file / _env) and "
     "secret_access_key_file (or secret_access_key_env), or the environment variables "
     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_UNSET\n",
     "x.yml:6:28: secret_access_key_env: environment variable \"T_UNSET\" is not set"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: [a, a]\n",
     "x.yml:7:17: queues: \"a\" is listed twice"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: [\"1/orders\"]\n",
     "x.yml:7:14: queues: want a queue name (up to 80 letters, digits, '-' and '_', \".fifo\" at "
     "the end) or an https:// queue URL, got \"1/orders\""},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: [\"https://sqs.eu-west-1.amazonaws.com/\"]\n",
     "x.yml:7:14: queues: want a queue URL that ends in the queue's name"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: []\n",
     "x.yml:7:13: queues: want at least one queue name or URL (leave queues out for every "
     "queue)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    endpoint: \"http://user:pw@127.0.0.1:9324\"\n",
     "x.yml:7:15: endpoint: credentials do not belong in the URL; use username and "
     "password_file"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    cloudwatch_lookback: 30s\n",
     "x.yml:7:26: cloudwatch_lookback: want at least 1m (SQS publishes one datum a minute)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queue_prefix: x\n",
     "x.yml:7:5: unknown key \"queue_prefix\" in source \"aws\" (known keys: access_key_id, "
     "access_key_id_env, access_key_id_file, cloudwatch, cloudwatch_endpoint, cloudwatch_lookback, "
     "dlq_visibility_timeout, endpoint, exclude, kind, max_queues, max_response_bytes, "
     "min_interval, name, "
     "queue_name_prefix, "
     "queues, region, secret_access_key_env, secret_access_key_file, session_token_env, "
     "session_token_file, timeout, tls_config)"},
    /* a misspelt key is reported, with the known keys, before the region it leaves missing */
    {HEAD "    regoin: eu-west-1\n",
     "x.yml:4:5: unknown key \"regoin\" in source \"aws\" (known keys: access_key_id, "
     "access_key_id_env, access_key_id_file, cloudwatch, cloudwatch_endpoint, cloudwatch_lookback, "
     "dlq_visibility_timeout, endpoint, exclude, kind, max_queues, max_response_bytes, "
     "min_interval, name, "
     "queue_name_prefix, "
     "queues, region, secret_access_key_env, secret_access_key_file, session_token_env, "
     "session_token_file, timeout, tls_config)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    dlq_visibility_timeout: 500ms\n",
     "x.yml:7:29: dlq_visibility_timeout: want 1s to 12h (SQS's VisibilityTimeout range)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    dlq_visibility_timeout: 13h\n",
     "x.yml:7:29: dlq_visibility_timeout: want 1s to 12h (SQS's VisibilityTimeout range)"},
    /* exclude: a list of globs of the queues ListQueues finds */
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queue_name_prefix: orders\n    queues: [orders-tmp-1]\n    exclude: [\"*-tmp-*\"]\n",
     NULL},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    exclude: [\"*-tmp-*\", \"scratch?\"]\n",
     NULL},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    queues: [orders]\n    exclude: [\"*-tmp-*\"]\n",
     "x.yml:8:14: exclude: only with queue_name_prefix or without queues (it leaves out queues "
     "ListQueues finds, never one listed in queues)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    exclude: {orders: 1}\n",
     "x.yml:7:14: exclude: want a list of strings, got a mapping"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    exclude: [tmp, \"reply.*\"]\n",
     "x.yml:7:20: exclude: \"reply.*\" looks like a regular expression (it has \".*\"): exclude "
     "takes globs (*, ?, [...]; \"[.]\" for a literal dot before a star)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    secret_access_key_env: T_SECRET\n"
          "    exclude: []\n",
     "x.yml:7:14: exclude: want at least one glob (leave exclude out to exclude nothing)"},
    {HEAD "    region: eu-west-1\n    access_key_id: AKID\n    access_key_id_env: T_SECRET\n"
          "    secret_access_key_env: T_SECRET\n",
     "x.yml:5:20: access_key_id: want one of access_key_id, access_key_id_file and "
     "access_key_id_env"},
};

START_TEST(test_configure)
{
    clear_aws_env();
    setenv("T_SECRET", "very-secret-value", 1);
    struct err e;
    int rc = configure_text(configs[_i].in, &e);
    if (!configs[_i].want) {
        ck_assert_msg(rc == 0, "%s", e.msg);
        return;
    }
    check_refused(rc, &e, configs[_i].want);
    ck_assert_ptr_null(strstr(e.msg, "very-secret-value"));
}
END_TEST

START_TEST(test_configure_env_fallbacks)
{
    clear_aws_env();
    struct err e;
    /* everything from the standard variables, the region too */
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    setenv("AWS_SESSION_TOKEN", "env-token", 1);
    setenv("AWS_DEFAULT_REGION", "ap-south-1", 1);
    ck_assert_msg(configure_text(HEAD "    queues: [a]\n", &e) == 0, "%s", e.msg);
    clear_aws_env();
    ck_assert_int_eq(configure_text(HEAD "    region: eu-west-1\n", &e), -1);
    ck_assert_msg(strstr(e.msg, "missing AWS credentials"), "%s", e.msg);
}
END_TEST

static Suite *sqs_suite(void)
{
    Suite *s = suite_create("sqs");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, test_redrive, 0, sizeof policies / sizeof policies[0]);
    tcase_add_loop_test(tc, test_redrive_bad, 0, sizeof bad_policies / sizeof bad_policies[0]);
    tcase_add_test(tc, test_redrive_not_json);
    tcase_add_loop_test(tc, test_arn, 0, sizeof arns / sizeof arns[0]);
    tcase_add_test(tc, test_queue_name_from_url);
    tcase_add_test(tc, test_attributes_recorded);
    tcase_add_test(tc, test_attributes_fifo_and_absent);
    tcase_add_loop_test(tc, test_attributes_bad, 0, sizeof bad_attrs / sizeof bad_attrs[0]);
    tcase_add_test(tc, test_retry_horizon);
    tcase_add_loop_test(tc, test_error_answers, 0, sizeof errors / sizeof errors[0]);
    suite_add_tcase(s, tc);
    TCase *cw = tcase_create("cloudwatch");
    tcase_add_test(cw, test_cw_request_body);
    tcase_add_test(cw, test_cw_parse);
    tcase_add_loop_test(cw, test_cw_parse_bad, 0, sizeof bad_cw / sizeof bad_cw[0]);
    suite_add_tcase(s, cw);
    TCase *cf = tcase_create("configure");
    tcase_add_loop_test(cf, test_configure, 0, sizeof configs / sizeof configs[0]);
    tcase_add_test(cf, test_configure_env_fallbacks);
    suite_add_tcase(s, cf);
    return s;
}

int main(void)
{
    return check_run(sqs_suite(), CK_ENV);
}
