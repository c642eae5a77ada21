/* secret.c: `<base>_file` / `<base>_env` credentials. See secret.h. */
#include "secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"

void secret_free(char *s)
{
    if (!s)
        return;
    volatile char *p = s;
    while (*p)
        *p++ = 0;
    free(s);
}

static int from_file(struct cfg_node *map, const char *key, const char *file, char **out,
                     struct err *e)
{
    size_t len = 0;
    char *v = text_read_file(file, SECRET_MAX_BYTES, &len);
    if (!v)
        return cfg_error(e, cfg_at(map, key), "%s: cannot read \"%s\": %s", key, file,
                         errno == EFBIG ? "larger than " SECRET_MAX_TEXT " bytes"
                                        : text_read_error(errno));
    int has_nul = strlen(v) != len;
    text_chomp(v);
    if (has_nul || !*v) {
        secret_free(v);
        return cfg_error(e, cfg_at(map, key), "%s: \"%s\" %s", key, file,
                         has_nul ? "contains a NUL byte" : "is empty");
    }
    *out = v;
    return 0;
}

static int from_env(struct cfg_node *map, const char *key, const char *var, char **out,
                    struct err *e)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return cfg_error(e, cfg_at(map, key), "%s: environment variable \"%s\" is %s", key, var,
                         v ? "empty" : "not set");
    *out = xstrdup(v);
    return 0;
}

int secret_get(struct cfg_node *map, const char *base, int required, char **out, struct err *e)
{
    char file_key[64], env_key[64];
    snprintf(file_key, sizeof file_key, "%s_file", base);
    snprintf(env_key, sizeof env_key, "%s_env", base);
    char *file = NULL, *env = NULL;
    int rc = -1;
    *out = NULL;
    if (cfg_get_secret_ref(map, file_key, 0, &file, e) ||
        cfg_get_secret_ref(map, env_key, 0, &env, e))
        goto done;
    if (file && env) {
        cfg_error(e, cfg_at(map, env_key), "%s: want either %s or %s, not both", env_key, file_key,
                  env_key);
        goto done;
    }
    if (file)
        rc = from_file(map, file_key, file, out, e);
    else if (env)
        rc = from_env(map, env_key, env, out, e);
    else if (required)
        cfg_error(e, map, "missing %s or %s", file_key, env_key);
    else
        rc = 0;
done:
    free(file);
    free(env);
    return rc;
}

int secret_get_or_env(struct cfg_node *map, const char *base, const char *env_fallback, char **out,
                      struct err *e)
{
    if (secret_get(map, base, 0, out, e))
        return -1;
    if (!*out && env_fallback) {
        const char *v = getenv(env_fallback);
        if (v && *v)
            *out = xstrdup(v);
    }
    return 0;
}
