/* rabbitmq.c: `kind: rabbitmq`, the reliability of RabbitMQ queues through the management API and,
 * where it is enabled, the rabbitmq_prometheus plugin.
 *
 * Cost decides the design. One GET /api/queues costs the broker about 0.25 ms of CPU per queue
 * (2.7 s at 11,000 queues), while the plugin's /metrics/detailed?family=queue_coarse_metrics
 * gives ready / unacknowledged for every queue in under 0.1 s. So a scrape is two parts:
 *   - depth, on every scrape: from the plugin when prometheus_url is set, else from the cheapest
 *     form of GET /api/queues (totals only, no message rates);
 *   - with the plugin, the consumer counts (its dearest family) once per consumers_interval, in
 *     that scrape's depth request or from a refresh of the slow part; kept in between
 *     (consumers.h);
 *   - the slow part, a cache refreshed when older than metadata_interval (by default 200 times
 *     its last refresh's duration, at least 60 s): what only the management API has (arguments
 *     and policies: dead-lettering, delivery-limit, consumer timeout; head_message_timestamp;
 *     message_stats: redeliver, ack, no-ack deliveries) and the bindings of each dead-letter
 *     exchange, which name the dead-letter queues. qrel_sample_age_seconds says how old it is.
 *     When a refresh fails the last good one is served (see collect()).
 * Every request is a GET: a monitoring user can never change anything. */
#include "rabbitmq.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/entries.h"
#include "common/exclude.h"
#include "common/glob.h"
#include "common/http.h"
#include "common/json.h"
#include "common/promtext.h"
#include "common/secret.h"
#include "config.h"
#include "hashtab.h"
#include "log.h"
#include "rabbitmq/cache.h"
#include "rabbitmq/client.h"
#include "rabbitmq/qtab.h"
#include "rabbitmq/dlq.h"
#include "alloc.h"
#include "buf.h"
#include "deadline.h"

/* Without metadata_interval, the slow part is refreshed when older than the larger of 60 s and
 * AUTO_INTERVAL_FACTOR times the last refresh's duration. A refresh's cost to the broker grows
 * with its duration (about 0.5 s of broker CPU per second at 10,000 queues, measured), so the
 * broker spends at most about 1/200 of its time on refreshes, however many queues it has, while
 * small brokers keep a fresh slow part. */
#define AUTO_INTERVAL_MIN 60.0
#define AUTO_INTERVAL_FACTOR 200.0
#define NONE ((size_t)-1)
/* consumers_interval (with the plugin): QrelBacklogWithoutConsumer waits 10 minutes, so counts a
 * minute old delay it by at most that; a day is the most the key takes. */
#define CONSUMERS_INTERVAL_DEFAULT 60.0
#define CONSUMERS_INTERVAL_MAX 86400.0

/* The slow part while a refresh builds it; kept as a struct rabbitmq_cache (cache.h). */
struct meta {
    double wall;     /* when it was fetched (epoch seconds) */
    int64_t mono_ms; /* the same, monotonic, for its age */
    struct qtab q;   /* every queue fetched */
    char **dlqs;     /* dead-letter queue names (same vhost as their queue) */
    size_t ndlqs;
};

static void meta_free(struct meta *m)
{
    if (!m)
        return;
    rabbitmq_qtab_free(&m->q);
    for (size_t i = 0; i < m->ndlqs; i++)
        free(m->dlqs[i]);
    free(m->dlqs);
    free(m);
}

/* ---- configuration ---- */

