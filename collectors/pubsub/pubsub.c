/* pubsub.c: `kind: pubsub`, the reliability settings and backlog of Google Cloud Pub/Sub
 * subscriptions.
 *
 * A Pub/Sub subscription leases each message it delivers for its ack deadline, delivers it again
 * when the deadline passes (after the retry policy's backoff), and with a dead-letter policy
 * forwards it to the dead-letter topic after maxDeliveryAttempts. The settings come from the
 * Pub/Sub REST API (subscriptions.get / list); the backlog (undelivered messages, oldest unacked
 * age, expired ack deadlines) exists only in Cloud Monitoring, whose numbers lag by minutes, so
 * it is optional and every value read from it says how old it is (qrel_sample_age_seconds).
 *
 * This file is the top of the folder (the collector_kind and its hooks). Below it: client.c
 * (the REST call with its token, shared with dlq.c), auth.c (the token), topics.c (the topics'
 * retention and the dead-letter topics' subscriptions), dlq.c (`qrel dlq`'s hooks), and the pure
 * parts declared in pubsub.h: parse.c (subscriptions, Cloud Monitoring) and
 * message.c (dead letters). */
#include "pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "common/http.h"
#include "common/json.h"
#include "common/live_check.h"
#include "config.h"
#include "log.h"
#include "client.h"
#include "dlq.h"
#include "topics.h"
#include "auth.h"
#include "alloc.h"
#include "buf.h"
#include "deadline.h"

#define DEFAULT_ENDPOINT "https://pubsub.googleapis.com"
#define DEFAULT_MONITORING_ENDPOINT "https://monitoring.googleapis.com"
#define MAX_PAGES 1000

/* ---- configuration ---- */

static void destroy(struct collector *c)
{
    struct pubsub_state *st = c->priv;
    http_client_free(st->client);
    http_config_free(&st->http);
    pubsub_auth_free(st->auth);
    cfg_strv_free(st->subscriptions);
    exclude_free(&st->exclude);
    cfg_strv_free(st->dl_queue);
    cfg_strv_free(st->dl_sub);
    cfg_strv_free(st->dead_letter_queues);
    for (size_t i = 0; i < st->nexp; i++)
        free(st->exp[i].subscription);
    free(st->exp);
    free(st->project);
    free(st->endpoint);
    free(st->monitoring_endpoint);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct pubsub_state *st = c->priv;
    /* every key read first, so a misspelt one is reported with the known keys; the credential
     * keys are only marked here, pubsub_auth_configure reads them once the rest is valid */
    struct cfg_node *subs = NULL, *unused = NULL, *dls = NULL;
    if (cfg_get_nonempty(map, "project", &st->project, e) ||
        cfg_get_node(map, "subscriptions", CFG_SEQ, &subs, e) ||
        cfg_get_strlist(map, "subscriptions", &st->subscriptions, &st->nsubscriptions, e) ||
        exclude_read(&st->exclude, map, "exclude", NULL, e) ||
        http_base_url(map, "endpoint", DEFAULT_ENDPOINT, &st->endpoint, e) ||
        http_base_url(map, "monitoring_endpoint", DEFAULT_MONITORING_ENDPOINT,
                      &st->monitoring_endpoint, e) ||
        cfg_get_bool(map, "monitoring", 0, &st->monitoring, e) ||
        cfg_get_positive_duration(map, "monitoring_window", 600, &st->monitoring_window, e) ||
        http_config_parse(map, &st->http, e) ||
        cfg_get_node(map, "credentials_file", CFG_NULL, &unused, e) ||
        cfg_get_node(map, "credentials_env", CFG_NULL, &unused, e) ||
        cfg_get_node(map, "token_file", CFG_NULL, &unused, e) ||
        cfg_get_node(map, "dead_letter_subscriptions", CFG_MAP, &dls, e) ||
        collector_finish(c, map, e))
        return -1;
    if (!st->project)
        return cfg_error(e, map, "project: want the Google Cloud project id");
    if (strchr(st->project, '/'))
        return cfg_error(e, cfg_at(map, "project"), "project: want a project id, without \"/\"");
    if (subs && st->nsubscriptions == 0)
        return cfg_error(e, subs,
                         "subscriptions: want at least one name (leave subscriptions out for "
                         "every subscription of the project)");
    for (size_t i = 0; i < st->nsubscriptions; i++) {
        const char *s = st->subscriptions[i];
        if (!pubsub_sub_ref_ok(s))
            return cfg_error(e, subs->items[i],
                             "subscriptions: want a subscription id or "
                             "projects/PROJECT/subscriptions/ID, got \"%s\"",
                             s);
    }
    if (exclude_check(&st->exclude, map, e))
        return -1;
    if (subs && exclude_any(&st->exclude)) /* it could only hide a subscription asked for */
        return cfg_error(e, cfg_at(map, "exclude"),
                         "exclude: only without subscriptions (it leaves out subscriptions "
                         "subscriptions.list finds)");
    if (pubsub_dead_letter_subs_configure(c, dls, e))
        return -1;
    /* a missing grant repeats at every scrape: say so a few times a window, not each time */
    st->denied_log.every_ms = 600000;
    st->denied_log.burst = 3;
    return pubsub_auth_configure(map, &st->auth, e);
}

