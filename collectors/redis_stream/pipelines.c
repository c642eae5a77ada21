/* redis_stream/pipelines.c: the round trips of one scrape (scrape.h). Step 1 resolves the
 * streams (SCAN rounds for the patterns, all patterns in one pipeline per round), step 2 asks
 * TIME and every XINFO GROUPS in one pipeline, step 3 every XPENDING / XRANGE / XREVRANGE / XLEN
 * in one more, read as the replies arrive and emitted group by group (output.c), so that no
 * reply outlives the callback that reads it. Replies are parsed by the pure functions of
 * parse.c; here are only the commands, their order and the errors that name them. */
#include "scrape.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "alloc.h"

#define SCAN_COUNT "1000"

/* An error reply to a command, as ERR_QUERY; what names the command, formatted only here into
 * at most whatsz bytes (cut short like every quoted name). */
static int query_error(struct redis_conn *conn, const redisReply *r, struct err *e, size_t whatsz,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int query_error(struct redis_conn *conn, const redisReply *r, struct err *e, size_t whatsz,
                       const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, whatsz < sizeof what ? whatsz : sizeof what, fmt, ap);
    va_end(ap);
    int n = (int)(r->len > 300 ? 300 : r->len);
    return err_set(e, ERR_QUERY, "%s: %s: %.*s", redis_conn_label(conn), what, n, r->str);
}

/* Prefixes a parser's message with the connection and the command, formatted as query_error. */
static int parse_error(struct redis_conn *conn, struct err *e, size_t whatsz, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int parse_error(struct redis_conn *conn, struct err *e, size_t whatsz, const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, whatsz < sizeof what ? whatsz : sizeof what, fmt, ap);
    va_end(ap);
    return err_prefix(e, "%s: %s", redis_conn_label(conn), what);
}

/* What one pattern found, in SCAN order, as ids of the scrape's names. */
struct pattern_scan {
    size_t spec;
    char cursor[24];
    int done;
    size_t *found;
    size_t nfound, cap;
};

struct scan_run {
    struct state *st;
    struct scrape *sc;
    struct pattern_scan *ps;
    size_t *active; /* reply k of a round is the SCAN of ps[active[k]] */
    size_t distinct;
    int capped;
};

/* One SCAN reply. A stream matched by two patterns goes to the one listed first, whichever SCAN
 * happened to report it for first: a name remembers the first pattern that found it, and is on
 * the list of a pattern only when no earlier pattern had it. */
static int scan_reply(void *ctx, size_t k, const redisReply *r, struct err *e)
{
    struct scan_run *run = ctx;
    size_t pi = run->active[k];
    struct pattern_scan *s = &run->ps[pi];
    struct names *names = &run->sc->names;
    const char *pattern = run->st->specs[s->spec].pattern;
    if (redis_reply_is_error(r, NULL))
        return query_error(run->st->conn, r, e, 300, "SCAN MATCH \"%s\"", pattern);
    const redisReply *keys;
    if (redis_stream_parse_scan(r, s->cursor, sizeof s->cursor, &keys, e))
        return parse_error(run->st->conn, e, 300, "SCAN MATCH \"%s\"", pattern);
    for (size_t j = 0; j < keys->elements && !run->capped; j++) {
        size_t len;
        const char *key = redis_stream_scan_key(keys, j, &len);
        if (!key)
            continue;
        int added;
        size_t id = redis_stream_names_intern(names, key, len, &added);
        if (!added && names->v[id].pat <= pi)
            continue; /* this pattern or an earlier one has it */
        if (exclude_match(&run->st->specs[s->spec].exclude, names->v[id].s)) {
            names->v[id].excluded = 1; /* a later pattern may still take it */
            continue;
        }
        names->v[id].pat = pi;
        if (s->nfound == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 64;
            s->found = xrealloc(s->found, s->cap * sizeof *s->found);
        }
        s->found[s->nfound++] = id;
        if (added && (long long)++run->distinct >= run->st->max_streams)
            run->capped = 1;
    }
    if (strcmp(s->cursor, "0") == 0)
        s->done = 1;
    return 0;
}

/* Runs SCAN for every pattern, one SCAN per still-active pattern per round trip, until all
 * cursors are back at 0 or max_streams distinct streams were found. */
