/* sqs.c: `kind: sqs`, the reliability facts of Amazon SQS queues.
 *
 * SQS speaks AWS JSON 1.0 (POST /, X-Amz-Target: AmazonSQS.<Action>, SigV4-signed by libcurl).
 * A scrape resolves the queues (configured URLs as they are, names through GetQueueUrl once and
 * then from a cache, prefixes through paginated ListQueues), asks GetQueueAttributes All of each,
 * and reads the dead-letter queue named by each RedrivePolicy: its depth comes from the
 * attributes already fetched when the DLQ is itself selected, else from one GetQueueAttributes
 * on its URL (GetQueueUrl cached), once per scrape however many queues share it. Optionally
 * CloudWatch adds the age of the oldest message, which the SQS API does not have
 * (sqs/cloudwatch.c).
 *
 * Only read-only actions are called. ReceiveMessage never is: receiving changes the queue (it
 * hides the message and counts a receive towards maxReceiveCount). `qrel dlq`, which does
 * receive from a dead-letter queue (and writes on replay), is sqs/dlq.c: it goes through the
 * request path and queue lookups exported here (sqs.h). Calls run one after another
 * under the collection's deadline; the per-queue calls are cheap and a scrape of many queues is
 * bounded by the source's timeout like any other. */
#include "sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/json.h"
#include "common/live_check.h"
#include "common/secret.h"
#include "config.h"
#include "log.h"
#include "sqs/dlq.h"
#include "alloc.h"
#include "deadline.h"

#define DEFAULT_MAX_QUEUES 1000
#define DEFAULT_CW_LOOKBACK 900.0
#define LIST_PAGE 1000
#define QUEUE_NAME_MAX 80
#define DEFAULT_DLQ_VISIBILITY 30.0
#define MAX_VISIBILITY 43200.0 /* SQS's own limit: 12 hours */

/* ------------------------------------------------------------------ requests */

int sqs_aws_call(const struct sqs_aws *aws, const char *endpoint, const char *service,
                 const char *target, const char *what, const char *body, const struct deadline *dl,
                 json_t **doc, int *missing_queue, struct err *e)
{
    *doc = NULL;
    if (missing_queue)
        *missing_queue = 0;
    char target_hdr[128], sigv4[160];
    snprintf(target_hdr, sizeof target_hdr, "X-Amz-Target: %s", target);
    snprintf(sigv4, sizeof sigv4, "aws:amz:%s:%s", aws->region, service);
    const char *headers[] = {"Content-Type: application/x-amz-json-1.0", target_hdr,
                             aws->token_header, NULL};
    char *url = xasprintf("%s/", endpoint); /* the base URL has no trailing slash */
    struct http_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .auth = HTTP_AUTH_SIGV4,
        .username = aws->access_key_id,
        .password = aws->secret_access_key,
        .sigv4 = sigv4,
        .accept_any_status = 1,
    };
    struct http_response resp;
    int failed = http_do(aws->http, &req, dl, &resp, e);
    free(url);
    if (failed)
        return err_prefix(e, "%s", what);
    int rc = -1;
    if (resp.status < 200 || resp.status > 299) {
        sqs_error_from_response(resp.status, resp.body, resp.len, what, missing_queue, e);
        goto out;
    }
    *doc = json_parse_body(resp.body, resp.len, what, e);
    if (*doc)
        rc = 0;
out:
    http_response_free(&resp);
    return rc;
}

/* ------------------------------------------------------------------ configuration */

struct named { /* a queue configured by name, and its URL once GetQueueUrl answered */
    char *name;
    char *url;
};

struct dlq_url { /* GetQueueUrl cache of dead-letter queues, by ARN */
    char *arn;
    char *url;
};

