/* beanstalkd.c: `kind: beanstalkd`, the reliability of beanstalkd tubes.
 *
 * A reserved beanstalkd job is leased for its TTR (time to run): a worker that neither deletes,
 * releases, buries nor touches it in time loses it, and the job is ready again for another worker
 * (a "timeout", which beanstalkd counts per job and server-wide). Jobs that keep failing are
 * buried by the workers: the buried list of a tube is its dead-letter queue.
 *
 * A scrape is at most four pipelined round trips whatever the number of tubes, all read-only:
 *   1. `stats` (job-timeouts) and, unless tubes are named, `list-tubes`;
 *   2. per tube `stats-tube` (depth by state, buried);
 *   3. for a tube with ready or buried jobs only, `use` and then `peek-ready` when it has ready
 *      jobs, `peek-buried` when it has buried ones: the ids of the jobs at the head of those lists
 *      (`use` only changes which tube this connection's peeks look at). beanstalkd finds a tube
 *      by walking its list of every tube, so each name sent costs the server a walk: a tube with
 *      nothing to peek is named once, not twice;
 *   4. `stats-job` of those heads: their age, TTR, reserves and timeouts.
 * What beanstalkd cannot tell (see docs/kinds/beanstalkd.md): the held time of reserved jobs
 * (no command lists them), so there is no lease margin; and peek-ready returns the most urgent
 * job, which is the oldest ready job only among jobs of the same priority. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beanstalkd.h"
#include "client.h"
#include "collector.h"
#include "common/exclude.h"
#include "common/beanstalk.h"
#include "config.h"
#include "dlq.h"
#include "log.h"
#include "alloc.h"

#define DEAD_LETTER_LABEL "buried"

struct tube {
    char *name;
    int exists; /* stats-tube answered OK */
    double ready, reserved, delayed, buried;
    double watching; /* current-watching: connections watching it */
    double deleted;  /* cmd-delete: jobs of the tube deleted since it was made, in any state */
    unsigned long long ready_id, buried_id; /* 0: none */
    int has_ready_job, has_buried_job;
    double ready_age, ready_ttr, buried_age, buried_ttr;
};

struct scrape {
    struct state *st;
    double job_timeouts;
    struct tube *t;
    size_t n;
    char **listed; /* list-tubes */
    size_t nlisted;
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    beanstalk_conn_close(st->conn);
    free(st->address);
    cfg_strv_free(st->tubes);
    exclude_free(&st->exclude);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    /* Every key is read before any is judged, so a misspelt key is reported as unknown. */
    if (cfg_get_nonempty(map, "address", &st->address, e) ||
        cfg_get_strlist(map, "tubes", &st->tubes, &st->ntubes, e) ||
        exclude_read(&st->exclude, map, "exclude", NULL, e) ||
        cfg_get_int(map, "max_response_bytes", (long long)BEANSTALK_DEFAULT_MAX_RESPONSE_BYTES,
                    1024, (long long)1 << 32, &st->max_response_bytes, e) ||
        collector_finish(c, map, e))
        return -1;
    if (!st->address)
        return cfg_get_str(map, "address", 1, &st->address, e);
    char *host = NULL;
    int port;
    struct err ae;
    if (beanstalk_address_parse(st->address, &host, &port, &ae)) {
        free(host);
        return cfg_error(e, cfg_at(map, "address"), "address: %s", ae.msg);
    }
    free(host);
    struct cfg_node *list = cfg_at(map, "tubes");
    for (size_t i = 0; i < st->ntubes; i++)
        if (!beanstalkd_tube_name_valid(st->tubes[i]))
            return cfg_error(e, list->kind == CFG_SEQ ? list->items[i] : list,
                             "tubes: want a beanstalkd tube name (letters, digits, -+/;.$_(), "
                             "at most 200 bytes, not starting with '-'), got \"%s\"",
                             st->tubes[i]);
    if (st->tubes && st->ntubes == 0)
        return cfg_error(e, list, "tubes: want at least one tube, or leave the key out for all");
    if (exclude_check(&st->exclude, map, e))
        return -1;
    if (st->tubes && exclude_any(&st->exclude)) /* it could only hide a tube asked for by name */
        return cfg_error(e, cfg_at(map, "exclude"),
                         "exclude: only without tubes (it leaves out tubes list-tubes finds)");
    return 0;
}

