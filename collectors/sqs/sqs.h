/* sqs.h: the pure parts of `kind: sqs` (sqs/parse.c, and the CloudWatch request and answer of
 * sqs/cloudwatch.c), declared for tests/unit/check_sqs.c.
 *
 * The collector itself is `sqs_kind` (listed in registry.c, collectors/sqs/sqs.c). What is
 * declared here does no I/O: it turns GetQueueAttributes answers, RedrivePolicy documents, ARNs,
 * AWS error bodies and GetMetricData answers into values, so every edge case (maxReceiveCount as
 * a string or a number, a missing attribute, a wrong type) is tested without a server. */
#ifndef QREL_SQS_H
#define QREL_SQS_H

#include <jansson.h>
#include <stddef.h>

#include "common/http.h"
#include "deadline.h"
#include "err.h"

/* SQS FIFO queues remember a deduplication id for 5 minutes (fixed by AWS, not configurable). */
#define SQS_FIFO_DEDUP_WINDOW_SECONDS 300.0

/* The RedrivePolicy attribute: {"deadLetterTargetArn":"arn:aws:sqs:R:ACCOUNT:NAME",
 * "maxReceiveCount":3} (AWS documents a number; SQS itself and the emulators echo the string
 * "3" when it was set as one). */
struct sqs_redrive {
    char *dlq_arn;
    char *dlq_name;    /* the ARN's last part: the dead-letter queue's name */
    char *dlq_account; /* the ARN's account part */
    double max_receive_count;
};

/* Parses the policy text of queue (named in messages). 0, or -1 with ERR_PROTOCOL naming the
 * field ("queue \"orders\": RedrivePolicy.maxReceiveCount: want a number, got a list"). */
int sqs_parse_redrive_policy(const char *text, const char *queue, struct sqs_redrive *out,
                             struct err *e);
void sqs_redrive_free(struct sqs_redrive *r);

/* "arn:aws:sqs:eu-west-1:123456789012:orders" -> account "123456789012", name "orders"
 * (malloc'd). Other partitions (aws-cn, aws-us-gov) are fine; the service must be sqs and the
 * name non-empty. 0 or -1. */
int sqs_arn_parse(const char *arn, char **account, char **name);

/* The queue name of a queue URL: its last path segment ("https://sqs.R.amazonaws.com/1234/orders"
 * -> "orders"). NULL when there is none. Caller frees. */
char *sqs_queue_name_from_url(const char *url);

/* What one GetQueueAttributes answer says about a queue. has_* are 0 when SQS left an attribute
 * out: its series is then left out too, never exported as a made-up 0. */
struct sqs_attrs {
    int has_ready, has_in_flight, has_delayed;
    double ready;     /* ApproximateNumberOfMessages */
    double in_flight; /* ApproximateNumberOfMessagesNotVisible */
    double delayed;   /* ApproximateNumberOfMessagesDelayed */
    int has_visibility;
    double visibility_timeout; /* VisibilityTimeout, seconds */
    double delay_seconds;      /* DelaySeconds, 0 when absent */
    int has_retention;
    double retention; /* MessageRetentionPeriod, seconds */
    int fifo;         /* FifoQueue = "true" */
    char *arn;        /* QueueArn, NULL when absent */
    int has_redrive;
    struct sqs_redrive redrive;
};

/* Reads the "Attributes" object of a GetQueueAttributes answer (doc is the whole answer). */
int sqs_parse_attributes(const json_t *doc, const char *queue, struct sqs_attrs *out,
                         struct err *e);
void sqs_attrs_free(struct sqs_attrs *a);

/* qrel_retry_horizon_seconds: how long after it was sent SQS may still hand a message out for the
 * last time and wait for it:
 *   with a RedrivePolicy:  DelaySeconds + maxReceiveCount x VisibilityTimeout,
 *   without one:           MessageRetentionPeriod (SQS redelivers until the message expires),
 * in both cases at most MessageRetentionPeriod. -1 when the attributes needed are absent. */
double sqs_retry_horizon(const struct sqs_attrs *a);

/* Judges an AWS JSON error answer (status not 2xx) of what ("AmazonSQS.GetQueueAttributes
 * \"orders\""). Always returns -1 with e set: 401, 403 and the signature / key / token / access
 * errors AWS sends with 400 -> ERR_AUTH; everything else -> ERR_QUERY with the error type and a
 * short excerpt of its message. *missing_queue (may be NULL) is set to 1 for QueueDoesNotExist. */
int sqs_error_from_response(long status, const char *body, size_t len, const char *what,
                            int *missing_queue, struct err *e);

/* ---- CloudWatch (sqs/cloudwatch.c) ---- */

/* GetMetricData takes at most 500 queries per call. */
#define SQS_CW_MAX_QUERIES 500

/* The newest datum of AWS/SQS ApproximateAgeOfOldestMessage for one queue. */
struct sqs_cw_datum {
    int found;
    double value;     /* seconds */
    double timestamp; /* epoch seconds: the start of the datum's period */
};

/* The request body for queues[0..n) (n <= SQS_CW_MAX_QUERIES): one query per queue with Id
 * "q<i>", statistic Maximum over period seconds, from start to end (epoch seconds), newest
 * first; next_token may be NULL. Caller frees. */
char *sqs_cw_request_body(const char *const *queues, size_t n, double start, double end, int period,
                          const char *next_token);

/* Folds one GetMetricData answer into out[0..n) (a datum newer than what out holds wins). *next
 * is set to a malloc'd NextToken or NULL. 0, or -1 with ERR_PROTOCOL naming the path. */
int sqs_cw_parse(const json_t *doc, size_t n, struct sqs_cw_datum *out, char **next, struct err *e);

/* ---- `qrel dlq`'s pure parts (sqs/dlq_parse.c): request bodies and the answers of
 * ReceiveMessage, SendMessage and the batch actions, for tests/unit/check_sqs_dlq.c.
 *
 * A dead letter is read with ReceiveMessage on the dead-letter queue that the source queue's
 * RedrivePolicy names, never on the source queue; it is put back with SendMessage on the source
 * queue (its body and message attributes as they were; FIFO: its group id and a fresh
 * deduplication id), removed with DeleteMessage, and what was read and not removed is made
 * visible again with ChangeMessageVisibilityBatch to 0. */

/* SQS's own cap on MaxNumberOfMessages and on the entries of a batch action. */
#define SQS_DLQ_BATCH 10

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
    long long replays;    /* the replay stamp, message attribute DLQ_STAMP: 0 without one, -1
                           * when it holds no whole number (dlq_message.replays) */
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

/* SQS's most message attributes on one message. */
#define SQS_MAX_MESSAGE_ATTRIBUTES 10

/* The SendMessage request that puts m back on url; dedup_id (FIFO only, else NULL) goes with
 * m's group id. Its message attributes are m's with the replay stamp DLQ_STAMP (Number) set to
 * m's replays + 1 (1 when it had none), replacing an earlier one; a message that already has
 * SQS_MAX_MESSAGE_ATTRIBUTES others cannot take one more and goes back unstamped, every attribute
 * kept: *stamped (when not NULL) says which. */
char *sqs_dlq_send_body(const char *url, const struct sqs_dead_letter *m, const char *dedup_id,
                        int *stamped);

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