struct state {
    char *region;
    char *endpoint;
    char *cw_endpoint;
    char *access_key_id;
    char *secret_access_key;
    char *token_header;
    struct http_config http_cfg;
    struct http_client *http;
    char **urls; /* queues configured by URL */
    size_t nurls;
    struct named *names; /* queues configured by name */
    size_t nnames;
    char *prefix;
    int list_all; /* neither queues nor queue_name_prefix: every queue of the account */
    long long max_queues;
    int cloudwatch;
    double cw_lookback;
    struct dlq_url *dlq_urls;
    size_t ndlq_urls;
    int warned_cap;
    double dlq_visibility;     /* the VisibilityTimeout `qrel dlq` reads dead letters with */
    char **dead_letter_queues; /* named by dead_letters entries, for check() (live_check.h) */
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    http_client_free(st->http);
    http_config_free(&st->http_cfg);
    free(st->region);
    free(st->endpoint);
    free(st->cw_endpoint);
    secret_free(st->access_key_id);
    secret_free(st->secret_access_key);
    secret_free(st->token_header);
    for (size_t i = 0; i < st->nurls; i++)
        free(st->urls[i]);
    free(st->urls);
    for (size_t i = 0; i < st->nnames; i++) {
        free(st->names[i].name);
        free(st->names[i].url);
    }
    free(st->names);
    free(st->prefix);
    for (size_t i = 0; i < st->ndlq_urls; i++) {
        free(st->dlq_urls[i].arn);
        free(st->dlq_urls[i].url);
    }
    free(st->dlq_urls);
    cfg_strv_free(st->dead_letter_queues);
}

/* The public endpoint of service in region (China's regions live under amazonaws.com.cn). */
static char *default_endpoint(const char *service, const char *region)
{
    const char *suffix = strncmp(region, "cn-", 3) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
    return xasprintf("https://%s.%s.%s", service, region, suffix);
}

