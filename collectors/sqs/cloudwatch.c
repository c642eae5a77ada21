/* sqs/cloudwatch.c: the age of the oldest message of SQS queues, from CloudWatch.
 *
 * The SQS API has no such figure; SQS publishes it to CloudWatch as AWS/SQS
 * ApproximateAgeOfOldestMessage (dimension QueueName), one datum a minute. GetMetricData (AWS JSON
 * 1.0, X-Amz-Target GraniteServiceVersion20100801.GetMetricData, signed for the service
 * "monitoring") fetches up to 500 queues per call; the newest datum of each within the lookback
 * is the value, and its timestamp says how old the value is (qrel_sample_age_seconds), since
 * CloudWatch lags the queue by a minute or more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "sqs/cloudwatch.h"
#include "alloc.h"
#include "deadline.h"

#define CW_PERIOD 60
#define CW_MAX_PAGES 20

char *sqs_cw_request_body(const char *const *queues, size_t n, double start, double end, int period,
                          const char *next_token)
{
    json_t *qs = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "q%zu", i);
        json_t *dim = json_pack("{s:s, s:s}", "Name", "QueueName", "Value", queues[i]);
        json_t *metric = json_pack("{s:s, s:s, s:[o]}", "Namespace", "AWS/SQS", "MetricName",
                                   "ApproximateAgeOfOldestMessage", "Dimensions", dim);
        json_t *stat =
            json_pack("{s:o, s:i, s:s}", "Metric", metric, "Period", period, "Stat", "Maximum");
        json_array_append_new(
            qs, json_pack("{s:s, s:o, s:b}", "Id", id, "MetricStat", stat, "ReturnData", 1));
    }
    /* AWS JSON 1.0 carries timestamps as epoch seconds */
    json_t *o = json_pack("{s:o, s:I, s:I, s:s}", "MetricDataQueries", qs, "StartTime",
                          (json_int_t)floor(start), "EndTime", (json_int_t)ceil(end), "ScanBy",
                          "TimestampDescending");
    if (next_token)
        json_object_set_new(o, "NextToken", json_string(next_token));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* "q17" -> 17; -1 when the id is not one of ours. */
static long query_index(const char *id, size_t n)
{
    if (id[0] != 'q' || !id[1])
        return -1;
    char *end = NULL;
    unsigned long v = strtoul(id + 1, &end, 10);
    if (*end || v >= n || (id[1] == '0' && id[2]))
        return -1;
    return (long)v;
}

int sqs_cw_parse(const json_t *doc, size_t n, struct sqs_cw_datum *out, char **next, struct err *e)
{
    *next = NULL;
    const char *ctx = "$";
    json_t *results = NULL;
    if (json_expect_object(doc, ctx, e) ||
        json_need_array(doc, ctx, "MetricDataResults", &results, e))
        return -1;
    for (size_t r = 0; r < json_array_size(results); r++) {
        char rctx[64];
        json_path_index(rctx, sizeof rctx, "$.MetricDataResults", r);
        json_t *res = json_array_get(results, r);
        json_t *ts = NULL, *vals = NULL;
        const char *id = NULL;
        if (json_expect_object(res, rctx, e) || json_need_string(res, rctx, "Id", &id, e) ||
            json_get_array(res, rctx, "Timestamps", &ts, e) < 0 ||
            json_get_array(res, rctx, "Values", &vals, e) < 0)
            return -1;
        long k = query_index(id, n);
        if (k < 0)
            return err_set(e, ERR_PROTOCOL, "%s.Id: \"%.40s\" is not one of the queries sent", rctx,
                           id);
        size_t m = json_array_size(ts);
        if (m != json_array_size(vals))
            return err_set(e, ERR_PROTOCOL,
                           "%s: %zu Timestamps but %zu Values (want one value per timestamp)", rctx,
                           m, json_array_size(vals));
        for (size_t i = 0; i < m; i++) {
            json_t *t = json_array_get(ts, i), *v = json_array_get(vals, i);
            if (!json_is_number(t) || !json_is_number(v)) {
                char p[96];
                json_path_index(p, sizeof p, rctx, i);
                return err_set(e, ERR_PROTOCOL,
                               "%s: Timestamps%s and Values%s: want epoch seconds and a number, "
                               "got %s and %s",
                               rctx, p + strlen(rctx), p + strlen(rctx), json_type_word(t),
                               json_type_word(v));
            }
            double when = json_number_value(t), val = json_number_value(v);
            struct sqs_cw_datum *d = &out[k];
            if (!d->found || when > d->timestamp) {
                d->found = 1;
                d->timestamp = when;
                d->value = val;
            }
        }
    }
    const char *tok = NULL;
    if (json_get_string(doc, ctx, "NextToken", &tok, e) < 0)
        return -1;
    if (tok && *tok)
        *next = xstrdup(tok);
    return 0;
}

int sqs_cw_fetch(const struct sqs_aws *aws, const char *endpoint, const char *const *queues,
                 size_t n, double lookback, const struct deadline *dl, struct sqs_cw_datum *out,
                 unsigned *calls, struct err *e)
{
    double end = deadline_wall_now();
    double start = end - lookback;
    for (size_t base = 0; base < n; base += SQS_CW_MAX_QUERIES) {
        size_t m = n - base < SQS_CW_MAX_QUERIES ? n - base : SQS_CW_MAX_QUERIES;
        char *token = NULL;
        int pages = 0;
        do {
            char *body = sqs_cw_request_body(queues + base, m, start, end, CW_PERIOD, token);
            free(token);
            token = NULL;
            json_t *doc = NULL;
            (*calls)++;
            int rc = sqs_client_aws_call(aws, endpoint, "monitoring",
                                         "GraniteServiceVersion20100801.GetMetricData",
                                         "CloudWatch GetMetricData", body, dl, &doc, NULL, e);
            free(body);
            if (rc)
                return -1;
            rc = sqs_cw_parse(doc, m, out + base, &token, e);
            json_decref(doc);
            if (rc)
                return err_prefix(e, "CloudWatch GetMetricData");
        } while (token && ++pages < CW_MAX_PAGES);
        free(token);
    }
    return 0;
}
