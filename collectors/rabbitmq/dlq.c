/* dlq.c: what `qrel dlq` does with a RabbitMQ dead-letter queue (the hooks of dlq_kind.h), over
 * AMQP 0-9-1 (amqp_conn.c) with the management API for what only it says.
 *
 * The dead-letter queue of queue Q is the one the scrape finds: Q's dead-letter exchange (queue
 * argument or policy) and the queue its bindings route Q's dead-letter routing key to; exactly
 * one, or the read is refused. AMQP cannot look at a message without taking it, so read()
 * takes each with basic.get without auto-ack and holds the delivery; the broker marks it
 * redelivered, and on a quorum dead-letter queue each return adds one to its x-delivery-count
 * (read_effect). A dead-letter queue with a delivery limit of its own would drop a message after
 * enough reads, so it is refused unless the source accepts it (dlq_accept_delivery_limit).
 * release() nacks with requeue, one delivery at a time, everything read and not removed; a
 * process killed before that loses nothing either: the broker requeues what a closed connection
 * held. The broker's consumer_timeout closes a channel that holds a delivery too long, so a run
 * stops moving once it has held them half of it.
 *
 * A replay publishes each message to the default exchange with its origin queue (x-death's
 * queue) as routing key, mandatory, and waits for the publisher confirm: publishing to the
 * original exchange would fan it out again to every other queue bound there. Body and
 * properties go back as they were; x-death, x-first-death-*, x-last-death-* and x-delivery-count
 * are dropped and qrel-replayed is set to replays + 1. Only after the confirm is the delivery
 * acked on the dead-letter queue. */
#include "rabbitmq/dlq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "log.h"
#include "rabbitmq.h"
#include "rabbitmq/amqp_conn.h"
#include "rabbitmq/client.h"
#include "alloc.h"

/* RabbitMQ's default consumer_timeout (30 min), used when neither the dead-letter queue's
 * x-consumer-timeout nor the source's consumer_timeout says otherwise. */
#define DEFAULT_CONSUMER_TIMEOUT 1800.0
/* How long a failed read may still spend putting back what it took. */
#define RELEASE_GRACE_SECONDS 5.0

struct dlq_state {
    struct rabbitmq_amqp *conn;
    double delivery_limit;   /* the dead-letter queue's own, -1: none */
    double origin_limit;     /* the origin queue's delivery limit, -1: none */
    double consumer_timeout; /* seconds */
    int64_t first_get_ms;    /* monotonic, when the first delivery was taken */
};

struct letter {
    amqp_message_t msg;
    uint64_t tag;
    int held;
    struct rabbitmq_death death;
};

static void letter_free(void *p)
{
    struct letter *l = p;
    if (!l)
        return;
    amqp_destroy_message(&l->msg);
    rabbitmq_death_free(&l->death);
    free(l);
}

static void state_free(void *p)
{
    struct dlq_state *s = p;
    if (!s)
        return;
    rabbitmq_amqp_close(s->conn);
    free(s);
}

/* GET /api/queues/VHOST/NAME into *doc and q (strings point into *doc). 0 found, 1 not, -1. */
static int fetch_queue(struct rabbitmq_state *st, const char *name, const struct deadline *dl,
                       json_t **doc, struct rabbitmq_queue *q, struct err *e)
{
    char *vh = http_escape(st->amqp_vhost), *qn = http_escape(name);
    char *url = xasprintf("%s/api/queues/%s/%s", st->url, vh, qn);
    free(vh);
    free(qn);
    char what[400];
    snprintf(what, sizeof what, "GET /api/queues/%s/%s", st->amqp_vhost, name);
    struct http_response r;
    memset(&r, 0, sizeof r);
    int nf = 0;
    int rc = rabbitmq_client_get(st, url, 1, dl, &r, &nf, e);
    free(url);
    if (rc)
        return -1;
    if (nf)
        return 1;
    *doc = json_parse_body(r.body, r.len, what, e);
    http_response_free(&r);
    if (!*doc || rabbitmq_queue_parse(*doc, "$", 1, q, e)) {
        if (*doc)
            err_prefix(e, "%s", what);
        return -1;
    }
    return 0;
}

