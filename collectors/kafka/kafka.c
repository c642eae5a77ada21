/* kafka.c: `kind: kafka`, consumer-group lag of Kafka topics in messages and in seconds.
 *
 * A Kafka consumer group is a log reader: what it has not consumed is everything between its
 * committed offset and the high watermark of each partition. Lag in messages comes from offsets
 * alone; lag in seconds needs the timestamp of the first record the group has not consumed, so
 * this collector reads that one record (at the committed offset) with a consumer that is assigned
 * partitions directly and never joins nor commits: it cannot move any group's offsets.
 *
 * Per scrape: one Metadata request; ListOffsets (latest and earliest) batched per leader broker;
 * one OffsetFetch per group (ListConsumerGroupOffsets with the partitions named, which every
 * broker and librdkafka's mock support); ListGroups only when a group is given by pattern or regex;
 * then one small fetch per lagging partition and two per non-empty partition of a dead-letter topic
 * (its first and its last records), capped by max_lag_fetches, in rounds that each start with a
 * ListOffsets to the leaders involved (see wake_fetchers). Every call is bounded by the
 * scrape's deadline. The librdkafka handle is kept between scrapes and destroyed after any
 * error, so no thread outlives a failure. For the core's dead-letter join, a dead-letter topic's
 * records are read from the log start with the same consumer (dead_letter_ids, at the end). */
#include "kafka.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "kafka/replay.h"
#include "kafka/settings.h"
#include "log.h"
#include "alloc.h"
#include "deadline.h"

struct state {
    const char *source;
    struct kafka_settings cfg; /* what the config says (settings.c) */

    rd_kafka_t *rk; /* kept between scrapes, destroyed after any error */
    pthread_mutex_t mu;
    rd_kafka_resp_err_t last_err; /* the last error librdkafka reported (error_cb), under mu */
    char last_errstr[400];
    int warned_cap;
};

static void drop_handle(struct state *st)
{
    if (!st->rk)
        return;
    /* Never joined a group: nothing to leave, so the consumer close (which could wait for a
     * coordinator) is skipped. */
    rd_kafka_destroy_flags(st->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    st->rk = NULL;
}

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    drop_handle(st);
    kafka_settings_free(&st->cfg);
    pthread_mutex_destroy(&st->mu);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    pthread_mutex_init(&st->mu, NULL);
    st->source = c->name;
    return kafka_settings_read(&st->cfg, c->name, c->timeout, map, e);
}

/* ---- the librdkafka handle ---- */

static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque)
{
    struct state *st = opaque;
    pthread_mutex_lock(&st->mu);
    /* A refused SASL handshake is followed by "all brokers are down": keep the cause. */
    if (st->last_err == RD_KAFKA_RESP_ERR_NO_ERROR ||
        kafka_err_code(st->last_err, st->last_errstr) != ERR_AUTH) {
        st->last_err = (rd_kafka_resp_err_t)code;
        snprintf(st->last_errstr, sizeof st->last_errstr, "%s", reason);
    }
    pthread_mutex_unlock(&st->mu);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    struct state *st = rd_kafka_opaque(rk);
    char lvl[8];
    snprintf(lvl, sizeof lvl, "%d", level);
    log_kv(LOG_DEBUG, "librdkafka", "source", st->source, "facility", fac, "syslog_level", lvl,
           "text", buf, NULL);
}

static rd_kafka_resp_err_t last_error(struct state *st, char *text, size_t cap)
{
    pthread_mutex_lock(&st->mu);
    rd_kafka_resp_err_t code = st->last_err;
    snprintf(text, cap, "%s", st->last_errstr);
    pthread_mutex_unlock(&st->mu);
    return code;
}

static void clear_error(struct state *st)
{
    pthread_mutex_lock(&st->mu);
    st->last_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    st->last_errstr[0] = '\0';
    pthread_mutex_unlock(&st->mu);
}

static int open_handle(struct state *st, struct err *e)
{
    const struct kafka_client_cbs cb = {.opaque = st, .error_cb = on_error, .log_cb = on_log};
    st->rk = kafka_settings_client(&st->cfg, RD_KAFKA_CONSUMER, NULL, &cb, e);
    return st->rk ? 0 : -1;
}

/* The error of a failed call, with the broker error librdkafka reported meanwhile when that
 * says more (a refused connection or a failed SASL handshake shows up as a timeout of the call
 * itself). */
static int call_error(struct state *st, const char *what, rd_kafka_resp_err_t code,
                      const char *text, struct err *e)
{
    char last[400];
    rd_kafka_poll(st->rk, 0); /* serves error_cb */
    rd_kafka_resp_err_t lc = last_error(st, last, sizeof last);
    enum err_code ec = kafka_err_code(code, text);
    if (lc != RD_KAFKA_RESP_ERR_NO_ERROR &&
        (ec == ERR_TIMEOUT || code == RD_KAFKA_RESP_ERR__TRANSPORT)) {
        enum err_code lec = kafka_err_code(lc, last);
        if (lec != ERR_QUERY)
            ec = lec;
        return err_set(e, ec, "kafka: %s: %s (%s)", what, text ? text : rd_kafka_err2str(code),
                       last);
    }
    return err_set(e, ec, "kafka: %s: %s", what, text ? text : rd_kafka_err2str(code));
}

