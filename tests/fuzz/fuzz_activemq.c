/* fuzz_activemq.c: libFuzzer target for the activemq kind's pure parsers (collectors/activemq/
 * activemq.h): a bulk Jolokia reply read under the shared and the individual dead-letter policy
 * (every path either adds series or fails with an error, never crashes), and the delivery-limit
 * parser on the input as a dlqDeliveryFailureCause string. The input is also read by
 * activemq_reply_parse, the scrape's reader, which must give the same series wherever jansson reads
 * the document (it does not validate the values it skips, so it may answer where jansson does not).
 * Any input must end in a result, never a read outside the bytes given. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "activemq/activemq.h"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The series of doc (NULL: none) under the policy dlq; NULL when the collection failed. */
static struct metric_set *collect(const json_t *doc, const char *dlq)
{
    if (!doc)
        return NULL;
    struct metric_set *s = metric_set_new("fuzz", "activemq");
    struct activemq_filter f = {.broker_name = "localhost", .dead_letter_queue = dlq};
    struct entry_skips skips = {0};
    struct activemq_result res;
    struct err e;
    err_clear(&e);
    int rc = activemq_bulk_collect(doc, &f, 1796520500.0, s, &skips, &res, &e);
    if (rc == 0 && metric_set_error(s))
        abort(); /* a sample the catalogue refuses is a bug */
    entry_skips_free(&skips);
    if (rc) {
        metric_set_free(s);
        return NULL;
    }
    return s;
}

/* The same samples in the same order, or both none. */
static int same_series(const struct metric_set *a, const struct metric_set *b)
{
    if (!a || !b)
        return !a && !b;
    if (metric_set_len(a) != metric_set_len(b))
        return 0;
    for (size_t i = 0; i < metric_set_len(a); i++) {
        struct metric_sample x, y;
        metric_set_get(a, i, &x);
        metric_set_get(b, i, &y);
        if (x.family != y.family || x.nlabels != y.nlabels ||
            !(x.value == y.value || (x.value != x.value && y.value != y.value)))
            return 0;
        for (size_t k = 0; k < x.nlabels; k++)
            if (strcmp(x.labels[k].name, y.labels[k].name) ||
                strcmp(x.labels[k].value, y.labels[k].value))
                return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    double v;
    if (activemq_cause_max_deliveries(text, &v) == 1 && !(v >= 1 && v <= 1e9 + 1))
        abort();
    free(text);
    struct err e;
    err_clear(&e);
    json_t *doc = json_parse_body((const char *)data, size, "fuzz", &e);
    json_t *slim = activemq_reply_parse((const char *)data, size, "fuzz", &e);
    if (doc && !slim)
        abort(); /* the scrape's reader refused what jansson reads */
    static const char *const dlqs[] = {"ActiveMQ.DLQ", "DLQ.{queue}"};
    for (size_t i = 0; i < 2; i++) {
        struct metric_set *a = collect(doc, dlqs[i]), *b = collect(slim, dlqs[i]);
        if (doc && !same_series(a, b))
            abort();
        metric_set_free(a);
        metric_set_free(b);
    }
    json_decref(doc);
    json_decref(slim);
    return 0;
}
