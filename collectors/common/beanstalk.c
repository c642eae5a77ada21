/* beanstalk.c: beanstalkd's text protocol over one non-blocking TCP socket, pipelined and bound
 * by the scrape deadline (see beanstalk.h for the rules and why). */
#include "beanstalk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"

/* beanstalkd's own limit on a reply line is far below this; a longer line is not beanstalkd. */
#define MAX_LINE 1024

struct beanstalk_conn {
    int fd;
    char label[300]; /* beanstalkd "<source>" <address> */
    unsigned long long round_trips;
};

int beanstalk_address_parse(const char *s, char **host, int *port, struct err *e)
{
    *host = NULL;
    *port = BEANSTALK_DEFAULT_PORT;
    const char *h = s, *colon;
    size_t hlen;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close || close == s + 1)
            return err_set(e, ERR_CONFIG, "want \"host:port\" or \"[v6]:port\", got \"%s\"", s);
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] && !colon)
            return err_set(e, ERR_CONFIG, "want \"[v6]:port\", got \"%s\"", s);
    } else {
        colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return err_set(e, ERR_CONFIG,
                           "want \"host:port\" (an IPv6 address in brackets), got \"%s\"", s);
        hlen = colon ? (size_t)(colon - s) : strlen(s);
    }
    if (hlen == 0)
        return err_set(e, ERR_CONFIG, "want \"host:port\", got \"%s\"", s);
    if (colon) {
        char *end;
        errno = 0;
        long p = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || p < 1 || p > 65535)
            return err_set(e, ERR_CONFIG, "want a port from 1 to 65535, got \"%s\"", colon + 1);
        *port = (int)p;
    }
    *host = xstrndup(h, hlen);
    return 0;
}

static int wait_fd(struct beanstalk_conn *c, short events, const struct deadline *dl,
                   const char *what, struct err *e)
{
    int n = deadline_wait_fd(c->fd, events, dl, NULL);
    if (n == 0)
        return err_set(e, ERR_TIMEOUT, "%s: timed out %s", c->label, what);
    if (n < 0)
        return err_set(e, ERR_CONNECT, "%s: poll: %s", c->label, strerror(errno));
    return 0;
}

struct beanstalk_conn *beanstalk_conn_open(const char *source, const char *address,
                                           const struct deadline *dl, struct err *e)
{
    char *host = NULL;
    int port;
    if (beanstalk_address_parse(address, &host, &port, e)) {
        err_prefix(e, "beanstalkd \"%s\" address", source);
        return NULL;
    }
    struct beanstalk_conn *c = xcalloc(1, sizeof *c);
    c->fd = -1;
    snprintf(c->label, sizeof c->label, "beanstalkd \"%s\" %s", source, address);

    char portstr[8];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    free(host);
    if (gai) {
        err_set(e, ERR_CONNECT, "%s: %s", c->label, gai_strerror(gai));
        goto fail;
    }
    int rc = -1;
    for (struct addrinfo *ai = res; ai && rc; ai = ai->ai_next) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (c->fd < 0) {
            err_set(e, ERR_CONNECT, "%s: socket: %s", c->label, strerror(errno));
            continue;
        }
        int fl = fcntl(c->fd, F_GETFL);
        if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            err_set(e, ERR_INTERNAL, "%s: fcntl: %s", c->label, strerror(errno));
            continue;
        }
        if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            rc = 0;
            break;
        }
        if (errno != EINPROGRESS) {
            err_set(e, ERR_CONNECT, "%s: connect: %s", c->label, strerror(errno));
            continue;
        }
        if (wait_fd(c, POLLOUT, dl, "connecting", e))
            break; /* the deadline is gone: no other address can be tried either */
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
            soerr = errno;
        if (soerr) {
            err_set(e, ERR_CONNECT, "%s: connect: %s", c->label, strerror(soerr));
            continue;
        }
        rc = 0;
    }
    freeaddrinfo(res);
    if (rc == 0)
        return c;
fail:
    beanstalk_conn_close(c);
    return NULL;
}

