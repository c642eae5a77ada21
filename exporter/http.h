/* http.h: the exporter's HTTP server (libmicrohttpd, one thread per connection so a slow scrape
 * never delays /-/healthy or another scrape).
 *
 * Endpoints: GET|HEAD <telemetry path> (default /metrics), /probe?target=<source>, /-/healthy,
 * /-/ready, /sd (Prometheus http_sd target groups, see sd.h), / (landing page);
 * POST|PUT /-/reload. Unknown paths answer 404, wrong methods 405 with an Allow header. */
#ifndef QREL_HTTP_H
#define QREL_HTTP_H

#include "app.h"
#include "err.h"
#include "webconfig.h"

struct http_server;

struct http_opts {
    /* "host:port", ":port", "[v6]:port"; port 0 picks a free one. The first is advertised. */
    const char *const *listen_addresses;
    size_t nlisten;
    int systemd_socket; /* listen on the sockets systemd passes instead (LISTEN_FDS) */
    const char *telemetry_path;
    const struct webconfig *web;   /* TLS and basic auth, or NULL; must outlive the server */
    const char *advertise_address; /* host:port listed by /sd; NULL: derived (sd.h) */
    int enable_lifecycle;          /* serve POST /-/reload (--web.enable-lifecycle) */
};

struct http_server *http_start(struct app *a, const struct http_opts *o, struct err *e);
/* The addresses actually bound, comma-separated, e.g. "127.0.0.1:19318,[::1]:19318" (useful
 * with port 0). */
const char *http_bound_address(const struct http_server *h);
/* The address /sd lists as every source's target. */
const char *http_advertise_address(const struct http_server *h);
void http_stop(struct http_server *h); /* NULL is fine */

/* Splits "host:port" / ":port" / "[v6]:port"; host is "" for all interfaces. Exposed for tests. */
int http_split_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen,
                       struct err *e);

#endif
