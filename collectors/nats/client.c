/* client.c: the NATS client connection of `qrel dlq` on JetStream (client.h), over cnats
 * (Debian's libnats). One connection per read, closed with the batch: a dead-letter run is a
 * handful of requests, and a connection kept in the source's state would outlive the command's
 * deadlines. Reconnects are off, so a lost connection fails the request it was carrying (the
 * engine then calls the message uncertain) instead of replaying it later behind qrel's back.
 *
 * Errors carry cnats' status text and, for a refused subject, the server's permissions
 * violation (which names the subject, never a credential). */
#include "nats/client.h"

#include <nats.h> /* cnats's nats/nats.h, found by its folder (collectors/CMakeLists.txt) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "dlq_kind.h"
#include "alloc.h"

struct nats_conn {
    natsConnection *nc;
    char source[128];
};

static enum err_code code_of(natsStatus s)
{
    switch (s) {
    case NATS_TIMEOUT:
        return ERR_TIMEOUT;
    case NATS_CONNECTION_AUTH_FAILED:
    case NATS_NOT_PERMITTED:
        return ERR_AUTH;
    case NATS_NO_RESPONDERS:
        return ERR_QUERY;
    case NATS_NO_MEMORY:
    case NATS_INVALID_ARG:
        return ERR_INTERNAL;
    default:
        return ERR_CONNECT;
    }
}

/* The deadline left in ms for cnats, at least 1 (0 would mean no wait); -1 once it passed. */
static int64_t left_ms(const struct deadline *dl)
{
    int64_t ms = deadline_remaining_ms(dl);
    return ms <= 0 ? -1 : ms;
}

/* The connection's own last error (an asynchronous -ERR such as a permissions violation) added to
 * a failed request's message: a publish or request on a denied subject only times out. */
static int conn_error(struct nats_conn *c, natsStatus s, const char *what, struct err *e)
{
    const char *last = NULL;
    natsStatus ls = natsConnection_GetLastError(c->nc, &last);
    if (ls == NATS_NOT_PERMITTED && last && *last)
        return err_set(e, ERR_AUTH, "%s: the server refused it: %.200s", what, last);
    if (s == NATS_NO_RESPONDERS)
        return err_set(e, ERR_QUERY, "%s: no responders (%s)", what,
                       strncmp(what, "$JS.API", 7) == 0
                           ? "JetStream is not enabled for this account"
                           : "no stream stores that subject");
    return err_set(e, code_of(s), "%s: %s", what, natsStatus_GetText(s));
}

static int set_tls(natsOptions *o, const struct nats_state *st, int secure)
{
    const struct tls_config *t = st->http.tls;
    if (!secure)
        return 0;
    natsStatus s = natsOptions_SetSecure(o, true);
    if (s == NATS_OK && t && t->ca_file)
        s = natsOptions_LoadCATrustedCertificates(o, t->ca_file);
    if (s == NATS_OK && t && t->cert_file)
        s = natsOptions_LoadCertificatesChain(o, t->cert_file, t->key_file);
    if (s == NATS_OK && t && t->server_name)
        s = natsOptions_SetExpectedHostname(o, t->server_name);
    if (s == NATS_OK && t && t->insecure_skip_verify)
        s = natsOptions_SkipServerVerification(o, true);
    return s == NATS_OK ? 0 : -1;
}

struct nats_conn *nats_client_open(const struct nats_state *st, const char *source,
                                   const struct deadline *dl, struct err *e)
{
    int64_t ms = left_ms(dl);
    if (ms < 0) {
        err_set(e, ERR_TIMEOUT, "nats_url: the deadline passed before connecting");
        return NULL;
    }
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    int secure = strncmp(st->nats_url, "tls://", 6) == 0;
    if (s == NATS_OK)
        s = natsOptions_SetURL(o, st->nats_url);
    if (s == NATS_OK)
        s = natsOptions_SetName(o, "qrel dlq");
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(o, ms);
    if (s == NATS_OK)
        s = natsOptions_SetAllowReconnect(o, false);
    if (s == NATS_OK && st->nats_username)
        s = natsOptions_SetUserInfo(o, st->nats_username, st->nats_password);
    if (s == NATS_OK && st->nats_token)
        s = natsOptions_SetToken(o, st->nats_token);
    if (s == NATS_OK && st->nats_creds_file)
        s = natsOptions_SetUserCredentialsFromFiles(o, st->nats_creds_file, NULL);
    if (s != NATS_OK) {
        natsOptions_Destroy(o);
        err_set(e, ERR_CONFIG, "nats_url: the client options: %s", natsStatus_GetText(s));
        return NULL;
    }
    if (set_tls(o, st, secure)) {
        natsOptions_Destroy(o);
        err_set(e, ERR_CONFIG, "nats_url: tls_config's files do not load for the NATS client");
        return NULL;
    }
    natsConnection *nc = NULL;
    s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        natsConnection_Destroy(nc);
        err_set(e, code_of(s), "connecting to nats_url of source \"%.100s\": %s", source,
                natsStatus_GetText(s));
        return NULL;
    }
    struct nats_conn *c = xcalloc(1, sizeof *c);
    c->nc = nc;
    snprintf(c->source, sizeof c->source, "%s", source);
    return c;
}

void nats_client_close(struct nats_conn *c)
{
    if (!c)
        return;
    natsConnection_Close(c->nc);
    natsConnection_Destroy(c->nc);
    free(c);
}

json_t *nats_client_api(struct nats_conn *c, const char *subject, const char *body,
                        const struct deadline *dl, struct err *e)
{
    int64_t ms = left_ms(dl);
    if (ms < 0) {
        err_set(e, ERR_TIMEOUT, "%s: the deadline passed", subject);
        return NULL;
    }
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, c->nc, subject, body ? body : "",
                                          body ? (int)strlen(body) : 0, ms);
    if (s != NATS_OK) {
        conn_error(c, s, subject, e);
        return NULL;
    }
    json_t *doc =
        json_parse_body(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), subject, e);
    natsMsg_Destroy(reply);
    return doc;
}

int nats_client_publish(struct nats_conn *c, const char *subject, const struct nats_headers *h,
                        const char *msg_id, long long stamp, const void *data, size_t len,
                        const char *stream, const struct deadline *dl, int *duplicate,
                        struct err *e)
{
    *duplicate = 0;
    int64_t ms = left_ms(dl);
    if (ms < 0)
        return err_set(e, ERR_TIMEOUT, "publish to %.200s: the deadline passed", subject);
    if (len > (size_t)INT32_MAX)
        return err_set(e, ERR_LIMIT, "publish to %.200s: the body is too large", subject);
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, NULL, data, (int)len);
    for (size_t i = 0; s == NATS_OK && h && i < h->n; i++)
        if (!nats_header_replaced(h->v[i].key))
            s = natsMsgHeader_Add(m, h->v[i].key, h->v[i].value);
    char n[32];
    snprintf(n, sizeof n, "%lld", stamp);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, DLQ_STAMP, n);
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return err_set(e, ERR_INTERNAL, "publish to %.200s: building the message: %s", subject,
                       natsStatus_GetText(s));
    }
    natsMsg *reply = NULL;
    s = natsConnection_RequestMsg(&reply, c->nc, m, ms);
    natsMsg_Destroy(m);
    char what[300];
    snprintf(what, sizeof what, "publish to %.200s", subject);
    if (s != NATS_OK)
        return conn_error(c, s, what, e);
    int rc = nats_pub_ack_parse(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply),
                                stream, duplicate, e);
    natsMsg_Destroy(reply);
    return rc ? err_prefix(e, "%s", what) : 0;
}
