/* dlq.h: `qrel dlq` for SQS (sqs/dlq.c, the hooks of core/dlq_kind.h) and its pure parts
 * (sqs/dlq_parse.c: request bodies and the answers of ReceiveMessage, SendMessage and the batch
 * actions), declared for tests/unit/check_sqs_dlq.c.
 *
 * A dead letter is read with ReceiveMessage on the dead-letter queue that the source queue's
 * RedrivePolicy names, never on the source queue; it is put back with SendMessage on the source
 * queue (its body and message attributes as they were; FIFO: its group id and a fresh
 * deduplication id), removed with DeleteMessage, and what was read and not removed is made
 * visible again with ChangeMessageVisibilityBatch to 0. */
#ifndef QREL_SQS_DLQ_H
#define QREL_SQS_DLQ_H

#include <jansson.h>
#include <stddef.h>

#include "dlq_kind.h"
#include "err.h"

/* SQS's own cap on MaxNumberOfMessages and on the entries of a batch action. */
#define SQS_DLQ_BATCH 10

extern const struct dlq_kind sqs_dlq_kind;

/* One dead letter as ReceiveMessage gave it: the kind_data of its dlq_message. */
struct sqs_dead_letter {
    char *message_id;
    char *receipt_handle; /* of the newest receive: the one DeleteMessage wants */
    char *body;
    size_t body_len;
    char *md5_of_body;    /* MD5OfBody, NULL when absent */
    json_t *attributes;   /* MessageAttributes as SendMessage takes them back (DataType and
                           * StringValue or BinaryValue of each); NULL when there are none */
    char *group_id;       /* MessageGroupId (FIFO queues), NULL when absent */
    double receive_count; /* ApproximateReceiveCount, this receive included; -1: absent */
    double sent;          /* SentTimestamp in unix seconds; 0: absent */
    int held;             /* hidden by our receive: neither removed nor released yet */
};

void sqs_dead_letter_free(void *m); /* NULL is fine */

/* The messages of one ReceiveMessage answer (doc): *v is a malloc'd array of *n malloc'd
 * messages (each freed with sqs_dead_letter_free, then the array), NULL and 0 when the answer
 * has no "Messages". 0, or -1 with ERR_PROTOCOL naming what and the path (nothing left
 * allocated). */
int sqs_dlq_parse_receive(const json_t *doc, const char *what, struct sqs_dead_letter ***v,
                          size_t *n, struct err *e);

/* id_field: "attribute:NAME" (a message attribute of type String or Number) or a JSON key of
 * the body with dots for nesting. 0, or -1 with a short reason in why (cap bytes). */
int sqs_dlq_id_field_check(const char *id_field, char *why, size_t cap);

/* The work id m carries at id_field (as sqs_dlq_id_field_check accepted it), malloc'd with its
 * length; *id = NULL when it carries none (absent, binary, not JSON). */
void sqs_dlq_work_id(const struct sqs_dead_letter *m, const char *id_field, char **id, size_t *len);

/* The ReceiveMessage request: at most max (1..10) messages of url, hidden for visibility
 * seconds, with every system attribute and message attribute; wait: WaitTimeSeconds. */
char *sqs_dlq_receive_body(const char *url, int max, int visibility, int wait);

/* The SendMessage request that puts m back on url; dedup_id (FIFO only, else NULL) goes with
 * m's group id. */
char *sqs_dlq_send_body(const char *url, const struct sqs_dead_letter *m, const char *dedup_id);

/* A FIFO deduplication id for m's replay that no earlier replay used: "qrel-" + MessageId (at
 * most 100 characters of it) + "-" + now_ms. malloc'd. */
char *sqs_dlq_dedup_id(const struct sqs_dead_letter *m, long long now_ms);

/* Checks a SendMessage answer: it has a MessageId and, when both sides have one, the MD5 of the
 * body SQS stored equals the MD5 ReceiveMessage gave (the body arrived unchanged). */
int sqs_dlq_check_sent(const json_t *doc, const char *what, const struct sqs_dead_letter *m,
                       struct err *e);

/* The ChangeMessageVisibilityBatch request for v[0..n) (n <= 10) on url, Ids "m<i>". */
char *sqs_dlq_visibility_body(const char *url, struct sqs_dead_letter *const *v, size_t n,
                              int timeout);

/* Checks a batch answer for v[0..n) (Ids "m<i>"): -1 with ERR_QUERY naming how many entries
 * failed and the first one's MessageId, code and message when "Failed" is not empty. */
int sqs_dlq_check_batch(const json_t *doc, const char *what, struct sqs_dead_letter *const *v,
                        size_t n, struct err *e);

#endif