static int valid_region(const char *r)
{
    if (!*r || strlen(r) > 32)
        return 0;
    for (const char *p = r; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return 0;
    return 1;
}

static int is_url(const char *s)
{
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

/* What the credential keys say, read before any of them is judged. */
struct creds {
    char *inline_id; /* access_key_id */
    char *id_ref;    /* access_key_id_file / _env */
    char *secret;    /* secret_access_key_file / _env */
    char *token;     /* session_token_file / _env */
};

static void creds_free(struct creds *k)
{
    free(k->inline_id);
    secret_free(k->id_ref);
    secret_free(k->secret);
    secret_free(k->token);
}

static int read_creds(struct cfg_node *map, struct creds *k, struct err *e)
{
    return cfg_get_str(map, "access_key_id", 0, &k->inline_id, e) ||
                   secret_get(map, "access_key_id", 0, &k->id_ref, e) ||
                   secret_get(map, "secret_access_key", 0, &k->secret, e) ||
                   secret_get(map, "session_token", 0, &k->token, e)
               ? -1
               : 0;
}

/* Credentials: static keys from *_file / *_env keys, or else the standard AWS_* variables. The
 * session token falls back to AWS_SESSION_TOKEN only when the secret came from
 * AWS_SECRET_ACCESS_KEY too: a token belongs to the key it was issued with. Takes what k holds. */
static int judge_credentials(struct state *st, struct cfg_node *map, struct creds *k, struct err *e)
{
    if (k->inline_id && k->id_ref)
        return cfg_error(e, cfg_at(map, "access_key_id"),
                         "access_key_id: want one of access_key_id, access_key_id_file and "
                         "access_key_id_env");
    st->access_key_id = k->inline_id ? k->inline_id : k->id_ref;
    k->inline_id = k->id_ref = NULL;
    st->secret_access_key = k->secret;
    k->secret = NULL;
    int secret_from_env = 0;
    if (!st->secret_access_key) {
        const char *v = getenv("AWS_SECRET_ACCESS_KEY");
        if (v && *v) {
            st->secret_access_key = xstrdup(v);
            secret_from_env = 1;
        }
    }
    if (!st->access_key_id) {
        const char *v = getenv("AWS_ACCESS_KEY_ID");
        if (v && *v)
            st->access_key_id = xstrdup(v);
    }
    if (!k->token && secret_from_env) {
        const char *v = getenv("AWS_SESSION_TOKEN");
        if (v && *v)
            k->token = xstrdup(v);
    }
    if (k->token)
        st->token_header = xasprintf("X-Amz-Security-Token: %s", k->token);
    if (!st->access_key_id || !st->secret_access_key)
        return cfg_error(e, map,
                         "missing AWS credentials: set access_key_id (or access_key_id_file / "
                         "_env) and secret_access_key_file (or secret_access_key_env), or the "
                         "environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    if (!*st->access_key_id || strpbrk(st->access_key_id, ": \t\r\n"))
        return cfg_error(e, cfg_at(map, "access_key_id"),
                         "access_key_id: want a key id without spaces or ':'");
    return 0;
}

/* The queues list: names (resolved with GetQueueUrl) and URLs, each checked. Takes queues. */
static int judge_queues(struct state *st, struct cfg_node *map, char **queues, size_t nq,
                        struct err *e)
{
    struct cfg_node *qnode = cfg_at(map, "queues");
    int rc = 0;
    for (size_t i = 0; i < nq && rc == 0; i++) {
        const char *q = queues[i];
        struct cfg_node *at = qnode->kind == CFG_SEQ && i < qnode->n ? qnode->items[i] : qnode;
        int dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= strcmp(queues[j], q) == 0;
        if (dup || !*q) {
            rc = cfg_error(e, at,
                           dup ? "queues: \"%s\" is listed twice"
                               : "queues: want a queue name or URL, got \"%s\"",
                           q);
        } else if (is_url(q)) {
            char *name = NULL;
            rc = http_url_validate(q, at, "queues", e);
            if (!rc && !(name = sqs_queue_name_from_url(q)))
                rc = cfg_error(e, at, "queues: want a queue URL that ends in the queue's name");
            free(name);
            if (!rc) {
                st->urls = xrealloc(st->urls, (st->nurls + 1) * sizeof *st->urls);
                st->urls[st->nurls++] = xstrdup(q);
            }
        } else if (strlen(q) > QUEUE_NAME_MAX || strpbrk(q, "/: ")) {
            rc = cfg_error(e, at,
                           "queues: want a queue name (up to 80 letters, digits, '-' and '_', "
                           "\".fifo\" at the end) or an https:// queue URL, got \"%.100s\"",
                           q);
        } else {
            st->names = xrealloc(st->names, (st->nnames + 1) * sizeof *st->names);
            st->names[st->nnames].name = xstrdup(q);
            st->names[st->nnames++].url = NULL;
        }
    }
    cfg_strv_free(queues);
    return rc;
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    /* every key read first, so a misspelt one is reported with the known keys */
    struct creds k = {0};
    char **queues = NULL;
    size_t nq = 0;
    struct cfg_node *qlist = NULL;
    if (cfg_get_nonempty(map, "region", &st->region, e) ||
        http_base_url(map, "endpoint", NULL, &st->endpoint, e) ||
        http_base_url(map, "cloudwatch_endpoint", NULL, &st->cw_endpoint, e) ||
        read_creds(map, &k, e) || cfg_get_node(map, "queues", CFG_SEQ, &qlist, e) ||
        cfg_get_strlist(map, "queues", &queues, &nq, e) ||
        cfg_get_str(map, "queue_name_prefix", 0, &st->prefix, e) ||
        cfg_get_int(map, "max_queues", DEFAULT_MAX_QUEUES, 1, 1000000, &st->max_queues, e) ||
        cfg_get_bool(map, "cloudwatch", 0, &st->cloudwatch, e) ||
        cfg_get_positive_duration(map, "cloudwatch_lookback", DEFAULT_CW_LOOKBACK, &st->cw_lookback,
                                  e) ||
        cfg_get_positive_duration(map, "dlq_visibility_timeout", DEFAULT_DLQ_VISIBILITY,
                                  &st->dlq_visibility, e) ||
        http_config_parse(map, &st->http_cfg, e) || collector_finish(c, map, e)) {
        creds_free(&k);
        cfg_strv_free(queues);
        return -1;
    }

    if (!st->region) {
        const char *v = getenv("AWS_REGION");
        if (!v || !*v)
            v = getenv("AWS_DEFAULT_REGION");
        if (v && *v)
            st->region = xstrdup(v);
    }
    int rc = -1;
    if (!st->region) {
        cfg_error(e, map, "missing region (or the environment variable AWS_REGION)");
        goto out;
    }
    if (!valid_region(st->region)) {
        cfg_error(e, cfg_at(map, "region"),
                  "region: want a region name like \"eu-west-1\", got \"%.40s\"", st->region);
        goto out;
    }
    if (!st->endpoint)
        st->endpoint = default_endpoint("sqs", st->region);
    if (!st->cw_endpoint)
        st->cw_endpoint = default_endpoint("monitoring", st->region);
    if (judge_credentials(st, map, &k, e))
        goto out;
    int bad = judge_queues(st, map, queues, nq, e);
    queues = NULL;
    if (bad)
        goto out;
    if (qlist && nq == 0) {
        cfg_error(e, qlist,
                  "queues: want at least one queue name or URL (leave queues out for every "
                  "queue)");
        goto out;
    }
    if (st->prefix && (!*st->prefix || strlen(st->prefix) > QUEUE_NAME_MAX)) {
        cfg_error(e, cfg_at(map, "queue_name_prefix"),
                  "queue_name_prefix: want 1 to 80 characters of a queue name");
        goto out;
    }
    st->list_all = !qlist && !st->prefix;
    if (st->cw_lookback < 60) {
        cfg_error(e, cfg_at(map, "cloudwatch_lookback"),
                  "cloudwatch_lookback: want at least 1m (SQS publishes one datum a minute)");
        goto out;
    }
    if (st->dlq_visibility < 1 || st->dlq_visibility > MAX_VISIBILITY) {
        cfg_error(e, cfg_at(map, "dlq_visibility_timeout"),
                  "dlq_visibility_timeout: want 1s to 12h (SQS's VisibilityTimeout range)");
        goto out;
    }
    st->http = http_client_new(c->name, &st->http_cfg);
    rc = 0;
out:
    creds_free(&k);
    cfg_strv_free(queues);
    return rc;
}

/* ------------------------------------------------------------------ collection */

struct target {
    char *url;
    char *name;
    int have; /* GetQueueAttributes answered */
    struct sqs_attrs a;
    size_t dlq; /* index into scrape.dlqs, or NONE */
};

struct dlq {
    const char *arn;  /* owned by the first target's attributes */
    const char *name; /* likewise */
    int found;        /* its depth is known */
    double depth;
    size_t cw; /* index into the CloudWatch names, or NONE */
};

#define NONE ((size_t)-1)

struct scrape {
    struct target *t;
    size_t n, cap;
    struct dlq *d;
    size_t nd;
    unsigned calls;
    size_t missing;
};

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->t[i].url);
        free(sc->t[i].name);
        sqs_attrs_free(&sc->t[i].a);
    }
    free(sc->t);
    free(sc->d);
}

