/* activemq.h: the pure part of the `activemq` kind (collectors/activemq/parse.c), for unit tests.
 *
 * The collector itself is `activemq_kind` (registry.c). One scrape is one bulk Jolokia request
 * (activemq.c builds it); activemq_bulk_collect turns its reply, a JSON list of four (or three)
 * replies in the order asked, into series without any I/O:
 *   [0] read of the Broker MBean (BrokerVersion): 404 means no broker of that brokerName;
 *   [1] read of every queue MBean: Name, QueueSize, InFlightCount, ConsumerCount,
 *       SlowConsumerStrategy;
 *   [2] read of every SlowConsumerStrategy MBean (MaxTimeSinceLastAck: the ack lease);
 *   [3] exec browse() on the shared dead-letter queue, cut at the browse limit (only when the
 *       dead_letter_queue pattern has no {queue}).
 * Replies are pinned to ActiveMQ 5.17.2 with Jolokia 1.7.1 (tests/fixtures/activemq/). */
#ifndef QREL_ACTIVEMQ_H
#define QREL_ACTIVEMQ_H

#include <jansson.h>
#include <stddef.h>

#include "common/entries.h"
#include "common/exclude.h"
#include "err.h"
#include "metrics.h"

#define ACTIVEMQ_DEFAULT_DLQ "ActiveMQ.DLQ"
#define ACTIVEMQ_QUEUE_TOKEN "{queue}"

struct activemq_filter {
    const char *broker_name;
    const char *const *queues; /* globs; NULL: every queue */
    size_t nqueues;
    struct exclude *exclude;       /* counts what it drops (exclude_drop); NULL: none */
    const char *dead_letter_queue; /* a name (shared) or a pattern with {queue} (individual) */
};

struct activemq_result {
    size_t queues;   /* work queues exported */
    size_t dlq_size; /* QueueSize of the shared dead-letter queue */
    size_t browsed;  /* dead letters the browse returned */
    size_t unread;   /* dlq_size - browsed, when the browse limit cut it */
};

/* Adds the series of one bulk reply to out; dead letters it cannot read go to skips. now is
 * epoch seconds (the ages of dead letters). Errors are ERR_QUERY (no such broker, a request
 * Jolokia refused) or ERR_PROTOCOL naming the JSON path. */
int activemq_bulk_collect(const json_t *doc, struct activemq_filter *f, double now,
                          struct metric_set *out, struct entry_skips *skips,
                          struct activemq_result *res, struct err *e);

/* The text of a bulk reply as the document activemq_bulk_collect reads: as jansson would read it,
 * except that each dead letter of the browse ([3].value) keeps only OriginalDestination,
 * JMSTimestamp and StringProperties' dlqDeliveryFailureCause (collectors/activemq/reply.c).
 * Values it skips are not validated; what it cannot walk plainly is read by jansson whole. NULL
 * with e set (ERR_PROTOCOL naming `what`) when the text is no JSON. */
json_t *activemq_reply_parse(const char *body, size_t len, const char *what, struct err *e);

/* The deliveries the client allowed, from a dead letter's dlqDeliveryFailureCause as ActiveMQ's
 * client writes it ("Delivery[3] exceeds redelivery policy limit:RedeliveryPolicy {...,
 * maximumRedeliveries = 2, ...}"): maximumRedeliveries + 1. 1 with *out set, 0 when the text
 * is no such cause or the limit is unlimited (-1). */
int activemq_cause_max_deliveries(const char *cause, double *out);

/* 1 when name is a dead-letter queue by the pattern: the name itself, or with {queue} any name
 * the pattern makes from a non-empty queue name. */
int activemq_is_dlq(const char *pattern, const char *name);

/* The dead-letter queue of queue by the pattern, malloc'd. */
char *activemq_dlq_name(const char *pattern, const char *queue);

/* `qrel dlq`: id_field is "property:NAME" (a JMS property of the message) or a dotted JSON key of
 * a text message's body. 0, or -1 with the reason in why. */
#define ACTIVEMQ_PROPERTY_PREFIX "property:"
int activemq_dlq_id_field_check(const char *id_field, char *why, size_t cap);

/* One dead letter of a browse() reply as `qrel dlq` reads it. */
struct activemq_letter {
    const char *message_id; /* JMSMessageID, within the reply */
    char *work_id;          /* malloc'd, NULL: absent */
    long long deliveries;   /* N of "Delivery[N] exceeds" in dlqDeliveryFailureCause; -1 */
    double sent;            /* JMSTimestamp, epoch s; 0: unknown */
    size_t body_bytes;      /* of Text, 0 for other message types */
};

/* 1 when m (one element of browse()'s list) came from queue (OriginalDestination
 * "queue://QUEUE") and has a JMSMessageID: out filled, work id by id_field; 0 when it is
 * another queue's or unreadable. */
int activemq_dlq_letter(const json_t *m, const char *queue, const char *id_field,
                        struct activemq_letter *out);

/* The N of "Delivery[N] exceeds redelivery policy limit" in a dlqDeliveryFailureCause: 1 with
 * *out, else 0. */
int activemq_cause_deliveries(const char *cause, long long *out);

#endif
