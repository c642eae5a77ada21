/* redis.c: the deadline-honouring pipelined Redis client of redis.h.
 *
 * hiredis connects (redisConnectWithTimeout, with what is left of the deadline as the timeout),
 * formats commands (redisFormatCommandArgv) and parses replies (its redisReader); everything in
 * between is done here on a non-blocking socket: one poll() loop writes the whole pipeline and
 * reads replies as they come, each wait bounded by the deadline, the bytes read bounded by a cap.
 * Writing and reading in the same loop means a pipeline larger than the socket buffers cannot
 * deadlock against a server that is itself blocked on sending us replies. */
#include "common/redis.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* What each command sent in front of a pipeline after a (re)connect was. */
enum prelude_kind { PRE_AUTH, PRE_SELECT };

struct redis_conn {
    redisContext *ctx; /* NULL after a failed reconnect */
    struct redis_address addr;
    char *label;    /* `redis "<source>" <address>` */
    char *password; /* kept only to redact it from AUTH error texts; wiped on close */
    long db;
    struct buf prelude; /* formatted AUTH / SELECT, wiped on close */
    enum prelude_kind prelude_kinds[2];
    size_t nprelude;
    int prelude_pending; /* the prelude is still to be sent on this socket */
    int used;            /* a pipeline has succeeded on this socket */
    int broken;          /* an error happened: the caller must close */
    struct redis_stats stats;
};

struct redis_pipe {
    struct buf cmds;   /* every command, formatted, back to back */
    char (*names)[24]; /* each command's name, for messages */
    redisReply **replies;
    size_t n, cap;
};

/* memset() of memory that is freed right after may be optimised away; volatile stores are not. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *q = p;
    while (n--)
        *q++ = 0;
}

/* ---- addresses ---- */

static int parse_port(const char *s, int *out)
{
    if (!*s || strlen(s) > 5)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *out = (int)v;
    return 0;
}

int redis_address_parse(const char *s, struct redis_address *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->port = REDIS_DEFAULT_PORT;
    /* A URL may carry a password: say what is wrong without quoting it. */
    if (strstr(s, "://"))
        return err_set(e, ERR_CONFIG,
                       "want \"host:port\", \"[ipv6]:port\" or \"unix:/path\", not a URL "
                       "(credentials go in username and password_file)");
    if (strncmp(s, "unix:", 5) == 0) {
        if (!s[5])
            return err_set(e, ERR_CONFIG, "want a socket path after \"unix:\", got \"%s\"", s);
        out->is_unix = 1;
        out->path = xstrdup(s + 5);
        return 0;
    }
    const char *port = NULL;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close == s + 1 || (close[1] && close[1] != ':'))
            return err_set(e, ERR_CONFIG, "want \"[ipv6]:port\", got \"%s\"", s);
        out->host = xstrndup(s + 1, (size_t)(close - s - 1));
        if (close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return err_set(e, ERR_CONFIG,
                           "an IPv6 address needs brackets, as in \"[::1]:6379\", got \"%s\"", s);
        if (!*s || colon == s)
            return err_set(e, ERR_CONFIG, "want \"host:port\", got \"%s\"", s);
        out->host = colon ? xstrndup(s, (size_t)(colon - s)) : xstrdup(s);
        if (colon)
            port = colon + 1;
    }
    if (port && parse_port(port, &out->port)) {
        redis_address_free(out);
        return err_set(e, ERR_CONFIG, "want a port from 1 to 65535 in \"%s\"", s);
    }
    return 0;
}

void redis_address_free(struct redis_address *a)
{
    if (!a)
        return;
    free(a->host);
    free(a->path);
    a->host = NULL;
    a->path = NULL;
}

/* ---- replies ---- */

int redis_reply_is_error(const redisReply *r, const char *prefix)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return 0;
    if (!prefix)
        return 1;
    size_t n = strlen(prefix);
    return r->len >= n && strncmp(r->str, prefix, n) == 0;
}

const char *redis_reply_type_name(const redisReply *r)
{
    if (!r)
        return "nothing";
    switch (r->type) {
    case REDIS_REPLY_STRING:
        return "string";
    case REDIS_REPLY_ARRAY:
        return "array";
    case REDIS_REPLY_INTEGER:
        return "integer";
    case REDIS_REPLY_NIL:
        return "nil";
    case REDIS_REPLY_STATUS:
        return "status";
    case REDIS_REPLY_ERROR:
        return "error";
    default:
        return "unknown";
    }
}

/* ---- pipelines ---- */

struct redis_pipe *redis_pipe_new(void)
{
    struct redis_pipe *p = xcalloc(1, sizeof *p);
    buf_init(&p->cmds);
    return p;
}

static void pipe_free_replies(struct redis_pipe *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->replies[i])
            freeReplyObject(p->replies[i]);
        p->replies[i] = NULL;
    }
}

