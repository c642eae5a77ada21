/* activemq.c: `kind: activemq`, the reliability of ActiveMQ Classic 5.x queues through Jolokia.
 *
 * ActiveMQ exposes everything qrel reads as JMX MBeans, and Jolokia (bundled with the web
 * console at /api/jolokia on port 8161) serves them as JSON over HTTP. A scrape is ONE bulk
 * request, a POST of four requests that Jolokia answers in one reply: the Broker MBean (so a wrong
 * broker_name fails loudly instead of exporting nothing), every queue MBean by pattern with only
 * the attributes qrel uses (ConsumerCount among them; not DequeueCount, which counts expired and
 * dead-lettered messages with the consumed, so it is no qrel_messages_consumed_total), every
 * SlowConsumerStrategy MBean (the only broker-side lease: abortSlowAckConsumerStrategy's
 * maxTimeSinceLastAck), and, with a shared dead-letter queue, browse() on it cut by Jolokia at
 * dead_letter_browse_limit messages, since a shared queue says which queue a dead letter came from
 * only in each message's OriginalDestination. The client's RedeliveryPolicy, not the broker,
 * decides when a message is dead: its limit is read back from the dlqDeliveryFailureCause the
 * client writes into each dead letter. */
#include "activemq.h"
#include "activemq/client.h"
#include "activemq/dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "collector.h"
#include "common/glob.h"
#include "common/http.h"
#include "common/json.h"
#include "common/live_check.h"
#include "common/secret.h"
#include "config.h"
#include "deadline.h"
#include "log.h"

#define DEFAULT_BROWSE_LIMIT 1000

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    http_client_free(st->client);
    http_config_free(&st->http);
    exclude_free(&st->exclude);
    cfg_strv_free(st->queues);
    free(st->url);
    free(st->broker_name);
    free(st->username);
    secret_free(st->password);
    free(st->dead_letter_queue);
}

/* A name that goes into an ObjectName unquoted: none of the characters JMX gives a meaning. */
static int objectname_safe(const char *s)
{
    return strpbrk(s, ",=:\"*?\\\n") == NULL;
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    struct cfg_node *queues = NULL;
    if (http_base_url(map, "jolokia_url", NULL, &st->url, e) ||
        cfg_get_nonempty(map, "broker_name", &st->broker_name, e) ||
        cfg_get_nonempty(map, "username", &st->username, e) ||
        secret_get(map, "password", 0, &st->password, e) ||
        cfg_get_nonempty(map, "dead_letter_queue", &st->dead_letter_queue, e) ||
        cfg_get_int(map, "dead_letter_browse_limit", DEFAULT_BROWSE_LIMIT, 1, 100000,
                    &st->browse_limit, e) ||
        cfg_get_node(map, "queues", CFG_SEQ, &queues, e) ||
        cfg_get_strlist(map, "queues", &st->queues, &st->nqueues, e) ||
        http_config_parse(map, &st->http, e) ||
        exclude_read(&st->exclude, map, "exclude", NULL, e) || collector_finish(c, map, e) ||
        exclude_check(&st->exclude, map, e))
        return -1;
    if (!st->url)
        return cfg_error(e, map,
                         "jolokia_url: want the Jolokia endpoint, like "
                         "http://127.0.0.1:8161/api/jolokia");
    if (!st->broker_name)
        st->broker_name = xstrdup("localhost");
    if (!st->dead_letter_queue)
        st->dead_letter_queue = xstrdup(ACTIVEMQ_DEFAULT_DLQ);
    if (!st->username != !st->password)
        return cfg_error(e, cfg_at(map, st->username ? "username" : "password_file"),
                         "%s: want username and password_file (or password_env) together",
                         st->username ? "username" : "password");
    if (!objectname_safe(st->broker_name))
        return cfg_error(e, cfg_at(map, "broker_name"),
                         "broker_name: want a brokerName without , = : \" * ? or \\");
    const char *tok = strstr(st->dead_letter_queue, ACTIVEMQ_QUEUE_TOKEN);
    if (tok ? strstr(tok + 1, ACTIVEMQ_QUEUE_TOKEN) != NULL
            : !objectname_safe(st->dead_letter_queue))
        return cfg_error(e, cfg_at(map, "dead_letter_queue"),
                         "dead_letter_queue: want one queue name (ActiveMQ.DLQ, the shared "
                         "one) or a pattern with {queue} once (DLQ.{queue}, individual)");
    if (queues && st->nqueues == 0)
        return cfg_error(e, queues,
                         "queues: want at least one glob (leave queues out for every queue)");
    for (size_t i = 0; i < st->nqueues; i++) {
        const char *bad = glob_regex_syntax(st->queues[i]);
        if (!*st->queues[i] || bad)
            return cfg_error(e, queues->items[i], "queues: want a glob (* ? [...]), not %s",
                             bad ? "a regular expression" : "an empty name");
    }
    return 0;
}

/* The bulk request: a JSON list of Jolokia requests, built with jansson so every name is
 * escaped. Jolokia's stack traces are left out of error replies. */