static void add_target(struct scrape *sc, const char *url)
{
    for (size_t i = 0; i < sc->n; i++)
        if (strcmp(sc->t[i].url, url) == 0)
            return;
    char *name = sqs_queue_name_from_url(url);
    if (!name)
        return;
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 16;
        sc->t = xrealloc(sc->t, sc->cap * sizeof *sc->t);
    }
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->url = xstrdup(url);
    t->name = name;
    t->dlq = NONE;
}

/* A JSON request body: {"k1": "v1", ...} from NULL-terminated pairs (a NULL value skips it). */
static char *body_of(const char *k1, const char *v1, const char *k2, const char *v2)
{
    json_t *o = json_object();
    if (k1 && v1)
        json_object_set_new(o, k1, json_string(v1));
    if (k2 && v2)
        json_object_set_new(o, k2, json_string(v2));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

int sqs_request(struct collector *c, unsigned *calls, const char *action, const char *what,
                const char *body, const struct deadline *dl, json_t **doc, int *missing,
                struct err *e)
{
    struct state *st = c->priv;
    struct sqs_aws aws = {st->http, st->region, st->access_key_id, st->secret_access_key,
                          st->token_header};
    char target[64];
    snprintf(target, sizeof target, "AmazonSQS.%s", action);
    (*calls)++;
    return sqs_aws_call(&aws, st->endpoint, "sqs", target, what, body, dl, doc, missing, e);
}

/* A call about the queue named name: sends body (freed here) as action, its reply in *doc, and
 * what (cap bytes) names the call for messages. 1; 0 when the queue does not exist; -1 + e. */
static int queue_call(struct collector *c, unsigned *calls, const char *action, const char *name,
                      char *body, const struct deadline *dl, char *what, size_t cap, json_t **doc,
                      struct err *e)
{
    snprintf(what, cap, "AmazonSQS.%s \"%s\"", action, name);
    int missing = 0;
    int rc = sqs_request(c, calls, action, what, body, dl, doc, &missing, e);
    free(body);
    if (rc)
        return missing ? 0 : -1;
    return 1;
}

int sqs_get_queue_url(struct collector *c, unsigned *calls, const char *name, const char *account,
                      const struct deadline *dl, char **url, struct err *e)
{
    char *body = body_of("QueueName", name, "QueueOwnerAWSAccountId", account);
    char what[200];
    json_t *doc = NULL;
    int rc = queue_call(c, calls, "GetQueueUrl", name, body, dl, what, sizeof what, &doc, e);
    if (rc <= 0)
        return rc;
    const char *u = NULL;
    char ctx[220];
    snprintf(ctx, sizeof ctx, "%s: $", what);
    if (json_expect_object(doc, ctx, e) || json_need_string(doc, ctx, "QueueUrl", &u, e)) {
        json_decref(doc);
        return -1;
    }
    *url = xstrdup(u);
    json_decref(doc);
    return 1;
}

static int list_queues(struct collector *c, struct scrape *sc, const struct deadline *dl,
                       struct err *e)
{
    struct state *st = c->priv;
    char *token = NULL;
    size_t listed = 0;
    int rc = -1;
    do {
        json_t *o = json_object();
        json_object_set_new(o, "MaxResults", json_integer(LIST_PAGE));
        if (st->prefix)
            json_object_set_new(o, "QueueNamePrefix", json_string(st->prefix));
        if (token)
            json_object_set_new(o, "NextToken", json_string(token));
        char *body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        free(token);
        token = NULL;
        json_t *doc = NULL;
        int r = sqs_request(c, &sc->calls, "ListQueues", "AmazonSQS.ListQueues", body, dl, &doc,
                            NULL, e);
        free(body);
        if (r)
            goto out;
        json_t *urls = NULL;
        const char *next = NULL;
        if (json_expect_object(doc, "AmazonSQS.ListQueues: $", e) ||
            json_get_array(doc, "AmazonSQS.ListQueues: $", "QueueUrls", &urls, e) < 0 ||
            json_get_string(doc, "AmazonSQS.ListQueues: $", "NextToken", &next, e) < 0) {
            json_decref(doc);
            goto out;
        }
        for (size_t i = 0; urls && i < json_array_size(urls); i++) {
            const char *u = json_string_value(json_array_get(urls, i));
            if (!u) {
                char ctx[80];
                json_path_index(ctx, sizeof ctx, "$.QueueUrls", i);
                err_set(e, ERR_PROTOCOL, "AmazonSQS.ListQueues: %s: want a string, got %s", ctx,
                        json_type_word(json_array_get(urls, i)));
                json_decref(doc);
                goto out;
            }
            if (listed >= (size_t)st->max_queues) {
                next = NULL;
                if (!st->warned_cap) {
                    char cap[32];
                    snprintf(cap, sizeof cap, "%lld", st->max_queues);
                    log_kv(LOG_WARN, "max_queues reached: further queues are not collected",
                           "source", c->name, "max_queues", cap, NULL);
                    st->warned_cap = 1;
                }
                break;
            }
            add_target(sc, u);
            listed++;
        }
        token = next && *next ? xstrdup(next) : NULL;
        json_decref(doc);
    } while (token);
    rc = 0;
out:
    free(token);
    return rc;
}

static int resolve_targets(struct collector *c, struct scrape *sc, const struct deadline *dl,
                           struct err *e)
{
    struct state *st = c->priv;
    for (size_t i = 0; i < st->nurls; i++)
        add_target(sc, st->urls[i]);
    for (size_t i = 0; i < st->nnames; i++) {
        struct named *q = &st->names[i];
        if (!q->url) {
            int r = sqs_get_queue_url(c, &sc->calls, q->name, NULL, dl, &q->url, e);
            if (r < 0)
                return -1;
            if (r == 0) {
                sc->missing++;
                continue;
            }
        }
        add_target(sc, q->url);
    }
    if (st->prefix || st->list_all)
        return list_queues(c, sc, dl, e);
    return 0;
}

int sqs_get_attributes(struct collector *c, unsigned *calls, const char *url, const char *name,
                       int all, const struct deadline *dl, struct sqs_attrs *a, struct err *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "QueueUrl", json_string(url));
    json_t *names = json_array();
    if (all) {
        json_array_append_new(names, json_string("All"));
    } else {
        json_array_append_new(names, json_string("ApproximateNumberOfMessages"));
        json_array_append_new(names, json_string("ApproximateNumberOfMessagesNotVisible"));
        json_array_append_new(names, json_string("ApproximateNumberOfMessagesDelayed"));
    }
    json_object_set_new(o, "AttributeNames", names);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char what[200];
    json_t *doc = NULL;
    int rc = queue_call(c, calls, "GetQueueAttributes", name, body, dl, what, sizeof what, &doc, e);
    if (rc <= 0)
        return rc;
    rc = sqs_parse_attributes(doc, name, a, e);
    json_decref(doc);
    return rc ? -1 : 1;
}

