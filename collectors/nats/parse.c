/* nats/parse.c: the pure part of `kind: nats` (nats.h): one page of nats-server's /jsz document
 * into series, and the retry horizon of a consumer. No I/O: tests/unit/check_nats.c feeds it a
 * reply recorded from nats-server 2.9.10 (tests/fixtures/nats/). */
#include "nats/nats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "alloc.h"

#define NS 1e9
#define GLOBAL_ACCOUNT "$G" /* the account of a server without accounts configured */

double nats_retry_horizon(double ack_wait, long long max_deliver, const double *backoff, size_t n)
{
    if (max_deliver <= 0)
        return -1;
    if (n == 0)
        return ack_wait * (double)max_deliver;
    double sum = 0;
    for (long long k = 1; k <= max_deliver; k++)
        sum += backoff[(size_t)(k - 1) < n ? (size_t)(k - 1) : n - 1];
    return sum;
}

static const struct nats_stream_spec *find_spec(const struct nats_filter *f, const char *queue)
{
    for (size_t i = 0; i < f->nspecs; i++)
        if (strcmp(f->specs[i].name, queue) == 0)
            return &f->specs[i];
    return NULL;
}

static int wants_consumer(const struct nats_stream_spec *sp, const char *name)
{
    if (!sp || !sp->consumers)
        return 1;
    for (size_t i = 0; i < sp->nconsumers; i++)
        if (strcmp(sp->consumers[i], name) == 0)
            return 1;
    return 0;
}

static double age_of(double now, double then)
{
    return now > then ? now - then : 0.0;
}

/* state.messages and, when there are messages, the age of the first one (-1 when unknown). */
static int stream_state(const json_t *stream, const char *ctx, double now, double *messages,
                        double *oldest_age, struct err *e)
{
    char path[512], tspath[512];
    json_t *state;
    const char *first_ts = NULL;
    json_path_key(path, sizeof path, ctx, "state");
    if (json_need_object(stream, ctx, "state", &state, e) ||
        json_need_number(state, path, "messages", messages, e) ||
        json_get_string(state, path, "first_ts", &first_ts, e) < 0)
        return -1;
    *oldest_age = *messages > 0 ? -1.0 : 0.0;
    if (*messages > 0 && first_ts) {
        double ts;
        if (json_parse_rfc3339(first_ts, &ts)) {
            json_path_key(tspath, sizeof tspath, path, "first_ts");
            return err_set(e, ERR_PROTOCOL, "%s: want an RFC 3339 time, got \"%.64s\"", tspath,
                           first_ts);
        }
        *oldest_age = age_of(now, ts);
    }
    return 0;
}

static int find_stream(const json_t *streams, const char *name, size_t *index)
{
    size_t i;
    json_t *s;
    json_array_foreach(streams, i, s)
    {
        json_t *n = json_is_object(s) ? json_object_get(s, "name") : NULL;
        if (json_is_string(n) && strcmp(json_string_value(n), name) == 0) {
            *index = i;
            return 1;
        }
    }
    return 0;
}

int nats_consumer_clients(const json_t *cons, const char *ctx, const json_t *cfg,
                          const char *cfgpath, double now, double window, double *out,
                          struct err *e)
{
    const char *deliver = NULL, *last = NULL;
    int bound = 0;
    double waiting = 0, t;
    json_t *delivered = NULL;
    char dpath[512], lpath[512];
    *out = 0;
    if (json_get_string(cfg, cfgpath, "deliver_subject", &deliver, e) < 0)
        return -1;
    if (deliver && *deliver) { /* push: the server knows only whether anyone listens */
        if (json_get_bool(cons, ctx, "push_bound", &bound, e) < 0)
            return -1;
        *out = bound ? 1 : 0;
        return 0;
    }
    json_path_key(dpath, sizeof dpath, ctx, "delivered");
    if (json_get_number(cons, ctx, "num_waiting", &waiting, e) < 0 ||
        json_get_object(cons, ctx, "delivered", &delivered, e) < 0 ||
        (delivered && json_get_string(delivered, dpath, "last_active", &last, e) < 0))
        return -1;
    if (waiting > 0) {
        *out = waiting;
        return 0;
    }
    if (!last)
        return 0; /* never delivered: no client has pulled since it was made */
    if (json_parse_rfc3339(last, &t)) {
        json_path_key(lpath, sizeof lpath, dpath, "last_active");
        return err_set(e, ERR_PROTOCOL, "%s: want an RFC 3339 time, got \"%.64s\"", lpath, last);
    }
    *out = now - t <= window ? 1 : 0;
    return 0;
}

