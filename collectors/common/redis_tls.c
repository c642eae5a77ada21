/* redis_tls.c: GnuTLS sessions over the non-blocking sockets of redis.c (redis_tls.h).
 *
 * The handshake waits with deadline_wait_fd in the direction GnuTLS asks for, so it is bounded
 * by the same deadline as every read. Credentials are loaded when a connection opens (they are
 * few, and a certificate renewed on disk is then picked up by the next connection); the config
 * check loads them once beforehand so a wrong path fails at --config.check, not at a scrape. */
#include "common/redis_tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "log.h"

/* What one recv() may bring in for GnuTLS. GnuTLS asks its transport for a record's 5-byte header
 * and then for its body, two recv() calls a record; Redis writes a large pipeline's replies in
 * many records, so reading from the socket in large pieces and handing GnuTLS what it asks for
 * from here saves most of those system calls. */
#define TLS_READ_AHEAD 65536

struct redis_tls {
    gnutls_session_t session;
    gnutls_certificate_credentials_t cred;
    const char *label;
    int has_cert; /* tls_config has a client certificate */
    int fd;
    size_t ahead_off, ahead_len; /* what ahead holds that GnuTLS has not taken yet */
    char ahead[TLS_READ_AHEAD];
};

/* GnuTLS's pull function: from what was read ahead, else one recv() of up to TLS_READ_AHEAD. */
static ssize_t pull_ahead(gnutls_transport_ptr_t ptr, void *data, size_t size)
{
    struct redis_tls *t = ptr;
    if (t->ahead_off == t->ahead_len) {
        ssize_t r = recv(t->fd, t->ahead, sizeof t->ahead, 0);
        if (r <= 0) {
            if (r < 0)
                gnutls_transport_set_errno(t->session, errno);
            return r;
        }
        t->ahead_off = 0;
        t->ahead_len = (size_t)r;
    }
    size_t k = t->ahead_len - t->ahead_off < size ? t->ahead_len - t->ahead_off : size;
    memcpy(data, t->ahead + t->ahead_off, k);
    t->ahead_off += k;
    return (ssize_t)k;
}

static ssize_t push_fd(gnutls_transport_ptr_t ptr, const void *data, size_t size)
{
    struct redis_tls *t = ptr;
    ssize_t w = send(t->fd, data, size, MSG_NOSIGNAL);
    if (w < 0)
        gnutls_transport_set_errno(t->session, errno);
    return w;
}

static int is_ip_literal(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* Why a verification failed, in GnuTLS's words ("The certificate is NOT trusted. The certificate
 * chain uses expired certificate."). */
static int verify_error(struct redis_tls *t, struct err *e)
{
    unsigned status = gnutls_session_get_verify_cert_status(t->session);
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) < 0 ||
        !out.data)
        return err_set(e, ERR_CONNECT, "%s: TLS: the server's certificate failed verification",
                       t->label);
    size_t n = strlen((const char *)out.data);
    while (n && out.data[n - 1] == ' ') /* GnuTLS ends each sentence with a space */
        n--;
    err_set(e, ERR_CONNECT, "%s: TLS: the server's certificate failed verification: %.*s", t->label,
            (int)n, (const char *)out.data);
    gnutls_free(out.data);
    return -1;
}

/* The server asked for a client certificate and we had none. In TLS 1.3 the server judges the
 * client's certificate after the client's handshake is done, so its refusal comes on the first
 * write or read: as an alert, or, when the connection is reset before the alert is read, as a
 * bare error. Either way this is the reason worth saying. */
static int missing_client_cert(const struct redis_tls *t)
{
    return !t->has_cert && gnutls_certificate_client_get_request_status(t->session);
}

/* A GnuTLS error as a message: an alert the server sent is named. */
static int tls_error(struct redis_tls *t, const char *when, int rc, struct err *e)
{
    if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)
        return verify_error(t, e);
    if (missing_client_cert(t))
        return err_set(e, ERR_CONNECT,
                       "%s: TLS %s: the server asked for a client certificate and tls_config has "
                       "none (cert_file, key_file): %s",
                       t->label, when,
                       rc == GNUTLS_E_FATAL_ALERT_RECEIVED
                           ? gnutls_alert_get_name(gnutls_alert_get(t->session))
                           : gnutls_strerror(rc));
    if (rc == GNUTLS_E_FATAL_ALERT_RECEIVED || rc == GNUTLS_E_WARNING_ALERT_RECEIVED)
        return err_set(e, ERR_CONNECT, "%s: TLS %s: the server refused: alert \"%s\"", t->label,
                       when, gnutls_alert_get_name(gnutls_alert_get(t->session)));
    return err_set(e, ERR_CONNECT, "%s: TLS %s: %s", t->label, when, gnutls_strerror(rc));
}

