/* check_kafka.c: unit tests for the `kafka` kind: the pure parts (collectors/kafka/calc.c),
 * configure() through cfg_parse_string with exact messages, and one collection against a port
 * nothing listens on, which must fail with reason connect before its deadline and leave no
 * librdkafka handle or thread behind (run under valgrind or ASan, this also checks the error
 * path frees everything). Talking to a broker is tests/integration/kafka.sh's job. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector.h"
#include "config.h"
#include "deadline.h"
#include "kafka/kafka.h"
#include "kafka/settings.h"
#include "metrics.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"

extern const struct collector_kind kafka_kind;

START_TEST(lag_from_offsets)
{
    int64_t first;
    struct kafka_offsets committed = {0, 10, 4};
    ck_assert_int_eq(kafka_partition_lag(&committed, &first), 6);
    ck_assert_int_eq(first, 4);
    struct kafka_offsets none = {3, 10, -1}; /* no commit: from the log start */
    ck_assert_int_eq(kafka_partition_lag(&none, &first), 7);
    ck_assert_int_eq(first, 3);
    struct kafka_offsets behind = {8, 10, 2}; /* 2..7 deleted by retention: lost, not waiting */
    ck_assert_int_eq(kafka_partition_lag(&behind, &first), 2);
    ck_assert_int_eq(first, 8);
    struct kafka_offsets caught_up = {0, 10, 10};
    ck_assert_int_eq(kafka_partition_lag(&caught_up, &first), 0);
    ck_assert_int_eq(first, -1);
    struct kafka_offsets past_end = {0, 10, 12}; /* after a truncation */
    ck_assert_int_eq(kafka_partition_lag(&past_end, &first), 0);
    struct kafka_offsets empty = {5, 5, -1};
    ck_assert_int_eq(kafka_partition_lag(&empty, &first), 0);
}
END_TEST

START_TEST(ages_names_reasons)
{
    ck_assert(kafka_age_seconds(10000, 4000) == 6.0);
    ck_assert(kafka_age_seconds(10000, 12000) == 0.0);
    check_str_free(kafka_dlq_name("{topic}.dlq", "orders"), "orders.dlq");
    check_str_free(kafka_dlq_name("dlt", "orders"), "dlt");
    check_str_free(kafka_full_regex("mail.*"), "^(mail.*)$");
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, NULL), ERR_CONNECT);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__TRANSPORT, "Connection refused"),
                     ERR_CONNECT);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__TRANSPORT,
                                    "Invalid response size 2147483647 (0..100000000): increase "
                                    "receive.message.max.bytes"),
                     ERR_LIMIT);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__AUTHENTICATION, NULL), ERR_AUTH);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, NULL), ERR_AUTH);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__TIMED_OUT, NULL), ERR_TIMEOUT);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__BAD_MSG, NULL), ERR_PROTOCOL);
    ck_assert_int_eq(kafka_err_code(RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE, NULL), ERR_QUERY);
}
END_TEST

/* configure() on a source written in YAML; returns 0 or -1 with e set. */
static int configure_yaml(struct collector *c, const char *yaml, struct err *e)
{
    memset(c, 0, sizeof *c);
    c->name = "stream";
    c->kind = &kafka_kind;
    c->timeout = 2.0;
    struct cfg_doc *doc = cfg_parse_string("qrel.yml", yaml, strlen(yaml), e);
    ck_assert_msg(doc != NULL, "%s", e->msg);
    int rc = collector_configure(c, cfg_doc_root(doc), e);
    if (rc == 0)
        rc = cfg_finish(cfg_doc_root(doc), "source \"stream\"", e);
    cfg_doc_free(doc);
    return rc;
}

static void expect_config_error(const char *yaml, const char *want)
{
    struct collector c;
    struct err e;
    err_clear(&e);
    check_refused(configure_yaml(&c, yaml, &e), &e, want);
    collector_release(&c);
}

