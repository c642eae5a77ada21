/* webconfig.c: see webconfig.h. bcrypt is checked with crypt_r from libcrypt (libxcrypt), which
 * supports the $2a$, $2b$ and $2y$ forms htpasswd and the Prometheus docs produce.
 *
 * Basic auth is built to give nothing away by timing and to survive a crowd of bad passwords:
 * every attempt runs one bcrypt (an unknown user against the costliest configured hash), at most
 * WEBCONFIG_BCRYPT_SLOTS run at once so they cannot take every core from the other requests, and
 * a success is cached (salted SHA-256 of user and password, never the password itself) so a
 * scraper that logged in once costs a hash lookup per request. */
#include "webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config.h"
#include "alloc.h"
#include "buf.h"
#include "text.h"

#define WEBCONFIG_MAX_PEM (1024 * 1024)
#define WEBCONFIG_CACHE_SLOTS 16
#define WEBCONFIG_CACHE_TTL_S 300
#define WEBCONFIG_BCRYPT_SLOTS 2
/* Credentials longer than this are refused before any work (bcrypt reads at most 72 bytes). */
#define WEBCONFIG_MAX_CREDENTIALS 1024

const char webconfig_default_priorities[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE";

struct cache_entry {
    unsigned char digest[32];
    time_t expires;
};

struct webconfig_auth {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int bcrypt_running;
    unsigned char salt[16];
    struct cache_entry cache[WEBCONFIG_CACHE_SLOTS];
    size_t next;            /* the slot the next success replaces */
    const char *dummy_hash; /* the costliest user hash: what an unknown user is checked against */
};

static char *resolve(const char *base, const char *p)
{
    if (p[0] == '/')
        return xstrdup(p);
    const char *slash = strrchr(base, '/');
    if (!slash)
        return xstrdup(p);
    return xasprintf("%.*s/%s", (int)(slash - base), base, p);
}

/* The PEM file named by key into *out, and its resolved path into *path_out when not NULL. An
 * absent key is an error when required, else leaves *out NULL. */
static int read_pem(const char *base, struct cfg_node *map, const char *key, int required,
                    char **out, char **path_out, struct err *e)
{
    char *rel = NULL;
    struct cfg_node *at = NULL;
    if (cfg_get_str(map, key, required, &rel, e) || cfg_get_node(map, key, CFG_SCALAR, &at, e)) {
        free(rel);
        return -1;
    }
    if (!rel)
        return 0;
    char *path = resolve(base, rel);
    free(rel);
    *out = text_read_file(path, WEBCONFIG_MAX_PEM, NULL);
    if (!*out) {
        cfg_error(e, at, "%s: cannot read \"%s\": %s", key, path, text_read_error(errno));
        free(path);
        return -1;
    }
    if (path_out)
        *path_out = path;
    else
        free(path);
    return 0;
}

/* client_auth_type and client_ca_file, judged as exporter-toolkit does: a CA file needs a policy
 * that asks for certificates, and the verifying policies need a CA to verify against. */
static int client_auth(const char *base, struct cfg_node *tls, struct webconfig *w, struct err *e)
{
    static const char *const names[] = {
        [WEBCONFIG_NO_CLIENT_CERT] = "NoClientCert",
        [WEBCONFIG_REQUIRE_ANY_CLIENT_CERT] = "RequireAnyClientCert",
        [WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN] = "VerifyClientCertIfGiven",
        [WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT] = "RequireAndVerifyClientCert",
    };
    char *type = NULL;
    if (cfg_get_str(tls, "client_auth_type", 0, &type, e) ||
        read_pem(base, tls, "client_ca_file", 0, &w->client_ca_pem, &w->client_ca_path, e)) {
        free(type);
        return -1;
    }
    w->client_auth = WEBCONFIG_NO_CLIENT_CERT;
    if (type) {
        size_t k;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(type, names[k]) == 0)
                break;
        if (k == sizeof names / sizeof names[0]) {
            cfg_error(e, cfg_at(tls, "client_auth_type"),
                      "client_auth_type: want NoClientCert, RequireAnyClientCert, "
                      "VerifyClientCertIfGiven or RequireAndVerifyClientCert, got \"%.80s\"",
                      type);
            free(type);
            return -1;
        }
        w->client_auth = (enum webconfig_client_auth)k;
        free(type);
    }
    if (w->client_ca_pem && w->client_auth == WEBCONFIG_NO_CLIENT_CERT)
        return cfg_error(e, cfg_at(tls, "client_ca_file"),
                         "client_ca_file: set client_auth_type too (it is NoClientCert, so the CA "
                         "would never be used)");
    if (!w->client_ca_pem && (w->client_auth == WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN ||
                              w->client_auth == WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT))
        return cfg_error(e, cfg_at(tls, "client_auth_type"),
                         "client_auth_type: %s needs client_ca_file to verify against",
                         names[w->client_auth]);
    return 0;
}

