/* check_rabbitmq.c: unit tests for the pure parts of collectors/rabbitmq/parse.c: reading queue
 * objects recorded from RabbitMQ 3.10.8's GET /api/queues (tests/fixtures/rabbitmq/) (stats present
 * and absent, empty proplists written as [], settings from arguments and from policy), the
 * delivery-limit mapping, topic matching and binding routing, the compact cache of the slow part
 * (cache.c), the consumer counts kept between reads (consumers.c), and configure()'s messages.
 * Talking to a broker is left to tests/integration/rabbitmq.sh, which runs a real one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "rabbitmq/cache.h"
#include "rabbitmq/consumers.h"
#include "rabbitmq/rabbitmq.h"
#include "text.h"
#include "support/check_refused.h"
#include "support/check_run.h"

extern const struct collector_kind rabbitmq_kind;

/* GET /api/queues recorded from RabbitMQ 3.10.8 (columns as the collector asks for them), with the
 * consumer of the integration test connected; the last object is a queue declared a moment
 * before (no stats yet). */
static json_t *load(void)
{
    size_t len = 0;
    char *text = text_read_file(QREL_FIXTURES "/rabbitmq/queues-3.10.8.json", 1 << 20, &len);
    ck_assert_msg(text != NULL, "cannot read the fixture");
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    ck_assert_msg(doc != NULL, "fixture: %s", je.text);
    return doc;
}

START_TEST(test_queue_parse)
{
    json_t *doc = load();
    struct rabbitmq_queue q;
    struct err e;

    ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, 0), "$[0]", 1, &q, &e), 0);
    ck_assert_str_eq(q.name, "orders");
    ck_assert_str_eq(q.vhost, "/");
    ck_assert_int_eq(q.has_stats, 1);
    ck_assert_double_eq(q.ready, 0);
    ck_assert_double_eq(q.unacked, 2);
    ck_assert_int_eq(q.has_head_ts, 1);
    ck_assert_double_eq(q.head_ts, 1795953440);
    ck_assert_double_eq(q.redeliver, 3);
    ck_assert_str_eq(q.dlx, "orders.dlx");
    ck_assert_str_eq(q.dlrk, "orders");
    ck_assert_double_eq(q.delivery_limit, -1);
    ck_assert_double_eq(q.consumer_timeout_ms, -1);
    ck_assert_int_eq(q.has_consumers, 1);
    ck_assert_double_eq(q.consumers, 1);

    ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, 1), "$[1]", 1, &q, &e), 0);
    ck_assert_int_eq(q.has_consumers, 0); /* no consumers column: no count, not 0 */
    ck_assert_str_eq(q.dlx, "jobs.dlx");  /* from the policy */
    ck_assert_ptr_null(q.dlrk);
    ck_assert_double_eq(q.delivery_limit, 2);
    ck_assert_int_eq(q.has_head_ts, 0); /* quorum queues have no head_message_timestamp */
    ck_assert_double_eq(q.redeliver, 2);

    ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, 2), "$[2]", 1, &q, &e), 0);
    ck_assert_str_eq(q.vhost, "v2");
    ck_assert_ptr_null(q.dlx);
    ck_assert_int_eq(q.has_head_ts, 0);
    ck_assert_double_eq(q.redeliver, 0);
    ck_assert_double_eq(q.ready, 1);
    ck_assert_int_eq(q.has_consumers, 1);
    ck_assert_double_eq(q.consumers, 0);

    ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, 3), "$[3]", 1, &q, &e), 0);
    ck_assert_int_eq(q.has_stats, 0);
    ck_assert_str_eq(q.dlx, ""); /* the default exchange; the argument wins over the policy */
    ck_assert_double_eq(q.delivery_limit, 5);
    ck_assert_double_eq(q.consumer_timeout_ms, 60000);

    /* Depth only: the slow columns are not read even when present. */
    ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, 0), "$[0]", 0, &q, &e), 0);
    ck_assert_ptr_null(q.dlx);
    ck_assert_int_eq(q.has_head_ts, 0);
    ck_assert_double_eq(q.consumers, 1); /* read with the depth */
    json_decref(doc);
}
END_TEST

/* The message TTL: the argument, the policy, or the lower of both (as RabbitMQ applies it); -1
 * without one; a TTL that is no number is refused at its path. */
