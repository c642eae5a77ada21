/* http.h: the HTTP client the HTTP+JSON broker kinds share (sqs, rabbitmq, nats, pubsub).
 *
 * One struct http_client per source instance wraps one libcurl easy handle, so the connection
 * (and TLS session) is reused from scrape to scrape. Every request:
 *   - is bounded by the collection's deadline (CURLOPT_TIMEOUT_MS, and a connect timeout no
 *     longer than what is left);
 *   - speaks only http and https, follows no redirect, and uses the source's TLS settings;
 *   - stops reading at max_response_bytes with an ERR_LIMIT error that names the cap;
 *   - signs with basic auth, AWS Signature V4 (region and service always explicit) or a bearer
 *     token, none of which ever reaches an error message, a log line or a label.
 * Errors name the method and the URL path (never the query string, where a token could sit) and
 * map to the reason labels: refused/reset/DNS/TLS -> connect, deadline -> timeout, HTTP 401/403 ->
 * auth, other HTTP errors -> query. */
#ifndef QREL_HTTP_H
#define QREL_HTTP_H

#include <stddef.h>

#include "config.h"
#include "deadline.h"
#include "err.h"
#include "common/tls.h"

#define HTTP_DEFAULT_MAX_RESPONSE_BYTES (64u << 20)

/* The keys every HTTP kind accepts (parsed by http_config_parse):
 *   tls_config                Prometheus-style TLS settings for https URLs (common/tls.h); with
 *                             OpenSSL's libcurl, server_name is the name the certificate is
 *                             verified against (the SNI stays the URL's host)
 *   max_response_bytes        cap on one response body after decompression (default 64 MiB) */
struct http_config {
    struct tls_config *tls; /* NULL: no tls_config (the system's CA store, no client cert) */
    size_t max_response_bytes;
};

/* Reads the keys above from map (marking them known) and loads tls_config's files once, so a
 * missing or unreadable file or a wrong key password fails here. 0 or -1 with a file:line:col
 * error. */
int http_config_parse(struct cfg_node *map, struct http_config *out, struct err *e);
void http_config_free(struct http_config *c);

/* Reads the base URL under key (the URL the kind appends its paths to): a non-empty http:// or
 * https:// URL as http_url_validate wants it, trailing slashes dropped so "<base>/api/..." has
 * one. Absent: *out is a copy of def, or NULL when def is NULL (the caller says what is missing).
 * 0 or -1 with a file:line:col error. */
int http_base_url(struct cfg_node *map, const char *key, const char *def, char **out,
                  struct err *e);

/* Checks a configured base URL: http:// or https:// with a host, no user:password@ (credentials
 * belong in username / password_file), no query or fragment. The error quotes no part of the
 * URL when it holds credentials. at is the node errors point to. */
int http_url_validate(const char *url, const struct cfg_node *at, const char *key, struct err *e);

enum http_auth {
    HTTP_AUTH_NONE = 0,
    HTTP_AUTH_BASIC,  /* username + password */
    HTTP_AUTH_SIGV4,  /* username = access key id, password = secret key, sigv4 = provider string */
    HTTP_AUTH_BEARER, /* password = the token */
};

struct http_request {
    const char *method;         /* "GET" (default when NULL) or "POST" */
    const char *url;            /* absolute */
    const char *const *headers; /* NULL-terminated "Name: value" lines, or NULL */
    const char *body;           /* POST body, or NULL */
    size_t body_len;
    enum http_auth auth;
    const char *username;
    const char *password;
    const char *sigv4;     /* "aws:amz:REGION:SERVICE", both parts explicit */
    int accept_any_status; /* 1: return 0 for any HTTP status and let the caller judge it */
};

struct http_response {
    long status;
    char *body; /* NUL-terminated; NULL before the first request */
    size_t len;
    char content_type[128];
    double seconds; /* total time of the transfer */
};

struct http_client;

/* source names the instance in log lines. Never fails (allocation failure aborts). */
struct http_client *http_client_new(const char *source, const struct http_config *cfg);
void http_client_free(struct http_client *c); /* NULL is fine */

/* Performs one request. On success (a 2xx status, or any status with accept_any_status) fills
 * *resp, which the caller frees with http_response_free. On failure returns -1 with e set and
 * *resp freed; after a failure the next request opens a new connection. */
int http_do(struct http_client *c, const struct http_request *req, const struct deadline *dl,
            struct http_response *resp, struct err *e);
void http_response_free(struct http_response *r);

/* Percent-encodes s for a URL path segment or query value (RFC 3986 unreserved kept). Caller
 * frees. */
char *http_escape(const char *s);

/* Server text for a message, such as an error body in "HTTP 400: {"__type":...": printable ASCII
 * only (other bytes become spaces), cut with "..." to fit cap bytes, there to recognise. */
void http_excerpt(const char *body, size_t len, char *out, size_t cap);

#endif