/* A broker error reported while we wait that will not go away by waiting longer. */
static int fatal_pending(struct state *st, const char *what, struct err *e)
{
    char last[400];
    rd_kafka_poll(st->rk, 0);
    rd_kafka_resp_err_t lc = last_error(st, last, sizeof last);
    if (lc == RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    enum err_code ec = kafka_err_code(lc, last);
    if (lc == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || ec == ERR_AUTH || ec == ERR_LIMIT ||
        ec == ERR_PROTOCOL)
        return err_set(e, ec, "kafka: %s: %s", what, last);
    return 0;
}

static int slice_ms(const struct deadline *dl, int max)
{
    int64_t left = deadline_remaining_ms(dl);
    return left < max ? (int)left : max;
}

static int timed_out(struct state *st, const char *what, struct err *e)
{
    char last[400];
    rd_kafka_poll(st->rk, 0);
    rd_kafka_resp_err_t lc = last_error(st, last, sizeof last);
    if (lc != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* Waited in vain because no broker could be reached or we were refused: that is the
         * reason, not the wait. */
        enum err_code ec = kafka_err_code(lc, last);
        if (ec != ERR_CONNECT && ec != ERR_AUTH)
            ec = ERR_TIMEOUT;
        return err_set(e, ec, "kafka: %s: timed out (last broker error: %s)", what, last);
    }
    return err_set(e, ERR_TIMEOUT, "kafka: %s: timed out", what);
}

/* ---- one scrape ---- */

struct topic_data {
    const rd_kafka_metadata_topic_t *md; /* NULL: the topic does not exist */
    int wanted;                          /* watermarks are needed */
    int64_t *low, *high;                 /* per partition index of md */
};

/* One group measured on one topic. */
struct target {
    char *group;
    size_t spec;
    size_t topic; /* index into scrape.topics */
    size_t dlq;   /* index into scrape.topics, SIZE_MAX: none */
    char *dlq_name;
    int64_t *committed; /* per partition */
    size_t *need;       /* per partition: index into scrape.needs, SIZE_MAX: none */
};

/* Records to read, from offset up to until: their timestamps are ages. */
struct need {
    size_t topic;
    int32_t partition;
    int64_t offset;
    int64_t until; /* the last offset to read; == offset: the first record only */
    int done;
    int got;         /* a record was read */
    int64_t ts;      /* the first record's; -1: no record there (end of log, gone, no timestamp) */
    int64_t last_ts; /* the last record's up to until; -1 as above */
};

struct scrape {
    const rd_kafka_metadata_t *md;
    struct topic_data *topics; /* one per metadata topic */
    size_t ntopics;
    struct target *t;
    size_t n;
    struct need *needs;
    size_t nneeds;
    int capped;
};

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->ntopics; i++) {
        free(sc->topics[i].low);
        free(sc->topics[i].high);
    }
    free(sc->topics);
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->t[i].group);
        free(sc->t[i].dlq_name);
        free(sc->t[i].committed);
        free(sc->t[i].need);
    }
    free(sc->t);
    free(sc->needs);
    if (sc->md)
        rd_kafka_metadata_destroy(sc->md);
}

static size_t topic_find(const struct scrape *sc, const char *name)
{
    for (size_t i = 0; i < sc->ntopics; i++)
        if (sc->topics[i].md && strcmp(sc->topics[i].md->topic, name) == 0)
            return i;
    return SIZE_MAX;
}

static int read_metadata(struct state *st, const struct deadline *dl, struct scrape *sc,
                         struct err *e)
{
    int64_t t0 = deadline_now_ms();
    for (;;) {
        int ms = slice_ms(dl, 250);
        if (ms <= 0)
            return timed_out(st, "Metadata", e);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t rc = rd_kafka_metadata(st->rk, 1, NULL, &md, ms);
        if (rc == RD_KAFKA_RESP_ERR_NO_ERROR) {
            sc->md = md;
            break;
        }
        if (fatal_pending(st, "Metadata", e))
            return -1;
        /* librdkafka does not always say "all brokers are down" again (it suppresses repeated
         * errors): a connect error and still no metadata after a second is the answer. */
        char last[400];
        rd_kafka_resp_err_t lc = last_error(st, last, sizeof last);
        if (lc && kafka_err_code(lc, last) == ERR_CONNECT && deadline_now_ms() - t0 >= 1000)
            return err_set(e, ERR_CONNECT, "kafka: Metadata: %s", last);
        if (rc != RD_KAFKA_RESP_ERR__TIMED_OUT && rc != RD_KAFKA_RESP_ERR__TRANSPORT)
            return call_error(st, "Metadata", rc, NULL, e);
    }
    sc->ntopics = (size_t)sc->md->topic_cnt;
    sc->topics = xcalloc(sc->ntopics ? sc->ntopics : 1, sizeof *sc->topics);
    for (size_t i = 0; i < sc->ntopics; i++) {
        const rd_kafka_metadata_topic_t *t = &sc->md->topics[i];
        /* A topic the broker lists with an error (being deleted, not authorised) has no usable
         * partitions: treated as absent. */
        sc->topics[i].md = t->err ? NULL : t;
    }
    return 0;
}

/* Group names matched by the patterns, from ListGroups (asked once, only when a pattern
 * exists). Brokers without ListGroups (librdkafka's mock) fail with a message that says to name
 * the groups instead. */