/* The one queue that queue q's dead letters are routed to, malloc'd into *out. */
static int find_dlq(struct collector *c, const struct rabbitmq_queue *q, const struct deadline *dl,
                    char **out, struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    if (!q->dlx)
        return err_set(e, ERR_QUERY,
                       "queue \"%s\" has no dead-letter exchange (x-dead-letter-exchange, by "
                       "argument or policy), so no dead-letter queue to read",
                       q->name);
    struct dlx x = {.vhost = st->amqp_vhost, .name = q->dlx};
    if (rabbitmq_client_dlx(st, dl, &x, e))
        goto fail;
    if (x.missing) {
        err_set(e, ERR_QUERY, "the dead-letter exchange \"%s\" of queue \"%s\" does not exist",
                q->dlx, q->name);
        goto fail;
    }
    const char *key = q->dlrk ? q->dlrk : q->name;
    char *found = NULL;
    size_t n = 0;
    if (!x.bindings) { /* the default exchange: the queue named by the key */
        found = xstrdup(key);
        n = 1;
    }
    for (size_t i = 0; x.bindings && i < json_array_size(x.bindings); i++) {
        const json_t *b = json_array_get(x.bindings, i);
        const char *dtype = json_string_value(json_object_get(b, "destination_type"));
        const char *dest = json_string_value(json_object_get(b, "destination"));
        const char *rk = json_string_value(json_object_get(b, "routing_key"));
        if (!dtype || !dest || !rk || strcmp(dtype, "queue") != 0 ||
            !rabbitmq_binding_routes(x.type, rk, key) || (found && strcmp(found, dest) == 0))
            continue;
        if (++n == 1)
            found = xstrdup(dest);
    }
    free(x.type);
    json_decref(x.bindings);
    if (n != 1) {
        free(found);
        return err_set(e, ERR_QUERY,
                       n == 0 ? "the dead-letter exchange \"%s\" of queue \"%s\" routes its dead "
                                "letters to no queue"
                              : "the dead-letter exchange \"%s\" of queue \"%s\" routes its dead "
                                "letters to several queues: qrel reads one",
                       q->dlx, q->name);
    }
    if (strcmp(found, q->name) == 0) {
        free(found);
        return err_set(e, ERR_QUERY, "queue \"%s\" dead-letters into itself", q->name);
    }
    *out = found;
    return 0;
fail:
    free(x.type);
    json_decref(x.bindings);
    return -1;
}

/* The dead-letter queue's own figures: its delivery limit (refused unless accepted) and its
 * consumer timeout. */
static int dlq_settings(struct collector *c, const char *dlq, const struct deadline *dl,
                        struct dlq_state *s, struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    json_t *doc = NULL;
    struct rabbitmq_queue q;
    int got = fetch_queue(st, dlq, dl, &doc, &q, e);
    if (got != 0) {
        json_decref(doc);
        return got < 0 ? -1 : err_set(e, ERR_QUERY, "dead-letter queue \"%s\" does not exist", dlq);
    }
    s->delivery_limit = q.delivery_limit;
    s->consumer_timeout = q.consumer_timeout_ms > 0  ? q.consumer_timeout_ms / 1000.0
                          : st->consumer_timeout > 0 ? st->consumer_timeout
                                                     : DEFAULT_CONSUMER_TIMEOUT;
    json_decref(doc);
    if (s->delivery_limit >= 0 && !st->dlq_accept_delivery_limit)
        return err_set(e, ERR_QUERY,
                       "dead-letter queue \"%s\" has a delivery limit of its own (%g): every read "
                       "returns each message to it once, raising its x-delivery-count, and a "
                       "message returned more than %g times is dropped or dead-lettered onward, "
                       "so at most %g inspections are safe for a message that never left it; "
                       "remove the limit from the dead-letter queue, or set "
                       "dlq_accept_delivery_limit: true on the source",
                       dlq, s->delivery_limit, s->delivery_limit, s->delivery_limit);
    return 0;
}

