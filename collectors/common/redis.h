/* redis.h: a small Redis client for collectors that honours the scrape deadline as a whole.
 *
 * hiredis's blocking API only has per-syscall timeouts: a server that trickles one byte per
 * second, or a pipeline of a thousand commands, can hold a blocking call far past the scrape
 * deadline. So this helper uses hiredis only to connect, to format commands and to parse replies,
 * and does the I/O itself: every poll() waits at most for what is left of the deadline, and the
 * bytes read per pipeline are capped so a huge key cannot exhaust memory.
 *
 * The unit of work is a pipeline: every command of it is written at once and all replies are read
 * back in one round trip, so a collector's round trips per scrape do not grow with the number of
 * keys it looks at. Each reply is handed to the caller as soon as it is parsed and freed right
 * after, so the memory a pipeline takes does not grow with its replies either: a collector keeps
 * only what it extracts. AUTH and SELECT are not separate round trips: they are sent in front of
 * the first pipeline after a (re)connect.
 *
 * Shared by every Redis-based kind (redis_stream today; Sidekiq, BullMQ, RQ and Celery later). One
 * connection belongs to one collector instance and is used by one thread at a time. */
#ifndef QREL_REDIS_H
#define QREL_REDIS_H

#include <stddef.h>

#include <hiredis.h>

#include "deadline.h"
#include "err.h"

/* 64 MiB: the default cap on the bytes read back for one pipeline (max_response_bytes). */
#define REDIS_DEFAULT_MAX_RESPONSE_BYTES ((size_t)64 * 1024 * 1024)
#define REDIS_DEFAULT_PORT 6379

/* A parsed `address:` value. Accepted forms: "host:port", "host" (port 6379), "[v6addr]:port",
 * "[v6addr]" and "unix:/path/to/socket". A bare IPv6 address without brackets is refused because
 * its last group would read as a port. */
struct redis_address {
    int is_unix;
    char *host; /* TCP: host name or address literal without brackets; NULL for unix */
    int port;   /* TCP */
    char *path; /* unix: the socket path; NULL for TCP */
};

/* Fills *out (owned by the caller, free with redis_address_free). On error returns -1 with code
 * ERR_CONFIG and a message without any prefix, e.g. `want "host:port", got ":6379"`. */
int redis_address_parse(const char *s, struct redis_address *out, struct err *e);
void redis_address_free(struct redis_address *a); /* frees the members; NULL is fine */

/* Cumulative counters of one connection, for debug logs: collectors take the difference over a
 * scrape. A pipeline's write+read cycle is one round trip; AUTH/SELECT count as commands. */
struct redis_stats {
    unsigned long long round_trips;
    unsigned long long commands;
    unsigned long long bytes_written;
    unsigned long long bytes_read;
    unsigned long long reconnects; /* silent reconnects after a connection went stale */
};

struct redis_conn;

/* Connects to address within the deadline; no Redis command is sent yet. source names the
 * collector instance in messages: every error starts with `redis "<source>" <address>: `.
 * password (NULL: no AUTH) and username (NULL: the default user) are copied into an AUTH command
 * that is sent, together with `SELECT db` when db != 0, in front of the first pipeline; the copy
 * is wiped when the connection is closed. The password is never put into a message.
 * Errors: ERR_CONFIG (bad address), ERR_CONNECT (refused, DNS, unreachable), ERR_TIMEOUT.
 * Host names are resolved by getaddrinfo(), which does not honour the deadline: use addresses
 * where that matters. Returns NULL on error. */
struct redis_conn *redis_conn_open(const char *source, const char *address, const char *username,
                                   const char *password, long db, const struct deadline *dl,
                                   struct err *e);
/* The same over TLS when tls is not NULL (redis_tls.h): the handshake is part of the connect,
 * within the deadline, and of every reconnect. tls is the caller's and must outlive the
 * connection. A handshake or verification failure is ERR_CONNECT with the reason. */
struct tls_config;
struct redis_conn *redis_conn_open_tls(const char *source, const char *address,
                                       const char *username, const char *password, long db,
                                       const struct tls_config *tls, const struct deadline *dl,
                                       struct err *e);
/* Closes the socket and wipes the stored credentials. NULL is fine. */
void redis_conn_close(struct redis_conn *c);
const struct redis_stats *redis_conn_stats(const struct redis_conn *c);
/* The `redis "<source>" <address>` prefix of this connection's messages, for callers' own. */
const char *redis_conn_label(const struct redis_conn *c);

/* A pipeline: commands added in order, then sent by redis_pipe_exec_each, which hands each reply
 * to a callback as soon as it is parsed and frees it right after: a pipeline of 30,000 commands
 * never holds more than one reply tree at a time. The pipe owns the formatted commands (about
 * 50-80 bytes each) and one byte per command to name it in messages. An exec consumes the pipe:
 * the commands are dropped as soon as all are sent and the server has begun to answer (they
 * cannot be needed again then), and a pipe that was executed must be reset before it takes the
 * commands of the next round trip. */
struct redis_pipe;

