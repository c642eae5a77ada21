/* dlq.c: what `qrel dlq` does with a JetStream dead-letter stream (the hooks of dlq_kind.h), over
 * the NATS client connection (client.c) and JetStream's request API.
 *
 * JetStream gives a message up after max_deliver deliveries without moving it: it stays in its
 * stream, and the server publishes a MAX_DELIVERIES advisory naming its stream sequence, which
 * the stream's dead_letter_stream keeps. read() takes the advisories of the queue's stream from
 * the dead-letter stream with STREAM.MSG.GET by sequence (next_by_subj over the advisory subject
 * of that stream), then each one's message from the stream by its stream_seq: no consumer is
 * made and nothing is acknowledged, so reading changes nothing. A message no longer in the stream
 * (max_age, a purge, acknowledged on a work-queue stream) is lost: read as a dead letter without
 * an id, warned about, and never put back.
 *
 * A replay publishes a copy to the message's subject with its headers and body, the stamp and a
 * Nats-Msg-Id made of stream and sequence, and waits for JetStream's ack: within the stream's
 * duplicate window a second publish of the same message (a rerun after a crash, a concurrent
 * replay) is acked as a duplicate and stores nothing. Only then remove() deletes the original by
 * sequence and then the advisory. */
#include "nats/dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json_id.h"
#include "log.h"
#include "nats/client.h"
#include "alloc.h"
#include "buf.h"

#define ADVISORY_PREFIX "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."

struct dlq_state {
    struct nats_conn *conn;
    char *stream; /* the origin's JetStream name */
};

struct letter {
    struct nats_advisory adv;
    long long adv_seq; /* the advisory's sequence in the dead-letter stream */
    int lost;          /* its message is no longer in the stream */
    struct nats_stored msg;
    struct nats_headers hdrs;
};

static void letter_free(void *p)
{
    struct letter *l = p;
    if (!l)
        return;
    nats_advisory_free(&l->adv);
    nats_stored_free(&l->msg);
    nats_headers_free(&l->hdrs);
    free(l);
}

static void state_free(void *p)
{
    struct dlq_state *s = p;
    if (!s)
        return;
    nats_client_close(s->conn);
    free(s->stream);
    free(s);
}

static const struct nats_stream_spec *find_spec(const struct nats_state *st, const char *queue)
{
    for (size_t i = 0; i < st->nspecs; i++)
        if (strcmp(st->specs[i].name, queue) == 0 && st->specs[i].dead_letter_stream)
            return &st->specs[i];
    return NULL;
}

/* One request of the JetStream API on stream: subject $JS.API.<verb>.<stream>. */
static json_t *api(struct dlq_state *s, const char *verb, const char *stream, const char *body,
                   const struct deadline *dl, struct err *e)
{
    char subject[300];
    snprintf(subject, sizeof subject, "$JS.API.%s.%s", verb, stream);
    return nats_client_api(s->conn, subject, body, dl, e);
}

/* STREAM.MSG.GET of seq (next: the first message at or after seq on filter). 0, 1 none, -1. */
static int msg_get(struct dlq_state *s, const char *stream, long long seq, const char *filter,
                   const struct deadline *dl, struct nats_stored *m, struct err *e)
{
    json_t *q = filter ? json_pack("{sIss}", "seq", (json_int_t)seq, "next_by_subj", filter)
                       : json_pack("{sI}", "seq", (json_int_t)seq);
    char *body = json_dumps(q, JSON_COMPACT);
    json_decref(q);
    json_t *doc = api(s, "STREAM.MSG.GET", stream, body, dl, e);
    free(body);
    if (!doc)
        return -1;
    char what[300];
    snprintf(what, sizeof what, "STREAM.MSG.GET %.100s %lld", stream, seq);
    int rc = nats_msg_get_parse(doc, what, m, e);
    json_decref(doc);
    return rc;
}

/* The advisories of s->stream in the dead-letter stream dlq, how many there are into *total. */
static int advisories_total(struct dlq_state *s, const char *dlq, const char *filter,
                            const struct deadline *dl, struct nats_stream_state *ss, struct err *e)
{
    json_t *q = json_pack("{ss}", "subjects_filter", filter);
    char *body = json_dumps(q, JSON_COMPACT);
    json_decref(q);
    json_t *doc = api(s, "STREAM.INFO", dlq, body, dl, e);
    free(body);
    if (!doc)
        return -1;
    char what[200];
    snprintf(what, sizeof what, "STREAM.INFO %.100s", dlq);
    int rc = nats_stream_state_parse(doc, what, ss, e);
    json_decref(doc);
    return rc ? -1 : 0;
}