static int find_queues(struct collector *c, const char *queue, const struct deadline *dl,
                       struct dlq_batch *b, struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    json_t *doc = NULL;
    struct rabbitmq_queue q;
    int got = fetch_queue(st, queue, dl, &doc, &q, e);
    int rc = -1;
    if (got == 1)
        err_set(e, ERR_QUERY, "queue \"%s\" does not exist in vhost \"%s\"", queue, st->amqp_vhost);
    if (got == 0 && find_dlq(c, &q, dl, &b->dead_letter_queue, e) == 0)
        rc = 0;
    ((struct dlq_state *)b->kind_data)->origin_limit = got == 0 ? q.delivery_limit : -1;
    json_decref(doc);
    if (rc)
        return -1;
    b->origin = xstrdup(queue);
    return dlq_settings(c, b->dead_letter_queue, dl, b->kind_data, e);
}

static void add_letter(struct dlq_batch *b, struct letter *l, const char *id_field)
{
    const struct dlq_state *s = b->kind_data;
    struct dlq_message *dm = dlq_batch_push(b);
    const amqp_basic_properties_t *p = &l->msg.properties;
    if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) && p->message_id.len > 0)
        dm->message_id = xstrndup(p->message_id.bytes, p->message_id.len);
    else
        dm->message_id = xasprintf("#%zu", b->n); /* its position in this read */
    size_t len = 0;
    rabbitmq_dlq_work_id(&l->msg, id_field, &dm->work_id, &len);
    if (dm->work_id && strlen(dm->work_id) != len) { /* a NUL inside matches no row */
        free(dm->work_id);
        dm->work_id = NULL;
    }
    rabbitmq_death_read(p, &l->death);
    /* A quorum queue dead-letters with reason delivery_limit after exactly the deliveries its
     * limit allows (its x-delivery-count does not travel with the message); otherwise each death
     * of x-death's count was one rejected (or expired) delivery. */
    if (l->death.reason && strcmp(l->death.reason, "delivery_limit") == 0 &&
        strcmp(l->death.queue, b->origin) == 0 && s->origin_limit >= 0)
        dm->deliveries = (int64_t)rabbitmq_max_deliveries(s->origin_limit);
    else
        dm->deliveries = l->death.count;
    dm->dead_since = l->death.time;
    dm->body_bytes = l->msg.body.len;
    dm->replays = l->death.replays;
    dm->kind_data = l;
}

/* nacks with requeue every held delivery; goes on after a failure, returns the first. */
static int nack_all(struct dlq_batch *b, struct err *e)
{
    struct dlq_state *s = b->kind_data;
    int rc = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct letter *l = b->v[i].kind_data;
        if (!l->held)
            continue;
        struct err one;
        err_clear(&one);
        if (rabbitmq_amqp_nack(s->conn, l->tag, &one)) {
            if (rc == 0)
                *e = one;
            rc = -1;
            break; /* the connection is gone: the broker requeues the rest itself */
        }
        l->held = 0;
    }
    return rc;
}

static int read_letters(struct collector *c, const char *queue, const char *id_field, size_t max,
                        enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                        struct err *e)
{
    (void)purpose; /* read the same way for both */
    struct rabbitmq_state *st = c->priv;
    struct dlq_state *s = xcalloc(1, sizeof *s);
    s->delivery_limit = s->origin_limit = -1;
    out->kind_data = s;
    if (find_queues(c, queue, dl, out, e) || rabbitmq_amqp_open(st, dl, &s->conn, e))
        return -1;
    uint32_t ready = 0, consumers = 0;
    int got = rabbitmq_amqp_queue(s->conn, out->dead_letter_queue, dl, &ready, &consumers, e);
    if (got <= 0) {
        if (got == 0)
            err_set(e, ERR_QUERY, "dead-letter queue \"%s\" does not exist",
                    out->dead_letter_queue);
        return -1;
    }
    out->total = ready;
    int rc = 0;
    size_t near_limit = 0;
    while (out->n < max) {
        struct letter *l = xcalloc(1, sizeof *l);
        got = rabbitmq_amqp_get(s->conn, out->dead_letter_queue, dl, &l->msg, &l->tag, e);
        if (got <= 0) {
            free(l);
            rc = got;
            break;
        }
        if (out->n == 0)
            s->first_get_ms = deadline_now_ms();
        l->held = 1;
        add_letter(out, l, id_field);
        if (s->delivery_limit >= 0 && l->death.delivery_count + 1 > s->delivery_limit)
            near_limit++;
    }
    if (rc < 0) {
        struct err ignored;
        nack_all(out, &ignored);
        return -1;
    }
    if (out->total < out->n)
        out->total = out->n;
    if (near_limit) {
        char n[32], lim[32];
        snprintf(n, sizeof n, "%zu", near_limit);
        snprintf(lim, sizeof lim, "%g", s->delivery_limit);
        log_kv(LOG_WARN,
               "dead letters read past the dead-letter queue's own delivery limit: putting them "
               "back drops them or dead-letters them onward",
               "source", c->name, "dead_letter_queue", out->dead_letter_queue, "messages", n,
               "delivery_limit", lim, NULL);
    }
    return 0;
}