struct redis_pipe *redis_pipe_new(void);
void redis_pipe_free(struct redis_pipe *p);  /* NULL is fine */
void redis_pipe_reset(struct redis_pipe *p); /* empty again, ready for new commands */
/* Appends one command. argvlen may be NULL (then every argv[i] is a C string); arguments are
 * binary safe otherwise. Returns the command's index in the pipe. */
size_t redis_pipe_add(struct redis_pipe *p, int argc, const char *const *argv,
                      const size_t *argvlen);
/* redis_pipe_addv(p, "XLEN", key, NULL): the same with C-string arguments, NULL-terminated. */
size_t redis_pipe_addv(struct redis_pipe *p, const char *arg0, ...) __attribute__((sentinel));
size_t redis_pipe_len(const struct redis_pipe *p);

/* The callback of redis_pipe_exec_each: r is the reply to command index of the pipe. r belongs
 * to the helper and is freed as soon as the callback returns, so copy out what is needed (its
 * strings are NUL-terminated, as hiredis makes them). Return 0 to go on, or -1 with e filled to
 * stop the pipeline. */
typedef int (*redis_reply_fn)(void *ctx, size_t index, const redisReply *r, struct err *e);

/* Sends every command of p (after AUTH/SELECT when the connection is fresh) and reads the
 * replies, in one round trip, within the deadline, reading at most max_bytes (0: the default).
 * Each reply goes to fn(ctx, index, reply, e) in command order as soon as it is parsed, and is
 * freed when fn returns. A Redis error reply to one command is data: fn gets it as a
 * REDIS_REPLY_ERROR reply. Except that errors of the credentials are the pipeline's failure: a
 * failed AUTH, and any reply starting with NOAUTH, WRONGPASS or NOPERM give ERR_AUTH (fn does
 * not see that reply, nor the AUTH/SELECT replies). Other errors: ERR_TIMEOUT ("timed out after
 * N ms waiting for Redis"), ERR_CONNECT (reset, refused, closed), ERR_PROTOCOL (unparsable
 * reply), ERR_LIMIT (more than max_bytes), ERR_QUERY (SELECT refused), or fn's own error when fn
 * returns -1: the pipeline stops there and the rest of the replies is not read.
 * So fn may have seen some replies of a pipeline that then fails: whatever it built from them
 * is to be thrown away with the failure.
 * A connection that was idle since its last pipeline and turns out to be closed by the server
 * (restart, idle timeout, proxy) is reconnected once and the pipeline resent, as long as not a
 * byte of a reply had come back (so fn had seen nothing): the collectors only send read-only
 * commands, so resending is harmless.
 * After any error the connection is unusable (its socket is closed at once): close it and open
 * a new one on the next scrape. Executing a pipe again without redis_pipe_reset is refused
 * (ERR_INTERNAL). */
int redis_pipe_exec_each(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                         size_t max_bytes, redis_reply_fn fn, void *ctx, struct err *e);

/* A streamed pipeline, for pipelines whose length grows with the keys looked at: the same round
 * trip as redis_pipe_exec_each, but its commands are formatted in windows, so that the server
 * works on one window while the next is formatted and the replies to earlier ones are parsed,
 * instead of every command being formatted before the first byte is sent.
 *
 * fill(fill_ctx, p, e) adds the next commands to p with redis_pipe_add/addv (by convention until
 * redis_pipe_window_full(p), about REDIS_PIPE_WINDOW_BYTES of commands) and returns 1 when more
 * are to follow, 0 when it added the last (possibly none), or -1 with e filled to stop the
 * pipeline (then as fn's -1). It is called first once every command already in p (added before
 * the call, sent first) and the prelude are sent, and again each time the previous window was
 * sent in full; it may run while fn has seen only some replies. Returning 1 without adding a
 * command is ERR_INTERNAL. Indices passed to fn count every command of p in the order added.
 *
 * Every guarantee of redis_pipe_exec_each holds for the whole: one deadline, max_bytes over all
 * replies, one reply held at a time, AUTH/SELECT in front, the one reconnect and resend of a
 * stale connection as long as no byte of a reply came back (the windows formatted until then are
 * kept for that; afterwards each sent window is dropped, so the pipe holds about one window), the
 * same errors, and the pipe is consumed as by redis_pipe_exec_each. */
#define REDIS_PIPE_WINDOW_BYTES ((size_t)32 * 1024)
typedef int (*redis_fill_fn)(void *fill_ctx, struct redis_pipe *p, struct err *e);
int redis_pipe_exec_stream(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                           size_t max_bytes, redis_fill_fn fill, void *fill_ctx, redis_reply_fn fn,
                           void *ctx, struct err *e);
/* Does the filler's current window hold REDIS_PIPE_WINDOW_BYTES of commands or more? */
int redis_pipe_window_full(const struct redis_pipe *p);

/* Is r an error reply? And if so, does its text start with prefix (e.g. "NOGROUP")? */
int redis_reply_is_error(const redisReply *r, const char *prefix);
/* "string", "array", "integer", "nil", "status", "error": for "want X, got Y" messages. */
const char *redis_reply_type_name(const redisReply *r);

#endif