void redis_pipe_reset(struct redis_pipe *p)
{
    pipe_free_replies(p);
    buf_reset(&p->cmds);
    p->n = 0;
}

void redis_pipe_free(struct redis_pipe *p)
{
    if (!p)
        return;
    pipe_free_replies(p);
    buf_free(&p->cmds);
    free(p->names);
    free(p->replies);
    free(p);
}

size_t redis_pipe_len(const struct redis_pipe *p)
{
    return p->n;
}

size_t redis_pipe_add(struct redis_pipe *p, int argc, const char *const *argv,
                      const size_t *argvlen)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, (const char **)argv, argvlen);
    if (len < 0 || !cmd) {
        /* hiredis fails here only when it cannot allocate. */
        log_kv(LOG_ERROR, "out of memory formatting a Redis command", NULL);
        abort();
    }
    buf_append(&p->cmds, cmd, (size_t)len);
    redisFreeCommand(cmd);
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->names = xrealloc(p->names, p->cap * sizeof *p->names);
        p->replies = xrealloc(p->replies, p->cap * sizeof *p->replies);
    }
    size_t nlen = argc > 0 ? (argvlen ? argvlen[0] : strlen(argv[0])) : 0;
    if (nlen >= sizeof p->names[0])
        nlen = sizeof p->names[0] - 1;
    if (nlen)
        memcpy(p->names[p->n], argv[0], nlen);
    p->names[p->n][nlen] = '\0';
    p->replies[p->n] = NULL;
    return p->n++;
}

size_t redis_pipe_addv(struct redis_pipe *p, const char *arg0, ...)
{
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a; a = va_arg(ap, const char *)) {
        if (argc == (int)(sizeof argv / sizeof argv[0])) {
            /* A programming error: no collector command has this many words. */
            log_kv(LOG_ERROR, "redis_pipe_addv: too many arguments", "command", arg0, NULL);
            abort();
        }
        argv[argc++] = a;
    }
    va_end(ap);
    return redis_pipe_add(p, argc, argv, NULL);
}

const redisReply *redis_pipe_reply(const struct redis_pipe *p, size_t i)
{
    return i < p->n ? p->replies[i] : NULL;
}

/* ---- connections ---- */

static void prelude_add(struct redis_conn *c, enum prelude_kind kind, int argc, const char **argv)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    if (len < 0 || !cmd) {
        log_kv(LOG_ERROR, "out of memory formatting a Redis command", NULL);
        abort();
    }
    buf_append(&c->prelude, cmd, (size_t)len);
    wipe(cmd, (size_t)len);
    redisFreeCommand(cmd);
    c->prelude_kinds[c->nprelude++] = kind;
}

static int conn_connect(struct redis_conn *c, const struct deadline *dl, struct err *e)
{
    int64_t t0 = deadline_now_ms();
    int64_t left = deadline_remaining_ms(dl);
    if (left <= 0)
        return err_set(e, ERR_TIMEOUT, "%s: timed out after 0 ms waiting for Redis (connect)",
                       c->label);
    struct timeval tv = {(time_t)(left / 1000), (suseconds_t)((left % 1000) * 1000)};
    redisContext *ctx = c->addr.is_unix ? redisConnectUnixWithTimeout(c->addr.path, tv)
                                        : redisConnectWithTimeout(c->addr.host, c->addr.port, tv);
    if (!ctx)
        return err_set(e, ERR_INTERNAL, "%s: cannot allocate a connection", c->label);
    if (ctx->err) {
        /* hiredis reports its connect timeout as the text of ETIMEDOUT. */
        if (deadline_expired(dl) || strstr(ctx->errstr, "timed out"))
            err_set(e, ERR_TIMEOUT, "%s: timed out after %lld ms waiting for Redis (connect)",
                    c->label, (long long)(deadline_now_ms() - t0));
        else
            err_set(e, ERR_CONNECT, "%s: cannot connect: %s", c->label, ctx->errstr);
        redisFree(ctx);
        return -1;
    }
    /* Non-blocking from here on: every wait is a poll() bounded by the deadline. */
    int fl = fcntl(ctx->fd, F_GETFL);
    if (fl < 0 || fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        err_set(e, ERR_CONNECT, "%s: cannot make the socket non-blocking: %s", c->label,
                strerror(errno));
        redisFree(ctx);
        return -1;
    }
    c->ctx = ctx;
    c->prelude_pending = c->nprelude > 0;
    c->used = 0;
    return 0;
}