static int scan_patterns(struct collector *c, struct state *st, struct redis_pipe *p,
                         const struct deadline *dl, struct scrape *sc, struct pattern_scan *ps,
                         size_t nps, struct err *e)
{
    struct scan_run run = {st, sc, ps, xcalloc(nps, sizeof(size_t)), 0, 0};
    int rc = -1;
    for (;;) {
        redis_pipe_reset(p);
        size_t na = 0;
        for (size_t i = 0; i < nps && !run.capped; i++) {
            if (ps[i].done)
                continue;
            run.active[na++] = i;
            redis_pipe_addv(p, "SCAN", ps[i].cursor, "MATCH", st->specs[ps[i].spec].pattern,
                            "COUNT", SCAN_COUNT, "TYPE", "stream", NULL);
        }
        if (na == 0)
            break;
        if (redis_pipe_exec_each(st->conn, p, dl, st->rs.max_response_bytes, scan_reply, &run, e))
            goto out;
    }
    if (run.capped && !st->warned_cap) {
        char cap[32];
        snprintf(cap, sizeof cap, "%lld", st->max_streams);
        log_kv(LOG_WARN,
               "stream patterns match more streams than max_streams; collecting the "
               "first ones SCAN returned",
               "source", c->name, "max_streams", cap, NULL);
        st->warned_cap = 1;
    }
    rc = 0;
out:
    free(run.active);
    return rc;
}

/* On a cluster, whether the master being read serves key's slot; always on a single server. */
static int keyed_here(const struct state *st, const char *key)
{
    return !st->rs.cluster || redis_cluster_node_of(&st->cl.map, key, strlen(key)) == st->cl_node;
}

/* Step 1: the streams of this scrape, in config order, each once, with the first matching
 * entry's settings; dead-letter streams found by a pattern are not collected as streams. */
int redis_stream_resolve_targets(struct collector *c, struct state *st, struct redis_pipe *p,
                                 const struct deadline *dl, struct scrape *sc, struct err *e)
{
    struct names *names = &sc->names;
    size_t nps = 0;
    for (size_t i = 0; i < st->nspecs; i++)
        nps += st->specs[i].pattern != NULL;
    struct pattern_scan *ps = xcalloc(nps ? nps : 1, sizeof *ps);
    for (size_t i = 0, k = 0; i < st->nspecs; i++)
        if (st->specs[i].pattern) {
            ps[k].spec = i;
            memcpy(ps[k].cursor, "0", 2);
            k++;
        }
    int rc = -1;
    if (nps && scan_patterns(c, st, p, dl, sc, ps, nps, e))
        goto out;

    for (size_t i = 0, k = 0; i < st->nspecs; i++) {
        if (st->specs[i].name) {
            if (!keyed_here(st, st->specs[i].name))
                continue; /* another master serves its slot */
            size_t id = redis_stream_names_intern(names, st->specs[i].name,
                                                  strlen(st->specs[i].name), NULL);
            if (!names->v[id].chosen)
                redis_stream_target_add(sc, id, i, 0);
            continue;
        }
        struct pattern_scan *s = &ps[k++];
        for (size_t j = 0; j < s->nfound; j++) {
            const struct name *nm = &names->v[s->found[j]];
            if (nm->chosen || (st->rs.cluster && redis_stream_ask_done(st, nm->s)))
                continue;
            if (!keyed_here(st, nm->s)) {
                /* Found on the master importing its slot: read it here after ASKING (ask.c). */
                redis_stream_ask_add(st, st->cl.map.nodes[st->cl_node], nm->s, i, 1);
                names->v[s->found[j]].chosen = 1;
                continue;
            }
            redis_stream_target_add(sc, s->found[j], i, 1);
        }
    }
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        const char *tmpl = st->specs[t->spec].dlq_tmpl;
        if (!tmpl)
            continue;
        char *d = redis_stream_dlq_name(tmpl, t->name);
        if (!keyed_here(st, d)) { /* one pipeline per master: see docs/kinds/redis_stream.md */
            free(d);
            continue;
        }
        t->dlq_id = redis_stream_names_intern(names, d, strlen(d), NULL);
        t->dlq = names->v[t->dlq_id].s;
        free(d);
        if (t->dlq_id != t->name_id)
            names->v[t->dlq_id].is_dlq = 1;
    }
    /* counted now: the names are dropped after step 2; a stream one pattern excluded and a later
     * one took is not left out */
    for (size_t i = 0; i < names->n; i++)
        sc->excluded += names->v[i].excluded && !names->v[i].chosen;
    size_t kept = 0;
    for (size_t i = 0; i < sc->n; i++)
        if (!(sc->t[i].from_pattern && names->v[sc->t[i].name_id].is_dlq))
            sc->t[kept++] = sc->t[i];
    sc->n = kept;
    if (sc->n < sc->cap) {
        sc->t = xrealloc(sc->t, (sc->n ? sc->n : 1) * sizeof *sc->t);
        sc->cap = sc->n;
    }
    rc = 0;
