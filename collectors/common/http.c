/* http.c: one libcurl easy handle per source, every request bounded by the deadline and a size
 * cap, credentials kept out of every message. See http.h. */
#include "http.h"

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "alloc.h"
#include "buf.h"
#include "version.h"

struct http_client {
    CURL *curl;
    char *source;
    struct http_config cfg;
    int fresh; /* the last request failed: do not reuse its connection */
};

/* curl_global_init is not thread-safe: run it once, before any collector thread uses curl. */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ------------------------------------------------------------------ config */

int http_config_parse(struct cfg_node *map, struct http_config *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->max_response_bytes = HTTP_DEFAULT_MAX_RESPONSE_BYTES;
    long long cap = 0;
    if (cfg_get_int(map, "max_response_bytes", HTTP_DEFAULT_MAX_RESPONSE_BYTES, 1024,
                    (long long)1 << 34, &cap, e))
        return -1;
    out->max_response_bytes = (size_t)cap;

    if (tls_config_read(map, &out->tls, e) || tls_config_check(map, out->tls, e)) {
        http_config_free(out);
        return -1;
    }
    return 0;
}

void http_config_free(struct http_config *c)
{
    if (!c)
        return;
    tls_config_free(c->tls);
    memset(c, 0, sizeof *c);
}

int http_url_validate(const char *url, const struct cfg_node *at, const char *key, struct err *e)
{
    const char *rest = NULL;
    if (strncmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        rest = url + 8;
    else
        return cfg_error(e, at, "%s: want an http:// or https:// URL", key);
    size_t host_len = strcspn(rest, "/?#");
    if (memchr(rest, '@', host_len))
        return cfg_error(e, at,
                         "%s: credentials do not belong in the URL; use username and "
                         "password_file",
                         key);
    if (host_len == 0)
        return cfg_error(e, at, "%s: want a host in \"%s\"", key, url);
    if (strchr(rest, '?') || strchr(rest, '#'))
        return cfg_error(e, at, "%s: want a URL without a query or fragment, got \"%s\"", key, url);
    return 0;
}

int http_base_url(struct cfg_node *map, const char *key, const char *def, char **out, struct err *e)
{
    *out = NULL;
    int rc = cfg_get_nonempty(map, key, out, e);
    if (rc == 0 && !*out) {
        *out = def ? xstrdup(def) : NULL;
        return 0;
    }
    if (rc == 0)
        rc = http_url_validate(*out, cfg_at(map, key), key, e);
    if (rc) { /* cfg_get_nonempty leaves an empty value allocated: *out is NULL on failure */
        free(*out);
        *out = NULL;
        return -1;
    }
    size_t n = strlen(*out);
    while (n > 0 && (*out)[n - 1] == '/')
        (*out)[--n] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ client */

struct http_client *http_client_new(const char *source, const struct http_config *cfg)
{
    pthread_once(&global_once, global_init);
    struct http_client *c = xcalloc(1, sizeof *c);
    c->curl = curl_easy_init();
    if (!c->curl) {
        fprintf(stderr, "qrel: curl_easy_init failed\n");
        abort();
    }
    c->source = xstrdup(source);
    if (cfg) {
        c->cfg = *cfg;
        c->cfg.tls = tls_config_dup(cfg->tls);
    }
    if (!c->cfg.max_response_bytes)
        c->cfg.max_response_bytes = HTTP_DEFAULT_MAX_RESPONSE_BYTES;
    if (c->cfg.tls && c->cfg.tls->insecure_skip_verify)
        log_kv(LOG_WARN, "TLS certificate verification is off (insecure_skip_verify)", "source",
               source, NULL);
    return c;
}

void http_client_free(struct http_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    http_config_free(&c->cfg);
    free(c->source);
    free(c);
}

void http_response_free(struct http_response *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* The body collector: refuses to grow past the cap, which makes curl stop the transfer. */
struct sink {
    struct buf b;
    size_t cap;
    int over;
    CURL *h; /* for the Content-Length, read once at the first piece */
};

/* Before the first piece, the body's buffer gets the size the Content-Length announces (at most
 * the cap): grown by doubling, a 3.9 MB body (RabbitMQ's depth page at 11,000 queues) was copied
 * by realloc about as many bytes again, 9% of qrel's CPU in such a scrape (perf). A body of
 * another length, or one decoded from gzip, still grows as needed. */
static void size_by_header(struct sink *s)
{
    curl_off_t cl = -1;
    if (curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK || cl <= 0)
        return;
    size_t want = (size_t)cl < s->cap ? (size_t)cl : s->cap;
    s->b.data = xmalloc(want + 1);
    s->b.data[0] = '\0';
    s->b.cap = want + 1;
}

static size_t on_body(char *p, size_t size, size_t n, void *userdata)
{
    struct sink *s = userdata;
    size_t len = size * n;
    if (s->b.len + len > s->cap) {
        s->over = 1;
        return 0;
    }
    if (!s->b.data && s->h)
        size_by_header(s);
    buf_append(&s->b, p, len);
    return len;
}

/* "GET /api/queues" for messages: the path only, never the query string or the host's userinfo. */
static void describe(const struct http_request *req, char *out, size_t cap)
{
    const char *u = req->url;
    const char *p = strstr(u, "://");
    p = p ? p + 3 : u;
    p += strcspn(p, "/?#");
    size_t plen = strcspn(p, "?#");
    if (plen == 0)
        p = "/", plen = 1;
    if (plen > 160)
        plen = 160;
    snprintf(out, cap, "%s %.*s", req->method ? req->method : "GET", (int)plen, p);
}

void http_excerpt(const char *body, size_t len, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 4 < cap; i++) {
        unsigned char ch = (unsigned char)body[i];
        out[j++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : ' ';
    }
    if (j + 4 >= cap && len > j)
        memcpy(out + j, "...", 3), j += 3;
    out[j] = '\0';
}

static int fail_curl(CURLcode rc, const char *what, const char *errbuf, const struct sink *s,
                     size_t cap, double budget_s, struct err *e)
{
    const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        return err_set(e, ERR_TIMEOUT, "%s: no complete answer within %.1fs", what, budget_s);
    case CURLE_WRITE_ERROR:
        if (s->over)
            return err_set(e, ERR_LIMIT,
                           "%s: response larger than %zu bytes (raise max_response_bytes)", what,
                           cap);
        return err_set(e, ERR_INTERNAL, "%s: %s", what, detail);
    case CURLE_OUT_OF_MEMORY:
        return err_set(e, ERR_INTERNAL, "%s: %s", what, detail);
    case CURLE_URL_MALFORMAT:
        return err_set(e, ERR_CONFIG, "%s: %s", what, detail);
    case CURLE_UNSUPPORTED_PROTOCOL: /* URLs are checked at configure: here the server answered
                                      * something that is not HTTP ("HTTP/0.9") */
        return err_set(e, ERR_PROTOCOL, "%s: not an HTTP answer: %s", what, detail);
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
        return err_set(e, ERR_PROTOCOL, "%s: %s", what, detail);
    default:
        /* refused, reset, DNS, TLS handshake and verification: the server could not be used */
        return err_set(e, ERR_CONNECT, "%s: %s", what, detail);
    }
}

/* server_name: OpenSSL checks the certificate against that name during the handshake, and curl's
 * own check of the URL's host is turned off (it would refuse the name the user asked for). Runs on
 * the SSL_CTX curl makes for each new connection; every SSL it makes inherits the name. */
static CURLcode set_verify_name(CURL *h, void *ssl_ctx, void *name)
{
    (void)h;
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param((SSL_CTX *)ssl_ctx);
    return X509_VERIFY_PARAM_set1_host(param, name, 0) == 1 ? CURLE_OK : CURLE_SSL_CONNECT_ERROR;
}

static int set_tls(struct http_client *c, struct err *e)
{
    const struct tls_config *t = c->cfg.tls;
    if (!t)
        return 0;
    CURL *h = c->curl;
    if (t->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
    if (t->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, t->cert_file);
    if (t->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, t->key_file);
    if (t->key_password)
        curl_easy_setopt(h, CURLOPT_KEYPASSWD, t->key_password);
    if (t->insecure_skip_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (t->server_name) {
        /* Only a libcurl built on OpenSSL hands out its SSL_CTX: any other one says so here
         * rather than verifying against the wrong name. */
        if (curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, set_verify_name) != CURLE_OK)
            return err_set(e, ERR_CONNECT,
                           "%s: tls_config.server_name needs a libcurl built with OpenSSL",
                           c->source);
        curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, t->server_name);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return 0;
}

static int set_auth(struct http_client *c, const struct http_request *req,
                    struct curl_slist **headers, struct err *e)
{
    CURL *h = c->curl;
    switch (req->auth) {
    case HTTP_AUTH_NONE:
        return 0;
    case HTTP_AUTH_BASIC:
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, req->username ? req->username : "");
        curl_easy_setopt(h, CURLOPT_PASSWORD, req->password ? req->password : "");
        return 0;
    case HTTP_AUTH_SIGV4:
        /* Without explicit region and service curl guesses them from the host name, which for
         * an endpoint such as 127.0.0.1 signs for service "127": refuse that here. */
        if (!req->sigv4 || strncmp(req->sigv4, "aws:amz:", 8) != 0 || !strchr(req->sigv4 + 8, ':'))
            return err_set(e, ERR_INTERNAL, "SigV4 needs \"aws:amz:REGION:SERVICE\"");
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, req->sigv4);
        curl_easy_setopt(h, CURLOPT_USERNAME, req->username ? req->username : "");
        curl_easy_setopt(h, CURLOPT_PASSWORD, req->password ? req->password : "");
        return 0;
    case HTTP_AUTH_BEARER: {
        char *line = xasprintf("Authorization: Bearer %s", req->password ? req->password : "");
        *headers = curl_slist_append(*headers, line);
        size_t n = strlen(line);
        memset(line, 0, n); /* curl copied it; do not leave the token in freed memory */
        free(line);
        return 0;
    }
    }
    return err_set(e, ERR_INTERNAL, "unknown HTTP auth mode");
}

int http_do(struct http_client *c, const struct http_request *req, const struct deadline *dl,
            struct http_response *resp, struct err *e)
{
    memset(resp, 0, sizeof *resp);
    char what[200];
    describe(req, what, sizeof what);

    int64_t left = deadline_remaining_ms(dl);
    if (left <= 0)
        return err_set(e, ERR_TIMEOUT, "%s: no time left before the deadline", what);

    CURL *h = c->curl;
    /* reset drops the previous request's options but keeps the connection cache */
    curl_easy_reset(h);
    char errbuf[CURL_ERROR_SIZE] = "";
    struct sink s = {.cap = c->cfg.max_response_bytes, .h = c->curl};
    buf_init(&s.b);
    struct curl_slist *headers = NULL;
    int rc = -1;

    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "qrel/" QREL_VERSION);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* every encoding curl can decode */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    if (c->fresh)
        curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    if (set_tls(c, e))
        goto out;

    if (req->method && strcmp(req->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(req->body ? req->body_len : 0));
    } else if (req->method && strcmp(req->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    }
    for (const char *const *hd = req->headers; hd && *hd; hd++)
        headers = curl_slist_append(headers, *hd);
    /* curl adds "Expect: 100-continue" to larger POSTs, costing a round trip: never wanted.
     * Except with SigV4: curl 7.88 signs the empty "Expect:" that only removes the header, so
     * the signature names a header that is never sent and AWS refuses it (SignatureDoesNotMatch).
     * There the header stays, unsigned, as AWS's own SDKs send it. */
    if (req->auth != HTTP_AUTH_SIGV4)
        headers = curl_slist_append(headers, "Expect:");
    if (set_auth(c, req, &headers, e))
        goto out;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        fail_curl(cc, what, errbuf, &s, s.cap, (double)left / 1000.0, e);
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    char *ct = NULL;
    if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
        snprintf(resp->content_type, sizeof resp->content_type, "%s", ct);
    curl_easy_getinfo(h, CURLINFO_TOTAL_TIME, &resp->seconds);
    resp->len = s.b.len;
    resp->body = buf_steal(&s.b);

    if (!req->accept_any_status && (resp->status < 200 || resp->status > 299)) {
        char ex[200];
        http_excerpt(resp->body, resp->len, ex, sizeof ex);
        if (resp->status == 401 || resp->status == 403)
            err_set(e, ERR_AUTH, "%s: HTTP %ld: the server refused the credentials", what,
                    resp->status);
        else
            err_set(e, ERR_QUERY, "%s: HTTP %ld%s%s", what, resp->status, ex[0] ? ": " : "", ex);
        http_response_free(resp);
        goto out;
    }
    rc = 0;
out:
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    buf_free(&s.b);
    c->fresh = rc != 0;
    return rc;
}

char *http_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    struct buf b;
    buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            buf_putc(&b, (char)ch);
        } else {
            char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            buf_append(&b, enc, 3);
        }
    }
    return buf_steal(&b);
}
