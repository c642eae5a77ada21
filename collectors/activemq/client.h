/* client.h: the state of an `activemq` source and its one way to talk to Jolokia (client.c),
 * shared by the scrape (activemq.c) and `qrel dlq` (dlq.c). Private to the folder. */
#ifndef QREL_ACTIVEMQ_CLIENT_H
#define QREL_ACTIVEMQ_CLIENT_H

#include <jansson.h>

#include "collector.h"
#include "common/exclude.h"
#include "common/http.h"
#include "deadline.h"
#include "err.h"

struct state {
    char *url; /* jolokia_url, without a trailing slash */
    char *broker_name;
    char *username;
    char *password; /* wiped on destroy */
    char *dead_letter_queue;
    long long browse_limit;
    char **queues; /* globs, or NULL */
    size_t nqueues;
    struct exclude exclude;
    struct http_config http;
    struct http_client *client; /* kept between requests: the connection is reused */
};

/* POSTs req (one Jolokia request or a JSON list of them) and parses the reply into *doc. The
 * errors name `what` and never the password. */
int activemq_client_post(struct collector *c, json_t *req, const char *what,
                         const struct deadline *dl, json_t **doc, struct err *e);

/* The same, with the reply's text read into *doc by read (e.g. activemq_reply_parse) instead of
 * jansson whole. */
typedef json_t *(*activemq_reply_reader)(const char *body, size_t len, const char *what,
                                         struct err *e);
int activemq_client_post_with(struct collector *c, json_t *req, const char *what,
                              activemq_reply_reader read, const struct deadline *dl, json_t **doc,
                              struct err *e);

/* The ObjectName of the queue MBean of name, malloc'd. */
char *activemq_client_queue_mbean(const struct state *st, const char *name);

#endif