/* ---- round 1: stats, list-tubes ---- */

static int on_round1(void *ctx, size_t index, const struct beanstalk_reply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (strcmp(r->status, "OK") != 0)
        return err_set(e, ERR_PROTOCOL, "%s: want OK, got \"%s\"",
                       index == 0 ? "stats" : "list-tubes", r->line);
    if (index == 0) {
        static const char *const keys[] = {"job-timeouts"};
        return beanstalkd_parse_stats(r->body, keys, &sc->job_timeouts, 1, e)
                   ? err_prefix(e, "stats")
                   : 0;
    }
    if (beanstalkd_parse_list(r->body, &sc->listed, &sc->nlisted, e))
        return err_prefix(e, "list-tubes");
    return 0;
}

/* ---- round 2: per tube stats-tube ---- */

static int on_round2(void *ctx, size_t index, const struct beanstalk_reply *r, struct err *e)
{
    struct scrape *sc = ctx;
    struct tube *t = &sc->t[index];
    if (strcmp(r->status, "NOT_FOUND") == 0)
        return 0; /* a tube exists only while it has jobs or watchers: empty */
    if (strcmp(r->status, "OK") != 0)
        return err_set(e, ERR_PROTOCOL, "stats-tube %s: want OK, got \"%s\"", t->name, r->line);
    static const char *const keys[] = {"current-jobs-ready",   "current-jobs-reserved",
                                       "current-jobs-delayed", "current-jobs-buried",
                                       "current-watching",     "cmd-delete"};
    double v[6];
    if (beanstalkd_parse_stats(r->body, keys, v, 6, e))
        return err_prefix(e, "stats-tube %s", t->name);
    t->exists = 1;
    t->ready = v[0];
    t->reserved = v[1];
    t->delayed = v[2];
    t->buried = v[3];
    t->watching = v[4];
    t->deleted = v[5];
    return 0;
}

/* ---- round 3: use, peek-ready, peek-buried of the tubes with such jobs ---- */

enum peek_cmd { PEEK_USE, PEEK_READY, PEEK_BURIED };

struct peeks {
    struct scrape *sc;
    size_t *tube_of;    /* per command: the tube */
    enum peek_cmd *cmd; /* per command: what it is */
};

static unsigned long long found_id(const struct beanstalk_reply *r)
{
    /* "FOUND <id> <bytes>": beanstalk_frame checked that both numbers are there. */
    return strtoull(r->line + 6, NULL, 10);
}

static int on_peek(void *ctx, size_t index, const struct beanstalk_reply *r, struct err *e)
{
    struct peeks *pk = ctx;
    struct tube *t = &pk->sc->t[pk->tube_of[index]];
    if (pk->cmd[index] == PEEK_USE) {
        if (strcmp(r->status, "USING") != 0)
            return err_set(e, ERR_PROTOCOL, "use %s: want USING, got \"%s\"", t->name, r->line);
        return 0;
    }
    int ready = pk->cmd[index] == PEEK_READY;
    if (strcmp(r->status, "NOT_FOUND") == 0)
        return 0; /* taken or deleted since stats-tube */
    if (strcmp(r->status, "FOUND") != 0)
        return err_set(e, ERR_PROTOCOL, "%s: want FOUND or NOT_FOUND, got \"%s\"",
                       ready ? "peek-ready" : "peek-buried", r->line);
    if (ready)
        t->ready_id = found_id(r);
    else
        t->buried_id = found_id(r);
    return 0;
}

/* ---- round 4: stats-job of the heads ---- */

struct heads {
    struct scrape *sc;
    size_t *tube_of; /* per command: the tube */
    int *is_ready;   /* per command: the ready head (1) or the buried head (0) */
};

