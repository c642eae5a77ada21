/* kafka/calc.c: the pure parts of the `kafka` kind (kafka.h): lag from offsets, ages, names and
 * error reasons. No I/O, so unit tests cover every edge case without a broker. */
#include "kafka.h"

#include <string.h>

#include "alloc.h"
#include "text.h"

int64_t kafka_partition_lag(const struct kafka_offsets *o, int64_t *first)
{
    int64_t low = o->low < 0 ? 0 : o->low;
    int64_t start = o->committed < low ? low : o->committed;
    if (o->high <= start) {
        *first = -1;
        return 0;
    }
    *first = start;
    return o->high - start;
}

double kafka_age_seconds(int64_t now_ms, int64_t ts_ms)
{
    if (ts_ms >= now_ms)
        return 0.0;
    return (double)(now_ms - ts_ms) / 1000.0;
}

char *kafka_dlq_name(const char *tmpl, const char *topic)
{
    return text_substitute(tmpl, "{topic}", topic);
}

enum err_code kafka_err_code(rd_kafka_resp_err_t code, const char *text)
{
    switch (code) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
        /* librdkafka reports a reply larger than receive.message.max.bytes as a transport
         * error: "Invalid response size N (0..M): increase receive.message.max.bytes". A
         * broker that answers garbage says so too, with a nonsense N; both are "the reply was
         * bigger than we allow". */
        if (text && strstr(text, "Invalid response size"))
            return ERR_LIMIT;
        return ERR_CONNECT;
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__NODE_UPDATE:
        return ERR_CONNECT;
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return ERR_AUTH;
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
        return ERR_TIMEOUT;
    case RD_KAFKA_RESP_ERR__BAD_MSG:
    case RD_KAFKA_RESP_ERR__BAD_COMPRESSION:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
        return ERR_PROTOCOL;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        return ERR_LIMIT;
    default:
        return ERR_QUERY;
    }
}

char *kafka_full_regex(const char *pattern)
{
    return xasprintf("^(%s)$", pattern);
}
