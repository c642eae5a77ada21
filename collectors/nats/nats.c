/* nats.c: `kind: nats`, the reliability of NATS JetStream streams and durable consumers.
 *
 * A JetStream consumer is a lease-based reader of a stream: messages it has not delivered yet are
 * pending (num_pending), delivered and unacknowledged ones are ack-pending (num_ack_pending)
 * until ack_wait expires and they are delivered again, up to max_deliver times (with a backoff
 * list instead of a single ack_wait when one is set). The server's monitoring endpoint /jsz
 * reports all of that, configuration included, for every stream and consumer in one document,
 * so a scrape is one GET per page of accounts and needs no NATS client connection and no
 * credentials on the broker. Ages are computed against the server's own "now" field, because
 * first_ts carries the server's clock. */
#include "nats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/http.h"
#include "common/json_id.h"
#include "common/json.h"
#include "common/secret.h"
#include "config.h"
#include "log.h"
#include "alloc.h"
#include "buf.h"
#include "deadline.h"
#include "dlq_kind.h"
#include "nats/client.h"
#include "nats/dlq.h"

#define DEFAULT_PAGE_SIZE 1024

/* ---- configuration ---- */

static void destroy(struct collector *c)
{
    struct nats_state *st = c->priv;
    http_client_free(st->client);
    http_config_free(&st->http);
    for (size_t i = 0; i < st->nspecs; i++) {
        free(st->specs[i].name);
        cfg_strv_free(st->specs[i].consumers);
        free(st->specs[i].dead_letter_stream);
    }
    free(st->specs);
    exclude_free(&st->exclude);
    exclude_free(&st->exclude_consumers);
    free(st->url);
    free(st->account);
    free(st->username);
    secret_free(st->password);
    free(st->nats_url);
    free(st->nats_username);
    secret_free(st->nats_password);
    secret_free(st->nats_token);
    free(st->nats_creds_file);
}

static int configure_stream(struct collector *c, struct nats_state *st, struct cfg_node *item,
                            struct err *e)
{
    if (cfg_expect(item, CFG_MAP, "each entry of streams", e))
        return -1;
    st->specs = xrealloc(st->specs, (st->nspecs + 1) * sizeof *st->specs);
    struct nats_stream_spec *sp = &st->specs[st->nspecs++];
    memset(sp, 0, sizeof *sp);
    if (cfg_get_nonempty(item, "name", &sp->name, e) ||
        cfg_get_strlist(item, "consumers", &sp->consumers, &sp->nconsumers, e) ||
        cfg_get_nonempty(item, "dead_letter_stream", &sp->dead_letter_stream, e))
        return -1;
    char where[300];
    if (sp->name)
        snprintf(where, sizeof where, "stream \"%s\" of source \"%s\"", sp->name, c->name);
    else
        snprintf(where, sizeof where, "a stream of source \"%s\"", c->name);
    if (cfg_finish(item, where, e))
        return -1;
    if (!sp->name)
        return cfg_error(e, item, "streams: want a name in each entry");
    if (sp->consumers && sp->nconsumers == 0)
        return cfg_error(e, cfg_at(item, "consumers"),
                         "consumers: want at least one consumer name (leave consumers out for "
                         "every durable consumer)");
    for (size_t i = 0; i + 1 < st->nspecs; i++)
        if (strcmp(st->specs[i].name, sp->name) == 0)
            return cfg_error(e, cfg_at(item, "name"), "name: \"%s\" is listed twice", sp->name);
    return 0;
}

