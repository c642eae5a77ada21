/* check_rabbitmq_dlq.c: unit tests for collectors/rabbitmq/dead_letter.c (what `qrel dlq` reads
 * from a RabbitMQ dead letter's headers and properties, and the headers a replay writes) and the
 * kind's amqp_url key and check of a dead_letters entry.
 *
 * The headers are built as RabbitMQ 3.10.8 sent them to a basic.get on a dead-letter queue (seen
 * through pika in tests/integration/dlq_rabbitmq.sh): x-death a list of tables, newest first,
 * with count (long), reason, queue, time (timestamp), exchange and routing-keys; x-first-death-*
 * strings; x-delivery-count (long) on a quorum queue. Reading, replaying and releasing against a
 * broker are tests/integration/dlq_rabbitmq.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "dlq_kind.h"
#include "rabbitmq/rabbitmq.h"
#include "sources.h"
#include "support/kind_config.h"
#include "support/check_refused.h"
#include "support/check_run.h"

extern const struct collector_kind rabbitmq_kind;

static amqp_field_value_t utf8(const char *s)
{
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_UTF8};
    v.value.bytes = amqp_cstring_bytes(s);
    return v;
}

static amqp_field_value_t i64(int64_t n)
{
    amqp_field_value_t v = {.kind = AMQP_FIELD_KIND_I64};
    v.value.i64 = n;
    return v;
}

static amqp_table_entry_t entry(const char *k, amqp_field_value_t v)
{
    amqp_table_entry_t e = {.key = amqp_cstring_bytes(k), .value = v};
    return e;
}

/* One x-death entry. */
static void death(amqp_table_entry_t *t, const char *reason, const char *queue, int64_t count,
                  uint64_t time)
{
    amqp_field_value_t ts = {.kind = AMQP_FIELD_KIND_TIMESTAMP};
    ts.value.u64 = time;
    t[0] = entry("count", i64(count));
    t[1] = entry("reason", utf8(reason));
    t[2] = entry("queue", utf8(queue));
    t[3] = entry("time", ts);
    t[4] = entry("exchange", utf8("dlx"));
}

/* A dead letter's properties: headers tenant, x-death (expired from "retry" newest, then
 * rejected from "orders"), x-first-death-queue, x-delivery-count 3, a stamp of 1, order_id 17. */
struct letter {
    amqp_table_entry_t d1[5], d2[5];
    amqp_field_value_t deaths[2];
    amqp_table_entry_t h[7];
    amqp_basic_properties_t p;
};

static void letter_init(struct letter *l, const char *first_reason)
{
    memset(l, 0, sizeof *l);
    death(l->d1, first_reason, "retry", 2, 1796500935);
    death(l->d2, "rejected", "orders", 1, 1796500900);
    l->deaths[0].kind = l->deaths[1].kind = AMQP_FIELD_KIND_TABLE;
    l->deaths[0].value.table = (amqp_table_t){5, l->d1};
    l->deaths[1].value.table = (amqp_table_t){5, l->d2};
    amqp_field_value_t xd = {.kind = AMQP_FIELD_KIND_ARRAY};
    xd.value.array = (amqp_array_t){2, l->deaths};
    l->h[0] = entry("tenant", utf8("acme"));
    l->h[1] = entry("x-death", xd);
    l->h[2] = entry("x-first-death-queue", utf8("orders"));
    l->h[3] = entry("x-delivery-count", i64(3));
    l->h[4] = entry(DLQ_STAMP, i64(1));
    l->h[5] = entry("order_id", i64(17));
    l->h[6] = entry("x-last-death-reason", utf8("rejected"));
    l->p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    l->p.headers = (amqp_table_t){7, l->h};
    l->p.message_id = amqp_cstring_bytes("m-17");
}

START_TEST(test_death_newest_replayable)
{
    struct letter l;
    letter_init(&l, "expired");
    struct rabbitmq_death d;
    rabbitmq_death_read(&l.p, &d);
    ck_assert_str_eq(d.queue, "retry");
    ck_assert_str_eq(d.reason, "expired");
    ck_assert_int_eq(d.count, 2);
    ck_assert_double_eq(d.time, 1796500935.0);
    ck_assert_int_eq(d.delivery_count, 3);
    ck_assert_int_eq(d.replays, 1);
    rabbitmq_death_free(&d);
    /* a reason qrel does not replay (none such today but any other word) is passed over */
    letter_init(&l, "something_else");
    rabbitmq_death_read(&l.p, &d);
    ck_assert_str_eq(d.queue, "orders");
    ck_assert_str_eq(d.reason, "rejected");
    ck_assert_int_eq(d.count, 1);
    rabbitmq_death_free(&d);
}
END_TEST