static void destroy(struct collector *c)
{
    struct rabbitmq_state *st = c->priv;
    http_client_free(st->client);
    http_config_free(&st->http);
    rabbitmq_cache_free(st->meta);
    free(st->meta);
    rabbitmq_consumers_free(&st->consumers);
    free(st->url);
    free(st->prometheus_url);
    free(st->username);
    secret_free(st->password);
    cfg_strv_free(st->vhosts);
    cfg_strv_free(st->queues);
    free(st->pattern);
    exclude_free(&st->exclude);
    exclude_free(&st->exclude_vh);
    free(st->amqp_host);
    free(st->amqp_vhost);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    st->consumer_timeout = -1;
    /* every key read first, so a misspelt one is reported with the known keys */
    struct cfg_node *vhosts = NULL, *queues = NULL, *timeout = NULL;
    char *amqp_url = NULL;
    if (http_base_url(map, "url", NULL, &st->url, e) ||
        http_base_url(map, "prometheus_url", NULL, &st->prometheus_url, e) ||
        cfg_get_str(map, "username", 0, &st->username, e) ||
        secret_get(map, "password", 0, &st->password, e) ||
        cfg_get_node(map, "vhosts", CFG_SEQ, &vhosts, e) ||
        cfg_get_strlist(map, "vhosts", &st->vhosts, &st->nvhosts, e) ||
        cfg_get_node(map, "queues", CFG_SEQ, &queues, e) ||
        cfg_get_strlist(map, "queues", &st->queues, &st->nqueues, e) ||
        cfg_get_nonempty(map, "queue_pattern", &st->pattern, e) ||
        exclude_read(&st->exclude, map, "exclude", NULL, e) ||
        exclude_read(&st->exclude_vh, map, "exclude_vhosts", NULL, e) ||
        cfg_get_node(map, "consumer_timeout", CFG_SCALAR, &timeout, e) ||
        (timeout &&
         cfg_get_positive_duration(map, "consumer_timeout", -1, &st->consumer_timeout, e)) ||
        cfg_get_positive_duration(map, "metadata_interval", -1, &st->metadata_interval, e) ||
        cfg_get_duration_in(map, "consumers_interval", CONSUMERS_INTERVAL_DEFAULT, 0,
                            CONSUMERS_INTERVAL_MAX, &st->consumers_interval, e) ||
        cfg_get_str(map, "amqp_url", 0, &amqp_url, e) ||
        cfg_get_bool(map, "dlq_accept_delivery_limit", 0, &st->dlq_accept_delivery_limit, e) ||
        http_config_parse(map, &st->http, e) || collector_finish(c, map, e)) {
        free(amqp_url);
        return -1;
    }
    char why[300];
    int bad = amqp_url && rabbitmq_amqp_url_parse(amqp_url, &st->amqp_host, &st->amqp_port,
                                                  &st->amqp_vhost, &st->amqp_tls, why, sizeof why);
    free(amqp_url);
    if (bad)
        return cfg_error(e, cfg_at(map, "amqp_url"), "amqp_url: %s", why);

    if (c->min_interval > 0)
        return cfg_error(e, cfg_at(map, "min_interval"),
                         "min_interval: not for kind rabbitmq, which keeps depth fresh on every "
                         "scrape and caches the costly part itself: use metadata_interval");
    if (!st->url)
        return cfg_get_str(map, "url", 1, &st->url, e);
    if (!st->username)
        return cfg_get_str(map, "username", 1, &st->username, e);
    if (!st->password)
        return secret_get(map, "password", 1, &st->password, e);
    if (vhosts && st->nvhosts == 0)
        return cfg_error(e, vhosts,
                         "vhosts: want at least one vhost (leave vhosts out for every vhost)");
    if (exclude_check(&st->exclude, map, e) || exclude_check(&st->exclude_vh, map, e))
        return -1;
    if (queues && st->nqueues == 0)
        return cfg_error(e, queues,
                         "queues: want at least one queue name (leave queues out for every "
                         "queue)");
    st->client = http_client_new(c->name, &st->http);
    return 0;
}

/* ---- collection ---- */

static int selected(const struct rabbitmq_state *st, const char *vhost, const char *name)
{
    if (exclude_match(&st->exclude_vh, vhost) || exclude_match(&st->exclude, name))
        return 0;
    if (!st->queues && !st->pattern)
        return 1;
    for (size_t i = 0; i < st->nqueues; i++)
        if (strcmp(st->queues[i], name) == 0)
            return 1;
    return st->pattern && glob_match(st->pattern, name);
}

#define DEPTH_COLUMNS "name,vhost,messages,messages_ready,messages_unacknowledged,consumers"
#define META_COLUMNS                                                                               \
    DEPTH_COLUMNS ",head_message_timestamp,arguments,effective_policy_definition,"                 \
                  "message_stats.redeliver,message_stats.ack,message_stats.deliver_no_ack,"        \
                  "message_stats.get_no_ack"

/* One /api/queues reply into depth (always) and meta (when not NULL: the reply has the slow
 * columns), read one queue at a time (rabbitmq_each_object). */
struct queues_run {
    const char *what;
    struct qtab *depth;
    struct meta *meta;
};

static int read_queue(const json_t *obj, const char *ctx, void *arg, struct err *e)
{
    struct queues_run *run = arg;
    struct rabbitmq_queue q;
    if (rabbitmq_queue_parse(obj, ctx, run->meta != NULL, &q, e)) {
        err_prefix(e, "%s", run->what);
        return -1;
    }
    struct qrec *d = rabbitmq_qtab_get(run->depth, q.vhost, q.name);
    d->has_stats = q.has_stats;
    d->ready = q.ready;
    d->unacked = q.unacked;
    d->has_consumers = q.has_consumers;
    d->consumers = q.consumers;
    if (!run->meta)
        return 0;
    struct qrec *m = rabbitmq_qtab_get(&run->meta->q, q.vhost, q.name);
    m->has_stats = q.has_stats;
    m->has_consumers = q.has_consumers; /* the refresh's counts, stored by the plugin's source */
    m->consumers = q.consumers;
    m->ready = q.ready;
    m->unacked = q.unacked;
    m->has_head_ts = q.has_head_ts;
    m->head_ts = q.head_ts;
    m->redeliver = q.redeliver;
    m->consumed = q.consumed;
    m->dlx = xstrdup(q.dlx);
    m->dlrk = xstrdup(q.dlrk);
    m->delivery_limit = q.delivery_limit;
    m->consumer_timeout_ms = q.consumer_timeout_ms;
    m->message_ttl_ms = q.message_ttl_ms;
    return 0;
}

