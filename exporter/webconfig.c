/* webconfig.c: see webconfig.h. bcrypt is checked with crypt_r from libcrypt (libxcrypt), which
 * supports the $2a$, $2b$ and $2y$ forms htpasswd and the Prometheus docs produce. */
#include "webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

#define WEBCONFIG_MAX_PEM (1024 * 1024)

static char *resolve(const char *base, const char *p)
{
    if (p[0] == '/')
        return xstrdup(p);
    const char *slash = strrchr(base, '/');
    if (!slash)
        return xstrdup(p);
    return xasprintf("%.*s/%s", (int)(slash - base), base, p);
}

static int read_pem(const char *base, struct cfg_node *map, const char *key, char **out,
                    struct err *e)
{
    char *rel = NULL;
    struct cfg_node *at = NULL;
    if (cfg_get_str(map, key, 1, &rel, e) || cfg_get_node(map, key, CFG_SCALAR, &at, e)) {
        free(rel);
        return -1;
    }
    char *path = resolve(base, rel);
    free(rel);
    *out = util_read_file(path, WEBCONFIG_MAX_PEM, NULL);
    if (!*out) {
        cfg_error(e, at, "%s: cannot read \"%s\": %s", key, path, util_read_error(errno));
        free(path);
        return -1;
    }
    free(path);
    return 0;
}

static int is_bcrypt(const char *h)
{
    return strlen(h) == 60 && h[0] == '$' && h[1] == '2' && strchr("aby", h[2]) && h[3] == '$';
}

struct webconfig *webconfig_load(const char *path, struct err *e)
{
    struct cfg_doc *doc = cfg_parse_file(path, e);
    if (!doc)
        return NULL;
    struct webconfig *w = xcalloc(1, sizeof *w);
    struct cfg_node *root = cfg_doc_root(doc), *tls = NULL, *users = NULL;
    if (cfg_get_node(root, "tls_server_config", CFG_MAP, &tls, e) ||
        cfg_get_node(root, "basic_auth_users", CFG_MAP, &users, e))
        goto fail;
    if (tls && (read_pem(path, tls, "cert_file", &w->cert_pem, e) ||
                read_pem(path, tls, "key_file", &w->key_pem, e) ||
                cfg_finish(tls, "tls_server_config", e)))
        goto fail;
    for (size_t i = 0; users && i < users->n; i++) {
        struct cfg_pair *p = &users->pairs[i];
        p->known = 1;
        if (p->value->kind != CFG_SCALAR || !is_bcrypt(p->value->scalar)) {
            /* Never quote the value: even a hash should not travel into logs. */
            cfg_error(e, p->value, "basic_auth_users: %s: want a bcrypt hash ($2y$...)", p->key);
            goto fail;
        }
        w->users = xrealloc(w->users, (w->nusers + 1) * sizeof *w->users);
        w->users[w->nusers].name = xstrdup(p->key);
        w->users[w->nusers].hash = xstrdup(p->value->scalar);
        w->nusers++;
    }
    if (cfg_finish(root, "the web config file", e))
        goto fail;
    cfg_doc_free(doc);
    return w;
fail:
    cfg_doc_free(doc);
    webconfig_free(w);
    return NULL;
}

void webconfig_free(struct webconfig *w)
{
    if (!w)
        return;
    free(w->cert_pem);
    free(w->key_pem);
    for (size_t i = 0; i < w->nusers; i++) {
        free(w->users[i].name);
        free(w->users[i].hash);
    }
    free(w->users);
    free(w);
}

int webconfig_check_user(const struct webconfig *w, const char *user, const char *password)
{
    for (size_t i = 0; i < w->nusers; i++) {
        if (strcmp(w->users[i].name, user) != 0)
            continue;
        struct crypt_data *cd = xcalloc(1, sizeof *cd);
        const char *h = crypt_r(password, w->users[i].hash, cd);
        int ok = 0;
        if (h && strlen(h) == strlen(w->users[i].hash)) {
            unsigned char diff = 0;
            for (size_t k = 0; h[k]; k++)
                diff |= (unsigned char)(h[k] ^ w->users[i].hash[k]);
            ok = diff == 0;
        }
        free(cd);
        return ok;
    }
    return 0;
}
