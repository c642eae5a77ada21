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
 * computed against the server's TIME, because entry ids carry the server's clock, not ours. A
 * stream with dead_letter_classify reads its dead-letter entries in that last pipeline and then
 * asks PostgreSQL about their ids (redis_stream/dlq_classify.c), once per dead-letter stream.
 *
 * The files of the kind: parse.c (the pure parsers, redis_stream.h), config.c (the keys),
 * scrape.c (one scrape's tables), pipelines.c (the round trips), output.c (the series); this file
 * runs them in order and is the kind's entry in the registry.
 *
 * Memory does not grow with the replies either: each reply is folded, as it arrives, into a few
 * dozen bytes per stream and per group (names stored once per scrape), and a group's series are
 * emitted as soon as its last reply is in, so no reply outlives the callback that reads it. */
#include "scrape.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "util.h"

/* Step 4, for dead-letter streams with dead_letter_classify only: one PostgreSQL statement each
 * (after the Redis round trip, under the same deadline), then the split for every stream that
 * names one and has a block of its own. */
static int classify_dlqs(struct collector *c, const struct state *st, const struct deadline *dl,
                         struct scrape *sc, struct metric_set *out, struct err *e)
{
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        struct dlq *d = t->dlq_owner ? &sc->dlqs[t->dlq_slot] : NULL;
        if (d && d->classify &&
            dlq_classify_run(d->classify, c->name, t->dlq, &d->tally, d->len, dl, &d->split, e))
            return -1;
    }
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->missing || t->dlq_slot == NONE || !st->specs[t->spec].classify)
            continue;
        redis_stream_emit_classified(out, t, &sc->dlqs[t->dlq_slot].split);
    }
    return 0;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc;
    struct redis_pipe *p = NULL;
    int64_t now_ms = 0;
    int rc = -1;

    memset(&sc, 0, sizeof sc);
    if (!st->conn) {
        st->conn = redis_conn_open(c->name, st->rs.address, st->rs.username, st->rs.password,
                                   st->rs.db, dl, e);
        if (!st->conn)
            return -1;
    }
    struct redis_stats before = *redis_conn_stats(st->conn);
    p = redis_pipe_new();
    if (redis_stream_resolve_targets(c, st, p, dl, &sc, e) ||
        redis_stream_read_groups(st, p, dl, &sc, &now_ms, e) ||
        redis_stream_read_details(st, p, dl, &sc, now_ms, out, e) ||
        classify_dlqs(c, st, dl, &sc, out, e))
        goto out;
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
        /* Whatever went wrong, the socket may hold half a reply: start afresh next time. */
        redis_conn_close(st->conn);
        st->conn = NULL;
    }
    redis_pipe_free(p);
    redis_stream_scrape_free(&sc);
    return rc;
}

/* --config.check: what can be verified without Redis, the tables of dead_letter_classify. */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    for (size_t i = 0; i < st->nspecs; i++) {
        const struct stream_spec *sp = &st->specs[i];
        if (!sp->classify)
            continue;
        char what[300];
        snprintf(what, sizeof what, "%s \"%.200s\"", sp->name ? "stream" : "pattern",
                 sp->name ? sp->name : sp->pattern);
        if (dlq_classify_check(sp->classify, c->name, what, dl, e))
            return -1;
    }
    return 0;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const char *audit_hint(const char *rule)
{
    if (strcmp(rule, "no_dead_letter_queue") == 0)
        return "have the consumers move given-up entries to a stream and name it in "
               "dead_letter_stream";
    return NULL;
}

const struct collector_kind redis_stream_kind = {.name = "redis_stream",
                                                 .configure = redis_stream_configure,
                                                 .collect = collect,
                                                 .destroy = redis_stream_destroy,
                                                 .check = check,
                                                 .audit_hint = audit_hint};