static int consumer_series(const json_t *cons, const char *ctx, const char *queue,
                           const struct nats_stream_spec *sp, const struct nats_filter *f,
                           double now, struct metric_set *out, struct nats_page *pg, struct err *e)
{
    const struct exclude *ex = f->exclude_consumers;
    char cfgpath[512], bopath[512], itempath[512];
    const char *name, *durable = NULL, *ack_policy = NULL;
    json_t *cfg, *backoff = NULL;
    double pending, ack_pending, redelivered, ack_wait = -1, max_deliver = 0, clients;
    if (json_need_string(cons, ctx, "name", &name, e) ||
        json_need_object(cons, ctx, "config", &cfg, e))
        return -1;
    json_path_key(cfgpath, sizeof cfgpath, ctx, "config");
    if (json_get_string(cfg, cfgpath, "durable_name", &durable, e) < 0)
        return -1;
    /* Ephemeral consumers come and go with their clients under random names: following them
     * would only make series that vanish. */
    if (!durable || !*durable || !wants_consumer(sp, name))
        return 0;
    if (ex && (!sp || !sp->consumers) && exclude_match(ex, name)) { /* listed ones stay */
        pg->excluded_consumers++;
        return 0;
    }
    if (json_need_number(cons, ctx, "num_pending", &pending, e) ||
        json_need_number(cons, ctx, "num_ack_pending", &ack_pending, e) ||
        json_need_number(cons, ctx, "num_redelivered", &redelivered, e) ||
        json_get_string(cfg, cfgpath, "ack_policy", &ack_policy, e) < 0 ||
        json_get_number(cfg, cfgpath, "ack_wait", &ack_wait, e) < 0 ||
        json_get_number(cfg, cfgpath, "max_deliver", &max_deliver, e) < 0 ||
        json_get_array(cfg, cfgpath, "backoff", &backoff, e) < 0 ||
        nats_consumer_clients(cons, ctx, cfg, cfgpath, now,
                              f->active_window > 0 ? f->active_window : NATS_ACTIVE_WINDOW,
                              &clients, e))
        return -1;

    size_t nb = backoff ? json_array_size(backoff) : 0;
    double *bo = nb ? xcalloc(nb, sizeof *bo) : NULL;
    json_path_key(bopath, sizeof bopath, cfgpath, "backoff");
    for (size_t i = 0; i < nb; i++) {
        json_t *v = json_array_get(backoff, i);
        if (!json_is_number(v) || json_number_value(v) <= 0) {
            json_path_index(itempath, sizeof itempath, bopath, i);
            free(bo);
            return err_set(e, ERR_PROTOCOL, "%s: want a duration in nanoseconds above 0, got %s",
                           itempath, json_type_word(v));
        }
        bo[i] = json_number_value(v) / NS;
    }

    metric_set_add(out, "qrel_queue_messages", pending, "queue", queue, "group", name, "state",
                   "ready", NULL);
    metric_set_add(out, "qrel_queue_messages", ack_pending, "queue", queue, "group", name, "state",
                   "in_flight", NULL);
    metric_set_add(out, "qrel_messages_redelivered", redelivered, "queue", queue, "group", name,
                   NULL);
    metric_set_add(out, "qrel_queue_consumers", clients, "queue", queue, "group", name, NULL);
    /* With ack_policy none a delivery is final: there is no lease and no redelivery. */
    int leased = ack_wait > 0 && !(ack_policy && strcmp(ack_policy, "none") == 0);
    if (leased)
        metric_set_add(out, "qrel_lease_timeout_seconds", ack_wait / NS, "queue", queue, "group",
                       name, NULL);
    if (leased && max_deliver > 0) {
        metric_set_add(out, "qrel_max_deliveries", max_deliver, "queue", queue, "group", name,
                       NULL);
        metric_set_add(out, "qrel_retry_horizon_seconds",
                       nats_retry_horizon(ack_wait / NS, (long long)max_deliver, bo, nb), "queue",
                       queue, "group", name, NULL);
    }
    free(bo);
    pg->consumers++;
    return 0;
}