static int read_queues(const struct http_response *r, const char *what, struct qtab *depth,
                       struct meta *meta, struct err *e)
{
    struct queues_run run = {what, depth, meta};
    return rabbitmq_each_object(r->body, r->len, what, read_queue, &run, e);
}

/* GET /api/queues (per configured vhost), into depth and, with meta, the slow part too. Depth
 * alone asks for totals only (disable_stats): the cheapest form the API has. */
static int fetch_queues(struct rabbitmq_state *st, const struct deadline *dl, struct qtab *depth,
                        struct meta *meta, struct err *e)
{
    size_t n = st->vhosts ? st->nvhosts : 1;
    for (size_t i = 0; i < n; i++) {
        char *vh = st->vhosts ? http_escape(st->vhosts[i]) : NULL;
        char *url = xasprintf("%s/api/queues%s%s?columns=%s%s", st->url, vh ? "/" : "",
                              vh ? vh : "", meta ? META_COLUMNS : DEPTH_COLUMNS,
                              meta ? "" : "&disable_stats=true&enable_queue_totals=true");
        char what[300];
        snprintf(what, sizeof what, "GET /api/queues%s%s", vh ? "/" : "", vh ? vh : "");
        free(vh);
        struct http_response r;
        memset(&r, 0, sizeof r);
        int rc = rabbitmq_client_get(st, url, 1, dl, &r, NULL, e);
        free(url);
        if (rc)
            return -1;
        rc = read_queues(&r, what, depth, meta, e);
        http_response_free(&r);
        if (rc)
            return -1;
    }
    return 0;
}

/* The plugin lists each family's queues in one order, family after family, so the record a
 * sample names is nearly always the one after the record of the sample before (next): checked
 * first, by name, before the hash lookup. */
struct prom_run {
    struct qtab *depth;
    const struct rabbitmq_state *st;
    size_t next;
};

#define PROM_READY "rabbitmq_detailed_queue_messages_ready"
#define PROM_UNACKED "rabbitmq_detailed_queue_messages_unacked"
#define PROM_CONSUMERS "rabbitmq_detailed_queue_consumers"

static int name_is(const char *name, size_t len, const char *want, size_t want_len)
{
    return len == want_len && memcmp(name, want, len) == 0;
}

/* The families read; the others of the request (the total and the reductions of
 * queue_coarse_metrics, the build and identity infos) are passed over unparsed. */
static int prom_want(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    return name_is(name, len, PROM_READY, sizeof PROM_READY - 1) ||
           name_is(name, len, PROM_UNACKED, sizeof PROM_UNACKED - 1) ||
           name_is(name, len, PROM_CONSUMERS, sizeof PROM_CONSUMERS - 1);
}

static int prom_sample(void *ctx, const struct promtext_sample *s, struct err *e)
{
    struct prom_run *run = ctx;
    int ready = name_is(s->name, s->name_len, PROM_READY, sizeof PROM_READY - 1);
    int consumers = name_is(s->name, s->name_len, PROM_CONSUMERS, sizeof PROM_CONSUMERS - 1);
    if (!ready && !consumers &&
        !name_is(s->name, s->name_len, PROM_UNACKED, sizeof PROM_UNACKED - 1))
        return 0;
    const struct promtext_label *vh = promtext_label(s, "vhost"), *q = promtext_label(s, "queue");
    if (!vh || !q)
        return err_set(e, ERR_PROTOCOL, "%.*s: want labels vhost and queue", (int)s->name_len,
                       s->name);
    if (!isfinite(s->value) || s->value < 0)
        return err_set(e, ERR_PROTOCOL, "%.*s{queue=\"%s\"}: want a count, got %g",
                       (int)s->name_len, s->name, q->value, s->value);
    struct qtab *t = run->depth;
    struct qrec *d;
    if (run->next < t->n && strcmp(t->v[run->next].name, q->value) == 0 &&
        strcmp(t->v[run->next].vhost, vh->value) == 0)
        d = &t->v[run->next];
    else
        d = rabbitmq_qtab_get(t, vh->value, q->value);
    run->next = (size_t)(d - t->v) + 1;
    if (consumers) { /* its own family: no stats of the queue by itself */
        d->has_consumers = 1;
        d->consumers = s->value;
        return 0;
    }
    d->has_stats = 1;
    if (ready)
        d->ready = s->value;
    else
        d->unacked = s->value;
    return 0;
}

/* Depth from the plugin: GET /metrics/detailed?family=queue_coarse_metrics, and with consumers
 * the counts from family queue_consumer_count in the same request (per vhost when vhosts are
 * configured): the dearer family of the two, asked for once per consumers_interval.
 * Asked for uncompressed: the page is 360 bytes a queue of repeated names that gzip shrinks 20
 * times, but the broker deflates it on every scrape (an estimated 20 ms of CPU for the 3.9 MB of
 * 11,000 queues) and qrel inflates it (a tenth of a cached scrape's instructions), where the
 * exporter is near the broker (the 3.9 MB is 3 ms of a 10 Gbit/s link). */
