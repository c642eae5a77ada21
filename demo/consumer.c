/* consumer.c: one consumer of the demo workload, the order-confirmation mailer.
 *
 * Each delivery is first recorded in the dedup table (a same-database effect, idempotent by its
 * unique key; a repeat counts as a duplicate). The email, a third-party effect, is sent with
 * claim-before-send as the design notes describe: claim a row (order_id, claimed_at, sent_at NULL),
 * call the provider, stamp sent_at when it answers, acknowledge. A redelivery that finds the claim
 * done acknowledges without sending; one that finds a young open claim defers (the first attempt is
 * presumably still running); one that finds an old open claim takes it over and sends again. A
 * delivery beyond max-deliveries is dead-lettered before any of that. Each consumer owns its Redis
 * and PostgreSQL connections, so no locking is needed between them. */
#include "workload.h"

#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Acknowledges only the current delivery: when another consumer took the entry over (its owner
 * or delivery count changed), the late ack is refused, as SQS refuses an old receipt handle.
 * Redis itself would accept any XACK, which would hide the incident this demo replays. Atomic,
 * because Redis runs a script alone. Returns XACK's count, or -1 when refused. */
static const char ack_current_script[] =
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)\n"
    "if #p == 1 and p[1][2] == ARGV[3] and p[1][4] == tonumber(ARGV[4]) then\n"
    "  return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n"
    "end\n"
    "return -1\n";

struct consumer {
    struct workload *w;
    char name[32];
    redisContext *redis;
    PGconn *pg;
    char cursor[64]; /* where this consumer's XAUTOCLAIM scan goes on */
    uint64_t rng;
};

struct delivery {
    char id[64];
    long order;
    long long count; /* the delivery count, this delivery included */
};

/* ---- randomness: the provider's answer time ---- */

