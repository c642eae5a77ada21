/* sqs/dlq.c: what `qrel dlq` does with an SQS dead-letter queue (the hooks of dlq_kind.h).
 *
 * SQS has no way to look at a message without receiving it, so read() receives from the
 * dead-letter queue named by the source queue's RedrivePolicy (only from it: the source queue's
 * own messages are never received), hiding what it read for dlq_visibility_timeout; each receive
 * raises the message's ApproximateReceiveCount by one, which nothing can take back (read_effect).
 * While a read or a replay outlasts half of that timeout, the messages still held are hidden
 * again, so none turns visible under a running replay; if the process dies, they turn visible
 * by themselves when the timeout ends, and a second run finds them. release() makes visible at
 * once (ChangeMessageVisibilityBatch to 0) every message read and not removed.
 *
 * A replay puts a message back with SendMessage on the source queue (body and message
 * attributes as read; FIFO: its MessageGroupId and a fresh MessageDeduplicationId, since SQS
 * would drop a resend under the original one for 5 minutes) and only then deletes it from the
 * dead-letter queue with the receipt handle of our receive. */
#include "sqs/dlq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "sqs/client.h"
#include "sqs/settings.h"
#include "sqs/sqs.h"
#include "alloc.h"
#include "deadline.h"

/* How long a failed read may still spend making visible what it had received. */
#define RELEASE_GRACE_SECONDS 5.0

/* The batch's kind_data: where the messages came from and go back to. */
struct dlq_state {
    char *source_url;
    char *dlq_url;
    char *dlq_name;
    int source_fifo;
    int visibility;       /* seconds */
    int64_t hidden_at_ms; /* when the held messages were last hidden for visibility (monotonic) */
    unsigned calls;
};

static void state_free(void *p)
{
    struct dlq_state *st = p;
    if (!st)
        return;
    free(st->source_url);
    free(st->dlq_url);
    free(st->dlq_name);
    free(st);
}

static struct sqs_dead_letter *letter(const struct dlq_batch *b, size_t i)
{
    return b->v[i].kind_data;
}

/* Sets the visibility of every held message of b to timeout seconds, ten per request; a message
 * made visible (timeout 0) is no longer held. Goes on after a failed request, so one bad
 * receipt handle does not leave the others hidden; returns the first error. */
static int set_visibility(struct collector *c, struct dlq_batch *b, int timeout,
                          const struct deadline *dl, struct err *e)
{
    struct dlq_state *st = b->kind_data;
    char what[200];
    snprintf(what, sizeof what, "AmazonSQS.ChangeMessageVisibilityBatch \"%s\"", st->dlq_name);
    int rc = 0;
    struct err first;
    err_clear(&first);
    struct sqs_dead_letter *chunk[SQS_DLQ_BATCH];
    size_t i = 0;
    while (i < b->n) {
        size_t k = 0;
        for (; i < b->n && k < SQS_DLQ_BATCH; i++)
            if (letter(b, i)->held)
                chunk[k++] = letter(b, i);
        if (k == 0)
            break;
        char *body = sqs_dlq_visibility_body(st->dlq_url, chunk, k, timeout);
        json_t *doc = NULL;
        struct err one;
        err_clear(&one);
        int failed = sqs_client_request(c, &st->calls, "ChangeMessageVisibilityBatch", what, body,
                                        dl, &doc, NULL, &one) ||
                     sqs_dlq_check_batch(doc, what, chunk, k, &one);
        free(body);
        json_decref(doc);
        if (failed && rc == 0) {
            first = one;
            rc = -1;
        }
        if (!failed && timeout == 0)
            for (size_t j = 0; j < k; j++)
                chunk[j]->held = 0;
    }
    if (rc)
        *e = first;
    return rc;
}

/* Hides the held messages again once half of the visibility timeout has passed. */
static int keep_hidden(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                       struct err *e)
{
    struct dlq_state *st = b->kind_data;
    int64_t now = deadline_now_ms();
    if (now - st->hidden_at_ms < (int64_t)st->visibility * 500)
        return 0;
    if (set_visibility(c, b, st->visibility, dl, e))
        return -1;
    st->hidden_at_ms = now;
    return 0;
}

/* The source queue's URL, RedrivePolicy and FIFO flag, and its dead-letter queue's URL and
 * depth, into b. */
