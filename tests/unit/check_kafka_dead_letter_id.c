/* check_kafka_dead_letter_id.c: unit tests for collectors/kafka/dead_letter.c, where a Kafka
 * dead letter carries its id (a JSON key of the value, with dots for nesting, or a header), and
 * for the kafka kind's load-time check of a `dead_letters:` entry (the queue must be a topic of a
 * group entry with a dead_letter_topic; id_field one of the forms). Reading a dead-letter topic
 * is left to tests/integration/dead_letters.sh (librdkafka's mock cluster). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka.h"
#include "sources.h"
#include "support/check_run.h"

static const struct {
    const char *value;
    const char *path;
    const char *want; /* NULL: no id */
} json_ids[] = {
    {"{\"order\": {\"id\": 17}, \"reason\": \"max_deliveries\"}", "order.id", "17"},
    {"{\"order\": {\"id\": \"0002\"}}", "order.id", "0002"},
    {"{\"order_id\": -5}", "order_id", "-5"},
    {"{\"order_id\": 9223372036854775807}", "order_id", "9223372036854775807"},
    {"{\"a\": {\"b\": {\"c\": \"deep\"}}}", "a.b.c", "deep"},
    {"{\"order\": {}}", "order.id", NULL},
    {"{\"order\": {\"id\": 1.5}}", "order.id", NULL},  /* not an integer */
    {"{\"order\": {\"id\": null}}", "order.id", NULL}, /* null */
    {"{\"order\": {\"id\": [1]}}", "order.id", NULL},  /* an array */
    {"{\"order\": \"17\"}", "order.id", NULL},         /* a string has no keys */
    {"[{\"order\": 1}]", "order", NULL},               /* not an object at the top */
    {"not json", "order.id", NULL},
    {"{\"order\": {\"id\": 1}", "order.id", NULL}, /* cut short */
    {"", "order.id", NULL},
};

START_TEST(test_json_id)
{
    char *id = (char *)1;
    size_t len = 99;
    kafka_json_id(json_ids[_i].value, strlen(json_ids[_i].value), json_ids[_i].path, &id, &len);
    if (!json_ids[_i].want) {
        ck_assert_msg(id == NULL, "%s: want no id, got \"%s\"", json_ids[_i].value, id);
        ck_assert_uint_eq(len, 0);
        return;
    }
    ck_assert_ptr_nonnull(id);
    ck_assert_str_eq(id, json_ids[_i].want);
    ck_assert_uint_eq(len, strlen(json_ids[_i].want));
    free(id);
}
END_TEST

START_TEST(test_json_id_nul)
{
    /* A NUL inside a JSON string is kept with its length, for the caller to refuse. */
    static const char v[] = "{\"id\": \"a\\u0000b\"}";
    char *id = NULL;
    size_t len = 0;
    kafka_json_id(v, sizeof v - 1, "id", &id, &len);
    ck_assert_ptr_nonnull(id);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(memcmp(id, "a\0b", 3), 0);
    free(id);
}
END_TEST

START_TEST(test_id_field)
{
    char why[200];
    ck_assert_int_eq(kafka_id_field_check("order.id", why, sizeof why), 0);
    ck_assert_int_eq(kafka_id_field_check("header:order-id", why, sizeof why), 0);
    ck_assert_str_eq(kafka_id_field_header("header:order-id"), "order-id");
    ck_assert_ptr_null(kafka_id_field_header("order.id"));
    ck_assert_int_eq(kafka_id_field_check("header:", why, sizeof why), -1);
    ck_assert_str_eq(why, "want a header name after \"header:\"");
    const char *bad[] = {"order..id", ".id", "id.", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(kafka_id_field_check(bad[i], why, sizeof why), -1);
        ck_assert_ptr_nonnull(strstr(why, "want a JSON key with dots between nested keys"));
    }
}
END_TEST

/* The kafka source's side of a dead_letters entry, checked before the work table is looked at. */
#define KAFKA                                                                                      \
    "sources:\n  - name: bus\n    kind: kafka\n    bootstrap_servers: 127.0.0.1:9092\n"            \
    "    groups:\n      - name: mailer\n        topics: [orders]\n"                                \
    "        dead_letter_topic: \"{topic}.dlq\"\n"                                                 \
    "      - name: audit\n        topic_regex: \"pay.*\"\n"                                        \
    "        dead_letter_topic: pay.dlq\n"                                                         \
    "      - name: plain\n        topics: [plain]\n"                                               \
    "dead_letters:\n"

static const struct check_case bad_entries[] = {
    {"  - {source: bus, queue: plain, id_field: id, work_table: {source: bus}}\n",
     "x.yml:15:26: queue: no entry of groups of source \"bus\" measures topic \"plain\" with a "
     "dead_letter_topic"},
    {"  - {source: bus, queue: shipping, id_field: id, work_table: {source: bus}}\n",
     "x.yml:15:26: queue: no entry of groups of source \"bus\" measures topic \"shipping\" with a "
     "dead_letter_topic"},
    {"  - {source: bus, queue: orders, id_field: \"header:\", work_table: {source: bus}}\n",
     "x.yml:15:44: id_field: want a header name after \"header:\""},
    /* Past the broker's checks: a pattern's topic is found, then the work table's source. */
    {"  - {source: bus, queue: payments, id_field: id, work_table: {source: bus}}\n",
     "x.yml:15:71: source: \"bus\" is a kafka source; want a source that can tell which ids are "
     "done (of kind postgres)"},
};

START_TEST(test_entry)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", KAFKA, bad_entries[_i].in);
    struct err e;
    struct sources *s = sources_load_string("x.yml", text, &e);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(e.msg, bad_entries[_i].want);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

int main(void)
{
    const struct check_test tests[] = {
        {test_json_id, CHECK_ROWS(json_ids)},
        {test_json_id_nul, 0},
        {test_id_field, 0},
        {test_entry, CHECK_ROWS(bad_entries)},
    };
    return check_run_tests("kafka_dead_letter_id", tests, CHECK_ROWS(tests), 0);
}
