/* pubsub/dlq.c: `qrel dlq` for Pub/Sub subscriptions (core/dlq_kind.h).
 *
 * A subscription's deadLetterPolicy names a dead-letter topic; a topic holds nothing itself, so
 * the dead letters are read from a subscription on it: the only one, or the one named in the
 * source's dead_letter_subscriptions. Reading is a pull, which leases each message for that
 * subscription's ack deadline (and raises its delivery attempt there): release() hands back
 * every message read and not removed with modifyAckDeadline 0, so another reader (or the next
 * run) gets it at once. A replay publishes each message to the topic of the subscription it died
 * on, with its data, its own attributes (not the CloudPubSubDeadLetter* ones Pub/Sub added) and
 * its orderingKey, and only then acknowledges it on the dead-letter subscription. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "dlq.h"
#include "common/json.h"
#include "common/json_id.h"
#include "common/live_check.h"
#include "hashtab.h"
#include "pubsub.h"
#include "alloc.h"
#include "buf.h"

#define PULL_MAX 100  /* maxMessages per pull: replies stay small, a limit is met closely */
#define ACK_CHUNK 500 /* ackIds per acknowledge / modifyAckDeadline (the API caps the body) */

/* ---- configuration ---- */

/* 1 when a and b name the same subscription of st's project. */
static int same_sub(const struct pubsub_state *st, const char *a, const char *b)
{
    char *na = pubsub_client_sub_name(st, a), *nb = pubsub_client_sub_name(st, b);
    int same = strcmp(na, nb) == 0;
    free(na);
    free(nb);
    return same;
}

static int watched(const struct pubsub_state *st, const char *sub)
{
    if (!st->subscriptions) /* every subscription of the project but those exclude leaves out */
        return !exclude_match(&st->exclude, pubsub_topic_id(sub));
    for (size_t i = 0; i < st->nsubscriptions; i++)
        if (same_sub(st, st->subscriptions[i], sub))
            return 1;
    return 0;
}

static int not_watched(struct collector *c, const struct cfg_node *at, const char *what,
                       const char *sub, struct err *e)
{
    const struct pubsub_state *st = c->priv;
    if (!st->subscriptions)
        return cfg_error(e, at,
                         "%s: source \"%s\" does not watch subscription \"%s\" (its exclude "
                         "leaves it out)",
                         what, c->name, sub);
    struct buf list;
    buf_init(&list);
    for (size_t i = 0; i < st->nsubscriptions; i++)
        buf_printf(&list, "%s%s", i ? ", " : "", st->subscriptions[i]);
    cfg_error(e, at, "%s: source \"%s\" does not watch subscription \"%s\" (subscriptions: %s)",
              what, c->name, sub, list.data);
    buf_free(&list);
    return -1;
}

int pubsub_dead_letter_subs_configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct pubsub_state *st = c->priv;
    if (!map)
        return 0;
    st->dl_queue = xcalloc(map->n + 1, sizeof *st->dl_queue);
    st->dl_sub = xcalloc(map->n + 1, sizeof *st->dl_sub);
    for (size_t i = 0; i < map->n; i++) {
        const struct cfg_pair *p = &map->pairs[i];
        const struct cfg_node *v = p->value;
        if (!pubsub_sub_ref_ok(p->key))
            return cfg_error(e, v,
                             "dead_letter_subscriptions: want subscription ids or "
                             "projects/PROJECT/subscriptions/ID as keys, got \"%s\"",
                             p->key);
        if (v->kind != CFG_SCALAR || !pubsub_sub_ref_ok(v->scalar))
            return cfg_error(e, v,
                             "dead_letter_subscriptions: %s: want the subscription on its "
                             "dead-letter topic to read dead letters from (an id or "
                             "projects/PROJECT/subscriptions/ID)",
                             p->key);
        if (!watched(st, p->key))
            return not_watched(c, v, "dead_letter_subscriptions", p->key, e);
        live_check_note(&st->dead_letter_queues, p->key);
        st->dl_queue[st->ndl] = xstrdup(p->key);
        st->dl_sub[st->ndl++] = xstrdup(v->scalar);
    }
    return 0;
}

