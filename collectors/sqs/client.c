/* sqs/client.c: how the files of the `sqs` kind talk to AWS (client.h). One POST signed with
 * SigV4 by libcurl for every action of SQS and CloudWatch, its error answer judged once
 * (sqs_error_from_response), and the two queue lookups the collector and `qrel dlq` both need:
 * GetQueueUrl and GetQueueAttributes. It calls no other file of the folder but the pure parsers. */
#include "sqs/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "alloc.h"

int sqs_client_aws_call(const struct sqs_aws *aws, const char *endpoint, const char *service,
                        const char *target, const char *what, const char *body,
                        const struct deadline *dl, json_t **doc, int *missing_queue, struct err *e)
{
    *doc = NULL;
    if (missing_queue)
        *missing_queue = 0;
    char target_hdr[128], sigv4[160];
    snprintf(target_hdr, sizeof target_hdr, "X-Amz-Target: %s", target);
    snprintf(sigv4, sizeof sigv4, "aws:amz:%s:%s", aws->region, service);
    const char *headers[] = {"Content-Type: application/x-amz-json-1.0", target_hdr,
                             aws->token_header, NULL};
    char *url = xasprintf("%s/", endpoint); /* the base URL has no trailing slash */
    struct http_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .auth = HTTP_AUTH_SIGV4,
        .username = aws->access_key_id,
        .password = aws->secret_access_key,
        .sigv4 = sigv4,
        .accept_any_status = 1,
    };
    struct http_response resp;
    int failed = http_do(aws->http, &req, dl, &resp, e);
    free(url);
    if (failed)
        return err_prefix(e, "%s", what);
    int rc = -1;
    if (resp.status < 200 || resp.status > 299) {
        sqs_error_from_response(resp.status, resp.body, resp.len, what, missing_queue, e);
        goto out;
    }
    *doc = json_parse_body(resp.body, resp.len, what, e);
    if (*doc)
        rc = 0;
out:
    http_response_free(&resp);
    return rc;
}

/* A JSON request body: {"k1": "v1", ...} from NULL-terminated pairs (a NULL value skips it). */
static char *body_of(const char *k1, const char *v1, const char *k2, const char *v2)
{
    json_t *o = json_object();
    if (k1 && v1)
        json_object_set_new(o, k1, json_string(v1));
    if (k2 && v2)
        json_object_set_new(o, k2, json_string(v2));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

int sqs_client_request(struct collector *c, unsigned *calls, const char *action, const char *what,
                       const char *body, const struct deadline *dl, json_t **doc, int *missing,
                       struct err *e)
{
    struct sqs_state *st = c->priv;
    struct sqs_aws aws = {st->http, st->region, st->access_key_id, st->secret_access_key,
                          st->token_header};
    char target[64];
    snprintf(target, sizeof target, "AmazonSQS.%s", action);
    (*calls)++;
    return sqs_client_aws_call(&aws, st->endpoint, "sqs", target, what, body, dl, doc, missing, e);
}

/* A call about the queue named name: sends body (freed here) as action, its reply in *doc, and
 * what (cap bytes) names the call for messages. 1; 0 when the queue does not exist; -1 + e. */
static int queue_call(struct collector *c, unsigned *calls, const char *action, const char *name,
                      char *body, const struct deadline *dl, char *what, size_t cap, json_t **doc,
                      struct err *e)
{
    snprintf(what, cap, "AmazonSQS.%s \"%s\"", action, name);
    int missing = 0;
    int rc = sqs_client_request(c, calls, action, what, body, dl, doc, &missing, e);
    free(body);
    if (rc)
        return missing ? 0 : -1;
    return 1;
}

int sqs_client_queue_url(struct collector *c, unsigned *calls, const char *name,
                         const char *account, const struct deadline *dl, char **url, struct err *e)
{
    char *body = body_of("QueueName", name, "QueueOwnerAWSAccountId", account);
    char what[200];
    json_t *doc = NULL;
    int rc = queue_call(c, calls, "GetQueueUrl", name, body, dl, what, sizeof what, &doc, e);
    if (rc <= 0)
        return rc;
    const char *u = NULL;
    char ctx[220];
    snprintf(ctx, sizeof ctx, "%s: $", what);
    if (json_expect_object(doc, ctx, e) || json_need_string(doc, ctx, "QueueUrl", &u, e)) {
        json_decref(doc);
        return -1;
    }
    *url = xstrdup(u);
    json_decref(doc);
    return 1;
}

int sqs_client_attributes(struct collector *c, unsigned *calls, const char *url, const char *name,
                          int all, const struct deadline *dl, struct sqs_attrs *a, struct err *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "QueueUrl", json_string(url));
    json_t *names = json_array();
    if (all) {
        json_array_append_new(names, json_string("All"));
    } else {
        json_array_append_new(names, json_string("ApproximateNumberOfMessages"));
        json_array_append_new(names, json_string("ApproximateNumberOfMessagesNotVisible"));
        json_array_append_new(names, json_string("ApproximateNumberOfMessagesDelayed"));
        /* for qrel_dead_letter_retention_seconds of the queues this one is the DLQ of */
        json_array_append_new(names, json_string("MessageRetentionPeriod"));
    }
    json_object_set_new(o, "AttributeNames", names);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char what[200];
    json_t *doc = NULL;
    int rc = queue_call(c, calls, "GetQueueAttributes", name, body, dl, what, sizeof what, &doc, e);
    if (rc <= 0)
        return rc;
    rc = sqs_parse_attributes(doc, name, a, e);
    json_decref(doc);
    return rc ? -1 : 1;
}
