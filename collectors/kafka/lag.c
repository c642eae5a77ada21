/* kafka/lag.c: one scrape of a `kafka` source (lag.h).
 *
 * Lag in messages comes from offsets alone (scrape.c); lag in seconds needs the timestamp of the
 * first record the group has not consumed, so this reads that one record (at the committed
 * offset) with the source's consumer (client.c), which is assigned partitions directly and never
 * joins nor commits. After the offsets: one small fetch per lagging partition and two per
 * non-empty partition of a dead-letter topic (its first and its last records), capped by
 * max_lag_fetches, in rounds that each start with a ListOffsets to the leaders involved
 * (kafka_client_wake), through the source's reader (client.h). Every call is bounded by the
 * scrape's deadline; the handles are destroyed after any error, so no thread outlives a failure. */
#include "kafka/lag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/entries.h"
#include "hashtab.h"
#include "kafka/client.h"
#include "kafka/kafka.h"
#include "kafka/scrape.h"
#include "log.h"
#include "alloc.h"

/* A need's key: two lagging groups of a topic, or a dead-letter topic's first and last records
 * when they are close, share a read. Hashed, since every lagging partition looks its read up:
 * a pass over the needs made that quadratic in the partitions. */
static uint64_t need_hash(size_t topic, int32_t partition, int64_t offset)
{
    uint64_t key[3] = {(uint64_t)topic, (uint64_t)(uint32_t)partition, (uint64_t)offset};
    return hashtab_hash(key, sizeof key, 0);
}

static uint64_t need_hash_of(const void *ctx, uint32_t id)
{
    const struct kafka_scrape *sc = ctx;
    const struct kafka_need *n = &sc->needs[id];
    return need_hash(n->topic, n->partition, n->offset);
}

/* The need of (topic, partition, offset), or SIZE_MAX; p is left where it would be added. */
static size_t need_search(const struct kafka_scrape *sc, size_t topic, int32_t partition,
                          int64_t offset, struct hashtab_probe *p)
{
    for (uint32_t id = hashtab_first(&sc->need_index, need_hash(topic, partition, offset), p);
         id != HASHTAB_END; id = hashtab_next(&sc->need_index, p)) {
        const struct kafka_need *n = &sc->needs[id];
        if (n->topic == topic && n->partition == partition && n->offset == offset)
            return id;
    }
    return SIZE_MAX;
}

static size_t find_need(const struct kafka_scrape *sc, size_t topic, int32_t partition,
                        int64_t offset)
{
    struct hashtab_probe p;
    return need_search(sc, topic, partition, offset, &p);
}

/* Two needs from the same offset are one read, to the later of their ends. pi is the
 * partition's index in the topic's metadata. */
static size_t add_need(struct kafka_state *st, struct kafka_scrape *sc, size_t topic, int pi,
                       int64_t offset, int64_t until)
{
    const rd_kafka_metadata_partition_t *mp = &sc->topics[topic].md->partitions[pi];
    int32_t partition = mp->id;
    struct hashtab_probe p;
    size_t i = need_search(sc, topic, partition, offset, &p);
    if (i != SIZE_MAX) {
        if (until > sc->needs[i].until)
            sc->needs[i].until = until;
        return i;
    }
    if ((long long)sc->nneeds >= st->cfg.max_lag_fetches) {
        sc->capped = 1;
        return SIZE_MAX;
    }
    if (sc->nneeds == sc->needs_cap) {
        sc->needs_cap = sc->needs_cap ? sc->needs_cap * 2 : 64;
        sc->needs = xrealloc(sc->needs, sc->needs_cap * sizeof *sc->needs);
    }
    struct kafka_need *n = &sc->needs[sc->nneeds];
    n->topic = topic;
    n->partition = partition;
    n->leader = mp->leader;
    n->offset = offset;
    n->until = until;
    n->done = 0;
    n->got = 0;
    n->ts = -1;
    n->last_ts = -1;
    n->bad_ts = 0;
    hashtab_add(&sc->need_index, &p, (uint32_t)sc->nneeds, need_hash_of, sc);
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
static void plan_fetches(struct kafka_state *st, struct kafka_scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        struct kafka_target *t = &sc->t[i];
        const struct kafka_topic_data *td = &sc->topics[t->topic];
        for (int p = 0; p < td->md->partition_cnt; p++) {
            struct kafka_offsets o = {td->low[p], td->high[p], t->committed[p]};
            int64_t first;
            if (kafka_partition_lag(&o, &first) > 0)
                t->need[p] = add_need(st, sc, t->topic, p, first, first);
        }
    }
    for (size_t i = 0; i < sc->n; i++) {
        const struct kafka_target *t = &sc->t[i];
        if (t->dlq == SIZE_MAX)
            continue;
        const struct kafka_topic_data *d = &sc->topics[t->dlq];
        for (int p = 0; p < d->md->partition_cnt; p++) {
            if (d->high[p] <= d->low[p])
                continue;
            add_need(st, sc, t->dlq, p, d->low[p], d->low[p]);
            add_need(st, sc, t->dlq, p, dlq_newest_from(d->low[p], d->high[p]), d->high[p] - 1);
        }
    }
}

