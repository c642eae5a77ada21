/* redis_tls.h: TLS for the Redis connections of every Redis kind and of `qrel dlq` on Redis.
 *
 * The key is the one every HTTP kind takes, `tls_config` (common/tls.h); present means TLS on,
 * with server_name defaulting to the host of `address`. A session (redis_tls_open) runs the
 * handshake on the caller's non-blocking socket under the scrape's deadline; the record functions
 * then stand in for send() and recv(). No message ever carries the key password. */
#ifndef QREL_REDIS_TLS_H
#define QREL_REDIS_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "deadline.h"
#include "err.h"
#include "common/tls.h"

struct redis_tls;

/* Runs the TLS handshake on the non-blocking socket fd within the deadline, verifying the
 * server's certificate against host (or server_name). label starts every message. Errors:
 * ERR_TIMEOUT, ERR_CONNECT (handshake or verification failure, with the reason). NULL on error. */
struct redis_tls *redis_tls_open(const struct tls_config *cfg, int fd, const char *host,
                                 const char *label, const struct deadline *dl, struct err *e);
void redis_tls_close(struct redis_tls *t); /* NULL is fine; the socket stays open */

#define REDIS_TLS_AGAIN (-2)
/* send()/recv() through the session: bytes, or REDIS_TLS_AGAIN (wait for the socket), or -1 with
 * e set (ERR_CONNECT). recv returns 0 when the server closed the connection. A send that returned
 * REDIS_TLS_AGAIN must be repeated with the same bytes. */
ssize_t redis_tls_send(struct redis_tls *t, const void *p, size_t n, struct err *e);
ssize_t redis_tls_recv(struct redis_tls *t, void *p, size_t n, struct err *e);
/* Bytes already decrypted and waiting in the session: poll() would not see them. */
size_t redis_tls_pending(const struct redis_tls *t);

#endif
