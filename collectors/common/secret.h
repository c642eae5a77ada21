/* secret.h: reading a credential named in the config by `<base>_file` or `<base>_env`.
 *
 * Secrets never sit inline in a config file: a key such as password_file names a file (read at
 * configure time, trailing newline stripped) and password_env an environment variable. Messages
 * name the file or the variable, never what is in it; the value is wiped before it is freed. */
#ifndef QREL_SECRET_H
#define QREL_SECRET_H

#include "config.h"
#include "err.h"

#define SECRET_MAX_BYTES 65536
#define SECRET_MAX_TEXT "65536" /* for messages */

/* Reads `<base>_file` or `<base>_env` from map (marking both known). *out is the malloc'd value,
 * or NULL when neither key is present and required is 0. Both keys at once, an unreadable or
 * empty file, an unset or empty variable are file:line:col errors. */
int secret_get(struct cfg_node *map, const char *base, int required, char **out, struct err *e);

/* The same for a value that may also come from a standard environment variable when neither key
 * is present (AWS_SECRET_ACCESS_KEY and friends): env_fallback may be NULL. */
int secret_get_or_env(struct cfg_node *map, const char *base, const char *env_fallback, char **out,
                      struct err *e);

/* Overwrites then frees a secret. NULL is fine. */
void secret_free(char *s);

#endif
