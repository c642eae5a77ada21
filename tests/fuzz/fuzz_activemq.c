/* fuzz_activemq.c: libFuzzer target for the activemq kind's pure parsers (collectors/activemq/
 * activemq.h): a bulk Jolokia reply read under the shared and the individual dead-letter policy
 * (every path either adds series or fails with an error, never crashes), and the delivery-limit
 * parser on the input as a dlqDeliveryFailureCause string. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "activemq/activemq.h"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void collect(const json_t *doc, const char *dlq)
{
    struct metric_set *s = metric_set_new("fuzz", "activemq");
    struct activemq_filter f = {.broker_name = "localhost", .dead_letter_queue = dlq};
    struct entry_skips skips = {0};
    struct activemq_result res;
    struct err e;
    err_clear(&e);
    if (activemq_bulk_collect(doc, &f, 1796520500.0, s, &skips, &res, &e) == 0 &&
        metric_set_error(s))
        abort(); /* a sample the catalogue refuses is a bug */
    entry_skips_free(&skips);
    metric_set_free(s);
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
    if (!doc)
        return 0;
    collect(doc, "ActiveMQ.DLQ");
    collect(doc, "DLQ.{queue}");
    json_decref(doc);
    return 0;
}