static void forget_named_url(struct state *st, const char *url)
{
    for (size_t i = 0; i < st->nnames; i++)
        if (st->names[i].url && strcmp(st->names[i].url, url) == 0) {
            free(st->names[i].url);
            st->names[i].url = NULL;
        }
}

static struct dlq_url *dlq_cache(struct state *st, const char *arn)
{
    for (size_t i = 0; i < st->ndlq_urls; i++)
        if (strcmp(st->dlq_urls[i].arn, arn) == 0)
            return &st->dlq_urls[i];
    return NULL;
}

/* The depth of each distinct dead-letter queue: from the selection when it is part of it, else
 * one GetQueueAttributes on its URL (GetQueueUrl once, then cached). */
static int read_dlqs(struct collector *c, struct scrape *sc, const struct deadline *dl,
                     struct err *e)
{
    struct state *st = c->priv;
    sc->d = xcalloc(sc->n ? sc->n : 1, sizeof *sc->d);
    for (size_t i = 0; i < sc->n; i++) {
        struct target *t = &sc->t[i];
        if (!t->have || !t->a.has_redrive)
            continue;
        const struct sqs_redrive *r = &t->a.redrive;
        size_t k = 0;
        while (k < sc->nd && strcmp(sc->d[k].arn, r->dlq_arn) != 0)
            k++;
        t->dlq = k;
        if (k < sc->nd)
            continue;
        struct dlq *d = &sc->d[sc->nd++];
        d->arn = r->dlq_arn;
        d->name = r->dlq_name;
        d->cw = NONE;
        for (size_t j = 0; j < sc->n; j++) { /* the DLQ is selected itself */
            const struct target *u = &sc->t[j];
            if (u->have && u->a.arn && strcmp(u->a.arn, r->dlq_arn) == 0) {
                d->found = u->a.has_ready || u->a.has_in_flight || u->a.has_delayed;
                d->depth = u->a.ready + u->a.in_flight + u->a.delayed;
                break;
            }
        }
        if (d->found)
            continue;
        struct dlq_url *cached = dlq_cache(st, r->dlq_arn);
        if (!cached) {
            char *url = NULL;
            int got = sqs_get_queue_url(c, &sc->calls, r->dlq_name, r->dlq_account, dl, &url, e);
            if (got < 0)
                return -1;
            if (got == 0) {
                sc->missing++;
                continue;
            }
            st->dlq_urls = xrealloc(st->dlq_urls, (st->ndlq_urls + 1) * sizeof *st->dlq_urls);
            cached = &st->dlq_urls[st->ndlq_urls++];
            cached->arn = xstrdup(r->dlq_arn);
            cached->url = url;
        }
        struct sqs_attrs a;
        int got = sqs_get_attributes(c, &sc->calls, cached->url, r->dlq_name, 0, dl, &a, e);
        if (got < 0)
            return -1;
        if (got == 0) { /* deleted since: ask GetQueueUrl again next time */
            free(cached->arn);
            free(cached->url);
            *cached = st->dlq_urls[--st->ndlq_urls];
            sc->missing++;
            continue;
        }
        d->found = a.has_ready || a.has_in_flight || a.has_delayed;
        d->depth = a.ready + a.in_flight + a.delayed;
        sqs_attrs_free(&a);
    }
    return 0;
}

