/* dead_letter.c: the pure parts of `qrel dlq` on JetStream (declared in nats.h): the replies of
 * the JetStream API it reads (STREAM.INFO's state, STREAM.MSG.GET's stored message, a PubAck,
 * an API error), the MAX_DELIVERIES advisory, a stored message's header block, the replay stamp
 * and the Nats-Msg-Id a replay publishes with. Bytes or a parsed document in, values out; no
 * I/O, so the unit tests feed replies recorded from nats-server 2.9.10. */
#include "nats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "dlq_kind.h"
#include "alloc.h"
#include "text.h"

/* JetStream's "no message found" (STREAM.MSG.GET of a sequence that is not there). */
#define JS_ERR_NO_MESSAGE 10037
/* STREAM.MSG.DELETE's "sequence N not found" and its store failures ("stream store EOF"). */
#define JS_ERR_SEQ_NOT_FOUND 10043
#define JS_ERR_DELETE_FAILED 10057

int nats_api_error(const json_t *doc, const char *what, struct err *e)
{
    if (json_expect_object(doc, "$", e))
        return err_prefix(e, "%s", what);
    const json_t *er = json_object_get(doc, "error");
    if (!er || json_is_null(er))
        return 0;
    const char *desc = json_string_value(json_object_get(er, "description"));
    json_int_t code = json_integer_value(json_object_get(er, "err_code"));
    json_int_t status = json_integer_value(json_object_get(er, "code"));
    if (code == JS_ERR_NO_MESSAGE)
        return 1;
    enum err_code r = status == 401 || status == 403 ? ERR_AUTH : ERR_QUERY;
    return err_set(e, r, "%s: %.200s (code %lld, err_code %lld)", what,
                   desc ? desc : "an error without a description", (long long)status,
                   (long long)code);
}

int nats_stream_state_parse(const json_t *doc, const char *what, struct nats_stream_state *s,
                            struct err *e)
{
    memset(s, 0, sizeof *s);
    int rc = nats_api_error(doc, what, e);
    if (rc)
        return rc;
    json_t *state, *subjects = NULL;
    double v;
    if (json_need_object(doc, "$", "state", &state, e))
        return err_prefix(e, "%s", what);
    if (json_need_number(state, "$.state", "messages", &v, e))
        return err_prefix(e, "%s", what);
    s->messages = (long long)v;
    double first = 0, last = 0;
    if (json_get_number(state, "$.state", "first_seq", &first, e) < 0 ||
        json_get_number(state, "$.state", "last_seq", &last, e) < 0 ||
        json_get_object(state, "$.state", "subjects", &subjects, e) < 0)
        return err_prefix(e, "%s", what);
    s->first_seq = (long long)first;
    s->last_seq = (long long)last;
    /* With subjects_filter, the messages per subject: their sum is what the filter holds. */
    s->filtered = -1;
    if (subjects) {
        const char *k;
        json_t *n;
        s->filtered = 0;
        json_object_foreach(subjects, k, n)
        {
            if (json_is_integer(n))
                s->filtered += (long long)json_integer_value(n);
        }
    }
    return 0;
}

/* base64 text to a malloc'd buffer (NUL-terminated for convenience). */
static int b64(const char *in, unsigned char **out, size_t *len)
{
    size_t n = strlen(in);
    *out = xmalloc(n / 4 * 3 + 3);
    long got = text_base64_decode(in, n, 0, *out);
    if (got < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    (*out)[got] = '\0';
    *len = (size_t)got;
    return 0;
}

int nats_msg_get_parse(const json_t *doc, const char *what, struct nats_stored *m, struct err *e)
{
    memset(m, 0, sizeof *m);
    int rc = nats_api_error(doc, what, e);
    if (rc)
        return rc;
    json_t *msg;
    const char *subject, *hdrs = NULL, *data = NULL;
    double seq;
    if (json_need_object(doc, "$", "message", &msg, e) ||
        json_need_string(msg, "$.message", "subject", &subject, e) ||
        json_need_number(msg, "$.message", "seq", &seq, e) ||
        json_get_string(msg, "$.message", "hdrs", &hdrs, e) < 0 ||
        json_get_string(msg, "$.message", "data", &data, e) < 0 ||
        json_get_time(msg, "$.message", "time", &m->time, e) < 0)
        return err_prefix(e, "%s", what);
    m->subject = xstrdup(subject);
    m->seq = (long long)seq;
    const char *bad = hdrs && b64(hdrs, &m->hdrs, &m->hdrs_len) ? "hdrs"
                      : b64(data ? data : "", &m->data, &m->data_len) ? "data"
                                                                      : NULL;
    if (bad) {
        nats_stored_free(m);
        return err_set(e, ERR_PROTOCOL, "%s: $.message.%s: want base64", what, bad);
    }
    return 0;
}

void nats_stored_free(struct nats_stored *m)
{
    free(m->subject);
    free(m->hdrs);
    free(m->data);
    memset(m, 0, sizeof *m);
}

int nats_advisory_parse(const char *data, size_t len, struct nats_advisory *a)
{
    memset(a, 0, sizeof *a);
    a->stream_seq = -1;
    a->deliveries = -1;
    json_t *doc = json_loadb(data, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return -1;
    }
    const char *stream = json_string_value(json_object_get(doc, "stream"));
    const char *consumer = json_string_value(json_object_get(doc, "consumer"));
    const char *ts = json_string_value(json_object_get(doc, "timestamp"));
    const json_t *seq = json_object_get(doc, "stream_seq");
    const json_t *dl = json_object_get(doc, "deliveries");
    a->stream = stream ? xstrdup(stream) : NULL;
    a->consumer = consumer ? xstrdup(consumer) : NULL;
    if (json_is_integer(seq) && json_integer_value(seq) > 0)
        a->stream_seq = (long long)json_integer_value(seq);
    if (json_is_integer(dl) && json_integer_value(dl) >= 0)
        a->deliveries = (long long)json_integer_value(dl);
    if (ts && json_parse_rfc3339(ts, &a->time))
        a->time = 0;
    json_decref(doc);
    return a->stream && a->stream_seq > 0 ? 0 : -1;
}

void nats_advisory_free(struct nats_advisory *a)
{
    free(a->stream);
    free(a->consumer);
    memset(a, 0, sizeof *a);
}

int nats_headers_parse(const unsigned char *blk, size_t len, struct nats_headers *h)
{
    memset(h, 0, sizeof *h);
    if (!blk || len == 0)
        return 0;
    const char *p = (const char *)blk, *end = p + len;
    const char *eol = memchr(p, '\n', len);
    if (len < 8 || memcmp(p, "NATS/1.0", 8) != 0 || !eol)
        return -1;
    for (p = eol + 1; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *stop = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        if (stop == p) /* the blank line that ends the block */
            break;
        const char *colon = memchr(p, ':', (size_t)(stop - p));
        if (!colon || colon == p) {
            nats_headers_free(h);
            return -1;
        }
        const char *v = colon + 1;
        while (v < stop && (*v == ' ' || *v == '\t'))
            v++;
        h->v = xrealloc(h->v, (h->n + 1) * sizeof *h->v);
        h->v[h->n].key = xstrndup(p, (size_t)(colon - p));
        h->v[h->n].value = xstrndup(v, (size_t)(stop - v));
        h->n++;
        if (eol == end)
            break;
    }
    return 0;
}

const char *nats_headers_get(const struct nats_headers *h, const char *key)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcasecmp(h->v[i].key, key) == 0)
            return h->v[i].value;
    return NULL;
}

