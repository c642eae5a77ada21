/* http.c: see http.h.
 *
 * One thread per connection is the simplest model that meets the rule "a scrape waiting on a
 * hanging broker never stalls another request": MHD's thread pool (with epoll) would park
 * /-/healthy behind blocked scrapes, and MHD allows epoll only without thread-per-connection.
 * poll() instead of select() lifts the 1024-descriptor ceiling of FD_SETSIZE.
 *
 * Limits, so that a hostile or broken client cannot starve the server (README, "Connection
 * limits"): HTTP_MAX_CONNECTIONS in all and HTTP_MAX_PER_IP from one address (MHD closes the
 * ones beyond at once: an idle socket costs a descriptor, ~32 KiB of MHD buffer and a thread with
 * a small stack), HTTP_IDLE_TIMEOUT_S of silence, and HTTP_MAX_SCRAPES requests that collect at
 * once; beyond that a scrape is answered 503 with Retry-After, and the health endpoints are never
 * shed. Measured on 2 cores: /-/healthy answers in milliseconds with 600 slowloris sockets open,
 * and 1,000 concurrent scrapes all get a status. Refusals are logged at most once per
 * HTTP_LOG_EVERY_S with a count, not once each. */
#include "http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "deadline.h"
#include "expfmt.h"
#include "flags.h"
#include "http_requests.h"
#include "landing.h"
#include "log.h"
#include "scheduler.h"
#include "scrape.h"
#include "sd.h"
#include "tlsserver.h"
#include "number.h"
#include "alloc.h"
#include "buf.h"
#include "text.h"

#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_MAX_PER_IP 1024
#define HTTP_IDLE_TIMEOUT_S 15
#define HTTP_MAX_SCRAPES 64
#define HTTP_RETRY_AFTER "1"
#define HTTP_LISTEN_BACKLOG 1024
#define HTTP_THREAD_STACK (512 * 1024)
#define HTTP_LOG_EVERY_S 10
#define HTTP_BODY_BLOCK (64 * 1024)
#define HTTP_MAX_LISTEN FLAG_LIST_MAX

struct http_server {
    struct MHD_Daemon *d[HTTP_MAX_LISTEN];
    size_t nd;
    struct tlsserver *tls; /* the certificate in use and the client policy, or NULL */
    struct app *app;
    char *telemetry_path;
    const struct webconfig *web;
    int enable_lifecycle;
    char bound[HTTP_MAX_LISTEN * 64];
    char advertise[300];
    struct http_requests *requests; /* answered requests (lock-free, http_requests.h) */
    pthread_mutex_t mu;             /* guards the fields below */
    int scrapes;                    /* requests collecting now */
    struct log_limit shed_log;      /* one line per HTTP_LOG_EVERY_S, counting the 503s */
};

/* MHD's own messages (a refused connection each) are rate-limited the same way. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct log_limit mhd_log_limit = {.every_ms = HTTP_LOG_EVERY_S * 1000, .burst = 5};

int http_split_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen,
                       struct err *e)
{
    const char *colon;
    const char *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return err_set(e, ERR_CONFIG, "listen address \"%s\": want [ipv6]:port", addr);
        h = addr + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return err_set(e, ERR_CONFIG, "listen address \"%s\": want host:port or :port", addr);
        hl = (size_t)(colon - addr);
    }
    const char *p = colon + 1;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5 || strtol(p, NULL, 10) > 65535)
        return err_set(e, ERR_CONFIG, "listen address \"%s\": want a port from 0 to 65535", addr);
    if (hl >= hostlen || strlen(p) >= portlen)
        return err_set(e, ERR_CONFIG, "listen address \"%s\" is too long", addr);
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, p, strlen(p) + 1);
    return 0;
}

/* body (malloc'd, ours to free) as the answer, with one more header when header is not NULL
 * (Allow on a 405, Retry-After on a 503). */
static enum MHD_Result send_text_header(struct MHD_Connection *conn, unsigned status,
                                        const char *ctype, char *body, size_t len,
                                        const char *header, const char *value)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (header)
        MHD_add_response_header(r, header, value);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *ctype,
                                 char *body, size_t len)
{
    return send_text_header(conn, status, ctype, body, len, NULL, NULL);
}

static enum MHD_Result send_plain(struct MHD_Connection *conn, unsigned status, const char *msg)
{
    char *body = xasprintf("%s\n", msg);
    return send_text(conn, status, "text/plain; charset=utf-8", body, strlen(body));
}

