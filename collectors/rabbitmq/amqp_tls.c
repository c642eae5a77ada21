/* amqp_tls.c: the TLS socket of `qrel dlq` on an amqps:// amqp_url (amqp_tls.h), over rabbitmq-c's
 * OpenSSL socket, from the same tls_config the management API uses (common/tls.h), whose files
 * --config.check has already loaded.
 *
 * rabbitmq-c 0.11 leaves two gaps, filled here through its SSL_CTX (the way common/http.c fills
 * libcurl's): it loads no CA at all without amqp_ssl_socket_set_cacert (not the system's), so
 * without ca_file the system's store is loaded here; and its own host check reads only the DNS
 * names of a certificate (not its IP addresses) and only against the URL's host, so it is turned
 * off and OpenSSL checks the name instead, server_name when set, else the host, as part of the
 * chain's verification (rabbitmq-c then refuses any verification error). A callback keeps the
 * first error, so the message says why a certificate was refused. */
#include "rabbitmq/amqp_tls.h"

#include <amqp_ssl_socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "common/tls.h"

/* Called by OpenSSL for each certificate of the chain; keeps the first refusal in the verdict
 * the SSL_CTX carries. The handshake goes on (rabbitmq-c's mode is SSL_VERIFY_NONE), and
 * rabbitmq-c refuses it after, from SSL_get_verify_result. */
static int note_refusal(int ok, X509_STORE_CTX *x)
{
    if (ok)
        return ok;
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct rabbitmq_tls_verdict *v = ssl ? SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)) : NULL;
    if (v && !v->error)
        v->error = X509_STORE_CTX_get_error(x);
    return ok;
}

amqp_socket_t *rabbitmq_amqp_tls_socket(amqp_connection_state_t conn, const struct tls_config *t,
                                        const char *host, const char *where,
                                        struct rabbitmq_tls_verdict *v, struct err *e)
{
    amqp_socket_t *sock = amqp_ssl_socket_new(conn);
    if (!sock) {
        err_set(e, ERR_INTERNAL, "%s: cannot make a TLS socket", where);
        return NULL;
    }
    SSL_CTX *ctx = amqp_ssl_socket_get_context(sock);
    int skip = t && t->insecure_skip_verify;
    if (t && t->ca_file) {
        if (amqp_ssl_socket_set_cacert(sock, t->ca_file) != AMQP_STATUS_OK) {
            err_set(e, ERR_CONFIG, "%s: tls_config: ca_file: OpenSSL cannot load \"%s\"", where,
                    t->ca_file);
            return NULL;
        }
    } else if (!skip && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        err_set(e, ERR_CONFIG, "%s: tls_config: cannot load the system's CA certificates", where);
        return NULL;
    }
    if (t && t->cert_file) {
        /* rabbitmq-c hands the pointer to OpenSSL's default password callback (the source's
         * tls_config outlives every connection); "" without one, since that callback asks on
         * the terminal when given none */
        amqp_ssl_socket_set_key_passwd(sock, t->key_password ? t->key_password : "");
        if (amqp_ssl_socket_set_key(sock, t->cert_file, t->key_file) != AMQP_STATUS_OK) {
            err_set(e, ERR_CONFIG,
                    "%s: tls_config: OpenSSL cannot load the certificate and key (\"%s\", "
                    "\"%s\")",
                    where, t->cert_file, t->key_file);
            return NULL;
        }
    }
    amqp_ssl_socket_set_verify_hostname(sock, 0); /* OpenSSL checks the name: see above */
    amqp_ssl_socket_set_verify_peer(sock, !skip);
    if (skip)
        return sock;
    const char *name = t && t->server_name ? t->server_name : host;
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    if (X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1 &&
        X509_VERIFY_PARAM_set1_host(param, name, 0) != 1) {
        err_set(e, ERR_INTERNAL, "%s: cannot verify the broker's certificate for \"%s\"", where,
                name);
        return NULL;
    }
    v->error = 0;
    SSL_CTX_set_app_data(ctx, v);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, note_refusal);
    return sock;
}

int rabbitmq_amqp_tls_open_err(int status, const struct rabbitmq_tls_verdict *v, const char *where,
                               struct err *e)
{
    enum err_code code = status == AMQP_STATUS_TIMEOUT ? ERR_TIMEOUT : ERR_CONNECT;
    if (status == AMQP_STATUS_SSL_PEER_VERIFY_FAILED) {
        ERR_clear_error();
        return err_set(e, code,
                       "%s: TLS verification of the broker's certificate failed: %s (see "
                       "tls_config: ca_file, server_name)",
                       where,
                       v->error ? X509_verify_cert_error_string(v->error) : "no certificate");
    }
    /* OpenSSL's reason for a failed handshake (e.g. "wrong version number": no TLS there) */
    unsigned long ossl = ERR_peek_last_error();
    const char *why = ossl ? ERR_reason_error_string(ossl) : NULL;
    ERR_clear_error();
    if (status == AMQP_STATUS_SSL_CONNECTION_FAILED || status == AMQP_STATUS_SSL_ERROR)
        return err_set(e, code, "%s: TLS handshake failed%s%s", where, why ? ": " : "",
                       why ? why : "");
    return err_set(e, code, "%s: %s", where, amqp_error_string2(status));
}