static int list_groups(struct state *st, const struct deadline *dl, char ***names, size_t *n,
                       struct err *e)
{
    *names = NULL;
    *n = 0;
    int ms = slice_ms(dl, 1 << 30);
    if (ms <= 0)
        return timed_out(st, "ListGroups", e);
    char errstr[256];
    rd_kafka_queue_t *q = rd_kafka_queue_new(st->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(st->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    rd_kafka_AdminOptions_set_request_timeout(o, ms, errstr, sizeof errstr);
    rd_kafka_ListConsumerGroups(st->rk, o, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ms + 100);
    int rc = -1;
    if (!ev) {
        timed_out(st, "ListGroups", e);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        call_error(st, "ListGroups", rd_kafka_event_error(ev), rd_kafka_event_error_string(ev), e);
        goto out;
    }
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t nerr = 0, nvalid = 0;
    const rd_kafka_error_t **errs = rd_kafka_ListConsumerGroups_result_errors(res, &nerr);
    if (nerr) {
        rd_kafka_resp_err_t code = rd_kafka_error_code(errs[0]);
        if (code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE)
            err_set(e, ERR_QUERY,
                    "kafka: ListGroups: the broker does not support listing groups (%s), so a "
                    "group pattern cannot be resolved: list the groups by name",
                    rd_kafka_error_string(errs[0]));
        else
            call_error(st, "ListGroups", code, rd_kafka_error_string(errs[0]), e);
        goto out;
    }
    const rd_kafka_ConsumerGroupListing_t **valid =
        rd_kafka_ListConsumerGroups_result_valid(res, &nvalid);
    *names = xcalloc(nvalid + 1, sizeof **names);
    for (size_t i = 0; i < nvalid; i++)
        (*names)[(*n)++] = xstrdup(rd_kafka_ConsumerGroupListing_group_id(valid[i]));
    rc = 0;
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    return rc;
}

static int is_dlq_of_spec(const struct kafka_group_spec *sp, const struct scrape *sc,
                          const char *name)
{
    if (!sp->dlq_tmpl)
        return 0;
    for (size_t i = 0; i < sc->ntopics; i++) {
        const struct topic_data *td = &sc->topics[i];
        if (!td->md || strcmp(td->md->topic, name) == 0)
            continue;
        if (!sp->topics && !kafka_spec_topic_match(sp, td->md->topic))
            continue;
        char *d = kafka_dlq_name(sp->dlq_tmpl, td->md->topic);
        int same = strcmp(d, name) == 0;
        free(d);
        if (same)
            return 1;
    }
    return 0;
}

static void add_target(struct scrape *sc, const struct kafka_group_spec *sp, size_t spec,
                       const char *group, size_t topic)
{
    sc->t = xrealloc(sc->t, (sc->n + 1) * sizeof *sc->t);
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->group = xstrdup(group);
    t->spec = spec;
    t->topic = topic;
    t->dlq = SIZE_MAX;
    sc->topics[topic].wanted = 1;
    int np = sc->topics[topic].md->partition_cnt;
    t->committed = xcalloc(np ? (size_t)np : 1, sizeof *t->committed);
    t->need = xcalloc(np ? (size_t)np : 1, sizeof *t->need);
    for (int p = 0; p < np; p++) {
        t->committed[p] = -1;
        t->need[p] = SIZE_MAX;
    }
    if (sp->dlq_tmpl) {
        t->dlq_name = kafka_dlq_name(sp->dlq_tmpl, sc->topics[topic].md->topic);
        t->dlq = topic_find(sc, t->dlq_name);
        if (t->dlq != SIZE_MAX)
            sc->topics[t->dlq].wanted = 1;
    }
}

static void add_group_targets(struct scrape *sc, const struct kafka_group_spec *sp, size_t spec,
                              const char *group)
{
    if (sp->topics) {
        for (size_t k = 0; k < sp->ntopics; k++) {
            size_t ti = topic_find(sc, sp->topics[k]);
            if (ti != SIZE_MAX)
                add_target(sc, sp, spec, group, ti);
        }
        return;
    }
    for (size_t ti = 0; ti < sc->ntopics; ti++) {
        const struct topic_data *td = &sc->topics[ti];
        /* Internal topics (__consumer_offsets, __transaction_state) are nobody's queue. */
        if (!td->md || strncmp(td->md->topic, "__", 2) == 0 ||
            !kafka_spec_topic_match(sp, td->md->topic) || is_dlq_of_spec(sp, sc, td->md->topic))
            continue;
        add_target(sc, sp, spec, group, ti);
    }
}

static int resolve_targets(struct state *st, const struct deadline *dl, struct scrape *sc,
                           struct err *e)
{
    char **listed = NULL;
    size_t nlisted = 0;
    int need_list = 0;
    for (size_t i = 0; i < st->cfg.nspecs; i++)
        need_list |= st->cfg.specs[i].name == NULL;
    if (need_list && list_groups(st, dl, &listed, &nlisted, e))
        return -1;
    for (size_t i = 0; i < st->cfg.nspecs; i++) {
        const struct kafka_group_spec *sp = &st->cfg.specs[i];
        if (sp->name) {
            add_group_targets(sc, sp, i, sp->name);
            continue;
        }
        for (size_t k = 0; k < nlisted; k++) {
            int dup = 0; /* a group a named entry (or an earlier pattern) already reports */
            for (size_t j = 0; j < sc->n && !dup; j++)
                dup = strcmp(sc->t[j].group, listed[k]) == 0;
            if (!dup && kafka_spec_group_match(sp, listed[k]))
                add_group_targets(sc, sp, i, listed[k]);
        }
    }
    cfg_strv_free(listed);
    return 0;
}

/* Latest and earliest offsets of every wanted partition: ListOffsets, which librdkafka sends
 * once per leader broker for each of the two. */
static int read_watermarks(struct state *st, const struct deadline *dl, struct scrape *sc,
                           struct err *e)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < sc->ntopics; i++) {
        struct topic_data *td = &sc->topics[i];
        if (!td->wanted)
            continue;
        int np = td->md->partition_cnt;
        td->low = xcalloc(np ? (size_t)np : 1, sizeof *td->low);
        td->high = xcalloc(np ? (size_t)np : 1, sizeof *td->high);
        for (int p = 0; p < np; p++)
            rd_kafka_topic_partition_list_add(l, td->md->topic, td->md->partitions[p].id);
    }
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0 && l->cnt; pass++) {
        int64_t which = pass == 0 ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
        for (int k = 0; k < l->cnt; k++)
            l->elems[k].offset = which;
        int ms = slice_ms(dl, 1 << 30);
        if (ms <= 0) {
            rc = timed_out(st, "ListOffsets", e);
            break;
        }
        rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(st->rk, l, ms);
        if (err) {
            rc = err == RD_KAFKA_RESP_ERR__TIMED_OUT ? timed_out(st, "ListOffsets", e)
                                                     : call_error(st, "ListOffsets", err, NULL, e);
            break;
        }
        for (int k = 0; k < l->cnt && rc == 0; k++) {
            const rd_kafka_topic_partition_t *tp = &l->elems[k];
            if (tp->err) {
                char what[300];
                snprintf(what, sizeof what, "ListOffsets \"%s\" partition %d", tp->topic,
                         (int)tp->partition);
                rc = call_error(st, what, tp->err, NULL, e);
                break;
            }
            struct topic_data *td = &sc->topics[topic_find(sc, tp->topic)];
            for (int p = 0; p < td->md->partition_cnt; p++)
                if (td->md->partitions[p].id == tp->partition)
                    (pass == 0 ? td->high : td->low)[p] = tp->offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static int partition_index(const rd_kafka_metadata_topic_t *md, int32_t id)
{
    for (int p = 0; p < md->partition_cnt; p++)
        if (md->partitions[p].id == id)
            return p;
    return -1;
}

/* Committed offsets: one ListConsumerGroupOffsets (OffsetFetch) per group, with its partitions
 * named, all in flight at once. */
static int read_committed(struct state *st, const struct deadline *dl, struct scrape *sc,
                          struct err *e)
{
    if (sc->n == 0)
        return 0;
    rd_kafka_queue_t *q = rd_kafka_queue_new(st->rk);
    size_t inflight = 0;
    int rc = 0;
    char errstr[256];
    int ms = slice_ms(dl, 1 << 30);
    if (ms <= 0) {
        rd_kafka_queue_destroy(q);
        return timed_out(st, "OffsetFetch", e);
    }
    for (size_t i = 0; i < sc->n; i++) {
        int first = 1; /* the first target of its group sends the request for all of them */
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(sc->t[j].group, sc->t[i].group) != 0;
        if (!first)
            continue;
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
        for (size_t j = i; j < sc->n; j++) {
            if (strcmp(sc->t[j].group, sc->t[i].group))
                continue;
            const rd_kafka_metadata_topic_t *md = sc->topics[sc->t[j].topic].md;
            for (int p = 0; p < md->partition_cnt; p++)
                if (!rd_kafka_topic_partition_list_find(l, md->topic, md->partitions[p].id))
                    rd_kafka_topic_partition_list_add(l, md->topic, md->partitions[p].id);
        }
        rd_kafka_ListConsumerGroupOffsets_t *req =
            rd_kafka_ListConsumerGroupOffsets_new(sc->t[i].group, l);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_AdminOptions_t *o =
            rd_kafka_AdminOptions_new(st->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
        rd_kafka_AdminOptions_set_request_timeout(o, ms, errstr, sizeof errstr);
        rd_kafka_ListConsumerGroupOffsets(st->rk, &req, 1, o, q);
        rd_kafka_ListConsumerGroupOffsets_destroy(req);
        rd_kafka_AdminOptions_destroy(o);
        inflight++;
    }
    while (inflight && rc == 0) {
        int wait = slice_ms(dl, 1 << 30);
        rd_kafka_event_t *ev = wait > 0 ? rd_kafka_queue_poll(q, wait) : NULL;
        if (!ev) {
            rc = timed_out(st, "OffsetFetch", e);
            break;
        }
        inflight--;
        if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT) {
            rd_kafka_event_destroy(ev);
            inflight++;
            continue;
        }
        if (rd_kafka_event_error(ev)) {
            rc = call_error(st, "OffsetFetch", rd_kafka_event_error(ev),
                            rd_kafka_event_error_string(ev), e);
            rd_kafka_event_destroy(ev);
            break;
        }
        size_t ng = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &ng);
        for (size_t g = 0; g < ng && rc == 0; g++) {
            const char *gname = rd_kafka_group_result_name(gr[g]);
            const rd_kafka_error_t *ge = rd_kafka_group_result_error(gr[g]);
            char what[300];
            snprintf(what, sizeof what, "OffsetFetch group \"%s\"", gname);
            if (ge) {
                rc = call_error(st, what, rd_kafka_error_code(ge), rd_kafka_error_string(ge), e);
                break;
            }
            const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(gr[g]);
            for (int k = 0; pl && k < pl->cnt && rc == 0; k++) {
                const rd_kafka_topic_partition_t *tp = &pl->elems[k];
                if (tp->err) {
                    rc = call_error(st, what, tp->err, NULL, e);
                    break;
                }
                for (size_t j = 0; j < sc->n; j++) {
                    struct target *t = &sc->t[j];
                    const rd_kafka_metadata_topic_t *md = sc->topics[t->topic].md;
                    if (strcmp(t->group, gname) || strcmp(md->topic, tp->topic))
                        continue;
                    int p = partition_index(md, tp->partition);
                    if (p >= 0)
                        t->committed[p] = tp->offset < 0 ? -1 : tp->offset;
                }
            }
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    return rc;
}

static size_t find_need(const struct scrape *sc, size_t topic, int32_t partition, int64_t offset)
{
    for (size_t i = 0; i < sc->nneeds; i++)
        if (sc->needs[i].topic == topic && sc->needs[i].partition == partition &&
            sc->needs[i].offset == offset)
            return i;
    return SIZE_MAX;
}

/* Two needs from the same offset are one read, to the later of their ends. */
static size_t add_need(struct state *st, struct scrape *sc, size_t topic, int32_t partition,
                       int64_t offset, int64_t until)
{
    size_t i = find_need(sc, topic, partition, offset);
    if (i != SIZE_MAX) {
        if (until > sc->needs[i].until)
            sc->needs[i].until = until;
        return i;
    }
    if ((long long)sc->nneeds >= st->cfg.max_lag_fetches) {
        sc->capped = 1;
        return SIZE_MAX;
    }
    sc->needs = xrealloc(sc->needs, (sc->nneeds + 1) * sizeof *sc->needs);
    struct need *n = &sc->needs[sc->nneeds];
    n->topic = topic;
    n->partition = partition;
    n->offset = offset;
    n->until = until;
    n->done = 0;
    n->got = 0;
    n->ts = -1;
    n->last_ts = -1;
    return sc->nneeds++;
}

/* The offset the newest record of a non-empty dead-letter partition is read from: one before the
 * last, because a transactional producer's last offset is its commit marker, which no fetch
 * returns; the read goes on to the last offset and keeps the last record it gets. */
static int64_t dlq_newest_from(int64_t low, int64_t high)
{
    return high - 2 > low ? high - 2 : low;
}

/* What to read: the first unconsumed record of every lagging partition, and the first and the
 * last records of every non-empty partition of a dead-letter topic (one read when they are at
 * most two apart). */
static void plan_fetches(struct state *st, struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        const struct topic_data *td = &sc->topics[t->topic];
        for (int p = 0; p < td->md->partition_cnt; p++) {
            struct kafka_offsets o = {td->low[p], td->high[p], t->committed[p]};
            int64_t first;
            if (kafka_partition_lag(&o, &first) > 0)
                t->need[p] = add_need(st, sc, t->topic, td->md->partitions[p].id, first, first);
        }
    }
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->dlq == SIZE_MAX)
            continue;
        const struct topic_data *d = &sc->topics[t->dlq];
        for (int p = 0; p < d->md->partition_cnt; p++) {
            if (d->high[p] <= d->low[p])
                continue;
            int32_t id = d->md->partitions[p].id;
            add_need(st, sc, t->dlq, id, d->low[p], d->low[p]);
            add_need(st, sc, t->dlq, id, dlq_newest_from(d->low[p], d->high[p]), d->high[p] - 1);
        }
    }
}

