/* client.c: the Jolokia requests of an `activemq` source: one POST with basic auth over the
 * connection the source keeps, its reply parsed as JSON (by jansson, or by the reader the scrape
 * gives). The scrape and `qrel dlq` both go through here, so they authenticate and time out
 * alike. */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/json.h"

int activemq_client_post(struct collector *c, json_t *req, const char *what,
                         const struct deadline *dl, json_t **doc, struct err *e)
{
    return activemq_client_post_with(c, req, what, json_parse_body, dl, doc, e);
}

int activemq_client_post_with(struct collector *c, json_t *req, const char *what,
                              activemq_reply_reader read, const struct deadline *dl, json_t **doc,
                              struct err *e)
{
    struct state *st = c->priv;
    *doc = NULL;
    if (!st->client)
        st->client = http_client_new(c->name, &st->http);
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body)
        abort(); /* only on allocation failure */
    char *url = xasprintf("%s/", st->url);
    static const char *const headers[] = {"Content-Type: application/json", NULL};
    struct http_request hr = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .auth = st->username ? HTTP_AUTH_BASIC : HTTP_AUTH_NONE,
        .username = st->username,
        .password = st->password,
    };
    struct http_response resp = {0};
    int rc = http_do(st->client, &hr, dl, &resp, e);
    free(body);
    free(url);
    if (rc)
        return -1;
    *doc = read(resp.body, resp.len, what, e);
    http_response_free(&resp);
    return *doc ? 0 : -1;
}

char *activemq_client_queue_mbean(const struct state *st, const char *name)
{
    return xasprintf("org.apache.activemq:type=Broker,brokerName=%s,destinationType=Queue,"
                     "destinationName=%s",
                     st->broker_name, name);
}
