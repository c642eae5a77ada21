/* sqs.c: `kind: sqs`, the reliability facts of Amazon SQS queues: the top of the folder (its
 * collector_kind and hooks) and the collection. The settings are sqs/settings.c, the AWS request
 * path sqs/client.c.
 *
 * SQS speaks AWS JSON 1.0 (POST /, X-Amz-Target: AmazonSQS.<Action>, SigV4-signed by libcurl).
 * A scrape resolves the queues (configured URLs as they are, names through GetQueueUrl once and
 * then from a cache, prefixes through paginated ListQueues less what `exclude` leaves out), asks
 * GetQueueAttributes All of each, and reads the dead-letter queue named by each RedrivePolicy:
 * its depth comes from the attributes already fetched when the DLQ is itself selected, else from
 * one GetQueueAttributes on its URL (GetQueueUrl cached), once per scrape however many queues
 * share it (an excluded DLQ too: it is left out as a queue, not as a DLQ). Optionally
 * CloudWatch adds the age of the oldest message, which the SQS API does not have
 * (sqs/cloudwatch.c).
 *
 * Only read-only actions are called. ReceiveMessage never is: receiving changes the queue (it
 * hides the message and counts a receive towards maxReceiveCount). `qrel dlq`, which does
 * receive from a dead-letter queue (and writes on replay), is sqs/dlq.c: it goes through the
 * same request path and queue lookups (sqs/client.h). Calls run one after another
 * under the collection's deadline; the per-queue calls are cheap and a scrape of many queues is
 * bounded by the source's timeout like any other. */
#include "sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "common/live_check.h"
#include "common/secret.h"
#include "config.h"
#include "log.h"
#include "sqs/client.h"
#include "sqs/cloudwatch.h"
#include "sqs/dlq.h"
#include "sqs/settings.h"
#include "alloc.h"
#include "deadline.h"

#define LIST_PAGE 1000

/* ------------------------------------------------------------------ configuration */

static void destroy(struct collector *c)
{
    sqs_settings_free(c->priv);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    return sqs_settings_read(c, map, e);
}

/* ------------------------------------------------------------------ collection */

struct target {
    char *url;
    char *name;
    int have; /* GetQueueAttributes answered */
    struct sqs_attrs a;
    size_t dlq; /* index into scrape.dlqs, or NONE */
};

struct dlq {
    const char *arn;  /* owned by the first target's attributes */
    const char *name; /* likewise */
    int found;        /* its depth is known */
    double depth;
    int has_retention; /* its MessageRetentionPeriod is known */
    double retention;
    size_t cw; /* index into the CloudWatch names, or NONE */
};

#define NONE ((size_t)-1)

struct scrape {
    struct target *t;
    size_t n, cap;
    struct dlq *d;
    size_t nd;
    unsigned calls;
    size_t missing;
};

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->t[i].url);
        free(sc->t[i].name);
        sqs_attrs_free(&sc->t[i].a);
    }
    free(sc->t);
    free(sc->d);
}

static void add_target(struct scrape *sc, const char *url)
{
    for (size_t i = 0; i < sc->n; i++)
        if (strcmp(sc->t[i].url, url) == 0)
            return;
    char *name = sqs_queue_name_from_url(url);
    if (!name)
        return;
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 16;
        sc->t = xrealloc(sc->t, sc->cap * sizeof *sc->t);
    }
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->url = xstrdup(url);
    t->name = name;
    t->dlq = NONE;
}

/* 1 when the queue at url, found by ListQueues, is left out by exclude (and counted). The
 * first nnamed targets are the queues listed in queues: asked for by name, they are kept. */
static int excluded(struct sqs_state *st, const struct scrape *sc, size_t nnamed, const char *url)
{
    if (!exclude_any(&st->exclude))
        return 0;
    char *name = sqs_queue_name_from_url(url);
    int out = name && exclude_match(&st->exclude, name);
    for (size_t i = 0; out && i < nnamed; i++) /* scanned only for a match: the rare case */
        out = strcmp(sc->t[i].name, name) != 0;
    st->exclude.dropped += (size_t)out;
    free(name);
    return out;
}

