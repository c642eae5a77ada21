/* sqs/cloudwatch.h: what the collector (sqs.c) takes from cloudwatch.c: the age of the oldest
 * message of queues, read from CloudWatch through the source's request path (client.h). Its
 * pure parts are declared in sqs.h for the tests. Private to the folder. */
#ifndef QREL_SQS_CLOUDWATCH_H
#define QREL_SQS_CLOUDWATCH_H

#include "sqs/client.h"

/* Fetches the newest datum for every queue in queues[0..n) into out (calls GetMetricData in
 * batches of SQS_CW_MAX_QUERIES, following NextToken). *calls counts the requests made. */
int sqs_cw_fetch(const struct sqs_aws *aws, const char *endpoint, const char *const *queues,
                 size_t n, double lookback, const struct deadline *dl, struct sqs_cw_datum *out,
                 unsigned *calls, struct err *e);

#endif