int pubsub_dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    char why[300];
    if (json_id_field_check(id_field, PUBSUB_ATTRIBUTE_PREFIX, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!pubsub_sub_ref_ok(queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: want a subscription id or projects/PROJECT/subscriptions/ID, "
                         "got \"%s\"",
                         queue);
    /* Whether it has a deadLetterPolicy only Pub/Sub knows: read() says so when it has none. */
    if (!watched(c->priv, queue))
        return not_watched(c, cfg_at(entry, "queue"), "queue", queue, e);
    live_check_note(&((struct pubsub_state *)c->priv)->dead_letter_queues, queue);
    return 0;
}

/* ---- reading ---- */

/* The subscription to pull dead letters from: the configured one, which must read the
 * dead-letter topic, or the topic's only subscription. malloc'd resource name in *out. */
static int dead_letter_sub(struct pubsub_state *st, const struct deadline *dl, const char *queue,
                           const char *dlt, char **out, struct err *e)
{
    *out = NULL;
    struct buf url;
    buf_init(&url);
    json_t *doc = NULL, *list = NULL;
    int rc = -1;
    for (size_t i = 0; i < st->ndl; i++) {
        if (!same_sub(st, st->dl_queue[i], queue))
            continue;
        char *name = pubsub_client_sub_name(st, st->dl_sub[i]);
        const char *topic = NULL;
        buf_printf(&url, "%s/v1/%s", st->endpoint, name);
        if (pubsub_client_call(st, dl, "GET", url.data, NULL, "GET dead-letter subscription", 1,
                               &doc, e) == 0 &&
            (!doc || json_expect_object(doc, "$", e) == 0) &&
            (!doc || json_get_string(doc, "$", "topic", &topic, e) >= 0)) {
            if (!doc)
                err_set(e, ERR_QUERY,
                        "dead_letter_subscriptions: subscription \"%s\" does not exist", name);
            else if (!topic || strcmp(topic, dlt) != 0)
                err_set(e, ERR_QUERY,
                        "dead_letter_subscriptions: subscription \"%s\" reads topic \"%s\", not "
                        "\"%s\", the dead-letter topic of \"%s\"",
                        name, topic ? topic : "", dlt, queue);
            else
                rc = 0;
        }
        if (rc == 0)
            *out = name;
        else
            free(name);
        goto out;
    }
    buf_printf(&url, "%s/v1/%s/subscriptions?pageSize=1000", st->endpoint, dlt);
    if (pubsub_client_call(st, dl, "GET", url.data, NULL, "GET dead-letter topic subscriptions", 1,
                           &doc, e))
        goto out;
    if (!doc) {
        err_set(e, ERR_QUERY, "dead-letter topic \"%s\" of \"%s\" does not exist", dlt, queue);
        goto out;
    }
    if (json_expect_object(doc, "$", e) ||
        json_get_array(doc, "$", "subscriptions", &list, e) < 0) {
        err_prefix(e, "GET dead-letter topic subscriptions");
        goto out;
    }
    size_t n = list ? json_array_size(list) : 0;
    if (n == 1 && json_is_string(json_array_get(list, 0))) {
        *out = xstrdup(json_string_value(json_array_get(list, 0)));
        rc = 0;
    } else if (n == 0) {
        err_set(e, ERR_QUERY,
                "dead-letter topic \"%s\" of \"%s\" has no subscription: Pub/Sub drops what is "
                "published to a topic nobody subscribes to, so its dead letters are gone; create "
                "one",
                dlt, queue);
    } else {
        err_set(e, ERR_QUERY,
                "dead-letter topic \"%s\" of \"%s\" has %zu subscriptions: name the one to read in "
                "the source's dead_letter_subscriptions (%s: SUBSCRIPTION)",
                dlt, queue, n, queue);
    }
out:
    json_decref(doc);
    buf_free(&url);
    return rc;
}

static void received_free(void *p)
{
    pubsub_received_free(p);
    free(p);
}

/* The hash of a message's id, for the index that folds a redelivery into the message. */
static uint64_t id_hash(const void *ctx, uint32_t id)
{
    const struct dlq_batch *b = ctx;
    const char *s = b->v[id].message_id;
    return hashtab_hash(s, strlen(s), 0);
}

/* Adds one received message to b, or, when the pull redelivered one already read (its lease ran
 * out during a long read), takes its new ackId. *fresh says which. */
static int add_received(struct dlq_batch *b, struct hashtab *seen, const json_t *item,
                        const char *ctx, const char *id_field, int *fresh, struct err *e)
{
    struct pubsub_received *r = xcalloc(1, sizeof *r);
    if (pubsub_received_parse(item, ctx, r, e)) {
        free(r);
        return -1;
    }
    struct hashtab_probe p;
    uint64_t h = hashtab_hash(r->message_id, strlen(r->message_id), 0);
    for (uint32_t id = hashtab_first(seen, h, &p); id != HASHTAB_END; id = hashtab_next(seen, &p))
        if (strcmp(b->v[id].message_id, r->message_id) == 0) {
            struct pubsub_received *old = b->v[id].kind_data;
            free(old->ack_id);
            old->ack_id = r->ack_id;
            r->ack_id = NULL;
            received_free(r);
            *fresh = 0;
            return 0;
        }
    struct dlq_message *m = dlq_batch_push(b);
    m->kind_data = r;
    m->message_id = xstrdup(r->message_id);
    m->work_id = pubsub_work_id(r, id_field, &m->body_bytes);
    m->deliveries = r->source_deliveries;
    m->replays = r->replays;
    m->dead_since = r->publish_time; /* when Pub/Sub published it to the dead-letter topic */
    hashtab_add(seen, &p, (uint32_t)(b->n - 1), id_hash, b);
    *fresh = 1;
    return 0;
}

static int pull(struct pubsub_state *st, const struct deadline *dl, const char *dead_sub,
                const char *id_field, size_t max, struct dlq_batch *b, struct err *e)
{
    struct hashtab seen = {0};
    struct buf url, body;
    buf_init(&url);
    buf_init(&body);
    buf_printf(&url, "%s/v1/%s:pull", st->endpoint, dead_sub);
    int rc = -1;
    while (b->n < max) {
        size_t want = max - b->n < PULL_MAX ? max - b->n : PULL_MAX;
        buf_reset(&body);
        /* returnImmediately: an empty reply ends the read instead of waiting for new messages */
        buf_printf(&body, "{\"maxMessages\":%zu,\"returnImmediately\":true}", want);
        json_t *doc = NULL, *list = NULL;
        if (pubsub_client_call(st, dl, "POST", url.data, body.data, "pull", 0, &doc, e))
            goto out;
        size_t fresh = 0;
        int bad = pubsub_pull_list(doc, &list, e);
        for (size_t i = 0; !bad && list && i < json_array_size(list); i++) {
            char ctx[64];
            int f = 0;
            json_path_index(ctx, sizeof ctx, "$.receivedMessages", i);
            bad = add_received(b, &seen, json_array_get(list, i), ctx, id_field, &f, e);
            fresh += (size_t)f;
        }
        json_decref(doc);
        if (bad) {
            err_prefix(e, "pull");
            goto out;
        }
        if (fresh == 0)
            break; /* empty, or only messages read already: the whole queue is in hand */
    }
    rc = 0;
out:
    hashtab_free(&seen);
    buf_free(&url);
    buf_free(&body);
    return rc;
}

static int dlq_release(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                       struct err *e);

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a replay reads like inspect: what was replayed is no longer there */
    struct pubsub_state *st = c->priv;
    struct buf url;
    buf_init(&url);
    json_t *doc = NULL;
    char *name = pubsub_client_sub_name(st, queue);
    int rc = -1;
    if (pubsub_client_begin(c, dl, e))
        goto out;
    buf_printf(&url, "%s/v1/%s", st->endpoint, name);
    if (pubsub_client_call(st, dl, "GET", url.data, NULL, "GET subscription", 1, &doc, e))
        goto out;
    if (!doc) {
        err_set(e, ERR_QUERY, "subscription \"%s\" does not exist", name);
        goto out;
    }
    struct pubsub_sub s;
    if (pubsub_sub_parse(doc, "$", &s, e)) {
        err_prefix(e, "GET subscription");
        goto out;
    }
    if (!s.dead_letter_topic) {
        err_set(e, ERR_QUERY,
                "subscription \"%s\" has no deadLetterPolicy: Pub/Sub dead-letters nothing of it",
                name);
        goto out;
    }
    if (!s.topic || strncmp(s.topic, "projects/", 9) != 0) {
        /* a deleted topic reads "_deleted-topic_": there is nowhere to replay to */
        err_set(e, ERR_QUERY, "subscription \"%s\" has no topic to replay to (got \"%s\")", name,
                s.topic ? s.topic : "");
        goto out;
    }
    char *dead_sub = NULL;
    if (dead_letter_sub(st, dl, queue, s.dead_letter_topic, &dead_sub, e))
        goto out;
    out->kind_data = dead_sub;
    out->dead_letter_queue = xstrdup(pubsub_topic_id(s.dead_letter_topic));
    out->origin = xstrdup(s.topic);
    if (pull(st, dl, dead_sub, id_field, max, out, e)) {
        struct err ignored;
        err_clear(&ignored);
        dlq_release(c, out, dl, &ignored); /* nothing left leased by a failed read */
        goto out;
    }
    out->total = out->n; /* the REST API does not count a subscription's backlog */
    rc = 0;
out:
    json_decref(doc);
    free(name);
    buf_free(&url);
    return rc;
}