/* The client port `qrel dlq` connects to, and one way to log in there at most. */
static int check_client(const struct nats_state *st, struct cfg_node *map, struct err *e)
{
    const char *u = st->nats_url;
    if (u && strncmp(u, "nats://", 7) != 0 && strncmp(u, "tls://", 6) != 0)
        return cfg_error(e, cfg_at(map, "nats_url"),
                         "nats_url: want nats://HOST:PORT or tls://HOST:PORT (the client port, "
                         "like nats://127.0.0.1:4222)");
    if (u && strchr(u, '@'))
        return cfg_error(e, cfg_at(map, "nats_url"),
                         "nats_url: credentials in the URL are refused: use nats_username with "
                         "nats_password_file, nats_token_file or nats_creds_file");
    if (!st->nats_username != !st->nats_password)
        return cfg_error(e, cfg_at(map, st->nats_username ? "nats_username" : "nats_password_file"),
                         "%s: want nats_username and nats_password_file (or nats_password_env) "
                         "together",
                         st->nats_username ? "nats_username" : "nats_password");
    if (!!st->nats_username + !!st->nats_token + !!st->nats_creds_file > 1)
        return cfg_error(e, map,
                         "nats_username, nats_token_file and nats_creds_file: want one way to "
                         "log in at most");
    if (!u && (st->nats_username || st->nats_token || st->nats_creds_file))
        return cfg_error(e, map, "nats_url: want it with the nats_* login keys");
    if (st->http.tls && st->http.tls->key_password && u && strncmp(u, "tls://", 6) == 0)
        return cfg_error(e, cfg_at(map, "tls_config"),
                         "tls_config: the NATS client cannot use an encrypted key_file "
                         "(key_password_file) on nats_url");
    return 0;
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct nats_state *st = c->priv;
    /* every key read first, so a misspelt one is reported with the known keys */
    struct cfg_node *streams = NULL;
    if (http_base_url(map, "url", NULL, &st->url, e) ||
        cfg_get_nonempty(map, "account", &st->account, e) ||
        cfg_get_nonempty(map, "username", &st->username, e) ||
        secret_get(map, "password", 0, &st->password, e) ||
        cfg_get_int(map, "page_size", DEFAULT_PAGE_SIZE, 1, 100000, &st->page_size, e) ||
        http_config_parse(map, &st->http, e) ||
        cfg_get_node(map, "streams", CFG_SEQ, &streams, e) ||
        exclude_read(&st->exclude, map, "exclude", NULL, e) ||
        exclude_read(&st->exclude_consumers, map, "exclude_consumers", NULL, e) ||
        cfg_get_nonempty(map, "nats_url", &st->nats_url, e) ||
        cfg_get_nonempty(map, "nats_username", &st->nats_username, e) ||
        secret_get(map, "nats_password", 0, &st->nats_password, e) ||
        secret_get(map, "nats_token", 0, &st->nats_token, e) ||
        cfg_get_nonempty(map, "nats_creds_file", &st->nats_creds_file, e) ||
        cfg_get_positive_duration(map, "consumer_active_window", NATS_ACTIVE_WINDOW,
                                  &st->active_window, e) ||
        collector_finish(c, map, e) || exclude_check(&st->exclude, map, e) ||
        exclude_check(&st->exclude_consumers, map, e))
        return -1;
    if (!st->url)
        return cfg_error(e, map, "url: want the monitoring URL, like http://127.0.0.1:8222");
    if (!st->username != !st->password)
        return cfg_error(e, cfg_at(map, st->username ? "username" : "password_file"),
                         "%s: want username and password_file (or password_env) together, for a "
                         "proxy in front of the monitoring port",
                         st->username ? "username" : "password");
    if (check_client(st, map, e))
        return -1;
    if (streams && streams->n == 0)
        return cfg_error(e, streams,
                         "streams: want at least one {name: ...} (leave streams out for every "
                         "stream)");
    for (size_t i = 0; streams && i < streams->n; i++)
        if (configure_stream(c, st, streams->items[i], e))
            return -1;
    return 0;
}

/* ---- collection ---- */

