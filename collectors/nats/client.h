/* nats/client.h: the plumbing the files of the `nats` kind share (collectors/nats/client.c):
 * the source's state, and the NATS client connection `qrel dlq` reads and replays through
 * (cnats, Debian's libnats). Private to the folder. The scrape never connects: it reads the
 * monitoring port over HTTP (nats.c). */
#ifndef QREL_NATS_CLIENT_H
#define QREL_NATS_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/exclude.h"
#include "common/http.h"
#include "deadline.h"
#include "err.h"
#include "nats.h"

struct nats_state {
    char *url; /* base URL of the monitoring port, without a trailing slash */
    char *account;
    char *username;
    char *password; /* wiped on destroy */
    long long page_size;
    struct http_config http;
    struct nats_stream_spec *specs;
    size_t nspecs;
    struct exclude exclude;           /* streams left out, when streams is absent */
    struct exclude exclude_consumers; /* durable consumers left out */
    double active_window;             /* consumer_active_window: a pull consumer's, seconds */
    struct http_client *client;       /* kept between scrapes: the connection is reused */
    /* `qrel dlq`: the client port and how to log in there (nats_* keys); NULL: not set */
    char *nats_url;
    char *nats_username;
    char *nats_password; /* wiped on destroy */
    char *nats_token;    /* wiped on destroy */
    char *nats_creds_file;
};

struct nats_conn;

/* Connects to st->nats_url within dl. NULL with e set (ERR_CONNECT, ERR_AUTH, ERR_TIMEOUT); no
 * message names a password, a token or the credentials file's content. */
struct nats_conn *nats_client_open(const struct nats_state *st, const char *source,
                                   const struct deadline *dl, struct err *e);
void nats_client_close(struct nats_conn *c); /* NULL is fine */

/* One JetStream API request (subject "$JS.API....", body JSON or NULL): the reply parsed, NULL
 * with e set. The caller reads the reply's "error" (nats_api_error). */
json_t *nats_client_api(struct nats_conn *c, const char *subject, const char *body,
                        const struct deadline *dl, struct err *e);

/* Publishes data to subject with the headers h (those nats_header_replaced names left out),
 * Nats-Msg-Id msg_id and the stamp DLQ_STAMP = stamp, and waits for JetStream's ack: 0 with
 * *duplicate set when the stream already had msg_id (nothing stored), -1 with e set. ERR_TIMEOUT
 * and ERR_CONNECT leave it unknown whether the stream stored it. */
int nats_client_publish(struct nats_conn *c, const char *subject, const struct nats_headers *h,
                        const char *msg_id, long long stamp, const void *data, size_t len,
                        const char *stream, const struct deadline *dl, int *duplicate,
                        struct err *e);

#endif
