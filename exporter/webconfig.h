/* webconfig.h: the --web.config.file of Prometheus exporters (TLS and basic auth), the subset
 * qrel supports, read strictly like the main configuration:
 *
 *   tls_server_config:
 *     cert_file: server.crt      # PEM; both or neither
 *     key_file: server.key
 *   basic_auth_users:
 *     prometheus: $2y$10$...     # bcrypt hashes only (htpasswd -nBC 10 USER)
 *
 * Relative paths are taken from the web config file's folder. */
#ifndef QREL_WEBCONFIG_H
#define QREL_WEBCONFIG_H

#include <stddef.h>

#include "err.h"

struct webconfig_user {
    char *name;
    char *hash; /* bcrypt */
};

struct webconfig {
    char *cert_pem; /* NULL when TLS is off */
    char *key_pem;
    struct webconfig_user *users;
    size_t nusers;
};

struct webconfig *webconfig_load(const char *path, struct err *e);
void webconfig_free(struct webconfig *w);
/* 1 when user and password match a configured user. Constant time in the password compare. */
int webconfig_check_user(const struct webconfig *w, const char *user, const char *password);

#endif
