/* beanstalk.h: a small client of beanstalkd's text protocol that honours the scrape deadline as a
 * whole, with the same rules as the Redis helper (common/redis.h):
 *   - the socket is non-blocking and every poll() waits at most for what is left of the deadline,
 *     so a server that trickles bytes cannot hold a scrape past it;
 *   - the unit of work is a pipeline: every command is written at once and the replies are read
 *     back in order in one round trip (beanstalkd answers one connection's commands in order), so
 *     round trips per scrape do not grow with the number of tubes;
 *   - the bytes read per pipeline are capped (max_response_bytes), and each reply is handed to
 *     the caller as soon as it is complete, then dropped.
 * Only the reply framing is parsed here (a line, plus a body of the announced size for OK and
 * FOUND); what a body means is the caller's business (collectors/beanstalkd/parse.c).
 *
 * One connection belongs to one collector instance and is used by one thread at a time. */
#ifndef QREL_BEANSTALK_H
#define QREL_BEANSTALK_H

#include <stddef.h>

#include "deadline.h"
#include "err.h"

#define BEANSTALK_DEFAULT_PORT 11300
#define BEANSTALK_DEFAULT_MAX_RESPONSE_BYTES ((size_t)16 * 1024 * 1024)

/* One reply: the status line's words and, for OK and FOUND, the body. Owned by the helper and
 * valid only during the callback. */
struct beanstalk_reply {
    char status[24];  /* the first word: "OK", "FOUND", "NOT_FOUND", "USING", ... */
    const char *line; /* the whole status line without "\r\n" */
    const char *body; /* NUL-terminated body (OK, FOUND), else NULL */
    size_t body_len;
};

struct beanstalk_conn;

/* Parses "host:port", "host" (port 11300) or "[v6]:port". On error -1, ERR_CONFIG, a message
 * without prefix such as `want "host:port", got ":11300"`. *host is malloc'd. */
int beanstalk_address_parse(const char *s, char **host, int *port, struct err *e);

/* Connects within the deadline. source names the collector in messages, which start with
 * `beanstalkd "<source>" <address>: `. Errors: ERR_CONFIG, ERR_CONNECT, ERR_TIMEOUT. */
struct beanstalk_conn *beanstalk_conn_open(const char *source, const char *address,
                                           const struct deadline *dl, struct err *e);
void beanstalk_conn_close(struct beanstalk_conn *c); /* NULL is fine */
/* Round trips made on this connection so far (for tests and debug logs). */
unsigned long long beanstalk_conn_round_trips(const struct beanstalk_conn *c);

/* The callback for each reply, in command order. Return 0 to go on, -1 with e set to stop. */
typedef int (*beanstalk_reply_fn)(void *ctx, size_t index, const struct beanstalk_reply *r,
                                  struct err *e);

/* Sends the n commands (each without "\r\n"; the helper adds it; a command holding '\r' or '\n'
 * is refused with ERR_INTERNAL) and reads the n replies within the deadline, at most max_bytes
 * in all (0: the default). Errors: ERR_TIMEOUT, ERR_CONNECT (reset, closed), ERR_PROTOCOL (a
 * reply that is not beanstalkd's framing, or an error word such as BAD_FORMAT/UNKNOWN_COMMAND/
 * OUT_OF_MEMORY/INTERNAL_ERROR), ERR_LIMIT, or fn's own. After an error the connection is closed:
 * open a new one on the next scrape. */
int beanstalk_exec(struct beanstalk_conn *c, const char *const *cmds, size_t n,
                   const struct deadline *dl, size_t max_bytes, beanstalk_reply_fn fn, void *ctx,
                   struct err *e);

/* Pure framing, for the reader and the unit tests: how many bytes of buf[0, len) the first reply
 * takes. Returns 1 with *used and *r filled (r's strings point into buf, which it modifies: the
 * line's "\r\n" and the body's "\r\n" become NULs), 0 when more bytes are needed, -1 with e set
 * (ERR_PROTOCOL) when the bytes cannot be a reply. max_line caps a status line. */
int beanstalk_frame(char *buf, size_t len, size_t max_line, size_t *used, struct beanstalk_reply *r,
                    struct err *e);

#endif
