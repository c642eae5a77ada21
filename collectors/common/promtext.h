/* promtext.h: a small, strict reader of the Prometheus text exposition format (0.0.4), for
 * brokers that publish their own metrics that way (the rabbitmq_prometheus plugin).
 *
 * It reads what the format allows and nothing else: `# HELP` / `# TYPE` / other comments, blank
 * lines, and samples `name{label="value",...} value [timestamp]`, with the escapes \\ \" \n in
 * label values and the values NaN, +Inf, -Inf and any strtod number. Anything else is an
 * ERR_PROTOCOL error naming the line, so a page that is not what we asked for (an HTML error page,
 * a truncated body) fails loudly instead of yielding partial numbers. It does not keep the text:
 * each sample is handed to a callback with its labels unescaped, and forgotten. */
#ifndef QREL_PROMTEXT_H
#define QREL_PROMTEXT_H

#include <stddef.h>

#include "err.h"

#define PROMTEXT_MAX_LABELS 32

struct promtext_label {
    const char *name; /* not NUL-terminated: name_len bytes */
    size_t name_len;
    const char *value; /* unescaped, NUL-terminated (value_len bytes before the NUL) */
    size_t value_len;
};

struct promtext_sample {
    const char *name; /* the sample's metric name, not NUL-terminated */
    size_t name_len;
    struct promtext_label labels[PROMTEXT_MAX_LABELS];
    size_t nlabels;
    double value;
};

/* Called once per sample; the sample and its strings are valid only during the call. Return 0
 * to go on, -1 (with e set) to stop the parse with that error. */
typedef int (*promtext_sample_fn)(void *ctx, const struct promtext_sample *s, struct err *e);

/* Parses len bytes of text. what names the source in errors ("GET /metrics/detailed"):
 *   GET /metrics/detailed: line 12: want '=' after label name "queue"
 * The last line may lack its newline. Returns 0, or -1 with e set (by the parser or fn). */
int promtext_parse(const char *text, size_t len, const char *what, promtext_sample_fn fn, void *ctx,
                   struct err *e);

/* Whether the caller wants the samples named name[0, len) (not NUL-terminated). */
typedef int (*promtext_want_fn)(void *ctx, const char *name, size_t len);

/* promtext_parse for a reader that wants a few families of a large page (the rabbitmq kind reads
 * 3 of the 5 per-queue families of its depth request): a sample whose name want refuses is passed
 * over once its name is read, its labels and value neither parsed nor checked (NUL bytes and
 * lines that do not start with a name still fail). want NULL wants every sample. */
int promtext_parse_some(const char *text, size_t len, const char *what, promtext_want_fn want,
                        promtext_sample_fn fn, void *ctx, struct err *e);

/* The value of label name in s, or NULL. */
const struct promtext_label *promtext_label(const struct promtext_sample *s, const char *name);

/* s's name is exactly name. */
int promtext_name_is(const struct promtext_sample *s, const char *name);

#endif