static int requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *dm,
                   const struct deadline *dl, struct err *e)
{
    (void)c;
    struct dlq_state *s = b->kind_data;
    struct letter *l = dm->kind_data;
    if (!l->death.queue)
        return err_set(e, ERR_QUERY,
                       "message %s carries no x-death header (the broker did not dead-letter it): "
                       "its origin is unknown",
                       dm->message_id);
    if (strcmp(l->death.queue, b->origin) != 0)
        return err_set(e, ERR_QUERY, "message %s died in queue \"%s\", not in \"%s\"",
                       dm->message_id, l->death.queue, b->origin);
    double held = (double)(deadline_now_ms() - s->first_get_ms) / 1000.0;
    if (held > s->consumer_timeout / 2)
        return err_set(e, ERR_QUERY,
                       "not put back: this run has held its deliveries %.0f s, half of the "
                       "consumer_timeout (%.0f s) after which the broker closes the channel; run "
                       "the replay again (with a smaller --limit)",
                       held, s->consumer_timeout);
    amqp_basic_properties_t props = l->msg.properties;
    int n = (props._flags & AMQP_BASIC_HEADERS_FLAG) ? props.headers.num_entries : 0;
    amqp_table_entry_t *entries = xcalloc((size_t)n + 1, sizeof *entries);
    props.headers.num_entries =
        rabbitmq_replay_headers(&l->msg.properties, dm->replays + 1, entries);
    props.headers.entries = entries;
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    int rc = rabbitmq_amqp_publish(s->conn, b->origin, &props, l->msg.body, dl, e);
    free(entries);
    return rc;
}

static int remove_letter(struct collector *c, struct dlq_batch *b, struct dlq_message *dm,
                         const struct deadline *dl, struct err *e)
{
    (void)dl; /* basic.ack has no reply; the close in release() waits for the broker */
    struct dlq_state *s = b->kind_data;
    struct letter *l = dm->kind_data;
    if (rabbitmq_amqp_ack(s->conn, l->tag, e))
        return -1;
    l->held = 0;
    /* one line per move, for whoever follows a long replay (and the kill test, which waits
     * for it) */
    log_kv(LOG_DEBUG, "dead letter put back and acked", "source", c->name, "dead_letter_queue",
           b->dead_letter_queue, "message_id", dm->message_id, NULL);
    return 0;
}

static int release(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                   struct err *e)
{
    (void)c;
    (void)dl;
    struct dlq_state *s = b->kind_data;
    if (!s || !s->conn)
        return 0;
    int rc = nack_all(b, e);
    /* The close waits for the broker's close-ok, which it sends after the acks and nacks before
     * it; a connection already lost has had its deliveries requeued by the broker. */
    rabbitmq_amqp_close(s->conn);
    s->conn = NULL;
    return rc;
}

static int check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                        struct err *e)
{
    (void)c;
    struct dlq_state *s = b->kind_data;
    uint32_t ready = 0, consumers = 0;
    int got = rabbitmq_amqp_queue(s->conn, b->origin, dl, &ready, &consumers, e);
    if (got == 0)
        return err_set(e, ERR_QUERY,
                       "queue \"%s\" does not exist: what a replay publishes to it would come "
                       "back unroutable",
                       b->origin);
    return got < 0 ? -1 : 0;
}

const struct dlq_kind rabbitmq_dlq_kind = {
    .read = read_letters,
    .requeue = requeue,
    .remove = remove_letter,
    .release = release,
    .check_origin = check_origin,
    .message_free = letter_free,
    .batch_free = state_free,
    .read_effect = "each read marks every message read redelivered, and on a quorum dead-letter "
                   "queue raises its x-delivery-count by one (AMQP cannot show a message without "
                   "delivering it); every message read and not replayed is put back at once "
                   "(basic.nack with requeue)",
};