static struct need *round_find(struct scrape *sc, const size_t *round, size_t n, const char *topic,
                               int32_t partition)
{
    for (size_t i = 0; i < n; i++) {
        struct need *nd = &sc->needs[round[i]];
        if (nd->partition == partition && strcmp(sc->topics[nd->topic].md->topic, topic) == 0)
            return nd;
    }
    return NULL;
}

/* librdkafka 2.0.2 does not wake a broker's thread when a partition is assigned or resumed: a
 * thread with nothing to fetch sleeps up to 1 s, so each round would start fetching on that
 * tick. A ListOffsets to the leaders of the round's partitions (the reply wakes each one's
 * thread, which then sees the assignment) starts the fetches at once. Its own errors are left
 * to the fetch that follows, which reports them with the partition. */
static void wake_fetchers(struct state *st, const struct deadline *dl,
                          const rd_kafka_topic_partition_list_t *round)
{
    int ms = slice_ms(dl, 1 << 30);
    if (ms <= 0)
        return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(round);
    for (int k = 0; k < l->cnt; k++)
        l->elems[k].offset = RD_KAFKA_OFFSET_END;
    (void)rd_kafka_offsets_for_times(st->rk, l, ms);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Waits for the next message of the assigned partitions, at most 100 ms at a time: 0 with *m
 * set (NULL when none came), or -1 on the deadline, a broker error that waiting will not cure,
 * or a fetch error. The end of a partition's log and an offset out of range (records deleted
 * since ListOffsets) are messages, not errors: they end that partition's read. */