START_TEST(test_queue_ttl)
{
    static const struct {
        const char *json;
        double ttl;
    } cases[] = {
        {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":{\"x-message-ttl\":600000}}", 600000},
        {"{\"name\":\"q\",\"vhost\":\"/\",\"effective_policy_definition\":{\"message-ttl\":"
         "300000}}",
         300000},
        {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":{\"x-message-ttl\":600000},"
         "\"effective_policy_definition\":{\"message-ttl\":300000}}",
         300000},
        {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":{\"x-message-ttl\":100000},"
         "\"effective_policy_definition\":{\"message-ttl\":300000}}",
         100000},
        {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":[],\"effective_policy_definition\":[]}",
         -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *o = json_loads(cases[i].json, 0, NULL);
        ck_assert_ptr_nonnull(o);
        struct rabbitmq_queue q;
        struct err e;
        ck_assert_int_eq(rabbitmq_queue_parse(o, "$[0]", 1, &q, &e), 0);
        ck_assert_double_eq(q.message_ttl_ms, cases[i].ttl);
        json_decref(o);
    }
    json_t *o = json_loads("{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":{\"x-message-ttl\":[1]}}",
                           0, NULL);
    struct rabbitmq_queue q;
    struct err e;
    ck_assert_int_eq(rabbitmq_queue_parse(o, "$[0]", 1, &q, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "$[0].arguments.x-message-ttl"));
    json_decref(o);
}
END_TEST

static const struct check_case bad_queues[] = {
    {"{\"vhost\":\"/\"}", "$[4].name: missing"},
    {"{\"name\":\"q\",\"vhost\":1}", "$[4].vhost: want a string, got a number"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"messages\":1}", "$[4].messages_ready: missing"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"messages\":\"1\"}",
     "$[4].messages: want a number, got a string"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":\"x\"}",
     "$[4].arguments: want an object, got a string"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"arguments\":{\"x-dead-letter-exchange\":7}}",
     "$[4].arguments.x-dead-letter-exchange: want a string, got a number"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"message_stats\":{\"redeliver\":\"3\"}}",
     "$[4].message_stats.redeliver: want a number, got a string"},
    {"{\"name\":\"q\",\"vhost\":\"/\",\"consumers\":\"1\"}",
     "$[4].consumers: want a number, got a string"},
    {"[]", "$[4]: want an object, got a list"},
};

START_TEST(test_queue_parse_bad)
{
    json_error_t je;
    json_t *v = json_loads(bad_queues[_i].in, JSON_DECODE_ANY, &je);
    ck_assert_ptr_nonnull(v);
    struct rabbitmq_queue q;
    struct err e;
    err_clear(&e);
    check_failed(rabbitmq_queue_parse(v, "$[4]", 1, &q, &e), &e, ERR_PROTOCOL, bad_queues[_i].want);
    json_decref(v);
}
END_TEST

/* rabbitmq_each_object over whole bodies: what it hands over, in order, and where it stops. */
static const struct {
    const char *body;
    int rc;
    const char *seen; /* the names handed over, each followed by its path */
    const char *msg;  /* the error, when rc is -1 */
} lists[] = {
    {"[]", 0, "", NULL},
    {" \n[ ]\r\n", 0, "", NULL},
    {"[{\"name\":\"a\"}]", 0, "a$[0] ", NULL},
    {"[ {\"name\":\"a\",\"n\":[1,{\"x\":\"]\"}]} ,\n{\"name\":\"b\"}\n]\n", 0, "a$[0] b$[1] ",
     NULL},
    /* beyond 64 bits: read as a double, as json_parse_body does */
    {"[{\"name\":\"a\",\"n\":18446744073709551615}]", 0, "a$[0] ", NULL},
    /* the callback's failure stops the walk */
    {"[{\"name\":\"a\"},{\"name\":\"stop\"},{\"name\":\"c\"}]", -1, "a$[0] stop$[1] ", "stopped"},
    {"", -1, "", "GET /q: empty response where JSON was expected"},
    {"{\"error\":\"x\"}", -1, "", "GET /q: $: want a list, got an object"},
    {"[{\"name\":\"a\"},2]", -1, "a$[0] ", "GET /q: $[1]: want an object"},
    {"[{\"name\":\"a\"},", -1, "a$[0] ",
     "GET /q: malformed JSON at byte 14: '[' or '{' expected near end of file"},
    {"[{\"name\":\"a\"", -1, "",
     "GET /q: malformed JSON at byte 12: '}' expected near end of file"},
    {"[{\"name\":\"a\"} {\"name\":\"b\"}]", -1, "a$[0] ",
     "GET /q: malformed JSON at byte 14: want ',' or ']' after $[0]"},
    {"[{\"name\":\"a\"},]", -1, "a$[0] ", "GET /q: malformed JSON at byte 14: a value expected"},
    {"[{\"name\":\"a\"}] x", -1, "a$[0] ",
     "GET /q: malformed JSON at byte 14: end of the list expected"},
};

static int seen_one(const json_t *elem, const char *ctx, void *arg, struct err *e)
{
    char *seen = arg;
    const char *name = json_string_value(json_object_get(elem, "name"));
    size_t n = strlen(seen);
    snprintf(seen + n, 256 - n, "%s%s ", name ? name : "?", ctx);
    return name && strcmp(name, "stop") == 0 ? err_set(e, ERR_PROTOCOL, "stopped") : 0;
}

START_TEST(test_each_object)
{
    char seen[256] = "";
    struct err e;
    err_clear(&e);
    const char *body = lists[_i].body;
    ck_assert_int_eq(rabbitmq_each_object(body, strlen(body), "GET /q", seen_one, seen, &e),
                     lists[_i].rc);
    ck_assert_str_eq(seen, lists[_i].seen);
    if (lists[_i].msg) {
        ck_assert_int_eq(e.code, ERR_PROTOCOL);
        ck_assert_str_eq(e.msg, lists[_i].msg);
    }
}
END_TEST

START_TEST(test_max_deliveries)
{
    ck_assert_double_eq(rabbitmq_max_deliveries(-1), -1);
    ck_assert_double_eq(rabbitmq_max_deliveries(0), 1);
    ck_assert_double_eq(rabbitmq_max_deliveries(2), 3); /* 3 deliveries measured on 3.10.8 */
    ck_assert_double_eq(rabbitmq_max_deliveries(4), 5);
}
END_TEST

/* A binding pattern, a routing key, and whether the one matches the other. */
static const struct {
    const char *pattern, *key;
    int match;
} topics[] = {
    {"events.#", "events.a", 1},
    {"events.#", "events", 1},
    {"events.#", "events.a.b", 1},
    {"events.#", "other.a", 0},
    {"#", "anything.at.all", 1},
    {"*.a", "x.a", 1},
    {"*.a", "a", 0},
    {"*.a", "x.y.a", 0},
    {"a.#.z", "a.z", 1},
    {"a.#.z", "a.b.c.z", 1},
    {"a.#.z", "a.b.c", 0},
    {"#.#", "a", 1},
    {"orders", "orders", 1},
    {"orders", "orders.x", 0},
};

START_TEST(test_topic)
{
    ck_assert_msg(rabbitmq_topic_match(topics[_i].pattern, topics[_i].key) == topics[_i].match,
                  "%s ~ %s: want %d", topics[_i].pattern, topics[_i].key, topics[_i].match);
}
END_TEST

START_TEST(test_binding_routes)
{
    ck_assert(rabbitmq_binding_routes("direct", "orders", "orders"));
    ck_assert(!rabbitmq_binding_routes("direct", "orders", "orders.x"));
    ck_assert(rabbitmq_binding_routes("topic", "orders.*", "orders.x"));
    ck_assert(rabbitmq_binding_routes("fanout", "whatever", "orders"));
    ck_assert(rabbitmq_binding_routes("headers", "", "orders"));
}
END_TEST

static const struct check_case bad_configs[] = {
    {"username: u\npassword_env: HOME\n",
     "t.yml:1:1: missing required key \"url\" in this mapping"},
    /* a misspelt key is reported, with the known keys, before what it leaves missing */
    {"url: http://h:15672\nusrname: u\npassword_env: HOME\n",
     "t.yml:2:1: unknown key \"usrname\" in source \"rmq\" (known keys: amqp_url, "
     "consumer_timeout, consumers_interval, dlq_accept_delivery_limit, exclude, exclude_vhosts, "
     "max_response_bytes, "
     "metadata_interval, password_env, "
     "password_file, prometheus_url, queue_pattern, queues, tls_config, url, username, vhosts)"},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nexclude_vhosts: [\"^v\"]\n",
     "t.yml:4:18: exclude_vhosts: \"^v\" looks like a regular expression (it has \"^\"): "
     "exclude_vhosts takes globs (*, ?, [...]; \"[.]\" for a literal dot before a star)"},
    {"url: ftp://x\nusername: u\npassword_env: HOME\n", NULL},
    {"url: http://h:15672\npassword_env: HOME\n",
     "t.yml:1:1: missing required key \"username\" in this mapping"},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nvhosts: []\n",
     "t.yml:4:9: vhosts: want at least one vhost (leave vhosts out for every vhost)"},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nconsumer_timeout: 0s\n",
     "t.yml:4:19: consumer_timeout: want a duration above 0"},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nmetadata_interval: soon\n", NULL},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nconsumers_interval: 2d\n",
     "t.yml:4:21: consumers_interval: want a duration from 0 to 1d, got \"2d\""},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nconsumers_interval: often\n",
     "t.yml:4:21: consumers_interval: want a duration like \"5s\", got \"often\""},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nconsumers_interval: [1m]\n", NULL},
    {"url: http://h:15672\nusername: u\npassword_env: HOME\nqueue_pattern: \"\"\n",
     "t.yml:4:16: queue_pattern: want a non-empty string"},
};

