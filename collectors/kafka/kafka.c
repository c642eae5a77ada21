/* kafka.c: `kind: kafka`, consumer-group lag of Kafka topics in messages and in seconds: the
 * top of the folder, its collector_kind and hooks.
 *
 * A Kafka consumer group is a log reader: what it has not consumed is everything between its
 * committed offset and the high watermark of each partition. The files of the kind:
 * settings.c (the keys and librdkafka's properties), client.c (the librdkafka handle and its
 * errors), scrape.c (metadata, groups, watermarks, commits), lag.c (the collection: lag in
 * messages and seconds, dead-letter topics' size and ages), records.c (reading a dead-letter
 * topic's records), dlq.c (`qrel dlq`'s hooks) with replay.c (its writing side), and the pure
 * parts declared in kafka.h: calc.c (lag and ages from offsets, error reasons) and
 * dead_letter.c (a dead letter's id, origin and delivery count, where a replay starts).
 *
 * For the core's dead-letter join, a dead-letter topic's records are read from the log start
 * with the same consumer as the lag (dead_letter_ids below): it is assigned partitions directly,
 * never joins a group and never commits, so reading changes no offset of anyone's. */
#include "kafka.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "kafka/client.h"
#include "kafka/dlq.h"
#include "kafka/lag.h"
#include "kafka/records.h"
#include "dlq_kind.h"
#include "kafka/scrape.h"
#include "kafka/settings.h"
#include "alloc.h"

static void destroy(struct collector *c)
{
    struct kafka_state *st = c->priv;
    kafka_client_drop(st);
    kafka_settings_free(&st->cfg);
    pthread_mutex_destroy(&st->mu);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct kafka_state *st = c->priv;
    pthread_mutex_init(&st->mu, NULL);
    st->source = c->name;
    return kafka_settings_read(&st->cfg, c->name, c->timeout, map, e);
}

/* ---- the dead-letter join's broker side (collector.h) ---- */

static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    char why[300];
    if (kafka_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!kafka_settings_dlq_spec(&((struct kafka_state *)c->priv)->cfg, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: no entry of groups of source \"%s\" measures topic \"%s\" with "
                         "a dead_letter_topic",
                         c->name, queue);
    return 0;
}

struct id_read {
    const char *id_field;
    struct dead_letter_read *out;
};

static void add_dead_letter(const rd_kafka_message_t *m, void *arg)
{
    struct id_read *r = arg;
    char *id = NULL;
    size_t len = 0;
    kafka_records_id(m, r->id_field, &id, &len);
    dead_letter_read_add(r->out, id, len);
    free(id);
    size_t size = 0;
    const void *stamp = kafka_records_header(m, DLQ_STAMP, &size);
    dead_letter_read_stamp(r->out, kafka_dlq_replays(stamp, size));
}

static int dead_letter_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                           const struct deadline *dl, struct dead_letter_read *out, struct err *e)
{
    struct kafka_state *st = c->priv;
    const struct kafka_group_spec *sp = kafka_settings_dlq_spec(&st->cfg, queue);
    if (!sp)
        return err_set(e, ERR_CONFIG, "topic \"%.200s\" has no dead_letter_topic", queue);
    out->dead_letter_queue = kafka_dlq_name(sp->dlq_tmpl, queue);
    struct kafka_scrape sc;
    memset(&sc, 0, sizeof sc);
    struct deadline inner;
    size_t ti;
    struct id_read r = {id_field, out};
    int rc = kafka_records_topic(st, dl, &inner, out->dead_letter_queue, &sc, &ti, e);
    if (rc == 0 && ti != SIZE_MAX)
        rc = kafka_records_read(st, &inner, &sc.topics[ti], NULL, max, &out->total, add_dead_letter,
                                &r, e);
    kafka_scrape_free(&sc);
    if (rc) {
        err_prefix(e, "dead-letter topic \"%.200s\"", out->dead_letter_queue);
        kafka_client_drop(st);
    }
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue",
     "have the consumers publish given-up records to a dead-letter topic and name "
     "it in dead_letter_topic"},
    {NULL, NULL}};

const struct collector_kind kafka_kind = {.name = "kafka",
                                          .state_size = sizeof(struct kafka_state),
                                          .configure = configure,
                                          .collect = kafka_lag_collect,
                                          .destroy = destroy,
                                          .dead_letter_validate = dead_letter_validate,
                                          .dead_letter_ids = dead_letter_ids,
                                          .audit_hints = hints,
                                          .dlq = &kafka_dlq};
