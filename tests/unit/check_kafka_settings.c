/* check_kafka_settings.c: the source's timeout as librdkafka's int millisecond properties. A
 * timeout of 24.8 days or more overflowed the int (undefined behaviour, and in practice 1 s:
 * found by fuzz_config), and one above librdkafka's own bound for a property made the client
 * unusable; each property now gets the timeout clamped to its range. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <string.h>

#include "config.h"
#include "kafka/settings.h"
#include "support/check_run.h"

static const struct {
    double timeout;
    const char *setup_ms, *api_version_ms;
} cases[] = {
    {2.0, "2000", "2000"},
    {0.2, "1000", "1000"},                  /* at least 1 s, as before */
    {600.0, "600000", "300000"},            /* librdkafka's most for the second: 5 min */
    {86400.0, "86400000", "300000"},        /* the most a source's timeout can be */
    {30 * 86400.0, "2147483647", "300000"}, /* past INT_MAX milliseconds */
};

START_TEST(test_timeout_ms)
{
    struct kafka_settings set;
    struct err e;
    err_clear(&e);
    const char *y = "bootstrap_servers: 127.0.0.1:9093\ngroups: [{name: g, topics: [t]}]\n";
    struct cfg_doc *doc = cfg_parse_string("qrel.yml", y, strlen(y), &e);
    ck_assert_ptr_nonnull(doc);
    ck_assert_msg(kafka_settings_read(&set, "bus", cases[_i].timeout, cfg_doc_root(doc), &e) == 0,
                  "%s", e.msg);
    char errstr[256] = "";
    const char *bad = NULL;
    rd_kafka_conf_t *conf = kafka_settings_conf(&set, errstr, sizeof errstr, &bad);
    ck_assert_msg(conf != NULL, "%s: %s", bad ? bad : "?", errstr);
    char v[64];
    size_t n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "socket.connection.setup.timeout.ms", v, &n),
                     RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, cases[_i].setup_ms);
    n = sizeof v;
    ck_assert_int_eq(rd_kafka_conf_get(conf, "api.version.request.timeout.ms", v, &n),
                     RD_KAFKA_CONF_OK);
    ck_assert_str_eq(v, cases[_i].api_version_ms);
    rd_kafka_conf_destroy(conf);
    kafka_settings_free(&set);
    cfg_doc_free(doc);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {{test_timeout_ms, CHECK_ROWS(cases)}};
    return check_run_tests("kafka_settings", tests, CHECK_ROWS(tests), 0);
}
