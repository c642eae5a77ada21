/* amqp_tls.h: the TLS socket of an amqps:// amqp_url (collectors/rabbitmq/amqp_tls.c), set up from
 * the source's tls_config. Private to the folder: amqp_conn.c uses it. */
#ifndef QREL_RABBITMQ_AMQP_TLS_H
#define QREL_RABBITMQ_AMQP_TLS_H

#include <amqp.h>

#include "err.h"

struct tls_config;

/* What a verification failure was, filled during the handshake: 0 before any, else OpenSSL's
 * X509_V_ERR_* of the first certificate refused. Lives as long as the socket's handshake. */
struct rabbitmq_tls_verdict {
    int error;
};

/* A TLS socket on conn for host (the amqp_url's), with t's CA (the system's without ca_file),
 * client certificate and key (and its password), and the broker's certificate verified against
 * server_name or host unless insecure_skip_verify. t NULL: the system's CAs, verified. v must
 * live as long as the socket. The socket, or NULL with e set (where names the endpoint). */
amqp_socket_t *rabbitmq_amqp_tls_socket(amqp_connection_state_t conn, const struct tls_config *t,
                                        const char *host, const char *where,
                                        struct rabbitmq_tls_verdict *v, struct err *e);

/* The error of a failed open of such a socket: a refused certificate named as a TLS verification
 * failure with OpenSSL's reason, any other status as rabbitmq-c says it. Returns -1. */
int rabbitmq_amqp_tls_open_err(int status, const struct rabbitmq_tls_verdict *v, const char *where,
                               struct err *e);

#endif
