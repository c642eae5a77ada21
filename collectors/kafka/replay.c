/* kafka/replay.c: `qrel dlq replay` puts Kafka dead letters back (replay.h).
 *
 * Kafka cannot delete one record from a topic, so "removed from the dead-letter topic" means
 * "passed by the replay group": after a dead letter is produced to its origin and the broker has
 * acknowledged it, offset + 1 of its partition is committed in the group, and the next replay
 * starts there. The produce comes first and is waited for, the commit second: a crash in between
 * leaves the group before the record, which the next run produces again (a duplicate the work
 * table absorbs), never a record the group passed without it being produced.
 *
 * One producer per replay, made on the first requeue from the source's own settings (so TLS and
 * SASL are the source's), partitioning keys with murmur2 as the Java clients do, so a keyed
 * record lands on the partition its key's other records are on. The commit is an
 * AlterConsumerGroupOffsets (an OffsetCommit outside any group generation) sent through the same
 * handle: nothing joins the replay group. */
#include "kafka/replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "log.h"
#include "alloc.h"
#include "dlq_kind.h"

struct kafka_replay {
    char *source, *group;
    const char *queue, *dlq_topic; /* the batch's origin and dead_letter_queue */
    int shared;
    rd_kafka_t *producer;
    /* The acknowledgement of the record in flight: each produce has a sequence number that the
     * delivery callback reports back, so a late report of an abandoned record is told apart. */
    uint64_t seq;
    int acked;
    rd_kafka_resp_err_t acked_err;
    /* Partitions whose requeue failed, with the first such offset: nothing after it is moved. */
    int32_t *stopped;
    int64_t *stopped_at;
    size_t nstopped;
};

static void *copy_bytes(const void *p, size_t n)
{
    if (!p)
        return NULL;
    void *c = xmalloc(n ? n : 1);
    memcpy(c, p, n);
    return c;
}

struct kafka_dead_letter *kafka_dead_letter_new(const rd_kafka_message_t *m, char *origin)
{
    struct kafka_dead_letter *d = xcalloc(1, sizeof *d);
    d->partition = m->partition;
    d->offset = m->offset;
    d->key = copy_bytes(m->key, m->key_len);
    d->key_len = m->key ? m->key_len : 0;
    d->value = copy_bytes(m->payload, m->len);
    d->len = m->payload ? m->len : 0;
    rd_kafka_headers_t *h = NULL;
    /* The message keeps its own headers: the copy outlives it. */
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h)
        d->headers = rd_kafka_headers_copy(h);
    d->origin = origin;
    return d;
}

void kafka_dead_letter_free(void *p)
{
    struct kafka_dead_letter *d = p;
    if (!d)
        return;
    free(d->key);
    free(d->value);
    if (d->headers)
        rd_kafka_headers_destroy(d->headers);
    free(d->origin);
    free(d);
}

struct kafka_replay *kafka_replay_new(const char *source, const char *queue, const char *dlq_topic,
                                      int shared)
{
    struct kafka_replay *r = xcalloc(1, sizeof *r);
    r->source = xstrdup(source);
    r->queue = queue;
    r->dlq_topic = dlq_topic;
    r->group = kafka_replay_group(queue);
    r->shared = shared;
    return r;
}

void kafka_replay_free(void *p)
{
    struct kafka_replay *r = p;
    if (!r)
        return;
    /* Anything still in flight was reported as failed (not acknowledged in time) and is not
     * committed: dropping it leaves the dead letter for the next run. */
    if (r->producer)
        rd_kafka_destroy(r->producer);
    free(r->source);
    free(r->group);
    free(r->stopped);
    free(r->stopped_at);
    free(r);
}

const char *kafka_replay_group_name(const struct kafka_replay *r)
{
    return r->group;
}

int kafka_replay_shared(const struct kafka_replay *r)
{
    return r->shared;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct kafka_replay *r = opaque;
    if ((uint64_t)(uintptr_t)m->_private != r->seq)
        return; /* one abandoned earlier, reported late */
    r->acked = 1;
    r->acked_err = m->err;
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    const struct kafka_replay *r = rd_kafka_opaque(rk);
    log_kv(LOG_DEBUG, "librdkafka (replay producer)", "source", r->source, "facility", fac, "text",
           buf, NULL);
}

static int open_producer(struct kafka_replay *r, const struct kafka_settings *cfg, struct err *e)
{
    if (r->producer)
        return 0;
    static const char *const replay_props[] = {
        "acks",        "all",            /* the safety argument rests on the acknowledgement */
        "partitioner", "murmur2_random", /* the Java clients' hash of a key */
        "linger.ms",   "0", /* one record at a time, each waited for: no batching delay */
        NULL};
    const struct kafka_client_cbs cb = {.opaque = r, .log_cb = on_log, .dr_msg_cb = on_delivery};
    r->producer = kafka_settings_client(cfg, RD_KAFKA_PRODUCER, replay_props, &cb, e);
    return r->producer ? 0 : -1;
}

static int wait_ms(const struct deadline *dl, int max)
{
    int64_t left = deadline_remaining_ms(dl);
    return left < max ? (int)left : max;
}

static const int64_t *stopped_at(const struct kafka_replay *r, int32_t partition)
{
    for (size_t i = 0; i < r->nstopped; i++)
        if (r->stopped[i] == partition)
            return &r->stopped_at[i];
    return NULL;
}

static void stop_partition(struct kafka_replay *r, const struct kafka_dead_letter *d)
{
    if (stopped_at(r, d->partition))
        return;
    r->stopped = xrealloc(r->stopped, (r->nstopped + 1) * sizeof *r->stopped);
    r->stopped_at = xrealloc(r->stopped_at, (r->nstopped + 1) * sizeof *r->stopped_at);
    r->stopped[r->nstopped] = d->partition;
    r->stopped_at[r->nstopped++] = d->offset;
}