START_TEST(test_config_bad)
{
    struct err e;
    struct cfg_doc *d =
        cfg_parse_string("t.yml", bad_configs[_i].in, strlen(bad_configs[_i].in), &e);
    ck_assert_ptr_nonnull(d);
    struct collector c = {.name = "rmq", .kind = &rabbitmq_kind};
    err_clear(&e);
    int rc = collector_configure(&c, cfg_doc_root(d), &e);
    if (rc == 0)
        rc = cfg_finish(cfg_doc_root(d), "source \"rmq\"", &e);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    if (bad_configs[_i].want)
        ck_assert_str_eq(e.msg, bad_configs[_i].want);
    collector_release(&c);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_config_min_interval)
{
    static const char y[] = "url: http://h:15672\nusername: u\npassword_env: HOME\n";
    struct err e;
    struct cfg_doc *d = cfg_parse_string("t.yml", y, strlen(y), &e);
    struct collector c = {.name = "rmq", .kind = &rabbitmq_kind, .min_interval = 30};
    ck_assert_int_eq(collector_configure(&c, cfg_doc_root(d), &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "use metadata_interval"));
    collector_release(&c);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_config_good)
{
    static const char y[] = "url: https://rmq.example:15671/\n"
                            "prometheus_url: http://rmq.example:15692\n"
                            "username: monitoring\npassword_env: HOME\n"
                            "vhosts: [\"/\", shop]\nqueues: [orders]\nqueue_pattern: \"jobs.*\"\n"
                            "consumer_timeout: 30m\nmetadata_interval: 2m\n"
                            "consumers_interval: 0s\n"
                            "max_response_bytes: 1048576\n"
                            "tls_config: {insecure_skip_verify: true}\n";
    struct err e;
    struct cfg_doc *d = cfg_parse_string("t.yml", y, strlen(y), &e);
    struct collector c = {.name = "rmq", .kind = &rabbitmq_kind};
    ck_assert_int_eq(collector_configure(&c, cfg_doc_root(d), &e), 0);
    ck_assert_int_eq(cfg_finish(cfg_doc_root(d), "source \"rmq\"", &e), 0);
    collector_release(&c);
    cfg_doc_free(d);
}
END_TEST

