/* tls_config.c: reading the tls_config key (tls.h). Pure: the getters only; loading the files is
 * tls.c's, so a unit test reads configs without GnuTLS touching a file. */
#include "common/tls.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/secret.h"

int tls_config_read(struct cfg_node *map, struct tls_config **out, struct err *e)
{
    *out = NULL;
    struct cfg_node *tls = NULL;
    if (cfg_get_node(map, "tls_config", CFG_MAP, &tls, e))
        return -1;
    if (!tls)
        return 0;
    struct tls_config *t = xcalloc(1, sizeof *t);
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
    tls_config_free(t);
    return -1;
}

struct tls_config *tls_config_dup(const struct tls_config *t)
{
    if (!t)
        return NULL;
    struct tls_config *d = xcalloc(1, sizeof *d);
    d->ca_file = xstrdup(t->ca_file);
    d->cert_file = xstrdup(t->cert_file);
    d->key_file = xstrdup(t->key_file);
    d->key_password = xstrdup(t->key_password);
    d->server_name = xstrdup(t->server_name);
    d->insecure_skip_verify = t->insecure_skip_verify;
    return d;
}

void tls_config_free(struct tls_config *t)
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
