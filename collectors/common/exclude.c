/* exclude.c: the exclude keys of exclude.h, read and judged alike by every kind that has them. */
#include "exclude.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "glob.h"

int exclude_read(struct exclude *x, struct cfg_node *map, const char *key, const char *regex_key,
                 struct err *e)
{
    memset(x, 0, sizeof *x);
    x->key = key;
    x->regex_key = regex_key;
    if (cfg_get_strlist(map, key, &x->globs, &x->nglobs, e))
        return -1;
    return regex_key ? cfg_get_str(map, regex_key, 0, &x->regex, e) : 0;
}

static int check_glob(const struct exclude *x, struct cfg_node *at, const char *glob, struct err *e)
{
    if (!*glob)
        return cfg_error(e, at, "%s: want a non-empty glob in each entry", x->key);
    const char *rx = glob_regex_syntax(glob);
    if (!rx)
        return 0;
    /* an exclude that silently matches nothing would export what it was meant to hide */
    if (x->regex_key)
        return cfg_error(e, at,
                         "%s: \"%.100s\" looks like a regular expression (it has \"%s\"): %s "
                         "takes globs (*, ?, [...]); write %s: for a regular expression",
                         x->key, glob, rx, x->key, x->regex_key);
    return cfg_error(e, at,
                     "%s: \"%.100s\" looks like a regular expression (it has \"%s\"): %s takes "
                     "globs (*, ?, [...]; \"[.]\" for a literal dot before a star)",
                     x->key, glob, rx, x->key);
}

int exclude_check(struct exclude *x, struct cfg_node *map, struct err *e)
{
    struct cfg_node *list = cfg_at(map, x->key);
    if (x->globs && x->nglobs == 0)
        return cfg_error(e, list, "%s: want at least one glob (leave %s out to exclude nothing)",
                         x->key, x->key);
    for (size_t i = 0; i < x->nglobs; i++)
        if (check_glob(x, list->kind == CFG_SEQ ? list->items[i] : list, x->globs[i], e))
            return -1;
    if (!x->regex)
        return 0;
    struct cfg_node *at = cfg_at(map, x->regex_key);
    if (!*x->regex)
        return cfg_error(e, at, "%s: want a non-empty regular expression", x->regex_key);
    char *full = xasprintf("^(%s)$", x->regex); /* the whole name, as `regex` keys match */
    int rc = regcomp(&x->re, full, REG_EXTENDED | REG_NOSUB);
    free(full);
    if (rc) {
        char why[200];
        regerror(rc, &x->re, why, sizeof why);
        return cfg_error(e, at, "%s: want a regular expression (POSIX extended): %s", x->regex_key,
                         why);
    }
    x->has_re = 1;
    return 0;
}

int exclude_match(const struct exclude *x, const char *name)
{
    for (size_t i = 0; i < x->nglobs; i++)
        if (glob_match(x->globs[i], name))
            return 1;
    return x->has_re && regexec(&x->re, name, 0, NULL, 0) == 0;
}

int exclude_drop(struct exclude *x, const char *name)
{
    if (!exclude_match(x, name))
        return 0;
    x->dropped++;
    return 1;
}

int exclude_any(const struct exclude *x)
{
    return x->globs != NULL || x->regex != NULL;
}

void exclude_emit(struct exclude *x, struct metric_set *out, const char *object)
{
    if (exclude_any(x))
        metric_set_add(out, "qrel_excluded_objects", (double)x->dropped, "object", object, NULL);
    x->dropped = 0;
}

void exclude_free(struct exclude *x)
{
    cfg_strv_free(x->globs);
    free(x->regex);
    if (x->has_re)
        regfree(&x->re);
    memset(x, 0, sizeof *x);
}