out:
    for (size_t i = 0; i < nps; i++)
        free(ps[i].found);
    free(ps);
    return rc;
}

struct groups_run {
    struct state *st;
    struct scrape *sc;
    int64_t now_ms;
};

/* Reply 0 is TIME, reply i the XINFO GROUPS of target i - 1: kept are the groups that pass the
 * groups filter (all are checked), in the scrape's compact form. */
static int groups_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct groups_run *run = ctx;
    struct scrape *sc = run->sc;
    struct redis_conn *conn = run->st->conn;
    if (i == 0) {
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "TIME");
        if (redis_stream_parse_time(r, &run->now_ms, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        return 0;
    }
    struct target *t = &sc->t[i - 1];
    /* A configured stream that does not exist (yet, or any more) is not an error. */
    if (redis_reply_is_error(r, "ERR no such key")) {
        t->missing = 1;
        sc->missing++;
        return 0;
    }
    struct redis_redirect rd;
    if (run->st->rs.cluster && !run->st->asking &&
        (redis_reply_is_error(r, "ASK ") || redis_reply_is_error(r, "MOVED ")) &&
        redis_cluster_parse_redirect(r->str, r->len, &rd) &&
        (rd.ask || redis_cluster_node_at(&run->st->cl.map, rd.address) != REDIS_CLUSTER_NO_NODE)) {
        /* ASK: moved already, its slot still migrating; MOVED to a master of the map: the slot
         * moved to it (which may have been read already). Read it there after ASKING (ask.c);
         * after a MOVED the map is learnt again once the scrape is over. */
        run->st->cl_stale |= !rd.ask;
        redis_stream_ask_add(run->st, rd.address, t->name, t->spec, t->from_pattern);
        t->missing = 1; /* not here: nothing more is asked of it on this node */
        return 0;
    }
    if (redis_reply_is_error(r, "MOVED ") || redis_reply_is_error(r, "ASK "))
        run->st->redirected = 1; /* cluster.c learns the map again and reads on */
    if (redis_reply_is_error(r, NULL))
        return query_error(conn, r, e, 300, "XINFO GROUPS \"%s\"", t->name);
    size_t n;
    if (redis_stream_groups_count(r, t->name, &n, e))
        return err_prefix(e, "%s", redis_conn_label(conn));
    const struct stream_spec *sp = &run->st->specs[t->spec];
    t->group0 = sc->ngroups;
    for (size_t j = 0; j < n; j++) {
        struct redis_stream_group g;
        if (redis_stream_parse_group(r, j, t->name, &g, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        if (!redis_stream_group_wanted(sp->groups, sp->ngroups, g.name))
            continue;
        if (sc->ngroups == sc->groups_cap) {
            sc->groups_cap = sc->groups_cap ? sc->groups_cap * 2 : 16;
            sc->groups = xrealloc(sc->groups, sc->groups_cap * sizeof *sc->groups);
        }
        struct group *cg = &sc->groups[sc->ngroups++];
        cg->name = sc->names.v[redis_stream_names_intern(&sc->names, g.name, g.name_len, NULL)].s;
        cg->pending = g.pending;
        cg->consumers = g.consumers;
        cg->lag = g.lag;
        cg->has_lag = g.has_lag;
        cg->has_entries_read = g.has_entries_read;
        cg->entries_read = g.entries_read;
        cg->last_delivered = g.last_delivered;
    }
    t->ngroups = sc->ngroups - t->group0;
    return 0;
}

/* Step 2: TIME and XINFO GROUPS for every stream, in one pipeline. */
int redis_stream_read_groups(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                             struct scrape *sc, int64_t *now_ms, struct err *e)
{
    redis_pipe_reset(p);
    redis_cluster_pipe_asking(p, st->asking);
    redis_pipe_addv(p, "TIME", NULL);
    for (size_t i = 0; i < sc->n; i++) {
        redis_cluster_pipe_asking(p, st->asking);
        redis_pipe_addv(p, "XINFO", "GROUPS", sc->t[i].name, NULL);
    }
    struct groups_run run = {st, sc, 0};
    if (redis_cluster_exec_each(st->conn, p, st->asking, dl, st->rs.max_response_bytes,
                                groups_reply, &run, e))
        return -1;
    *now_ms = run.now_ms;
    if (sc->ngroups < sc->groups_cap) {
        sc->groups = xrealloc(sc->groups, (sc->ngroups ? sc->ngroups : 1) * sizeof *sc->groups);
        sc->groups_cap = sc->ngroups;
    }
    /* Each distinct dead-letter stream is asked about once, by the first existing stream that
     * names it; the others reuse its answer. */
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        if (t->missing || t->dlq_id == NONE)
            continue;
        struct name *d = &sc->names.v[t->dlq_id];
        if (d->dlq == NONE) {
            d->dlq = sc->ndlqs++;
            t->dlq_owner = 1;
        }
        t->dlq_slot = d->dlq;
    }
    if (sc->ndlqs)
        sc->dlqs = xcalloc(sc->ndlqs, sizeof *sc->dlqs);
    redis_stream_names_drop_index(&sc->names);
    return 0;
}

static int wants_pending(const struct group *g)
{
    return g->pending > 0;
}

/* lag == 0: everything was delivered, there is no first undelivered entry to look for. */
static int wants_range(const struct group *g)
{
    return !(g->has_lag && g->lag == 0);
}

/* Writes the decimal digits of v at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Step 3's pipeline: per group XPENDING (when it has pending entries) and XRANGE after its
 * last-delivered-id (unless its lag is 0), then per stream XLEN, XRANGE (oldest entry) and
 * XREVRANGE (newest entry) of its dead-letter stream when it is the first to name it. details_reply
 * walks the same order. */
static void add_details(const struct state *st, const struct scrape *sc, struct redis_pipe *p)
{
    char limit[24];
    *put_u64(limit, (uint64_t)st->pending_scan_limit) = '\0';
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (t->missing)
            continue;
        for (size_t j = 0; j < t->ngroups; j++) {
            const struct group *g = &sc->groups[t->group0 + j];
            if (wants_pending(g)) {
                redis_cluster_pipe_asking(p, st->asking);
                redis_pipe_addv(p, "XPENDING", t->name, g->name, "-", "+", limit, NULL);
            }
            if (wants_range(g)) {
                char start[48], *q = start;
                *q++ = '(';
                q = put_u64(q, g->last_delivered.ms);
                *q++ = '-';
                *put_u64(q, g->last_delivered.seq) = '\0';
                redis_cluster_pipe_asking(p, st->asking);
                redis_pipe_addv(p, "XRANGE", t->name, start, "+", "COUNT", "1", NULL);
            }
            if (g->consumers > 0) {
                redis_cluster_pipe_asking(p, st->asking);
                redis_pipe_addv(p, "XINFO", "CONSUMERS", t->name, g->name, NULL);
            }
        }
        if (t->dlq_owner) { /* never in an ASKING pass: cluster.c gives it no dead-letter stream */
            redis_pipe_addv(p, "XLEN", t->dlq, NULL);
            redis_pipe_addv(p, "XRANGE", t->dlq, "-", "+", "COUNT", "1", NULL);
            redis_pipe_addv(p, "XREVRANGE", t->dlq, "+", "-", "COUNT", "1", NULL);
        }
    }
}