static void fill(struct dlq_message *dm, struct letter *l, const char *id_field)
{
    /* the message's stream sequence; an advisory naming none is named by its own sequence */
    dm->message_id = l->adv.stream_seq > 0 ? xasprintf("%lld", l->adv.stream_seq)
                                           : xasprintf("advisory %lld", l->adv_seq);
    dm->deliveries = l->adv.deliveries;
    dm->dead_since = l->adv.time > 0 ? l->adv.time : 0;
    dm->replays = -1;
    dm->kind_data = l;
    if (l->lost || !l->msg.subject)
        return;
    dm->body_bytes = l->msg.data_len;
    dm->replays = nats_dlq_replays(nats_headers_get(&l->hdrs, DLQ_STAMP));
    const char *hname = json_id_field_name(id_field, "header:");
    char *work = NULL;
    size_t len = 0;
    if (hname) {
        const char *v = nats_headers_get(&l->hdrs, hname);
        if (v && *v) {
            work = xstrdup(v);
            len = strlen(v);
        }
    } else {
        json_id_at((const char *)l->msg.data, l->msg.data_len, id_field, &work, &len);
    }
    if (work && (len == 0 || strlen(work) != len)) { /* empty, or a NUL inside: no row */
        free(work);
        work = NULL;
    }
    dm->work_id = work;
}

/* Reads the message of one advisory from the stream (lost when it is not there). */
static int read_message(struct dlq_state *s, struct letter *l, const struct deadline *dl,
                        struct err *e)
{
    if (l->adv.stream_seq <= 0)
        return 0;
    int rc = msg_get(s, s->stream, l->adv.stream_seq, NULL, dl, &l->msg, e);
    if (rc < 0)
        return -1;
    l->lost = rc == 1;
    if (rc == 0 && nats_headers_parse(l->msg.hdrs, l->msg.hdrs_len, &l->hdrs))
        return err_set(e, ERR_PROTOCOL, "stream %.100s, message %lld: a malformed header block",
                       s->stream, l->adv.stream_seq);
    return 0;
}

static void warn_lost(const char *source, const struct dlq_batch *b, const struct dlq_state *s)
{
    struct buf seqs;
    buf_init(&seqs);
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const struct letter *l = b->v[i].kind_data;
        if (!l->lost)
            continue;
        if (n++ < 10)
            buf_printf(&seqs, "%s%lld", n > 1 ? "," : "", l->adv.stream_seq);
    }
    if (n) {
        char count[32];
        snprintf(count, sizeof count, "%zu", n);
        if (n > 10)
            buf_puts(&seqs, ",...");
        log_kv(LOG_WARN,
               "dead letters lost: their advisory is in the dead-letter stream, their message is "
               "gone from the stream (max_age, a purge, an ack on a work-queue stream, or a "
               "replay killed between its two deletes); read without an id, never put back",
               "source", source, "stream", s->stream, "lost", count, "stream_seq", seqs.data, NULL);
    }
    buf_free(&seqs);
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a replay reads as inspect does: what was moved is deleted */
    struct nats_state *st = c->priv;
    const struct nats_stream_spec *sp = find_spec(st, queue);
    if (!sp)
        return err_set(e, ERR_CONFIG, "stream \"%.200s\" has no dead_letter_stream", queue);
    out->dead_letter_queue = xstrdup(sp->dead_letter_stream);
    out->origin = xstrdup(queue);
    struct dlq_state *s = xcalloc(1, sizeof *s);
    out->kind_data = s;
    s->stream = xstrdup(nats_dlq_stream_name(queue));
    s->conn = nats_client_open(st, c->name, dl, e);
    if (!s->conn)
        return -1;
    const char *dlq = nats_dlq_stream_name(sp->dead_letter_stream);
    char *filter = xasprintf(ADVISORY_PREFIX "%s.*", s->stream);
    struct nats_stream_state ss;
    int rc = advisories_total(s, dlq, filter, dl, &ss, e);
    if (rc == 0)
        out->total = (size_t)(ss.filtered >= 0 ? ss.filtered : ss.messages);
    for (long long seq = ss.first_seq > 0 ? ss.first_seq : 1;
         rc == 0 && out->n < max && seq <= ss.last_seq && ss.messages > 0;) {
        struct nats_stored adv;
        int got = msg_get(s, dlq, seq, filter, dl, &adv, e);
        if (got < 0)
            rc = -1;
        if (got != 0)
            break;
        seq = adv.seq + 1;
        if (adv.seq > ss.last_seq) { /* given up after the read began: the next run's */
            nats_stored_free(&adv);
            break;
        }
        struct letter *l = xcalloc(1, sizeof *l);
        l->adv_seq = adv.seq;
        nats_advisory_parse((const char *)adv.data, adv.data_len, &l->adv);
        if (l->adv.time <= 0)
            l->adv.time = adv.time;
        nats_stored_free(&adv);
        if (l->adv.stream && strcmp(l->adv.stream, s->stream) != 0) {
            letter_free(l); /* another stream's, under a subject that named this one */
            continue;
        }
        rc = read_message(s, l, dl, e);
        fill(dlq_batch_push(out), l, id_field);
    }
    free(filter);
    if (rc)
        return err_prefix(e, "dead-letter stream \"%.200s\"", out->dead_letter_queue);
    warn_lost(c->name, out, s);
    return 0;
}

