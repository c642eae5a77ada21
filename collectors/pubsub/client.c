/* pubsub/client.c: how the files of the `pubsub` kind talk to Pub/Sub (client.h): the HTTP
 * client opened on first use, the bearer token taken per scrape or `qrel dlq` step, one REST call
 * with its status mapping, and the resource name of a configured subscription. The collector
 * (pubsub.c) and `qrel dlq`'s hooks (dlq.c) both call it, so they share one connection and one
 * way of asking; it calls neither. */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "buf.h"

int pubsub_client_begin(struct collector *c, const struct deadline *dl, struct err *e)
{
    struct pubsub_state *st = c->priv;
    if (!st->client)
        st->client = http_client_new(c->name, &st->http);
    return pubsub_auth_token(st->auth, st->client, dl, deadline_wall_now(), &st->token, e);
}

int pubsub_client_call(struct pubsub_state *st, const struct deadline *dl, const char *method,
                       const char *url, const char *body, const char *what, int allow_missing,
                       json_t **doc, struct err *e)
{
    *doc = NULL;
    const char *token = st->token;
    static const char *const json_headers[] = {"Content-Type: application/json", NULL};
    struct http_request req = {.method = method,
                               .url = url,
                               .headers = body ? json_headers : NULL,
                               .body = body,
                               .body_len = body ? strlen(body) : 0,
                               .auth = token ? HTTP_AUTH_BEARER : HTTP_AUTH_NONE,
                               .password = token,
                               .accept_any_status = allow_missing};
    struct http_response resp = {0};
    if (http_do(st->client, &req, dl, &resp, e)) {
        if (e->code == ERR_AUTH)
            pubsub_auth_invalidate(st->auth); /* revoked or expired early: ask again next time */
        return -1;
    }
    int rc = 0;
    if (allow_missing && resp.status == 404) {
        rc = 0;
    } else if (resp.status < 200 || resp.status > 299) {
        /* Only for allow_missing requests: redo the status mapping of http.c. */
        if (resp.status == 401 || resp.status == 403)
            pubsub_auth_invalidate(st->auth);
        rc = err_set(e, resp.status == 401 || resp.status == 403 ? ERR_AUTH : ERR_QUERY,
                     "%s: HTTP %ld", what, resp.status);
    } else if (!(*doc = json_parse_body(resp.body, resp.len, what, e))) {
        rc = -1;
    }
    http_response_free(&resp);
    return rc;
}

int pubsub_client_get_optional(struct pubsub_state *st, const struct deadline *dl, const char *url,
                               const char *what, json_t **doc, long *status, struct err *e)
{
    *doc = NULL;
    *status = 0;
    struct http_request req = {.method = "GET",
                               .url = url,
                               .auth = st->token ? HTTP_AUTH_BEARER : HTTP_AUTH_NONE,
                               .password = st->token,
                               .accept_any_status = 1};
    struct http_response resp = {0};
    if (http_do(st->client, &req, dl, &resp, e))
        return -1;
    *status = resp.status;
    int rc = 0;
    if (resp.status == 401) {
        pubsub_auth_invalidate(st->auth); /* the token itself was refused */
        rc = err_set(e, ERR_AUTH, "%s: HTTP %ld", what, resp.status);
    } else if (resp.status == 403 || resp.status == 404) {
        rc = 0;
    } else if (resp.status < 200 || resp.status > 299) {
        rc = err_set(e, ERR_QUERY, "%s: HTTP %ld", what, resp.status);
    } else if (!(*doc = json_parse_body(resp.body, resp.len, what, e))) {
        rc = -1;
    }
    http_response_free(&resp);
    return rc;
}

char *pubsub_client_sub_name(const struct pubsub_state *st, const char *sub)
{
    int full = strncmp(sub, "projects/", 9) == 0;
    const char *id = full ? strrchr(sub, '/') + 1 : sub;
    char *esc = http_escape(id);
    struct buf b;
    buf_init(&b);
    if (full)
        buf_printf(&b, "%.*s%s", (int)(id - sub), sub, esc);
    else
        buf_printf(&b, "projects/%s/subscriptions/%s", st->project, esc);
    free(esc);
    return buf_steal(&b);
}