static int fetch_prom_depth(struct rabbitmq_state *st, const struct deadline *dl,
                            struct qtab *depth, int consumers, struct err *e)
{
    struct buf url;
    buf_init(&url);
    buf_printf(&url, "%s/metrics/detailed?family=queue_coarse_metrics%s", st->prometheus_url,
               consumers ? "&family=queue_consumer_count" : "");
    for (size_t i = 0; i < st->nvhosts; i++) {
        char *vh = http_escape(st->vhosts[i]);
        buf_printf(&url, "&vhost=%s", vh);
        free(vh);
    }
    struct http_response r;
    memset(&r, 0, sizeof r);
    static const char *const identity[] = {"Accept-Encoding: identity", NULL};
    int rc = rabbitmq_client_get_with(st, url.data, 0, identity, dl, &r, NULL, e);
    buf_free(&url);
    if (rc)
        return -1;
    struct prom_run run = {depth, st, 0};
    rc = promtext_parse_some(r.body, r.len, "GET /metrics/detailed", prom_want, prom_sample, &run,
                             e);
    http_response_free(&r);
    return rc;
}

static void add_dlq(struct meta *m, size_t *cap, struct qrec *q, const char *name)
{
    for (size_t i = q->dlq0; i < q->dlq0 + q->ndlq; i++)
        if (strcmp(m->dlqs[i], name) == 0)
            return;
    if (m->ndlqs == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        m->dlqs = xrealloc(m->dlqs, *cap * sizeof *m->dlqs);
    }
    m->dlqs[m->ndlqs++] = xstrdup(name);
    q->ndlq++;
}

/* The dead-letter queues of queue q through exchange x: the queues bound to x whose binding
 * routes q's dead-letter routing key (its x-dead-letter-routing-key, else the message's own
 * routing key, which qrel takes to be the queue's name, as when publishing through the default
 * exchange). Bindings to other exchanges are not followed. */
static int resolve_dlqs(struct meta *m, size_t *cap, struct qrec *q, const struct dlx *x,
                        struct err *e)
{
    q->dlq0 = m->ndlqs;
    q->ndlq = 0;
    const char *key = q->dlrk ? q->dlrk : q->name;
    if (x->missing)
        return 0;
    if (!x->bindings) { /* the default exchange */
        if (rabbitmq_qtab_find(&m->q, q->vhost, key) != NONE)
            add_dlq(m, cap, q, key);
        return 0;
    }
    for (size_t i = 0; i < json_array_size(x->bindings); i++) {
        const json_t *b = json_array_get(x->bindings, i);
        char ctx[32];
        const char *dtype = NULL, *dest = NULL, *rk = NULL;
        json_path_index(ctx, sizeof ctx, "$", i);
        if (json_expect_object(b, ctx, e) ||
            json_need_string(b, ctx, "destination_type", &dtype, e) ||
            json_need_string(b, ctx, "destination", &dest, e) ||
            json_need_string(b, ctx, "routing_key", &rk, e))
            return err_prefix(e, "GET /api/exchanges/%s/%s/bindings/source", x->vhost, x->name);
        if (strcmp(dtype, "queue") == 0 && rabbitmq_binding_routes(x->type, rk, key))
            add_dlq(m, cap, q, dest);
    }
    return 0;
}

/* Refreshes the slow part into a new meta: the queues (unless the caller already fetched them
 * into m with the slow columns), then each distinct dead-letter exchange of a selected queue. */
static int refresh_dlqs(struct collector *c, struct rabbitmq_state *st, const struct deadline *dl,
                        struct meta *m, struct err *e)
{
    struct dlx *xs = NULL;
    size_t nx = 0, cap = 0, dcap = 0;
    int rc = -1;
    size_t *which = xcalloc(m->q.n ? m->q.n : 1, sizeof *which);
    for (size_t i = 0; i < m->q.n; i++) {
        struct qrec *q = &m->q.v[i];
        which[i] = NONE;
        if (!q->dlx || !selected(st, q->vhost, q->name))
            continue;
        size_t j = 0;
        while (j < nx && !(strcmp(xs[j].vhost, q->vhost) == 0 && strcmp(xs[j].name, q->dlx) == 0))
            j++;
        if (j == nx) {
            if (nx == cap) {
                cap = cap ? cap * 2 : 8;
                xs = xrealloc(xs, cap * sizeof *xs);
            }
            memset(&xs[nx], 0, sizeof xs[nx]);
            xs[nx].vhost = q->vhost;
            xs[nx].name = q->dlx;
            if (rabbitmq_client_dlx(st, dl, &xs[nx++], e))
                goto out;
            if (xs[j].missing)
                log_kv(LOG_WARN, "dead-letter exchange does not exist: dead letters are dropped",
                       "source", c->name, "vhost", q->vhost, "exchange", q->dlx, "queue", q->name,
                       NULL);
        }
        which[i] = j;
    }
    for (size_t i = 0; i < m->q.n; i++)
        if (which[i] != NONE && resolve_dlqs(m, &dcap, &m->q.v[i], &xs[which[i]], e))
            goto out;
    rc = 0;
out:
    for (size_t j = 0; j < nx; j++) {
        free(xs[j].type);
        json_decref(xs[j].bindings);
    }
    free(xs);
    free(which);
    return rc;
}