/* A failed add is remembered by the set, which the core checks after collect(). */
static void emit(struct metric_set *out, const struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (!t->have)
            continue;
        const struct sqs_attrs *a = &t->a;
        const char *q = t->name;
        if (a->has_ready)
            metric_set_add(out, "qrel_queue_messages", a->ready, "queue", q, "state", "ready",
                           NULL);
        if (a->has_in_flight)
            metric_set_add(out, "qrel_queue_messages", a->in_flight, "queue", q, "state",
                           "in_flight", NULL);
        if (a->has_delayed)
            metric_set_add(out, "qrel_queue_messages", a->delayed, "queue", q, "state", "delayed",
                           NULL);
        if (a->has_visibility)
            metric_set_add(out, "qrel_lease_timeout_seconds", a->visibility_timeout, "queue", q,
                           NULL);
        if (a->has_redrive)
            metric_set_add(out, "qrel_max_deliveries", a->redrive.max_receive_count, "queue", q,
                           NULL);
        double h = sqs_retry_horizon(a);
        if (h >= 0)
            metric_set_add(out, "qrel_retry_horizon_seconds", h, "queue", q, NULL);
        if (a->fifo)
            metric_set_add(out, "qrel_dedup_window_seconds", SQS_FIFO_DEDUP_WINDOW_SECONDS, "queue",
                           q, NULL);
        if (t->dlq != NONE && sc->d[t->dlq].found)
            metric_set_add(out, "qrel_dead_letter_messages", sc->d[t->dlq].depth, "queue", q,
                           "dead_letter_queue", a->redrive.dlq_name, NULL);
    }
}

