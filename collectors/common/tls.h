/* tls.h: the `tls_config` key every kind that speaks TLS to its broker takes (the HTTP kinds
 * through http.c, the Redis kinds through redis_tls.c), in Prometheus's spelling:
 *   ca_file                       PEM bundle to verify the server with (default: the system's)
 *   cert_file, key_file           client certificate and key (both or neither)
 *   key_password_file / _env      the password of an encrypted key_file
 *   server_name                   the name the server's certificate must carry (default: the host
 *                                 the kind connects to)
 *   insecure_skip_verify          false; true turns verification off
 *
 * One reader (tls_config.c, pure: a unit test reads configs without touching a file) and one
 * judge (tls.c: loads the files with GnuTLS, so `--config.check` and `qrel check` fail on a
 * missing, unreadable or malformed file or a wrong key password, pointing at the key, before a
 * scrape would). No message ever carries the key password. */
#ifndef QREL_TLS_H
#define QREL_TLS_H

#include <gnutls/gnutls.h>
#include <stddef.h>

#include "config.h"
#include "err.h"

struct tls_config {
    char *ca_file;
    char *cert_file;
    char *key_file;
    char *key_password; /* from key_password_file / key_password_env; NULL: none */
    char *server_name;
    int insecure_skip_verify;
};

/* Reads tls_config from map (marking its keys known, and finishing the tls_config map itself).
 * *out is NULL when the key is absent (no TLS settings), else a malloc'd config. 0 or -1 with a
 * file:line:col error. */
int tls_config_read(struct cfg_node *map, struct tls_config **out, struct err *e);
/* The files are there and load (ca_file, the certificate with its key and password). t NULL is
 * fine. 0 or -1 with a file:line:col error at the key at fault. */
int tls_config_check(struct cfg_node *map, const struct tls_config *t, struct err *e);
struct tls_config *tls_config_dup(const struct tls_config *t); /* NULL gives NULL */
void tls_config_free(struct tls_config *t); /* wipes the password; NULL is fine */

/* Loads t's files into new GnuTLS credentials (the system's CA store unless ca_file or
 * insecure_skip_verify). On error returns -1 with *key naming the key at fault and msg saying
 * why (never the password). */
int tls_load_credentials(const struct tls_config *t, gnutls_certificate_credentials_t *out,
                         const char **key, char *msg, size_t msgsz);

#endif
