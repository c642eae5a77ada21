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
 * keys it looks at. AUTH and SELECT are not separate round trips either: they are sent in front of
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

/* 64 MiB: the default cap on the bytes read back for one pipeline (max_reply_bytes). */
#define REDIS_DEFAULT_MAX_REPLY_BYTES ((size_t)64 * 1024 * 1024)
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
/* Closes the socket and wipes the stored credentials. NULL is fine. */
void redis_conn_close(struct redis_conn *c);
const struct redis_stats *redis_conn_stats(const struct redis_conn *c);
/* The `redis "<source>" <address>` prefix of this connection's messages, for callers' own. */
const char *redis_conn_label(const struct redis_conn *c);

/* A pipeline: commands added in order, replies read back by redis_pipe_exec. The pipe owns the
 * formatted commands and the replies; redis_pipe_reset drops both (keeping allocations) so one
 * pipe can be reused for several round trips. */
struct redis_pipe;

struct redis_pipe *redis_pipe_new(void);
void redis_pipe_free(struct redis_pipe *p); /* NULL is fine */
void redis_pipe_reset(struct redis_pipe *p);
/* Appends one command. argvlen may be NULL (then every argv[i] is a C string); arguments are
 * binary safe otherwise. Returns the command's index in the pipe. */
size_t redis_pipe_add(struct redis_pipe *p, int argc, const char *const *argv,
                      const size_t *argvlen);
/* redis_pipe_addv(p, "XLEN", key, NULL): the same with C-string arguments, NULL-terminated. */
size_t redis_pipe_addv(struct redis_pipe *p, const char *arg0, ...) __attribute__((sentinel));
size_t redis_pipe_len(const struct redis_pipe *p);

/* Sends every command of p (after AUTH/SELECT when the connection is fresh) and reads all
 * replies, in one round trip, within the deadline, reading at most max_bytes (0: the default).
 * A Redis error reply to one command is data: it is returned as a REDIS_REPLY_ERROR reply.
 * Except that errors of the credentials are the pipeline's failure: a failed AUTH, and any reply
 * starting with NOAUTH, WRONGPASS or NOPERM give ERR_AUTH. Other errors: ERR_TIMEOUT ("timed out
 * after N ms waiting for Redis"), ERR_CONNECT (reset, refused, closed), ERR_PROTOCOL (unparsable
 * reply), ERR_LIMIT (more than max_bytes), ERR_QUERY (SELECT refused).
 * A connection that was idle since its last pipeline and turns out to be closed by the server
 * (restart, idle timeout, proxy) is reconnected once and the pipeline resent: the collectors only
 * send read-only commands, so resending is harmless.
 * After any error the connection is unusable: close it and open a new one on the next scrape. */
int redis_pipe_exec(struct redis_conn *c, struct redis_pipe *p, const struct deadline *dl,
                    size_t max_bytes, struct err *e);
/* The reply to command i after a successful exec, owned by the pipe (valid until the next
 * exec/reset/free); NULL before that. */
const redisReply *redis_pipe_reply(const struct redis_pipe *p, size_t i);

/* Is r an error reply? And if so, does its text start with prefix (e.g. "NOGROUP")? */
int redis_reply_is_error(const redisReply *r, const char *prefix);
/* "string", "array", "integer", "nil", "status", "error": for "want X, got Y" messages. */
const char *redis_reply_type_name(const redisReply *r);

#endif