/* CloudWatch: the age of the oldest message of every collected queue and dead-letter queue. */
static int read_cloudwatch(struct collector *c, struct scrape *sc, const struct deadline *dl,
                           struct metric_set *out, struct err *e)
{
    struct state *st = c->priv;
    const char **names = xcalloc(sc->n + sc->nd + 1, sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < sc->n; i++)
        if (sc->t[i].have)
            names[n++] = sc->t[i].name;
    for (size_t k = 0; k < sc->nd; k++) {
        size_t j = 0;
        while (j < n && strcmp(names[j], sc->d[k].name) != 0)
            j++;
        if (j == n)
            names[n++] = sc->d[k].name;
        sc->d[k].cw = j;
    }
    struct sqs_cw_datum *data = xcalloc(n ? n : 1, sizeof *data);
    struct sqs_aws aws = {st->http, st->region, st->access_key_id, st->secret_access_key,
                          st->token_header};
    int rc = -1;
    if (n &&
        sqs_cw_fetch(&aws, st->cw_endpoint, names, n, st->cw_lookback, dl, data, &sc->calls, e))
        goto out;
    double now = deadline_wall_now();
    size_t j = 0;
    rc = 0;
    for (size_t i = 0; i < sc->n; i++) {
        const struct target *t = &sc->t[i];
        if (!t->have)
            continue;
        const struct sqs_cw_datum *d = &data[j++];
        if (d->found) {
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", d->value, "queue", t->name,
                           NULL);
            double age = now - d->timestamp;
            metric_set_add(out, "qrel_sample_age_seconds", age > 0 ? age : 0, "queue", t->name,
                           NULL);
        }
        if (t->dlq != NONE && sc->d[t->dlq].cw != NONE && data[sc->d[t->dlq].cw].found &&
            sc->d[t->dlq].found && sc->d[t->dlq].depth > 0)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", data[sc->d[t->dlq].cw].value,
                           "queue", t->name, "dead_letter_queue", sc->d[t->dlq].name, NULL);
    }