/* Seconds a queue keeps a message: its message TTL, +Inf without one (RabbitMQ keeps it). */
static double retention_of(const struct rabbitmq_cached *v)
{
    return v->message_ttl_ms >= 0 ? v->message_ttl_ms / 1000.0 : INFINITY;
}

/* What a scrape looks up about a dead-letter queue: its depth record and its cached figures.
 * Often every queue of a broker dead-letters into the same one, so the last one looked up is
 * kept (dlq is the cache's string, the same pointer for the same queue) instead of two hash
 * lookups per queue. */
struct dlq_memo {
    const char *dlq, *vhost;
    size_t depth; /* its record in the depth table, or NONE */
    int cached;   /* dm holds its cached figures */
    struct rabbitmq_cached dm;
};

static const struct dlq_memo *dlq_lookup(struct dlq_memo *memo, const struct qtab *depth,
                                         const struct rabbitmq_cache *m, const char *vhost,
                                         const char *dlq)
{
    if (memo->dlq == dlq && strcmp(memo->vhost, vhost) == 0)
        return memo;
    memo->dlq = dlq;
    memo->vhost = vhost;
    memo->depth = rabbitmq_qtab_find(depth, vhost, dlq);
    memo->cached = rabbitmq_cache_find(m, vhost, dlq, &memo->dm);
    return memo;
}

/* The retentions the dead_letters_expire_unread rule compares: a queue's where it has a TTL or
 * dead-letter queues (not one +Inf per queue of a large broker), and each dead-letter queue's,
 * unless that queue dead-letters itself: what expires there goes on (the delayed-retry pattern of
 * a TTL queue routing back to its source), it is not lost. */
static void emit_retention(const struct qtab *depth, const struct rabbitmq_cache *m,
                           const struct rabbitmq_cached *mq, const char *v, const char *q,
                           struct dlq_memo *memo, struct metric_set *out)
{
    if (mq->message_ttl_ms >= 0 || mq->ndlqs > 0)
        metric_set_add(out, "qrel_queue_retention_seconds", retention_of(mq), "queue", q, "vhost",
                       v, NULL);
    for (size_t i = 0; i < mq->ndlqs; i++) {
        const char *dlq = rabbitmq_cache_dlq(m, mq, i);
        const struct dlq_memo *dm = dlq_lookup(memo, depth, m, v, dlq);
        if (dm->cached && !dm->dm.has_dlx)
            metric_set_add(out, "qrel_dead_letter_retention_seconds", retention_of(&dm->dm),
                           "queue", q, "vhost", v, "dead_letter_queue", dlq, NULL);
    }
}

/* The series of one queue. A failed add is remembered by the set, which the core checks after
 * collect(), so nothing here checks it. */
static void emit_queue(const struct rabbitmq_state *st, const struct qrec *d,
                       const struct qtab *depth, const struct rabbitmq_cache *m,
                       struct dlq_memo *memo, struct metric_set *out)
{
    const char *q = d->name, *v = d->vhost;
    metric_set_add(out, "qrel_queue_messages", d->ready, "queue", q, "vhost", v, "state", "ready",
                   NULL);
    metric_set_add(out, "qrel_queue_messages", d->unacked, "queue", q, "vhost", v, "state",
                   "in_flight", NULL);
    struct rabbitmq_cached mq;
    int cached = m && rabbitmq_cache_find(m, v, q, &mq);
    /* read with the depth, else the counts of the last read (consumers_interval) */
    double consumers = d->consumers;
    if (d->has_consumers ||
        (st->consumers.counts &&
         rabbitmq_consumers_get(&st->consumers, cached ? mq.id : SIZE_MAX, v, q, &consumers)))
        metric_set_add(out, "qrel_queue_consumers", consumers, "queue", q, "vhost", v, NULL);

    double lease = cached && mq.consumer_timeout_ms > 0 ? mq.consumer_timeout_ms / 1000.0
                                                        : st->consumer_timeout;
    if (lease > 0)
        metric_set_add(out, "qrel_lease_timeout_seconds", lease, "queue", q, "vhost", v, NULL);
    if (!cached)
        return; /* declared since the last refresh: depth only until the next one */

