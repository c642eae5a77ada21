/* config.c: the strict typed getters over the configuration's tree (config_yaml.c builds it from
 * the file), and the wording of every configuration message.
 *
 * Every node remembers file:line:col so that any later complaint, from the core or from a
 * collector's configure(), can point at the offending text. Getters record the keys they were
 * asked for, so cfg_finish can reject a misspelt key and list the keys that would have worked:
 * a silently ignored typo in a monitoring config is a missing alert nobody notices.
 *
 * Message shapes (user-facing, compared exactly by tests/unit/check_config.c; those about the
 * YAML itself and the file come from config_yaml.c):
 *   FILE:L:C: KEY: want a duration like "5s", got "5"
 *   FILE:L:C: KEY: want a list, got a mapping
 *   FILE:L:C: KEY: want an integer from 0 to 15, got "abc"
 *   FILE:L:C: KEY: want true or false, got "yes"
 *   FILE:L:C: KEY: want a list of strings, got a mapping in item 2
 *   FILE:L:C: KEY: want a string                          (secrets: the value is never quoted)
 *   FILE:L:C: unknown key "adress" in source "cache" (known keys: address, db, password_file)
 *   FILE:L:C: missing required key "address" in this mapping   (L:C of the mapping)
 *   FILE:L:C: duplicate key "name" (first at line 2)
 *   FILE:L:C: YAML syntax error: <libyaml's problem>
 *   FILE:L:C: YAML aliases are not supported
 *   FILE:L:C: YAML tags are not supported
 *   FILE:L:C: more than one YAML document
 *   FILE:L:C: mapping keys must be strings, got a list
 *   FILE:L:C: nesting deeper than 64 levels
 *   FILE:L:C: more than 50000 keys in one mapping (the limit)
 *   FILE:L:C: more than 50000 items in one list (the limit)
 *   FILE:L:C: more than 250000 values in the file (the limit)
 *   FILE:L:C: a NUL character is not allowed in a string
 *   FILE:L:C: a NUL character is not allowed in a key
 *   FILE:L:C: the config file must be a mapping, got a list
 *   cannot read config file "PATH": <strerror, or "not a regular file">
 * where "got" names a kind as "a mapping", "a list", "a string" or "null", or quotes the value. */
#include "config.h"
#include "config_message.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "buf.h"
#include "number.h"

/* ---- messages ---- */

const char *cfg_kind_word(enum cfg_kind k)
{
    switch (k) {
    case CFG_NULL:
        return "null";
    case CFG_SCALAR:
        return "a string";
    case CFG_MAP:
        return "a mapping";
    case CFG_SEQ:
        return "a list";
    }
    return "?";
}

/* Writes s into dst as a double-quoted string, escaping quotes, backslashes and control bytes
 * so a value cannot break the message's shape; long values are cut (at a UTF-8 boundary) and
 * end in "...". Returns dst. */
static const char *quote(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    /* Room for the worst escape (4 bytes), the "..." marker, the closing quote and the NUL. */
    size_t limit = cap - 9;
    size_t o = 0;
    dst[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (o >= limit) {
            /* Back off over continuation bytes so the cut does not split a character. */
            while (o > 1 && ((unsigned char)dst[o - 1] & 0xC0) == 0x80)
                o--;
            if (o > 1 && ((unsigned char)dst[o - 1] & 0xC0) == 0xC0)
                o--;
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c == '\n') {
            dst[o++] = '\\';
            dst[o++] = 'n';
        } else if (c == '\t') {
            dst[o++] = '\\';
            dst[o++] = 't';
        } else if (c < 0x20 || c == 0x7F) {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 0xF];
        } else {
            dst[o++] = (char)c;
        }
    }
    dst[o++] = '"';
    dst[o] = '\0';
    return dst;
}

const char *cfg_quote(char *dst, size_t cap, const char *s)
{
    return quote(dst, cap, s);
}