/* A round's needs by (topic, partition): a round holds one need per partition, found once for
 * each need added and once for each record polled, so a probe here instead of a pass over the
 * round (which made a round of n partitions cost n * n name comparisons). */
struct round_index {
    const struct kafka_scrape *sc;
    const size_t *round; /* indexes into sc->needs */
    struct hashtab ix;   /* positions in round */
};

static uint64_t tp_hash(const char *topic, int32_t partition)
{
    return hashtab_hash(&partition, sizeof partition, hashtab_hash(topic, strlen(topic), 0));
}

static uint64_t round_hash_of(const void *ctx, uint32_t k)
{
    const struct round_index *r = ctx;
    const struct kafka_need *nd = &r->sc->needs[r->round[k]];
    return tp_hash(r->sc->topics[nd->topic].md->topic, nd->partition);
}

/* The position in the round of the need of (topic, partition), or HASHTAB_END (p is left where
 * it would be added). */
static uint32_t round_lookup(const struct round_index *r, const char *topic, int32_t partition,
                             struct hashtab_probe *p)
{
    for (uint32_t k = hashtab_first(&r->ix, tp_hash(topic, partition), p); k != HASHTAB_END;
         k = hashtab_next(&r->ix, p)) {
        const struct kafka_need *nd = &r->sc->needs[r->round[k]];
        if (nd->partition == partition && strcmp(r->sc->topics[nd->topic].md->topic, topic) == 0)
            return k;
    }
    return HASHTAB_END;
}

static struct kafka_need *round_find(struct kafka_scrape *sc, const struct round_index *r,
                                     const char *topic, int32_t partition)
{
    struct hashtab_probe p;
    uint32_t k = round_lookup(r, topic, partition, &p);
    return k == HASHTAB_END ? NULL : &sc->needs[r->round[k]];
}

/* One fetch round: every pending need whose partition is not in the round yet, assigned at its
 * offset; each partition is paused as soon as the record at its need's end (or the end of the
 * log) is seen, so a round reads one record per partition (two for a dead-letter partition's
 * newest), plus what a fetch response happens to carry along. */
static int fetch_round(struct kafka_state *st, const struct deadline *dl, struct kafka_scrape *sc,
                       size_t *round, int32_t *leaders, struct err *e)
{
    size_t n = 0;
    struct round_index r = {sc, round, {0}};
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < sc->nneeds; i++) {
        struct kafka_need *nd = &sc->needs[i];
        if (nd->done)
            continue;
        const char *topic = sc->topics[nd->topic].md->topic;
        struct hashtab_probe p;
        if (round_lookup(&r, topic, nd->partition, &p) != HASHTAB_END)
            continue;
        rd_kafka_topic_partition_list_add(l, topic, nd->partition)->offset = nd->offset;
        leaders[n] = nd->leader;
        round[n] = i;
        hashtab_add(&r.ix, &p, (uint32_t)n++, round_hash_of, &r);
    }
    /* Partitions paused by an earlier round (or scrape) stay paused across assign(): resume. */
    rd_kafka_resp_err_t err = rd_kafka_assign(st->reader, l);
    if (!err)
        err = rd_kafka_resume_partitions(st->reader, l);
    if (!err)
        kafka_client_wake(st, dl, l, leaders);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        hashtab_free(&r.ix);
        return kafka_client_call_error(st, "assign", err, NULL, e);
    }
    size_t left = n;
    int rc = 0;
    while (left && rc == 0) {
        rd_kafka_message_t *m = NULL;
        if ((rc = kafka_client_poll(st, dl, &m, e)) != 0 || !m)
            continue;
        struct kafka_need *nd =
            m->rkt ? round_find(sc, &r, rd_kafka_topic_name(m->rkt), m->partition) : NULL;
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
            kafka_client_pause(st, rd_kafka_topic_name(m->rkt), m->partition);
        }
        rd_kafka_message_destroy(m);
    }
    hashtab_free(&r.ix);
    err = kafka_client_unassign(st);
    if (rc == 0 && err)
        rc = kafka_client_call_error(st, "unassign", err, NULL, e);
    return rc;
}

/* A producer sets a record's CreateTime: one outside the sane range (0, 5, a clock years ahead)
 * would give an age of decades. Such a time becomes -1 (no timestamp) and the read is counted as
 * a skipped entry of its topic (common/entries.h), once per partition read. */