/* Step 3 is read as it arrives: a walk over streams and groups in the order add_details added
 * their commands. Each reply is folded into the group (or dead-letter stream) it belongs to, and
 * a group's series are emitted as soon as its last reply is in, so no reply, and no per-group
 * result, outlives the group. */
enum walk_step {
    W_TARGET,     /* at the start of stream ti */
    W_GROUP,      /* at the start of group gi of it */
    W_PENDING,    /* its XPENDING reply, if it has one */
    W_RANGE,      /* its XRANGE reply, if it has one */
    W_CONSUMERS,  /* its XINFO CONSUMERS reply, if it has consumers */
    W_EMIT_GROUP, /* its series */
    W_DLQ,        /* the stream's dead-letter stream, if it has one */
    W_DLQ_LEN,    /* XLEN of it, from its first stream */
    W_DLQ_RANGE,  /* XRANGE - + COUNT 1 of it, likewise */
    W_DLQ_LAST,   /* XREVRANGE + - COUNT 1 of it, likewise */
    W_EMIT_DLQ,   /* the stream's dead-letter series */
};

struct walk {
    struct state *st;
    struct scrape *sc;
    struct metric_set *out;
    int64_t now_ms;
    size_t ti, gi;
    enum walk_step step;
    /* the group being read */
    int skip; /* destroyed between the two pipelines (NOGROUP): it has no series now */
    int have_pending;
    struct redis_stream_pending pending;
    int found;
    struct redis_stream_id first;
    long long active; /* its consumers idle no longer than consumer_active_window */
    size_t truncated; /* groups whose pending scan stopped at pending_scan_limit */
};