static double uniform01(struct consumer *c)
{
    /* xorshift64*: plenty for sleeps, and each consumer has its own state */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Normally log-normal around the median (sigma 0.4: the p99 is about 2.5 times the median);
 * during the incident uniform between the slow bounds, still succeeding. */
static int64_t provider_latency_ms(struct consumer *c)
{
    const struct workload_opts *o = &c->w->o;
    if (atomic_load(&c->w->incident))
        return o->incident_min_ms +
               (int64_t)(uniform01(c) * (double)(o->incident_max_ms - o->incident_min_ms));
    double u1 = uniform01(c), u2 = uniform01(c);
    if (u1 < 1e-12)
        u1 = 1e-12;
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
    return (int64_t)llround((double)o->latency_ms * exp(0.4 * z));
}

/* ---- connections ---- */

static void drop_connections(struct consumer *c)
{
    if (c->redis)
        redisFree(c->redis);
    if (c->pg)
        PQfinish(c->pg);
    c->redis = NULL;
    c->pg = NULL;
}

static bool prepare(struct consumer *c, const char *name, const char *sql_fmt, const char *table,
                    int nparams)
{
    char sql[512];
    snprintf(sql, sizeof sql, sql_fmt, table);
    PGresult *r = PQprepare(c->pg, name, sql, nparams, NULL);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        say("%s: postgres: preparing %s: %s", c->name, name, PQerrorMessage(c->pg));
    PQclear(r);
    return ok;
}

static bool connect_all(struct consumer *c)
{
    const struct workload_opts *o = &c->w->o;
    struct timeval tv = {5, 0};
    c->redis = redisConnectWithTimeout(o->redis_host, o->redis_port, tv);
    if (!c->redis || c->redis->err) {
        say("%s: redis: %s", c->name, c->redis ? c->redis->errstr : "out of memory");
        drop_connections(c);
        return false;
    }
    c->pg = PQconnectdb(o->pg_conninfo);
    if (PQstatus(c->pg) != CONNECTION_OK) {
        say("%s: postgres: %s", c->name, PQerrorMessage(c->pg));
        drop_connections(c);
        return false;
    }
    char *t = PQescapeIdentifier(c->pg, o->claim_table, strlen(o->claim_table));
    char *dedup = PQescapeIdentifier(c->pg, o->dedup_table, strlen(o->dedup_table));
    bool ok = t && dedup;
    ok = ok && prepare(c, "handled",
                       "INSERT INTO %s AS h (order_id) VALUES ($1) ON CONFLICT (order_id)"
                       " DO UPDATE SET duplicate_count = h.duplicate_count + 1",
                       dedup, 1);
    ok = ok &&
         prepare(c, "claim",
                 "INSERT INTO %s (order_id) VALUES ($1) ON CONFLICT (order_id) DO NOTHING", t, 1);
    ok = ok && prepare(c, "take_over",
                       "UPDATE %s SET claimed_at = now() WHERE order_id = $1 AND sent_at IS NULL"
                       " AND claimed_at < now() - $2::interval",
                       t, 2);
    ok =
        ok && prepare(c, "is_done", "SELECT sent_at IS NOT NULL FROM %s WHERE order_id = $1", t, 1);
    ok = ok &&
         prepare(c, "stamp",
                 "UPDATE %s SET sent_at = now() WHERE order_id = $1 AND sent_at IS NULL", t, 1);
    PQfreemem(t);
    PQfreemem(dedup);
    if (!ok)
        drop_connections(c);
    return ok;
}

/* A Redis reply, or NULL with the error said and the connection dropped when it is broken. */
static redisReply *redis_do(struct consumer *c, redisReply *r, const char *what)
{
    if (!r) {
        say("%s: redis %s: %s", c->name, what, c->redis->errstr);
        atomic_fetch_add(&c->w->s.errors, 1);
        drop_connections(c);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        say("%s: redis %s: %s", c->name, what, r->str);
        atomic_fetch_add(&c->w->s.errors, 1);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* ---- reading deliveries ---- */

/* An entry reply [id, [field, value, ...]] into d (order from the "order" field). */
static bool parse_entry(const redisReply *e, struct delivery *d)
{
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
        return false; /* an entry deleted after delivery (nil), or a shape we don't know */
    snprintf(d->id, sizeof d->id, "%s", e->element[0]->str);
    const redisReply *f = e->element[1];
    d->order = -1;
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        if (f->element[i]->type == REDIS_REPLY_STRING && strcmp(f->element[i]->str, "order") == 0 &&
            f->element[i + 1]->type == REDIS_REPLY_STRING) {
            char *end;
            d->order = strtol(f->element[i + 1]->str, &end, 10);
            if (*end)
                d->order = -1;
        }
    }
    return d->order >= 0;
}

/* The delivery count XAUTOCLAIM gave the entry (it does not return it). */
static bool delivery_count(struct consumer *c, struct delivery *d)
{
    const struct workload_opts *o = &c->w->o;
    redisReply *r = redis_do(
        c, redisCommand(c->redis, "XPENDING %s %s %s %s 1", o->stream, o->group, d->id, d->id),
        "XPENDING");
    if (!r)
        return false;
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
              r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 4 &&
              r->element[0]->element[3]->type == REDIS_REPLY_INTEGER;
    if (ok)
        d->count = r->element[0]->element[3]->integer;
    freeReplyObject(r);
    return ok;
}

/* Takes one entry whose lease expired (idle longer than the lease) with XAUTOCLAIM, which
 * counts as a delivery. Follows the scan cursor for a few pages, so a long pending list is
 * covered over several calls rather than rescanned from its start each time. */
static bool reclaim(struct consumer *c, struct delivery *d)
{
    const struct workload_opts *o = &c->w->o;
    char idle[32];
    snprintf(idle, sizeof idle, "%lld", (long long)o->lease_ms);
    for (int page = 0; page < 10 && c->redis; page++) {
        redisReply *r = redis_do(c,
                                 redisCommand(c->redis, "XAUTOCLAIM %s %s %s %s %s COUNT 1",
                                              o->stream, o->group, c->name, idle, c->cursor),
                                 "XAUTOCLAIM");
        if (!r)
            return false;
        bool got = false, wrapped = true;
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
            r->element[0]->type == REDIS_REPLY_STRING) {
            snprintf(c->cursor, sizeof c->cursor, "%s", r->element[0]->str);
            wrapped = strcmp(c->cursor, "0-0") == 0;
            const redisReply *entries = r->element[1];
            for (size_t i = 0; !got && entries->type == REDIS_REPLY_ARRAY && i < entries->elements;
                 i++)
                got = parse_entry(entries->element[i], d);
        }
        freeReplyObject(r);
        if (got)
            return delivery_count(c, d);
        if (wrapped)
            return false;
    }
    return false;
}

/* Reads one new entry, blocking up to the poll interval. */
static bool read_new(struct consumer *c, struct delivery *d)
{
    const struct workload_opts *o = &c->w->o;
    char block[32];
    snprintf(block, sizeof block, "%lld", (long long)o->poll_ms);
    redisReply *r =
        redis_do(c,
                 redisCommand(c->redis, "XREADGROUP GROUP %s %s COUNT 1 BLOCK %s STREAMS %s >",
                              o->group, c->name, block, o->stream),
                 "XREADGROUP");
    if (!r)
        return false;
    /* nil on timeout; else [[stream, [entry]]] */
    bool got = r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
               r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
               r->element[0]->element[1]->type == REDIS_REPLY_ARRAY &&
               r->element[0]->element[1]->elements == 1 &&
               parse_entry(r->element[0]->element[1]->element[0], d);
    freeReplyObject(r);
    d->count = 1;
    return got;
}

/* ---- handling a delivery ---- */

enum claim_outcome { CLAIM_SEND, CLAIM_DONE, CLAIM_DEFER, CLAIM_ERROR };

/* Runs a prepared statement; returns the result when it has the wanted status. */
static PGresult *pg_run(struct consumer *c, const char *stmt, int n, const char *const *params,
                        ExecStatusType want)
{
    PGresult *r = PQexecPrepared(c->pg, stmt, n, params, NULL, NULL, 0);
    if (PQresultStatus(r) == want)
        return r;
    say("%s: postgres %s: %s", c->name, stmt, PQerrorMessage(c->pg));
    atomic_fetch_add(&c->w->s.errors, 1);
    PQclear(r);
    if (PQstatus(c->pg) != CONNECTION_OK)
        drop_connections(c);
    return NULL;
}

static bool affected_one(PGresult *r)
{
    return strcmp(PQcmdTuples(r), "1") == 0;
}

/* Claim-before-send: may this delivery call the provider? */
static enum claim_outcome claim(struct consumer *c, long order)
{
    char id[32], window[48];
    snprintf(id, sizeof id, "%ld", order);
    snprintf(window, sizeof window, "%.3f seconds", (double)c->w->o.in_flight_window_ms / 1000.0);
    const char *p1[] = {id}, *p2[] = {id, window};

    PGresult *r = pg_run(c, "claim", 1, p1, PGRES_COMMAND_OK);
    if (!r)
        return CLAIM_ERROR;
    bool mine = affected_one(r);
    PQclear(r);
    if (mine)
        return CLAIM_SEND;

    r = pg_run(c, "take_over", 2, p2, PGRES_COMMAND_OK);
    if (!r)
        return CLAIM_ERROR;
    mine = affected_one(r);
    PQclear(r);
    if (mine) {
        atomic_fetch_add(&c->w->s.taken_over, 1);
        return CLAIM_SEND;
    }

    r = pg_run(c, "is_done", 1, p1, PGRES_TUPLES_OK);
    if (!r)
        return CLAIM_ERROR;
    bool done = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return done ? CLAIM_DONE : CLAIM_DEFER;
}

static void ack_current(struct consumer *c, const struct delivery *d)
{
    const struct workload_opts *o = &c->w->o;
    char count[32];
    snprintf(count, sizeof count, "%lld", d->count);
    const char *argv[] = {"EVAL", ack_current_script, "1", o->stream, o->group, d->id, c->name,
                          count};
    redisReply *r = redis_do(
        c, redisCommandArgv(c->redis, (int)(sizeof argv / sizeof argv[0]), argv, NULL), "EVAL");
    if (!r)
        return;
    if (r->type == REDIS_REPLY_INTEGER && r->integer < 0)
        atomic_fetch_add(&c->w->s.late_acks_refused, 1);
    else if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        atomic_fetch_add(&c->w->s.acks, 1);
    freeReplyObject(r);
}

static void dead_letter(struct consumer *c, const struct delivery *d)
{
    const struct workload_opts *o = &c->w->o;
    char order[32], count[32];
    snprintf(order, sizeof order, "%ld", d->order);
    snprintf(count, sizeof count, "%lld", d->count);
    redisReply *r = redis_do(c,
                             redisCommand(c->redis,
                                          "XADD %s * id %s order %s deliveries %s reason "
                                          "max_deliveries",
                                          o->dead_letter_stream, d->id, order, count),
                             "XADD (dead letter)");
    if (!r)
        return;
    freeReplyObject(r);
    r = redis_do(c, redisCommand(c->redis, "XACK %s %s %s", o->stream, o->group, d->id), "XACK");
    if (!r)
        return;
    freeReplyObject(r);
    atomic_fetch_add(&c->w->s.dead_lettered, 1);
}

static void handle(struct consumer *c, const struct delivery *d)
{
    struct workload_stats *s = &c->w->s;
    atomic_fetch_add(&s->deliveries, 1);
    if (d->count > 1)
        atomic_fetch_add(&s->redeliveries, 1);
    if (d->count > c->w->o.max_deliveries) {
        dead_letter(c, d);
        return;
    }
    /* The same-database effect (the order is marked as handled by the mailer) is idempotent by
     * the dedup table's unique key; a repeated delivery is counted as a duplicate there. */
    char order[32];
    snprintf(order, sizeof order, "%ld", d->order);
    const char *p1[] = {order};
    PGresult *h = pg_run(c, "handled", 1, p1, PGRES_COMMAND_OK);
    if (!h)
        return;
    PQclear(h);
    switch (claim(c, d->order)) {
    case CLAIM_SEND: {
        /* the provider: slow during the incident, but it always succeeds */
        if (!sleep_unless_stopped(c->w, provider_latency_ms(c)))
            return; /* stopped mid-call: the claim stays open, as after a crash */
        atomic_fetch_add(&s->emails, 1);
        PGresult *r = pg_run(c, "stamp", 1, p1, PGRES_COMMAND_OK);
        if (!r)
            return;
        PQclear(r);
        if (c->redis)
            ack_current(c, d);
        return;
    }
    case CLAIM_DONE:
        atomic_fetch_add(&s->already_done, 1);
        ack_current(c, d);
        return;
    case CLAIM_DEFER:
        atomic_fetch_add(&s->deferred, 1);
        return;
    case CLAIM_ERROR:
        return;
    }
}

void *consumer_main(void *arg)
{
    struct consumer_arg *a = arg;
    struct consumer c = {.w = a->w};
    snprintf(c.name, sizeof c.name, "mailer-%d", a->index);
    snprintf(c.cursor, sizeof c.cursor, "0-0");
    c.rng = (uint64_t)a->w->o.seed * 1000003ULL + (uint64_t)a->index * 7919ULL + 1;
    while (!atomic_load(&c.w->stop)) {
        if (!c.redis && !connect_all(&c)) {
            sleep_unless_stopped(c.w, 1000);
            continue;
        }
        struct delivery d;
        /* expired leases first: that is what a redelivery is here */
        if (reclaim(&c, &d) || (c.redis && read_new(&c, &d)))
            handle(&c, &d);
    }
    drop_connections(&c);
    return NULL;
}