static int produce(struct kafka_replay *r, const char *topic, const struct kafka_dead_letter *d,
                   const struct deadline *dl, struct err *e)
{
    uint64_t seq = ++r->seq;
    r->acked = 0;
    /* Its headers as they were, and the replay stamp: replays + 1 (an unreadable one counts as
     * none), replacing the one it carried, so that a record carries one stamp. */
    rd_kafka_headers_t *h =
        d->headers ? rd_kafka_headers_copy(d->headers) : rd_kafka_headers_new(1);
    rd_kafka_header_remove(h, DLQ_STAMP);
    char stamp[24];
    int n = snprintf(stamp, sizeof stamp, "%lld", (long long)(d->replays > 0 ? d->replays + 1 : 1));
    rd_kafka_header_add(h, DLQ_STAMP, -1, stamp, n);
    rd_kafka_resp_err_t err =
        rd_kafka_producev(r->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(d->key, d->key_len),
                          RD_KAFKA_V_VALUE(d->value, d->len), RD_KAFKA_V_HEADERS(h),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_OPAQUE((void *)(uintptr_t)seq), RD_KAFKA_V_END);
    if (err) {
        if (h) /* producev owns the headers only when it succeeds */
            rd_kafka_headers_destroy(h);
        return err_set(e, kafka_err_code(err, NULL), "produce to \"%.200s\": %s", topic,
                       rd_kafka_err2str(err));
    }
    while (!r->acked) {
        int ms = wait_ms(dl, 100);
        if (ms <= 0)
            /* It may still be written: then the next run writes it again, a duplicate. */
            return err_set(e, ERR_TIMEOUT,
                           "produce to \"%.200s\": not acknowledged in time (the record may "
                           "still arrive; it stays dead and is replayed again next time)",
                           topic);
        rd_kafka_poll(r->producer, ms);
    }
    if (r->acked_err)
        return err_set(e, kafka_err_code(r->acked_err, NULL), "produce to \"%.200s\": %s", topic,
                       rd_kafka_err2str(r->acked_err));
    return 0;
}

int kafka_replay_requeue(struct kafka_replay *r, const struct kafka_settings *cfg,
                         const struct kafka_dead_letter *d, const struct deadline *dl,
                         struct err *e)
{
    const int64_t *at = stopped_at(r, d->partition);
    if (at)
        return err_set(e, ERR_QUERY,
                       "not moved: the dead letter at partition %" PRId32 " offset %" PRId64
                       " failed before it, and the replay group \"%.200s\" must not pass that "
                       "one",
                       d->partition, *at, r->group);
    const char *topic = kafka_dlq_origin(r->queue, r->shared, d->origin);
    int rc;
    if (!topic)
        rc = err_set(e, ERR_CONFIG,
                     "dead-letter topic \"%.200s\" is shared by several topics and this record "
                     "has no header naming its topic (" KAFKA_ORIGIN_HEADER_SPRING
                     " or " KAFKA_ORIGIN_HEADER_CONNECT "): not replayed",
                     r->dlq_topic);
    else
        rc = open_producer(r, cfg, e) ? -1 : produce(r, topic, d, dl, e);
    if (rc)
        stop_partition(r, d);
    return rc;
}

int kafka_replay_commit(struct kafka_replay *r, const struct kafka_settings *cfg,
                        const struct kafka_dead_letter *d, const struct deadline *dl, struct err *e)
{
    if (open_producer(r, cfg, e))
        return -1;
    int ms = wait_ms(dl, 1 << 30);
    if (ms <= 0)
        return err_set(e, ERR_TIMEOUT, "commit in group \"%.200s\": timed out", r->group);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, r->dlq_topic, d->partition)->offset = d->offset + 1;
    rd_kafka_AlterConsumerGroupOffsets_t *req = rd_kafka_AlterConsumerGroupOffsets_new(r->group, l);
    rd_kafka_topic_partition_list_destroy(l);
    char errstr[256];
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(r->producer, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
    rd_kafka_AdminOptions_set_request_timeout(o, ms, errstr, sizeof errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(r->producer);
    rd_kafka_AlterConsumerGroupOffsets(r->producer, &req, 1, o, q);
    rd_kafka_AlterConsumerGroupOffsets_destroy(req);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ms + 100);
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    const char *text = NULL;
    if (ev && rd_kafka_event_error(ev)) {
        err = rd_kafka_event_error(ev);
        text = rd_kafka_event_error_string(ev);
    } else if (ev) {
        size_t ng = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_AlterConsumerGroupOffsets_result_groups(
            rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &ng);
        const rd_kafka_error_t *ge = ng ? rd_kafka_group_result_error(gr[0]) : NULL;
        const rd_kafka_topic_partition_list_t *pl =
            ng ? rd_kafka_group_result_partitions(gr[0]) : NULL;
        if (ge) {
            err = rd_kafka_error_code(ge);
            text = rd_kafka_error_string(ge);
        } else if (!pl || pl->cnt != 1) {
            err = RD_KAFKA_RESP_ERR__BAD_MSG;
            text = "no result for the partition";
        } else {
            err = pl->elems[0].err;
        }
    }
    int rc = 0;
    if (err)
        rc = err_set(e, kafka_err_code(err, text),
                     "commit offset %" PRId64 " of \"%.200s\" partition %" PRId32
                     " in group \"%.200s\": %s (the record was replayed; the next run replays it "
                     "again)",
                     d->offset + 1, r->dlq_topic, d->partition, r->group,
                     text ? text : rd_kafka_err2str(err));
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    return rc;
}
