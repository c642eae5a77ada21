/* redis.c: the deadline-honouring pipelined Redis client of redis.h.
 *
 * hiredis connects (redisConnectWithTimeout, with what is left of the deadline as the timeout)
 * and parses replies (its redisReader); commands are formatted here, straight into the pipe's
 * buffer, and everything in between is done here on a non-blocking socket: one poll() loop writes
 * the whole pipeline and reads replies as they come, each wait bounded by the deadline, the bytes
 * read bounded by a cap. Writing and reading in the same loop means a pipeline larger than the
 * socket buffers cannot deadlock against a server that is itself blocked on sending us replies.
 * Each reply is handed to the caller's callback the moment the reader has parsed it, and freed
 * when the callback returns (the tree lives in redis_arena.c's arena), so a pipeline's memory
 * is its commands plus one reply tree. */
#include "common/redis.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/redis_arena.h"
#include "common/redis_tls.h"
#include "log.h"
#include "alloc.h"
#include "buf.h"

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
    struct redis_arena *arena;        /* where the reader builds reply trees */
    const struct tls_config *tls_cfg; /* NULL: plaintext; the caller's, outlives c */
    struct redis_tls *tls;            /* the session on ctx's socket, when TLS */
};

/* Distinct command names a pipe remembers for messages (a collector's pipelines use a handful). */
#define PIPE_NAMES 32

struct redis_pipe {
    char *cmds; /* every command in RESP, back to back; NULL once dropped */
    size_t len, cap;
    size_t n;               /* commands added */
    unsigned char *name_of; /* per command: its name in names[], or PIPE_NAMES: see cmds */
    size_t name_cap;
    char names[PIPE_NAMES][24];
    unsigned char name_len[PIPE_NAMES];
    unsigned nnames;
    int keep_cmds; /* a name did not fit in names[]: cmds are needed to tell it */
    int sent;      /* cmds were dropped after being sent and answered */
    size_t window; /* where the commands of the filler's current window begin in cmds */
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
    return xcalloc(1, sizeof(struct redis_pipe));
}

void redis_pipe_reset(struct redis_pipe *p)
{
    p->len = 0;
    p->window = 0;
    p->n = 0;
    p->nnames = 0;
    p->keep_cmds = 0;
    p->sent = 0;
}

void redis_pipe_free(struct redis_pipe *p)
{
    if (!p)
        return;
    free(p->cmds);
    free(p->name_of);
    free(p);
}

/* Once the last byte of the commands went out and the server has begun to answer, the pipeline
 * cannot be resent (see redis_pipe_exec_each), so the commands are dropped then: at 10,000
 * streams they are 2 MB that would otherwise last as long as the replies take to read. */
static void pipe_drop_cmds(struct redis_pipe *p)
{
    if (p->keep_cmds || !p->cmds)
        return;
    free(p->cmds);
    p->cmds = NULL;
    p->len = p->cap = p->window = 0;
}

/* Remembers the name of the command just added (its first argument, cut to 23 bytes). */
static void pipe_note_name(struct redis_pipe *p, const char *name, size_t len)
{
    if (len > sizeof p->names[0] - 1)
        len = sizeof p->names[0] - 1;
    unsigned k = 0;
    while (k < p->nnames && !(p->name_len[k] == len && memcmp(p->names[k], name, len) == 0))
        k++;
    if (k == p->nnames && k < PIPE_NAMES) {
        memcpy(p->names[k], name, len);
        p->names[k][len] = '\0';
        p->name_len[k] = (unsigned char)len;
        p->nnames++;
    }
    if (k == PIPE_NAMES)
        p->keep_cmds = 1;
    if (p->n == p->name_cap) {
        p->name_cap = p->name_cap ? p->name_cap * 2 : 64;
        p->name_of = xrealloc(p->name_of, p->name_cap);
    }
    p->name_of[p->n] = (unsigned char)k;
}

size_t redis_pipe_len(const struct redis_pipe *p)
{
    return p->n;
}

int redis_pipe_window_full(const struct redis_pipe *p)
{
    return p->len - p->window >= REDIS_PIPE_WINDOW_BYTES;
}