static int verror_at(struct err *e, const char *file, int line, int col, const char *fmt,
                     va_list ap)
{
    struct buf b;
    buf_init(&b);
    if (file)
        buf_printf(&b, "%s:%d:%d: ", file, line, col);
    buf_vprintf(&b, fmt, ap);
    err_set(e, ERR_CONFIG, "%s", b.data ? b.data : "");
    buf_free(&b);
    return -1;
}

int cfg_error_at(struct err *e, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_at(e, file, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

int cfg_error(struct err *e, const struct cfg_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Without a node (an absent section) there is no position to give; the message stands. */
    if (at)
        verror_at(e, at->file, at->line, at->col, fmt, ap);
    else
        verror_at(e, NULL, 0, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int cfg_expect(const struct cfg_node *node, enum cfg_kind want, const char *what, struct err *e)
{
    enum cfg_kind got = node ? node->kind : CFG_NULL;
    if (got == want)
        return 0;
    if (what)
        return cfg_error(e, node, "%s: want %s, got %s", what, cfg_kind_word(want),
                         cfg_kind_word(got));
    return cfg_error(e, node, "want %s, got %s", cfg_kind_word(want), cfg_kind_word(got));
}

/* ---- getters ---- */

static void remember_asked(struct cfg_node *map, const char *key)
{
    for (size_t i = 0; i < map->nasked; i++)
        if (strcmp(map->asked[i], key) == 0)
            return;
    map->asked = xrealloc(map->asked, (map->nasked + 1) * sizeof *map->asked);
    map->asked[map->nasked++] = xstrdup(key);
}

/* The common start of every getter: checks map is a mapping (NULL stands for an absent section,
 * whose keys are all absent), records key as asked and marks its pair known. *value is NULL when
 * the key is absent or null, which every getter treats alike. */
/* key's value in map: 1 with *value set, 0 when absent or null, -1 on an error. */
static int lookup(struct cfg_node *map, const char *key, struct cfg_node **value, struct err *e)
{
    *value = NULL;
    if (!map)
        return 0;
    if (map->kind != CFG_MAP)
        return cfg_expect(map, CFG_MAP, NULL, e);
    remember_asked(map, key);
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->pairs[i].key, key) == 0) {
            map->pairs[i].known = 1;
            if (map->pairs[i].value && map->pairs[i].value->kind != CFG_NULL)
                *value = map->pairs[i].value;
            return *value != NULL;
        }
    }
    return 0;
}

static int missing(struct cfg_node *map, const char *key, struct err *e)
{
    char q[CFG_QUOTE_MAX];
    return cfg_error(e, map, "missing required key %s in this mapping", quote(q, sizeof q, key));
}

/* want CFG_NULL means "any kind": a null value is absent anyway, so it cannot be asked for. */
int cfg_get_node(struct cfg_node *map, const char *key, enum cfg_kind want, struct cfg_node **out,
                 struct err *e)
{
    struct cfg_node *v;
    *out = NULL;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found;
    if (want != CFG_NULL && cfg_expect(v, want, key, e) < 0)
        return -1;
    *out = v;
    return 0;
}

static int get_scalar(struct cfg_node *map, const char *key, int required, int secret, char **out,
                      struct err *e)
{
    struct cfg_node *v;
    *out = NULL;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found < 0 || !required ? found : missing(map, key, e);
    if (v->kind != CFG_SCALAR) {
        if (secret)
            return cfg_error(e, v, "%s: want a string", key);
        return cfg_expect(v, CFG_SCALAR, key, e);
    }
    *out = xstrdup(v->scalar);
    return 0;
}

int cfg_get_str(struct cfg_node *map, const char *key, int required, char **out, struct err *e)
{
    return get_scalar(map, key, required, 0, out, e);
}

int cfg_get_secret_ref(struct cfg_node *map, const char *key, int required, char **out,
                       struct err *e)
{
    return get_scalar(map, key, required, 1, out, e);
}

/* "got" for a value of the wrong shape: the quoted text of a scalar, the kind of anything else. */
static const char *got_phrase(char *buf, size_t cap, const struct cfg_node *v)
{
    if (v->kind == CFG_SCALAR)
        return quote(buf, cap, v->scalar);
    return cfg_kind_word(v->kind);
}

int cfg_get_duration(struct cfg_node *map, const char *key, double def, double *out, struct err *e)
{
    struct cfg_node *v;
    *out = def;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found;
    double secs;
    if (v->kind != CFG_SCALAR || cfg_parse_duration(v->scalar, &secs) < 0) {
        char q[CFG_QUOTE_MAX];
        return cfg_error(e, v, "%s: want a duration like \"5s\", got %s", key,
                         got_phrase(q, sizeof q, v));
    }
    *out = secs;
    return 0;
}

int cfg_get_int(struct cfg_node *map, const char *key, long long def, long long min, long long max,
                long long *out, struct err *e)
{
    struct cfg_node *v;
    *out = def;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found;
    long long n;
    if (v->kind != CFG_SCALAR || num_parse_int(v->scalar, min, max, &n) < 0) {
        char q[CFG_QUOTE_MAX];
        return cfg_error(e, v, "%s: want an integer from %lld to %lld, got %s", key, min, max,
                         got_phrase(q, sizeof q, v));
    }
    *out = n;
    return 0;
}

/* Only true and false, as in YAML 1.2: "yes"/"on" meaning true is a YAML 1.1 trap. */
int cfg_get_bool(struct cfg_node *map, const char *key, int def, int *out, struct err *e)
{
    struct cfg_node *v;
    *out = def;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found;
    if (v->kind == CFG_SCALAR && strcmp(v->scalar, "true") == 0) {
        *out = 1;
        return 0;
    }
    if (v->kind == CFG_SCALAR && strcmp(v->scalar, "false") == 0) {
        *out = 0;
        return 0;
    }
    char q[CFG_QUOTE_MAX];
    return cfg_error(e, v, "%s: want true or false, got %s", key, got_phrase(q, sizeof q, v));
}

/* An empty list gives an empty (non-NULL) vector, so callers can tell "[]" from absent. */
int cfg_get_strlist(struct cfg_node *map, const char *key, char ***out, size_t *n, struct err *e)
{
    struct cfg_node *v;
    *out = NULL;
    *n = 0;
    int found = lookup(map, key, &v, e);
    if (found <= 0)
        return found;
    if (v->kind != CFG_SEQ)
        return cfg_error(e, v, "%s: want a list of strings, got %s", key, cfg_kind_word(v->kind));
    for (size_t i = 0; i < v->n; i++) {
        const struct cfg_node *item = v->items[i];
        if (item->kind != CFG_SCALAR)
            return cfg_error(e, item, "%s: want a list of strings, got %s in item %zu", key,
                             cfg_kind_word(item->kind), i + 1);
    }
    char **vec = xcalloc(v->n + 1, sizeof *vec);
    for (size_t i = 0; i < v->n; i++)
        vec[i] = xstrdup(v->items[i]->scalar);
    *out = vec;
    *n = v->n;
    return 0;
}

void cfg_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cfg_finish(struct cfg_node *map, const char *where, struct err *e)
{
    if (!map)
        return 0;
    if (map->kind != CFG_MAP)
        return cfg_expect(map, CFG_MAP, NULL, e);
    for (size_t i = 0; i < map->n; i++) {
        const struct cfg_pair *pair = &map->pairs[i];
        if (pair->known)
            continue;
        /* asked is already free of duplicates; sorting it in place only orders the hint. */
        if (map->nasked)
            qsort(map->asked, map->nasked, sizeof *map->asked, cmp_str);
        struct buf b;
        buf_init(&b);
        char q[CFG_QUOTE_MAX];
        buf_printf(&b, "unknown key %s", quote(q, sizeof q, pair->key));
        if (where)
            buf_printf(&b, " in %s", where);
        if (map->nasked) {
            buf_puts(&b, " (known keys: ");
            for (size_t k = 0; k < map->nasked; k++)
                buf_printf(&b, "%s%s", k ? ", " : "", map->asked[k]);
            buf_putc(&b, ')');
        }
        cfg_error_at(e, map->file, pair->line, pair->col, "%s", b.data);
        buf_free(&b);
        return -1;
    }
    return 0;
}

/* The syntax lives with the other strict number parsers (number.c); no bound here beyond its own
 * (int64 nanoseconds), as the getters that want one state it. */
int cfg_parse_duration(const char *s, double *seconds)
{
    return num_parse_duration(s, 0, DBL_MAX, seconds);
}

struct cfg_node *cfg_at(struct cfg_node *map, const char *key)
{
    struct cfg_node *n = NULL;
    struct err ignored;
    if (cfg_get_node(map, key, CFG_NULL, &n, &ignored))
        return map;
    return n ? n : map;
}

int cfg_get_nonempty(struct cfg_node *map, const char *key, char **out, struct err *e)
{
    if (cfg_get_str(map, key, 0, out, e))
        return -1;
    if (*out && !**out)
        return cfg_error(e, cfg_at(map, key), "%s: want a non-empty string", key);
    return 0;
}

int cfg_get_path(struct cfg_node *map, const char *key, char **out, struct err *e)
{
    if (cfg_get_nonempty(map, key, out, e))
        return -1;
    struct stat st;
    if (*out && stat(*out, &st) == 0 && !S_ISREG(st.st_mode)) {
        char q[CFG_QUOTE_MAX];
        cfg_error(e, cfg_at(map, key), "%s: %s is not a regular file", key,
                  quote(q, sizeof q, *out));
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int cfg_get_positive_duration(struct cfg_node *map, const char *key, double def, double *out,
                              struct err *e)
{
    if (cfg_get_duration(map, key, def, out, e))
        return -1;
    struct cfg_node *n = NULL;
    if (cfg_get_node(map, key, CFG_SCALAR, &n, e))
        return -1;
    if (n && *out <= 0)
        return cfg_error(e, n, "%s: want a duration above 0", key);
    return 0;
}

int cfg_get_duration_in(struct cfg_node *map, const char *key, double def, double min, double max,
                        double *out, struct err *e)
{
    if (cfg_get_duration(map, key, def, out, e))
        return -1;
    struct cfg_node *v = NULL;
    if (cfg_get_node(map, key, CFG_SCALAR, &v, e))
        return -1;
    if (!v || (*out >= min && *out <= max))
        return 0;
    *out = def;
    char q[CFG_QUOTE_MAX], lo[32], hi[32];
    return cfg_error(e, v, "%s: want a duration from %s to %s, got %s", key,
                     num_format_duration(min, lo, sizeof lo),
                     num_format_duration(max, hi, sizeof hi), quote(q, sizeof q, v->scalar));
}

int cfg_refuse_renamed(struct cfg_node *map, const char *old_key, const char *new_key,
                       const char *note, struct err *e)
{
    if (!map || map->kind != CFG_MAP)
        return 0;
    for (size_t i = 0; i < map->n; i++) {
        const struct cfg_pair *p = &map->pairs[i];
        if (strcmp(p->key, old_key) != 0)
            continue;
        char q1[CFG_QUOTE_MAX], q2[CFG_QUOTE_MAX];
        struct cfg_node at = {0};
        at.file = map->file;
        at.line = p->line;
        at.col = p->col;
        return cfg_error(e, &at, "%s is now called %s%s%s", quote(q1, sizeof q1, old_key),
                         quote(q2, sizeof q2, new_key), note ? ": " : "", note ? note : "");
    }
    return 0;
}