static int dlq_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    (void)c;
    struct dlq_state *s = b->kind_data;
    struct letter *l = m->kind_data;
    if (l->adv.stream_seq <= 0)
        return err_set(e, ERR_QUERY,
                       "advisory %lld of %.100s names no stream_seq: no message to put back",
                       l->adv_seq, b->dead_letter_queue);
    if (l->lost)
        return err_set(e, ERR_QUERY,
                       "message %lld is no longer in stream %.100s (max_age, a purge, or "
                       "acknowledged on a work-queue stream): nothing to put back",
                       l->adv.stream_seq, s->stream);
    char *id = nats_replay_msg_id(s->stream, l->adv.stream_seq);
    int dup = 0;
    int rc = nats_client_publish(s->conn, l->msg.subject, &l->hdrs, id,
                                 (m->replays > 0 ? m->replays : 0) + 1, l->msg.data,
                                 l->msg.data_len, s->stream, dl, &dup, e);
    free(id);
    if (rc == 0 && dup)
        log_kv(LOG_INFO, "replay already published (JetStream acked a duplicate): removing",
               "stream", s->stream, "message", m->message_id, NULL);
    return rc;
}

/* STREAM.MSG.DELETE of seq: 0 deleted or already gone, -1. */
static int msg_delete(struct dlq_state *s, const char *stream, long long seq,
                      const struct deadline *dl, struct err *e)
{
    char body[64];
    snprintf(body, sizeof body, "{\"seq\":%lld,\"no_erase\":true}", seq);
    json_t *doc = api(s, "STREAM.MSG.DELETE", stream, body, dl, e);
    if (!doc)
        return -1;
    char what[200];
    snprintf(what, sizeof what, "STREAM.MSG.DELETE %.100s %lld", stream, seq);
    int rc = nats_msg_delete_parse(doc, what, e);
    json_decref(doc);
    return rc < 0 ? -1 : 0;
}

static int dlq_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    (void)c;
    struct dlq_state *s = b->kind_data;
    struct letter *l = m->kind_data;
    if (msg_delete(s, s->stream, l->adv.stream_seq, dl, e) ||
        msg_delete(s, nats_dlq_stream_name(b->dead_letter_queue), l->adv_seq, dl, e))
        return -1;
    return 0;
}

/* A copy published to a stream nobody consumes would wait there unread. */
static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    (void)c;
    struct dlq_state *s = b->kind_data;
    if (strcmp(s->stream, nats_dlq_stream_name(b->dead_letter_queue)) == 0)
        return err_set(e, ERR_CONFIG, "stream \"%.200s\" is its own dead_letter_stream", s->stream);
    json_t *doc = api(s, "STREAM.INFO", s->stream, NULL, dl, e);
    if (!doc)
        return -1;
    char what[200];
    snprintf(what, sizeof what, "STREAM.INFO %.100s", s->stream);
    struct nats_stream_state ss;
    int rc = nats_stream_state_parse(doc, what, &ss, e);
    json_t *state = json_object_get(doc, "state");
    json_int_t consumers = json_integer_value(json_object_get(state, "consumer_count"));
    json_decref(doc);
    if (rc)
        return -1;
    if (consumers <= 0)
        return err_set(e, ERR_QUERY,
                       "stream \"%.200s\" has no consumer: a replayed message would wait there "
                       "unread",
                       s->stream);
    return 0;
}

const struct dlq_kind nats_dlq = {.read = dlq_read,
                                  .requeue = dlq_requeue,
                                  .remove = dlq_remove,
                                  .check_origin = dlq_check_origin,
                                  .message_free = letter_free,
                                  .batch_free = state_free,
                                  .stamps = 1};
