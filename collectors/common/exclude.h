/* exclude.h: the `exclude` key (a list of globs) and, where a kind also takes regular
 * expressions, `exclude_regex` (one POSIX extended expression, matched against the whole name),
 * shared by every kind that finds its objects by a pattern or by discovery.
 *
 * An excluded object is dropped as soon as its name is known: no request is made for it and no
 * series names it. So that an exclude is never silent, the kind counts what it dropped and emits
 * qrel_excluded_objects (exclude_emit): a source whose exclude removes everything it found shows
 * a count above 0 beside no queue series, which tells it from a source that found nothing. */
#ifndef QREL_EXCLUDE_H
#define QREL_EXCLUDE_H

#include <regex.h>
#include <stddef.h>

#include "config.h"
#include "err.h"
#include "metrics.h"

struct exclude {
    char **globs; /* NULL-terminated, or NULL when the key is absent */
    size_t nglobs;
    char *regex;     /* as written, or NULL */
    regex_t re;      /* compiled by exclude_check */
    int has_re;      /* re is compiled */
    const char *key; /* the keys, for messages (static strings) */
    const char *regex_key;
    size_t dropped; /* objects excluded in this collection (exclude_drop) */
};

/* Reads key (a list of globs) and, when regex_key is not NULL, regex_key (a string) from map,
 * before cfg_finish, so both count as known keys. Errors at file:line:col (wrong type). */
int exclude_read(struct exclude *x, struct cfg_node *map, const char *key, const char *regex_key,
                 struct err *e);

/* After cfg_finish: refuses an empty list, an empty glob, a glob that reads as a regular
 * expression (glob_regex_syntax) and a regex that does not compile, each at file:line:col. */
int exclude_check(struct exclude *x, struct cfg_node *map, struct err *e);

/* 1 when name matches any glob or the regex; 0 otherwise (also when nothing is configured). */
int exclude_match(const struct exclude *x, const char *name);

/* exclude_match, counting a match in x->dropped: the call a collection makes once per object
 * it found. */
int exclude_drop(struct exclude *x, const char *name);

/* 1 when either key was given. */
int exclude_any(const struct exclude *x);

/* One qrel_excluded_objects{object="<object>"} sample of x->dropped (0 included) when x has
 * anything configured; then x->dropped starts again at 0 for the next collection. */
void exclude_emit(struct exclude *x, struct metric_set *out, const char *object);

void exclude_free(struct exclude *x); /* leaves it zeroed */

#endif