/* ---- collection ---- */

/* GET url with the source's token (pubsub_client_call). */
static int api_get(struct pubsub_state *st, const struct deadline *dl, const char *url,
                   const char *what, int allow_missing, json_t **doc, struct err *e)
{
    return pubsub_client_call(st, dl, "GET", url, NULL, what, allow_missing, doc, e);
}

struct scrape {
    json_t **docs; /* kept until the series are added: the subscriptions point into them */
    size_t ndocs;
    struct pubsub_sub *subs;
    size_t nsubs;
    struct pubsub_topics topics; /* the subscriptions' topics and dead-letter topics */
    size_t requests;
};

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->ndocs; i++)
        json_decref(sc->docs[i]);
    free(sc->docs);
    free(sc->subs);
    pubsub_topics_free(&sc->topics);
}

static void keep_doc(struct scrape *sc, json_t *doc)
{
    sc->docs = xrealloc(sc->docs, (sc->ndocs + 1) * sizeof *sc->docs);
    sc->docs[sc->ndocs++] = doc;
}

static int add_sub(struct scrape *sc, const json_t *obj, const char *what, const char *ctx,
                   struct err *e)
{
    struct pubsub_sub s;
    if (pubsub_sub_parse(obj, ctx, &s, e))
        return err_prefix(e, "%s", what);
    sc->subs = xrealloc(sc->subs, (sc->nsubs + 1) * sizeof *sc->subs);
    sc->subs[sc->nsubs++] = s;
    return 0;
}

/* 1 when a listed subscription is left out by exclude (and counted), judged by its name alone
 * so that an excluded subscription is not even parsed. */
static int excluded(struct pubsub_state *st, const json_t *obj)
{
    const char *name = json_string_value(json_object_get(obj, "name"));
    return name && exclude_drop(&st->exclude, pubsub_topic_id(name));
}

static int read_subscriptions(struct pubsub_state *st, const struct deadline *dl, struct scrape *sc,
                              struct err *e)
{
    struct buf url;
    buf_init(&url);
    int rc = -1;
    if (st->subscriptions) {
        for (size_t i = 0; i < st->nsubscriptions; i++) {
            char *name = pubsub_client_sub_name(st, st->subscriptions[i]);
            buf_reset(&url);
            buf_printf(&url, "%s/v1/%s", st->endpoint, name);
            free(name);
            json_t *doc;
            sc->requests++;
            if (api_get(st, dl, url.data, "GET subscription", 1, &doc, e))
                goto out;
            if (!doc)
                continue; /* a listed subscription that does not exist: no series */
            keep_doc(sc, doc);
            if (add_sub(sc, doc, "GET subscription", "$", e))
                goto out;
        }
        rc = 0;
        goto out;
    }
    char *token = NULL;
    st->exclude.dropped = 0; /* what a failed collection counted is not this one's */
    for (int page = 0;; page++) {
        buf_reset(&url);
        buf_printf(&url, "%s/v1/projects/%s/subscriptions?pageSize=1000", st->endpoint,
                   st->project);
        if (token) {
            char *esc = http_escape(token);
            buf_printf(&url, "&pageToken=%s", esc);
            free(esc);
            free(token);
            token = NULL;
        }
        json_t *doc, *list = NULL;
        const char *next = NULL;
        sc->requests++;
        if (api_get(st, dl, url.data, "GET subscriptions", 0, &doc, e))
            goto out;
        keep_doc(sc, doc);
        if (json_expect_object(doc, "$", e) ||
            json_get_array(doc, "$", "subscriptions", &list, e) < 0 ||
            json_get_string(doc, "$", "nextPageToken", &next, e) < 0) {
            err_prefix(e, "GET subscriptions");
            goto out;
        }
        for (size_t i = 0; list && i < json_array_size(list); i++) {
            char ctx[64];
            json_path_index(ctx, sizeof ctx, "$.subscriptions", i);
            if (excluded(st, json_array_get(list, i)))
                continue;
            if (add_sub(sc, json_array_get(list, i), "GET subscriptions", ctx, e))
                goto out;
        }
        if (!next || !*next)
            break;
        if (page + 1 >= MAX_PAGES) {
            err_set(e, ERR_LIMIT, "GET subscriptions: more than %d pages", MAX_PAGES);
            goto out;
        }
        token = xstrdup(next);
    }
    rc = 0;
out:
    buf_free(&url);
    return rc;
}