/* GETs path (with its query) from the monitoring port and parses the JSON; NULL on failure. */
static json_t *get_json(struct nats_state *st, const struct deadline *dl, const char *what,
                        const char *path_query, struct err *e)
{
    struct buf url;
    buf_init(&url);
    buf_printf(&url, "%s%s", st->url, path_query);
    struct http_request req = {
        .method = "GET",
        .url = url.data,
        .auth = st->username ? HTTP_AUTH_BASIC : HTTP_AUTH_NONE,
        .username = st->username,
        .password = st->password,
    };
    struct http_response resp = {0};
    int rc = http_do(st->client, &req, dl, &resp, e);
    buf_free(&url);
    if (rc)
        return NULL;
    json_t *doc = json_parse_body(resp.body, resp.len, what, e);
    http_response_free(&resp);
    return doc;
}

struct scrape {
    char **done; /* accounts collected so far */
    size_t ndone;
    size_t streams, consumers, requests;
    size_t excluded_streams, excluded_consumers;
};

/* One /jsz document: all accounts (account NULL) or one. */
static int collect_jsz(struct nats_state *st, const struct deadline *dl, const char *account,
                       struct scrape *sc, struct metric_set *out, struct nats_page *pg,
                       struct err *e)
{
    struct buf q;
    buf_init(&q);
    buf_puts(&q, "/jsz?streams=true&consumers=true&config=true");
    if (account) {
        char *acc = http_escape(account);
        buf_printf(&q, "&acc=%s", acc);
        free(acc);
    } else {
        buf_printf(&q, "&limit=%lld", st->page_size);
    }
    sc->requests++;
    json_t *doc = get_json(st, dl, "GET /jsz", q.data, e);
    buf_free(&q);
    if (!doc)
        return -1;
    struct nats_filter f = {
        .account = st->account,
        .only_account = account,
        .skip_accounts = (const char *const *)sc->done,
        .nskip = sc->ndone,
        .specs = st->specs,
        .nspecs = st->nspecs,
        .exclude = &st->exclude,
        .exclude_consumers = &st->exclude_consumers,
        .active_window = st->active_window,
    };
    int rc = nats_jsz_collect(doc, &f, deadline_wall_now(), out, pg, e);
    json_decref(doc);
    if (rc) {
        nats_page_free(pg);
        return err_prefix(e, "GET /jsz");
    }
    sc->streams += pg->streams;
    sc->consumers += pg->consumers;
    sc->excluded_streams += pg->excluded_streams;
    sc->excluded_consumers += pg->excluded_consumers;
    sc->done = xrealloc(sc->done, (sc->ndone + pg->naccounts) * sizeof *sc->done);
    for (size_t i = 0; i < pg->naccounts; i++)
        sc->done[sc->ndone++] = pg->accounts[i];
    free(pg->accounts);
    pg->accounts = NULL;
    pg->naccounts = 0;
    return 0;
}

/* More accounts than one page holds: nats-server 2.9 pages /jsz over accounts in an order that
 * changes from request to request (an offset can show one account twice and miss another), so
 * the rest are asked for one by one, by the names /accountz lists. An account without JetStream
 * ($G when accounts are configured) costs a request that adds nothing. */
