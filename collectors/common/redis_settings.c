/* redis_settings.c: the connection keys of the Redis-based kinds (see redis_settings.h). */
#include "redis_settings.h"

#include <stdlib.h>
#include <string.h>

#include "common/redis.h"
#include "common/redis_sentinel.h"
#include "common/redis_tls.h"
#include "common/secret.h"

int redis_settings_read(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    const char *no_cluster = s->no_cluster; /* set by the kind before */
    memset(s, 0, sizeof *s);
    s->no_cluster = no_cluster;
    long long db, max;
    if (cfg_get_str(map, "address", 0, &s->address, e) ||
        cfg_get_str(map, "username", 0, &s->username, e) ||
        secret_get(map, "password", 0, &s->password, e) ||
        cfg_get_int(map, "db", 0, 0, 1000000, &db, e) ||
        cfg_get_int(map, "max_response_bytes", (long long)REDIS_DEFAULT_MAX_RESPONSE_BYTES, 4096,
                    (long long)1 << 40, &max, e) ||
        cfg_get_bool(map, "cluster", 0, &s->cluster, e) ||
        cfg_get_strlist(map, "addresses", &s->addresses, &s->naddresses, e) ||
        redis_sentinel_read(map, s, e) || tls_config_read(map, &s->tls, e))
        return -1;
    s->db = (long)db;
    s->max_response_bytes = (size_t)max;
    return 0;
}

/* cluster and addresses (redis_cluster.h): one or the other spelling of the seeds, on db 0. */
static int check_cluster(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    if (s->cluster && s->no_cluster)
        return cfg_error(e, cfg_at(map, "cluster"), "cluster: %s", s->no_cluster);
    if (s->addresses && !s->cluster)
        return cfg_error(e, cfg_at(map, "addresses"),
                         "addresses: a list of seed nodes is for cluster: true (one server "
                         "takes address)");
    if (s->addresses && s->address)
        return cfg_error(e, cfg_at(map, "addresses"),
                         "addresses: give the seeds in addresses or one seed in address, not both");
    if (s->addresses && s->naddresses == 0)
        return cfg_error(e, cfg_at(map, "addresses"), "addresses: want at least one host:port");
    for (size_t i = 0; i < s->naddresses; i++) {
        struct redis_address a;
        struct err ae;
        if (redis_address_parse(s->addresses[i], &a, &ae))
            return cfg_error(e, cfg_at(map, "addresses"), "addresses: entry %zu: %s", i + 1,
                             ae.msg);
        int is_unix = a.is_unix;
        redis_address_free(&a);
        if (is_unix)
            return cfg_error(e, cfg_at(map, "addresses"),
                             "addresses: entry %zu: a cluster node is reached over TCP", i + 1);
    }
    if (s->cluster && s->db != 0)
        return cfg_error(e, cfg_at(map, "db"),
                         "db: a Redis Cluster has only database 0 (SELECT is refused there)");
    return 0;
}

int redis_settings_check(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    if (check_cluster(map, s, e))
        return -1;
    int sentinel = redis_sentinel_check(map, s, e); /* 1: sentinels instead of address */
    if (sentinel < 0)
        return -1;
    if (sentinel && s->cluster)
        return cfg_error(e, cfg_at(map, "cluster"),
                         "cluster: a Redis Cluster is found through its seed nodes (address or "
                         "addresses), not through sentinels");
    if (!sentinel) {
        if (!s->address && !s->addresses) /* no typo elsewhere (cfg_finish passed): missing */
            return cfg_get_str(map, "address", 1, &s->address, e);
        struct redis_address a;
        struct err ae;
        if (s->address && redis_address_parse(s->address, &a, &ae))
            return cfg_error(e, cfg_at(map, "address"), "address: %s", ae.msg);
        int is_unix = s->address && a.is_unix;
        if (s->address)
            redis_address_free(&a);
        if (s->tls && is_unix)
            return cfg_error(e, cfg_at(map, "tls_config"),
                             "tls_config: TLS needs a TCP address, not a unix: socket");
    }
    if (tls_config_check(map, s->tls, e))
        return -1;
    if (s->username && !s->password)
        return cfg_error(e, cfg_at(map, "username"),
                         "username: needs password_file or password_env (Redis authenticates a "
                         "user with a password)");
    return 0;
}

void redis_settings_free(struct redis_settings *s)
{
    if (!s)
        return;
    redis_sentinel_free(s);
    free(s->address);
    free(s->username);
    cfg_strv_free(s->addresses);
    secret_free(s->password);
    tls_config_free(s->tls);
    memset(s, 0, sizeof *s);
}
