/* tlsserver.h: the exporter's TLS certificate and client certificate policy, applied to each new
 * connection before its handshake (MHD_OPTION_NOTIFY_CONNECTION).
 *
 * The certificate and key files are looked at again at most once a second, on a new connection:
 * when either changed (inode, size or times, so an atomic rename and cert-manager's symlink swap
 * count), the pair is read again and new connections get it. A pair that cannot be read or whose
 * key does not match the certificate is logged and the one in use is kept. Connections already
 * open keep the credentials they started with (counted, freed with the last one).
 *
 * client_auth_type decides what the handshake asks for: nothing, any certificate, or one that
 * verifies against client_ca_file (always, or only when the client offers one). A refused client
 * fails the handshake, as Go's crypto/tls does for exporter-toolkit: it never sees a response. */
#ifndef QREL_TLSSERVER_H
#define QREL_TLSSERVER_H

#include <microhttpd.h>

#include "webconfig.h"

struct tlsserver;

/* The credentials of w (which must outlive the server); NULL when w has no TLS or its pair does
 * not load (MHD then refuses it the same way at start). */
struct tlsserver *tlsserver_new(const struct webconfig *w);
void tlsserver_free(struct tlsserver *t); /* NULL is fine; after every connection has ended */
/* The MHD_NotifyConnectionCallback; cls is the tlsserver. */
void tlsserver_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);

#endif
