/* http_requests.h: the count of answered HTTP requests by handler and status code, for
 * qrel_http_requests_total, so that load shedding (503) and refused logins (401) show on a
 * dashboard and not only in the log.
 *
 * Every connection has its own MHD thread, so the counters are atomics added with relaxed order:
 * no lock, no contention beyond the cache line, and a reader sees each counter whole (a scrape
 * need not see the requests of the same instant together). The table is fixed: handlers are the
 * server's routes, never the requested path (a path a client makes up would be a label value
 * without bound), and codes 100 to 599 each have a slot. */
#ifndef QREL_HTTP_REQUESTS_H
#define QREL_HTTP_REQUESTS_H

#include <stdatomic.h>

/* The handlers, named as exporter-toolkit and promhttp name routes; HTTP_HANDLER_OTHER is every
 * path that is none of them (the 404s). */
enum http_handler {
    HTTP_HANDLER_METRICS, /* the telemetry path (--web.telemetry-path) */
    HTTP_HANDLER_PROBE,
    HTTP_HANDLER_SD,
    HTTP_HANDLER_ROOT,
    HTTP_HANDLER_HEALTHY,
    HTTP_HANDLER_READY,
    HTTP_HANDLER_RELOAD,
    HTTP_HANDLER_OTHER,
    HTTP_HANDLER_COUNT
};

#define HTTP_CODE_MIN 100
#define HTTP_CODE_MAX 599

struct http_requests {
    const char *metrics_label; /* the handler label of HTTP_HANDLER_METRICS; not owned */
    atomic_ullong n[HTTP_HANDLER_COUNT][HTTP_CODE_MAX - HTTP_CODE_MIN + 1];
};

/* The route's label: "/probe", "/-/healthy", ..., "other"; for HTTP_HANDLER_METRICS the
 * telemetry path in r->metrics_label ("/metrics" when NULL). */
const char *http_handler_label(const struct http_requests *r, enum http_handler h);
/* Counts one answered request; a code outside 100..599 is not counted. */
void http_requests_count(struct http_requests *r, enum http_handler h, unsigned code);
/* The count so far (0 for a code outside 100..599). */
unsigned long long http_requests_get(const struct http_requests *r, enum http_handler h,
                                     unsigned code);

#endif
