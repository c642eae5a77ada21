/* redis_sentinel.c: the Sentinel keys of the Redis kinds and the connect that asks the sentinels
 * for the master (redis_sentinel.h). Kept apart from redis.c, which knows one address only: a
 * sentinel is just another Redis connection here, asked one command and closed. */
#include "redis_sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"
#include "log.h"

int redis_sentinel_read(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    return cfg_get_strlist(map, "sentinels", &s->sentinels, &s->nsentinels, e) ||
                   cfg_get_str(map, "master_name", 0, &s->master_name, e) ||
                   cfg_get_str(map, "sentinel_username", 0, &s->sentinel_username, e) ||
                   secret_get(map, "sentinel_password", 0, &s->sentinel_password, e)
               ? -1
               : 0;
}

/* The key a sentinel_password came from, for messages. */
static const char *password_key(struct cfg_node *map)
{
    return cfg_at(map, "sentinel_password_file") != map ? "sentinel_password_file"
                                                        : "sentinel_password_env";
}

int redis_sentinel_check(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    if (!s->sentinels) {
        const char *key = s->master_name         ? "master_name"
                          : s->sentinel_username ? "sentinel_username"
                          : s->sentinel_password ? password_key(map)
                                                 : NULL;
        if (!key)
            return 0;
        return cfg_error(e, cfg_at(map, key), "%s: only with sentinels (a list of host:port)", key);
    }
    struct cfg_node *list = cfg_at(map, "sentinels");
    if (s->address)
        return cfg_error(e, list,
                         "sentinels: give either address or sentinels with master_name, not both");
    if (s->nsentinels == 0)
        return cfg_error(e, list, "sentinels: want at least one host:port");
    for (size_t i = 0; i < s->nsentinels; i++) {
        struct redis_address a;
        struct err ae;
        if (redis_address_parse(s->sentinels[i], &a, &ae))
            return cfg_error(e, list->kind == CFG_SEQ ? list->items[i] : list, "sentinels: %s",
                             ae.msg);
        redis_address_free(&a);
    }
    if (!s->master_name)
        return cfg_error(e, list,
                         "master_name: required with sentinels (the name the sentinels monitor)");
    if (!*s->master_name)
        return cfg_error(e, cfg_at(map, "master_name"), "master_name: want a non-empty string");
    if (s->sentinel_username && !s->sentinel_password)
        return cfg_error(
            e, cfg_at(map, "sentinel_username"),
            "sentinel_username: needs sentinel_password_file or sentinel_password_env");
    return 1;
}

void redis_sentinel_free(struct redis_settings *s)
{
    cfg_strv_free(s->sentinels);
    free(s->master_name);
    free(s->sentinel_username);
    secret_free(s->sentinel_password);
}

int redis_sentinel_parse_master(const redisReply *r, const char *master_name, char *out, size_t n,
                                struct err *e)
{
    if (r->type == REDIS_REPLY_NIL)
        return err_set(e, ERR_QUERY, "does not know master \"%.200s\"", master_name);
    if (r->type == REDIS_REPLY_ERROR)
        return err_set(e, ERR_QUERY, "%.300s", r->str);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return err_set(e, ERR_PROTOCOL,
                       "SENTINEL get-master-addr-by-name: want [host, port], got %s",
                       redis_reply_type_name(r));
    const char *host = r->element[0]->str, *port = r->element[1]->str;
    int v6 = strchr(host, ':') != NULL; /* an IPv6 literal needs brackets before the port */
    int len = snprintf(out, n, v6 ? "[%s]:%s" : "%s:%s", host, port);
    if (len < 0 || (size_t)len >= n)
        return err_set(e, ERR_PROTOCOL, "SENTINEL get-master-addr-by-name: address too long");
    return 0;
}

int redis_sentinel_parse_role(const redisReply *r, struct err *e)
{
    if (r->type == REDIS_REPLY_ERROR)
        return err_set(e, ERR_QUERY, "ROLE: %.300s", r->str);
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        (r->element[0]->type != REDIS_REPLY_STRING && r->element[0]->type != REDIS_REPLY_STATUS))
        return err_set(e, ERR_PROTOCOL, "ROLE: want a list starting with the role, got %s",
                       redis_reply_type_name(r));
    if (strcmp(r->element[0]->str, "master") != 0)
        return err_set(e, ERR_CONNECT, "ROLE says %.40s, not master (a stale answer)",
                       r->element[0]->str);
    return 0;
}

struct master_run {
    const char *name;
    char *out;
    size_t n;
};