static int list_queues(struct collector *c, struct scrape *sc, const struct deadline *dl,
                       struct err *e)
{
    struct sqs_state *st = c->priv;
    char *token = NULL;
    size_t listed = 0;
    int rc = -1;
    st->exclude.dropped = 0;     /* what a failed collection counted is not this one's */
    const size_t nnamed = sc->n; /* the queues of queues, resolved before the listing */
    do {
        json_t *o = json_object();
        json_object_set_new(o, "MaxResults", json_integer(LIST_PAGE));
        if (st->prefix)
            json_object_set_new(o, "QueueNamePrefix", json_string(st->prefix));
        if (token)
            json_object_set_new(o, "NextToken", json_string(token));
        char *body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        free(token);
        token = NULL;
        json_t *doc = NULL;
        int r = sqs_client_request(c, &sc->calls, "ListQueues", "AmazonSQS.ListQueues", body, dl,
                                   &doc, NULL, e);
        free(body);
        if (r)
            goto out;
        json_t *urls = NULL;
        const char *next = NULL;
        if (json_expect_object(doc, "AmazonSQS.ListQueues: $", e) ||
            json_get_array(doc, "AmazonSQS.ListQueues: $", "QueueUrls", &urls, e) < 0 ||
            json_get_string(doc, "AmazonSQS.ListQueues: $", "NextToken", &next, e) < 0) {
            json_decref(doc);
            goto out;
        }
        for (size_t i = 0; urls && i < json_array_size(urls); i++) {
            const char *u = json_string_value(json_array_get(urls, i));
            if (!u) {
                char ctx[80];
                json_path_index(ctx, sizeof ctx, "$.QueueUrls", i);
                err_set(e, ERR_PROTOCOL, "AmazonSQS.ListQueues: %s: want a string, got %s", ctx,
                        json_type_word(json_array_get(urls, i)));
                json_decref(doc);
                goto out;
            }
            if (excluded(st, sc, nnamed, u)) /* before the cap: an excluded queue takes no room */
                continue;
            if (listed >= (size_t)st->max_queues) {
                next = NULL;
                if (!st->warned_cap) {
                    char cap[32];
                    snprintf(cap, sizeof cap, "%lld", st->max_queues);
                    log_kv(LOG_WARN, "max_queues reached: further queues are not collected",
                           "source", c->name, "max_queues", cap, NULL);
                    st->warned_cap = 1;
                }
                break;
            }
            add_target(sc, u);
            listed++;
        }
        token = next && *next ? xstrdup(next) : NULL;
        json_decref(doc);
    } while (token);
    rc = 0;
out:
    free(token);
    return rc;
}

static int resolve_targets(struct collector *c, struct scrape *sc, const struct deadline *dl,
                           struct err *e)
{
    struct sqs_state *st = c->priv;
    for (size_t i = 0; i < st->nurls; i++)
        add_target(sc, st->urls[i]);
    for (size_t i = 0; i < st->nnames; i++) {
        struct sqs_named *q = &st->names[i];
        if (!q->url) {
            int r = sqs_client_queue_url(c, &sc->calls, q->name, NULL, dl, &q->url, e);
            if (r < 0)
                return -1;
            if (r == 0) {
                sc->missing++;
                continue;
            }
        }
        add_target(sc, q->url);
    }
    if (st->prefix || st->list_all)
        return list_queues(c, sc, dl, e);
    return 0;
}

static void forget_named_url(struct sqs_state *st, const char *url)
{
    for (size_t i = 0; i < st->nnames; i++)
        if (st->names[i].url && strcmp(st->names[i].url, url) == 0) {
            free(st->names[i].url);
            st->names[i].url = NULL;
        }
}

static struct sqs_dlq_url *dlq_cache(struct sqs_state *st, const char *arn)
{
    for (size_t i = 0; i < st->ndlq_urls; i++)
        if (strcmp(st->dlq_urls[i].arn, arn) == 0)
            return &st->dlq_urls[i];
    return NULL;
}

/* The depth of each distinct dead-letter queue: from the selection when it is part of it, else
 * one GetQueueAttributes on its URL (GetQueueUrl once, then cached). */