    /* Oldest message: empty now means 0 now; else the head's timestamp as of the sample. The
     * producer sets that timestamp: one outside the sane range (0, milliseconds, far ahead) gives
     * no age but a skipped entry (common/entries.h), as the job kinds count theirs. */
    double age;
    if (d->ready + d->unacked == 0)
        metric_set_add(out, "qrel_queue_oldest_message_age_seconds", 0.0, "queue", q, "vhost", v,
                       NULL);
    else if (mq.has_head_ts && entry_age(m->wall, mq.head_ts, &age) == 0)
        metric_set_add(out, "qrel_queue_oldest_message_age_seconds", age, "queue", q, "vhost", v,
                       NULL);
    else if (mq.has_head_ts)
        metric_set_add(out, "qrel_skipped_entries", 1, "queue", q, "vhost", v, "reason",
                       entry_skip_name(ENTRY_BAD_TIMESTAMP), NULL);
    double maxd = rabbitmq_max_deliveries(mq.delivery_limit);
    if (maxd > 0) {
        metric_set_add(out, "qrel_max_deliveries", maxd, "queue", q, "vhost", v, NULL);
        if (lease > 0)
            metric_set_add(out, "qrel_retry_horizon_seconds", maxd * lease, "queue", q, "vhost", v,
                           NULL);
    }
    if (mq.has_stats) {
        metric_set_add(out, "qrel_redeliveries_total", mq.redeliver, "queue", q, "vhost", v, NULL);
        metric_set_add(out, "qrel_messages_consumed_total", mq.consumed, "queue", q, "vhost", v,
                       NULL);
    }
    emit_retention(depth, m, &mq, v, q, memo, out);
    for (size_t i = 0; i < mq.ndlqs; i++) {
        const char *dlq = rabbitmq_cache_dlq(m, &mq, i);
        const struct dlq_memo *dm = dlq_lookup(memo, depth, m, v, dlq);
        if (dm->depth == NONE || !depth->v[dm->depth].has_stats)
            continue; /* deleted since the refresh, or no stats yet */
        const struct qrec *dd = &depth->v[dm->depth];
        metric_set_add(out, "qrel_dead_letter_messages", dd->ready + dd->unacked, "queue", q,
                       "vhost", v, "dead_letter_queue", dlq, NULL);
        if (dd->ready + dd->unacked == 0)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", 0.0, "queue", q, "vhost", v,
                           "dead_letter_queue", dlq, NULL);
        else if (dm->cached && dm->dm.has_head_ts &&
                 entry_age(m->wall, dm->dm.head_ts, &age) ==
                     0) /* a bad one: counted on dlq's own */
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", age, "queue", q, "vhost", v,
                           "dead_letter_queue", dlq, NULL);
    }
}

/* The refreshed slow part, compacted to be kept (cache.h): the figures a scrape serves, and
 * each queue's dead-letter queues. */
static struct rabbitmq_cache *meta_keep(const struct meta *m)
{
    struct rabbitmq_cache *c = xcalloc(1, sizeof *c);
    c->wall = m->wall;
    c->mono_ms = m->mono_ms;
    for (size_t i = 0; i < m->q.n; i++) {
        const struct qrec *r = &m->q.v[i];
        struct rabbitmq_cached v = {.has_stats = r->has_stats,
                                    .has_head_ts = r->has_head_ts,
                                    .head_ts = r->head_ts,
                                    .redeliver = r->redeliver,
                                    .consumed = r->consumed,
                                    .delivery_limit = r->delivery_limit,
                                    .consumer_timeout_ms = r->consumer_timeout_ms,
                                    .message_ttl_ms = r->message_ttl_ms,
                                    .has_dlx = r->dlx != NULL,
                                    .ndlqs = r->ndlq};
        rabbitmq_cache_add(c, r->vhost, r->name, &v,
                           r->ndlq ? (const char *const *)m->dlqs + r->dlq0 : NULL);
    }
    rabbitmq_cache_fit(c);
    return c;
}

/* The counts the refresh's /api/queues gave (its consumers column), against the new slow part,
 * whose records are fresh's queues in their order. */
static void consumers_from_refresh(struct rabbitmq_state *st, const struct meta *fresh)
{
    rabbitmq_consumers_init(&st->consumers, fresh->q.n, fresh->mono_ms);
    for (size_t i = 0; i < fresh->q.n; i++)
        if (fresh->q.v[i].has_consumers)
            rabbitmq_consumers_set(&st->consumers, i, fresh->q.v[i].consumers);
}

/* The counts the plugin gave in this scrape's depth request, against the slow part held (by
 * name for the selected queues it does not have). A read that gave no count while queues have
 * figures is logged: the family is missing, and so is every qrel_queue_consumers. */