static void judge_timestamps(struct kafka_scrape *sc, int64_t now_ms, struct entry_skips *skips)
{
    double now = (double)now_ms / 1000, age;
    for (size_t i = 0; i < sc->nneeds; i++) {
        struct kafka_need *nd = &sc->needs[i];
        if (nd->ts >= 0 && entry_age(now, (double)nd->ts / 1000, &age)) {
            nd->ts = -1;
            nd->bad_ts = 1;
        }
        if (nd->last_ts >= 0 && entry_age(now, (double)nd->last_ts / 1000, &age)) {
            nd->last_ts = -1;
            nd->bad_ts = 1;
        }
        if (nd->bad_ts)
            entry_skips_add(skips, sc->topics[nd->topic].md->topic, ENTRY_BAD_TIMESTAMP);
    }
}

static int fetch_records(struct kafka_state *st, const struct deadline *dl, struct kafka_scrape *sc,
                         struct err *e)
{
    if (sc->nneeds == 0)
        return 0;
    if (kafka_client_reader_open(st, e))
        return -1;
    for (size_t i = 0; i < sc->nneeds; i++) {
        const rd_kafka_metadata_topic_t *md = sc->topics[sc->needs[i].topic].md;
        kafka_client_reader_topic(st, md->topic, md->partition_cnt);
    }
    size_t *round = xcalloc(sc->nneeds, sizeof *round);
    int32_t *leaders = xcalloc(sc->nneeds, sizeof *leaders);
    int rc = 0;
    for (;;) {
        size_t pending = 0;
        for (size_t i = 0; i < sc->nneeds; i++)
            pending += !sc->needs[i].done;
        if (!pending || (rc = fetch_round(st, dl, sc, round, leaders, e)))
            break;
    }
    free(round);
    free(leaders);
    if (rc == 0)
        kafka_client_reader_settle(st);
    return rc;
}

/* The series of one group on one topic. A failed add is remembered by the set (P1: the core
 * fails the collection with it), so nothing here checks it. */
static void emit_target(const struct kafka_state *st, const struct kafka_scrape *sc,
                        const struct kafka_target *t, int64_t now_ms, struct metric_set *out)
{
    const struct kafka_group_spec *sp = &st->cfg.specs[t->spec];
    const struct kafka_topic_data *td = &sc->topics[t->topic];
    const char *q = td->md->topic, *g = t->group;
    int64_t ready = 0, oldest = INT64_MAX;
    int complete = 1;
    for (int p = 0; p < td->md->partition_cnt; p++) {
        struct kafka_offsets o = {td->low[p], td->high[p], t->committed[p]};
        int64_t first, lag = kafka_partition_lag(&o, &first);
        ready += lag;
        int64_t ts = -1;
        if (lag > 0) {
            if (t->need[p] == SIZE_MAX || sc->needs[t->need[p]].bad_ts)
                complete = 0; /* an age unknown is left out, never read as caught up */
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

static void emit_dlq(const struct kafka_scrape *sc, size_t i, int64_t now_ms,
                     struct metric_set *out)
{
    const struct kafka_target *t = &sc->t[i];
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
        const struct kafka_topic_data *d = &sc->topics[t->dlq];
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

int kafka_lag_collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                      struct err *e)
{
    struct kafka_state *st = c->priv;
    struct kafka_scrape sc;
    memset(&sc, 0, sizeof sc);
    int rc = -1;
    /* Stop waiting a little before the core does, so a timeout is reported with what was being
     * waited for and the last broker error, not only as a late collection. */
    struct deadline inner = *dl;
    if (deadline_remaining_ms(dl) > 1000)
        inner.at_ms -= 150;
    dl = &inner;
    kafka_client_clear_error(st);
    if (!st->rk && kafka_client_open(st, e))
        return -1;
    if (kafka_scrape_metadata(st, dl, &sc, e) || kafka_scrape_targets(st, dl, &sc, e) ||
        kafka_scrape_watermarks(st, dl, &sc, e) || kafka_scrape_committed(st, dl, &sc, e))
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
    struct entry_skips skips = {0};
    judge_timestamps(&sc, now_ms, &skips);
    for (size_t i = 0; i < sc.n; i++) {
        emit_target(st, &sc, &sc.t[i], now_ms, out);
        emit_dlq(&sc, i, now_ms, out);
    }
    entry_skips_emit(&skips, out);
    entry_skips_free(&skips);
    if (sc.has_exclude) {
        size_t topics = 0;
        for (size_t i = 0; i < sc.ntopics; i++)
            topics += sc.topics[i].excluded && !sc.topics[i].wanted;
        metric_set_add(out, "qrel_excluded_objects", (double)sc.excluded_groups, "object", "group",
                       NULL);
        metric_set_add(out, "qrel_excluded_objects", (double)topics, "object", "topic", NULL);
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
    kafka_scrape_free(&sc);
    if (rc)
        kafka_client_drop(
            st); /* joins librdkafka's threads: nothing is left running after a failure */
    return rc;
}