static void walk_emit_group(struct walk *w, const struct target *t, const struct group *g)
{
    struct redis_stream_group rg;
    memset(&rg, 0, sizeof rg);
    rg.pending = g->pending;
    rg.has_lag = g->has_lag;
    rg.lag = g->lag;
    rg.has_entries_read = g->has_entries_read;
    rg.entries_read = g->entries_read;
    struct redis_stream_group_values v;
    redis_stream_group_values(w->now_ms, &rg, w->have_pending ? &w->pending : NULL, w->found,
                              &w->first, &w->st->specs[t->spec].pol, &v);
    redis_stream_emit_group(w->out, t->name, g->name, &v);
    metric_set_add(w->out, "qrel_queue_consumers", (double)w->active, "queue", t->name, "group",
                   g->name, NULL);
    for (size_t k = 0; k < v.bad_timestamps; k++)
        entry_skips_add(&w->sc->skips, t->name, ENTRY_BAD_TIMESTAMP);
    if (w->have_pending &&
        redis_stream_pending_truncated(&w->pending, g->pending, w->st->pending_scan_limit))
        w->truncated++;
}

/* Moves the walk to the next reply due, emitting what is complete on the way. Returns 1 when a
 * reply is due (w->step says which), 0 at the end, -1 on error. */
static int walk_next(struct walk *w, struct err *e)
{
    struct scrape *sc = w->sc;
    for (;;) {
        if (w->ti == sc->n)
            return 0;
        const struct target *t = &sc->t[w->ti];
        const struct group *g = w->gi < t->ngroups ? &sc->groups[t->group0 + w->gi] : NULL;
        switch (w->step) {
        case W_TARGET:
            if (t->missing) {
                w->ti++;
                break;
            }
            w->gi = 0;
            w->step = W_GROUP;
            break;
        case W_GROUP:
            if (!g) {
                w->step = W_DLQ;
                break;
            }
            w->skip = w->have_pending = w->found = 0;
            w->active = 0;
            w->first.ms = w->first.seq = 0;
            w->step = W_PENDING;
            break;
        case W_PENDING:
            if (wants_pending(g))
                return 1;
            w->step = W_RANGE;
            break;
        case W_RANGE:
            if (wants_range(g))
                return 1;
            w->step = W_CONSUMERS;
            break;
        case W_CONSUMERS:
            if (g->consumers > 0)
                return 1;
            w->step = W_EMIT_GROUP;
            break;
        case W_EMIT_GROUP:
            if (!w->skip)
                walk_emit_group(w, t, g);
            w->gi++;
            w->step = W_GROUP;
            break;
        case W_DLQ:
            if (!t->dlq) {
                w->ti++;
                w->step = W_TARGET;
                break;
            }
            w->step = t->dlq_owner ? W_DLQ_LEN : W_EMIT_DLQ;
            break;
        case W_DLQ_LEN:
        case W_DLQ_RANGE:
        case W_DLQ_LAST:
            return 1;
        case W_EMIT_DLQ:
            redis_stream_emit_dlq(w->out, t, &sc->dlqs[t->dlq_slot], w->now_ms, &sc->skips);
            w->ti++;
            w->step = W_TARGET;
            break;
        }
    }
}

