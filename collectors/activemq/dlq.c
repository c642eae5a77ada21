/* dlq.c: what `qrel dlq` does with an ActiveMQ dead-letter queue (the hooks of dlq_kind.h).
 *
 * read() browses the queue's dead-letter queue (the dead_letter_queue pattern: ActiveMQ.DLQ, or
 * DLQ.{queue}) with the queue MBean's browse() through Jolokia, cut at dead_letter_browse_limit
 * by Jolokia's maxCollectionSize, and keeps the messages whose OriginalDestination is the queue.
 * A browse is a JMX read of the broker's cursor: nothing is dispatched, acknowledged or
 * marked redelivered, so reading changes nothing (no read_effect, no release()).
 *
 * A replay is the broker's own retryMessage(messageId) on the dead-letter queue's MBean: in one
 * operation the broker sends the message back to its OriginalDestination, body and properties
 * as they are, and then removes it from the dead-letter queue. That is move(): one request, so
 * qrel never holds a message between two steps. retryMessage takes no argument but the id, so
 * it cannot carry a replay stamp: the kind does not stamp (replays -1). */
#include "activemq/dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activemq.h"
#include "activemq/client.h"
#include "alloc.h"
#include "common/json.h"

/* The batch's kind_data: the dead-letter queue's MBean. */
struct dlq_state {
    char *mbean;
};

static void state_free(void *p)
{
    struct dlq_state *s = p;
    if (!s)
        return;
    free(s->mbean);
    free(s);
}

/* The value of a single Jolokia reply: 1, 0 for status 404 (no such MBean), -1 with e set. */
static int single_value(const json_t *doc, const char *what, json_t **value, struct err *e)
{
    double status;
    if (json_expect_object(doc, "$", e) || json_need_number(doc, "$", "status", &status, e))
        return -1;
    if (status == 404)
        return 0;
    if (status != 200) {
        const char *type = json_string_value(json_object_get(doc, "error"));
        return err_set(e, ERR_QUERY, "%s: Jolokia answered status %.0f (%s)", what, status,
                       type ? type : "no error");
    }
    *value = json_object_get(doc, "value");
    if (!*value)
        return err_set(e, ERR_PROTOCOL, "%s: $.value: missing", what);
    return 1;
}

static json_t *exec_request(const char *mbean, const char *operation, json_t *args,
                            long long max_collection)
{
    json_t *req = json_pack("{s:s, s:s, s:s, s:{s:b}}", "type", "exec", "mbean", mbean, "operation",
                            operation, "config", "includeStackTrace", 0);
    if (args)
        json_object_set_new(req, "arguments", args);
    if (max_collection > 0)
        json_object_set_new(json_object_get(req, "config"), "maxCollectionSize",
                            json_integer(max_collection));
    return req;
}

static int read_letters(struct collector *c, const char *queue, const char *id_field, size_t max,
                        enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                        struct err *e)
{
    (void)purpose; /* a browse reads the same way for both */
    struct state *st = c->priv;
    struct dlq_state *s = xcalloc(1, sizeof *s);
    out->kind_data = s;
    out->dead_letter_queue = activemq_dlq_name(st->dead_letter_queue, queue);
    out->origin = xstrdup(queue);
    s->mbean = activemq_client_queue_mbean(st, out->dead_letter_queue);
    char what[300];
    snprintf(what, sizeof what, "browse() of \"%s\"", out->dead_letter_queue);
    json_t *req = exec_request(s->mbean, "browse()", NULL, st->browse_limit);
    json_t *doc, *list = NULL;
    int rc = activemq_client_post(c, req, what, dl, &doc, e);
    json_decref(req);
    if (rc)
        return -1;
    int got = single_value(doc, what, &list, e);
    if (got == 0) /* no such queue yet: the broker has dead-lettered nothing there */
        list = NULL;
    else if (got < 0 || json_expect_array(list, "$.value", e)) {
        json_decref(doc);
        return -1;
    }
    size_t total = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        struct activemq_letter l;
        if (!activemq_dlq_letter(json_array_get(list, i), queue, id_field, &l))
            continue;
        total++;
        if (out->n >= max) {
            free(l.work_id);
            continue;
        }
        struct dlq_message *m = dlq_batch_push(out);
        m->message_id = xstrdup(l.message_id);
        m->work_id = l.work_id;
        m->deliveries = l.deliveries;
        m->dead_since = l.sent;
        m->body_bytes = l.body_bytes;
        m->replays = -1;
    }
    out->total = total;
    json_decref(doc);
    return 0;
}

/* retryMessage(id): the broker resends the message to its OriginalDestination and then removes
 * it. An id it no longer holds fails with "Could not find message" (another client took it). */
static int move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                const struct deadline *dl, struct err *e)
{
    struct dlq_state *s = b->kind_data;
    char what[300];
    snprintf(what, sizeof what, "retryMessage() on \"%s\"", b->dead_letter_queue);
    json_t *req = exec_request(s->mbean, "retryMessage(java.lang.String)",
                               json_pack("[s]", m->message_id), 0);
    json_t *doc, *v = NULL;
    int rc = activemq_client_post(c, req, what, dl, &doc, e);
    json_decref(req);
    if (rc)
        return -1;
    double status = 0;
    const char *error = json_string_value(json_object_get(doc, "error"));
    json_t *st_v = json_object_get(doc, "status");
    if (json_is_number(st_v))
        status = json_number_value(st_v);
    if (status != 200 && error && strstr(error, "Could not find message")) {
        json_decref(doc);
        return 1;
    }
    rc = single_value(doc, what, &v, e);
    if (rc == 0)
        rc = err_set(e, ERR_QUERY, "%s: the dead-letter queue is gone", what);
    else if (rc > 0 && !json_is_true(v))
        rc = err_set(e, ERR_QUERY, "%s: the broker did not move message %s", what, m->message_id);
    else if (rc > 0)
        rc = 0;
    json_decref(doc);
    return rc;
}

/* The origin queue must exist: retryMessage would otherwise create it, with no consumer. */
static int check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                        struct err *e)
{
    struct state *st = c->priv;
    char *mbean = activemq_client_queue_mbean(st, b->origin);
    json_t *req = json_pack("{s:s, s:s, s:s, s:{s:b}}", "type", "read", "mbean", mbean, "attribute",
                            "ConsumerCount", "config", "includeStackTrace", 0);
    free(mbean);
    char what[300];
    snprintf(what, sizeof what, "read of queue \"%s\"", b->origin);
    json_t *doc, *v = NULL;
    int rc = activemq_client_post(c, req, what, dl, &doc, e);
    json_decref(req);
    if (rc)
        return -1;
    rc = single_value(doc, what, &v, e);
    json_decref(doc);
    if (rc == 0)
        return err_set(e, ERR_QUERY,
                       "queue \"%s\" does not exist: retryMessage would create it and leave "
                       "the messages there unconsumed",
                       b->origin);
    return rc < 0 ? -1 : 0;
}

const struct dlq_kind activemq_dlq_kind = {
    .read = read_letters,
    .move = move,
    .check_origin = check_origin,
    .batch_free = state_free,
};
