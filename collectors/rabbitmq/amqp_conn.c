/* amqp_conn.c: the AMQP 0-9-1 connection of `qrel dlq` on RabbitMQ (amqp_conn.h).
 *
 * Three channels, so that a refusal on one (a channel.close from the broker) does not take the
 * deliveries held on another with it: READ holds the basic.get deliveries and acks or nacks
 * them; PUB publishes in confirm mode; PEEK does passive queue.declare, and is opened again
 * after a refusal (404 for a queue that does not exist). rabbitmq-c is synchronous: each call
 * sets its RPC timeout to what is left of the deadline, and a confirm is waited for frame by
 * frame until the deadline. An amqps:// URL gets a TLS socket (amqp_tls.c); the rest is the same.
 */
#include "rabbitmq/amqp_conn.h"

#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rabbitmq/amqp_tls.h"
#include "rabbitmq/client.h"
#include "alloc.h"

enum { CH_READ = 1, CH_PUB = 2, CH_PEEK = 3 };

struct rabbitmq_amqp {
    amqp_connection_state_t conn;
    int dead;      /* socket error or connection.close: nothing more can be sent */
    int pub_open;  /* CH_PUB opened and in confirm mode */
    int peek_open; /* CH_PEEK open */
    uint64_t seq;  /* the publish sequence number of CH_PUB */
    struct rabbitmq_tls_verdict verdict; /* amqps: as long as its SSL_CTX, which points here */
};