static int poll_fetch(struct state *st, const struct deadline *dl, rd_kafka_message_t **m,
                      struct err *e)
{
    *m = NULL;
    int ms = slice_ms(dl, 100);
    if (ms <= 0)
        return timed_out(st, "Fetch", e);
    rd_kafka_message_t *got = rd_kafka_consumer_poll(st->rk, ms);
    if (!got)
        return fatal_pending(st, "Fetch", e);
    if (got->err && got->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
        got->err != RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET &&
        got->err != RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
        char what[300];
        if (got->rkt)
            snprintf(what, sizeof what, "Fetch \"%s\" partition %d", rd_kafka_topic_name(got->rkt),
                     (int)got->partition);
        else
            snprintf(what, sizeof what, "Fetch");
        int rc = call_error(st, what, got->err, rd_kafka_message_errstr(got), e);
        rd_kafka_message_destroy(got);
        return rc;
    }
    *m = got;
    return 0;
}

/* Unassigns every partition and drops what the fetchers had read past the records wanted: the
 * rest of each fetch response stays queued for the consumer, outdated but holding the
 * response's whole buffer, until the next poll; the handle lives on between scrapes, so that
 * was 1 MB held at 1,000 lagging partitions (issue 14). The poll only discards (and frees)
 * them: an error it might return now belongs to no read. */
static rd_kafka_resp_err_t unassign_all(struct state *st)
{
    rd_kafka_resp_err_t err = rd_kafka_assign(st->rk, NULL);
    rd_kafka_message_t *m;
    while ((m = rd_kafka_consumer_poll(st->rk, 0)))
        rd_kafka_message_destroy(m);
    return err;
}

static void pause_one(struct state *st, const char *topic, int32_t partition)
{
    rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(one, topic, partition);
    rd_kafka_pause_partitions(st->rk, one);
    rd_kafka_topic_partition_list_destroy(one);
}

/* One fetch round: every pending need whose partition is not in the round yet, assigned at its
 * offset; each partition is paused as soon as the record at its need's end (or the end of the
 * log) is seen, so a round reads one record per partition (two for a dead-letter partition's
 * newest), plus what a fetch response happens to carry along. */
static int fetch_round(struct state *st, const struct deadline *dl, struct scrape *sc,
                       size_t *round, struct err *e)
{
    size_t n = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < sc->nneeds; i++) {
        struct need *nd = &sc->needs[i];
        if (nd->done)
            continue;
        const char *topic = sc->topics[nd->topic].md->topic;
        if (rd_kafka_topic_partition_list_find(l, topic, nd->partition))
            continue;
        rd_kafka_topic_partition_list_add(l, topic, nd->partition)->offset = nd->offset;
        round[n++] = i;
    }
    /* Partitions paused by an earlier round (or scrape) stay paused across assign(): resume. */
    rd_kafka_resp_err_t err = rd_kafka_assign(st->rk, l);
    if (!err)
        err = rd_kafka_resume_partitions(st->rk, l);
    if (!err)
        wake_fetchers(st, dl, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err)
        return call_error(st, "assign", err, NULL, e);
    size_t left = n;
    int rc = 0;
    while (left && rc == 0) {
        rd_kafka_message_t *m = NULL;
        if ((rc = poll_fetch(st, dl, &m, e)) != 0 || !m)
            continue;
        struct need *nd =
            m->rkt ? round_find(sc, round, n, rd_kafka_topic_name(m->rkt), m->partition) : NULL;
        if (nd && !nd->done && (m->err || m->offset >= nd->offset)) {
            /* The end of the log (nothing readable left: compacted away, transaction markers)
             * or a record deleted since ListOffsets: no more timestamps. */
            if (!m->err) {
                rd_kafka_timestamp_type_t tt;
                int64_t ts = rd_kafka_message_timestamp(m, &tt);
                if (tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE)
                    ts = -1;
                if (!nd->got)
                    nd->ts = ts;
                nd->got = 1;
                nd->last_ts = ts;
                if (m->offset < nd->until) {
                    rd_kafka_message_destroy(m);
                    continue;
                }
            }
            nd->done = 1;
            left--;
            pause_one(st, rd_kafka_topic_name(m->rkt), m->partition);
        }
        rd_kafka_message_destroy(m);
    }
    err = unassign_all(st);
    if (rc == 0 && err)
        rc = call_error(st, "unassign", err, NULL, e);
    return rc;
}

