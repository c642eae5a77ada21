/* redis_tls_config.c: reading the tls_config key of the Redis kinds (redis_tls.h). Pure: the
 * getters only; loading the files is redis_tls.c's, so a unit test reads configs without GnuTLS
 * touching a file. */
#include "common/redis_tls.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/secret.h"

int redis_tls_config_read(struct cfg_node *map, struct redis_tls_config **out, struct err *e)
{
    *out = NULL;
    struct cfg_node *tls = NULL;
    if (cfg_get_node(map, "tls_config", CFG_MAP, &tls, e))
        return -1;
    if (!tls)
        return 0;
    struct redis_tls_config *t = xcalloc(1, sizeof *t);
    if (cfg_get_path(tls, "ca_file", &t->ca_file, e) ||
        cfg_get_path(tls, "cert_file", &t->cert_file, e) ||
        cfg_get_path(tls, "key_file", &t->key_file, e) ||
        secret_get(tls, "key_password", 0, &t->key_password, e) ||
        cfg_get_nonempty(tls, "server_name", &t->server_name, e) ||
        cfg_get_bool(tls, "insecure_skip_verify", 0, &t->insecure_skip_verify, e) ||
        cfg_finish(tls, "tls_config", e))
        goto fail;
    if (!t->cert_file != !t->key_file) {
        cfg_error(e, cfg_at(tls, t->cert_file ? "cert_file" : "key_file"),
                  "tls_config: want both cert_file and key_file, or neither");
        goto fail;
    }
    if (t->key_password && !t->key_file) {
        struct cfg_node *at = cfg_at(tls, "key_password_file");
        cfg_error(e, at != tls ? at : cfg_at(tls, "key_password_env"),
                  "tls_config: a key password needs key_file");
        goto fail;
    }
    *out = t;
    return 0;
fail:
    redis_tls_config_free(t);
    return -1;
}

void redis_tls_config_free(struct redis_tls_config *t)
{
    if (!t)
        return;
    free(t->ca_file);
    free(t->cert_file);
    free(t->key_file);
    secret_free(t->key_password);
    free(t->server_name);
    free(t);
}