/* Stream j of the list streams (whose path is spath) and its consumers. */
/* Seconds a stream keeps a message: its config's max_age (nanoseconds), +Inf when 0 or absent
 * (no age limit). */
static int stream_retention(const json_t *stream, const char *ctx, double *out, struct err *e)
{
    char cfgpath[512];
    json_t *cfg;
    double ns = 0;
    json_path_key(cfgpath, sizeof cfgpath, ctx, "config");
    if (json_need_object(stream, ctx, "config", &cfg, e) ||
        json_get_number(cfg, cfgpath, "max_age", &ns, e) < 0)
        return -1;
    *out = ns > 0 ? ns / NS : INFINITY;
    return 0;
}

static int stream_series(const json_t *streams, const char *spath, size_t j, const char *account,
                         const struct nats_filter *f, double now, struct metric_set *out,
                         struct nats_page *pg, struct err *e)
{
    const json_t *stream = json_array_get(streams, j);
    char ctx[300], cfgpath[512], queue[512], cpath[512], ipath[512];
    json_path_index(ctx, sizeof ctx, spath, j);
    const char *name, *retention = NULL;
    json_t *cfg, *consumers = NULL;
    double dup_window = 0, messages, oldest;
    if (json_expect_object(stream, ctx, e) || json_need_string(stream, ctx, "name", &name, e))
        return -1;
    if (f->account || strcmp(account, GLOBAL_ACCOUNT) == 0)
        snprintf(queue, sizeof queue, "%s", name);
    else
        snprintf(queue, sizeof queue, "%s/%s", account, name);
    const struct nats_stream_spec *sp = find_spec(f, queue);
    if (f->nspecs && !sp)
        return 0;
    if (f->exclude && exclude_match(f->exclude, queue)) {
        pg->excluded_streams++;
        return 0;
    }

    json_path_key(cfgpath, sizeof cfgpath, ctx, "config");
    if (json_need_object(stream, ctx, "config", &cfg, e) ||
        json_get_string(cfg, cfgpath, "retention", &retention, e) < 0 ||
        json_get_number(cfg, cfgpath, "duplicate_window", &dup_window, e) < 0 ||
        stream_state(stream, ctx, now, &messages, &oldest, e))
        return -1;
    pg->streams++;

    if (dup_window > 0)
        metric_set_add(out, "qrel_dedup_window_seconds", dup_window / NS, "queue", queue, NULL);
    /* A work-queue stream deletes a message when it is acknowledged, an interest stream when
     * every consumer has acknowledged it: either way its first message is the oldest one not
     * yet acknowledged. A limits stream keeps acknowledged messages, so its first_ts says
     * nothing about the consumers. */
    if (retention && (strcmp(retention, "workqueue") == 0 || strcmp(retention, "interest") == 0) &&
        oldest >= 0)
        metric_set_add(out, "qrel_queue_oldest_message_age_seconds", oldest, "queue", queue, NULL);

    /* The retentions the dead_letters_expire_unread rule compares: the stream's where it has an
     * age limit or a dead-letter stream, not one +Inf per stream. */
    double keep;
    size_t dk = 0;
    int has_dls = sp && sp->dead_letter_stream && find_stream(streams, sp->dead_letter_stream, &dk);
    if (stream_retention(stream, ctx, &keep, e))
        return -1;
    if (isfinite(keep) || has_dls)
        metric_set_add(out, "qrel_queue_retention_seconds", keep, "queue", queue, NULL);