static int on_round3(void *ctx, size_t index, const struct beanstalk_reply *r, struct err *e)
{
    struct heads *r3 = ctx;
    struct tube *t = &r3->sc->t[r3->tube_of[index]];
    if (strcmp(r->status, "NOT_FOUND") == 0)
        return 0; /* deleted or moved since the peek: its age is left out this time */
    if (strcmp(r->status, "OK") != 0)
        return err_set(e, ERR_PROTOCOL, "stats-job: want OK, got \"%s\"", r->line);
    static const char *const keys[] = {"age", "ttr"};
    double v[2];
    if (beanstalkd_parse_stats(r->body, keys, v, 2, e))
        return err_prefix(e, "stats-job");
    if (r3->is_ready[index]) {
        t->has_ready_job = 1;
        t->ready_age = v[0];
        t->ready_ttr = v[1];
    } else {
        t->has_buried_job = 1;
        t->buried_age = v[0];
        t->buried_ttr = v[1];
    }
    return 0;
}

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->t[i].name);
    free(sc->t);
    cfg_strv_free(sc->listed);
}

static int run(struct collector *c, struct scrape *sc, const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    size_t max = (size_t)st->max_response_bytes;
    const char *r1[] = {"stats", "list-tubes"};
    if (beanstalk_exec(st->conn, r1, st->tubes ? 1 : 2, dl, max, on_round1, sc, e))
        return -1;
    char **names = st->tubes ? st->tubes : sc->listed;
    size_t total = st->tubes ? st->ntubes : sc->nlisted;
    sc->t = xcalloc(total ? total : 1, sizeof *sc->t);
    st->exclude.dropped = 0;
    for (size_t i = 0; i < total; i++) {
        if (!beanstalkd_tube_name_valid(names[i]))
            return err_set(e, ERR_PROTOCOL, "list-tubes: a tube name beanstalkd would not take");
        if (exclude_drop(&st->exclude, names[i]))
            continue; /* neither asked about nor exported */
        sc->t[sc->n++].name = xstrdup(names[i]);
    }

    char **cmds = xcalloc(sc->n ? sc->n : 1, sizeof *cmds);
    for (size_t i = 0; i < sc->n; i++)
        cmds[i] = xasprintf("stats-tube %s", sc->t[i].name);
    int rc = beanstalk_exec(st->conn, (const char *const *)cmds, sc->n, dl, max, on_round2, sc, e);
    for (size_t i = 0; i < sc->n; i++)
        free(cmds[i]);
    free(cmds);
    if (rc)
        return -1;

    size_t np = 0;
    cmds = xcalloc(sc->n * 3 + 1, sizeof *cmds);
    struct peeks pk = {sc, xcalloc(sc->n * 3 + 1, sizeof(size_t)),
                       xcalloc(sc->n * 3 + 1, sizeof(enum peek_cmd))};
    for (size_t i = 0; i < sc->n; i++) {
        const struct tube *t = &sc->t[i];
        if (!(t->ready > 0) && !(t->buried > 0))
            continue; /* nothing to peek: the tube is not named a second time */
        pk.tube_of[np] = i;
        pk.cmd[np] = PEEK_USE;
        cmds[np++] = xasprintf("use %s", t->name);
        if (t->ready > 0) {
            pk.tube_of[np] = i;
            pk.cmd[np] = PEEK_READY;
            cmds[np++] = xstrdup("peek-ready");
        }
        if (t->buried > 0) {
            pk.tube_of[np] = i;
            pk.cmd[np] = PEEK_BURIED;
            cmds[np++] = xstrdup("peek-buried");
        }
    }
    rc = beanstalk_exec(st->conn, (const char *const *)cmds, np, dl, max, on_peek, &pk, e);
    for (size_t i = 0; i < np; i++)
        free(cmds[i]);
    free(cmds);
    free(pk.tube_of);
    free(pk.cmd);
    if (rc)
        return -1;

    size_t n3 = 0;
    cmds = xcalloc(sc->n * 2 + 1, sizeof *cmds);
    struct heads r3 = {sc, xcalloc(sc->n * 2 + 1, sizeof(size_t)),
                       xcalloc(sc->n * 2 + 1, sizeof(int))};
    for (size_t i = 0; i < sc->n; i++) {
        if (sc->t[i].ready_id) {
            r3.tube_of[n3] = i;
            r3.is_ready[n3] = 1;
            cmds[n3++] = xasprintf("stats-job %llu", sc->t[i].ready_id);
        }
        if (sc->t[i].buried_id) {
            r3.tube_of[n3] = i;
            r3.is_ready[n3] = 0;
            cmds[n3++] = xasprintf("stats-job %llu", sc->t[i].buried_id);
        }
    }
    rc = beanstalk_exec(st->conn, (const char *const *)cmds, n3, dl, max, on_round3, &r3, e);
    for (size_t i = 0; i < n3; i++)
        free(cmds[i]);
    free(cmds);
    free(r3.tube_of);
    free(r3.is_ready);
    return rc;
}

