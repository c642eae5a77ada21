/* pubsub/topics.c: the topics behind the subscriptions of one scrape (topics.h). A subscription
 * keeps an unacknowledged message for its own messageRetentionDuration or its topic's, whichever
 * is longer, so every topic is read once (topics.get). A dead letter is published anew to the
 * dead-letter topic and kept by that topic's subscriptions, so each dead-letter topic's
 * subscriptions are listed once (topics.subscriptions.list), for their retention here and their
 * backlog in Cloud Monitoring (pubsub.c). A topic or subscription the credentials may not read
 * (another project's, typically) leaves its figures out rather than failing the scrape. The pure
 * parts are in parse.c. */
#include "topics.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"

/* What the API puts in a subscription's topic once the topic is deleted. */
#define DELETED_TOPIC "_deleted-topic_"

/* dead_letter_keep before it is computed, and when a subscription could not be read */
#define KEEP_UNSET (-1.0)
#define KEEP_UNKNOWN (-2.0)

static struct pubsub_topic *find(struct pubsub_topics *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0)
            return &t->v[i];
    return NULL;
}

const struct pubsub_topic *pubsub_topics_find(const struct pubsub_topics *t, const char *name)
{
    return find((struct pubsub_topics *)t, name);
}

static struct pubsub_topic *add(struct pubsub_topics *t, const char *name)
{
    struct pubsub_topic *p = find(t, name);
    if (p)
        return p;
    t->v = xrealloc(t->v, (t->n + 1) * sizeof *t->v);
    t->v[t->n] = (struct pubsub_topic){.name = xstrdup(name), .dead_letter_keep = KEEP_UNSET};
    return &t->v[t->n++];
}

/* GET endpoint/v1/NAME/SUFFIX; *doc NULL on a 404, and on a 403, which sets *denied and says so
 * in the log (rate-limited: a missing grant is missing at every scrape). The resource name's last
 * segment is escaped as a configured subscription's is (pubsub_client_sub_name takes any full
 * name). */
static int get(struct pubsub_state *st, const char *source, const struct deadline *dl,
               const char *name, const char *suffix, const char *what, json_t **doc, int *denied,
               size_t *requests, struct err *e)
{
    char *esc = pubsub_client_sub_name(st, name);
    struct buf url;
    buf_init(&url);
    buf_printf(&url, "%s/v1/%s%s", st->endpoint, esc, suffix);
    free(esc);
    (*requests)++;
    long status;
    int rc = pubsub_client_get_optional(st, dl, url.data, what, doc, &status, e);
    buf_free(&url);
    if (rc == 0 && status == 403) {
        *denied = 1;
        log_kv_limited(&st->denied_log, LOG_WARN, NULL,
                       "pubsub: no permission to read it (HTTP 403), so its retention series "
                       "are left out",
                       "source", source, "request", what, "resource", name, NULL);
    }
    return rc;
}

static int read_topic(struct pubsub_state *st, const char *source, const struct deadline *dl,
                      struct pubsub_topic *p, size_t *requests, struct err *e)
{
    json_t *doc;
    if (get(st, source, dl, p->name, "", "GET topic", &doc, &p->unreadable, requests, e))
        return -1;
    int rc = doc && pubsub_topic_retention(doc, "$", &p->retention, e) ? -1 : 0;
    json_decref(doc);
    if (rc || !p->dead_letter)
        return rc ? err_prefix(e, "GET topic") : 0;
    json_t *list = NULL;
    if (get(st, source, dl, p->name, "/subscriptions?pageSize=1000", "GET topic subscriptions",
            &doc, &p->unreadable, requests, e))
        return -1;
    if (!doc)
        return 0;
    if (json_expect_object(doc, "$", e) || json_get_array(doc, "$", "subscriptions", &list, e) < 0)
        rc = err_prefix(e, "GET topic subscriptions");
    else if (list)
        p->subscriptions = json_incref(list);
    json_decref(doc);
    return rc;
}

