/* amqp_conn.h: one AMQP 0-9-1 connection for `qrel dlq` (collectors/rabbitmq/amqp_conn.c), over
 * rabbitmq-c. Private to the folder: dlq.c uses it. Every call takes the deadline; errors name
 * the queue and the broker's reply, never the password. */
#ifndef QREL_RABBITMQ_AMQP_CONN_H
#define QREL_RABBITMQ_AMQP_CONN_H

#include <amqp.h>
#include <stdint.h>

#include "deadline.h"
#include "err.h"

struct rabbitmq_state;
struct rabbitmq_amqp;

/* Connects and logs in to the source's amqp_url with its username and password, and opens the
 * channel that reads, acks and nacks. 0, or -1 with e set (nothing left open). */
int rabbitmq_amqp_open(const struct rabbitmq_state *st, const struct deadline *dl,
                       struct rabbitmq_amqp **out, struct err *e);
/* Closes the connection (the broker requeues whatever it still holds unacknowledged). NULL ok. */
void rabbitmq_amqp_close(struct rabbitmq_amqp *a);
/* Whether the connection is still usable (no socket error, no connection.close). */
int rabbitmq_amqp_alive(const struct rabbitmq_amqp *a);

/* A passive queue.declare of queue on a channel of its own (a refusal closes only that one):
 * 1 with its ready messages and consumers, 0 when it does not exist, -1 with e set. */
int rabbitmq_amqp_queue(struct rabbitmq_amqp *a, const char *queue, const struct deadline *dl,
                        uint32_t *messages, uint32_t *consumers, struct err *e);
/* basic.get without auto-ack: 1 with the message (free it with amqp_destroy_message) and its
 * delivery tag, 0 when the queue is empty, -1 with e set. */
int rabbitmq_amqp_get(struct rabbitmq_amqp *a, const char *queue, const struct deadline *dl,
                      amqp_message_t *msg, uint64_t *tag, struct err *e);
/* Publishes body with props to the default exchange with routing key queue, mandatory, on a
 * channel in confirm mode, and waits for the broker's confirm: 0 on basic.ack; -1 with e set on
 * basic.nack, on basic.return (unroutable: no such queue) or on an error. */
int rabbitmq_amqp_publish(struct rabbitmq_amqp *a, const char *queue,
                          const amqp_basic_properties_t *props, amqp_bytes_t body,
                          const struct deadline *dl, struct err *e);
/* basic.ack, or basic.nack with requeue, of one delivery on the reading channel. */
int rabbitmq_amqp_ack(struct rabbitmq_amqp *a, uint64_t tag, struct err *e);
int rabbitmq_amqp_nack(struct rabbitmq_amqp *a, uint64_t tag, struct err *e);

#endif