/* The cache gives back what it was given: a quiet queue's defaults (kept as no figures), figures
 * and dead-letter queues, per vhost, across the index's growth (3,000 queues), and no second
 * entry for a name it has. */
/* GET /api/queues recorded from RabbitMQ 3.10.8 after rabbitmq.sh's consumer acknowledged 5
 * messages of orders (and rejected 2, which are not in the count) and returned every delivery of
 * jobs: the consumed count is message_stats' ack + deliver_no_ack + get_no_ack. */
START_TEST(test_queue_consumed)
{
    size_t len = 0;
    char *text = text_read_file(QREL_FIXTURES "/rabbitmq/queues-flow-3.10.8.json", 1 << 20, &len);
    ck_assert_ptr_nonnull(text);
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    ck_assert_ptr_nonnull(doc);
    double want_orders = 5, want_jobs = 0;
    int seen = 0;
    for (size_t i = 0; i < json_array_size(doc); i++) {
        struct rabbitmq_queue q;
        struct err e;
        ck_assert_int_eq(rabbitmq_queue_parse(json_array_get(doc, i), "$[i]", 1, &q, &e), 0);
        if (strcmp(q.vhost, "/") == 0 && strcmp(q.name, "orders") == 0) {
            ck_assert_double_eq(q.consumed, want_orders);
            ck_assert_double_eq(q.redeliver, 3);
            seen++;
        } else if (strcmp(q.name, "jobs") == 0) {
            ck_assert_double_eq(q.consumed, want_jobs);
            seen++;
        } else {
            ck_assert_double_eq(q.consumed, 0); /* no message_stats, or [] */
        }
    }
    ck_assert_int_eq(seen, 2);
    json_decref(doc);

    /* Auto-ack deliveries (basic.consume and basic.get with no_ack) are done as they leave. */
    doc = json_loads("{\"name\":\"q\",\"vhost\":\"/\",\"messages\":0,\"messages_ready\":0,"
                     "\"messages_unacknowledged\":0,\"message_stats\":{\"ack\":2,"
                     "\"deliver_no_ack\":3,\"get_no_ack\":4}}",
                     0, &je);
    struct rabbitmq_queue q;
    struct err e;
    ck_assert_int_eq(rabbitmq_queue_parse(doc, "$[0]", 1, &q, &e), 0);
    ck_assert_double_eq(q.consumed, 9);
    json_decref(doc);
}
END_TEST

