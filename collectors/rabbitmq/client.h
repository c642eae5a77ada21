/* client.h: what the files of collectors/rabbitmq share (collectors/rabbitmq/client.c): the
 * source's state, the management API's GET, and a dead-letter exchange's type and bindings.
 * Private to the folder: rabbitmq.c (the scrape) and dlq.c (`qrel dlq`) both use it. */
#ifndef QREL_RABBITMQ_CLIENT_H
#define QREL_RABBITMQ_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/exclude.h"
#include "common/http.h"
#include "deadline.h"
#include "err.h"
#include "rabbitmq/consumers.h"

struct rabbitmq_cache;

struct rabbitmq_state {
    char *url;            /* management API base, no trailing '/' */
    char *prometheus_url; /* plugin base, or NULL */
    char *username;
    char *password;
    char **vhosts; /* NULL: every vhost */
    size_t nvhosts;
    char **queues; /* exact names; with pattern: either selects */
    size_t nqueues;
    char *pattern;               /* fnmatch glob */
    struct exclude exclude;      /* queues left out, whatever selects them */
    struct exclude exclude_vh;   /* vhosts whose queues are left out */
    double consumer_timeout;     /* seconds, -1 when not configured */
    double metadata_interval;    /* seconds; -1: automatic (see AUTO_INTERVAL_FACTOR) */
    double last_refresh_seconds; /* duration of the last successful refresh */
    int refresh_failed;          /* the last refresh of the slow part failed */
    /* with the plugin: how old the consumer counts may get before a scrape reads them (0: every
     * scrape), and the last ones read (counts NULL before the first) */
    double consumers_interval;
    struct rabbitmq_consumers consumers;
    struct http_config http;
    struct http_client *client;
    struct rabbitmq_cache *meta; /* the cached slow part; NULL before the first refresh */
    unsigned requests;           /* made in this collection, for the debug log */
    size_t last_queues; /* queues in the last depth table: the next one is sized for them */
    /* qrel dlq over AMQP 0-9-1 (amqp_url): NULL host when not configured */
    char *amqp_host;
    int amqp_port;
    char *amqp_vhost;
    int amqp_tls; /* amqps://: TLS with the source's tls_config (http.tls), as for the API */
    int dlq_accept_delivery_limit; /* read a dead-letter queue with its own delivery limit */
};

/* GET url from the management API (auth) or the plugin (no auth), within dl. what names it in
 * errors (no query string). With not_found, a 404 sets *not_found = 1 and succeeds
 * with resp empty. */
int rabbitmq_client_get(struct rabbitmq_state *st, const char *url, int auth,
                        const struct deadline *dl, struct http_response *resp, int *not_found,
                        struct err *e);

/* The same with extra request headers (NULL-terminated "Name: value" lines, or NULL). */
int rabbitmq_client_get_with(struct rabbitmq_state *st, const char *url, int auth,
                             const char *const *headers, const struct deadline *dl,
                             struct http_response *resp, int *not_found, struct err *e);

/* A dead-letter exchange, with what the broker said about it. */
struct dlx {
    const char *vhost, *name; /* the caller's         */
    int missing;              /* the exchange does not exist: dead letters are dropped */
    char *type;
    json_t *bindings; /* GET /api/exchanges/V/X/bindings/source */
};

/* The type and bindings of exchange x (x->vhost, x->name set by the caller); the default
 * exchange ("") is type "(default)" with no bindings, a missing one x->missing. */
int rabbitmq_client_dlx(struct rabbitmq_state *st, const struct deadline *dl, struct dlx *x,
                        struct err *e);

#endif