static int is_bcrypt(const char *h)
{
    return strlen(h) == 60 && h[0] == '$' && h[1] == '2' && strchr("aby", h[2]) && h[3] == '$';
}

/* exporter-toolkit's cipher suite names (Go's crypto/tls), the AEAD ones, as GnuTLS items. */
static const struct {
    const char *name;
    const char *kx, *cipher;
} suites[] = {
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305"},
};

static void add_item(struct buf *b, const char *item)
{
    char tok[64];
    snprintf(tok, sizeof tok, ":+%s:", item);
    /* Each kx or cipher once: the check looks for ":+X:" in the list built so far. */
    if (!b->data || !strstr(b->data, tok))
        buf_printf(b, "+%s:", item);
}

/* min_version and cipher_suites as a GnuTLS priority string. GnuTLS takes key exchanges and
 * ciphers as two sets, so a list of suites allows every pairing of their kx and ciphers. */
static int tls_priorities(struct cfg_node *tls, char **out, struct err *e)
{
    char *minv = NULL;
    char **names = NULL;
    size_t n = 0;
    if (cfg_get_str(tls, "min_version", 0, &minv, e) ||
        cfg_get_strlist(tls, "cipher_suites", &names, &n, e)) {
        free(minv);
        return -1;
    }
    const char *versions = "+VERS-TLS1.3:+VERS-TLS1.2";
    if (minv && strcmp(minv, "TLS13") == 0) {
        versions = "+VERS-TLS1.3";
    } else if (minv && strcmp(minv, "TLS12") != 0) {
        char q[200];
        snprintf(q, sizeof q, "%.160s", minv);
        free(minv);
        cfg_strv_free(names);
        return cfg_error(e, cfg_at(tls, "min_version"),
                         "min_version: want TLS12 or TLS13 (TLS 1.0 and 1.1 are not offered), "
                         "got \"%s\"",
                         q);
    }
    free(minv);
    if (!names) {
        *out = xstrdup(webconfig_default_priorities);
        if (strcmp(versions, "+VERS-TLS1.3") == 0) {
            free(*out);
            *out = xasprintf("NORMAL:-VERS-ALL:%s:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"
                             "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
                             "%%SERVER_PRECEDENCE",
                             versions);
        }
        return 0;
    }
    struct buf kx, ciphers;
    buf_init(&kx);
    buf_init(&ciphers);
    buf_putc(&kx, ':');
    buf_putc(&ciphers, ':');
    for (size_t i = 0; i < n; i++) {
        size_t k;
        for (k = 0; k < sizeof suites / sizeof suites[0]; k++)
            if (strcmp(names[i], suites[k].name) == 0)
                break;
        if (k == sizeof suites / sizeof suites[0]) {
            struct cfg_node *list = cfg_at(tls, "cipher_suites");
            cfg_error(e, list->kind == CFG_SEQ ? list->items[i] : list,
                      "cipher_suites: want an AEAD suite with ECDHE such as "
                      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, got \"%.120s\"",
                      names[i]);
            buf_free(&kx);
            buf_free(&ciphers);
            cfg_strv_free(names);
            return -1;
        }
        add_item(&kx, suites[k].kx);
        add_item(&ciphers, suites[k].cipher);
    }
    if (n == 0) {
        cfg_error(e, cfg_at(tls, "cipher_suites"), "cipher_suites: want at least one suite");
        buf_free(&kx);
        buf_free(&ciphers);
        cfg_strv_free(names);
        return -1;
    }
    /* Drop the leading ':' and the trailing one of each list. */
    kx.data[kx.len - 1] = '\0';
    ciphers.data[ciphers.len - 1] = '\0';
    *out =
        xasprintf("NORMAL:-VERS-ALL:%s:-CIPHER-ALL%s:-MAC-ALL:+AEAD:-KX-ALL%s:%%SERVER_PRECEDENCE",
                  versions, ciphers.data, kx.data);
    buf_free(&kx);
    buf_free(&ciphers);
    cfg_strv_free(names);
    return 0;
}