static void consumers_from_depth(const struct collector *c, struct rabbitmq_state *st,
                                 const struct qtab *depth, int64_t at_ms)
{
    rabbitmq_consumers_init(&st->consumers, st->meta->n, at_ms);
    size_t got = 0, with_stats = 0;
    for (size_t i = 0; i < depth->n; i++) {
        const struct qrec *d = &depth->v[i];
        with_stats += d->has_stats != 0;
        if (!d->has_consumers)
            continue;
        got++;
        struct rabbitmq_cached v;
        if (rabbitmq_cache_find(st->meta, d->vhost, d->name, &v))
            rabbitmq_consumers_set(&st->consumers, v.id, d->consumers);
        else if (selected(st, d->vhost, d->name))
            rabbitmq_consumers_add(&st->consumers, d->vhost, d->name, d->consumers);
    }
    if (got == 0 && with_stats > 0)
        log_kv(LOG_WARN, "the plugin gave no consumer counts: qrel_queue_consumers left out",
               "source", c->name, "family", "queue_consumer_count", NULL);
}

/* One scrape:
 *   1. depth: the plugin (prometheus_url) or GET /api/queues; its failure fails the scrape. With
 *      the plugin the depth request asks for the consumer counts too when they are older than
 *      consumers_interval, unless the refresh due now brings them (its /api/queues has the
 *      column); the others serve the last counts read;
 *   2. the slow part when older than metadata_interval (in the same /api/queues request when
 *      there is no plugin), then the dead-letter exchanges. A failed refresh keeps the last good
 *      one, logs a warning and leaves the source up: depth is current, and
 *      qrel_sample_age_seconds shows the cache growing old. Without any good refresh yet the
 *      failure fails the scrape, so it is counted and visible. */
static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    struct qtab depth;
    memset(&depth, 0, sizeof depth);
    struct meta *fresh = NULL;
    int rc = -1;
    st->requests = 0;
    int64_t t0 = deadline_now_ms();
    double interval =
        st->metadata_interval > 0
            ? st->metadata_interval
            : fmax(AUTO_INTERVAL_MIN, AUTO_INTERVAL_FACTOR * st->last_refresh_seconds);
    int due = !st->meta || t0 - st->meta->mono_ms >= (int64_t)(interval * 1000.0);
    /* a refresh that failed last time may fail again: the depth request then reads the counts */
    int ask_consumers = st->prometheus_url &&
                        rabbitmq_consumers_due(&st->consumers, st->consumers_interval, t0) &&
                        (!due || st->refresh_failed);
    const char *consumers_read = st->prometheus_url ? "no" : "management";

    if (due) {
        fresh = xcalloc(1, sizeof *fresh);
        fresh->wall = deadline_wall_now();
        fresh->mono_ms = deadline_now_ms();
    }
    /* Sized for the last scrape's queues: grown by doubling, the 11,000 records' table was
     * copied by realloc again and again (5% of qrel's CPU in a cached scrape, perf). */
    if (st->last_queues) {
        depth.cap = st->last_queues + st->last_queues / 8;
        depth.v = xmalloc(depth.cap * sizeof *depth.v);
    }
    if (st->prometheus_url) {
        int rc1 = fetch_prom_depth(st, dl, &depth, ask_consumers, e);
        /* A reply that only the consumer family can have spoilt (a protocol error, an HTTP error
         * status, a body over max_response_bytes) is read again without it: depth is served with
         * the last good counts, as a failed refresh serves the last slow part, with a warning
         * each time; the next scrape asks again. Anything else fails the scrape. */
        if (rc1 && ask_consumers &&
            (e->code == ERR_PROTOCOL || e->code == ERR_QUERY || e->code == ERR_LIMIT)) {
            log_kv(LOG_WARN, "consumer count read failed: serving the last good ones", "source",
                   c->name, "reason", err_reason(e->code), "err", e->msg, NULL);
            rabbitmq_qtab_free(&depth);
            err_clear(e);
            ask_consumers = 0;
            consumers_read = "failed";
            rc1 = fetch_prom_depth(st, dl, &depth, 0, e);
        }
        if (rc1)
            goto out;
    } else if (fetch_queues(st, dl, &depth, fresh, e)) {
        goto out;
    }
    if (fresh) {
        /* The refresh may not take the time depth needs to be served: it gets what is left less
         * a tenth (at least 100 ms) for building the series. */
        int64_t left = deadline_remaining_ms(dl), reserve = left / 10 > 100 ? left / 10 : 100;
        struct deadline mdl = deadline_in((double)(left > reserve ? left - reserve : 0) / 1000.0);
        struct err me;
        err_clear(&me);
        struct qtab scratch;
        memset(&scratch, 0, sizeof scratch);
        int mrc = 0;
        if (st->prometheus_url)
            mrc = fetch_queues(st, &mdl, &scratch, fresh, &me);
        rabbitmq_qtab_free(&scratch);
        if (!mrc)
            mrc = refresh_dlqs(c, st, &mdl, fresh, &me);
        st->refresh_failed = mrc != 0;
        if (mrc && !st->meta) {
            *e = me;
            goto out;
        }
        if (mrc) {
            log_kv(LOG_WARN, "metadata refresh failed: serving the last good one", "source",
                   c->name, "reason", err_reason(me.code), "err", me.msg, NULL);
            meta_free(fresh);
        } else {
            rabbitmq_cache_free(st->meta);
            free(st->meta);
            st->meta = meta_keep(fresh);
            /* the counts are kept against the slow part's records: stored anew with it */
            if (st->prometheus_url) {
                consumers_from_refresh(st, fresh);
                consumers_read = "refresh";
            }
            meta_free(fresh);
            st->last_refresh_seconds = (double)(deadline_now_ms() - t0) / 1000.0;
        }
        fresh = NULL;
    }
    if (ask_consumers && strcmp(consumers_read, "refresh") != 0) {
        consumers_from_depth(c, st, &depth, t0);
        consumers_read = "plugin";
    }

    size_t nostats = 0, nexcluded = 0;
    struct dlq_memo memo = {.dlq = NULL};
    for (size_t i = 0; i < depth.n; i++) {
        const struct qrec *d = &depth.v[i];
        if (!selected(st, d->vhost, d->name)) {
            /* counted once per scrape here, the one pass over every queue found */
            if (exclude_match(&st->exclude_vh, d->vhost) || exclude_match(&st->exclude, d->name))
                nexcluded++;
            continue;
        }
        if (!d->has_stats) {
            nostats++;
            continue;
        }
        emit_queue(st, d, &depth, st->meta, &memo, out);
    }
    /* queues left out by either key, so an exclude that hides every queue is seen */
    if (exclude_any(&st->exclude) || exclude_any(&st->exclude_vh))
        metric_set_add(out, "qrel_excluded_objects", (double)nexcluded, "object", "queue", NULL);
    if (st->meta)
        metric_set_add(out, "qrel_sample_age_seconds",
                       (double)(deadline_now_ms() - st->meta->mono_ms) / 1000.0, NULL);
    if (log_enabled(LOG_DEBUG)) {
        char nq[32], ns[32], age[32], nr[32], cage[32];
        snprintf(nr, sizeof nr, "%u", st->requests);
        snprintf(nq, sizeof nq, "%zu", depth.n);
        snprintf(ns, sizeof ns, "%zu", nostats);
        snprintf(age, sizeof age, "%.3f",
                 st->meta ? (double)(deadline_now_ms() - st->meta->mono_ms) / 1000.0 : -1.0);
        /* the kept consumer counts' age (-1: none kept), and what read them in this scrape */
        snprintf(cage, sizeof cage, "%.3f",
                 st->consumers.counts ? (deadline_now_ms() - st->consumers.mono_ms) / 1000.0
                                      : -1.0);
        log_kv(LOG_DEBUG, "rabbitmq collection done", "source", c->name, "queues", nq,
               "queues_without_stats", ns, "metadata_age", age, "requests", nr, "depth_from",
               st->prometheus_url ? "prometheus" : "management", "consumers_read", consumers_read,
               "consumers_age", cage, NULL);
    }
    st->last_queues = depth.n;
    rc = 0;