static int find_queues(struct collector *c, const char *queue, const struct deadline *dl,
                       struct dlq_batch *b, struct err *e)
{
    struct dlq_state *st = b->kind_data;
    struct sqs_attrs src, dead;
    memset(&src, 0, sizeof src);
    memset(&dead, 0, sizeof dead);
    int rc = -1;
    st->source_url = sqs_settings_url(c->priv, queue);
    if (!st->source_url) {
        int got = sqs_client_queue_url(c, &st->calls, queue, NULL, dl, &st->source_url, e);
        if (got <= 0) {
            if (got == 0)
                err_set(e, ERR_QUERY, "no such queue");
            goto out;
        }
    }
    int got = sqs_client_attributes(c, &st->calls, st->source_url, queue, 1, dl, &src, e);
    if (got <= 0) {
        if (got == 0)
            err_set(e, ERR_QUERY, "no such queue");
        goto out;
    }
    if (!src.has_redrive) {
        err_set(e, ERR_QUERY, "no RedrivePolicy, so no dead-letter queue to read");
        goto out;
    }
    st->source_fifo = src.fifo;
    st->dlq_name = xstrdup(src.redrive.dlq_name);
    got = sqs_client_queue_url(c, &st->calls, src.redrive.dlq_name, src.redrive.dlq_account, dl,
                               &st->dlq_url, e);
    if (got <= 0) {
        if (got == 0)
            err_set(e, ERR_QUERY, "its dead-letter queue \"%s\" does not exist",
                    src.redrive.dlq_name);
        goto out;
    }
    /* A policy naming the queue itself would make read() receive the source's own messages */
    if (strcmp(st->dlq_url, st->source_url) == 0 ||
        (src.arn && strcmp(src.arn, src.redrive.dlq_arn) == 0)) {
        err_set(e, ERR_QUERY, "its RedrivePolicy names the queue itself");
        goto out;
    }
    got = sqs_client_attributes(c, &st->calls, st->dlq_url, st->dlq_name, 0, dl, &dead, e);
    if (got <= 0) {
        if (got == 0)
            err_set(e, ERR_QUERY, "its dead-letter queue \"%s\" does not exist", st->dlq_name);
        goto out;
    }
    b->total = (size_t)(dead.ready + dead.in_flight + dead.delayed);
    b->dead_letter_queue = xstrdup(st->dlq_name);
    b->origin = xstrdup(queue);
    rc = 0;
out:
    sqs_attrs_free(&src);
    sqs_attrs_free(&dead);
    return rc;
}

/* Adds the messages of one receive to b; one read again (its visibility ran out under a slow
 * read) keeps its place and takes the newer receipt handle. *added counts the new ones. */
static void add_letters(struct dlq_batch *b, struct sqs_dead_letter **v, size_t n,
                        const char *id_field, size_t *added)
{
    for (size_t i = 0; i < n; i++) {
        struct sqs_dead_letter *m = v[i];
        size_t k = 0;
        while (k < b->n && strcmp(letter(b, k)->message_id, m->message_id) != 0)
            k++;
        if (k < b->n) {
            struct sqs_dead_letter *old = letter(b, k);
            free(old->receipt_handle);
            old->receipt_handle = m->receipt_handle;
            m->receipt_handle = NULL;
            old->held = 1;
            sqs_dead_letter_free(m);
            continue;
        }
        struct dlq_message *dm = dlq_batch_push(b);
        dm->message_id = xstrdup(m->message_id);
        size_t len = 0;
        sqs_dlq_work_id(m, id_field, &dm->work_id, &len);
        /* an id with a NUL byte matches no row: counted as without one */
        if (dm->work_id && strlen(dm->work_id) != len) {
            free(dm->work_id);
            dm->work_id = NULL;
        }
        /* the count SQS reports includes this very receive */
        dm->deliveries = m->receive_count >= 1 ? (int64_t)m->receive_count - 1 : -1;
        dm->dead_since = m->sent;
        dm->replays = m->replays;
        dm->body_bytes = m->body_len;
        dm->kind_data = m;
        (*added)++;
    }
    free(v);
}

/* One ReceiveMessage of at most want messages on the dead-letter queue; *added counts the new. */
static int receive(struct collector *c, struct dlq_batch *b, const char *id_field, size_t want,
                   int wait, const struct deadline *dl, size_t *added, struct err *e)
{
    struct dlq_state *st = b->kind_data;
    char what[200];
    snprintf(what, sizeof what, "AmazonSQS.ReceiveMessage \"%s\"", st->dlq_name);
    char *body = sqs_dlq_receive_body(st->dlq_url, (int)want, st->visibility, wait);
    json_t *doc = NULL;
    int rc = sqs_client_request(c, &st->calls, "ReceiveMessage", what, body, dl, &doc, NULL, e);
    free(body);
    struct sqs_dead_letter **v = NULL;
    size_t n = 0;
    if (rc == 0)
        rc = sqs_dlq_parse_receive(doc, what, &v, &n, e);
    json_decref(doc);
    *added = 0;
    if (rc == 0)
        add_letters(b, v, n, id_field, added);
    return rc;
}

/* Receives until max messages are read or the queue has no more to give: an empty short poll
 * is asked once more with a 1 s long poll (SQS's short poll samples only some of its servers,
 * so one empty answer does not prove the queue empty while fewer than it counted were read). */
