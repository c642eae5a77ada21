/* client.c: the management API requests the files of collectors/rabbitmq share (client.h). */
#include "rabbitmq/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "alloc.h"

int rabbitmq_client_get(struct rabbitmq_state *st, const char *url, int auth,
                        const struct deadline *dl, struct http_response *resp, int *not_found,
                        struct err *e)
{
    return rabbitmq_client_get_with(st, url, auth, NULL, dl, resp, not_found, e);
}

int rabbitmq_client_get_with(struct rabbitmq_state *st, const char *url, int auth,
                             const char *const *headers, const struct deadline *dl,
                             struct http_response *resp, int *not_found, struct err *e)
{
    struct http_request req;
    memset(&req, 0, sizeof req);
    req.method = "GET";
    req.url = url;
    req.headers = headers;
    if (auth) {
        req.auth = HTTP_AUTH_BASIC;
        req.username = st->username;
        req.password = st->password;
    }
    st->requests++;
    if (not_found) {
        *not_found = 0;
        req.accept_any_status = 1;
    }
    if (http_do(st->client, &req, dl, resp, e))
        return -1;
    if (not_found && resp->status == 404) {
        /* The caller has nothing to read in a 404's body, and no reason to free it. */
        http_response_free(resp);
        *not_found = 1;
        return 0;
    }
    if (not_found && (resp->status < 200 || resp->status > 299)) {
        long status = resp->status;
        http_response_free(resp);
        const char *path = url + strlen(st->url);
        return err_set(e, status == 401 || status == 403 ? ERR_AUTH : ERR_QUERY,
                       "GET %.*s: HTTP %ld", (int)strcspn(path, "?"), path, status);
    }
    return 0;
}

int rabbitmq_client_dlx(struct rabbitmq_state *st, const struct deadline *dl, struct dlx *x,
                        struct err *e)
{
    if (!*x->name) { /* the default exchange routes to the queue named by the key */
        x->type = xstrdup("(default)");
        return 0;
    }
    char *vh = http_escape(x->vhost), *ex = http_escape(x->name);
    char *url = xasprintf("%s/api/exchanges/%s/%s?columns=name,type", st->url, vh, ex);
    char *burl = xasprintf("%s/api/exchanges/%s/%s/bindings/source", st->url, vh, ex);
    free(vh);
    free(ex);
    char what[400];
    snprintf(what, sizeof what, "GET /api/exchanges/%s/%s", x->vhost, x->name);
    struct http_response r;
    memset(&r, 0, sizeof r);
    int nf = 0, rc = -1;
    json_t *doc = NULL;
    const char *type = NULL;
    if (rabbitmq_client_get(st, url, 1, dl, &r, &nf, e))
        goto out;
    if (nf) {
        x->missing = 1;
        rc = 0;
        goto out;
    }
    doc = json_parse_body(r.body, r.len, what, e);
    http_response_free(&r);
    if (!doc || json_expect_object(doc, "$", e) || json_need_string(doc, "$", "type", &type, e)) {
        if (doc)
            err_prefix(e, "%s", what);
        goto out;
    }
    x->type = xstrdup(type);
    snprintf(what, sizeof what, "GET /api/exchanges/%s/%s/bindings/source", x->vhost, x->name);
    if (rabbitmq_client_get(st, burl, 1, dl, &r, NULL, e))
        goto out;
    x->bindings = json_parse_body(r.body, r.len, what, e);
    http_response_free(&r);
    if (!x->bindings || json_expect_array(x->bindings, "$", e)) {
        if (x->bindings)
            err_prefix(e, "%s", what);
        goto out;
    }
    rc = 0;
out:
    json_decref(doc);
    http_response_free(&r);
    free(url);
    free(burl);
    return rc;
}