out:
    meta_free(fresh);
    rabbitmq_qtab_free(&depth);
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "set a dead-letter exchange (x-dead-letter-exchange, by policy) and a "
                             "delivery limit"},
    {"dead_letters_expire_unread",
     "RabbitMQ restarts a message's TTL in the dead-letter queue, so give the dead-letter queue no "
     "message-ttl, or one longer than the queue's by the time you need to read them"},
    /* A quorum queue drops a message at its x-delivery-limit when no dead-letter exchange is
     * set (RabbitMQ 4 gives every quorum queue a limit of 20 by default). */
    {"delivery_limit_drops", "set a dead-letter exchange (x-dead-letter-exchange, by policy) so "
                             "that RabbitMQ dead-letters the message instead"},
    /* RabbitMQ counts a consumer per basic.consume subscription on the queue. */
    {"backlog_without_consumer", "start the workers that consume this queue (a basic.consume on "
                                 "it, in its vhost), or delete the queue if nothing should read "
                                 "it"},
    {NULL, NULL}};

/* A dead_letters entry for `qrel dlq` (at load, no I/O): the AMQP endpoint is needed, and the
 * queue must be one the source watches in the amqp_url's vhost. */
static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    struct rabbitmq_state *st = c->priv;
    char why[300];
    if (rabbitmq_dlq_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!st->amqp_host)
        return cfg_error(e, cfg_at(entry, "source"),
                         "source: \"%s\" has no amqp_url, which qrel dlq reads RabbitMQ's dead "
                         "letters through",
                         c->name);
    if (!selected(st, st->amqp_vhost, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: source \"%s\" does not watch a queue named \"%s\"", c->name,
                         queue);
    return 0;
}

const struct collector_kind rabbitmq_kind = {.name = "rabbitmq",
                                             .state_size = sizeof(struct rabbitmq_state),
                                             .configure = configure,
                                             .collect = collect,
                                             .destroy = destroy,
                                             .audit_hints = hints,
                                             .dead_letter_validate = dead_letter_validate,
                                             .dlq = &rabbitmq_dlq_kind};