static int read_letters(struct collector *c, const char *queue, const char *id_field, size_t max,
                        enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                        struct err *e)
{
    (void)purpose; /* SQS reads the same way for both */
    struct dlq_state *st = xcalloc(1, sizeof *st);
    out->kind_data = st;
    double vis = ceil(((const struct sqs_state *)c->priv)->dlq_visibility);
    st->visibility = (int)vis;
    if (find_queues(c, queue, dl, out, e))
        return -1;
    size_t expected = out->total < max ? out->total : max;
    st->hidden_at_ms = deadline_now_ms();
    int rc = 0;
    int waited = 0;
    while (out->n < max) {
        size_t want = max - out->n < SQS_DLQ_BATCH ? max - out->n : SQS_DLQ_BATCH;
        size_t added = 0;
        int wait = out->n < expected && waited ? 1 : 0;
        if ((rc = keep_hidden(c, out, dl, e)) ||
            (rc = receive(c, out, id_field, want, wait, dl, &added, e)))
            break;
        if (added > 0)
            continue;
        if (waited || out->n >= expected)
            break;
        waited = 1;
    }
    if (rc) {
        struct deadline grace = deadline_in(RELEASE_GRACE_SECONDS);
        struct err ignored;
        set_visibility(c, out, 0, &grace, &ignored);
        return -1;
    }
    if (log_enabled(LOG_DEBUG)) {
        char n[32], calls[32];
        snprintf(n, sizeof n, "%zu", out->n);
        snprintf(calls, sizeof calls, "%u", st->calls);
        log_kv(LOG_DEBUG, "sqs dead letters read", "source", c->name, "queue", queue,
               "dead_letter_queue", st->dlq_name, "messages", n, "requests", calls, NULL);
    }
    return 0;
}

static int requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *dm,
                   const struct deadline *dl, struct err *e)
{
    struct dlq_state *st = b->kind_data;
    struct sqs_dead_letter *m = dm->kind_data;
    if (keep_hidden(c, b, dl, e))
        return -1;
    char *dedup = NULL;
    if (st->source_fifo) {
        if (!m->group_id)
            return err_set(e, ERR_QUERY,
                           "message %s has no MessageGroupId, which FIFO queue \"%s\" needs",
                           m->message_id, b->origin);
        dedup = sqs_dlq_dedup_id(m, (long long)(deadline_wall_now() * 1000));
    }
    char what[200];
    snprintf(what, sizeof what, "AmazonSQS.SendMessage \"%s\"", b->origin);
    int stamped = 1;
    char *body = sqs_dlq_send_body(st->source_url, m, dedup, &stamped);
    if (!stamped)
        log_kv(
            LOG_WARN,
            "replayed without the replay stamp: the message has 10 message attributes, SQS's most",
            "source", c->name, "queue", b->origin, "message_id", m->message_id, NULL);
    free(dedup);
    json_t *doc = NULL;
    int rc = sqs_client_request(c, &st->calls, "SendMessage", what, body, dl, &doc, NULL, e);
    free(body);
    if (rc == 0)
        rc = sqs_dlq_check_sent(doc, what, m, e);
    json_decref(doc);
    return rc;
}

static int remove_letter(struct collector *c, struct dlq_batch *b, struct dlq_message *dm,
                         const struct deadline *dl, struct err *e)
{
    struct dlq_state *st = b->kind_data;
    struct sqs_dead_letter *m = dm->kind_data;
    char what[200];
    snprintf(what, sizeof what, "AmazonSQS.DeleteMessage \"%s\"", st->dlq_name);
    json_t *body_o =
        json_pack("{s:s, s:s}", "QueueUrl", st->dlq_url, "ReceiptHandle", m->receipt_handle);
    char *body = json_dumps(body_o, JSON_COMPACT);
    json_decref(body_o);
    json_t *doc = NULL;
    int rc = sqs_client_request(c, &st->calls, "DeleteMessage", what, body, dl, &doc, NULL, e);
    free(body);
    json_decref(doc);
    if (rc == 0)
        m->held = 0;
    return rc;
}

static int release(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                   struct err *e)
{
    if (!b->kind_data || !((struct dlq_state *)b->kind_data)->dlq_url)
        return 0;
    return set_visibility(c, b, 0, dl, e);
}

const struct dlq_kind sqs_dlq_kind = {
    .read = read_letters,
    .requeue = requeue,
    .remove = remove_letter,
    .release = release,
    .message_free = sqs_dead_letter_free,
    .batch_free = state_free,
    .read_effect = "each read raises the message's ApproximateReceiveCount by one (SQS cannot "
                   "show a message without receiving it); every message read and not replayed is "
                   "made visible again at once",
};
