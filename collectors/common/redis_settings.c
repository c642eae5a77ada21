/* redis_settings.c: the connection keys of the Redis-based kinds (see redis_settings.h). */
#include "redis_settings.h"

#include <stdlib.h>
#include <string.h>

#include "common/redis.h"
#include "common/redis_tls.h"
#include "common/secret.h"

int redis_settings_read(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    memset(s, 0, sizeof *s);
    long long db, max;
    if (cfg_get_str(map, "address", 0, &s->address, e) ||
        cfg_get_str(map, "username", 0, &s->username, e) ||
        secret_get(map, "password", 0, &s->password, e) ||
        cfg_get_int(map, "db", 0, 0, 1000000, &db, e) ||
        cfg_get_int(map, "max_response_bytes", (long long)REDIS_DEFAULT_MAX_RESPONSE_BYTES, 4096,
                    (long long)1 << 40, &max, e) ||
        redis_tls_config_read(map, &s->tls, e))
        return -1;
    s->db = (long)db;
    s->max_response_bytes = (size_t)max;
    return 0;
}

int redis_settings_check(struct cfg_node *map, struct redis_settings *s, struct err *e)
{
    if (!s->address) /* no typo elsewhere (cfg_finish passed): the key is simply missing */
        return cfg_get_str(map, "address", 1, &s->address, e);
    struct redis_address a;
    struct err ae;
    if (redis_address_parse(s->address, &a, &ae))
        return cfg_error(e, cfg_at(map, "address"), "address: %s", ae.msg);
    int is_unix = a.is_unix;
    redis_address_free(&a);
    if (s->tls && is_unix)
        return cfg_error(e, cfg_at(map, "tls_config"),
                         "tls_config: TLS needs a TCP address, not a unix: socket");
    if (redis_tls_config_check(map, s->tls, e))
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
    free(s->address);
    free(s->username);
    secret_free(s->password);
    redis_tls_config_free(s->tls);
    memset(s, 0, sizeof *s);
}