static void utc_text(double t, char *out, size_t cap)
{
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int read_monitoring(struct pubsub_state *st, const struct deadline *dl, double now,
                           struct scrape *sc, struct pubsub_monitoring *m, struct err *e)
{
    struct buf filter, url;
    buf_init(&filter);
    buf_init(&url);
    buf_puts(&filter, "metric.type = one_of(");
    for (int k = 0; k < PUBSUB_METRIC_COUNT; k++)
        buf_printf(&filter, "%s\"%s\"", k ? ", " : "", pubsub_metric_types[k]);
    buf_puts(&filter, ") AND resource.type = \"pubsub_subscription\"");
    char start[32], end[32];
    utc_text(now - st->monitoring_window, start, sizeof start);
    utc_text(now, end, sizeof end);
    char *f = http_escape(filter.data), *s = http_escape(start), *t = http_escape(end);
    int rc = -1;
    for (int page = 0;; page++) {
        buf_reset(&url);
        buf_printf(&url,
                   "%s/v3/projects/%s/timeSeries?filter=%s&interval.startTime=%s"
                   "&interval.endTime=%s&view=FULL",
                   st->monitoring_endpoint, st->project, f, s, t);
        if (m->next_page_token) {
            char *esc = http_escape(m->next_page_token);
            buf_printf(&url, "&pageToken=%s", esc);
            free(esc);
        }
        json_t *doc;
        sc->requests++;
        if (api_get(st, dl, url.data, "GET timeSeries", 0, &doc, e))
            goto out;
        int prc = pubsub_monitoring_parse(doc, m, e);
        json_decref(doc);
        if (prc) {
            err_prefix(e, "GET timeSeries");
            goto out;
        }
        if (!m->next_page_token)
            break;
        if (page + 1 >= MAX_PAGES) {
            err_set(e, ERR_LIMIT, "GET timeSeries: more than %d pages", MAX_PAGES);
            goto out;
        }
    }
    rc = 0;
out:
    free(f);
    free(s);
    free(t);
    buf_free(&filter);
    buf_free(&url);
    return rc;
}

static struct pubsub_expiries *expiries_of(struct pubsub_state *st, const char *sub)
{
    for (size_t i = 0; i < st->nexp; i++)
        if (strcmp(st->exp[i].subscription, sub) == 0)
            return &st->exp[i];
    st->exp = xrealloc(st->exp, (st->nexp + 1) * sizeof *st->exp);
    st->exp[st->nexp] = (struct pubsub_expiries){.subscription = xstrdup(sub)};
    return &st->exp[st->nexp++];
}

/* The newest point of a gauge series, and the age of the data the source reports. */
static int newest(const struct pubsub_series *s, double now, double *value, double *oldest_data)
{
    if (!s || s->n == 0)
        return 0;
    const struct pubsub_point *p = &s->points[0];
    for (size_t i = 1; i < s->n; i++)
        if (s->points[i].end > p->end)
            p = &s->points[i];
    *value = p->value;
    double age = now > p->end ? now - p->end : 0;
    if (age > *oldest_data)
        *oldest_data = age;
    return 1;
}

static int monitoring_series(struct collector *c, struct pubsub_state *st,
                             const struct deadline *dl, double now, struct scrape *sc,
                             struct metric_set *out, struct err *e)
{
    struct pubsub_monitoring m = {0};
    double data_age = -1, v;
    int rc = -1;
    if (read_monitoring(st, dl, now, sc, &m, e))
        goto out;
    for (size_t i = 0; i < sc->nsubs; i++) {
        const struct pubsub_sub *s = &sc->subs[i];
        if (newest(pubsub_monitoring_find(&m, s->id, PUBSUB_UNDELIVERED), now, &v, &data_age))
            metric_set_add(out, "qrel_queue_messages", v, "queue", s->id, "state", "ready", NULL);
        if (newest(pubsub_monitoring_find(&m, s->id, PUBSUB_OLDEST_UNACKED), now, &v, &data_age))
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", v, "queue", s->id, NULL);
        const struct pubsub_series *x = pubsub_monitoring_find(&m, s->id, PUBSUB_EXPIRED_ACKS);
        if (x) {
            struct pubsub_expiries *acc = expiries_of(st, s->id);
            double last = acc->last_end;
            for (size_t k = 0; k < x->n; k++)
                if (x->points[k].end > last) {
                    acc->total += x->points[k].value;
                    if (x->points[k].end > acc->last_end)
                        acc->last_end = x->points[k].end;
                }
            newest(x, now, &v, &data_age);
            metric_set_add(out, "qrel_lease_expiries_total", acc->total, "queue", s->id, NULL);
        }
        if (!s->dead_letter_topic)
            continue;
        /* The dead-letter topic holds nothing itself: its subscriptions do. The most backlogged
         * one is the dead-letter queue's size. */
        const struct pubsub_topic *dlt = pubsub_topics_find(&sc->topics, s->dead_letter_topic);
        json_t *list = dlt ? dlt->subscriptions : NULL;
        int have = 0, have_age = 0;
        double size = 0, age = 0;
        for (size_t k = 0; list && k < json_array_size(list); k++) {
            json_t *n = json_array_get(list, k);
            if (!json_is_string(n))
                continue;
            const char *id = strrchr(json_string_value(n), '/');
            id = id ? id + 1 : json_string_value(n);
            if (newest(pubsub_monitoring_find(&m, id, PUBSUB_UNDELIVERED), now, &v, &data_age) &&
                (!have || v > size))
                size = v, have = 1;
            if (newest(pubsub_monitoring_find(&m, id, PUBSUB_OLDEST_UNACKED), now, &v, &data_age) &&
                (!have_age || v > age))
                age = v, have_age = 1;
        }
        const char *dlq = pubsub_topic_id(s->dead_letter_topic);
        if (have)
            metric_set_add(out, "qrel_dead_letter_messages", size, "queue", s->id,
                           "dead_letter_queue", dlq, NULL);
        if (have_age && have && size > 0)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", age, "queue", s->id,
                           "dead_letter_queue", dlq, NULL);
    }
    /* With min_interval the core reports the cache's age under the same name. */
    if (data_age >= 0 && c->min_interval <= 0)
        metric_set_add(out, "qrel_sample_age_seconds", data_age, NULL);
    rc = 0;
out:
    pubsub_monitoring_free(&m);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct pubsub_state *st = c->priv;
    struct scrape sc = {0};
    int rc = pubsub_client_begin(c, dl, e);
    if (rc == 0)
        rc = read_subscriptions(st, dl, &sc, e);
    if (rc == 0)
        rc = pubsub_topics_read(st, c->name, dl, sc.subs, sc.nsubs, &sc.topics, &sc.requests, e);
    if (rc == 0)
        rc = pubsub_topics_dead_letter_series(st, c->name, dl, sc.subs, sc.nsubs, &sc.topics, out,
                                              &sc.requests, e);
    if (rc == 0) {
        for (size_t i = 0; i < sc.nsubs; i++)
            pubsub_sub_series(&sc.subs[i], out);
        exclude_emit(&st->exclude, out, "subscription");
        if (st->monitoring)
            rc = monitoring_series(c, st, dl, deadline_wall_now(), &sc, out, e);
    }
    if (rc == 0 && log_enabled(LOG_DEBUG)) {
        char n[32], r[32];
        snprintf(n, sizeof n, "%zu", sc.nsubs);
        snprintf(r, sizeof r, "%zu", sc.requests);
        log_kv(LOG_DEBUG, "pubsub collection done", "source", c->name, "subscriptions", n,
               "requests", r, NULL);
    }
    scrape_free(&sc);
    return rc;
}