static json_t *bulk_request(const struct state *st)
{
    char *b = xasprintf("org.apache.activemq:type=Broker,brokerName=%s", st->broker_name);
    char *qs = xasprintf("%s,destinationType=Queue,destinationName=*", b);
    char *ss = xasprintf("%s,service=SlowConsumerStrategy,instanceName=*", b);
    json_t *req = json_array();
    json_array_append_new(req, json_pack("{s:s, s:s, s:s, s:{s:b}}", "type", "read", "mbean", b,
                                         "attribute", "BrokerVersion", "config",
                                         "includeStackTrace", 0));
    json_array_append_new(req, json_pack("{s:s, s:s, s:[s,s,s,s,s], s:{s:b}}", "type", "read",
                                         "mbean", qs, "attribute", "Name", "QueueSize",
                                         "InFlightCount", "ConsumerCount", "SlowConsumerStrategy",
                                         "config", "includeStackTrace", 0));
    json_array_append_new(req, json_pack("{s:s, s:s, s:{s:b}}", "type", "read", "mbean", ss,
                                         "config", "includeStackTrace", 0));
    if (!strstr(st->dead_letter_queue, ACTIVEMQ_QUEUE_TOKEN)) {
        char *d =
            xasprintf("%s,destinationType=Queue,destinationName=%s", b, st->dead_letter_queue);
        json_array_append_new(req,
                              json_pack("{s:s, s:s, s:s, s:{s:I, s:b}}", "type", "exec", "mbean", d,
                                        "operation", "browse()", "config", "maxCollectionSize",
                                        (json_int_t)st->browse_limit, "includeStackTrace", 0));
        free(d);
    }
    free(b);
    free(qs);
    free(ss);
    return req;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    st->exclude.dropped = 0; /* a failed collection emitted none: count this one alone */
    json_t *req = bulk_request(st);
    json_t *doc;
    /* the browsed dead letters are read for the members the scrape uses only (reply.c) */
    int rc = activemq_client_post_with(c, req, "POST jolokia", activemq_reply_parse, dl, &doc, e);
    json_decref(req);
    if (rc)
        return -1;
    struct activemq_filter f = {
        .broker_name = st->broker_name,
        .queues = (const char *const *)st->queues,
        .nqueues = st->nqueues,
        .exclude = &st->exclude,
        .dead_letter_queue = st->dead_letter_queue,
    };
    struct entry_skips skips = {0};
    struct activemq_result res;
    rc = activemq_bulk_collect(doc, &f, deadline_wall_now(), out, &skips, &res, e);
    json_decref(doc);
    if (rc) {
        entry_skips_free(&skips);
        return err_prefix(e, "POST jolokia");
    }
    entry_skips_emit(&skips, out);
    entry_skips_free(&skips);
    exclude_emit(&st->exclude, out, "queue");
    if (res.unread) {
        char n[32], m[32];
        snprintf(n, sizeof n, "%zu", res.unread);
        snprintf(m, sizeof m, "%zu", res.dlq_size);
        log_kv(LOG_WARN, "dead letters beyond dead_letter_browse_limit not attributed", "source",
               c->name, "dead_letter_queue", st->dead_letter_queue, "unread", n, "messages", m,
               NULL);
    }
    return 0;
}

static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    return live_check(c, NULL, dl, e);
}

static const struct audit_hint hints[] = {
    {"no_dead_letter_queue",
     "ActiveMQ dead-letters by the consumers' RedeliveryPolicy into ActiveMQ.DLQ or, with an "
     "individualDeadLetterStrategy, DLQ.<queue>: set dead_letter_queue to the broker's policy"},
    {"no_broker_lease",
     "give the queue's destination policy an abortSlowAckConsumerStrategy with "
     "maxTimeSinceLastAck above the longest handler, so the broker aborts a consumer that stops "
     "acknowledging and its messages go to another"},
    /* ConsumerCount counts every subscription on the queue: JMS consumers, an open
     * QueueBrowser, a network bridge's consumer. */
    {"backlog_without_consumer", "start the JMS consumers of this queue (a MessageConsumer or "
                                 "listener on it, connected to this broker), or delete the "
                                 "queue if nothing should read it"},
    {NULL, NULL}};

/* A dead_letters entry for `qrel dlq` (at load, no I/O): the queue must be one this source
 * watches (its queues globs, not excluded, not a dead-letter queue itself). */
static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    struct state *st = c->priv;
    char why[300];
    if (activemq_dlq_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    int in = !st->queues;
    for (size_t i = 0; !in && i < st->nqueues; i++)
        in = glob_match(st->queues[i], queue);
    if (!in || activemq_is_dlq(st->dead_letter_queue, queue) || exclude_match(&st->exclude, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: source \"%s\" does not watch a queue named \"%s\"", c->name,
                         queue);
    return 0;
}

const struct collector_kind activemq_kind = {.name = "activemq",
                                             .audit_hints = hints,
                                             .state_size = sizeof(struct state),
                                             .configure = configure,
                                             .collect = collect,
                                             .check = check,
                                             .destroy = destroy,
                                             .dead_letter_validate = dead_letter_validate,
                                             .dead_letter_ids = dlq_dead_letter_ids,
                                             .dlq = &activemq_dlq_kind};