/* ---- replay ---- */

/* POSTs body (freed here) to the method verb of name (a subscription or a topic), verb naming
 * the call in errors too; *doc is the reply. */
static int post(struct pubsub_state *st, const struct deadline *dl, const char *name,
                const char *verb, char *body, json_t **doc, struct err *e)
{
    struct buf url;
    buf_init(&url);
    buf_printf(&url, "%s/v1/%s:%s", st->endpoint, name, verb);
    int rc = pubsub_client_call(st, dl, "POST", url.data, body, verb, 0, doc, e);
    free(body);
    buf_free(&url);
    return rc;
}

/* acknowledge (deadline < 0) or modifyAckDeadline the n ackIds on the dead-letter subscription. */
static int ack_call(struct pubsub_state *st, const struct deadline *dl, const char *dead_sub,
                    const char *const *ids, size_t n, int deadline, struct err *e)
{
    json_t *doc = NULL;
    int rc = post(st, dl, dead_sub, deadline < 0 ? "acknowledge" : "modifyAckDeadline",
                  pubsub_ack_body(ids, n, deadline), &doc, e);
    json_decref(doc);
    return rc;
}

static int dlq_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    struct pubsub_state *st = c->priv;
    const struct pubsub_received *r = m->kind_data;
    if (pubsub_client_begin(c, dl, e))
        return -1;
    json_t *doc = NULL, *ids = NULL;
    int rc = post(st, dl, b->origin, "publish", pubsub_publish_body(r), &doc, e);
    /* a publish is done when Pub/Sub gave the message an id */
    if (rc == 0 &&
        (json_expect_object(doc, "$", e) || json_need_array(doc, "$", "messageIds", &ids, e) ||
         json_array_size(ids) != 1)) {
        if (ids)
            err_set(e, ERR_PROTOCOL, "publish: want one message id, got %zu", json_array_size(ids));
        rc = err_prefix(e, "publish");
    }
    json_decref(doc);
    return rc;
}