static int fetch_records(struct state *st, const struct deadline *dl, struct scrape *sc,
                         struct err *e)
{
    if (sc->nneeds == 0)
        return 0;
    size_t *round = xcalloc(sc->nneeds, sizeof *round);
    int rc = 0;
    for (;;) {
        size_t pending = 0;
        for (size_t i = 0; i < sc->nneeds; i++)
            pending += !sc->needs[i].done;
        if (!pending || (rc = fetch_round(st, dl, sc, round, e)))
            break;
    }
    free(round);
    return rc;
}

/* The series of one group on one topic. A failed add is remembered by the set (P1: the core
 * fails the collection with it), so nothing here checks it. */
static void emit_target(const struct state *st, const struct scrape *sc, const struct target *t,
                        int64_t now_ms, struct metric_set *out)
{
    const struct kafka_group_spec *sp = &st->cfg.specs[t->spec];
    const struct topic_data *td = &sc->topics[t->topic];
    const char *q = td->md->topic, *g = t->group;
    int64_t ready = 0, oldest = INT64_MAX;
    int complete = 1;
    for (int p = 0; p < td->md->partition_cnt; p++) {
        struct kafka_offsets o = {td->low[p], td->high[p], t->committed[p]};
        int64_t first, lag = kafka_partition_lag(&o, &first);
        ready += lag;
        int64_t ts = -1;
        if (lag > 0) {
            if (t->need[p] == SIZE_MAX)
                complete = 0;
            else
                ts = sc->needs[t->need[p]].ts;
        }
        if (ts >= 0 && ts < oldest)
            oldest = ts;
        if (sp->per_partition) {
            char part[16];
            snprintf(part, sizeof part, "%d", (int)td->md->partitions[p].id);
            metric_set_add(out, "qrel_queue_messages", (double)lag, "queue", q, "group", g,
                           "partition", part, "state", "ready", NULL);
            if (lag == 0 || ts >= 0)
                metric_set_add(out, "qrel_consumer_lag_seconds",
                               lag ? kafka_age_seconds(now_ms, ts) : 0.0, "queue", q, "group", g,
                               "partition", part, NULL);
        }
    }
    metric_set_add(out, "qrel_queue_messages", (double)ready, "queue", q, "group", g, "state",
                   "ready", NULL);
    if (complete) {
        double age = oldest == INT64_MAX ? 0.0 : kafka_age_seconds(now_ms, oldest);
        metric_set_add(out, "qrel_consumer_lag_seconds", age, "queue", q, "group", g, NULL);
        metric_set_add(out, "qrel_queue_oldest_message_age_seconds", age, "queue", q, "group", g,
                       NULL);
    }
    if (sp->max_poll_interval > 0)
        metric_set_add(out, "qrel_lease_timeout_seconds", sp->max_poll_interval, "queue", q,
                       "group", g, NULL);
}

static void emit_dlq(const struct scrape *sc, size_t i, int64_t now_ms, struct metric_set *out)
{
    const struct target *t = &sc->t[i];
    if (!t->dlq_name)
        return;
    const char *q = sc->topics[t->topic].md->topic;
    for (size_t j = 0; j < i; j++) /* one set of series per topic and dead-letter topic */
        if (sc->t[j].topic == t->topic && sc->t[j].dlq_name &&
            strcmp(sc->t[j].dlq_name, t->dlq_name) == 0)
            return;
    int64_t size = 0, oldest = INT64_MAX, newest = INT64_MIN;
    int complete = 1, newest_complete = 1;
    if (t->dlq != SIZE_MAX) {
        const struct topic_data *d = &sc->topics[t->dlq];
        for (int p = 0; p < d->md->partition_cnt; p++) {
            if (d->high[p] <= d->low[p])
                continue;
            size += d->high[p] - d->low[p];
            int32_t id = d->md->partitions[p].id;
            size_t k = find_need(sc, t->dlq, id, d->low[p]);
            if (k == SIZE_MAX)
                complete = 0;
            else if (sc->needs[k].ts >= 0 && sc->needs[k].ts < oldest)
                oldest = sc->needs[k].ts;
            k = find_need(sc, t->dlq, id, dlq_newest_from(d->low[p], d->high[p]));
            if (k == SIZE_MAX)
                newest_complete = 0;
            else if (sc->needs[k].last_ts > newest)
                newest = sc->needs[k].last_ts;
        }
    }
    metric_set_add(out, "qrel_dead_letter_messages", (double)size, "queue", q, "dead_letter_queue",
                   t->dlq_name, NULL);
    if (complete && oldest != INT64_MAX)
        metric_set_add(out, "qrel_dead_letter_oldest_age_seconds",
                       kafka_age_seconds(now_ms, oldest), "queue", q, "dead_letter_queue",
                       t->dlq_name, NULL);
    if (newest_complete && newest >= 0)
        metric_set_add(out, "qrel_dead_letter_newest_age_seconds",
                       kafka_age_seconds(now_ms, newest), "queue", q, "dead_letter_queue",
                       t->dlq_name, NULL);
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    int rc = -1;
    /* Stop waiting a little before the core does, so a timeout is reported with what was being
     * waited for and the last broker error, not only as a late collection. */
    struct deadline inner = *dl;
    if (deadline_remaining_ms(dl) > 1000)
        inner.at_ms -= 150;
    dl = &inner;
    clear_error(st);
    if (!st->rk && open_handle(st, e))
        return -1;
    if (read_metadata(st, dl, &sc, e) || resolve_targets(st, dl, &sc, e) ||
        read_watermarks(st, dl, &sc, e) || read_committed(st, dl, &sc, e))
        goto out;
    plan_fetches(st, &sc);
    if (fetch_records(st, dl, &sc, e))
        goto out;
    if (sc.capped && !st->warned_cap) {
        st->warned_cap = 1;
        char cap[32];
        snprintf(cap, sizeof cap, "%lld", st->cfg.max_lag_fetches);
        log_kv(LOG_WARN,
               "more lagging partitions than max_lag_fetches: lag in seconds left out for some "
               "topics",
               "source", c->name, "max_lag_fetches", cap, NULL);
    }
    int64_t now_ms = (int64_t)(deadline_wall_now() * 1000.0);
    for (size_t i = 0; i < sc.n; i++) {
        emit_target(st, &sc, &sc.t[i], now_ms, out);
        emit_dlq(&sc, i, now_ms, out);
    }
    rc = 0;
    if (log_enabled(LOG_DEBUG)) {
        char targets[32], fetches[32];
        snprintf(targets, sizeof targets, "%zu", sc.n);
        snprintf(fetches, sizeof fetches, "%zu", sc.nneeds);
        log_kv(LOG_DEBUG, "kafka collection done", "source", c->name, "group_topics", targets,
               "records_fetched", fetches, NULL);
    }
out:
    scrape_free(&sc);
    if (rc)
        drop_handle(st); /* joins librdkafka's threads: nothing is left running after a failure */
    return rc;
}