out:
    free(data);
    free(names);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    int rc = -1;
    if (resolve_targets(c, &sc, dl, e))
        goto out;
    for (size_t i = 0; i < sc.n; i++) {
        struct target *t = &sc.t[i];
        int got = sqs_get_attributes(c, &sc.calls, t->url, t->name, 1, dl, &t->a, e);
        if (got < 0)
            goto out;
        if (got == 0) { /* deleted between listing and asking, or a stale cached URL */
            forget_named_url(st, t->url);
            sc.missing++;
        }
        t->have = got == 1;
    }
    if (read_dlqs(c, &sc, dl, e))
        goto out;
    emit(out, &sc);
    if (st->cloudwatch && read_cloudwatch(c, &sc, dl, out, e))
        goto out;
    rc = 0;
    if (log_enabled(LOG_DEBUG)) {
        size_t have = 0;
        for (size_t i = 0; i < sc.n; i++)
            have += sc.t[i].have;
        char queues[32], dlqs[32], missing[32], calls[32];
        snprintf(queues, sizeof queues, "%zu", have);
        snprintf(dlqs, sizeof dlqs, "%zu", sc.nd);
        snprintf(missing, sizeof missing, "%zu", sc.missing);
        snprintf(calls, sizeof calls, "%u", sc.calls);
        log_kv(LOG_DEBUG, "sqs collection done", "source", c->name, "queues", queues,
               "dead_letter_queues", dlqs, "missing_queues", missing, "requests", calls, NULL);
    }
out:
    scrape_free(&sc);
    return rc;
}

/* ------------------------------------------------------------------ `qrel dlq` (sqs/dlq.c) */

static int watches(const struct state *st, const char *name)
{
    if (st->list_all || (st->prefix && strncmp(name, st->prefix, strlen(st->prefix)) == 0))
        return 1;
    for (size_t i = 0; i < st->nnames; i++)
        if (strcmp(st->names[i].name, name) == 0)
            return 1;
    for (size_t i = 0; i < st->nurls; i++) {
        char *n = sqs_queue_name_from_url(st->urls[i]);
        int same = n && strcmp(n, name) == 0;
        free(n);
        if (same)
            return 1;
    }
    return 0;
}

char *sqs_configured_url(struct collector *c, const char *name)
{
    const struct state *st = c->priv;
    for (size_t i = 0; i < st->nurls; i++) {
        char *n = sqs_queue_name_from_url(st->urls[i]);
        int same = n && strcmp(n, name) == 0;
        free(n);
        if (same)
            return xstrdup(st->urls[i]);
    }
    return NULL;
}

double sqs_dlq_visibility(struct collector *c)
{
    return ((const struct state *)c->priv)->dlq_visibility;
}

/* Whether the RedrivePolicy exists is only known to SQS: `qrel dlq` says so when it is missing. */
static int dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e)
{
    char why[300];
    if (sqs_dlq_id_field_check(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    if (!watches(c->priv, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: source \"%s\" does not watch a queue named \"%s\" (want one of "
                         "its queues, or a name its queue_name_prefix matches)",
                         c->name, queue);
    live_check_note(&((struct state *)c->priv)->dead_letter_queues, queue);
    return 0;
}

/* --config.check: a scrape, and the RedrivePolicy and dead-letter queue of each queue that a
 * dead_letters entry names, found as `qrel dlq` finds them (no message is received). */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    return live_check(c, ((const struct state *)c->priv)->dead_letter_queues, dl, e);
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "add a RedrivePolicy with a dead-letter queue and maxReceiveCount"},
    {NULL, NULL}};

const struct collector_kind sqs_kind = {.name = "sqs",
                                        .state_size = sizeof(struct state),
                                        .configure = configure,
                                        .collect = collect,
                                        .destroy = destroy,
                                        .audit_hints = hints,
                                        .check = check,
                                        .dead_letter_validate = dead_letter_validate,
                                        .dlq = &sqs_dlq_kind};
