/* pubsub/client.h: what the files of the `pubsub` kind share inside it (collectors/pubsub/
 * client.c): the source's state and one REST call with its token, so the collector (pubsub.c)
 * and `qrel dlq`'s hooks (dlq.c) talk to Pub/Sub the same way, on the same connection. Private to
 * the folder: not for other kinds, nor for tests. */
#ifndef QREL_PUBSUB_CLIENT_H
#define QREL_PUBSUB_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "auth.h"
#include "collector.h"
#include "common/exclude.h"
#include "common/http.h"
#include "config.h"
#include "deadline.h"
#include "err.h"
#include "log.h"

/* expired_ack_deadlines_count is a delta per sampling period; the counter adds each period once. */
struct pubsub_expiries {
    char *subscription;
    double total;
    double last_end; /* endTime of the newest period counted */
};

struct pubsub_state {
    char *project;
    char **subscriptions; /* NULL: every subscription of the project */
    size_t nsubscriptions;
    struct exclude exclude; /* subscriptions the list finds that are left out (only without
                               subscriptions) */
    /* dead_letter_subscriptions: the subscription `qrel dlq` pulls from on the dead-letter topic
     * of a watched subscription, where that topic has not exactly one (parallel lists) */
    char **dl_queue, **dl_sub;
    size_t ndl;
    /* the subscriptions whose dead letters `qrel dlq` may read (named by dead_letters entries
     * or dead_letter_subscriptions), for the --config.check hook (common/live_check.h) */
    char **dead_letter_queues;
    char *endpoint, *monitoring_endpoint;
    int monitoring;
    double monitoring_window;
    struct http_config http;
    struct pubsub_auth *auth;
    struct http_client *client;
    struct pubsub_expiries *exp;
    size_t nexp;
    const char *token;           /* this call's bearer token (owned by auth), NULL for none */
    struct log_limit denied_log; /* topics.c: resources the credentials may not read */
};

/* Opens the client when needed and takes the token for the calls that follow (one per scrape or
 * `qrel dlq` step: the token file is read once, a cached grant renewed when due). */
int pubsub_client_begin(struct collector *c, const struct deadline *dl, struct err *e);

/* One REST call with the token: method "GET" or "POST" (body: JSON text), url absolute. A 404 is
 * not an error when allow_missing: *doc is NULL. On 2xx *doc is the parsed reply (the caller's). */
int pubsub_client_call(struct pubsub_state *st, const struct deadline *dl, const char *method,
                       const char *url, const char *body, const char *what, int allow_missing,
                       json_t **doc, struct err *e);

/* GET url for a figure the scrape can do without: a 404 (the resource is gone) and a 403 (it is
 * out of the credentials' reach, such as another project's topic) are not errors; *status says
 * which, and *doc is NULL. A 403 here keeps the token: it is valid, this resource is not granted.
 * On 2xx *doc is the parsed reply (the caller's). */
int pubsub_client_get_optional(struct pubsub_state *st, const struct deadline *dl, const char *url,
                               const char *what, json_t **doc, long *status, struct err *e);

/* The resource name of a configured subscription: "projects/P/subscriptions/S" as given, or an id
 * in the source's project (escaped for a URL). malloc'd. */
char *pubsub_client_sub_name(const struct pubsub_state *st, const char *sub);

#endif