/* ---- the dead-letter join's broker side (collector.h) ----
 * The dead-letter topic is read at offsets by the same consumer that reads lag in seconds: it is
 * assigned partitions directly, never joins a group and never commits, so reading changes no
 * offset of anyone's. */

/* The first entry of groups that measures topic (listed, or matched by topic_pattern or
 * topic_regex) and has a
 * dead_letter_topic; NULL when none. */
static const struct kafka_group_spec *spec_of_topic(const struct state *st, const char *topic)
{
    for (size_t i = 0; i < st->cfg.nspecs; i++) {
        const struct kafka_group_spec *sp = &st->cfg.specs[i];
        if (!sp->dlq_tmpl)
            continue;
        for (size_t k = 0; k < sp->ntopics; k++)
            if (strcmp(sp->topics[k], topic) == 0)
                return sp;
        if (kafka_spec_topic_match(sp, topic))
            return sp;
    }
    return NULL;
}

static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    char why[300];
    if (kafka_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!spec_of_topic(c->priv, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: no entry of groups of source \"%s\" measures topic \"%s\" with "
                         "a dead_letter_topic",
                         c->name, queue);
    return 0;
}

/* One partition of the dead-letter topic: the offsets to read. */
struct dl_part {
    int32_t id;
    int64_t from, until;
    int done;
};

/* The last value of header name on m (NULL: absent or null). */
static const void *header_value(const rd_kafka_message_t *m, const char *name, size_t *size)
{
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    *size = 0;
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(h, name, &v, size) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return NULL;
    return v;
}

/* The id m carries at id_field (a header or a JSON key of its value), malloc'd into *id with its
 * length; *id = NULL when it carries none. */
static void record_id(const rd_kafka_message_t *m, const char *id_field, char **id, size_t *len)
{
    const char *header = kafka_id_field_header(id_field);
    if (!header) {
        kafka_json_id(m->payload, m->len, id_field, id, len);
        return;
    }
    const void *v = header_value(m, header, len);
    *id = v ? xstrndup(v, *len) : NULL;
}

/* What read_dead_letters does with each record it read. */
typedef void (*dead_letter_fn)(const rd_kafka_message_t *m, void *arg);

struct id_read {
    const char *id_field;
    struct dead_letter_read *out;
};

static void add_dead_letter(const rd_kafka_message_t *m, void *arg)
{
    struct id_read *r = arg;
    char *id = NULL;
    size_t len = 0;
    record_id(m, r->id_field, &id, &len);
    dead_letter_read_add(r->out, id, len);
    free(id);
}

/* Reads the records of every partition from from[p] (NULL: its log start) up to the high
 * watermark, max in all, passing each to fn; each partition is paused once its last planned
 * offset (or the end of the log) is seen. *total grows by the records in those ranges. */
static int read_dead_letters(struct state *st, const struct deadline *dl,
                             const struct topic_data *td, const int64_t *from, size_t max,
                             size_t *total, dead_letter_fn fn, void *arg, struct err *e)
{
    int np = td->md->partition_cnt;
    struct dl_part *parts = xcalloc(np ? (size_t)np : 1, sizeof *parts);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np ? np : 1);
    size_t n = 0, budget = max;
    for (int p = 0; p < np; p++) {
        int64_t start = from ? from[p] : td->low[p];
        if (td->high[p] <= start)
            continue;
        uint64_t size = (uint64_t)(td->high[p] - start);
        *total += (size_t)size;
        if (budget == 0)
            continue;
        uint64_t take = size < budget ? size : budget;
        budget -= (size_t)take;
        parts[n].id = td->md->partitions[p].id;
        parts[n].from = start;
        parts[n].until = start + (int64_t)take - 1;
        rd_kafka_topic_partition_list_add(l, td->md->topic, parts[n].id)->offset = start;
        n++;
    }
    int rc = 0;
    if (n == 0)
        goto out;
    rd_kafka_resp_err_t err = rd_kafka_assign(st->rk, l);
    if (!err)
        err = rd_kafka_resume_partitions(st->rk, l);
    if (err) {
        rc = call_error(st, "assign", err, NULL, e);
        goto out;
    }
    wake_fetchers(st, dl, l);
    size_t left = n;
    while (left && rc == 0) {
        rd_kafka_message_t *m = NULL;
        if ((rc = poll_fetch(st, dl, &m, e)) != 0 || !m)
            continue;
        struct dl_part *dp = NULL;
        if (m->rkt && strcmp(rd_kafka_topic_name(m->rkt), td->md->topic) == 0)
            for (size_t i = 0; i < n && !dp; i++)
                if (parts[i].id == m->partition)
                    dp = &parts[i];
        if (dp && !dp->done) {
            if (!m->err && m->offset >= dp->from && m->offset <= dp->until)
                fn(m, arg);
            /* The end of the log (transaction markers, records deleted since ListOffsets) ends
             * the partition's read as its last planned offset does. */
            if (m->err || m->offset >= dp->until) {
                dp->done = 1;
                left--;
                pause_one(st, td->md->topic, m->partition);
            }
        }
        rd_kafka_message_destroy(m);
    }
    err = unassign_all(st);
    if (rc == 0 && err)
        rc = call_error(st, "unassign", err, NULL, e);