struct redis_tls *redis_tls_open(const struct tls_config *cfg, int fd, const char *host,
                                 const char *label, const struct deadline *dl, struct err *e)
{
    struct redis_tls *t = xcalloc(1, sizeof *t);
    t->label = label;
    t->has_cert = cfg->cert_file != NULL;
    const char *key = NULL;
    char msg[400];
    if (tls_load_credentials(cfg, &t->cred, &key, msg, sizeof msg)) {
        err_set(e, ERR_CONNECT, "%s: tls_config: %s: %s", label, key, msg);
        free(t);
        return NULL;
    }
    const char *name = cfg->server_name ? cfg->server_name : host;
    int rc = gnutls_init(&t->session, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    if (rc >= 0)
        rc = gnutls_set_default_priority(t->session);
    if (rc >= 0)
        rc = gnutls_credentials_set(t->session, GNUTLS_CRD_CERTIFICATE, t->cred);
    /* SNI carries a host name only, never an address literal (RFC 6066). */
    if (rc >= 0 && name && !is_ip_literal(name))
        rc = gnutls_server_name_set(t->session, GNUTLS_NAME_DNS, name, strlen(name));
    if (rc < 0) {
        err_set(e, ERR_INTERNAL, "%s: TLS setup: %s", label, gnutls_strerror(rc));
        redis_tls_close(t);
        return NULL;
    }
    if (!cfg->insecure_skip_verify)
        gnutls_session_set_verify_cert(t->session, name, 0);
    else /* said at each connection (they are few): encryption without knowing who answers */
        log_kv(LOG_WARN, "TLS certificate not verified (insecure_skip_verify)", "conn", label,
               NULL);
    t->fd = fd;
    gnutls_transport_set_ptr(t->session, t);
    gnutls_transport_set_pull_function(t->session, pull_ahead);
    gnutls_transport_set_push_function(t->session, push_fd);
    int64_t t0 = deadline_now_ms();
    for (;;) {
        rc = gnutls_handshake(t->session);
        if (rc == GNUTLS_E_SUCCESS)
            return t;
        if (rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED && gnutls_error_is_fatal(rc)) {
            tls_error(t, "handshake", rc, e);
            break;
        }
        short revents = 0;
        short want = gnutls_record_get_direction(t->session) ? POLLOUT : POLLIN;
        int n = deadline_wait_fd(fd, want, dl, &revents);
        if (n == 0) {
            err_set(e, ERR_TIMEOUT, "%s: timed out after %lld ms waiting for Redis (TLS handshake)",
                    label, (long long)(deadline_now_ms() - t0));
            break;
        }
        if (n < 0) {
            err_set(e, ERR_CONNECT, "%s: TLS handshake: poll: %s", label, strerror(errno));
            break;
        }
    }
    redis_tls_close(t);
    return NULL;
}

void redis_tls_close(struct redis_tls *t)
{
    if (!t)
        return;
    if (t->session)
        gnutls_deinit(t->session);
    if (t->cred)
        gnutls_certificate_free_credentials(t->cred);
    free(t);
}

ssize_t redis_tls_send(struct redis_tls *t, const void *p, size_t n, struct err *e)
{
    ssize_t w = gnutls_record_send(t->session, p, n);
    if (w >= 0)
        return w;
    if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
        return REDIS_TLS_AGAIN;
    return tls_error(t, "write", (int)w, e);
}

ssize_t redis_tls_recv(struct redis_tls *t, void *p, size_t n, struct err *e)
{
    ssize_t r = gnutls_record_recv(t->session, p, n);
    if (r >= 0)
        return r;
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
        return REDIS_TLS_AGAIN;
    /* A server that closes without close_notify (Redis on a restart or an idle timeout) closed
     * the connection all the same: the caller's stale-connection reconnect must see it so. */
    if (r == GNUTLS_E_PREMATURE_TERMINATION && !missing_client_cert(t))
        return 0;
    return tls_error(t, "read", (int)r, e);
}

size_t redis_tls_pending(const struct redis_tls *t)
{
    return gnutls_record_check_pending(t->session) + (t->ahead_len - t->ahead_off);
}