struct redis_conn *redis_conn_open(const char *source, const char *address, const char *username,
                                   const char *password, long db, const struct deadline *dl,
                                   struct err *e)
{
    struct redis_conn *c = xcalloc(1, sizeof *c);
    buf_init(&c->prelude);
    c->label = xasprintf("redis \"%s\" %s", source, address);
    if (redis_address_parse(address, &c->addr, e)) {
        err_prefix(e, "%s", c->label);
        redis_conn_close(c);
        return NULL;
    }
    c->db = db;
    if (password) {
        c->password = xstrdup(password);
        const char *argv[3] = {"AUTH", username, password};
        if (username)
            prelude_add(c, PRE_AUTH, 3, argv);
        else {
            argv[1] = password;
            prelude_add(c, PRE_AUTH, 2, argv);
        }
    }
    if (db != 0) {
        char dbs[32];
        snprintf(dbs, sizeof dbs, "%ld", db);
        const char *argv[2] = {"SELECT", dbs};
        prelude_add(c, PRE_SELECT, 2, argv);
    }
    if (conn_connect(c, dl, e)) {
        redis_conn_close(c);
        return NULL;
    }
    return c;
}

void redis_conn_close(struct redis_conn *c)
{
    if (!c)
        return;
    if (c->ctx)
        redisFree(c->ctx);
    if (c->password) {
        wipe(c->password, strlen(c->password));
        free(c->password);
    }
    if (c->prelude.data)
        wipe(c->prelude.data, c->prelude.cap);
    buf_free(&c->prelude);
    redis_address_free(&c->addr);
    free(c->label);
    free(c);
}

const struct redis_stats *redis_conn_stats(const struct redis_conn *c)
{
    return &c->stats;
}

const char *redis_conn_label(const struct redis_conn *c)
{
    return c->label;
}

/* Copies Redis's error text into out with every occurrence of the password replaced: Redis does
 * not echo passwords, but a proxy or a Redis-compatible server answering "unknown command 'AUTH'
 * with args beginning with: ..." would. */
static void redact(const struct redis_conn *c, const char *text, size_t len, char *out,
                   size_t outsz)
{
    struct buf b;
    buf_init(&b);
    size_t plen = c->password ? strlen(c->password) : 0;
    for (size_t i = 0; i < len;) {
        if (plen && len - i >= plen && memcmp(text + i, c->password, plen) == 0) {
            buf_puts(&b, "***");
            i += plen;
        } else {
            buf_putc(&b, text[i] ? text[i] : ' ');
            i++;
        }
    }
    snprintf(out, outsz, "%s", b.data ? b.data : "");
    buf_free(&b);
}

static int auth_error_prefix(const redisReply *r)
{
    return redis_reply_is_error(r, "NOAUTH") || redis_reply_is_error(r, "WRONGPASS") ||
           redis_reply_is_error(r, "NOPERM");
}

/* The message for an error reply about credentials or permissions (ERR_AUTH). */
static int auth_error(struct redis_conn *c, const char *cmd, const redisReply *r, struct err *e)
{
    char text[300];
    redact(c, r->str, r->len, text, sizeof text);
    if (redis_reply_is_error(r, "NOAUTH") && !c->password)
        return err_set(e, ERR_AUTH, "%s: authentication required and no password configured: %s",
                       c->label, text);
    if (redis_reply_is_error(r, "NOPERM"))
        return err_set(e, ERR_AUTH, "%s: %s: permission denied: %s", c->label, cmd, text);
    return err_set(e, ERR_AUTH, "%s: authentication failed: %s", c->label, text);
}

/* Checks the reply to the i-th prelude command; frees it. */
static int prelude_check(struct redis_conn *c, size_t i, redisReply *r, struct err *e)
{
    int rc = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        if (c->prelude_kinds[i] == PRE_AUTH || auth_error_prefix(r)) {
            rc = auth_error(c, c->prelude_kinds[i] == PRE_AUTH ? "AUTH" : "SELECT", r, e);
        } else {
            char text[300];
            redact(c, r->str, r->len, text, sizeof text);
            rc = err_set(e, ERR_QUERY, "%s: SELECT %ld: %s", c->label, c->db, text);
        }
    }
    freeReplyObject(r);
    return rc;
}

static int io_error(struct redis_conn *c, const char *what, int errnum, struct err *e)
{
    return err_set(e, ERR_CONNECT, "%s: %s: %s", c->label, what, strerror(errnum));
}

/* One write+read cycle. *got_bytes tells the caller whether the server answered anything, which
 * decides whether a connection error may be a stale socket worth one reconnect. */