START_TEST(config_errors)
{
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g}]\n",
                        "qrel.yml:2:10: want exactly one of topics, topic_pattern and topic_regex "
                        "in each entry of groups (the topics whose lag the group is measured on)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, topics: [t], max_poll_interval: 0s}]\n",
                        "qrel.yml:2:52: max_poll_interval: want a duration above 0");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{regex: \"(\", topics: [t]}]\n",
                        "qrel.yml:2:18: regex: want a regular expression (POSIX extended): "
                        "Unmatched ( or \\(");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "security_protocol: carrier_pigeon\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:20: security_protocol: librdkafka refuses it: Invalid value "
                        "\"carrier_pigeon\" for configuration property \"security.protocol\"");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "librdkafka: {sasl.password: hunter2}\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:29: librdkafka: sasl.password: secrets cannot be given "
                        "here; use sasl_password_file or tls_config.key_password_file");
    expect_config_error("bootstrap_servers: \"user:pw@host:9092\"\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:1:20: bootstrap_servers: want host:port[,host:port...] (no "
                        "URL, no credentials)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "sasl_password_env: QREL_TEST_UNSET_VARIABLE\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:20: sasl_password_env: environment variable "
                        "\"QREL_TEST_UNSET_VARIABLE\" is not set");
}
END_TEST

/* pattern is a glob as in every kind; a value written as the regex it used to be is refused with
 * a pointer to regex, so an upgraded config fails instead of matching nothing. */
