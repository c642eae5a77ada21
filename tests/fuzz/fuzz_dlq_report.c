/* fuzz_dlq_report.c: libFuzzer target for what `qrel dlq` prints (cli/dlq_report.h) over any
 * read a broker could produce: ids and error texts of any bytes, dead_since any double (inf,
 * nan, 1e300, negative), any delivery count, class, replay choice and fate, --rate, --limit and
 * --sample. The text report must not crash or hit undefined behaviour (a time cast to time_t),
 * and the JSON must be one valid JSON document: no inf or nan token, valid UTF-8, every string
 * escaped. The bytes are read as a stream of fields; a short input ends the read early. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlq.h"
#include "dlq_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
    const uint8_t *p;
    size_t left;
};

static void take(struct in *in, void *out, size_t n)
{
    memset(out, 0, n);
    size_t k = n < in->left ? n : in->left;
    memcpy(out, in->p, k);
    in->p += k;
    in->left -= k;
}

static uint8_t byte(struct in *in)
{
    uint8_t b;
    take(in, &b, 1);
    return b;
}

/* A string of up to 15 bytes of the input (length from its first byte), or NULL for 255. */
static char *text(struct in *in)
{
    uint8_t len = byte(in);
    if (len == 255)
        return NULL;
    len &= 15;
    char *s = calloc(1, (size_t)len + 1);
    take(in, s, len);
    return s;
}

static const struct dlq_kind kind = {.read_effect = "read \"effect\""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = {data, size};
    uint8_t flags = byte(&in);
    struct dlq_read r;
    memset(&r, 0, sizeof r);
    r.kind = &kind;
    r.released = 1;
    r.batch.dead_letter_queue = text(&in);
    r.batch.origin = text(&in);
    size_t n = byte(&in) & 31;
    uint16_t extra;
    take(&in, &extra, sizeof extra);
    r.batch.total = n + extra;
    r.work = calloc(n + 1, sizeof *r.work);
    r.choice = calloc(n + 1, sizeof *r.choice);
    r.fate = calloc(n + 1, sizeof *r.fate);
    r.error = calloc(n + 1, sizeof *r.error);
    struct dlq_replay_result res = {0};
    for (size_t i = 0; i < n; i++) {
        struct dlq_message *m = dlq_batch_push(&r.batch);
        m->message_id = text(&in);
        if (!m->message_id)
            m->message_id = calloc(1, 1);
        m->work_id = text(&in);
        take(&in, &m->deliveries, sizeof m->deliveries);
        take(&in, &m->dead_since, sizeof m->dead_since);
        uint8_t c = byte(&in);
        r.work[i] = (enum dead_letter_work)(c % 3);
        r.choice[i] = (enum dlq_choice)((c >> 2) % DLQ_CHOICE_COUNT);
        r.fate[i] = (enum dlq_fate)((c >> 5) % DLQ_FATE_COUNT);
        if (r.fate[i] == DLQ_FATE_FAILED)
            r.error[i] = text(&in);
        res.n[r.fate[i]]++;
        if (r.fate[i] == DLQ_FATE_SKIPPED)
            res.skipped[r.choice[i]]++;
        else
            res.chosen++;
    }
    struct dlq_replay_opts o = {.only = (enum dlq_only)(flags % 3), .yes = flags >> 7};
    take(&in, &o.limit, sizeof o.limit);
    take(&in, &o.rate, sizeof o.rate);
    res.interrupted = (flags >> 2) & 1;
    res.stopped_after_failures = (flags >> 3) & 1;
    struct dlq_report_ctx x = {
        .source = "s\x01\"", .kind = "k", .queue = "q\xff", .work_source = "w"};
    x.sample = byte(&in);
    take(&in, &x.now, sizeof x.now);
    for (int json = 0; json < 2; json++) {
        x.json = json;
        for (int replay = 0; replay < 2; replay++) {
            struct buf out;
            buf_init(&out);
            if (replay)
                dlq_report_replay(&out, &x, &r, &o, &res);
            else
                dlq_report_inspect(&out, &x, &r);
            if (json) {
                json_error_t err;
                json_t *doc = json_loadb(out.data, out.len, 0, &err);
                if (!doc)
                    __builtin_trap();
                json_decref(doc);
            }
            buf_free(&out);
        }
    }
    dlq_read_free(&r);
    return 0;
}
