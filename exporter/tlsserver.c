/* tlsserver.c: see tlsserver.h. MHD gives every session its own daemon-wide credentials; the
 * hook replaces them with ours (gnutls_credentials_set) before the handshake, which is what lets
 * a new certificate reach new connections without restarting the daemon. */
#include "tlsserver.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "deadline.h"
#include "log.h"
#include "text.h"

#define TLSSERVER_MAX_PEM (1024 * 1024)
#define TLSSERVER_CHECK_EVERY_MS 1000

struct creds {
    gnutls_certificate_credentials_t cred;
    int refs; /* the server's own plus one per open connection */
};

struct tlsserver {
    pthread_mutex_t mu; /* guards everything below */
    const struct webconfig *w;
    struct creds *cur;
    /* the files as last looked at (loaded or refused); ca_seen stays zero without client_ca_file */
    struct stat cert_seen, key_seen, ca_seen;
    long long next_check_ms;
};

/* A pair and the client CAs (client_ca: PEM, or NULL without client_ca_file) as credentials, or
 * NULL with why. GnuTLS refuses a key that does not match the certificate. */
static struct creds *creds_load(const char *cert, const char *key, const char *client_ca,
                                const char **why)
{
    gnutls_certificate_credentials_t c;
    if (gnutls_certificate_allocate_credentials(&c) != 0) {
        *why = "out of memory";
        return NULL;
    }
    gnutls_datum_t cd = {(unsigned char *)cert, (unsigned)strlen(cert)};
    gnutls_datum_t kd = {(unsigned char *)key, (unsigned)strlen(key)};
    int rc = gnutls_certificate_set_x509_key_mem(c, &cd, &kd, GNUTLS_X509_FMT_PEM);
    if (rc >= 0 && client_ca) {
        gnutls_datum_t ca = {(unsigned char *)client_ca, (unsigned)strlen(client_ca)};
        rc = gnutls_certificate_set_x509_trust_mem(c, &ca, GNUTLS_X509_FMT_PEM);
        if (rc == 0)
            rc = GNUTLS_E_NO_CERTIFICATE_FOUND; /* a client_ca_file with no certificate */
    }
    if (rc < 0) {
        *why = gnutls_strerror(rc);
        gnutls_certificate_free_credentials(c);
        return NULL;
    }
    struct creds *cr = xcalloc(1, sizeof *cr);
    cr->cred = c;
    cr->refs = 1;
    return cr;
}