static int dlq_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    struct pubsub_received *r = m->kind_data;
    const char *ids[] = {r->ack_id};
    if (pubsub_client_begin(c, dl, e) || ack_call(c->priv, dl, b->kind_data, ids, 1, -1, e))
        return -1;
    r->removed = 1;
    return 0;
}

static int dlq_release(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                       struct err *e)
{
    if (!b->kind_data || b->n == 0)
        return 0;
    const char **ids = xcalloc(b->n, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const struct pubsub_received *r = b->v[i].kind_data;
        if (!r->removed)
            ids[n++] = r->ack_id;
    }
    int rc = n ? pubsub_client_begin(c, dl, e) : 0;
    for (size_t i = 0; rc == 0 && i < n; i += ACK_CHUNK)
        rc = ack_call(c->priv, dl, b->kind_data, ids + i, n - i < ACK_CHUNK ? n - i : ACK_CHUNK, 0,
                      e);
    free(ids);
    return rc;
}

/* A replay publishes to the origin topic: Pub/Sub drops what reaches a topic with no
 * subscription, so the topic must exist and have one (the subscription the messages died on is
 * one, unless it was detached or its topic recreated). */
static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    struct pubsub_state *st = c->priv;
    if (strcmp(pubsub_topic_id(b->origin), b->dead_letter_queue) == 0)
        return err_set(e, ERR_CONFIG, "topic \"%s\" is its own dead-letter topic", b->origin);
    struct buf url;
    buf_init(&url);
    buf_printf(&url, "%s/v1/%s/subscriptions?pageSize=1", st->endpoint, b->origin);
    json_t *doc = NULL, *list = NULL;
    int rc = pubsub_client_begin(c, dl, e) ||
             pubsub_client_call(st, dl, "GET", url.data, NULL, "GET origin topic subscriptions", 1,
                                &doc, e);
    if (rc == 0 && !doc)
        rc = err_set(e, ERR_QUERY,
                     "topic \"%s\" does not exist: there is nowhere to put the messages back",
                     b->origin);
    if (rc == 0 && (json_expect_object(doc, "$", e) ||
                    json_get_array(doc, "$", "subscriptions", &list, e) < 0))
        rc = err_prefix(e, "GET origin topic subscriptions");
    if (rc == 0 && (!list || json_array_size(list) == 0))
        rc = err_set(e, ERR_QUERY,
                     "topic \"%s\" has no subscription: Pub/Sub would drop every message put "
                     "back on it",
                     b->origin);
    json_decref(doc);
    buf_free(&url);
    return rc ? -1 : 0;
}

const struct dlq_kind pubsub_dlq = {
    .read = dlq_read,
    .check_origin = dlq_check_origin,
    .requeue = dlq_requeue,
    .remove = dlq_remove,
    .release = dlq_release,
    .message_free = received_free,
    .batch_free = NULL, /* the dead-letter subscription's name: plain malloc'd */
    .read_effect = "pulling leases each message for the dead-letter subscription's ack deadline "
                   "and raises its delivery attempt there; qrel hands every message back at once "
                   "(modifyAckDeadline 0)",
    .cannot_replay = NULL,
};
