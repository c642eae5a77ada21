/* redis_tls.h: TLS for the Redis connections of every Redis kind and of `qrel dlq` on Redis.
 *
 * The key is the one every HTTP kind takes, `tls_config` (a map); present means TLS on:
 *   ca_file                       PEM bundle to verify the server with (default: the system's)
 *   cert_file, key_file           client certificate and key (both or neither)
 *   key_password_file / _env      the password of an encrypted key_file
 *   server_name                   the name the certificate must carry and the SNI (default: the
 *                                 host of `address`)
 *   insecure_skip_verify          false; true turns verification off
 *
 * Reading (redis_tls_config_read) is pure; judging (redis_tls_config_check) loads the files once
 * with GnuTLS so `--config.check` and `qrel check` fail on a missing, unreadable or malformed file
 * or a wrong key password, pointing at the key. A session (redis_tls_open) runs the handshake on
 * the caller's non-blocking socket under the scrape's deadline; the record functions then stand
 * in for send() and recv(). No message ever carries the key password. */
#ifndef QREL_REDIS_TLS_H
#define QREL_REDIS_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "deadline.h"
#include "err.h"

struct redis_tls_config {
    char *ca_file;
    char *cert_file;
    char *key_file;
    char *key_password; /* from key_password_file / key_password_env; NULL: none */
    char *server_name;
    int insecure_skip_verify;
};

/* Reads tls_config from map (marking its keys known). *out is NULL when the key is absent (no
 * TLS), else a malloc'd config. 0 or -1 with a file:line:col error. */
int redis_tls_config_read(struct cfg_node *map, struct redis_tls_config **out, struct err *e);
/* After cfg_finish: the files are there and load (ca_file, the certificate with its key and
 * password). 0 or -1 with a file:line:col error at the key at fault. */
int redis_tls_config_check(struct cfg_node *map, const struct redis_tls_config *t, struct err *e);
void redis_tls_config_free(struct redis_tls_config *t); /* wipes the password; NULL is fine */

struct redis_tls;

/* Runs the TLS handshake on the non-blocking socket fd within the deadline, verifying the
 * server's certificate against host (or server_name). label starts every message. Errors:
 * ERR_TIMEOUT, ERR_CONNECT (handshake or verification failure, with the reason). NULL on error. */
struct redis_tls *redis_tls_open(const struct redis_tls_config *cfg, int fd, const char *host,
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