    if (has_dls) {
        char dpath[300];
        double dmessages, dage, dkeep;
        json_path_index(dpath, sizeof dpath, spath, dk);
        if (stream_state(json_array_get(streams, dk), dpath, now, &dmessages, &dage, e) ||
            stream_retention(json_array_get(streams, dk), dpath, &dkeep, e))
            return -1;
        metric_set_add(out, "qrel_dead_letter_retention_seconds", dkeep, "queue", queue,
                       "dead_letter_queue", sp->dead_letter_stream, NULL);
        metric_set_add(out, "qrel_dead_letter_messages", dmessages, "queue", queue,
                       "dead_letter_queue", sp->dead_letter_stream, NULL);
        if (dmessages > 0 && dage >= 0)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", dage, "queue", queue,
                           "dead_letter_queue", sp->dead_letter_stream, NULL);
    }

    if (json_get_array(stream, ctx, "consumer_detail", &consumers, e) < 0)
        return -1;
    json_path_key(cpath, sizeof cpath, ctx, "consumer_detail");
    for (size_t k = 0; consumers && k < json_array_size(consumers); k++) {
        const json_t *c = json_array_get(consumers, k);
        json_path_index(ipath, sizeof ipath, cpath, k);
        if (json_expect_object(c, ipath, e) ||
            consumer_series(c, ipath, queue, sp, f, now, out, pg, e))
            return -1;
    }
    return 0;
}

void nats_page_free(struct nats_page *pg)
{
    for (size_t i = 0; i < pg->naccounts; i++)
        free(pg->accounts[i]);
    free(pg->accounts);
    pg->accounts = NULL;
    pg->naccounts = 0;
}

static int skipped(const struct nats_filter *f, const char *account)
{
    if (f->only_account && strcmp(f->only_account, account) != 0)
        return 1;
    for (size_t i = 0; i < f->nskip; i++)
        if (strcmp(f->skip_accounts[i], account) == 0)
            return 1;
    return 0;
}

int nats_jsz_collect(const json_t *doc, const struct nats_filter *f, double local_now,
                     struct metric_set *out, struct nats_page *pg, struct err *e)
{
    memset(pg, 0, sizeof *pg);
    pg->accounts_total = -1;
    const char *now_s = NULL;
    double now = local_now;
    int disabled = 0;
    json_t *accounts = NULL;
    if (json_expect_object(doc, "$", e) || json_get_bool(doc, "$", "disabled", &disabled, e) < 0)
        return -1;
    if (disabled)
        return err_set(e, ERR_QUERY, "JetStream is disabled on this server (start it with -js)");
    if (json_get_string(doc, "$", "now", &now_s, e) < 0 ||
        json_get_number(doc, "$", "accounts", &pg->accounts_total, e) < 0 ||
        json_get_array(doc, "$", "account_details", &accounts, e) < 0)
        return -1;
    if (now_s && json_parse_rfc3339(now_s, &now))
        return err_set(e, ERR_PROTOCOL, "$.now: want an RFC 3339 time, got \"%.64s\"", now_s);

    char apath[128], spath[256];
    for (size_t i = 0; accounts && i < json_array_size(accounts); i++) {
        const json_t *acc = json_array_get(accounts, i);
        const char *account;
        json_t *streams = NULL;
        json_path_index(apath, sizeof apath, "$.account_details", i);
        if (json_expect_object(acc, apath, e) ||
            json_need_string(acc, apath, "name", &account, e) ||
            json_get_array(acc, apath, "stream_detail", &streams, e) < 0)
            return -1;
        pg->accounts_in_page++;
        if (skipped(f, account))
            continue;
        pg->accounts = xrealloc(pg->accounts, (pg->naccounts + 1) * sizeof *pg->accounts);
        pg->accounts[pg->naccounts++] = xstrdup(account);
        json_path_key(spath, sizeof spath, apath, "stream_detail");
        for (size_t j = 0; streams && j < json_array_size(streams); j++)
            if (stream_series(streams, spath, j, account, f, now, out, pg, e))
                return -1;
    }
    return 0;
}
