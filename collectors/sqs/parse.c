/* sqs/parse.c: the pure parts of `kind: sqs` (sqs.h): GetQueueAttributes answers, RedrivePolicy
 * documents, ARNs, queue URLs and AWS error bodies into values, and the retry horizon. No I/O:
 * tests/unit/check_sqs.c feeds it answers recorded from fauxqs (tests/fixtures/sqs/) and the
 * shapes AWS documents. */
#include "sqs/sqs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/json.h"
#include "alloc.h"

void sqs_redrive_free(struct sqs_redrive *r)
{
    if (!r)
        return;
    free(r->dlq_arn);
    free(r->dlq_name);
    free(r->dlq_account);
    memset(r, 0, sizeof *r);
}

int sqs_arn_parse(const char *arn, char **account, char **name)
{
    /* arn:PARTITION:sqs:REGION:ACCOUNT:NAME */
    const char *part[6];
    size_t len[6];
    const char *p = arn;
    for (int i = 0; i < 6; i++) {
        part[i] = p;
        const char *colon = i < 5 ? strchr(p, ':') : NULL;
        len[i] = colon ? (size_t)(colon - p) : strlen(p);
        if (i < 5 && !colon)
            return -1;
        p = colon ? colon + 1 : p + len[i];
    }
    if (len[0] != 3 || memcmp(part[0], "arn", 3) != 0 || len[1] == 0 || len[2] != 3 ||
        memcmp(part[2], "sqs", 3) != 0 || len[5] == 0 || strchr(part[5], ':') ||
        strchr(part[5], '/'))
        return -1;
    *account = xstrndup(part[4], len[4]);
    *name = xstrndup(part[5], len[5]);
    return 0;
}

char *sqs_queue_name_from_url(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    p = strchr(p, '/');
    if (!p)
        return NULL;
    size_t n = strcspn(p, "?#");
    while (n > 0 && p[n - 1] == '/')
        n--;
    const char *start = p;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/')
            start = p + i + 1;
    size_t len = (size_t)(p + n - start);
    return len ? xstrndup(start, len) : NULL;
}

int sqs_parse_redrive_policy(const char *text, const char *queue, struct sqs_redrive *out,
                             struct err *e)
{
    memset(out, 0, sizeof *out);
    char ctx[200];
    snprintf(ctx, sizeof ctx, "queue \"%s\": RedrivePolicy", queue);
    json_error_t je;
    json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return err_set(e, ERR_PROTOCOL, "%s: not JSON (%s)", ctx, je.text);
    int rc = -1;
    const char *arn = NULL;
    double max = 0;
    if (json_expect_object(doc, ctx, e) ||
        json_need_string(doc, ctx, "deadLetterTargetArn", &arn, e))
        goto out;
    int got = json_get_numeric(doc, ctx, "maxReceiveCount", &max, e);
    if (got < 0)
        goto out;
    if (got == 0) {
        err_set(e, ERR_PROTOCOL, "%s.maxReceiveCount: missing", ctx);
        goto out;
    }
    if (max < 1 || max != floor(max)) {
        err_set(e, ERR_PROTOCOL, "%s.maxReceiveCount: want a whole number >= 1, got %g", ctx, max);
        goto out;
    }
    if (sqs_arn_parse(arn, &out->dlq_account, &out->dlq_name)) {
        err_set(e, ERR_PROTOCOL,
                "%s.deadLetterTargetArn: want an ARN like \"arn:aws:sqs:REGION:ACCOUNT:NAME\", "
                "got \"%.120s\"",
                ctx, arn);
        goto out;
    }
    out->dlq_arn = xstrdup(arn);
    out->max_receive_count = max;
    rc = 0;
out:
    json_decref(doc);
    if (rc)
        sqs_redrive_free(out);
    return rc;
}

void sqs_attrs_free(struct sqs_attrs *a)
{
    if (!a)
        return;
    free(a->arn);
    sqs_redrive_free(&a->redrive);
    memset(a, 0, sizeof *a);
}

/* One numeric attribute: SQS sends every attribute as a string. 1 found, 0 absent, -1 error. */
static int num_attr(const json_t *attrs, const char *ctx, const char *key, double *out,
                    struct err *e)
{
    int got = json_get_numeric(attrs, ctx, key, out, e);
    if (got == 1 && (*out < 0 || !isfinite(*out)))
        return err_set(e, ERR_PROTOCOL, "%s.%s: want a number >= 0, got %g", ctx, key, *out);
    return got;
}

