/* pubsub/auth.c: service-account JWT grant, token cache and token file. See pubsub/auth.h. */
#include "auth.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/secret.h"
#include "alloc.h"
#include "buf.h"
#include "text.h"

#define TOKEN_FILE_MAX 16384

struct pubsub_auth {
    /* service account */
    EVP_PKEY *key;
    struct pubsub_key meta; /* strings owned below; private_key NULL (parsed into key) */
    char *client_email, *private_key_id, *token_uri;
    char *token; /* cached access token, wiped when replaced */
    double token_expires;
    /* token file */
    char *token_file;
};

static void wipe_free(char *s)
{
    secret_free(s);
}

/* Frees a JSON document that holds a secret at key, zeroing that string first. */
static void free_wiped(json_t *doc, const char *key)
{
    if (!doc)
        return;
    json_t *v = json_object_get(doc, key);
    if (json_is_string(v)) {
        volatile char *p = (volatile char *)json_string_value(v);
        for (size_t i = 0; i < json_string_length(v); i++)
            p[i] = 0;
    }
    json_decref(doc);
}

char *pubsub_base64url(const unsigned char *p, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    struct buf b;
    buf_init(&b);
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        char q[4] = {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], tbl[v & 63]};
        buf_append(&b, q, 4);
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        char q[2] = {tbl[v >> 18], tbl[(v >> 12) & 63]};
        buf_append(&b, q, 2);
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        char q[3] = {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63]};
        buf_append(&b, q, 3);
    }
    return buf_steal(&b);
}

static char *b64_str(const char *s)
{
    return pubsub_base64url((const unsigned char *)s, strlen(s));
}

int pubsub_key_parse(const json_t *doc, struct pubsub_key *k, struct err *e)
{
    memset(k, 0, sizeof *k);
    const char *type = NULL;
    if (json_expect_object(doc, "$", e) || json_need_string(doc, "$", "type", &type, e))
        return -1;
    if (strcmp(type, "service_account") != 0)
        return err_set(e, ERR_CONFIG,
                       "$.type: want \"service_account\", got \"%.40s\" (for other credentials, "
                       "write an access token to token_file)",
                       type);
    if (json_need_string(doc, "$", "client_email", &k->client_email, e) ||
        json_need_string(doc, "$", "private_key", &k->private_key, e) ||
        json_get_string(doc, "$", "private_key_id", &k->private_key_id, e) < 0 ||
        json_get_string(doc, "$", "token_uri", &k->token_uri, e) < 0)
        return -1;
    if (!k->token_uri)
        k->token_uri = PUBSUB_DEFAULT_TOKEN_URI;
    if (strncmp(k->token_uri, "https://", 8) != 0 && strncmp(k->token_uri, "http://", 7) != 0)
        return err_set(e, ERR_CONFIG, "$.token_uri: want an http:// or https:// URL");
    return 0;
}

static EVP_PKEY *read_key(const char *pem, struct err *e)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!key) {
        err_set(e, ERR_CONFIG, "$.private_key: want a PEM private key");
        return NULL;
    }
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        err_set(e, ERR_CONFIG, "$.private_key: want an RSA key (RS256)");
        return NULL;
    }
    return key;
}

static char *sign_jwt(EVP_PKEY *key, const struct pubsub_key *k, long long now, struct err *e)
{
    json_t *hdr = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
    if (k->private_key_id)
        json_object_set_new(hdr, "kid", json_string(k->private_key_id));
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", k->client_email, "scope",
                               PUBSUB_SCOPES, "aud", k->token_uri, "iat", (json_int_t)now, "exp",
                               (json_int_t)(now + PUBSUB_TOKEN_LIFETIME));
    char *h = json_dumps(hdr, JSON_COMPACT), *c = json_dumps(claims, JSON_COMPACT);
    json_decref(hdr);
    json_decref(claims);
    char *hb = b64_str(h), *cb = b64_str(c);
    free(h);
    free(c);
    struct buf out;
    buf_init(&out);
    buf_printf(&out, "%s.%s", hb, cb);
    free(hb);
    free(cb);

    unsigned char *sig = NULL;
    size_t siglen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
             EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)out.data, out.len) == 1 &&
             (sig = xmalloc(siglen)) != NULL &&
             EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)out.data, out.len) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        free(sig);
        buf_free(&out);
        err_set(e, ERR_INTERNAL, "signing the token request with OpenSSL failed");
        return NULL;
    }
    char *sb = pubsub_base64url(sig, siglen);
    free(sig);
    buf_printf(&out, ".%s", sb);
    free(sb);
    return buf_steal(&out);
}

