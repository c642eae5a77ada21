/* webconfig.h: the --web.config.file of Prometheus exporters (TLS and basic auth), the subset
 * qrel supports, read strictly like the main configuration:
 *
 *   tls_server_config:
 *     cert_file: server.crt      # PEM; both or neither
 *     key_file: server.key
 *     min_version: TLS12         # TLS12 (default) or TLS13
 *     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...]   # AEAD suites only
 *     client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default),
 *                                  # RequireAnyClientCert, VerifyClientCertIfGiven
 *     client_ca_file: ca.crt       # PEM; the CAs client certificates are verified against
 *   basic_auth_users:
 *     prometheus: $2y$10$...     # bcrypt hashes only (htpasswd -nBC 10 USER)
 *
 * Relative paths are taken from the web config file's folder. The certificate and key are read
 * again when their files change (tlsserver.h). Without cipher_suites the server
 * offers AES-GCM and ChaCha20-Poly1305 with ECDHE only; TLS 1.0 and 1.1 are never offered. */
#ifndef QREL_WEBCONFIG_H
#define QREL_WEBCONFIG_H

#include <stddef.h>

#include "err.h"

struct webconfig_user {
    char *name;
    char *hash; /* bcrypt */
};

struct webconfig_auth; /* verified-credentials cache and bcrypt admission, internal */

enum webconfig_client_auth {
    WEBCONFIG_NO_CLIENT_CERT,
    WEBCONFIG_REQUIRE_ANY_CLIENT_CERT,
    WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN,
    WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT,
};

struct webconfig {
    char *cert_pem; /* NULL when TLS is off */
    char *key_pem;
    char *cert_path, *key_path; /* the files they came from, resolved: watched for changes */
    char *client_ca_pem;        /* NULL without client_ca_file */
    char *client_ca_path;       /* its file, resolved: watched for changes too */
    enum webconfig_client_auth client_auth;
    char *tls_priorities; /* a GnuTLS priority string built from min_version and cipher_suites */
    struct webconfig_user *users;
    size_t nusers;
    struct webconfig_auth *auth;
};

struct webconfig *webconfig_load(const char *path, struct err *e);
void webconfig_free(struct webconfig *w);
/* 1 when user and password match a configured user. Takes the same time whether or not the user
 * exists (an unknown user is checked against a configured hash too). */
int webconfig_check_user(const struct webconfig *w, const char *user, const char *password);
/* 1 when an Authorization header value carries Basic credentials of a configured user. The
 * scheme is case-insensitive (RFC 7617); credentials with a NUL byte are refused. Successful
 * verifications are remembered for a few minutes under a salted SHA-256 of the credentials, so
 * a logged-in scraper costs no bcrypt per request. Thread-safe. */
int webconfig_authorize(const struct webconfig *w, const char *authorization);
/* The GnuTLS priority string for TLS defaults with no web config file: TLS 1.2+ and AEAD. */
extern const char webconfig_default_priorities[];

#endif
