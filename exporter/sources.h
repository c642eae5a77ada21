/* sources.h: the loaded configuration file: global settings and one configured collector per
 * entry under `sources:`, and the `dead_letters:` joins between them.
 *
 * Loading is all-or-nothing: a file with any error yields no sources and an error naming
 * file:line:col, so a reload can keep the running configuration untouched. */
#ifndef QREL_SOURCES_H
#define QREL_SOURCES_H

#include <stddef.h>

#include "audit.h"
#include "collector.h"
#include "dead_letters.h"
#include "err.h"

#define SOURCES_DEFAULT_TIMEOUT 10.0
#define SOURCES_DEFAULT_OFFSET 0.5

struct sources {
    char *path;
    double timeout;               /* global.timeout: per-source default, seconds */
    double scrape_timeout_offset; /* global.scrape_timeout_offset, seconds */
    struct audit_config audit;    /* the optional `audit:` section (rule thresholds) */
    struct collector **items;     /* each configured by its kind */
    size_t n;
    struct dead_letters dead_letters; /* the top-level `dead_letters:` joins */
};

/* Reads, validates and configures everything in path. NULL with e set on any error. */
struct sources *sources_load(const char *path, struct err *e);
/* The same from text (tests); name is used in messages. */
struct sources *sources_load_string(const char *name, const char *text, struct err *e);
void sources_free(struct sources *s); /* destroys every collector; NULL is fine */
/* Configures c (zeroed by the caller) from one entry of `sources:`, as every source is: the core's
 * keys (name, checked against the sources of s so far; kind; timeout, default s->timeout;
 * min_interval), the kind's configure(), then cfg_finish for the keys nobody read. On failure c
 * may hold a name, a kind and what configure() made: the caller destroys it either way. Public
 * so that the kinds' unit tests configure through this code rather than a copy of it. */
int sources_configure(const struct sources *s, struct collector *c, struct cfg_node *map,
                      struct err *e);
struct collector *sources_find(const struct sources *s, const char *name);

#endif