static int read_dlqs(struct collector *c, struct scrape *sc, const struct deadline *dl,
                     struct err *e)
{
    struct sqs_state *st = c->priv;
    sc->d = xcalloc(sc->n ? sc->n : 1, sizeof *sc->d);
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        if (!t->have || !t->a.has_redrive)
            continue;
        const struct sqs_redrive *r = &t->a.redrive;
        size_t k = 0;
        while (k < sc->nd && strcmp(sc->d[k].arn, r->dlq_arn) != 0)
            k++;
        t->dlq = k;
        if (k < sc->nd)
            continue;
        struct dlq *d = &sc->d[sc->nd++];
        d->arn = r->dlq_arn;
        d->name = r->dlq_name;
        d->cw = NONE;
        for (size_t j = 0; j < sc->n; j++) { /* the DLQ is selected itself */
            const struct target *u = &sc->t[j];
            if (u->have && u->a.arn && strcmp(u->a.arn, r->dlq_arn) == 0) {
                d->found = u->a.has_ready || u->a.has_in_flight || u->a.has_delayed;
                d->depth = u->a.ready + u->a.in_flight + u->a.delayed;
                d->has_retention = u->a.has_retention;
                d->retention = u->a.retention;
                break;
            }
        }
        if (d->found)
            continue;
        struct sqs_dlq_url *cached = dlq_cache(st, r->dlq_arn);
        if (!cached) {
            char *url = NULL;
            int got = sqs_client_queue_url(c, &sc->calls, r->dlq_name, r->dlq_account, dl, &url, e);
            if (got < 0)
                return -1;
            if (got == 0) {
                sc->missing++;
                continue;
            }
            st->dlq_urls = xrealloc(st->dlq_urls, (st->ndlq_urls + 1) * sizeof *st->dlq_urls);
            cached = &st->dlq_urls[st->ndlq_urls++];
            cached->arn = xstrdup(r->dlq_arn);
            cached->url = url;
        }
        struct sqs_attrs a;
        int got = sqs_client_attributes(c, &sc->calls, cached->url, r->dlq_name, 0, dl, &a, e);
        if (got < 0)
            return -1;
        if (got == 0) { /* deleted since: ask GetQueueUrl again next time */
            free(cached->arn);
            free(cached->url);
            *cached = st->dlq_urls[--st->ndlq_urls];
            sc->missing++;
            continue;
        }
        d->found = a.has_ready || a.has_in_flight || a.has_delayed;
        d->depth = a.ready + a.in_flight + a.delayed;
        d->has_retention = a.has_retention;
        d->retention = a.retention;
        sqs_attrs_free(&a);
    }
    return 0;
}

/* MessageRetentionPeriod of the queue and of its dead-letter queue, which the
 * dead_letters_expire_unread rule compares: a standard queue's dead letter keeps its original
 * enqueue time. */
static void emit_retention(struct metric_set *out, const struct target *t, const struct dlq *d)
{
    if (t->a.has_retention)
        metric_set_add(out, "qrel_queue_retention_seconds", t->a.retention, "queue", t->name, NULL);
    if (d && d->has_retention)
        metric_set_add(out, "qrel_dead_letter_retention_seconds", d->retention, "queue", t->name,
                       "dead_letter_queue", t->a.redrive.dlq_name, NULL);
}

/* A failed add is remembered by the set, which the core checks after collect(). */
static void emit(struct metric_set *out, const struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (!t->have)
            continue;
        const struct sqs_attrs *a = &t->a;
        const char *q = t->name;
        if (a->has_ready)
            metric_set_add(out, "qrel_queue_messages", a->ready, "queue", q, "state", "ready",
                           NULL);
        if (a->has_in_flight)
            metric_set_add(out, "qrel_queue_messages", a->in_flight, "queue", q, "state",
                           "in_flight", NULL);
        if (a->has_delayed)
            metric_set_add(out, "qrel_queue_messages", a->delayed, "queue", q, "state", "delayed",
                           NULL);
        if (a->has_visibility)
            metric_set_add(out, "qrel_lease_timeout_seconds", a->visibility_timeout, "queue", q,
                           NULL);
        if (a->has_redrive)
            metric_set_add(out, "qrel_max_deliveries", a->redrive.max_receive_count, "queue", q,
                           NULL);
        double h = sqs_retry_horizon(a);
        if (h >= 0)
            metric_set_add(out, "qrel_retry_horizon_seconds", h, "queue", q, NULL);
        if (a->fifo)
            metric_set_add(out, "qrel_dedup_window_seconds", SQS_FIFO_DEDUP_WINDOW_SECONDS, "queue",
                           q, NULL);
        if (t->dlq != NONE && sc->d[t->dlq].found)
            metric_set_add(out, "qrel_dead_letter_messages", sc->d[t->dlq].depth, "queue", q,
                           "dead_letter_queue", a->redrive.dlq_name, NULL);
        emit_retention(out, t, t->dlq != NONE ? &sc->d[t->dlq] : NULL);
    }
}