START_TEST(pattern_glob_regex)
{
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{pattern: \"mail.*\", topics: [t]}]\n",
                        "qrel.yml:2:20: pattern: \"mail.*\" looks like a regular expression (it "
                        "has \".*\"): pattern is a glob (*, ?, [...]); write regex: for a regular "
                        "expression");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{pattern: \"^mail\", topics: [t]}]\n",
                        "qrel.yml:2:20: pattern: \"^mail\" looks like a regular expression (it "
                        "has \"^\"): pattern is a glob (*, ?, [...]); write regex: for a regular "
                        "expression");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, topic_pattern: \"(a|b)\"}]\n",
                        "qrel.yml:2:35: topic_pattern: \"(a|b)\" looks like a regular expression "
                        "(it has \"(\"): topic_pattern is a glob (*, ?, [...]); write "
                        "topic_regex: for a regular expression");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{topics: [t], tpics: [u]}]\n",
                        "qrel.yml:2:24: unknown key \"tpics\" in entry 1 of groups of source "
                        "\"stream\" (known keys: dead_letter_topic, exclude, exclude_regex, "
                        "max_poll_interval, name, pattern, per_partition, regex, topic_exclude, "
                        "topic_exclude_regex, topic_pattern, topic_regex, topics)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, pattern: \"m*\", topics: [t]}]\n",
                        "qrel.yml:2:10: want exactly one of name, pattern and regex in each "
                        "entry of groups");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, topics: [t], topic_regex: \"t.*\"}]\n",
                        "qrel.yml:2:10: want exactly one of topics, topic_pattern and topic_regex "
                        "in each entry of groups (the topics whose lag the group is measured on)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, topic_regx: \"t.*\"}]\n",
                        "qrel.yml:2:20: unknown key \"topic_regx\" in group name \"g\" of source "
                        "\"stream\" (known keys: dead_letter_topic, exclude, exclude_regex, "
                        "max_poll_interval, name, pattern, per_partition, regex, topic_exclude, "
                        "topic_exclude_regex, topic_pattern, topic_regex, topics)");

    /* exclude: only where a pattern or regex finds the groups or topics */
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, exclude: [x], topics: [t]}]\n",
                        "qrel.yml:2:29: exclude: only with pattern or regex (name selects one "
                        "group)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{pattern: \"g*\", topics: [t], topic_exclude_regex: x}]\n",
                        "qrel.yml:2:60: topic_exclude_regex: only with topic_pattern or "
                        "topic_regex (topics lists the topics)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{regex: \"g.*\", exclude_regex: \"(\", topic_pattern: t}]\n",
                        "qrel.yml:2:40: exclude_regex: want a regular expression (POSIX "
                        "extended): Unmatched ( or \\(");

    /* A dead-letter topic that is its own topic: every dead letter would be delivered again. */
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "groups: [{name: g, topics: [s, t], dead_letter_topic: t}]\n",
                        "qrel.yml:2:55: dead_letter_topic: \"t\" is topic \"t\" itself (a dead "
                        "letter would be delivered again)");
    expect_config_error(
        "bootstrap_servers: 127.0.0.1:9092\n"
        "groups: [{name: g, topic_pattern: \"o*\", dead_letter_topic: \"{topic}\"}]\n",
        "qrel.yml:2:60: dead_letter_topic: \"{topic}\" is every topic of the entry "
        "itself (a dead letter would be delivered again)");

    /* what each form selects */
    struct err e;
    err_clear(&e);
    const char *y = "bootstrap_servers: 127.0.0.1:9092\n"
                    "groups:\n"
                    "  - {pattern: \"mail?r-*\", topic_pattern: \"orders[.]*\"}\n"
                    "  - {regex: \"mail(er)?\", topic_regex: \"pay.*\"}\n"
                    "  - {name: billing, topics: [t]}\n";
    struct kafka_settings set;
    struct cfg_doc *doc = cfg_parse_string("qrel.yml", y, strlen(y), &e);
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(kafka_settings_read(&set, "stream", 2.0, cfg_doc_root(doc), &e), 0);
    ck_assert_uint_eq(set.nspecs, 3);
    const struct kafka_group_spec *glob = &set.specs[0], *rx = &set.specs[1], *nm = &set.specs[2];
    ck_assert(kafka_spec_group_match(glob, "mailer-1"));
    ck_assert(!kafka_spec_group_match(glob, "mailer")); /* the glob wants the dash */
    ck_assert(!kafka_spec_group_match(glob, "xmailer-1"));
    ck_assert(kafka_spec_topic_match(glob, "orders.paid"));
    ck_assert(!kafka_spec_topic_match(glob, "orders_paid"));
    ck_assert(kafka_spec_group_match(rx, "mail"));
    ck_assert(kafka_spec_group_match(rx, "mailer"));
    ck_assert(!kafka_spec_group_match(rx, "mailers")); /* whole name */
    ck_assert(kafka_spec_topic_match(rx, "payments"));
    ck_assert(!kafka_spec_topic_match(rx, "repay"));
    ck_assert(kafka_spec_group_match(nm, "billing"));
    ck_assert(!kafka_spec_group_match(nm, "billing2"));
    ck_assert(!kafka_spec_topic_match(nm, "t")); /* a list is looked up, not matched */
    kafka_settings_free(&set);
    cfg_doc_free(doc);
}
END_TEST

/* The flat tls_* keys and max_reply_bytes of earlier releases are refused with their new names;
 * tls_config is a map like the HTTP kinds' and reaches librdkafka. */
