/* sqs.h: `kind: sqs` (collectors/sqs/sqs.c), its pure parts (sqs/parse.c) and CloudWatch
 * (sqs/cloudwatch.c).
 *
 * The collector itself is `sqs_kind` (listed in registry.c). What is declared here is shared by
 * the two files, and the pure parts (no I/O) are exposed for tests/unit/check_sqs.c: turning
 * GetQueueAttributes answers, RedrivePolicy documents, ARNs, AWS error bodies and GetMetricData
 * answers into values, so every edge case (maxReceiveCount as a string or a number, a missing
 * attribute, a wrong type) is tested without a server. */
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

/* ---- the shared request path (sqs.c) ---- */

struct sqs_aws {
    struct http_client *http;
    const char *region;
    const char *access_key_id;
    const char *secret_access_key;
    const char *token_header; /* "X-Amz-Security-Token: ..." or NULL */
};

/* POSTs body (AWS JSON 1.0) to endpoint with X-Amz-Target: target, signed with SigV4 for
 * service in the region. On 2xx, *doc is the parsed answer (caller json_decref's). Otherwise -1
 * with e set (see sqs_error_from_response; what names the call in messages). */
int sqs_aws_call(const struct sqs_aws *aws, const char *endpoint, const char *service,
                 const char *target, const char *what, const char *body, const struct deadline *dl,
                 json_t **doc, int *missing_queue, struct err *e);

/* ---- the source's own requests, shared with `qrel dlq` (sqs/dlq.c) ---- */

struct collector;

/* One AmazonSQS.<action> call with the source's endpoint and credentials; *calls counts it.
 * Otherwise as sqs_aws_call. */
int sqs_request(struct collector *c, unsigned *calls, const char *action, const char *what,
                const char *body, const struct deadline *dl, json_t **doc, int *missing,
                struct err *e);
/* GetQueueUrl of name (owned by account, may be NULL). 1 with *url set (malloc'd), 0 when the
 * queue does not exist, -1 on error. */
int sqs_get_queue_url(struct collector *c, unsigned *calls, const char *name, const char *account,
                      const struct deadline *dl, char **url, struct err *e);
/* GetQueueAttributes of url (All, or only the three counts). 1 with *a filled, 0 when the queue
 * does not exist, -1 on error. */
int sqs_get_attributes(struct collector *c, unsigned *calls, const char *url, const char *name,
                       int all, const struct deadline *dl, struct sqs_attrs *a, struct err *e);
/* The URL the source's queues list gives for the queue called name (malloc'd), NULL when the
 * queue is not listed by URL. */
char *sqs_configured_url(struct collector *c, const char *name);
/* dlq_visibility_timeout: how long `qrel dlq` hides the dead letters it reads, seconds. */
double sqs_dlq_visibility(struct collector *c);

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

/* Fetches the newest datum for every queue in queues[0..n) into out (calls GetMetricData in
 * batches of SQS_CW_MAX_QUERIES, following NextToken). *calls counts the requests made. */
int sqs_cw_fetch(const struct sqs_aws *aws, const char *endpoint, const char *const *queues,
                 size_t n, double lookback, const struct deadline *dl, struct sqs_cw_datum *out,
                 unsigned *calls, struct err *e);

#endif
