/* check_common_http.c: the shared HTTP client (collectors/common/http.c) against an in-process
 * loopback server.
 *
 * A thread plays the server: it accepts, reads one whole request (headers and Content-Length
 * body), keeps every byte it received, and answers as the test asked: a status with a body, a
 * body larger than the client's cap, or nothing at all until the test ends (a hung broker). So
 * the tests see what a collector sees: the reason each failure maps to, how fast a deadline ends
 * a hung request, and exactly what went over the wire, where a secret must never be. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/http.h"
#include "deadline.h"
#include "alloc.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"

enum mode { ANSWER, HUGE, HANG };

struct server {
    int lfd, port;
    int stop[2]; /* the test writes a byte to stop[1] to end a hang */
    pthread_t th;
    enum mode mode;
    const char *status_line; /* "200 OK" */
    const char *body;
    size_t requests; /* how many to serve before the thread ends */
    char got[16384];
    size_t ngot;
};

/* Reads one request into s->got: headers, then as many body bytes as Content-Length says. */
static void read_request(struct server *s, int fd)
{
    size_t start = s->ngot, body_len = 0;
    char *end = NULL;
    while (s->ngot < sizeof s->got - 1) {
        ssize_t r = recv(fd, s->got + s->ngot, sizeof s->got - 1 - s->ngot, 0);
        if (r <= 0)
            return;
        s->ngot += (size_t)r;
        s->got[s->ngot] = '\0';
        if (!end && (end = strstr(s->got + start, "\r\n\r\n"))) {
            const char *cl = strstr(s->got + start, "Content-Length: ");
            body_len = cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0;
        }
        if (end && s->ngot - (size_t)(end + 4 - s->got) >= body_len)
            return;
    }
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    for (size_t i = 0; i < s->requests; i++) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        read_request(s, fd);
        if (s->mode == HANG) {
            struct pollfd p = {.fd = s->stop[0], .events = POLLIN};
            poll(&p, 1, 10000);
        } else if (s->mode == HUGE) {
            const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Content-Length: 200000\r\nConnection: close\r\n\r\n";
            send_all(fd, head, strlen(head));
            char chunk[1000];
            memset(chunk, 'x', sizeof chunk);
            for (int k = 0; k < 200; k++)
                send_all(fd, chunk, sizeof chunk);
        } else {
            char *resp = xasprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                                   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                   s->status_line, strlen(s->body), s->body);
            send_all(fd, resp, strlen(resp));
            free(resp);
        }
        close(fd);
    }
    return NULL;
}

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    socklen_t alen = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void server_start(struct server *s, enum mode mode, const char *status_line,
                         const char *body)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->status_line = status_line;
    s->body = body;
    s->requests = 1;
    s->lfd = listen_loopback(&s->port);
    ck_assert_int_eq(pipe(s->stop), 0);
    ck_assert_int_eq(pthread_create(&s->th, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
    char b = 1;
    ck_assert_int_eq(write(s->stop[1], &b, 1), 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
    close(s->stop[0]);
    close(s->stop[1]);
}

static char *url_of(const struct server *s, const char *path)
{
    return xasprintf("http://127.0.0.1:%d%s", s->port, path);
}

/* One request with the defaults of these tests; returns http_do's result. */
static int do_get(struct http_client *c, const char *url, double seconds,
                  struct http_response *resp, struct err *e)
{
    struct http_request req = {.url = url};
    struct deadline dl = deadline_in(seconds);
    err_clear(e);
    return http_do(c, &req, &dl, resp, e);
}

START_TEST(test_200)
{
    struct server s;
    server_start(&s, ANSWER, "200 OK", "{\"queues\": []}");
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/api/queues?page=1");
    struct http_response r;
    struct err e;
    ck_assert_int_eq(do_get(c, url, 5, &r, &e), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"queues\": []}");
    ck_assert_uint_eq(r.len, 14);
    ck_assert_str_eq(r.content_type, "application/json");
    ck_assert_msg(strncmp(s.got, "GET /api/queues?page=1 HTTP/1.1\r\n", 33) == 0, "%s", s.got);
    http_response_free(&r);
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_500_body_excerpt)
{
    struct server s;
    server_start(&s, ANSWER, "500 Internal Server Error", "{\"error\":\"disk full\"}");
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/api/overview?token=abc");
    struct http_response r;
    struct err e;
    ck_assert_int_eq(do_get(c, url, 5, &r, &e), -1);
    ck_assert_int_eq(e.code, ERR_QUERY);
    /* the path, never the query string, where a token could sit */
    ck_assert_str_eq(e.msg, "GET /api/overview: HTTP 500: {\"error\":\"disk full\"}");
    ck_assert_ptr_null(r.body);
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_any_status)
{
    struct server s;
    server_start(&s, ANSWER, "404 Not Found", "{}");
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/x");
    struct http_request req = {.url = url, .accept_any_status = 1};
    struct deadline dl = deadline_in(5);
    struct http_response r;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(http_do(c, &req, &dl, &r, &e), 0);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(r.body, "{}");
    http_response_free(&r);
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_401_auth)
{
    struct server s;
    server_start(&s, ANSWER, "401 Unauthorized", "{\"error\":\"bad password\"}");
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/api/queues");
    struct http_request req = {.url = url,
                               .auth = HTTP_AUTH_BASIC,
                               .username = "monitor",
                               .password = "hunter2-basic-secret"};
    struct deadline dl = deadline_in(5);
    struct http_response r;
    struct err e;
    err_clear(&e);
    check_failed(http_do(c, &req, &dl, &r, &e), &e, ERR_AUTH,
                 "GET /api/queues: HTTP 401: the server refused the credentials");
    /* basic auth went over the wire (base64 of monitor:hunter2-basic-secret) */
    ck_assert_ptr_nonnull(
        strstr(s.got, "Authorization: Basic bW9uaXRvcjpodW50ZXIyLWJhc2ljLXNlY3JldA=="));
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_403_bearer_auth)
{
    struct server s;
    server_start(&s, ANSWER, "403 Forbidden", "{}");
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/v1/projects/p/subscriptions");
    struct http_request req = {
        .url = url, .auth = HTTP_AUTH_BEARER, .password = "ya29.bearer-token-secret"};
    struct deadline dl = deadline_in(5);
    struct http_response r;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(http_do(c, &req, &dl, &r, &e), -1);
    ck_assert_int_eq(e.code, ERR_AUTH);
    ck_assert_ptr_null(strstr(e.msg, "bearer-token-secret"));
    ck_assert_ptr_nonnull(strstr(s.got, "Authorization: Bearer ya29.bearer-token-secret\r\n"));
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_over_cap_limit)
{
    struct server s;
    server_start(&s, HUGE, NULL, NULL);
    struct http_config cfg = {.max_response_bytes = 4096};
    struct http_client *c = http_client_new("t", &cfg);
    char *url = url_of(&s, "/big");
    struct http_response r;
    struct err e;
    check_failed(do_get(c, url, 5, &r, &e), &e, ERR_LIMIT,
                 "GET /big: response larger than 4096 bytes (raise max_response_bytes)");
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_hang_timeout)
{
    struct server s;
    server_start(&s, HANG, NULL, NULL);
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/slow");
    struct http_response r;
    struct err e;
    int64_t t0 = deadline_now_ms();
    ck_assert_int_eq(do_get(c, url, 0.4, &r, &e), -1);
    int64_t took = deadline_now_ms() - t0;
    ck_assert_int_eq(e.code, ERR_TIMEOUT);
    ck_assert_str_eq(e.msg, "GET /slow: no complete answer within 0.4s");
    ck_assert_msg(took >= 350 && took < 1000, "a 0.4 s deadline took %lld ms", (long long)took);
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_deadline_already_passed)
{
    struct http_client *c = http_client_new("t", NULL);
    struct http_request req = {.url = "http://127.0.0.1:1/x"};
    struct deadline dl = deadline_in(0);
    struct http_response r;
    struct err e;
    err_clear(&e);
    check_failed(http_do(c, &req, &dl, &r, &e), &e, ERR_TIMEOUT,
                 "GET /x: no time left before the deadline");
    http_client_free(c);
}
END_TEST

START_TEST(test_refused_connect)
{
    int port;
    int fd = listen_loopback(&port);
    close(fd); /* nothing listens there now */
    struct http_client *c = http_client_new("t", NULL);
    char *url = xasprintf("http://127.0.0.1:%d/api", port);
    struct http_response r;
    struct err e;
    ck_assert_int_eq(do_get(c, url, 5, &r, &e), -1);
    ck_assert_int_eq(e.code, ERR_CONNECT);
    ck_assert_msg(strncmp(e.msg, "GET /api: ", 10) == 0, "%s", e.msg);
    free(url);
    http_client_free(c);
}
END_TEST

START_TEST(test_sigv4)
{
    struct server s;
    server_start(&s, ANSWER, "200 OK", "{\"QueueUrls\":[]}");
    s.requests = 1;
    struct http_client *c = http_client_new("t", NULL);
    char *url = url_of(&s, "/");
    const char *secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYSECRETKEY";
    const char *headers[] = {"Content-Type: application/x-amz-json-1.0",
                             "X-Amz-Target: AmazonSQS.ListQueues", NULL};
    const char *body = "{\"MaxResults\":1000}";
    struct http_request req = {.method = "POST",
                               .url = url,
                               .headers = headers,
                               .body = body,
                               .body_len = strlen(body),
                               .auth = HTTP_AUTH_SIGV4,
                               .username = "AKIDEXAMPLE",
                               .password = secret,
                               .sigv4 = "aws:amz:eu-west-1:sqs"};
    struct deadline dl = deadline_in(5);
    struct http_response r;
    struct err e;
    err_clear(&e);
    ck_assert_int_eq(http_do(c, &req, &dl, &r, &e), 0);
    http_response_free(&r);

    char date[16];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%d", &tm);
    char *scope = xasprintf("Authorization: AWS4-HMAC-SHA256 "
                            "Credential=AKIDEXAMPLE/%s/eu-west-1/sqs/aws4_request, ",
                            date);
    ck_assert_msg(strstr(s.got, scope), "no SigV4 scope %s in:\n%s", scope, s.got);
    ck_assert_ptr_nonnull(
        strstr(s.got, "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature="));
    ck_assert_ptr_nonnull(strstr(s.got, "\r\n\r\n{\"MaxResults\":1000}"));
    /* the secret signs; it is never sent, not even in part */
    ck_assert_ptr_null(strstr(s.got, secret));
    ck_assert_ptr_null(strstr(s.got, "SECRETKEY"));
    free(scope);
    free(url);
    http_client_free(c);
    server_stop(&s);
}
END_TEST

START_TEST(test_sigv4_needs_region_and_service)
{
    struct http_client *c = http_client_new("t", NULL);
    struct http_request req = {.url = "http://127.0.0.1:1/",
                               .auth = HTTP_AUTH_SIGV4,
                               .username = "AKID",
                               .password = "secret",
                               .sigv4 = "aws:amz"};
    struct deadline dl = deadline_in(5);
    struct http_response r;
    struct err e;
    err_clear(&e);
    check_failed(http_do(c, &req, &dl, &r, &e), &e, ERR_INTERNAL,
                 "SigV4 needs \"aws:amz:REGION:SERVICE\"");
    http_client_free(c);
}
END_TEST

START_TEST(test_escape)
{
    check_str_free(http_escape("a b/c~d%é"), "a%20b%2Fc~d%25%C3%A9");
}
END_TEST

/* The one base-URL reader of the HTTP kinds: checked, trailing slashes dropped, the default when
 * absent, and the key marked known. */
START_TEST(test_base_url)
{
    static const char y[] = "a: http://h:15672//\n"
                            "b: \"\"\n"
                            "c: ftp://h\n"
                            "d: https://h/api/\n";
    struct err e;
    err_clear(&e);
    struct cfg_doc *d = cfg_parse_string("b.yml", y, strlen(y), &e);
    ck_assert_ptr_nonnull(d);
    struct cfg_node *m = cfg_doc_root(d);
    char *u = NULL;
    ck_assert_int_eq(http_base_url(m, "a", NULL, &u, &e), 0);
    check_str_free(u, "http://h:15672");
    ck_assert_int_eq(http_base_url(m, "d", NULL, &u, &e), 0);
    check_str_free(u, "https://h/api");
    ck_assert_int_eq(http_base_url(m, "absent", NULL, &u, &e), 0);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(http_base_url(m, "absent", "https://default.example", &u, &e), 0);
    check_str_free(u, "https://default.example");
    ck_assert_int_eq(http_base_url(m, "b", NULL, &u, &e), -1);
    ck_assert_ptr_null(u);
    ck_assert_str_eq(e.msg, "b.yml:2:4: b: want a non-empty string");
    ck_assert_int_eq(http_base_url(m, "c", NULL, &u, &e), -1);
    ck_assert_ptr_null(u);
    ck_assert_str_eq(e.msg, "b.yml:3:4: c: want an http:// or https:// URL");
    ck_assert_int_eq(cfg_finish(m, "test", &e), 0); /* every key was marked known */
    cfg_doc_free(d);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_200, 0},
        {test_500_body_excerpt, 0},
        {test_any_status, 0},
        {test_401_auth, 0},
        {test_403_bearer_auth, 0},
        {test_over_cap_limit, 0},
        {test_hang_timeout, 0},
        {test_deadline_already_passed, 0},
        {test_refused_connect, 0},
        {test_sigv4, 0},
        {test_sigv4_needs_region_and_service, 0},
        {test_escape, 0},
        {test_base_url, 0},
    };
    return check_run_tests("http", tests, CHECK_ROWS(tests), 30);
}