static int collect_rest(struct nats_state *st, const struct deadline *dl, struct scrape *sc,
                        struct metric_set *out, struct err *e)
{
    sc->requests++;
    json_t *doc = get_json(st, dl, "GET /accountz", "/accountz", e), *names;
    if (!doc)
        return -1;
    int rc = -1;
    const char *sys = NULL;
    if (json_expect_object(doc, "$", e) || json_need_array(doc, "$", "accounts", &names, e) ||
        json_get_string(doc, "$", "system_account", &sys, e) < 0)
        goto out;
    for (size_t i = 0; i < json_array_size(names); i++) {
        const json_t *v = json_array_get(names, i);
        char path[64];
        if (!json_is_string(v)) {
            json_path_index(path, sizeof path, "$.accounts", i);
            err_set(e, ERR_PROTOCOL, "GET /accountz: %s: want a string, got %s", path,
                    json_type_word(v));
            goto out;
        }
        const char *name = json_string_value(v);
        /* The system account holds the server's own traffic, never JetStream streams. */
        int seen = sys && strcmp(sys, name) == 0;
        for (size_t k = 0; k < sc->ndone && !seen; k++)
            seen = strcmp(sc->done[k], name) == 0;
        if (seen)
            continue;
        struct nats_page pg;
        if (collect_jsz(st, dl, name, sc, out, &pg, e))
            goto out;
    }
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct nats_state *st = c->priv;
    if (!st->client)
        st->client = http_client_new(c->name, &st->http);
    struct scrape sc = {0};
    struct nats_page pg;
    int rc = collect_jsz(st, dl, st->account, &sc, out, &pg, e);
    if (rc == 0 && !st->account && pg.accounts_total > (double)pg.accounts_in_page)
        rc = collect_rest(st, dl, &sc, out, e);
    if (rc == 0 && exclude_any(&st->exclude))
        metric_set_add(out, "qrel_excluded_objects", (double)sc.excluded_streams, "object",
                       "stream", NULL);
    if (rc == 0 && exclude_any(&st->exclude_consumers))
        metric_set_add(out, "qrel_excluded_objects", (double)sc.excluded_consumers, "object",
                       "consumer", NULL);
    if (rc == 0 && log_enabled(LOG_DEBUG)) {
        char s[32], k[32], r[32];
        snprintf(s, sizeof s, "%zu", sc.streams);
        snprintf(k, sizeof k, "%zu", sc.consumers);
        snprintf(r, sizeof r, "%zu", sc.requests);
        log_kv(LOG_DEBUG, "nats collection done", "source", c->name, "streams", s, "consumers", k,
               "requests", r, NULL);
    }
    for (size_t i = 0; i < sc.ndone; i++)
        free(sc.done[i]);
    free(sc.done);
    return rc;
}

/* A consumer at max_deliver gives a message up: it is delivered no more, and only an advisory says
 * so, which nobody reads unless a stream captures it. */
static const struct audit_hint hints[] = {
    {"delivery_limit_drops",
     "capture the consumers' MAX_DELIVERIES advisories ($JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
     ".<stream>.<consumer>) in a stream and name it dead_letter_stream, or raise max_deliver"},
    /* A durable consumer outlives its clients: nothing is bound to it or pulls from it. */
    {"backlog_without_consumer", "start the clients of this durable consumer (a subscriber on a "
                                 "push consumer's deliver subject, or workers that fetch from a "
                                 "pull consumer), or delete the consumer if nothing should read "
                                 "it"},
    {NULL, NULL}};

/* A dead_letters entry for `qrel dlq` (at load, no I/O): the client port is needed, and the
 * queue must be a stream the source lists with a dead_letter_stream. */
static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    struct nats_state *st = c->priv;
    char why[300];
    if (json_id_field_check(id_field, "header:", why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!st->nats_url)
        return cfg_error(e, cfg_at(entry, "source"),
                         "source: \"%s\" has no nats_url, the client port qrel dlq reads "
                         "JetStream's dead letters through",
                         c->name);
    for (size_t i = 0; i < st->nspecs; i++)
        if (strcmp(st->specs[i].name, queue) == 0 && st->specs[i].dead_letter_stream)
            return 0;
    return cfg_error(e, cfg_at(entry, "queue"),
                     "queue: source \"%s\" lists no stream \"%s\" with a dead_letter_stream",
                     c->name, queue);
}

const struct collector_kind nats_kind = {.name = "nats",
                                         .audit_hints = hints,
                                         .state_size = sizeof(struct nats_state),
                                         .configure = configure,
                                         .collect = collect,
                                         .destroy = destroy,
                                         .dead_letter_validate = dead_letter_validate,
                                         .dead_letter_ids = dlq_dead_letter_ids,
                                         .dlq = &nats_dlq};