START_TEST(test_death_without_headers)
{
    amqp_basic_properties_t p = {0};
    struct rabbitmq_death d;
    rabbitmq_death_read(&p, &d);
    ck_assert_ptr_null(d.queue);
    ck_assert_int_eq(d.count, -1);
    ck_assert_int_eq(d.delivery_count, -1);
    ck_assert_int_eq(d.replays, 0);
    rabbitmq_death_free(&d);
    /* a stamp that is no whole number counts as none */
    amqp_table_entry_t h[1] = {entry(DLQ_STAMP, utf8("two"))};
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){1, h};
    rabbitmq_death_read(&p, &d);
    ck_assert_int_eq(d.replays, 0);
    rabbitmq_death_free(&d);
}
END_TEST

START_TEST(test_replay_headers)
{
    struct letter l;
    letter_init(&l, "rejected");
    amqp_table_entry_t out[8];
    int n = rabbitmq_replay_headers(&l.p, 2, out);
    /* tenant and order_id kept, in their order; x-* and the old stamp gone; the new stamp last */
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq((int)out[0].key.len, 6);
    ck_assert(memcmp(out[0].key.bytes, "tenant", 6) == 0);
    ck_assert(memcmp(out[1].key.bytes, "order_id", 8) == 0);
    ck_assert(memcmp(out[2].key.bytes, DLQ_STAMP, strlen(DLQ_STAMP)) == 0);
    ck_assert_int_eq(out[2].value.kind, AMQP_FIELD_KIND_I64);
    ck_assert_int_eq(out[2].value.value.i64, 2);
    amqp_basic_properties_t none = {0};
    ck_assert_int_eq(rabbitmq_replay_headers(&none, 1, out), 1);
    ck_assert_int_eq(out[0].value.value.i64, 1);
}
END_TEST

static const struct {
    const char *id_field, *want;
} work_ids[] = {
    {"header:order_id", "17"},       {"header:tenant", "acme"},         {"header:missing", NULL},
    {"property:message_id", "m-17"}, {"property:correlation_id", NULL}, {"order.id", "o-9"},
    {"order.missing", NULL},
};

START_TEST(test_work_id)
{
    struct letter l;
    letter_init(&l, "rejected");
    amqp_message_t m = {.properties = l.p};
    m.body = amqp_cstring_bytes("{\"order\":{\"id\":\"o-9\"}}");
    char *id = NULL;
    size_t len = 0;
    rabbitmq_dlq_work_id(&m, work_ids[_i].id_field, &id, &len);
    if (work_ids[_i].want) {
        ck_assert_ptr_nonnull(id);
        ck_assert_str_eq(id, work_ids[_i].want);
        ck_assert_int_eq(len, strlen(work_ids[_i].want));
    } else {
        ck_assert_ptr_null(id);
    }
    free(id);
}
END_TEST

static const struct {
    const char *url, *host, *vhost, *why;
    int port, tls;
} urls[] = {
    {"amqp://127.0.0.1:5673", "127.0.0.1", "/", NULL, 5673, 0},
    {"amqp://broker/shop%2Fprod", "broker", "shop/prod", NULL, 5672, 0},
    {"amqp://broker:5672/%2F", "broker", "/", NULL, 5672, 0},
    /* amqps: TLS with the source's tls_config, 5671 by default */
    {"amqps://broker", "broker", "/", NULL, 5671, 1},
    {"amqps://broker.example:5700/shop", "broker.example", "shop", NULL, 5700, 1},
    {"amqp://qrel:hunter2@broker", NULL, NULL,
     "want no user or password in the URL: qrel logs in with the source's username and "
     "password_file or password_env",
     0, 0},
    {"amqps://qrel:hunter2@broker", NULL, NULL,
     "want no user or password in the URL: qrel logs in with the source's username and "
     "password_file or password_env",
     0, 0},
    {"http://broker:15672", NULL, NULL, "want amqp[s]://host[:port][/vhost]", 0, 0},
    {"amqp://broker:notaport", NULL, NULL,
     "want amqp[s]://host[:port][/vhost] (the vhost %-encoded: %2F for \"/\")", 0, 0},
};