static struct webconfig_auth *auth_new(const struct webconfig *w)
{
    struct webconfig_auth *a = xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (gnutls_rnd(GNUTLS_RND_NONCE, a->salt, sizeof a->salt) != 0) {
        /* Without randomness the salt only guards against precomputation less well. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        memcpy(a->salt, &ts, sizeof ts < sizeof a->salt ? sizeof ts : sizeof a->salt);
    }
    /* "$2y$NN$": the cost is the two digits; the costliest hash makes the slowest check. */
    int best = -1;
    for (size_t i = 0; i < w->nusers; i++) {
        int cost = (w->users[i].hash[4] - '0') * 10 + (w->users[i].hash[5] - '0');
        if (cost > best) {
            best = cost;
            a->dummy_hash = w->users[i].hash;
        }
    }
    return a;
}

struct webconfig *webconfig_load(const char *path, struct err *e)
{
    struct cfg_doc *doc = cfg_parse_file(path, e);
    if (!doc)
        return NULL;
    struct webconfig *w = xcalloc(1, sizeof *w);
    struct cfg_node *root = cfg_doc_root(doc), *tls = NULL, *users = NULL;
    if (cfg_get_node(root, "tls_server_config", CFG_MAP, &tls, e) ||
        cfg_get_node(root, "basic_auth_users", CFG_MAP, &users, e))
        goto fail;
    if (tls && (read_pem(path, tls, "cert_file", 1, &w->cert_pem, &w->cert_path, e) ||
                read_pem(path, tls, "key_file", 1, &w->key_pem, &w->key_path, e) ||
                client_auth(path, tls, w, e) || tls_priorities(tls, &w->tls_priorities, e) ||
                cfg_finish(tls, "tls_server_config", e)))
        goto fail;
    for (size_t i = 0; users && i < users->n; i++) {
        struct cfg_pair *p = &users->pairs[i];
        p->known = 1;
        if (p->value->kind != CFG_SCALAR || !is_bcrypt(p->value->scalar)) {
            /* Never quote the value: even a hash should not travel into logs. */
            cfg_error(e, p->value, "basic_auth_users: %s: want a bcrypt hash ($2y$...)", p->key);
            goto fail;
        }
        w->users = xrealloc(w->users, (w->nusers + 1) * sizeof *w->users);
        w->users[w->nusers].name = xstrdup(p->key);
        w->users[w->nusers].hash = xstrdup(p->value->scalar);
        w->nusers++;
    }
    if (cfg_finish(root, "the web config file", e))
        goto fail;
    w->auth = auth_new(w);
    cfg_doc_free(doc);
    return w;
fail:
    cfg_doc_free(doc);
    webconfig_free(w);
    return NULL;
}

void webconfig_free(struct webconfig *w)
{
    if (!w)
        return;
    free(w->cert_pem);
    free(w->key_pem);
    free(w->cert_path);
    free(w->key_path);
    free(w->client_ca_pem);
    free(w->client_ca_path);
    free(w->tls_priorities);
    for (size_t i = 0; i < w->nusers; i++) {
        free(w->users[i].name);
        free(w->users[i].hash);
    }
    free(w->users);
    if (w->auth) {
        pthread_mutex_destroy(&w->auth->mu);
        pthread_cond_destroy(&w->auth->cv);
        free(w->auth);
    }
    free(w);
}

/* Equal strings, in a time that depends on their lengths only. */
static int same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

/* One bcrypt, waiting for a free slot first. */
static int bcrypt_matches(struct webconfig_auth *a, const char *password, const char *hash)
{
    pthread_mutex_lock(&a->mu);
    while (a->bcrypt_running >= WEBCONFIG_BCRYPT_SLOTS)
        pthread_cond_wait(&a->cv, &a->mu);
    a->bcrypt_running++;
    pthread_mutex_unlock(&a->mu);

    struct crypt_data *cd = xcalloc(1, sizeof *cd);
    const char *h = crypt_r(password, hash, cd);
    int ok = h && same(h, hash);
    memset(cd, 0, sizeof *cd);
    free(cd);

    pthread_mutex_lock(&a->mu);
    a->bcrypt_running--;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return ok;
}

int webconfig_check_user(const struct webconfig *w, const char *user, const char *password)
{
    if (!w->nusers || !w->auth)
        return 0;
    /* Every user is compared, so the position of a match does not show either. */
    const char *hash = NULL;
    for (size_t i = 0; i < w->nusers; i++)
        if (same(w->users[i].name, user) && !hash)
            hash = w->users[i].hash;
    int known = hash != NULL;
    int ok = bcrypt_matches(w->auth, password, known ? hash : w->auth->dummy_hash);
    return known && ok;
}

static void credentials_digest(const struct webconfig_auth *a, const char *cred, size_t len,
                               unsigned char out[32])
{
    struct buf b;
    buf_init(&b);
    buf_append(&b, a->salt, sizeof a->salt);
    buf_append(&b, cred, len);
    gnutls_hash_fast(GNUTLS_DIG_SHA256, b.data, b.len, out);
    memset(b.data, 0, b.len);
    buf_free(&b);
}

static int cache_has(struct webconfig_auth *a, const unsigned char d[32])
{
    time_t now = time(NULL);
    int hit = 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < WEBCONFIG_CACHE_SLOTS; i++) {
        unsigned char diff = 0;
        for (size_t k = 0; k < 32; k++)
            diff |= (unsigned char)(a->cache[i].digest[k] ^ d[k]);
        hit |= diff == 0 && a->cache[i].expires > now;
    }
    pthread_mutex_unlock(&a->mu);
    return hit;
}

