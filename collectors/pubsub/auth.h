/* pubsub/auth.h: the credentials of a `pubsub` source: a service-account key (an OAuth 2.0 JWT
 * bearer grant signed RS256 with OpenSSL, the access token cached until shortly before it
 * expires), a token file re-read on every scrape, or nothing (the emulator).
 *
 * The private key is parsed at configure time, kept only as an OpenSSL key object, and the text
 * that held it is wiped. No key, assertion or token ever reaches an error, a log line or a
 * label: messages name the file, the token_uri's path and the grant's error code only. */
#ifndef QREL_PUBSUB_AUTH_H
#define QREL_PUBSUB_AUTH_H

#include <jansson.h>
#include <stddef.h>

#include "common/http.h"
#include "config.h"
#include "deadline.h"
#include "err.h"

#define PUBSUB_SCOPES                                                                              \
    "https://www.googleapis.com/auth/pubsub https://www.googleapis.com/auth/monitoring.read"
#define PUBSUB_DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define PUBSUB_TOKEN_LIFETIME 3600 /* seconds asked for in the JWT (Google's maximum) */
#define PUBSUB_TOKEN_MARGIN 60     /* a cached token is renewed this long before it expires */

struct pubsub_auth;

/* Reads credentials_file / credentials_env (a service-account key JSON) or token_file from map,
 * marking them known. *out is NULL when neither is configured (no Authorization header). */
int pubsub_auth_configure(struct cfg_node *map, struct pubsub_auth **out, struct err *e);
void pubsub_auth_free(struct pubsub_auth *a); /* NULL is fine */

/* The bearer token for a request at time now (epoch seconds): the cached one, or a fresh one from
 * the token endpoint (through http), or the token file's content. *token is owned by a and valid
 * until the next call; NULL when a is NULL. Errors: ERR_AUTH (grant refused, unreadable token
 * file), connect/timeout/protocol for the token endpoint. */
int pubsub_auth_token(struct pubsub_auth *a, struct http_client *http, const struct deadline *dl,
                      double now, const char **token, struct err *e);
/* Forgets a cached token (the API answered 401: it was revoked). */
void pubsub_auth_invalidate(struct pubsub_auth *a);

/* ---- pure parts, for unit tests ---- */

/* What a service-account key file holds (strings point into doc; private_key is secret). */
struct pubsub_key {
    const char *client_email;
    const char *private_key; /* PEM */
    const char *private_key_id;
    const char *token_uri;
};
/* Checks a parsed key file: type "service_account", client_email and private_key present,
 * token_uri an http(s) URL (default PUBSUB_DEFAULT_TOKEN_URI). Messages name the JSON path and
 * never quote private_key. */
int pubsub_key_parse(const json_t *doc, struct pubsub_key *k, struct err *e);

/* The signed assertion "header.claims.signature" (base64url, RS256) for the key's client_email,
 * aud = token_uri, iat = now, exp = now + PUBSUB_TOKEN_LIFETIME. pem is the private key;
 * malloc'd, NULL with e set when pem is not an RSA private key. */
char *pubsub_jwt(const char *pem, const struct pubsub_key *k, long long now, struct err *e);

/* base64url without padding; malloc'd. */
char *pubsub_base64url(const unsigned char *p, size_t n);

#endif