static void emit(const struct scrape *sc, struct metric_set *out)
{
    /* Server-wide: beanstalkd counts TTR expiries per job and in all, not per tube. */
    metric_set_add(out, "qrel_lease_expiries_total", sc->job_timeouts, NULL);
    exclude_emit(&sc->st->exclude, out, "tube");
    for (size_t i = 0; i < sc->n; i++) {
        const struct tube *t = &sc->t[i];
        const char *q = t->name;
        metric_set_add(out, "qrel_queue_messages", t->ready, "queue", q, "state", "ready", NULL);
        metric_set_add(out, "qrel_queue_messages", t->reserved, "queue", q, "state", "in_flight",
                       NULL);
        metric_set_add(out, "qrel_queue_messages", t->delayed, "queue", q, "state", "delayed",
                       NULL);
        metric_set_add(out, "qrel_dead_letter_messages", t->buried, "queue", q, "dead_letter_queue",
                       DEAD_LETTER_LABEL, NULL);
        /* Every connection watches "default" until it ignores it (producers, qrel's own, another
         * exporter's), so its count says nothing about workers: left out there. */
        if (strcmp(q, "default") != 0)
            metric_set_add(out, "qrel_queue_consumers", t->watching, "queue", q, NULL);
        /* A worker completes a job by deleting it: the tube's count of deletes (which also counts
         * a buried or ready job deleted by hand) is its flow. It restarts at 0 when beanstalkd
         * drops the tube (no jobs, no watchers) and makes it again. */
        metric_set_add(out, "qrel_messages_consumed_total", t->deleted, "queue", q, NULL);
        if (t->has_ready_job)
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", t->ready_age, "queue", q,
                           NULL);
        if (t->has_buried_job)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", t->buried_age, "queue", q,
                           "dead_letter_queue", DEAD_LETTER_LABEL, NULL);
        /* TTR is set per job: the head's stands for the tube (ready first, else buried). */
        if (t->has_ready_job || t->has_buried_job)
            metric_set_add(out, "qrel_lease_timeout_seconds",
                           t->has_ready_job ? t->ready_ttr : t->buried_ttr, "queue", q, NULL);
    }
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    if (!st->conn && !(st->conn = beanstalk_conn_open(c->name, st->address, dl, e)))
        return -1;
    unsigned long long before = beanstalk_conn_round_trips(st->conn);
    struct scrape sc = {0};
    sc.st = st;
    int rc = run(c, &sc, dl, e);
    if (rc == 0) {
        emit(&sc, out);
        if (log_enabled(LOG_DEBUG)) {
            char tubes[32], rts[32];
            snprintf(tubes, sizeof tubes, "%zu", sc.n);
            snprintf(rts, sizeof rts, "%llu", beanstalk_conn_round_trips(st->conn) - before);
            log_kv(LOG_DEBUG, "beanstalkd collection done", "source", c->name, "tubes", tubes,
                   "round_trips", rts, NULL);
        }
    } else {
        beanstalk_conn_close(st->conn);
        st->conn = NULL;
    }
    scrape_free(&sc);
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "bury jobs that keep failing"},
    /* beanstalkd counts the connections that watch the tube (current-watching). */
    {"backlog_without_consumer", "start workers that watch this tube (watch, then reserve), or "
                                 "stop putting jobs into it"},
    {NULL, NULL}};

const struct collector_kind beanstalkd_kind = {
    .name = "beanstalkd",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .audit_hints = hints,
    .dead_letter_validate = beanstalkd_dlq_validate,
    .dlq = &beanstalkd_dlq,
};