void nats_headers_free(struct nats_headers *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].key);
        free(h->v[i].value);
    }
    free(h->v);
    memset(h, 0, sizeof *h);
}

int nats_header_replaced(const char *key)
{
    /* Nats-Msg-Id: within the stream's duplicate window the producer's own id would make
     * JetStream drop the copy as a duplicate of the original, so the replay sets its own.
     * Nats-Expected-*: conditions of the first publish (last sequence, stream), which the copy
     * would fail. The stamp: replaced by the new count. */
    return strcasecmp(key, "Nats-Msg-Id") == 0 || strncasecmp(key, "Nats-Expected-", 14) == 0 ||
           strcasecmp(key, DLQ_STAMP) == 0;
}

int64_t nats_dlq_replays(const char *stamp)
{
    if (!stamp)
        return 0;
    size_t len = strlen(stamp);
    if (len == 0 || len > 18) /* 18 digits always fit an int64 */
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (stamp[i] < '0' || stamp[i] > '9')
            return -1;
        v = v * 10 + (stamp[i] - '0');
    }
    return v;
}

char *nats_replay_msg_id(const char *stream, long long seq)
{
    return xasprintf("qrel-replay:%s:%lld", stream, seq);
}

int nats_pub_ack_parse(const char *data, size_t len, const char *stream, int *duplicate,
                       struct err *e)
{
    *duplicate = 0;
    json_t *doc = json_parse_body(data, len, "the publish ack", e);
    if (!doc)
        return -1;
    int rc = nats_api_error(doc, "the publish ack", e);
    const char *got = NULL;
    if (rc == 0 && json_get_string(doc, "$", "stream", &got, e) < 0)
        rc = -1;
    else if (rc == 0 && !got)
        rc = err_set(e, ERR_PROTOCOL, "the publish ack names no stream");
    else if (rc == 0 && got && strcmp(got, stream) != 0)
        rc = err_set(e, ERR_QUERY,
                     "the subject is now stored by stream \"%.100s\", not \"%.100s\": the copy "
                     "went there",
                     got, stream);
    else if (rc == 1)
        rc = err_set(e, ERR_PROTOCOL, "the publish ack says no message found");
    const json_t *dup = json_object_get(doc, "duplicate");
    *duplicate = json_is_true(dup);
    json_decref(doc);
    return rc ? -1 : 0;
}

int nats_msg_delete_parse(const json_t *doc, const char *what, struct err *e)
{
    if (json_expect_object(doc, "$", e))
        return err_prefix(e, "%s", what);
    const json_t *er = json_object_get(doc, "error");
    json_int_t code = json_integer_value(json_object_get(er, "err_code"));
    const char *desc = json_string_value(json_object_get(er, "description"));
    /* 10043 "sequence N not found": deleted before; 10057 "stream store EOF": beyond the last
     * sequence, so never there. Either way there is nothing left to delete. */
    if (code == JS_ERR_SEQ_NOT_FOUND ||
        (code == JS_ERR_DELETE_FAILED && desc && strstr(desc, "EOF")))
        return 1;
    int rc = nats_api_error(doc, what, e);
    if (rc == 0 && !json_is_true(json_object_get(doc, "success")))
        return err_set(e, ERR_PROTOCOL, "%s: no success in the reply", what);
    return rc ? -1 : 0;
}

const char *nats_dlq_stream_name(const char *queue)
{
    const char *slash = strrchr(queue, '/');
    return slash ? slash + 1 : queue;
}