START_TEST(renamed_keys_and_tls_config)
{
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "tls_ca_file: /etc/ca.pem\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:1: \"tls_ca_file\" is now called \"tls_config.ca_file\": the "
                        "TLS settings are a map, as for the HTTP kinds");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "tls_key_password_env: X\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:1: \"tls_key_password_env\" is now called "
                        "\"tls_config.key_password_env\": the TLS settings are a map, as for the "
                        "HTTP kinds");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "tls_verify_hostname: false\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:1: \"tls_verify_hostname\" is now called "
                        "\"tls_config.insecure_skip_verify\": the TLS settings are a map, as for "
                        "the HTTP kinds; insecure_skip_verify: true turns off the host name check "
                        "and the certificate verification");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "max_reply_bytes: 1000000\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:1: \"max_reply_bytes\" is now called \"max_response_bytes\"");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "tls_config: {ca_fil: /etc/ca.pem}\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:14: unknown key \"ca_fil\" in tls_config (known keys: "
                        "ca_file, cert_file, insecure_skip_verify, key_file, key_password_env, "
                        "key_password_file)");
    expect_config_error("bootstrap_servers: 127.0.0.1:9092\n"
                        "max_response_bytes: 10\n"
                        "groups: [{name: g, topics: [t]}]\n",
                        "qrel.yml:2:21: max_response_bytes: want an integer from 65536 to "
                        "1000000000, got \"10\"");

    struct kafka_settings set;
    struct err e;
    err_clear(&e);
    const char *y = "bootstrap_servers: 127.0.0.1:9093\n"
                    "security_protocol: ssl\n"
                    "max_response_bytes: 200000\n"
                    "tls_config: {ca_file: /etc/ca.pem, insecure_skip_verify: true}\n"
                    "groups: [{name: g, topics: [t]}]\n";
    struct cfg_doc *doc = cfg_parse_string("qrel.yml", y, strlen(y), &e);
    ck_assert_ptr_nonnull(doc);
    ck_assert_msg(kafka_settings_read(&set, "stream", 2.0, cfg_doc_root(doc), &e) == 0, "%s",
                  e.msg);
    ck_assert_int_eq(set.max_response_bytes, 200000);
    char errstr[256];
    const char *bad = NULL;
    rd_kafka_conf_t *conf = kafka_settings_conf(&set, errstr, sizeof errstr, &bad);
    ck_assert_ptr_nonnull(conf);
    char v[256];
    size_t n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "ssl.ca.location", v, &n), RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, "/etc/ca.pem");
    n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "enable.ssl.certificate.verification", v, &n),
                     RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, "false");
    n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "ssl.endpoint.identification.algorithm", v, &n),
                     RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, "none");
    n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "receive.message.max.bytes", v, &n), RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, "200000");
    rd_kafka_conf_destroy(conf);
    kafka_settings_free(&set);
    cfg_doc_free(doc);
}
END_TEST

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A loopback port nothing listens on: bound, then closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, len), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

START_TEST(down_broker_leaves_nothing_behind)
{
    int before = thread_count();
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "bootstrap_servers: 127.0.0.1:%d\ngroups: [{name: g, topics: [t]}]\n", closed_port());
    struct collector c;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(configure_yaml(&c, yaml, &e), 0);
    struct metric_set *out = metric_set_new("stream", "kafka");
    struct deadline dl = deadline_in(60.0);
    int64_t t0 = deadline_now_ms();
    ck_assert_int_eq(kafka_kind.collect(&c, &dl, out, &e), -1);
    int64_t took = deadline_now_ms() - t0;
    ck_assert_int_eq(e.code, ERR_CONNECT);
    ck_assert_msg(strstr(e.msg, "brokers are down") || strstr(e.msg, "Connection refused"), "%s",
                  e.msg);
    /* It fails on the refusal, not at the deadline: within half of it. Not a speed bound: a
     * plain build takes about 0.3 s, valgrind on a machine with a load of 10-15
     * 3.5 s, and the deadline is far above both so that only a wait for it fails here. */
    fprintf(stderr, "check_kafka: a refused connection failed after %lld ms\n", (long long)took);
    ck_assert_msg(took < 30000, "a refused connection took %lld ms", (long long)took);
    /* The failed collection destroyed its handle: no librdkafka instance, no thread. */
    ck_assert_int_eq(rd_kafka_wait_destroyed(2000), 0);
    ck_assert_int_eq(thread_count(), before);
    metric_set_free(out);
    collector_release(&c);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {lag_from_offsets, 0},
        {ages_names_reasons, 0},
        {config_errors, 0},
        {pattern_glob_regex, 0},
        {renamed_keys_and_tls_config, 0},
        {down_broker_leaves_nothing_behind, 0},
    };
    return check_run_tests("kafka", tests, CHECK_ROWS(tests), 60);
}