START_TEST(test_cache)
{
    struct rabbitmq_cache c;
    memset(&c, 0, sizeof c);
    const struct rabbitmq_cached quiet = {
        .has_stats = 1, .delivery_limit = -1, .consumer_timeout_ms = -1, .message_ttl_ms = -1};
    const struct rabbitmq_cached busy = {.has_stats = 1,
                                         .has_head_ts = 1,
                                         .head_ts = 1700000000.5,
                                         .redeliver = 7,
                                         .consumed = 12,
                                         .delivery_limit = 4,
                                         .consumer_timeout_ms = 60000,
                                         .message_ttl_ms = 3600000,
                                         .has_dlx = 1,
                                         .ndlqs = 2};
    const struct rabbitmq_cached nostats = {
        .delivery_limit = -1, .consumer_timeout_ms = -1, .message_ttl_ms = -1};
    const char *dlqs[] = {"orders.dlq", "orders.parked"};
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "q.%d", i);
        rabbitmq_cache_add(&c, i % 2 ? "shop" : "/", name, i % 100 ? &quiet : &nostats, NULL);
    }
    rabbitmq_cache_add(&c, "shop", "orders", &busy, dlqs);
    rabbitmq_cache_add(&c, "shop", "orders", &quiet, NULL); /* already there: ignored */
    rabbitmq_cache_fit(&c);
    ck_assert_uint_eq(c.n, 3001);

    struct rabbitmq_cached v;
    ck_assert_int_eq(rabbitmq_cache_find(&c, "shop", "orders", &v), 1);
    ck_assert_int_eq(v.has_stats, 1);
    ck_assert_int_eq(v.has_head_ts, 1);
    ck_assert_double_eq(v.head_ts, 1700000000.5);
    ck_assert_double_eq(v.redeliver, 7);
    ck_assert_double_eq(v.consumed, 12);
    ck_assert_double_eq(v.delivery_limit, 4);
    ck_assert_double_eq(v.consumer_timeout_ms, 60000);
    ck_assert_double_eq(v.message_ttl_ms, 3600000);
    ck_assert_int_eq(v.has_dlx, 1);
    ck_assert_uint_eq(v.ndlqs, 2);
    ck_assert_str_eq(rabbitmq_cache_dlq(&c, &v, 0), "orders.dlq");
    ck_assert_str_eq(rabbitmq_cache_dlq(&c, &v, 1), "orders.parked");

    ck_assert_int_eq(rabbitmq_cache_find(&c, "shop", "q.2999", &v), 1);
    ck_assert_int_eq(v.has_stats, 1);
    ck_assert_int_eq(v.has_head_ts, 0);
    ck_assert_double_eq(v.redeliver, 0);
    ck_assert_double_eq(v.consumed, 0);
    ck_assert_double_eq(v.delivery_limit, -1);
    ck_assert_double_eq(v.consumer_timeout_ms, -1);
    ck_assert_double_eq(v.message_ttl_ms, -1);
    ck_assert_int_eq(v.has_dlx, 0);
    ck_assert_uint_eq(v.ndlqs, 0);
    ck_assert_int_eq(rabbitmq_cache_find(&c, "/", "q.200", &v), 1);
    ck_assert_int_eq(v.has_stats, 0);
    /* the vhost is part of the key */
    ck_assert_int_eq(rabbitmq_cache_find(&c, "/", "q.2999", &v), 0);
    ck_assert_int_eq(rabbitmq_cache_find(&c, "/", "orders", &v), 0);
    ck_assert_int_eq(rabbitmq_cache_find(&c, "sho", "porders", &v), 0);
    /* figures kept only for the one busy queue */
    ck_assert_uint_eq(c.nfigs, 1);
    rabbitmq_cache_free(&c);
    ck_assert_uint_eq(c.n, 0);
    rabbitmq_cache_free(NULL);
}
END_TEST

