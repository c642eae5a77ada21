/* fuzz_promtext.c: libFuzzer target for the Prometheus text parser (collectors/common/promtext.h):
 * any body parses or fails with a line number, and every sample handed out is well formed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_sample(void *ctx, const struct promtext_sample *s, struct err *e)
{
    size_t *n = ctx;
    (*n)++;
    if (s->name_len == 0 || s->nlabels > PROMTEXT_MAX_LABELS)
        __builtin_trap();
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].value[s->labels[i].value_len] != '\0' || s->labels[i].name_len == 0)
            __builtin_trap();
    (void)promtext_label(s, "queue");
    (void)promtext_name_is(s, "rabbitmq_detailed_queue_messages");
    (void)e;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so ASan sees any read past the body's end. */
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    size_t n = 0;
    struct err e;
    err_clear(&e);
    int rc = promtext_parse(body, size, "fuzz", on_sample, &n, &e);
    if (rc != 0 && strncmp(e.msg, "fuzz: ", 6) != 0)
        __builtin_trap();
    free(body);
    return 0;
}
