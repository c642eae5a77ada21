/* config.h: strict YAML configuration as a tree of nodes that remember where they stood.
 *
 * The parser (libyaml) builds the tree; typed getters read it. Every getter records the key it
 * was asked for, so cfg_finish can reject any other key as unknown and list the known ones.
 * Every error message starts with "file:line:col: " (1-based) and says what was expected:
 *   qrel.yml:14:7: timeout: want a duration like "5s", got "5"
 * Secrets are never echoed: values of keys the caller marks secret are not quoted in errors. */
#ifndef QREL_CONFIG_H
#define QREL_CONFIG_H

#include <stddef.h>

#include "err.h"

enum cfg_kind { CFG_NULL, CFG_SCALAR, CFG_MAP, CFG_SEQ };

struct cfg_node;

struct cfg_pair {
    char *key;
    int line, col; /* of the key */
    int known;     /* set by getters; cfg_finish reports pairs still 0 */
    struct cfg_node *value;
};

struct cfg_node {
    enum cfg_kind kind;
    const char *file;        /* owned by the document */
    int line, col;           /* 1-based start of the node */
    char *scalar;            /* CFG_SCALAR: the text (also set for quoted empty strings) */
    struct cfg_pair *pairs;  /* CFG_MAP, in file order */
    struct cfg_node **items; /* CFG_SEQ */
    size_t n;                /* number of pairs or items */
    char **asked;            /* CFG_MAP: keys getters asked for, for the unknown-key hint */
    size_t nasked;
};

struct cfg_doc;

/* Parses a file / a string (name is used in messages). NULL with e set on error. Duplicate keys,
 * aliases, several documents and non-scalar keys are errors. An empty document is an empty map. */
struct cfg_doc *cfg_parse_file(const char *path, struct err *e);
struct cfg_doc *cfg_parse_string(const char *name, const char *text, size_t len, struct err *e);
struct cfg_node *cfg_doc_root(struct cfg_doc *d);
void cfg_doc_free(struct cfg_doc *d); /* NULL is fine */

/* "file:line:col: " + message, code ERR_CONFIG. Returns -1. */
int cfg_error(struct err *e, const struct cfg_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Requires node to be of kind want ("want a mapping, got a list"). what names the thing. */
int cfg_expect(const struct cfg_node *node, enum cfg_kind want, const char *what, struct err *e);

/* Getters on a mapping. An absent key, or one whose value is null, leaves *out at the default.
 * All return 0 or -1 with e set. */
int cfg_get_node(struct cfg_node *map, const char *key, enum cfg_kind want, struct cfg_node **out,
                 struct err *e); /* *out = NULL when absent */
int cfg_get_str(struct cfg_node *map, const char *key, int required, char **out,
                struct err *e); /* *out malloc'd copy or NULL when absent and not required */
int cfg_get_secret_ref(struct cfg_node *map, const char *key, int required, char **out,
                       struct err *e); /* like cfg_get_str, but errors never quote the value */
int cfg_get_duration(struct cfg_node *map, const char *key, double def, double *out,
                     struct err *e); /* seconds; Prometheus syntax: 500ms, 30s, 1h30m, 2d */
int cfg_get_int(struct cfg_node *map, const char *key, long long def, long long min, long long max,
                long long *out, struct err *e);
int cfg_get_bool(struct cfg_node *map, const char *key, int def, int *out, struct err *e);
/* A list of strings; a single scalar is refused ("want a list of strings"). *out NULL-terminated,
 * free with cfg_strv_free. Absent: *out = NULL, *n = 0. */
int cfg_get_strlist(struct cfg_node *map, const char *key, char ***out, size_t *n, struct err *e);
void cfg_strv_free(char **v);

/* The value node of key in map, or map itself when the key is absent: where a message about the
 * key should point. */
struct cfg_node *cfg_at(struct cfg_node *map, const char *key);
/* cfg_get_str for an optional key whose value, when present, must not be empty:
 *   FILE:L:C: KEY: want a non-empty string */
int cfg_get_nonempty(struct cfg_node *map, const char *key, char **out, struct err *e);
/* cfg_get_nonempty for a path another library opens later (a CA file for libcurl): when the path
 * exists it must be a regular file, since a FIFO there would hang that library's open:
 *   FILE:L:C: KEY: "PATH" is not a regular file */
int cfg_get_path(struct cfg_node *map, const char *key, char **out, struct err *e);
/* cfg_get_duration for a key whose value, when present, must be above 0:
 *   FILE:L:C: KEY: want a duration above 0 */
int cfg_get_positive_duration(struct cfg_node *map, const char *key, double def, double *out,
                              struct err *e);
/* cfg_get_duration for a key whose value, when present, must be from min to max seconds:
 *   FILE:L:C: KEY: want a duration from 1ms to 1d, got "25d" */
int cfg_get_duration_in(struct cfg_node *map, const char *key, double def, double min, double max,
                        double *out, struct err *e);
/* A key that an earlier release spelt old_key and this one new_key: present, it is an error at the
 * old key that names the new one (and note, when not NULL, says what else changed):
 *   qrel.yml:9:5: "max_reply_bytes" is now called "max_response_bytes"
 * Returns 0 when old_key is absent. The old key is not added to the known keys. */
int cfg_refuse_renamed(struct cfg_node *map, const char *old_key, const char *new_key,
                       const char *note, struct err *e);

/* Fails on the first key of map that no getter asked for:
 *   qrel.yml:9:5: unknown key "adress" in source "cache" (known keys: address, db, ...)
 * where is the phrase after "in". */
int cfg_finish(struct cfg_node *map, const char *where, struct err *e);

/* s as a double-quoted string for a message: quotes, backslashes and control bytes escaped, cut
 * with "..." to fit cap (at least 16). Returns dst. */
const char *cfg_quote(char *dst, size_t cap, const char *s);

/* Prometheus duration syntax; 0 on success. */
int cfg_parse_duration(const char *s, double *seconds);

#endif
