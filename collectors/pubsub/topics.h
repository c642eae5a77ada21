/* pubsub/topics.h: the topics of one scrape of the `pubsub` kind (collectors/pubsub/topics.c):
 * each topic's own retention, and the subscriptions of each dead-letter topic, where its dead
 * letters are kept and counted. Private to the folder: the collector (pubsub.c) calls it. */
#ifndef QREL_PUBSUB_TOPICS_H
#define QREL_PUBSUB_TOPICS_H

#include <jansson.h>
#include <stddef.h>

#include "client.h"
#include "metrics.h"
#include "pubsub.h"

struct pubsub_topic {
    char *name;            /* projects/P/topics/T */
    double retention;      /* its messageRetentionDuration; 0: none, or the topic does not exist */
    int unreadable;        /* HTTP 403 on the topic or its list: retention figures unknown */
    int dead_letter;       /* the dead-letter topic of a subscription read */
    json_t *subscriptions; /* a dead-letter topic's subscriptions (names; a reference held), NULL
                            * when it has none or does not exist */
    double dead_letter_keep; /* pubsub_dead_letter_retention, once computed; -1 before, -2
                              * when a subscription of the topic could not be read (403) */
};

struct pubsub_topics {
    struct pubsub_topic *v;
    size_t n;
};

/* Reads every topic of subs (topics.get, once each) and lists the subscriptions of their
 * dead-letter topics (topics.subscriptions.list), then sets each subscription's topic_retention
 * (or topic_unreadable). A resource the credentials may not read (HTTP 403, such as another
 * project's topic) is no error: its figures are left out, and a warning names it (source is the
 * source's name, for it). *requests counts the calls. */
int pubsub_topics_read(struct pubsub_state *st, const char *source, const struct deadline *dl,
                       struct pubsub_sub *subs, size_t nsubs, struct pubsub_topics *t,
                       size_t *requests, struct err *e);

/* The topic named name, or NULL when no subscription read has it. */
const struct pubsub_topic *pubsub_topics_find(const struct pubsub_topics *t, const char *name);

/* qrel_dead_letter_retention_seconds of every subscription of subs with a dead-letter topic: the
 * retention of that topic's subscriptions, those not among subs read with subscriptions.get (once
 * per topic). */
int pubsub_topics_dead_letter_series(struct pubsub_state *st, const char *source,
                                     const struct deadline *dl, const struct pubsub_sub *subs,
                                     size_t nsubs, struct pubsub_topics *t, struct metric_set *out,
                                     size_t *requests, struct err *e);

void pubsub_topics_free(struct pubsub_topics *t);

#endif