/* Digits of n in decimal. */
static size_t dec_len(size_t n)
{
    size_t d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* "*3\r\n" or "$5\r\n" (a RESP array or bulk string header) at q, whose dec_len(n) + 3 bytes
 * are reserved; returns the end. */
static char *put_header(char *q, char tag, size_t n)
{
    size_t d = dec_len(n);
    *q++ = tag;
    for (size_t i = d; i > 0; i--) {
        q[i - 1] = (char)('0' + n % 10);
        n /= 10;
    }
    q += d;
    *q++ = '\r';
    *q++ = '\n';
    return q;
}

/* Formatted here rather than with redisFormatCommandArgv, which allocates every command
 * separately before it would be copied into the pipe: the size is worked out first, then the
 * command is written in place. */
size_t redis_pipe_add(struct redis_pipe *p, int argc, const char *const *argv,
                      const size_t *argvlen)
{
    size_t nargs = argc > 0 ? (size_t)argc : 0, lens[16];
    size_t need = dec_len(nargs) + 3;
    for (size_t i = 0; i < nargs; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        if (i < sizeof lens / sizeof lens[0])
            lens[i] = len;
        need += dec_len(len) + 3 + len + 2;
    }
    if (need > p->cap - p->len) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap - p->len < need)
            cap *= 2;
        p->cmds = xrealloc(p->cmds, cap);
        p->cap = cap;
    }
    char *q = put_header(p->cmds + p->len, '*', nargs);
    for (size_t i = 0; i < nargs; i++) {
        size_t len = i < sizeof lens / sizeof lens[0] ? lens[i]
                     : argvlen                        ? argvlen[i]
                                                      : strlen(argv[i]);
        q = put_header(q, '$', len);
        memcpy(q, argv[i], len);
        q += len;
        *q++ = '\r';
        *q++ = '\n';
    }
    p->len = (size_t)(q - p->cmds);
    pipe_note_name(p, nargs ? argv[0] : "", nargs ? lens[0] : 0);
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

/* Reads the decimal number after a RESP header's tag at *pos, moving *pos past its "\r\n". The
 * pipe formatted these bytes itself, so they are well-formed. */
static size_t read_header(const struct redis_pipe *p, size_t *pos)
{
    size_t n = 0, i = *pos + 1;
    while (i < p->len && p->cmds[i] >= '0' && p->cmds[i] <= '9')
        n = n * 10 + (size_t)(p->cmds[i++] - '0');
    *pos = i + 2;
    return n;
}

/* The name of command index (its first word) into out, for messages: from the names the pipe
 * remembered, else by walking the formatted commands (which are kept then). */