/* The consumer counts: due when none are kept, then once older than the interval less a tenth
 * of it (at most 1 s); 0 s is every scrape. Counts by record, and by name for the others. */
START_TEST(test_consumers)
{
    struct rabbitmq_consumers c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 60, 1000), 1);
    rabbitmq_consumers_init(&c, 3, 1000);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 60, 1000 + 58999), 0);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 60, 1000 + 59000), 1); /* jitter: 15 s x 4 */
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 2, 1000 + 1799), 0);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 2, 1000 + 1800), 1);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 0, 1000), 1);

    rabbitmq_consumers_set(&c, 0, 2);
    rabbitmq_consumers_set(&c, 2, 0);
    rabbitmq_consumers_set(&c, 3, 5); /* no such record: ignored */
    rabbitmq_consumers_add(&c, "/", "new.q", 1);
    rabbitmq_consumers_add(&c, "shop", "new.q", 4);
    rabbitmq_consumers_add(&c, "/", "new.q", 9); /* already there: ignored */
    char name[32];
    for (int i = 0; i < 100; i++) { /* past the index's first size */
        snprintf(name, sizeof name, "amq.gen-%d", i);
        rabbitmq_consumers_add(&c, "/", name, i);
    }
    double v = -1;
    ck_assert_int_eq(rabbitmq_consumers_get(&c, 0, "/", "a", &v), 1);
    ck_assert_double_eq(v, 2);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, 1, "/", "b", &v), 0); /* the read gave none */
    ck_assert_int_eq(rabbitmq_consumers_get(&c, 2, "/", "c", &v), 1);
    ck_assert_double_eq(v, 0);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, SIZE_MAX, "/", "new.q", &v), 1);
    ck_assert_double_eq(v, 1);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, SIZE_MAX, "shop", "new.q", &v), 1);
    ck_assert_double_eq(v, 4);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, SIZE_MAX, "/", "amq.gen-77", &v), 1);
    ck_assert_double_eq(v, 77);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, SIZE_MAX, "sho", "pnew.q", &v), 0);
    /* a new read starts from nothing */
    rabbitmq_consumers_init(&c, 1, 5000);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, 0, "/", "a", &v), 0);
    ck_assert_int_eq(rabbitmq_consumers_get(&c, SIZE_MAX, "/", "new.q", &v), 0);
    ck_assert_int_eq(rabbitmq_consumers_due(&c, 60, 5000 + 10000), 0);
    rabbitmq_consumers_free(&c);
    ck_assert_ptr_null(c.counts);
}
END_TEST

static Suite *rabbitmq_suite(void)
{
    Suite *s = suite_create("rabbitmq");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_queue_parse);
    tcase_add_test(tc, test_queue_ttl);
    tcase_add_test(tc, test_queue_consumed);
    tcase_add_loop_test(tc, test_queue_parse_bad, 0,
                        (int)(sizeof bad_queues / sizeof bad_queues[0]));
    tcase_add_loop_test(tc, test_each_object, 0, (int)(sizeof lists / sizeof lists[0]));
    tcase_add_test(tc, test_max_deliveries);
    tcase_add_loop_test(tc, test_topic, 0, (int)(sizeof topics / sizeof topics[0]));
    tcase_add_test(tc, test_binding_routes);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_consumers);
    suite_add_tcase(s, tc);
    tc = tcase_create("configure");
    tcase_add_loop_test(tc, test_config_bad, 0, (int)(sizeof bad_configs / sizeof bad_configs[0]));
    tcase_add_test(tc, test_config_min_interval);
    tcase_add_test(tc, test_config_good);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(rabbitmq_suite(), CK_ENV);
}