START_TEST(test_amqp_url)
{
    char *host = NULL, *vhost = NULL, why[300] = "";
    int port = 0, tls = -1;
    int rc = rabbitmq_amqp_url_parse(urls[_i].url, &host, &port, &vhost, &tls, why, sizeof why);
    if (urls[_i].why) {
        ck_assert_int_eq(rc, -1);
        ck_assert_str_eq(why, urls[_i].why);
        ck_assert(strstr(why, "hunter2") == NULL);
    } else {
        ck_assert_msg(rc == 0, "%s", why);
        ck_assert_str_eq(host, urls[_i].host);
        ck_assert_str_eq(vhost, urls[_i].vhost);
        ck_assert_int_eq(port, urls[_i].port);
        ck_assert_int_eq(tls, urls[_i].tls);
    }
    free(host);
    free(vhost);
}
END_TEST

#define SOURCE                                                                                     \
    "sources:\n  - name: rmq\n    kind: rabbitmq\n    url: http://127.0.0.1:15672\n"               \
    "    username: qrel\n    password_env: HOME\n    queues: [orders]\n"

START_TEST(test_configure_amqp_url)
{
    struct err e;
    ck_assert_int_eq(
        configure_kind_text(&rabbitmq_kind, SOURCE "    amqp_url: amqp://127.0.0.1:5672\n", &e), 0);
    ck_assert_int_eq(
        configure_kind_text(&rabbitmq_kind, SOURCE "    amqp_url: amqps://broker\n", &e), 0);
    check_refused(configure_kind_text(&rabbitmq_kind,
                                      SOURCE "    amqp_url: amqp://qrel:hunter2@127.0.0.1\n", &e),
                  &e,
                  "x.yml:8:15: amqp_url: want no user or password in the URL: qrel logs in with "
                  "the source's username and password_file or password_env");
}
END_TEST

static const struct {
    const char *extra, *entry, *want;
} entries[] = {
    {"    amqp_url: amqp://127.0.0.1\n", "{source: rmq, queue: orders, id_field: header:order_id}",
     NULL},
    {"    amqp_url: amqp://127.0.0.1\n",
     "{source: rmq, queue: orders, id_field: property:message_id}", NULL},
    {"    amqp_url: amqp://127.0.0.1\n", "{source: rmq, queue: orders, id_field: property:type}",
     "x.yml:10:44: id_field: want property:message_id or property:correlation_id, got "
     "\"property:type\""},
    {"", "{source: rmq, queue: orders, id_field: order.id}",
     "x.yml:9:14: source: \"rmq\" has no amqp_url, which qrel dlq reads RabbitMQ's dead letters "
     "through"},
    {"    amqp_url: amqp://127.0.0.1\n", "{source: rmq, queue: billing, id_field: order.id}",
     "x.yml:10:26: queue: source \"rmq\" does not watch a queue named \"billing\""},
};

START_TEST(test_entry)
{
    char text[1000];
    snprintf(text, sizeof text, SOURCE "%sdead_letters:\n  - %s\n", entries[_i].extra,
             entries[_i].entry);
    struct err e;
    struct cfg_doc *doc = cfg_parse_string("x.yml", text, strlen(text), &e);
    ck_assert_msg(doc != NULL, "%s", e.msg);
    struct cfg_node *seq = NULL, *dl = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "sources", CFG_SEQ, &seq, &e), 0);
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "dead_letters", CFG_SEQ, &dl, &e), 0);
    struct sources s = {.timeout = SOURCES_DEFAULT_TIMEOUT};
    struct collector c = {0};
    ck_assert_msg(sources_configure(&s, &c, seq->items[0], &e) == 0, "%s", e.msg);
    ck_assert_ptr_nonnull(c.kind->dlq);
    kind_config_check_entry(&c, dl->items[0], entries[_i].want);
    collector_release(&c);
    free(c.name);
    cfg_doc_free(doc);
}
END_TEST

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

int main(void)
{
    Suite *s = suite_create("rabbitmq_dlq");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, test_death_newest_replayable);
    tcase_add_test(tc, test_death_without_headers);
    tcase_add_test(tc, test_replay_headers);
    tcase_add_loop_test(tc, test_work_id, 0, N(work_ids));
    tcase_add_loop_test(tc, test_amqp_url, 0, N(urls));
    tcase_add_test(tc, test_configure_amqp_url);
    tcase_add_loop_test(tc, test_entry, 0, N(entries));
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