/* --config.check: a scrape, and for each subscription whose dead letters `qrel dlq` may read, its
 * deadLetterPolicy and the subscription on the dead-letter topic, found as `qrel dlq` finds them
 * (nothing is pulled). */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    return live_check(c, ((const struct pubsub_state *)c->priv)->dead_letter_queues, dl, e);
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "add a deadLetterPolicy with maxDeliveryAttempts"},
    /* A dead letter is published anew to the dead-letter topic, so only its subscriptions (or the
     * topic's own retention) keep it, from the moment it is forwarded. */
    {"dead_letters_expire_unread",
     "Pub/Sub keeps a dead letter only in the dead-letter topic's subscriptions, each for its "
     "messageRetentionDuration from the moment it is forwarded, and drops it when the topic has "
     "no subscription and no retention of its own; give a subscription of the dead-letter topic "
     "(or the topic) a retention longer than the queue's by the time you need to read them (at "
     "most 31 days)"},
    {NULL, NULL}};

const struct collector_kind pubsub_kind = {.name = "pubsub",
                                           .state_size = sizeof(struct pubsub_state),
                                           .configure = configure,
                                           .collect = collect,
                                           .destroy = destroy,
                                           .audit_hints = hints,
                                           .check = check,
                                           .dead_letter_validate = pubsub_dead_letter_validate,
                                           .dlq = &pubsub_dlq};