static enum MHD_Result send_405(struct MHD_Connection *conn, const char *allow)
{
    char *body = xasprintf("method not allowed; allowed: %s\n", allow);
    return send_text_header(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", body,
                            strlen(body), MHD_HTTP_HEADER_ALLOW, allow);
}

/* Load shedding: a scrape holds a thread, its wait and a gzip stream (~300 KiB), so only
 * HTTP_MAX_SCRAPES run at once; the rest get 503 and Retry-After at once, which Prometheus
 * records as a failed scrape instead of a connection that hangs or resets. */
static int admit(struct http_server *h)
{
    pthread_mutex_lock(&h->mu);
    int ok = h->scrapes < HTTP_MAX_SCRAPES;
    if (ok) {
        h->scrapes++;
    } else {
        long held;
        if (log_limit_pass(&h->shed_log, NULL, deadline_now_ms(), &held)) {
            char n[32], limit[32];
            snprintf(n, sizeof n, "%ld", held + 1);
            snprintf(limit, sizeof limit, "%d", HTTP_MAX_SCRAPES);
            log_kv(LOG_WARN, "too many concurrent scrapes, answering 503", "refused", n, "limit",
                   limit, NULL);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

static void release(struct http_server *h)
{
    pthread_mutex_lock(&h->mu);
    h->scrapes--;
    pthread_mutex_unlock(&h->mu);
}

static enum MHD_Result send_503(struct MHD_Connection *conn)
{
    char *body = xstrdup("too many concurrent scrapes, retry later\n");
    return send_text_header(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
                            strlen(body), MHD_HTTP_HEADER_RETRY_AFTER, HTTP_RETRY_AFTER);
}

/* X-Prometheus-Scrape-Timeout-Seconds: a positive decimal; anything else is ignored. Values
 * below the floor are raised to it by the scheduler (SCHEDULER_SCRAPE_TIMEOUT_FLOOR). */
static double scrape_timeout_header(struct MHD_Connection *conn)
{
    const char *v =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Prometheus-Scrape-Timeout-Seconds");
    if (!v)
        return 0;
    char *end;
    double t = strtod(v, &end);
    if (end == v || *end != '\0' || !(t > 0) || t > 86400)
        return 0;
    return t;
}

/* A scrape's response, written while the client reads it: the exposition of 10,000 streams is
 * about 10 MB of text, which is never held in memory whole. With gzip (which Prometheus always
 * asks for) it also crosses the network about ten times smaller. */
struct scrape_body {
    struct http_server *h; /* its admission is released with the body */
    struct scrape *x;      /* what the scrape serves (scrape.h) */
    struct expfmt_writer *w;
    int gzip;
    int eof;  /* the writer is exhausted */
    int done; /* the gzip stream is finished */
    z_stream z;
    char in[HTTP_BODY_BLOCK];
};

static void body_free(void *cls)
{
    struct scrape_body *b = cls;
    if (b->gzip)
        deflateEnd(&b->z);
    expfmt_writer_free(b->w);
    scrape_free(b->x);
    release(b->h);
    free(b);
    xmalloc_release(); /* the scrape's sets and body are freed: give their pages back */
}

static ssize_t body_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct scrape_body *b = cls;
    (void)pos;
    if (!b->gzip) {
        size_t n = expfmt_writer_read(b->w, out, max);
        return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (b->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    b->z.next_out = (unsigned char *)out;
    b->z.avail_out = (unsigned)(max > UINT32_MAX ? UINT32_MAX : max);
    /* deflate may swallow input without output; loop until the buffer is full or the end. */
    while (b->z.avail_out > 0) {
        if (b->z.avail_in == 0 && !b->eof) {
            size_t n = expfmt_writer_read(b->w, b->in, sizeof b->in);
            b->eof = n == 0;
            b->z.next_in = (unsigned char *)b->in;
            b->z.avail_in = (unsigned)n;
        }
        int rc = deflate(&b->z, b->eof ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            b->done = 1;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t produced = max - b->z.avail_out;
    return produced ? (ssize_t)produced : MHD_CONTENT_READER_END_OF_STREAM;
}

/* 1 when Accept-Encoding lists gzip with a q above 0. */
static int accepts_gzip(struct MHD_Connection *conn)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept-Encoding");
    while (v && *v) {
        while (*v == ' ' || *v == ',')
            v++;
        const char *end = strchr(v, ',');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        const char *semi = memchr(v, ';', len);
        size_t name = semi ? (size_t)(semi - v) : len;
        while (name && v[name - 1] == ' ')
            name--;
        if (name == 4 && strncasecmp(v, "gzip", 4) == 0) {
            const char *q = semi ? strstr(semi, "q=") : NULL;
            if (!q || q > v + len || strtod(q + 2, NULL) > 0)
                return 1;
        }
        v = end;
    }
    return 0;
}

/* One scrape, streamed in the negotiated format. only == NULL: every source plus the exporter's
 * own series; otherwise just that source (for /probe). What is served is scrape_run's. */
static enum MHD_Result serve_scrape(struct http_server *h, struct MHD_Connection *conn,
                                    const char *only)
{
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
    enum expfmt_format fmt = expfmt_negotiate(accept);
    struct scrape_self self = {0};
    struct scrape_opts o = {
        .scrape_timeout = scrape_timeout_header(conn), .only = only, .self = &self};

    if (!admit(h))
        return send_503(conn);
    struct scrape_body *b = xcalloc(1, sizeof *b);
    b->h = h;
    struct scheduler *s = app_acquire(h->app);
    app_self(h->app, &self);
    self.process = 1;
    self.requests = h->requests;
    b->x = scrape_run(s, &o);
    scheduler_unref(s); /* the scrape holds its own */
    size_t n;
    struct metric_set *const *sets = scrape_sets(b->x, &n);
    b->w = expfmt_writer_new(sets, n, fmt);
    b->gzip = accepts_gzip(conn);
    if (b->gzip && deflateInit2(&b->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        b->gzip = 0;

    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_BODY_BLOCK,
                                                               body_read, b, body_free);
    if (!r) {
        body_free(b);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, expfmt_content_type(fmt));
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (b->gzip)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* /probe?target=NAME collects one configured source, so several exporters can share many
 * sources. Targets come only from the configuration file, never from the URL itself. */
static enum MHD_Result serve_probe(struct http_server *h, struct MHD_Connection *conn)
{
    const char *target = NULL;
    size_t target_len = 0;
    if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, "target", strlen("target"),
                                      &target, &target_len) != MHD_YES ||
        !target || !*target)
        return send_plain(conn, MHD_HTTP_BAD_REQUEST, "missing ?target=<source name>");
    /* %00 decodes to a NUL that would make "cache%00x" look up "cache". */
    if (memchr(target, '\0', target_len))
        return send_plain(conn, MHD_HTTP_BAD_REQUEST, "target: a NUL byte is not allowed");
    struct scheduler *s = app_acquire(h->app);
    int known = sources_find(scheduler_sources(s), target) != NULL;
    scheduler_unref(s);
    if (!known)
        return send_plain(conn, MHD_HTTP_BAD_REQUEST,
                          "unknown target: name a source from the configuration file");
    return serve_scrape(h, conn, target);
}

/* The landing page shows the latest collection when it is recent (see LANDING_MAX_AGE), and
 * otherwise collects through the scheduler like a scrape: sharing a running collection,
 * honouring back-off and min_interval. A person reloading the page thus costs no query. */
static enum MHD_Result serve_landing(struct http_server *h, struct MHD_Connection *conn)
{
    if (!admit(h))
        return send_503(conn);
    struct scheduler *s = app_acquire(h->app);
    struct scrape_opts o = {.max_age = LANDING_MAX_AGE, .report = 1};
    struct scrape *x = scrape_run(s, &o);
    struct buf b;
    buf_init(&b);
    landing_render(&b, h->telemetry_path, s, scrape_report(x));
    scrape_free(x);
    scheduler_unref(s);
    release(h);
    size_t len = b.len;
    return send_text(conn, MHD_HTTP_OK, "text/html; charset=utf-8", buf_steal(&b), len);
}

/* http_sd: the sources of the running configuration, so a reload reaches Prometheus at its next
 * refresh. */
static enum MHD_Result serve_sd(struct http_server *h, struct MHD_Connection *conn)
{
    struct scheduler *s = app_acquire(h->app);
    struct buf b;
    buf_init(&b);
    sd_render(&b, scheduler_sources(s), h->advertise);
    scheduler_unref(s);
    size_t len = b.len;
    return send_text(conn, MHD_HTTP_OK, "application/json", buf_steal(&b), len);
}

static enum MHD_Result serve_reload(struct http_server *h, struct MHD_Connection *conn)
{
    /* As in Prometheus: a reload over HTTP is opt-in; SIGHUP needs access to the process. */
    if (!h->enable_lifecycle)
        return send_plain(conn, MHD_HTTP_FORBIDDEN,
                          "Lifecycle API is not enabled (start with --web.enable-lifecycle)");
    struct err e;
    err_clear(&e);
    if (app_reload(h->app, &e) != 0)
        return send_plain(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, e.msg);
    return send_plain(conn, MHD_HTTP_OK, "configuration reloaded");
}

/* Basic auth, as exporter-toolkit does it: every path, including the health endpoints. The
 * header is parsed by webconfig (MHD's parser wants "Basic" capitalised and cuts at a NUL). */
static int authorized(struct http_server *h, struct MHD_Connection *conn)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    return webconfig_authorize(h->web, v);
}

static enum MHD_Result send_401(struct MHD_Connection *conn)
{
    static const char body[] = "unauthorized\n";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_basic_auth_fail_response(conn, "qrel", r);
    MHD_destroy_response(r);
    return ret;
}

static int is_get(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

/* The route a path belongs to, for qrel_http_requests_total's handler label. */
static enum http_handler handler_of(const struct http_server *h, const char *url)
{
    static const struct {
        const char *path;
        enum http_handler which;
    } routes[] = {
        {"/probe", HTTP_HANDLER_PROBE},       {"/sd", HTTP_HANDLER_SD},
        {"/-/healthy", HTTP_HANDLER_HEALTHY}, {"/-/ready", HTTP_HANDLER_READY},
        {"/-/reload", HTTP_HANDLER_RELOAD},   {"/", HTTP_HANDLER_ROOT},
    };
    if (strcmp(url, h->telemetry_path) == 0)
        return HTTP_HANDLER_METRICS;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(url, routes[i].path) == 0)
            return routes[i].which;
    return HTTP_HANDLER_OTHER;
}

static enum MHD_Result respond(struct http_server *h, struct MHD_Connection *conn, const char *url,
                               const char *method)
{
    if (h->web && h->web->nusers && !authorized(h, conn))
        return send_401(conn);
    if (strcmp(url, h->telemetry_path) == 0)
        return is_get(method) ? serve_scrape(h, conn, NULL) : send_405(conn, "GET, HEAD");
    if (strcmp(url, "/probe") == 0)
        return is_get(method) ? serve_probe(h, conn) : send_405(conn, "GET, HEAD");
    if (strcmp(url, "/sd") == 0)
        return is_get(method) ? serve_sd(h, conn) : send_405(conn, "GET, HEAD");
    if (strcmp(url, "/-/healthy") == 0)
        return is_get(method) ? send_plain(conn, MHD_HTTP_OK, "Healthy")
                              : send_405(conn, "GET, HEAD");
    if (strcmp(url, "/-/ready") == 0)
        return is_get(method) ? send_plain(conn, MHD_HTTP_OK, "Ready")
                              : send_405(conn, "GET, HEAD");
    if (strcmp(url, "/-/reload") == 0)
        return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0
                   ? serve_reload(h, conn)
                   : send_405(conn, "POST, PUT");
    if (strcmp(url, "/") == 0)
        return is_get(method) ? serve_landing(h, conn) : send_405(conn, "GET, HEAD");
    return send_plain(conn, MHD_HTTP_NOT_FOUND, "not found");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    struct http_server *h = cls;
    static int started;
    /* MHD calls once with the headers, then with body chunks, then once more: answer last. */
    if (*state == NULL) {
        *state = &started;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* no endpoint reads a body; discard it */
        return MHD_YES;
    }
    enum MHD_Result ret = respond(h, conn, url, method);
    /* Counted from the status MHD queued, so every answer of respond() is counted the same way
     * (a 401 under the route the client asked for); a response that failed to queue has none. */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (ret == MHD_YES && ci)
        http_requests_count(h->requests, handler_of(h, url), ci->http_status);
    return ret;
}

/* At most 5 lines per HTTP_LOG_EVERY_S, then one that counts what was left out: a burst of
 * refused connections must not turn into thousands of log lines. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    long suppressed = 0;
    pthread_mutex_lock(&log_mu);
    int quiet = !log_limit_pass(&mhd_log_limit, NULL, deadline_now_ms(), &suppressed);
    pthread_mutex_unlock(&log_mu);
    if (suppressed) {
        char n[32];
        snprintf(n, sizeof n, "%ld", suppressed);
        log_kv(LOG_WARN, "http server: similar messages left out", "count", n, NULL);
    }
    if (quiet)
        return;
    struct buf b;
    buf_init(&b);
    buf_vprintf(&b, fmt, ap);
    text_chomp(b.data ? b.data : "");
    log_kv(LOG_WARN, "http server", "err", b.data ? b.data : "", NULL);
    buf_free(&b);
}

/* The sockets systemd passes (sd_listen_fds(3) without libsystemd): LISTEN_PID names us and
 * LISTEN_FDS counts descriptors from 3. */
static int systemd_fds(int *fds, size_t max, size_t *n, struct err *e)
{
    const char *pid = getenv("LISTEN_PID"), *count = getenv("LISTEN_FDS");
    long long p, c;
    if (!pid || !count || num_parse_int(pid, 1, INT32_MAX, &p) || p != (long long)getpid())
        return err_set(e, ERR_CONFIG,
                       "--web.systemd-socket: no socket passed (LISTEN_PID is not this process)");
    if (num_parse_int(count, 1, (long long)max, &c))
        return err_set(e, ERR_CONFIG, "--web.systemd-socket: LISTEN_FDS: want 1 to %zu sockets",
                       max);
    for (long long i = 0; i < c; i++) {
        fds[i] = 3 + (int)i;
        /* Our children (none today) must not inherit the listening sockets. */
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    *n = (size_t)c;
    return 0;
}

/* host (numeric, "" for a wildcard) and port a daemon listens on, from its socket. */
static void daemon_address(struct MHD_Daemon *d, char *host, size_t hostlen, unsigned *port)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    host[0] = '\0';
    *port = 0;
    if (!info || getsockname(info->listen_fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    char serv[8];
    if (getnameinfo((struct sockaddr *)&ss, sl, host, (socklen_t)hostlen, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        host[0] = '\0';
        return;
    }
    *port = (unsigned)strtoul(serv, NULL, 10);
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
        host[0] = '\0';
}

/* One daemon on listen address addr (or on the socket fd when fd >= 0). opts[1] is the address
 * or socket item; the caller's flags and options are otherwise shared by every daemon. */
static struct MHD_Daemon *start_one(struct http_server *h, const char *addr, int fd, unsigned flags,
                                    struct MHD_OptionItem *opts, char *host, size_t hostlen,
                                    struct err *e)
{
    if (fd >= 0) {
        opts[1] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd, NULL};
        struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_ARRAY,
                                                opts, MHD_OPTION_END);
        if (!d)
            err_set(e, ERR_CONFIG, "cannot serve the socket systemd passed (descriptor %d)", fd);
        return d;
    }
    char port[8];
    if (http_split_address(addr, host, hostlen, port, sizeof port, e))
        return NULL;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (gai != 0) {
        err_set(e, ERR_CONFIG, "listen address \"%s\": %s", addr, gai_strerror(gai));
        return NULL;
    }
    /* With no host, prefer one dual-stack IPv6 socket (serves IPv4 too), else IPv4. */
    struct addrinfo *pick = res;
    for (struct addrinfo *r = res; !host[0] && r; r = r->ai_next)
        if (r->ai_family == AF_INET6)
            pick = r;
    if (pick->ai_family == AF_INET6)
        flags |= host[0] ? MHD_USE_IPv6 : MHD_USE_DUAL_STACK;
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, pick->ai_addr};
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    struct sockaddr_in sin = {0};
    if (!d && pick->ai_family == AF_INET6 && !host[0]) {
        /* No IPv6 on this machine: fall back to IPv4 on all interfaces. */
        sin.sin_family = AF_INET;
        sin.sin_port = htons((unsigned short)strtol(port, NULL, 10));
        sin.sin_addr.s_addr = htonl(INADDR_ANY);
        opts[1].ptr_value = &sin;
        flags &= ~(unsigned)MHD_USE_DUAL_STACK;
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_ARRAY, opts,
                             MHD_OPTION_END);
    }
    freeaddrinfo(res);
    if (!d)
        err_set(e, ERR_CONFIG, "cannot listen on \"%s\" (address in use or not available)", addr);
    return d;
}

struct http_server *http_start(struct app *a, const struct http_opts *o, struct err *e)
{
    if (o->telemetry_path[0] != '/' || strcmp(o->telemetry_path, "/") == 0 ||
        strncmp(o->telemetry_path, "/-/", 3) == 0) {
        err_set(e, ERR_CONFIG, "telemetry path \"%s\": want a path like /metrics",
                o->telemetry_path);
        return NULL;
    }
    int fds[HTTP_MAX_LISTEN];
    size_t n = o->nlisten;
    if (o->systemd_socket && systemd_fds(fds, HTTP_MAX_LISTEN, &n, e))
        return NULL;
    if (n == 0 || n > HTTP_MAX_LISTEN) {
        err_set(e, ERR_CONFIG, "want 1 to %d listen addresses", HTTP_MAX_LISTEN);
        return NULL;
    }
    /* poll(), not select(): with a connection per source, an exporter of 1,000 sources holds
     * socket numbers above FD_SETSIZE (1024), and select-based MHD drops such connections. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;

    struct http_server *h = xcalloc(1, sizeof *h);
    h->shed_log.every_ms = HTTP_LOG_EVERY_S * 1000;
    h->app = a;
    h->web = o->web;
    h->telemetry_path = xstrdup(o->telemetry_path);
    h->requests = xcalloc(1, sizeof *h->requests);
    h->requests->metrics_label = h->telemetry_path;
    h->enable_lifecycle = o->enable_lifecycle;
    pthread_mutex_init(&h->mu, NULL);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL},
        {MHD_OPTION_END, 0, NULL}, /* the address or the socket: start_one's */
        {MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTP_MAX_PER_IP, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, HTTP_LISTEN_BACKLOG, NULL},
        {MHD_OPTION_THREAD_STACK_SIZE, HTTP_THREAD_STACK, NULL},
        {MHD_OPTION_END, 0, NULL}, /* TLS key, certificate, priorities and the hook go here */
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    if (o->web && o->web->cert_pem) {
        flags |= MHD_USE_TLS;
        h->tls = tlsserver_new(o->web);
        opts[7] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, o->web->key_pem};
        opts[8] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, o->web->cert_pem};
        opts[9] = (struct MHD_OptionItem){
            MHD_OPTION_HTTPS_PRIORITIES, 0,
            o->web->tls_priorities ? o->web->tls_priorities : (char *)webconfig_default_priorities};
        /* Each new connection gets the current certificate and the client certificate policy
         * (tlsserver.h) before its handshake. */
        opts[10] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)tlsserver_notify,
                                           h->tls};
    }
    char host[256] = "";
    unsigned bound_port = 0;
    for (size_t i = 0; i < n; i++) {
        char ahost[256];
        h->d[i] = start_one(h, o->systemd_socket ? NULL : o->listen_addresses[i],
                            o->systemd_socket ? fds[i] : -1, flags, opts, ahost, sizeof ahost, e);
        if (!h->d[i]) {
            http_stop(h);
            return NULL;
        }
        h->nd = i + 1;
        unsigned p;
        char bhost[256];
        daemon_address(h->d[i], bhost, sizeof bhost, &p);
        if (!o->systemd_socket && !ahost[0])
            bhost[0] = '\0';
        size_t len = strlen(h->bound);
        snprintf(h->bound + len, sizeof h->bound - len,
                 strchr(bhost, ':') ? "%s[%s]:%u" : "%s%s:%u", i ? "," : "", bhost, p);
        if (i == 0) {
            snprintf(host, sizeof host, "%s", bhost);
            bound_port = p;
        }
    }
    char hostname[256] = "localhost";
    if (gethostname(hostname, sizeof hostname) != 0)
        snprintf(hostname, sizeof hostname, "localhost");
    hostname[sizeof hostname - 1] = '\0';
    if (sd_advertise_address(o->advertise_address, host, bound_port, hostname, h->advertise,
                             sizeof h->advertise, e) != 0) {
        http_stop(h);
        return NULL;
    }
    return h;
}

const char *http_bound_address(const struct http_server *h)
{
    return h->bound;
}

const char *http_advertise_address(const struct http_server *h)
{
    return h->advertise;
}

void http_stop(struct http_server *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nd; i++)
        MHD_stop_daemon(h->d[i]);
    tlsserver_free(h->tls);
    pthread_mutex_destroy(&h->mu);
    free(h->requests);
    free(h->telemetry_path);
    free(h);
}