static int master_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    struct master_run *run = ctx;
    return redis_sentinel_parse_master(r, run->name, run->out, run->n, e);
}

static int role_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)ctx;
    (void)i;
    return redis_sentinel_parse_role(r, e);
}

/* Opens a connection to address and runs one command on it, whose reply goes to fn. The
 * connection is returned open on success. */
static struct redis_conn *one_command(const char *source, const char *address, const char *user,
                                      const char *password, long db, const struct tls_config *tls,
                                      const char *const *argv, int argc, redis_reply_fn fn,
                                      void *ctx, const struct deadline *dl, struct err *e)
{
    struct redis_conn *c = redis_conn_open_tls(source, address, user, password, db, tls, dl, e);
    if (!c)
        return NULL;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_add(p, argc, argv, NULL);
    int rc = redis_pipe_exec_each(c, p, dl, 0, fn, ctx, e);
    redis_pipe_free(p);
    if (rc) {
        redis_conn_close(c);
        return NULL;
    }
    return c;
}

/* The reason of a failed attempt without the `redis "<source>" <address>: ` the connection put
 * in front: the caller names the address its own way. */
static const char *reason_of(const struct err *e, const char *source, const char *address)
{
    char label[300];
    int len = snprintf(label, sizeof label, "redis \"%s\" %s: ", source, address);
    if (len > 0 && (size_t)len < sizeof label && strncmp(e->msg, label, (size_t)len) == 0)
        return e->msg + len;
    return e->msg;
}

struct redis_conn *redis_sentinel_connect(const char *source, const struct redis_settings *rs,
                                          const struct deadline *dl, struct err *e)
{
    if (!rs->sentinels)
        return redis_conn_open_tls(source, rs->address, rs->username, rs->password, rs->db, rs->tls,
                                   dl, e);
    char why[512] = "";
    size_t used = 0;
    enum err_code code = ERR_CONNECT;
    for (size_t i = 0; i < rs->nsentinels; i++) {
        const char *sentinel = rs->sentinels[i];
        /* A share of what is left, so a sentinel that hangs leaves time for the others and for
         * the master: the last one asked gets half. */
        size_t left = rs->nsentinels - i;
        struct deadline share = {deadline_now_ms() +
                                 deadline_remaining_ms(dl) / (int64_t)(left + 1)};
        share = deadline_min(share, *dl);
        char master[300];
        struct master_run run = {rs->master_name, master, sizeof master};
        const char *ask[] = {"SENTINEL", "get-master-addr-by-name", rs->master_name};
        struct err se;
        err_clear(&se);
        struct redis_conn *s =
            one_command(source, sentinel, rs->sentinel_username, rs->sentinel_password, 0, rs->tls,
                        ask, 3, master_reply, &run, &share, &se);
        const char *failed = sentinel;
        int master_failed = 0;
        if (s) {
            redis_conn_close(s);
            log_kv(LOG_DEBUG, "redis master named by a sentinel", "source", source, "sentinel",
                   sentinel, "master_name", rs->master_name, "master", master, NULL);
            const char *role[] = {"ROLE"};
            struct redis_conn *c = one_command(source, master, rs->username, rs->password, rs->db,
                                               rs->tls, role, 1, role_reply, NULL, dl, &se);
            if (c) {
                log_kv(LOG_DEBUG, "redis connected to the master", "source", source, "master",
                       master, NULL);
                return c;
            }
            failed = master;
            master_failed = 1;
        }
        code = se.code;
        int len = snprintf(why + used, sizeof why - used, "%s%s%s%s: %s", used ? "; " : "",
                           master_failed ? "master " : "sentinel ", failed,
                           master_failed ? " (named by the sentinels)" : "",
                           reason_of(&se, source, failed));
        if (len > 0)
            used += (size_t)len < sizeof why - used ? (size_t)len : sizeof why - used - 1;
    }
    err_set(e, code, "redis \"%s\": no master \"%s\" through %zu sentinel%s: %s", source,
            rs->master_name, rs->nsentinels, rs->nsentinels == 1 ? "" : "s", why);
    return NULL;
}

int redis_sentinel_master_gone(const struct redis_settings *rs, const struct redis_stats *before,
                               const struct redis_conn *conn, const struct deadline *dl,
                               const struct err *e)
{
    return rs->sentinels && conn && e->code == ERR_CONNECT &&
           redis_conn_stats(conn)->bytes_read == before->bytes_read && !deadline_expired(dl);
}
