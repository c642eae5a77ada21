/* redis_stream.c: `kind: redis_stream`, the reliability of Redis streams read by consumer groups.
 *
 * A consumer group is a log reader with a lease: entries after its last-delivered-id are waiting
 * (lag), delivered but unacknowledged entries sit in its pending entries list (PEL) with an idle
 * time and a delivery count, and consumers reclaim entries idle longer than their XAUTOCLAIM
 * min-idle, which is therefore the lease. This collector turns that into the qrel_ series using
 * read-only commands only (TIME, SCAN, XINFO GROUPS, XPENDING, XRANGE, XREVRANGE, XLEN;
 * AUTH/SELECT on connect), so a monitoring user can never move, claim or acknowledge anything.
 *
 * The number of round trips per scrape does not grow with the number of streams: SCAN rounds
 * (one per 1000 keys of the keyspace, all patterns in one pipeline), then one pipeline for TIME
 * and every XINFO GROUPS, then one for every XPENDING / XRANGE / XREVRANGE / XLEN. Ages are
 * computed against the server's TIME, because entry ids carry the server's clock, not ours. For
 * the core's dead-letter join a dead-letter stream's entries are read, up to a cap, with XLEN
 * and XRANGE in a pipeline of their own (dead_letter_ids below, client.c).
 *
 * The files of the kind: parse.c (the pure parsers, redis_stream.h), config.c (the keys),
 * client.c (the connection and the dead-letter read), scrape.c (one scrape's tables),
 * pipelines.c (the round trips), output.c (the series), dlq.c (`qrel dlq`'s hooks); this file,
 * the top, runs them in order and is the kind's entry in the registry.
 *
 * Memory does not grow with the replies either: each reply is folded, as it arrives, into a few
 * dozen bytes per stream and per group (names stored once per scrape), and a group's series are
 * emitted as soon as its last reply is in, so no reply outlives the callback that reads it. */
#include "client.h"
#include "dlq.h"

#include <stdio.h>
#include <string.h>

#include "common/redis_sentinel.h"
#include "log.h"

/* One scrape on the single server's connection (the address, or the master the sentinels name).
 * *retry is 1 when it failed because the master it was connected to is gone (a failover), so
 * that asking the sentinels again may still read this scrape. */
static int collect_single(struct collector *c, const struct deadline *dl, struct metric_set *out,
                          int *retry, struct err *e)
{
    struct state *st = c->priv;
    size_t truncated = 0;
    struct scrape sc;
    struct redis_pipe *p = NULL;
    int64_t now_ms = 0;
    int rc = -1;

    memset(&sc, 0, sizeof sc);
    *retry = 0;
    int reused = st->conn != NULL;
    if (!redis_stream_client_conn(c, dl, e))
        return -1;
    struct redis_stats before = *redis_conn_stats(st->conn);
    p = redis_pipe_new();
    if (redis_stream_resolve_targets(c, st, p, dl, &sc, e) ||
        redis_stream_read_groups(st, p, dl, &sc, &now_ms, e) ||
        redis_stream_read_details(st, p, dl, &sc, now_ms, out, &truncated, e))
        goto out;
    redis_stream_emit_truncated(out, truncated);
    redis_stream_emit_excluded(out, st, &sc);
    entry_skips_emit(&sc.skips, out);
    rc = 0;
    if (log_enabled(LOG_DEBUG)) {
        const struct redis_stats *after = redis_conn_stats(st->conn);
        char streams[32], missing[32], cmds[32], rts[32];
        snprintf(streams, sizeof streams, "%zu", sc.n - sc.missing);
        snprintf(missing, sizeof missing, "%zu", sc.missing);
        snprintf(cmds, sizeof cmds, "%llu", after->commands - before.commands);
        snprintf(rts, sizeof rts, "%llu", after->round_trips - before.round_trips);
        log_kv(LOG_DEBUG, "redis collection done", "source", c->name, "streams", streams,
               "missing_streams", missing, "commands", cmds, "round_trips", rts, NULL);
    }
out:
    if (rc) {
        *retry = reused && redis_sentinel_master_gone(&st->rs, &before, st->conn, dl, e);
        /* Whatever went wrong, the socket may hold half a reply: start afresh next time. */
        redis_conn_close(st->conn);
        st->conn = NULL;
    }
    redis_pipe_free(p);
    redis_stream_scrape_free(&sc);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    size_t truncated = 0;
    if (st->rs.cluster) {
        if (redis_stream_cluster_scrape(c, dl, out, &truncated, e))
            return -1;
        redis_stream_emit_truncated(out, truncated);
        struct scrape all = {.excluded = st->cl_excluded};
        redis_stream_emit_excluded(out, st, &all);
        return 0;
    }
    int retry = 0;
    if (collect_single(c, dl, out, &retry, e) == 0)
        return 0;
    if (!retry)
        return -1;
    /* The sentinels have had their say since the master went: ask them again, once. */
    log_kv(LOG_DEBUG, "redis master gone, asking the sentinels again", "source", c->name, "err",
           e->msg, NULL);
    err_clear(e);
    return collect_single(c, dl, out, &retry, e);
}

/* ---- the dead-letter join's broker side (collector.h) ---- */

static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    (void)id_field; /* any field name of an entry */
    const struct stream_spec *sp = redis_stream_spec_of(c->priv, queue);
    if (!sp)
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: source \"%s\" watches no stream \"%s\" (by name or pattern)",
                         c->name, queue);
    if (!sp->dlq_tmpl)
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: stream \"%s\" of source \"%s\" has no dead_letter_stream", queue,
                         c->name);
    return 0;
}

static int add_ids(const redisReply *r, const char *id_field, void *out, struct err *e)
{
    return redis_stream_dead_letter_ids(r, id_field, out, e);
}

static int dead_letter_ids(struct collector *c, const char *queue, const char *id_field, size_t max,
                           const struct deadline *dl, struct dead_letter_read *out, struct err *e)
{
    out->dead_letter_queue =
        redis_stream_client_read_dead(c, queue, id_field, max, dl, add_ids, out, &out->total, e);
    if (!out->dead_letter_queue)
        return -1;
    if (out->total < out->read)
        out->total = out->read; /* added between XLEN and XRANGE */
    return 0;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "have the consumers move given-up entries to a stream and name it in "
                             "dead_letter_stream"},
    /* A consumer stays in XINFO CONSUMERS after its process died: only its idle says it left. */
    {"backlog_without_consumer", "start the group's consumers (XREADGROUP in this group), and "
                                 "remove dead ones with XGROUP DELCONSUMER after claiming their "
                                 "pending entries, or destroy the group if nothing should read "
                                 "it"},
    {NULL, NULL}};

const struct collector_kind redis_stream_kind = {.name = "redis_stream",
                                                 .state_size = sizeof(struct state),
                                                 .configure = redis_stream_configure,
                                                 .collect = collect,
                                                 .destroy = redis_stream_destroy,
                                                 .audit_hints = hints,
                                                 .dead_letter_validate = dead_letter_validate,
                                                 .dead_letter_ids = dead_letter_ids,
                                                 .dlq = &redis_stream_dlq};
