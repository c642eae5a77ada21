/* http_requests.c: see http_requests.h. */
#include "http_requests.h"

#include <stddef.h>

static const char *const labels[HTTP_HANDLER_COUNT] = {
    [HTTP_HANDLER_METRICS] = "/metrics",
    [HTTP_HANDLER_PROBE] = "/probe",
    [HTTP_HANDLER_SD] = "/sd",
    [HTTP_HANDLER_ROOT] = "/",
    [HTTP_HANDLER_HEALTHY] = "/-/healthy",
    [HTTP_HANDLER_READY] = "/-/ready",
    [HTTP_HANDLER_RELOAD] = "/-/reload",
    [HTTP_HANDLER_OTHER] = "other",
};

const char *http_handler_label(const struct http_requests *r, enum http_handler h)
{
    if ((unsigned)h >= HTTP_HANDLER_COUNT)
        return labels[HTTP_HANDLER_OTHER];
    if (h == HTTP_HANDLER_METRICS && r && r->metrics_label)
        return r->metrics_label;
    return labels[h];
}

void http_requests_count(struct http_requests *r, enum http_handler h, unsigned code)
{
    if (!r || (unsigned)h >= HTTP_HANDLER_COUNT || code < HTTP_CODE_MIN || code > HTTP_CODE_MAX)
        return;
    atomic_fetch_add_explicit(&r->n[h][code - HTTP_CODE_MIN], 1, memory_order_relaxed);
}

unsigned long long http_requests_get(const struct http_requests *r, enum http_handler h,
                                     unsigned code)
{
    if (!r || (unsigned)h >= HTTP_HANDLER_COUNT || code < HTTP_CODE_MIN || code > HTTP_CODE_MAX)
        return 0;
    /* The const is the reader's promise; atomic_load wants a non-const pointer in C11. */
    return atomic_load_explicit((atomic_ullong *)&r->n[h][code - HTTP_CODE_MIN],
                                memory_order_relaxed);
}