static int exec_once(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                     size_t max_bytes, int *got_bytes, struct err *e)
{
    int64_t t0 = deadline_now_ms();
    size_t npre = c->prelude_pending ? c->nprelude : 0;
    size_t total = npre + p->n;
    struct buf out;
    buf_init(&out);
    if (npre)
        buf_append(&out, c->prelude.data, c->prelude.len);
    buf_append(&out, p->cmds.data ? p->cmds.data : "", p->cmds.len);
    size_t written = 0, received = 0, nread = 0;
    int rc = -1;
    char chunk[16384];

    *got_bytes = 0;
    pipe_free_replies(p);
    c->stats.round_trips++;
    c->stats.commands += total;
    while (received < total) {
        int64_t left = deadline_remaining_ms(dl);
        if (left <= 0) {
            err_set(e, ERR_TIMEOUT, "%s: timed out after %lld ms waiting for Redis", c->label,
                    (long long)(deadline_now_ms() - t0));
            goto out;
        }
        struct pollfd pfd = {c->ctx->fd, POLLIN, 0};
        if (written < out.len)
            pfd.events |= POLLOUT;
        int n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            io_error(c, "poll", errno, e);
            goto out;
        }
        if (n == 0)
            continue; /* the deadline check above reports it */
        if (pfd.revents & POLLNVAL) {
            err_set(e, ERR_INTERNAL, "%s: poll: invalid socket", c->label);
            goto out;
        }
        if ((pfd.revents & POLLOUT) && written < out.len) {
            /* MSG_NOSIGNAL: a peer that closed must give EPIPE, not kill the exporter. */
            ssize_t w = send(c->ctx->fd, out.data + written, out.len - written, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                io_error(c, "write", errno, e);
                goto out;
            }
            if (w > 0) {
                written += (size_t)w;
                c->stats.bytes_written += (size_t)w;
            }
        }
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = recv(c->ctx->fd, chunk, sizeof chunk, 0);
        if (r == 0) {
            err_set(e, ERR_CONNECT, "%s: connection closed by the server", c->label);
            goto out;
        }
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                continue;
            io_error(c, "read", errno, e);
            goto out;
        }
        *got_bytes = 1;
        c->stats.bytes_read += (size_t)r;
        if ((size_t)r > max_bytes - nread) {
            err_set(e, ERR_LIMIT,
                    "%s: the replies to %zu commands exceeded %zu bytes (max_reply_bytes)",
                    c->label, p->n, max_bytes);
            goto out;
        }
        nread += (size_t)r;
        if (redisReaderFeed(c->ctx->reader, chunk, (size_t)r) != REDIS_OK) {
            err_set(e, ERR_INTERNAL, "%s: reply buffer: %s", c->label, c->ctx->reader->errstr);
            goto out;
        }
        while (received < total) {
            void *reply = NULL;
            if (redisReaderGetReply(c->ctx->reader, &reply) != REDIS_OK) {
                err_set(e, ERR_PROTOCOL, "%s: cannot parse the reply: %s", c->label,
                        c->ctx->reader->errstr);
                goto out;
            }
            if (!reply)
                break;
            if (received < npre) {
                if (prelude_check(c, received, reply, e))
                    goto out;
            } else {
                p->replies[received - npre] = reply;
            }
            received++;
        }
    }
    /* Replies we did not ask for would be taken for the answers to the next pipeline. */
    if (c->ctx->reader->len > c->ctx->reader->pos) {
        err_set(e, ERR_PROTOCOL, "%s: unexpected data after the last reply", c->label);
        goto out;
    }
    c->prelude_pending = 0;
    for (size_t i = 0; i < p->n; i++) {
        const redisReply *r = p->replies[i];
        if (auth_error_prefix(r)) {
            auth_error(c, p->names[i], r, e);
            goto out;
        }
    }
    rc = 0;
out:
    if (npre)
        wipe(out.data, out.len);
    buf_free(&out);
    return rc;
}

int redis_pipe_exec(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                    size_t max_bytes, struct err *e)
{
    if (!max_bytes)
        max_bytes = REDIS_DEFAULT_MAX_REPLY_BYTES;
    if (c->broken || !c->ctx)
        return err_set(e, ERR_CONNECT, "%s: connection unusable after an earlier error", c->label);
    if (p->n == 0 && !c->prelude_pending)
        return 0;
    for (int attempt = 0;; attempt++) {
        int got_bytes = 0;
        if (exec_once(c, p, dl, max_bytes, &got_bytes, e) == 0) {
            c->used = 1;
            return 0;
        }
        /* A socket that served the previous scrape and now reads EOF/reset before any byte was
         * probably closed while idle (server restart, `timeout`, a proxy): reconnect once. */
        if (attempt > 0 || !c->used || got_bytes || e->code != ERR_CONNECT ||
            deadline_expired(dl)) {
            pipe_free_replies(p);
            c->broken = 1;
            return -1;
        }
        log_kv(LOG_DEBUG, "redis connection went stale, reconnecting", "conn", c->label, "error",
               e->msg, NULL);
        redisFree(c->ctx);
        c->ctx = NULL;
        c->stats.reconnects++;
        if (conn_connect(c, dl, e)) {
            c->broken = 1;
            return -1;
        }
    }
}