static void cache_put(struct webconfig_auth *a, const unsigned char d[32])
{
    pthread_mutex_lock(&a->mu);
    struct cache_entry *c = &a->cache[a->next];
    a->next = (a->next + 1) % WEBCONFIG_CACHE_SLOTS;
    memcpy(c->digest, d, 32);
    c->expires = time(NULL) + WEBCONFIG_CACHE_TTL_S;
    pthread_mutex_unlock(&a->mu);
}

int webconfig_authorize(const struct webconfig *w, const char *authorization)
{
    if (!authorization || !w->auth)
        return 0;
    const char *p = authorization;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "basic", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
        return 0;
    p += 5;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t len = strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len > WEBCONFIG_MAX_CREDENTIALS)
        return 0;
    unsigned char *cred = xmalloc(len / 4 * 3 + 2);
    long n = text_base64_decode(p, len, 1, cred);
    int ok = 0;
    unsigned char *colon = n > 0 ? memchr(cred, ':', (size_t)n) : NULL;
    /* A NUL would cut the user or password short in every C string below. */
    if (colon && !memchr(cred, '\0', (size_t)n)) {
        cred[n] = '\0';
        unsigned char d[32];
        credentials_digest(w->auth, (const char *)cred, (size_t)n, d);
        if (cache_has(w->auth, d)) {
            ok = 1;
        } else {
            *colon = '\0';
            ok = webconfig_check_user(w, (const char *)cred, (const char *)colon + 1);
            if (ok)
                cache_put(w->auth, d);
        }
    }
    if (n > 0)
        memset(cred, 0, (size_t)n);
    free(cred);
    return ok;
}