int pubsub_topics_read(struct pubsub_state *st, const char *source, const struct deadline *dl,
                       struct pubsub_sub *subs, size_t nsubs, struct pubsub_topics *t,
                       size_t *requests, struct err *e)
{
    for (size_t i = 0; i < nsubs; i++) {
        if (subs[i].topic && *subs[i].topic && strcmp(subs[i].topic, DELETED_TOPIC) != 0)
            add(t, subs[i].topic);
        if (subs[i].dead_letter_topic)
            add(t, subs[i].dead_letter_topic)->dead_letter = 1;
    }
    for (size_t i = 0; i < t->n; i++)
        if (read_topic(st, source, dl, &t->v[i], requests, e))
            return -1;
    for (size_t i = 0; i < nsubs; i++) {
        const struct pubsub_topic *p = subs[i].topic ? find(t, subs[i].topic) : NULL;
        subs[i].topic_retention = p ? p->retention : 0;
        subs[i].topic_unreadable = p ? p->unreadable : 0;
    }
    return 0;
}

/* The retention of the subscription named name on dead-letter topic p: from subs when it was read,
 * else from subscriptions.get; *found 0 when it no longer exists, *denied 1 when it may not be
 * read. */
static int dead_letter_sub_retention(struct pubsub_state *st, const char *source,
                                     const struct deadline *dl, const struct pubsub_sub *subs,
                                     size_t nsubs, const struct pubsub_topic *p, const char *name,
                                     double *keep, int *found, int *denied, size_t *requests,
                                     struct err *e)
{
    *found = 1;
    for (size_t i = 0; i < nsubs; i++)
        if (strcmp(subs[i].name, name) == 0) {
            *keep = pubsub_sub_retention(&subs[i]);
            return 0;
        }
    json_t *doc;
    if (get(st, source, dl, name, "", "GET dead-letter subscription", &doc, denied, requests, e))
        return -1;
    if (!doc) {
        *found = 0;
        return 0;
    }
    struct pubsub_sub s;
    int rc = pubsub_sub_parse(doc, "$", &s, e);
    if (rc == 0) {
        s.topic_retention = p->retention; /* it reads the dead-letter topic */
        *keep = pubsub_sub_retention(&s);
    }
    json_decref(doc);
    return rc ? err_prefix(e, "GET dead-letter subscription") : 0;
}

static int dead_letter_keep(struct pubsub_state *st, const char *source, const struct deadline *dl,
                            const struct pubsub_sub *subs, size_t nsubs, struct pubsub_topic *p,
                            size_t *requests, struct err *e)
{
    if (p->dead_letter_keep != KEEP_UNSET)
        return 0;
    if (p->unreadable) {
        p->dead_letter_keep = KEEP_UNKNOWN;
        return 0;
    }
    size_t n = json_array_size(p->subscriptions), k = 0;
    double *keeps = n ? xcalloc(n, sizeof *keeps) : NULL;
    int rc = 0, denied = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *name = json_string_value(json_array_get(p->subscriptions, i));
        int found = 0;
        if (name)
            rc = dead_letter_sub_retention(st, source, dl, subs, nsubs, p, name, &keeps[k], &found,
                                           &denied, requests, e);
        if (name && rc == 0 && found)
            k++;
    }
    /* An unreadable subscription might be the one that keeps them longest: unknown. */
    if (rc == 0)
        p->dead_letter_keep =
            denied ? KEEP_UNKNOWN : pubsub_dead_letter_retention(p->retention, keeps, k);
    free(keeps);
    return rc;
}

int pubsub_topics_dead_letter_series(struct pubsub_state *st, const char *source,
                                     const struct deadline *dl, const struct pubsub_sub *subs,
                                     size_t nsubs, struct pubsub_topics *t, struct metric_set *out,
                                     size_t *requests, struct err *e)
{
    for (size_t i = 0; i < nsubs; i++) {
        const struct pubsub_sub *s = &subs[i];
        struct pubsub_topic *p = s->dead_letter_topic ? find(t, s->dead_letter_topic) : NULL;
        if (!p)
            continue;
        if (dead_letter_keep(st, source, dl, subs, nsubs, p, requests, e))
            return -1;
        if (p->dead_letter_keep >= 0)
            metric_set_add(out, "qrel_dead_letter_retention_seconds", p->dead_letter_keep, "queue",
                           s->id, "dead_letter_queue", pubsub_topic_id(p->name), NULL);
    }
    return 0;
}

void pubsub_topics_free(struct pubsub_topics *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].name);
        json_decref(t->v[i].subscriptions);
    }
    free(t->v);
    memset(t, 0, sizeof *t);
}
