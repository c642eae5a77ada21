/* sqs/client.h: what the files of the `sqs` kind share inside it (collectors/sqs/client.c): the
 * source's state, and the signed AWS JSON 1.0 request path with the queue lookups built on it, so
 * the collector (sqs.c), CloudWatch (cloudwatch.c) and `qrel dlq`'s hooks (dlq.c) ask AWS one way.
 * Private to the folder: not for other kinds, nor for tests. */
#ifndef QREL_SQS_CLIENT_H
#define QREL_SQS_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "collector.h"
#include "common/exclude.h"
#include "common/http.h"
#include "deadline.h"
#include "err.h"
#include "sqs/sqs.h"

/* The state of a source (collector.priv): its settings (settings.c) and what it keeps across
 * scrapes (the HTTP client, the URLs GetQueueUrl answered). */
struct sqs_named { /* a queue configured by name, and its URL once GetQueueUrl answered */
    char *name;
    char *url;
};

struct sqs_dlq_url { /* GetQueueUrl cache of dead-letter queues, by ARN */
    char *arn;
    char *url;
};

struct sqs_state {
    char *region;
    char *endpoint;
    char *cw_endpoint;
    char *access_key_id;
    char *secret_access_key;
    char *token_header;
    struct http_config http_cfg;
    struct http_client *http;
    char **urls; /* queues configured by URL */
    size_t nurls;
    struct sqs_named *names; /* queues configured by name */
    size_t nnames;
    char *prefix;
    int list_all;           /* neither queues nor queue_name_prefix: every queue of the account */
    struct exclude exclude; /* queues ListQueues finds that are left out (not those in queues) */
    long long max_queues;
    int cloudwatch;
    double cw_lookback;
    struct sqs_dlq_url *dlq_urls;
    size_t ndlq_urls;
    int warned_cap;
    double dlq_visibility;     /* the VisibilityTimeout `qrel dlq` reads dead letters with */
    char **dead_letter_queues; /* named by dead_letters entries, for check() (live_check.h) */
};

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
int sqs_client_aws_call(const struct sqs_aws *aws, const char *endpoint, const char *service,
                        const char *target, const char *what, const char *body,
                        const struct deadline *dl, json_t **doc, int *missing_queue, struct err *e);

/* One AmazonSQS.<action> call with the source's endpoint and credentials; *calls counts it.
 * Otherwise as sqs_client_aws_call. */
int sqs_client_request(struct collector *c, unsigned *calls, const char *action, const char *what,
                       const char *body, const struct deadline *dl, json_t **doc, int *missing,
                       struct err *e);
/* GetQueueUrl of name (owned by account, may be NULL). 1 with *url set (malloc'd), 0 when the
 * queue does not exist, -1 on error. */
int sqs_client_queue_url(struct collector *c, unsigned *calls, const char *name,
                         const char *account, const struct deadline *dl, char **url, struct err *e);
/* GetQueueAttributes of url (All, or the three counts and MessageRetentionPeriod). 1 with *a
 * filled, 0 when the queue does not exist, -1 on error. */
int sqs_client_attributes(struct collector *c, unsigned *calls, const char *url, const char *name,
                          int all, const struct deadline *dl, struct sqs_attrs *a, struct err *e);

#endif