static struct timeval left(const struct deadline *dl)
{
    int64_t ms = deadline_remaining_ms(dl);
    if (ms < 1)
        ms = 1;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

static void set_timeout(struct rabbitmq_amqp *a, const struct deadline *dl)
{
    struct timeval tv = left(dl);
    amqp_set_rpc_timeout(a->conn, &tv);
}

static int status_err(struct rabbitmq_amqp *a, int status, const char *what, struct err *e)
{
    enum err_code code = ERR_CONNECT;
    if (status == AMQP_STATUS_TIMEOUT)
        code = ERR_TIMEOUT;
    a->dead = 1; /* rabbitmq-c leaves the connection unusable after a library error */
    return err_set(e, code, "%s: %s", what, amqp_error_string2(status));
}

/* The reply of an RPC into e. A channel.close is answered with close-ok (the channel is then
 * closed); a connection.close marks the connection dead. */
static int reply_err(struct rabbitmq_amqp *a, amqp_rpc_reply_t r, amqp_channel_t ch,
                     const char *what, struct err *e)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        return 0;
    case AMQP_RESPONSE_NONE:
        a->dead = 1;
        return err_set(e, ERR_PROTOCOL, "%s: no reply", what);
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        return status_err(a, r.library_error, what, e);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        break;
    }
    if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = r.reply.decoded;
        amqp_channel_close_ok_t ok = {0};
        amqp_send_method(a->conn, ch, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        if (ch == CH_PUB)
            a->pub_open = 0;
        if (ch == CH_PEEK)
            a->peek_open = 0;
        if (ch == CH_READ)
            a->dead = 1; /* the held deliveries went back with the channel */
        return err_set(e, m->reply_code == 403 ? ERR_AUTH : ERR_QUERY, "%s: %u %.*s", what,
                       m->reply_code, (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    }
    if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = r.reply.decoded;
        amqp_connection_close_ok_t ok = {0};
        amqp_send_method(a->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        a->dead = 1;
        return err_set(e, m->reply_code == 403 || m->reply_code == 530 ? ERR_AUTH : ERR_QUERY,
                       "%s: connection closed by the broker: %u %.*s", what, m->reply_code,
                       (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    }
    a->dead = 1;
    return err_set(e, ERR_PROTOCOL, "%s: unexpected method 0x%08x", what, (unsigned)r.reply.id);
}

int rabbitmq_amqp_open(const struct rabbitmq_state *st, const struct deadline *dl,
                       struct rabbitmq_amqp **out, struct err *e)
{
    struct rabbitmq_amqp *a = xcalloc(1, sizeof *a);
    char where[300];
    snprintf(where, sizeof where, "AMQP%s %s:%d", st->amqp_tls ? "S" : "", st->amqp_host,
             st->amqp_port);
    a->conn = amqp_new_connection();
    amqp_socket_t *sock =
        st->amqp_tls
            ? rabbitmq_amqp_tls_socket(a->conn, st->http.tls, st->amqp_host, where, &a->verdict, e)
            : amqp_tcp_socket_new(a->conn);
    if (!sock) {
        if (!st->amqp_tls)
            err_set(e, ERR_INTERNAL, "%s: cannot make a socket", where);
        goto fail;
    }
    struct timeval tv = left(dl);
    int status = amqp_socket_open_noblock(sock, st->amqp_host, st->amqp_port, &tv);
    if (status != AMQP_STATUS_OK) {
        if (st->amqp_tls)
            rabbitmq_amqp_tls_open_err(status, &a->verdict, where, e);
        else
            status_err(a, status, where, e);
        goto fail;
    }
    tv = left(dl);
    amqp_set_handshake_timeout(a->conn, &tv);
    set_timeout(a, dl);
    amqp_rpc_reply_t r = amqp_login(a->conn, st->amqp_vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                                    st->username, st->password);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_SOCKET_CLOSED) {
        /* RabbitMQ closes the socket on a refused login (wrong password or no access to vhost) */
        err_set(e, ERR_AUTH, "%s: login refused for user \"%s\" on vhost \"%s\"", where,
                st->username, st->amqp_vhost);
        goto fail;
    }
    if (reply_err(a, r, 0, where, e))
        goto fail;
    amqp_channel_open(a->conn, CH_READ);
    if (reply_err(a, amqp_get_rpc_reply(a->conn), CH_READ, where, e))
        goto fail;
    *out = a;
    return 0;
fail:
    a->dead = 1;
    rabbitmq_amqp_close(a);
    return -1;
}

void rabbitmq_amqp_close(struct rabbitmq_amqp *a)
{
    if (!a)
        return;
    if (!a->dead) {
        struct deadline dl = deadline_in(2.0);
        set_timeout(a, &dl);
        amqp_connection_close(a->conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(a->conn);
    free(a);
}

int rabbitmq_amqp_alive(const struct rabbitmq_amqp *a)
{
    return a && !a->dead;
}

static int dead_err(const struct rabbitmq_amqp *a, const char *what, struct err *e)
{
    if (!a->dead)
        return 0;
    return err_set(e, ERR_CONNECT, "%s: the AMQP connection is closed", what);
}

int rabbitmq_amqp_queue(struct rabbitmq_amqp *a, const char *queue, const struct deadline *dl,
                        uint32_t *messages, uint32_t *consumers, struct err *e)
{
    char what[400];
    snprintf(what, sizeof what, "queue.declare (passive) \"%s\"", queue);
    if (dead_err(a, what, e))
        return -1;
    set_timeout(a, dl);
    if (!a->peek_open) {
        amqp_channel_open(a->conn, CH_PEEK);
        if (reply_err(a, amqp_get_rpc_reply(a->conn), CH_PEEK, what, e))
            return -1;
        a->peek_open = 1;
    }
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(a->conn, CH_PEEK, amqp_cstring_bytes(queue), 1,
                                                     0, 0, 0, amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(a->conn);
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
        ((amqp_channel_close_t *)r.reply.decoded)->reply_code == 404) {
        struct err ignored;
        reply_err(a, r, CH_PEEK, what, &ignored); /* answers close-ok */
        return 0;
    }
    if (reply_err(a, r, CH_PEEK, what, e) || !ok)
        return -1;
    *messages = ok->message_count;
    *consumers = ok->consumer_count;
    return 1;
}

int rabbitmq_amqp_get(struct rabbitmq_amqp *a, const char *queue, const struct deadline *dl,
                      amqp_message_t *msg, uint64_t *tag, struct err *e)
{
    char what[400];
    snprintf(what, sizeof what, "basic.get \"%s\"", queue);
    if (dead_err(a, what, e))
        return -1;
    set_timeout(a, dl);
    amqp_maybe_release_buffers_on_channel(a->conn, CH_READ);
    amqp_rpc_reply_t r = amqp_basic_get(a->conn, CH_READ, amqp_cstring_bytes(queue), 0);
    if (reply_err(a, r, CH_READ, what, e))
        return -1;
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return 0;
    if (r.reply.id != AMQP_BASIC_GET_OK_METHOD) {
        a->dead = 1;
        return err_set(e, ERR_PROTOCOL, "%s: unexpected method 0x%08x", what, (unsigned)r.reply.id);
    }
    *tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
    r = amqp_read_message(a->conn, CH_READ, msg, 0);
    if (reply_err(a, r, CH_READ, what, e))
        return -1;
    return 1;
}

/* Waits for the confirm of publish number a->seq on CH_PUB. A basic.return comes before the
 * basic.ack of the same message, with its content, which is read and dropped. */
static int wait_confirm(struct rabbitmq_amqp *a, const char *what, const struct deadline *dl,
                        struct err *e)
{
    int returned = 0;
    for (;;) {
        amqp_frame_t f;
        struct timeval tv = left(dl);
        int status = amqp_simple_wait_frame_noblock(a->conn, &f, &tv);
        if (status != AMQP_STATUS_OK)
            return status_err(a, status, what, e);
        if (f.frame_type != AMQP_FRAME_METHOD)
            continue;
        amqp_method_number_t id = f.payload.method.id;
        if (id == AMQP_BASIC_RETURN_METHOD) {
            amqp_message_t m;
            amqp_rpc_reply_t r = amqp_read_message(a->conn, f.channel, &m, 0);
            if (reply_err(a, r, f.channel, what, e))
                return -1;
            amqp_destroy_message(&m);
            returned = 1;
        } else if (id == AMQP_BASIC_ACK_METHOD || id == AMQP_BASIC_NACK_METHOD) {
            uint64_t tag = id == AMQP_BASIC_ACK_METHOD
                               ? ((amqp_basic_ack_t *)f.payload.method.decoded)->delivery_tag
                               : ((amqp_basic_nack_t *)f.payload.method.decoded)->delivery_tag;
            if (tag < a->seq)
                continue; /* an earlier publish's, already given up on */
            if (id == AMQP_BASIC_NACK_METHOD)
                return err_set(e, ERR_QUERY, "%s: the broker refused it (basic.nack)", what);
            if (returned)
                return err_set(e, ERR_QUERY, "%s: unroutable (basic.return): no such queue", what);
            return 0;
        } else if (id == AMQP_CHANNEL_CLOSE_METHOD || id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_rpc_reply_t r = {.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION,
                                  .reply = f.payload.method};
            return reply_err(a, r, f.channel, what, e);
        }
    }
}

int rabbitmq_amqp_publish(struct rabbitmq_amqp *a, const char *queue,
                          const amqp_basic_properties_t *props, amqp_bytes_t body,
                          const struct deadline *dl, struct err *e)
{
    char what[400];
    snprintf(what, sizeof what, "basic.publish to queue \"%s\"", queue);
    if (dead_err(a, what, e))
        return -1;
    set_timeout(a, dl);
    if (!a->pub_open) {
        amqp_channel_open(a->conn, CH_PUB);
        if (reply_err(a, amqp_get_rpc_reply(a->conn), CH_PUB, what, e))
            return -1;
        a->pub_open = 1;
        a->seq = 0;
        amqp_confirm_select(a->conn, CH_PUB);
        if (reply_err(a, amqp_get_rpc_reply(a->conn), CH_PUB, what, e))
            return -1;
    }
    amqp_maybe_release_buffers_on_channel(a->conn, CH_PUB); /* the last confirm's frames */
    int status = amqp_basic_publish(a->conn, CH_PUB, amqp_empty_bytes, amqp_cstring_bytes(queue), 1,
                                    0, props, body);
    if (status != AMQP_STATUS_OK)
        return status_err(a, status, what, e);
    a->seq++;
    return wait_confirm(a, what, dl, e);
}

static int settle(struct rabbitmq_amqp *a, uint64_t tag, int ack, struct err *e)
{
    const char *what = ack ? "basic.ack" : "basic.nack";
    if (dead_err(a, what, e))
        return -1;
    int status = ack ? amqp_basic_ack(a->conn, CH_READ, tag, 0)
                     : amqp_basic_nack(a->conn, CH_READ, tag, 0, 1);
    if (status != AMQP_STATUS_OK)
        return status_err(a, status, what, e);
    return 0;
}

int rabbitmq_amqp_ack(struct rabbitmq_amqp *a, uint64_t tag, struct err *e)
{
    return settle(a, tag, 1, e);
}

int rabbitmq_amqp_nack(struct rabbitmq_amqp *a, uint64_t tag, struct err *e)
{
    return settle(a, tag, 0, e);
}