static int details_reply(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct walk *w = ctx;
    int due = walk_next(w, e);
    if (due < 0)
        return -1;
    if (due == 0)
        return err_set(e, ERR_INTERNAL, "redis_stream: reply %zu answers no command", index + 1);
    struct redis_conn *conn = w->st->conn;
    const struct target *t = &w->sc->t[w->ti];
    const struct group *g = w->gi < t->ngroups ? &w->sc->groups[t->group0 + w->gi] : NULL;
    switch (w->step) {
    case W_PENDING:
        w->step = W_RANGE;
        if (redis_reply_is_error(r, "NOGROUP")) {
            w->skip = 1;
            return 0;
        }
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 600, "XPENDING \"%s\" \"%s\"", t->name, g->name);
        if (redis_stream_parse_pending(r, t->name, g->name, &w->pending, e))
            return err_prefix(e, "%s", redis_conn_label(conn));
        w->have_pending = 1;
        return 0;
    case W_RANGE:
        w->step = W_CONSUMERS;
        if (w->skip)
            return 0;
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 600,
                               "XRANGE \"%s\" after the last delivered id of \"%s\"", t->name,
                               g->name);
        if (redis_stream_parse_first_entry(r, &w->found, &w->first, e))
            return parse_error(conn, e, 600, "XRANGE \"%s\" after the last delivered id of \"%s\"",
                               t->name, g->name);
        return 0;
    case W_CONSUMERS:
        w->step = W_EMIT_GROUP;
        if (redis_reply_is_error(r, "NOGROUP"))
            w->skip = 1; /* destroyed between the two pipelines */
        if (w->skip)
            return 0;
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 600, "XINFO CONSUMERS \"%s\" \"%s\"", t->name, g->name);
        if (redis_stream_parse_active_consumers(
                r, (long long)(w->st->consumer_active_window * 1000.0), &w->active, e))
            return parse_error(conn, e, 600, "XINFO CONSUMERS \"%s\" \"%s\"", t->name, g->name);
        return 0;
    case W_DLQ_LEN:
        w->step = W_DLQ_RANGE;
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XLEN \"%s\"", t->dlq);
        if (redis_stream_parse_len(r, &w->sc->dlqs[t->dlq_slot].len, e))
            return parse_error(conn, e, 300, "XLEN \"%s\"", t->dlq);
        return 0;
    case W_DLQ_RANGE: {
        w->step = W_DLQ_LAST;
        struct dlq *d = &w->sc->dlqs[t->dlq_slot];
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XRANGE \"%s\" - + COUNT 1", t->dlq);
        if (redis_stream_parse_first_entry(r, &d->found, &d->first, e))
            return parse_error(conn, e, 300, "XRANGE \"%s\" - + COUNT 1", t->dlq);
        return 0;
    }
    case W_DLQ_LAST: {
        w->step = W_EMIT_DLQ;
        /* XREVRANGE lists newest first, so its first entry is the newest one. */
        struct dlq *d = &w->sc->dlqs[t->dlq_slot];
        if (redis_reply_is_error(r, NULL))
            return query_error(conn, r, e, 300, "XREVRANGE \"%s\" + - COUNT 1", t->dlq);
        if (redis_stream_parse_first_entry(r, &d->found_last, &d->last, e))
            return parse_error(conn, e, 300, "XREVRANGE \"%s\" + - COUNT 1", t->dlq);
        return 0;
    }
    default:
        return err_set(e, ERR_INTERNAL, "redis_stream: reply %zu read out of step", index + 1);
    }
}

/* Step 3: XPENDING and XRANGE per group, XLEN, XRANGE and XREVRANGE per dead-letter stream, one
 * pipeline, read and emitted as the replies come. */
int redis_stream_read_details(struct state *st, struct redis_pipe *p, const struct deadline *dl,
                              struct scrape *sc, int64_t now_ms, struct metric_set *out,
                              size_t *truncated, struct err *e)
{
    redis_pipe_reset(p);
    add_details(st, sc, p);
    struct walk w;
    memset(&w, 0, sizeof w);
    w.st = st;
    w.sc = sc;
    w.out = out;
    w.now_ms = now_ms;
    w.step = W_TARGET;
    if (redis_pipe_len(p) &&
        redis_cluster_exec_each(st->conn, p, st->asking, dl, st->rs.max_response_bytes,
                                details_reply, &w, e))
        return -1;
    int due = walk_next(&w, e);
    if (due > 0)
        return err_set(e, ERR_INTERNAL, "redis_stream: %zu replies for more commands",
                       redis_pipe_len(p) / (st->asking ? 2 : 1));
    if (due == 0)
        *truncated += w.truncated;
    return due;
}