char *pubsub_jwt(const char *pem, const struct pubsub_key *k, long long now, struct err *e)
{
    EVP_PKEY *key = read_key(pem, e);
    if (!key)
        return NULL;
    char *jwt = sign_jwt(key, k, now, e);
    EVP_PKEY_free(key);
    return jwt;
}

/* ---- configuration ---- */

void pubsub_auth_free(struct pubsub_auth *a)
{
    if (!a)
        return;
    EVP_PKEY_free(a->key);
    free(a->client_email);
    free(a->private_key_id);
    free(a->token_uri);
    wipe_free(a->token);
    free(a->token_file);
    free(a);
}

static int load_key(struct cfg_node *map, struct pubsub_auth *a, char *text, struct err *e)
{
    struct err je;
    err_clear(&je);
    json_t *doc = json_parse_body(text, strlen(text), "the key", &je);
    struct pubsub_key k;
    int rc = -1;
    /* jansson's messages quote no input, but a malformed key says only where it broke. */
    if (!doc)
        cfg_error(e, cfg_at(map, "credentials_file"),
                  "credentials: want a service-account key (JSON) in the file, it is not JSON");
    else if (pubsub_key_parse(doc, &k, &je) || !(a->key = read_key(k.private_key, &je)))
        cfg_error(e, cfg_at(map, "credentials_file"), "credentials: %s", je.msg);
    else
        rc = 0;
    if (rc == 0) {
        a->client_email = xstrdup(k.client_email);
        a->private_key_id = xstrdup(k.private_key_id);
        a->token_uri = xstrdup(k.token_uri);
        a->meta.client_email = a->client_email;
        a->meta.private_key_id = a->private_key_id;
        a->meta.token_uri = a->token_uri;
    }
    /* The document holds the private key too: wipe its strings before they are freed. */
    free_wiped(doc, "private_key");
    return rc;
}

int pubsub_auth_configure(struct cfg_node *map, struct pubsub_auth **out, struct err *e)
{
    *out = NULL;
    char *key_text = NULL, *token_file = NULL;
    struct cfg_node *kf = NULL, *ke = NULL;
    if (cfg_get_nonempty(map, "token_file", &token_file, e) ||
        cfg_get_node(map, "credentials_file", CFG_SCALAR, &kf, e) ||
        cfg_get_node(map, "credentials_env", CFG_SCALAR, &ke, e)) {
        free(token_file);
        return -1;
    }
    if (token_file && (kf || ke)) {
        free(token_file);
        return cfg_error(e, cfg_at(map, "token_file"),
                         "token_file: want either credentials_file or token_file, not both");
    }
    if (secret_get(map, "credentials", 0, &key_text, e)) {
        free(token_file);
        return -1;
    }
    if (!key_text && !token_file)
        return 0;
    struct pubsub_auth *a = xcalloc(1, sizeof *a);
    a->token_file = token_file;
    if (key_text && load_key(map, a, key_text, e)) {
        secret_free(key_text);
        pubsub_auth_free(a);
        return -1;
    }
    secret_free(key_text);
    *out = a;
    return 0;
}

/* ---- tokens ---- */

void pubsub_auth_invalidate(struct pubsub_auth *a)
{
    if (a && a->key) {
        wipe_free(a->token);
        a->token = NULL;
        a->token_expires = 0;
    }
}