int sqs_parse_attributes(const json_t *doc, const char *queue, struct sqs_attrs *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    char ctx[200];
    snprintf(ctx, sizeof ctx, "queue \"%s\": $", queue);
    json_t *attrs = NULL;
    if (json_expect_object(doc, ctx, e))
        return -1;
    int got = json_get_object(doc, ctx, "Attributes", &attrs, e);
    if (got < 0)
        return -1;
    if (got == 0) /* SQS leaves Attributes out when it has none to give */
        return 0;
    snprintf(ctx, sizeof ctx, "queue \"%s\": $.Attributes", queue);
    /* The numeric attributes, each with the flag that tells it was sent (DelaySeconds has none:
     * absent means 0). */
    const struct {
        const char *key;
        double *value;
        int *has;
    } nums[] = {
        {"ApproximateNumberOfMessages", &out->ready, &out->has_ready},
        {"ApproximateNumberOfMessagesNotVisible", &out->in_flight, &out->has_in_flight},
        {"ApproximateNumberOfMessagesDelayed", &out->delayed, &out->has_delayed},
        {"VisibilityTimeout", &out->visibility_timeout, &out->has_visibility},
        {"DelaySeconds", &out->delay_seconds, NULL},
        {"MessageRetentionPeriod", &out->retention, &out->has_retention},
    };
    int r;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if ((r = num_attr(attrs, ctx, nums[i].key, nums[i].value, e)) < 0)
            goto fail;
        if (nums[i].has)
            *nums[i].has = r;
    }

    const char *s = NULL;
    if ((r = json_get_string(attrs, ctx, "FifoQueue", &s, e)) < 0)
        goto fail;
    out->fifo = r == 1 && strcmp(s, "true") == 0;
    if ((r = json_get_string(attrs, ctx, "QueueArn", &s, e)) < 0)
        goto fail;
    if (r == 1)
        out->arn = xstrdup(s);
    if ((r = json_get_string(attrs, ctx, "RedrivePolicy", &s, e)) < 0)
        goto fail;
    if (r == 1 && *s) { /* a policy removed with SetQueueAttributes reads back as "" */
        if (sqs_parse_redrive_policy(s, queue, &out->redrive, e))
            goto fail;
        out->has_redrive = 1;
    }
    return 0;
fail:
    sqs_attrs_free(out);
    return -1;
}

double sqs_retry_horizon(const struct sqs_attrs *a)
{
    if (!a->has_redrive)
        return a->has_retention ? a->retention : -1;
    if (!a->has_visibility)
        return -1;
    double h = a->delay_seconds + a->redrive.max_receive_count * a->visibility_timeout;
    if (a->has_retention && a->retention < h)
        h = a->retention;
    return h;
}

/* Error types that mean our credentials or their permissions were refused. AWS sends several of
 * them with HTTP 400 rather than 401/403. */
static int is_auth_type(const char *t)
{
    static const char *const auth[] = {
        "AccessDenied",
        "AccessDeniedException",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
        "IncompleteSignature",
        "MissingAuthenticationToken",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSecurity",
        "RequestExpired",
        "AuthFailure",
        "NotAuthorized",
        "OptInRequired",
        NULL,
    };
    for (const char *const *a = auth; *a; a++)
        if (strcmp(t, *a) == 0)
            return 1;
    return 0;
}

int sqs_error_from_response(long status, const char *body, size_t len, const char *what,
                            int *missing_queue, struct err *e)
{
    if (missing_queue)
        *missing_queue = 0;
    char type[96] = "", msg[200] = "";
    json_t *doc = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    if (json_is_object(doc)) {
        /* "__type": "com.amazonaws.sqs#QueueDoesNotExist": the part after '#' is the code */
        const char *t = json_string_value(json_object_get(doc, "__type"));
        if (!t)
            t = json_string_value(json_object_get(doc, "code"));
        if (t) {
            const char *hash = strrchr(t, '#');
            t = hash ? hash + 1 : t;
            size_t tl = strcspn(t, ":"); /* some services append ":http://internal..." */
            http_excerpt(t, tl, type, sizeof type);
        }
        const char *m = json_string_value(json_object_get(doc, "message"));
        if (!m)
            m = json_string_value(json_object_get(doc, "Message"));
        if (m)
            http_excerpt(m, strlen(m), msg, sizeof msg);
    } else if (body && len) {
        http_excerpt(body, len, msg, sizeof msg);
    }
    json_decref(doc);

    if (strcmp(type, "QueueDoesNotExist") == 0 ||
        strcmp(type, "AWS.SimpleQueueService.NonExistentQueue") == 0) {
        if (missing_queue)
            *missing_queue = 1;
        return err_set(e, ERR_QUERY, "%s: the queue does not exist", what);
    }
    enum err_code code =
        (status == 401 || status == 403 || (type[0] && is_auth_type(type))) ? ERR_AUTH : ERR_QUERY;
    return err_set(e, code, "%s: HTTP %ld%s%s%s%s%s", what, status, type[0] ? " " : "", type,
                   code == ERR_AUTH ? " (the credentials were refused or lack a permission)" : "",
                   msg[0] ? ": " : "", msg);
}
