/* kafka/dlq.c: `qrel dlq` on a Kafka dead-letter topic (the hooks of core/dlq_kind.h).
 *
 * Reading is the dead-letter join's read (records.c: no group joined, nothing committed), from
 * the log start for inspect and from the replay group's commits for a replay; each record is
 * kept whole (key, value, headers) for requeue. The writing is replay.c's; the decisions that
 * need no broker (where a replay starts, where a dead letter goes back to) are dead_letter.c's. */
#include "kafka/dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "kafka/client.h"
#include "kafka/kafka.h"
#include "kafka/records.h"
#include "kafka/replay.h"
#include "kafka/scrape.h"
#include "alloc.h"

/* Whether the dead-letter topic dlq of queue also receives other topics' dead letters: a
 * dead_letter_topic without "{topic}" on an entry that measures more than queue. */
static int dlq_shared(const struct kafka_state *st, const char *queue, const char *dlq)
{
    for (size_t i = 0; i < st->cfg.nspecs; i++) {
        const struct kafka_group_spec *sp = &st->cfg.specs[i];
        if (!sp->dlq_tmpl || strstr(sp->dlq_tmpl, "{topic}") || strcmp(sp->dlq_tmpl, dlq))
            continue;
        if (!sp->topics)
            return 1;
        for (size_t k = 0; k < sp->ntopics; k++)
            if (strcmp(sp->topics[k], queue))
                return 1;
    }
    return 0;
}

/* A header's value as a string; NULL when absent, null, empty or holding a NUL byte. */
static char *header_string(const rd_kafka_message_t *m, const char *name)
{
    size_t size;
    const void *v = kafka_records_header(m, name, &size);
    return v && size && !memchr(v, '\0', size) ? xstrndup(v, size) : NULL;
}

struct dlq_read_ctx {
    const char *queue, *id_field;
    int shared;
    struct dlq_batch *out;
};

static void add_dlq_message(const rd_kafka_message_t *m, void *arg)
{
    struct dlq_read_ctx *x = arg;
    char *origin = header_string(m, KAFKA_ORIGIN_HEADER_SPRING);
    if (!origin)
        origin = header_string(m, KAFKA_ORIGIN_HEADER_CONNECT);
    /* In a shared dead-letter topic, a record whose header names another topic is that
     * topic's dead letter, not one of queue's: neither read nor counted. (Records beyond max
     * are counted unread, whoever's they are.) */
    if (x->shared && origin && strcmp(origin, x->queue)) {
        free(origin);
        x->out->total--; /* read_dead_letters counted it */
        return;
    }
    struct dlq_message *dm = dlq_batch_push(x->out);
    char id[48];
    snprintf(id, sizeof id, "%d:%lld", (int)m->partition, (long long)m->offset);
    dm->message_id = xstrdup(id);
    char *work = NULL;
    size_t len = 0;
    kafka_records_id(m, x->id_field, &work, &len);
    if (work && len && !memchr(work, '\0', len))
        dm->work_id = work;
    else
        free(work);
    size_t size;
    const void *attempts = kafka_records_header(m, KAFKA_ATTEMPTS_HEADER, &size);
    dm->deliveries = kafka_dlq_deliveries(attempts, size);
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    if (tt != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts > 0)
        dm->dead_since = (double)ts / 1000.0;
    dm->body_bytes = m->payload ? m->len : 0;
    const void *stamp = kafka_records_header(m, DLQ_STAMP, &size);
    dm->replays = kafka_dlq_replays(stamp, size);
    struct kafka_dead_letter *d = kafka_dead_letter_new(m, origin);
    d->replays = dm->replays;
    dm->kind_data = d;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    struct kafka_state *st = c->priv;
    const struct kafka_group_spec *sp = kafka_settings_dlq_spec(&st->cfg, queue);
    if (!sp)
        return err_set(e, ERR_CONFIG, "topic \"%.200s\" has no dead_letter_topic", queue);
    out->dead_letter_queue = kafka_dlq_name(sp->dlq_tmpl, queue);
    out->origin = xstrdup(queue);
    int shared = dlq_shared(st, queue, out->dead_letter_queue);
    out->kind_data = kafka_replay_new(c->name, out->origin, out->dead_letter_queue, shared);
    struct kafka_scrape sc;
    memset(&sc, 0, sizeof sc);
    struct deadline inner;
    size_t ti;
    int64_t *from = NULL;
    int rc = kafka_records_topic(st, dl, &inner, out->dead_letter_queue, &sc, &ti, e);
    if (rc || ti == SIZE_MAX)
        goto out;
    const struct kafka_topic_data *td = &sc.topics[ti];
    if (purpose == DLQ_REPLAY) {
        /* The replay group's commits on the dead-letter topic, read as any group's are. */
        static const struct kafka_group_spec plain;
        kafka_scrape_add_target(&sc, &plain, 0, kafka_replay_group_name(out->kind_data), ti);
        if ((rc = kafka_scrape_committed(st, &inner, &sc, e)) != 0)
            goto out;
        int np = td->md->partition_cnt;
        from = xcalloc(np ? (size_t)np : 1, sizeof *from);
        for (int p = 0; p < np; p++)
            from[p] = kafka_dlq_read_from(td->low[p], td->high[p], sc.t[0].committed[p]);
    }
    struct dlq_read_ctx x = {queue, id_field, shared, out};
    rc = kafka_records_read(st, &inner, td, from, max, &out->total, add_dlq_message, &x, e);
out:
    free(from);
    kafka_scrape_free(&sc);
    if (rc) {
        err_prefix(e, "dead-letter topic \"%.200s\"", out->dead_letter_queue);
        kafka_client_drop(st);
    }
    return rc;
}

static int dlq_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    struct kafka_state *st = c->priv;
    return kafka_replay_requeue(b->kind_data, &st->cfg, m->kind_data, dl, e);
}

static int dlq_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    struct kafka_state *st = c->priv;
    return kafka_replay_commit(b->kind_data, &st->cfg, m->kind_data, dl, e);
}

/* A replay produces to the origin topic: where the brokers create topics on first use, a topic
 * that does not exist would be made with no consumer group reading it. Whether a group reads an
 * existing one is not asked (a group may not have committed yet). */
static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    struct kafka_state *st = c->priv;
    if (strcmp(b->origin, b->dead_letter_queue) == 0)
        return err_set(e, ERR_CONFIG, "topic \"%.200s\" is its own dead-letter topic", b->origin);
    struct kafka_scrape sc;
    memset(&sc, 0, sizeof sc);
    struct deadline inner;
    size_t ti;
    int rc = kafka_records_topic(st, dl, &inner, b->origin, &sc, &ti, e);
    kafka_scrape_free(&sc);
    if (rc) {
        kafka_client_drop(st);
        return err_prefix(e, "topic \"%.200s\"", b->origin);
    }
    if (ti == SIZE_MAX)
        return err_set(e, ERR_QUERY,
                       "topic \"%.200s\" does not exist: producing to it would create it (where "
                       "the brokers create topics on first use) with no consumer group reading it",
                       b->origin);
    return 0;
}

const struct dlq_kind kafka_dlq = {.read = dlq_read,
                                   .check_origin = dlq_check_origin,
                                   .requeue = dlq_requeue,
                                   .remove = dlq_remove,
                                   .message_free = kafka_dead_letter_free,
                                   .batch_free = kafka_replay_free};