/* CloudWatch: the age of the oldest message of every collected queue and dead-letter queue. */
static int read_cloudwatch(struct collector *c, struct scrape *sc, const struct deadline *dl,
                           struct metric_set *out, struct err *e)
{
    struct sqs_state *st = c->priv;
    const char **names = xcalloc(sc->n + sc->nd + 1, sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < sc->n; i++)
        if (sc->t[i].have)
            names[n++] = sc->t[i].name;
    for (size_t k = 0; k < sc->nd; k++) {
        size_t j = 0;
        while (j < n && strcmp(names[j], sc->d[k].name) != 0)
            j++;
        if (j == n)
            names[n++] = sc->d[k].name;
        sc->d[k].cw = j;
    }
    struct sqs_cw_datum *data = xcalloc(n ? n : 1, sizeof *data);
    struct sqs_aws aws = {st->http, st->region, st->access_key_id, st->secret_access_key,
                          st->token_header};
    int rc = -1;
    if (n &&
        sqs_cw_fetch(&aws, st->cw_endpoint, names, n, st->cw_lookback, dl, data, &sc->calls, e))
        goto out;
    double now = deadline_wall_now();
    size_t j = 0;
    rc = 0;
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (!t->have)
            continue;
        const struct sqs_cw_datum *d = &data[j++];
        if (d->found) {
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", d->value, "queue", t->name,
                           NULL);
            double age = now - d->timestamp;
            metric_set_add(out, "qrel_sample_age_seconds", age > 0 ? age : 0, "queue", t->name,
                           NULL);
        }
        if (t->dlq != NONE && sc->d[t->dlq].cw != NONE && data[sc->d[t->dlq].cw].found &&
            sc->d[t->dlq].found && sc->d[t->dlq].depth > 0)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", data[sc->d[t->dlq].cw].value,
                           "queue", t->name, "dead_letter_queue", sc->d[t->dlq].name, NULL);
    }
out:
    free(data);
    free(names);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct sqs_state *st = c->priv;
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    int rc = -1;
    if (resolve_targets(c, &sc, dl, e))
        goto out;
    for (size_t i = 0; i < sc.n; i++) {
        struct target *t = &sc.t[i];
        int got = sqs_client_attributes(c, &sc.calls, t->url, t->name, 1, dl, &t->a, e);
        if (got < 0)
            goto out;
        if (got == 0) { /* deleted between listing and asking, or a stale cached URL */
            forget_named_url(st, t->url);
            sc.missing++;
        }
        t->have = got == 1;
    }
    if (read_dlqs(c, &sc, dl, e))
        goto out;
    emit(out, &sc);
    exclude_emit(&st->exclude, out, "queue");
    if (st->cloudwatch && read_cloudwatch(c, &sc, dl, out, e))
        goto out;
    rc = 0;
    if (log_enabled(LOG_DEBUG)) {
        size_t have = 0;
        for (size_t i = 0; i < sc.n; i++)
            have += sc.t[i].have;
        char queues[32], dlqs[32], missing[32], calls[32];
        snprintf(queues, sizeof queues, "%zu", have);
        snprintf(dlqs, sizeof dlqs, "%zu", sc.nd);
        snprintf(missing, sizeof missing, "%zu", sc.missing);
        snprintf(calls, sizeof calls, "%u", sc.calls);
        log_kv(LOG_DEBUG, "sqs collection done", "source", c->name, "queues", queues,
               "dead_letter_queues", dlqs, "missing_queues", missing, "requests", calls, NULL);
    }
out:
    scrape_free(&sc);
    return rc;
}

/* ------------------------------------------------------------------ `qrel dlq` (sqs/dlq.c) */

/* Whether the RedrivePolicy exists is only known to SQS: `qrel dlq` says so when it is missing. */
static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    char why[300];
    if (sqs_dlq_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!sqs_settings_watches(c->priv, queue))
        return cfg_error(
            e, cfg_at(entry, "queue"),
            "queue: source \"%s\" does not watch a queue named \"%s\" (want one of "
            "its queues, or a name its queue_name_prefix matches and its exclude does not)",
            c->name, queue);
    live_check_note(&((struct sqs_state *)c->priv)->dead_letter_queues, queue);
    return 0;
}

/* --config.check: a scrape, and the RedrivePolicy and dead-letter queue of each queue that a
 * dead_letters entry names, found as `qrel dlq` finds them (no message is received). */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    return live_check(c, ((const struct sqs_state *)c->priv)->dead_letter_queues, dl, e);
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "add a RedrivePolicy with a dead-letter queue and maxReceiveCount"},
    {"dead_letters_expire_unread",
     "a standard queue's dead letter keeps its original enqueue time, so it may arrive with its "
     "retention nearly spent (FIFO queues restart it); set the dead-letter queue's "
     "MessageRetentionPeriod to 1209600 (14 days, the most SQS allows) or to the queue's plus the "
     "time you need to read them"},
    {NULL, NULL}};

const struct collector_kind sqs_kind = {.name = "sqs",
                                        .state_size = sizeof(struct sqs_state),
                                        .configure = configure,
                                        .collect = collect,
                                        .destroy = destroy,
                                        .audit_hints = hints,
                                        .check = check,
                                        .dead_letter_validate = dead_letter_validate,
                                        .dlq = &sqs_dlq_kind};