static void creds_unref(struct creds *c)
{
    if (c && --c->refs == 0) {
        gnutls_certificate_free_credentials(c->cred);
        free(c);
    }
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* stat of path into *st; a missing path (no client_ca_file) is a zeroed stat and success. */
static int look(const char *path, struct stat *st)
{
    memset(st, 0, sizeof *st);
    return path && stat(path, st) != 0 ? -1 : 0;
}

/* Under t->mu: at most once a second, the pair and the client CAs again when a file changed (as
 * cert-manager rotates a certificate together with its CA bundle). */
static void maybe_reload(struct tlsserver *t)
{
    long long now = deadline_now_ms();
    const struct webconfig *w = t->w;
    if (now < t->next_check_ms || !w->cert_path || !w->key_path)
        return;
    t->next_check_ms = now + TLSSERVER_CHECK_EVERY_MS;
    struct stat cs, ks, as;
    if (look(w->cert_path, &cs) || look(w->key_path, &ks) || look(w->client_ca_path, &as)) {
        memset(&cs, 0, sizeof cs); /* unreadable: try again once it is back */
        if (!same_file(&cs, &t->cert_seen))
            log_kv(LOG_WARN,
                   "cannot read the TLS certificate, key or client CAs again; keeping the ones in "
                   "use",
                   "err", text_read_error(errno), NULL);
        t->cert_seen = cs;
        return;
    }
    if (same_file(&cs, &t->cert_seen) && same_file(&ks, &t->key_seen) &&
        same_file(&as, &t->ca_seen))
        return;
    t->cert_seen = cs;
    t->key_seen = ks;
    t->ca_seen = as;
    char *cert = text_read_file(w->cert_path, TLSSERVER_MAX_PEM, NULL);
    char *key = text_read_file(w->key_path, TLSSERVER_MAX_PEM, NULL);
    char *ca =
        w->client_ca_path ? text_read_file(w->client_ca_path, TLSSERVER_MAX_PEM, NULL) : NULL;
    const char *why = cert && key && (ca || !w->client_ca_path) ? NULL : text_read_error(errno);
    struct creds *c = why ? NULL : creds_load(cert, key, ca, &why);
    if (key)
        memset(key, 0, strlen(key));
    free(cert);
    free(key);
    free(ca);
    if (!c) {
        log_kv(
            LOG_WARN,
            "the changed TLS certificate, key or client CAs do not load; keeping the ones in use",
            "cert_file", w->cert_path, "err", why, NULL);
        return;
    }
    creds_unref(t->cur);
    t->cur = c;
    log_kv(LOG_INFO, "TLS certificate, key and client CAs read again", "cert_file", w->cert_path,
           NULL);
}

struct tlsserver *tlsserver_new(const struct webconfig *w)
{
    if (!w || !w->cert_pem)
        return NULL;
    const char *why;
    struct creds *c = creds_load(w->cert_pem, w->key_pem, w->client_ca_pem, &why);
    if (!c)
        return NULL;
    struct tlsserver *t = xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    t->w = w;
    t->cur = c;
    /* What was read at load time is current; a change from now on is a rotation. */
    if (w->cert_path && stat(w->cert_path, &t->cert_seen) != 0)
        memset(&t->cert_seen, 0, sizeof t->cert_seen);
    if (w->key_path && stat(w->key_path, &t->key_seen) != 0)
        memset(&t->key_seen, 0, sizeof t->key_seen);
    if (look(w->client_ca_path, &t->ca_seen) != 0)
        memset(&t->ca_seen, 0, sizeof t->ca_seen);
    t->next_check_ms = deadline_now_ms() + TLSSERVER_CHECK_EVERY_MS;
    return t;
}

void tlsserver_free(struct tlsserver *t)
{
    if (!t)
        return;
    creds_unref(t->cur);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* Accepts a client certificate only when one was sent: RequireAnyClientCert. */
static int any_cert(gnutls_session_t s)
{
    unsigned n = 0;
    return gnutls_certificate_get_peers(s, &n) && n ? 0 : -1;
}

/* A certificate verified against client_ca_file; without one, what if_none says. */
static int verify_cert(gnutls_session_t s, int if_none)
{
    unsigned n = 0, status = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0)
        return if_none;
    return gnutls_certificate_verify_peers2(s, &status) == 0 && status == 0 ? 0 : -1;
}

static int verify_required(gnutls_session_t s)
{
    return verify_cert(s, -1);
}

static int verify_if_given(gnutls_session_t s)
{
    return verify_cert(s, 0);
}

void tlsserver_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    struct tlsserver *t = cls;
    if (!t)
        return;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        pthread_mutex_lock(&t->mu);
        creds_unref(*socket_context);
        pthread_mutex_unlock(&t->mu);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session)
        return;
    gnutls_session_t s = info->tls_session;
    pthread_mutex_lock(&t->mu);
    maybe_reload(t);
    struct creds *c = t->cur;
    c->refs++;
    pthread_mutex_unlock(&t->mu);
    *socket_context = c;
    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, c->cred);
    switch (t->w->client_auth) {
    case WEBCONFIG_NO_CLIENT_CERT:
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE);
        break;
    case WEBCONFIG_REQUIRE_ANY_CLIENT_CERT:
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(s, any_cert);
        break;
    case WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN:
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
        gnutls_session_set_verify_function(s, verify_if_given);
        break;
    case WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT:
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(s, verify_required);
        break;
    }
}
