/* sqs/settings.c: the configuration of an `sqs` source (settings.h). Every key is read before
 * any is judged, so a misspelt key is reported with the known keys; then the region, the
 * endpoints (AWS's public ones by default), the credentials (the keys, else the standard AWS_*
 * variables) and the queues (names, URLs, a prefix or every queue) are checked. */
#include "sqs/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/secret.h"
#include "alloc.h"

#define DEFAULT_MAX_QUEUES 1000
#define DEFAULT_CW_LOOKBACK 900.0
#define QUEUE_NAME_MAX 80
#define DEFAULT_DLQ_VISIBILITY 30.0
#define MAX_VISIBILITY 43200.0 /* SQS's own limit: 12 hours */

void sqs_settings_free(struct sqs_state *st)
{
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
    exclude_free(&st->exclude);
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
static int judge_credentials(struct sqs_state *st, struct cfg_node *map, struct creds *k,
                             struct err *e)
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
static int judge_queues(struct sqs_state *st, struct cfg_node *map, char **queues, size_t nq,
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

int sqs_settings_read(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct sqs_state *st = c->priv;
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
        exclude_read(&st->exclude, map, "exclude", NULL, e) ||
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
    if (exclude_check(&st->exclude, map, e))
        goto out;
    if (exclude_any(&st->exclude) && !st->prefix && !st->list_all) {
        /* a queue listed in queues is asked for by name and kept: nothing is left to exclude */
        cfg_error(e, cfg_at(map, "exclude"),
                  "exclude: only with queue_name_prefix or without queues (it leaves out queues "
                  "ListQueues finds, never one listed in queues)");
        goto out;
    }
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

int sqs_settings_watches(const struct sqs_state *st, const char *name)
{
    if ((st->list_all || (st->prefix && strncmp(name, st->prefix, strlen(st->prefix)) == 0)) &&
        !exclude_match(&st->exclude, name))
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

char *sqs_settings_url(const struct sqs_state *st, const char *name)
{
    for (size_t i = 0; i < st->nurls; i++) {
        char *n = sqs_queue_name_from_url(st->urls[i]);
        int same = n && strcmp(n, name) == 0;
        free(n);
        if (same)
            return xstrdup(st->urls[i]);
    }
    return NULL;
}