static int read_token_file(struct pubsub_auth *a, struct err *e)
{
    size_t len = 0;
    char *t = text_read_file(a->token_file, TOKEN_FILE_MAX, &len);
    if (!t)
        return err_set(e, ERR_AUTH, "token_file \"%s\": %s", a->token_file,
                       errno == EFBIG ? "larger than 16384 bytes" : text_read_error(errno));
    size_t n = strlen(t);
    if (n != len) {
        wipe_free(t);
        return err_set(e, ERR_AUTH, "token_file \"%s\" contains a NUL byte", a->token_file);
    }
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
        t[--n] = '\0';
    /* A token is one line of printable characters; anything else would corrupt the header. */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x21 || (unsigned char)t[i] > 0x7e) {
            wipe_free(t);
            return err_set(e, ERR_AUTH, "token_file \"%s\": want one line holding a token",
                           a->token_file);
        }
    if (n == 0) {
        wipe_free(t);
        return err_set(e, ERR_AUTH, "token_file \"%s\" is empty", a->token_file);
    }
    wipe_free(a->token);
    a->token = t;
    return 0;
}

/* The grant's own error code and description ("invalid_grant: Invalid JWT Signature."): Google
 * documents them as safe to show; nothing else of the reply is quoted. */
static void grant_error(const struct http_response *r, char *out, size_t cap)
{
    struct err ignored;
    json_t *doc = json_parse_body(r->body, r->len, "token", &ignored);
    const char *code = NULL, *desc = NULL;
    if (doc && json_is_object(doc)) {
        json_t *v = json_object_get(doc, "error");
        code = json_is_string(v) ? json_string_value(v) : NULL;
        v = json_object_get(doc, "error_description");
        desc = json_is_string(v) ? json_string_value(v) : NULL;
    }
    snprintf(out, cap, "%.60s%s%.120s", code ? code : "no error code", desc ? ": " : "",
             desc ? desc : "");
    json_decref(doc);
}

static int fetch_token(struct pubsub_auth *a, struct http_client *http, const struct deadline *dl,
                       double now, struct err *e)
{
    char *jwt = sign_jwt(a->key, &a->meta, (long long)now, e);
    if (!jwt)
        return -1;
    struct buf body;
    buf_init(&body);
    buf_printf(&body,
               "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
               "&assertion=%s",
               jwt);
    wipe_free(jwt);
    static const char *const headers[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    struct http_request req = {.method = "POST",
                               .url = a->token_uri,
                               .headers = headers,
                               .body = body.data,
                               .body_len = body.len,
                               .accept_any_status = 1};
    struct http_response resp = {0};
    int rc = http_do(http, &req, dl, &resp, e);
    memset(body.data, 0, body.len);
    buf_free(&body);
    if (rc)
        return err_prefix(e, "token exchange");
    rc = -1;
    if (resp.status < 200 || resp.status > 299) {
        char why[200];
        grant_error(&resp, why, sizeof why);
        err_set(e, ERR_AUTH, "token exchange for %s refused with HTTP %ld (%s)", a->client_email,
                resp.status, why);
        goto out;
    }
    json_t *doc = json_parse_body(resp.body, resp.len, "token exchange", e);
    const char *tok = NULL;
    double expires_in = 0;
    if (doc && json_expect_object(doc, "$", e) == 0 &&
        json_need_string(doc, "$", "access_token", &tok, e) == 0 &&
        json_need_number(doc, "$", "expires_in", &expires_in, e) == 0) {
        if (!*tok) {
            err_set(e, ERR_PROTOCOL, "token exchange: $.access_token is empty");
        } else {
            wipe_free(a->token);
            a->token = xstrdup(tok);
            a->token_expires = now + expires_in - PUBSUB_TOKEN_MARGIN;
            rc = 0;
        }
    } else if (doc) {
        err_prefix(e, "token exchange");
    }
    free_wiped(doc, "access_token");
out:
    if (resp.body)
        memset(resp.body, 0, resp.len);
    http_response_free(&resp);
    return rc;
}

int pubsub_auth_token(struct pubsub_auth *a, struct http_client *http, const struct deadline *dl,
                      double now, const char **token, struct err *e)
{
    *token = NULL;
    if (!a)
        return 0;
    if (a->token_file) {
        if (read_token_file(a, e))
            return -1;
    } else if (!a->token || now >= a->token_expires) {
        if (fetch_token(a, http, dl, now, e))
            return -1;
    }
    *token = a->token;
    return 0;
}