void beanstalk_conn_close(struct beanstalk_conn *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

unsigned long long beanstalk_conn_round_trips(const struct beanstalk_conn *c)
{
    return c ? c->round_trips : 0;
}

/* The words beanstalkd answers when it did not do what was asked: the pipeline's failure. */
static int is_error_word(const char *w)
{
    static const char *const words[] = {"OUT_OF_MEMORY",   "INTERNAL_ERROR", "BAD_FORMAT",
                                        "UNKNOWN_COMMAND", "EXPECTED_CRLF",  "JOB_TOO_BIG",
                                        "DRAINING"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(w, words[i]) == 0)
            return 1;
    return 0;
}

int beanstalk_frame(char *buf, size_t len, size_t max_line, size_t *used, struct beanstalk_reply *r,
                    struct err *e)
{
    /* Nothing in buf is written until the whole reply is there: the reader calls this again on
     * the same bytes once more have arrived, so a reply split across reads (a large body, a long
     * list-tubes, a network that cuts a header from its body) must find them as they came. */
    memset(r, 0, sizeof *r);
    char *nl = memchr(buf, '\n', len < max_line + 2 ? len : max_line + 2);
    if (!nl) {
        if (len >= max_line + 2)
            return err_set(e, ERR_PROTOCOL, "a reply line longer than %zu bytes", max_line);
        return 0;
    }
    if (nl == buf || nl[-1] != '\r')
        return err_set(e, ERR_PROTOCOL, "a reply line that does not end in CRLF");
    size_t line_len = (size_t)(nl - 1 - buf);
    if (memchr(buf, '\0', line_len))
        return err_set(e, ERR_PROTOCOL, "a reply line with a NUL byte");
    for (size_t i = 0; i < line_len; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
            return err_set(e, ERR_PROTOCOL, "a reply line with a byte that is not printable ASCII");
    size_t wlen = 0;
    while (wlen < line_len && buf[wlen] != ' ')
        wlen++;
    if (wlen == 0 || wlen >= sizeof r->status)
        return err_set(e, ERR_PROTOCOL, "a reply that does not start with a status word");
    for (size_t i = 0; i < wlen; i++)
        if (!((buf[i] >= 'A' && buf[i] <= 'Z') || buf[i] == '_'))
            return err_set(e, ERR_PROTOCOL, "a reply that does not start with a status word");
    memcpy(r->status, buf, wlen);
    r->status[wlen] = '\0';
    size_t head = line_len + 2;
    int has_body = strcmp(r->status, "OK") == 0 || strcmp(r->status, "FOUND") == 0;
    unsigned long long n = 0;
    if (has_body) {
        /* The body's size is the last word: "OK <bytes>", "FOUND <id> <bytes>". */
        size_t last = line_len; /* where the last word starts */
        while (last > 0 && buf[last - 1] != ' ')
            last--;
        if (last == 0 || last == line_len)
            return err_set(e, ERR_PROTOCOL, "%s without a body size", r->status);
        for (size_t i = last; i < line_len; i++) {
            unsigned d = (unsigned)(buf[i] - '0');
            if (d > 9 || n > (ULLONG_MAX - d) / 10)
                return err_set(e, ERR_PROTOCOL, "%s without a body size", r->status);
            n = n * 10 + d;
        }
        if (strcmp(r->status, "FOUND") == 0 && wlen == last - 1)
            return err_set(e, ERR_PROTOCOL, "FOUND without a job id");
        if (n > len) /* also keeps head + n + 2 from overflowing */
            return 0;
        if (len - head < n + 2)
            return 0;
        const char *body = buf + head;
        if (body[n] != '\r' || body[n + 1] != '\n')
            return err_set(e, ERR_PROTOCOL, "a body that does not end in CRLF after %llu bytes", n);
    }
    /* Whole: the line's and the body's "\r\n" become NULs. */
    buf[line_len] = '\0';
    r->line = buf;
    if (!has_body) {
        *used = head;
        return 1;
    }
    buf[head + n] = '\0';
    r->body = buf + head;
    r->body_len = (size_t)n;
    *used = head + (size_t)n + 2;
    return 1;
}

static int send_all(struct beanstalk_conn *c, const char *data, size_t len,
                    const struct deadline *dl, struct err *e)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(c->fd, data + off, len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(c, POLLOUT, dl, "sending", e))
                return -1;
            continue;
        }
        return err_set(e, ERR_CONNECT, "%s: send: %s", c->label, strerror(errno));
    }
    return 0;
}

int beanstalk_exec(struct beanstalk_conn *c, const char *const *cmds, size_t n,
                   const struct deadline *dl, size_t max_bytes, beanstalk_reply_fn fn, void *ctx,
                   struct err *e)
{
    if (!max_bytes)
        max_bytes = BEANSTALK_DEFAULT_MAX_RESPONSE_BYTES;
    struct buf out, in;
    buf_init(&out);
    buf_init(&in);
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        if (strpbrk(cmds[i], "\r\n")) {
            err_set(e, ERR_INTERNAL, "%s: a command with a line break", c->label);
            goto out;
        }
        buf_puts(&out, cmds[i]);
        buf_puts(&out, "\r\n");
    }
    if (n == 0) {
        rc = 0;
        goto out;
    }
    c->round_trips++;
    if (send_all(c, out.data, out.len, dl, e))
        goto out;
    size_t done = 0, start = 0, total = 0;
    char chunk[65536];
    while (done < n) {
        /* Hand over every complete reply already read. */
        for (;;) {
            struct beanstalk_reply r;
            size_t used = 0;
            int f = in.len > start
                        ? beanstalk_frame(in.data + start, in.len - start, MAX_LINE, &used, &r, e)
                        : 0;
            if (f < 0) {
                err_prefix(e, "%s: reply %zu", c->label, done + 1);
                goto out;
            }
            if (f == 0)
                break;
            if (is_error_word(r.status)) {
                err_set(e, ERR_PROTOCOL, "%s: %s answered %s", c->label, cmds[done], r.status);
                goto out;
            }
            if (fn(ctx, done, &r, e))
                goto out;
            start += used;
            if (++done == n)
                break;
        }
        if (done == n)
            break;
        if (start > 0) { /* drop what was handed over, so the buffer holds one reply at most */
            memmove(in.data, in.data + start, in.len - start);
            in.len -= start;
            in.data[in.len] = '\0';
            start = 0;
        }
        ssize_t got = recv(c->fd, chunk, sizeof chunk, 0);
        if (got > 0) {
            total += (size_t)got;
            if (total > max_bytes) {
                err_set(e, ERR_LIMIT, "%s: replies over max_response_bytes (%zu bytes)", c->label,
                        max_bytes);
                goto out;
            }
            buf_append(&in, chunk, (size_t)got);
            continue;
        }
        if (got == 0) {
            err_set(e, ERR_CONNECT, "%s: connection closed after %zu of %zu replies", c->label,
                    done, n);
            goto out;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_fd(c, POLLIN, dl, "waiting for beanstalkd", e))
                goto out;
            continue;
        }
        err_set(e, ERR_CONNECT, "%s: recv: %s", c->label, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (rc && c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    buf_free(&out);
    buf_free(&in);
    return rc;
}