out:
    rd_kafka_topic_partition_list_destroy(l);
    free(parts);
    return rc;
}

/* The metadata and watermarks of dead-letter topic name into sc, for dead_letter_ids and
 * dlq_read: 0 with *ti its index, SIZE_MAX when the topic does not exist (not created yet:
 * nothing was dead-lettered). The handle is opened when needed; *inner is dl stopped a little
 * before the core's, so a timeout says what was waited for. */
static int dead_letter_topic(struct state *st, const struct deadline *dl, struct deadline *inner,
                             const char *name, struct scrape *sc, size_t *ti, struct err *e)
{
    *inner = *dl;
    if (deadline_remaining_ms(dl) > 1000)
        inner->at_ms -= 150;
    *ti = SIZE_MAX;
    clear_error(st);
    if ((!st->rk && open_handle(st, e)) || read_metadata(st, inner, sc, e))
        return -1;
    *ti = topic_find(sc, name);
    if (*ti == SIZE_MAX)
        return 0;
    sc->topics[*ti].wanted = 1;
    return read_watermarks(st, inner, sc, e);
}

static int dead_letter_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                           const struct deadline *dl, struct dead_letter_read *out, struct err *e)
{
    struct state *st = c->priv;
    const struct kafka_group_spec *sp = spec_of_topic(st, queue);
    if (!sp)
        return err_set(e, ERR_CONFIG, "topic \"%.200s\" has no dead_letter_topic", queue);
    out->dead_letter_queue = kafka_dlq_name(sp->dlq_tmpl, queue);
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    struct deadline inner;
    size_t ti;
    struct id_read r = {id_field, out};
    int rc = dead_letter_topic(st, dl, &inner, out->dead_letter_queue, &sc, &ti, e);
    if (rc == 0 && ti != SIZE_MAX)
        rc = read_dead_letters(st, &inner, &sc.topics[ti], NULL, max, &out->total, add_dead_letter,
                               &r, e);
    scrape_free(&sc);
    if (rc) {
        err_prefix(e, "dead-letter topic \"%.200s\"", out->dead_letter_queue);
        drop_handle(st);
    }
    return rc;
}

/* ---- `qrel dlq` (core/dlq_kind.h) ----
 * Reading is the join's read (no group joined, nothing committed), from the log start for
 * inspect and from the replay group's commits for a replay; each record is kept whole (key,
 * value, headers) for requeue. The writing is replay.c's. */

/* Whether the dead-letter topic dlq of queue also receives other topics' dead letters: a
 * dead_letter_topic without "{topic}" on an entry that measures more than queue. */
static int dlq_shared(const struct state *st, const char *queue, const char *dlq)
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
    const void *v = header_value(m, name, &size);
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
    record_id(m, x->id_field, &work, &len);
    if (work && len && !memchr(work, '\0', len))
        dm->work_id = work;
    else
        free(work);
    size_t size;
    const void *attempts = header_value(m, KAFKA_ATTEMPTS_HEADER, &size);
    dm->deliveries = kafka_dlq_deliveries(attempts, size);
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    if (tt != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts > 0)
        dm->dead_since = (double)ts / 1000.0;
    dm->body_bytes = m->payload ? m->len : 0;
    dm->kind_data = kafka_dead_letter_new(m, origin);
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    struct state *st = c->priv;
    const struct kafka_group_spec *sp = spec_of_topic(st, queue);
    if (!sp)
        return err_set(e, ERR_CONFIG, "topic \"%.200s\" has no dead_letter_topic", queue);
    out->dead_letter_queue = kafka_dlq_name(sp->dlq_tmpl, queue);
    out->origin = xstrdup(queue);
    int shared = dlq_shared(st, queue, out->dead_letter_queue);
    out->kind_data = kafka_replay_new(c->name, out->origin, out->dead_letter_queue, shared);
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    struct deadline inner;
    size_t ti;
    int64_t *from = NULL;
    int rc = dead_letter_topic(st, dl, &inner, out->dead_letter_queue, &sc, &ti, e);
    if (rc || ti == SIZE_MAX)
        goto out;
    const struct topic_data *td = &sc.topics[ti];
    if (purpose == DLQ_REPLAY) {
        /* The replay group's commits on the dead-letter topic, read as any group's are. */
        static const struct kafka_group_spec plain;
        add_target(&sc, &plain, 0, kafka_replay_group_name(out->kind_data), ti);
        if ((rc = read_committed(st, &inner, &sc, e)) != 0)
            goto out;
        int np = td->md->partition_cnt;
        from = xcalloc(np ? (size_t)np : 1, sizeof *from);
        for (int p = 0; p < np; p++)
            from[p] = kafka_dlq_read_from(td->low[p], td->high[p], sc.t[0].committed[p]);
    }
    struct dlq_read_ctx x = {queue, id_field, shared, out};
    rc = read_dead_letters(st, &inner, td, from, max, &out->total, add_dlq_message, &x, e);
out:
    free(from);
    scrape_free(&sc);
    if (rc) {
        err_prefix(e, "dead-letter topic \"%.200s\"", out->dead_letter_queue);
        drop_handle(st);
    }
    return rc;
}

static int dlq_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    return kafka_replay_requeue(b->kind_data, &st->cfg, m->kind_data, dl, e);
}

static int dlq_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    return kafka_replay_commit(b->kind_data, &st->cfg, m->kind_data, dl, e);
}

static const struct dlq_kind kafka_dlq = {.read = dlq_read,
                                          .requeue = dlq_requeue,
                                          .remove = dlq_remove,
                                          .message_free = kafka_dead_letter_free,
                                          .batch_free = kafka_replay_free};

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue",
     "have the consumers publish given-up records to a dead-letter topic and name "
     "it in dead_letter_topic"},
    {NULL, NULL}};

const struct collector_kind kafka_kind = {.name = "kafka",
                                          .state_size = sizeof(struct state),
                                          .configure = configure,
                                          .collect = collect,
                                          .destroy = destroy,
                                          .dead_letter_validate = dead_letter_validate,
                                          .dead_letter_ids = dead_letter_ids,
                                          .audit_hints = hints,
                                          .dlq = &kafka_dlq};