static void pipe_command_name(const struct redis_pipe *p, size_t index, char *out, size_t outsz)
{
    size_t pos = 0;
    out[0] = '\0';
    if (index < p->n && p->name_of[index] < PIPE_NAMES) {
        snprintf(out, outsz, "%s", p->names[p->name_of[index]]);
        return;
    }
    for (size_t k = 0; k <= index && pos < p->len; k++) {
        size_t argc = read_header(p, &pos);
        for (size_t j = 0; j < argc && pos < p->len; j++) {
            size_t len = read_header(p, &pos);
            if (k == index && j == 0) {
                size_t n = len < outsz - 1 ? len : outsz - 1;
                if (pos + n > p->len)
                    n = p->len - pos;
                memcpy(out, p->cmds + pos, n);
                out[n] = '\0';
                return;
            }
            pos += len + 2;
        }
    }
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

/* Closes the socket (and its TLS session first). */
static void conn_drop_socket(struct redis_conn *c)
{
    redis_tls_close(c->tls);
    c->tls = NULL;
    if (c->ctx)
        redisFree(c->ctx);
    c->ctx = NULL;
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
    /* The handshake under the same deadline as every read (redis_tls.c). */
    if (c->tls_cfg &&
        !(c->tls = redis_tls_open(c->tls_cfg, ctx->fd, c->addr.host, c->label, dl, e))) {
        redisFree(ctx);
        return -1;
    }
    if (!c->arena)
        c->arena = redis_arena_new();
    redis_arena_reset(c->arena);
    ctx->reader->fn = &redis_arena_reply_fns;
    ctx->reader->privdata = c->arena;
    c->ctx = ctx;
    c->prelude_pending = c->nprelude > 0;
    c->used = 0;
    return 0;
}

struct redis_conn *redis_conn_open(const char *source, const char *address, const char *username,
                                   const char *password, long db, const struct deadline *dl,
                                   struct err *e)
{
    return redis_conn_open_tls(source, address, username, password, db, NULL, dl, e);
}

struct redis_conn *redis_conn_open_tls(const char *source, const char *address,
                                       const char *username, const char *password, long db,
                                       const struct tls_config *tls, const struct deadline *dl,
                                       struct err *e)
{
    struct redis_conn *c = xcalloc(1, sizeof *c);
    c->tls_cfg = tls;
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
    conn_drop_socket(c);
    redis_arena_free(c->arena);
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

/* Checks the reply to the i-th prelude command; frees it (empties the arena). */
static int prelude_check(struct redis_conn *c, size_t i, const redisReply *r, struct err *e)
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
    redis_arena_reset(c->arena);
    return rc;
}

static int io_error(struct redis_conn *c, const char *what, int errnum, struct err *e)
{
    return err_set(e, ERR_CONNECT, "%s: %s: %s", c->label, what, strerror(errnum));
}

/* After any error: the socket may hold half a reply, or replies nobody will read. Closed at once
 * rather than drained, so a server that keeps sending cannot hold the scrape. */
static void conn_break(struct redis_conn *c)
{
    c->broken = 1;
    conn_drop_socket(c);
}

/* One run of a pipeline: the callbacks, and what the reconnect decision needs to know. */
struct exec_run {
    redis_reply_fn fn;
    void *ctx;
    redis_fill_fn fill; /* NULL: every command is in the pipe already */
    void *fill_ctx;
    int *more;        /* the filler has more commands (kept across a reconnect's resend) */
    int got_bytes;    /* the server answered anything */
    size_t delivered; /* replies handed to fn */
};

/* Hands one reply of the pipeline proper to the caller (or turns it into ERR_AUTH), then frees
 * it (empties the arena) whatever happened. */
static int deliver(struct redis_conn *c, const struct redis_pipe *p, size_t index,
                   const redisReply *reply, struct exec_run *run, struct err *e)
{
    int rc;
    if (auth_error_prefix(reply)) {
        char name[24];
        pipe_command_name(p, index, name, sizeof name);
        rc = auth_error(c, name, reply, e);
    } else {
        run->delivered++;
        rc = run->fn(run->ctx, index, reply, e);
        if (rc && e->code == ERR_NONE)
            rc = err_set(e, ERR_INTERNAL, "%s: reply %zu: handler failed without saying why",
                         c->label, index + 1);
    }
    redis_arena_reset(c->arena);
    return rc ? -1 : 0;
}

#define FEED_BYTES 4096

/* send() or its TLS record: bytes sent (0 when the socket is full), or -1 with e set. */
static ssize_t conn_send(struct redis_conn *c, const char *p, size_t n, struct err *e)
{
    if (c->tls) {
        ssize_t w = redis_tls_send(c->tls, p, n, e);
        return w == REDIS_TLS_AGAIN ? 0 : w;
    }
    /* MSG_NOSIGNAL: a peer that closed must give EPIPE, not kill the exporter. */
    ssize_t w = send(c->ctx->fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return io_error(c, "write", errno, e);
    return w < 0 ? 0 : w;
}

/* recv() or its TLS record: bytes, 0 when the server closed, REDIS_TLS_AGAIN when nothing is
 * there yet, or -1 with e set. */
static ssize_t conn_recv(struct redis_conn *c, char *p, size_t n, struct err *e)
{
    if (c->tls)
        return redis_tls_recv(c->tls, p, n, e);
    ssize_t r = recv(c->ctx->fd, p, n, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return REDIS_TLS_AGAIN;
    if (r < 0)
        return io_error(c, "read", errno, e);
    return r;
}

/* Asks the filler for the next window of commands, once all formatted so far were sent. The
 * bytes sent are dropped first when the server has begun to answer (the pipeline cannot be resent
 * then), so a streamed pipeline keeps about one window of commands; before that the window is
 * appended, and a reconnect resends everything from the first byte. */
static int pipe_fill(struct redis_pipe *p, struct exec_run *run, struct err *e)
{
    if (run->got_bytes && !p->keep_cmds)
        p->len = 0;
    p->window = p->len;
    size_t n0 = p->n;
    int rc = run->fill(run->fill_ctx, p, e);
    if (rc < 0 && e->code == ERR_NONE)
        err_set(e, ERR_INTERNAL, "pipeline filler failed without saying why");
    if (rc > 0 && p->n == n0) /* asked again at once, it would never end */
        rc = err_set(e, ERR_INTERNAL, "pipeline filler added nothing and wants more");
    *run->more = rc > 0;
    return rc < 0 ? -1 : 0;
}

/* One write+read cycle. The prelude (when due) and the commands are sent straight from where
 * they are kept, without copying them into one buffer first; a streamed pipeline's later windows
 * are formatted whenever all before them were sent, while the server works on those. */
static int exec_once(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                     size_t max_bytes, struct exec_run *run, struct err *e)
{
    int64_t t0 = deadline_now_ms();
    size_t npre = c->prelude_pending ? c->nprelude : 0;
    size_t total = npre + p->n;
    const char *seg[2] = {c->prelude.data, p->cmds};
    size_t seglen[2] = {npre ? c->prelude.len : 0, p->len};
    size_t si = 0, soff = 0; /* the segment being sent, and how much of it is */
    size_t received = 0, nread = 0;
    char chunk[16384];

    size_t counted = p->n;
    c->stats.round_trips++;
    c->stats.commands += total;
    while (received < total || *run->more) {
        while (si < 2 && soff == seglen[si]) {
            si++;
            soff = 0;
        }
        if (si == 2 && *run->more) {
            if (pipe_fill(p, run, e))
                return -1;
            /* What was sent before is gone once the server answered: the new window is at 0. */
            si = 1;
            soff = p->window;
            seg[1] = p->cmds;
            seglen[1] = p->len;
            total = npre + p->n;
            c->stats.commands += p->n - counted;
            counted = p->n;
            continue;
        }
        if (si == 2 && run->got_bytes)
            pipe_drop_cmds(p);
        short revents = 0;
        /* Bytes GnuTLS decrypted already are not on the socket: poll() would not see them. */
        int n =
            c->tls && redis_tls_pending(c->tls)
                ? (revents = POLLIN, 1)
                : deadline_wait_fd(c->ctx->fd, si < 2 ? POLLIN | POLLOUT : POLLIN, dl, &revents);
        if (n == 0)
            return err_set(e, ERR_TIMEOUT, "%s: timed out after %lld ms waiting for Redis",
                           c->label, (long long)(deadline_now_ms() - t0));
        if (n < 0)
            return io_error(c, "poll", errno, e);
        if (revents & POLLNVAL)
            return err_set(e, ERR_INTERNAL, "%s: poll: invalid socket", c->label);
        if ((revents & POLLOUT) && si < 2) {
            ssize_t w = conn_send(c, seg[si] + soff, seglen[si] - soff, e);
            if (w < 0)
                return -1;
            if (w > 0) {
                soff += (size_t)w;
                c->stats.bytes_written += (size_t)w;
            }
        }
        if (!(revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = conn_recv(c, chunk, sizeof chunk, e);
        if (r == 0)
            return err_set(e, ERR_CONNECT, "%s: connection closed by the server", c->label);
        if (r == REDIS_TLS_AGAIN)
            continue;
        if (r < 0)
            return -1;
        run->got_bytes = 1;
        c->stats.bytes_read += (size_t)r;
        if ((size_t)r > max_bytes - nread)
            return err_set(
                e, ERR_LIMIT,
                "%s: the replies to %zu commands exceeded %zu bytes (max_response_bytes)", c->label,
                p->n, max_bytes);
        nread += (size_t)r;
        /* Fed in slices: after each reply the reader moves what is left of its buffer to the
         * front, which costs the size of what it was fed. */
        for (size_t off = 0; off < (size_t)r;) {
            size_t k = (size_t)r - off < FEED_BYTES ? (size_t)r - off : FEED_BYTES;
            if (redisReaderFeed(c->ctx->reader, chunk + off, k) != REDIS_OK)
                return err_set(e, ERR_INTERNAL, "%s: reply buffer: %s", c->label,
                               c->ctx->reader->errstr);
            off += k;
            while (received < total) {
                void *reply = NULL;
                if (redisReaderGetReply(c->ctx->reader, &reply) != REDIS_OK)
                    return err_set(e, ERR_PROTOCOL, "%s: cannot parse the reply: %s", c->label,
                                   c->ctx->reader->errstr);
                if (!reply)
                    break;
                int rc = received < npre ? prelude_check(c, received, reply, e)
                                         : deliver(c, p, received - npre, reply, run, e);
                if (rc)
                    return -1;
                received++;
            }
        }
    }
    /* Replies we did not ask for would be taken for the answers to the next pipeline. */
    if (c->ctx->reader->len > c->ctx->reader->pos)
        return err_set(e, ERR_PROTOCOL, "%s: unexpected data after the last reply", c->label);
    c->prelude_pending = 0;
    return 0;
}

static int exec_each(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                     size_t max_bytes, struct exec_run proto, struct err *e)
{
    if (!max_bytes)
        max_bytes = REDIS_DEFAULT_MAX_RESPONSE_BYTES;
    if (c->broken || !c->ctx)
        return err_set(e, ERR_CONNECT, "%s: connection unusable after an earlier error", c->label);
    if (p->n == 0 && !c->prelude_pending && !*proto.more)
        return 0;
    for (int attempt = 0;; attempt++) {
        struct exec_run run = proto;
        if (exec_once(c, p, dl, max_bytes, &run, e) == 0) {
            c->used = 1;
            return 0;
        }
        /* A socket that served the previous scrape and now reads EOF/reset before any byte was
         * probably closed while idle (server restart, `timeout`, a proxy): reconnect once. Never
         * once fn has seen a reply: it would see it twice. */
        if (attempt > 0 || !c->used || run.got_bytes || run.delivered || e->code != ERR_CONNECT ||
            deadline_expired(dl)) {
            conn_break(c);
            return -1;
        }
        log_kv(LOG_DEBUG, "redis connection went stale, reconnecting", "conn", c->label, "error",
               e->msg, NULL);
        conn_drop_socket(c);
        c->stats.reconnects++;
        if (conn_connect(c, dl, e)) {
            conn_break(c);
            return -1;
        }
    }
}

static int exec_pipe(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                     size_t max_bytes, struct exec_run run, struct err *e)
{
    if (p->sent)
        return err_set(e, ERR_INTERNAL, "%s: pipeline sent already (reset it to reuse it)",
                       c->label);
    int rc = exec_each(c, p, dl, max_bytes, run, e);
    p->sent = 1;
    pipe_drop_cmds(p);
    /* The names only served this exec's messages: one byte a command, 128 KiB kept between
     * scrapes for bullmq's 130,000 commands at 10,000 queues. */
    free(p->name_of);
    p->name_of = NULL;
    p->name_cap = 0;
    return rc;
}

int redis_pipe_exec_each(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                         size_t max_bytes, redis_reply_fn fn, void *ctx, struct err *e)
{
    int more = 0;
    struct exec_run run = {fn, ctx, NULL, NULL, &more, 0, 0};
    return exec_pipe(c, p, dl, max_bytes, run, e);
}

int redis_pipe_exec_stream(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                           size_t max_bytes, redis_fill_fn fill, void *fill_ctx, redis_reply_fn fn,
                           void *ctx, struct err *e)
{
    int more = 1;
    struct exec_run run = {fn, ctx, fill, fill_ctx, &more, 0, 0};
    /* The first window before anything is sent: a filler with nothing to ask costs no round
     * trip, as an empty pipe does not. */
    if (!p->sent && p->n == 0 && pipe_fill(p, &run, e)) {
        conn_break(c);
        return -1;
    }
    return exec_pipe(c, p, dl, max_bytes, run, e);
}
