/* sources.c: turns the YAML document into configured collectors.
 *
 * The core owns the keys every source has (name, kind, timeout) and the `global:` section; each
 * kind's configure() reads the rest of its mapping. Unknown keys are caught afterwards by
 * cfg_finish, so a misspelt key is an error wherever it stands. */
#include "sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "alloc.h"
#include "buf.h"
#include "number.h"

/* Source names become the `source` label and /probe?target= values, so they are kept to
 * characters that need no escaping anywhere. */
static int source_name_valid(const char *s)
{
    if (!*s || strlen(s) > 128)
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == ':'))
            return 0;
    }
    return 1;
}

static void kinds_list(struct buf *b)
{
    for (size_t i = 0; i < collector_kind_count(); i++) {
        if (i)
            buf_puts(b, ", ");
        buf_puts(b, collector_kind_at(i)->name);
    }
}

int sources_configure(const struct sources *s, struct collector *c, struct cfg_node *map,
                      struct err *e)
{
    if (cfg_expect(map, CFG_MAP, "each entry of sources", e))
        return -1;
    char *name = NULL, *kind = NULL;
    struct cfg_node *kind_node = NULL;
    int rc = -1;

    if (cfg_get_str(map, "name", 1, &name, e))
        goto out;
    struct cfg_node *name_node = NULL;
    cfg_get_node(map, "name", CFG_SCALAR, &name_node, e);
    if (!source_name_valid(name)) {
        char q[200]; /* the name is not valid, so it may hold anything: escaped */
        cfg_error(e, name_node,
                  "name: want letters, digits, '_', '-', '.' or ':' (1 to 128), got %s",
                  cfg_quote(q, sizeof q, name));
        goto out;
    }
    if (sources_find(s, name)) {
        cfg_error(e, name_node, "name: source \"%s\" is defined twice", name);
        goto out;
    }
    if (cfg_get_str(map, "kind", 1, &kind, e))
        goto out;
    cfg_get_node(map, "kind", CFG_SCALAR, &kind_node, e);
    const struct collector_kind *k = collector_kind_find(kind);
    if (!k) {
        struct buf b;
        buf_init(&b);
        kinds_list(&b);
        cfg_error(e, kind_node, "kind: want one of %s, got \"%s\"",
                  b.data ? b.data : "(none built)", kind);
        buf_free(&b);
        goto out;
    }
    c->name = name;
    name = NULL;
    c->kind = k;
    if (cfg_get_duration_in(map, "timeout", s->timeout, NUM_TIMEOUT_MIN, NUM_TIMEOUT_MAX,
                            &c->timeout, e))
        goto out;
    if (cfg_get_duration(map, "min_interval", 0, &c->min_interval, e))
        goto out;
    if (collector_configure(c, map, e) || collector_finish(c, map, e))
        goto out;
    rc = 0;
out:
    free(name);
    free(kind);
    return rc;
}

static int load_source(struct sources *s, struct cfg_node *map, struct err *e)
{
    struct collector *c = collector_new();
    if (sources_configure(s, c, map, e)) {
        collector_free(c);
        return -1;
    }
    s->items = xrealloc(s->items, (s->n + 1) * sizeof *s->items);
    s->items[s->n++] = c;
    return 0;
}

static struct sources *load_doc(struct cfg_doc *doc, const char *path, struct err *e)
{
    struct sources *s = xcalloc(1, sizeof *s);
    s->path = xstrdup(path);
    s->timeout = SOURCES_DEFAULT_TIMEOUT;
    s->scrape_timeout_offset = SOURCES_DEFAULT_OFFSET;
    struct cfg_node *root = cfg_doc_root(doc);
    struct cfg_node *global = NULL, *list = NULL;

    if (cfg_get_node(root, "global", CFG_MAP, &global, e))
        goto fail;
    if (global) {
        if (cfg_get_duration_in(global, "timeout", s->timeout, NUM_TIMEOUT_MIN, NUM_TIMEOUT_MAX,
                                &s->timeout, e) ||
            cfg_get_duration_in(global, "scrape_timeout_offset", s->scrape_timeout_offset, 0,
                                NUM_TIMEOUT_MAX, &s->scrape_timeout_offset, e) ||
            cfg_finish(global, "global", e))
            goto fail;
    }
    struct cfg_node *audit = NULL;
    if (cfg_get_node(root, "audit", CFG_MAP, &audit, e) || audit_config_parse(audit, &s->audit, e))
        goto fail;
    if (cfg_get_node(root, "sources", CFG_SEQ, &list, e))
        goto fail;
    for (size_t i = 0; list && i < list->n; i++)
        if (load_source(s, list->items[i], e))
            goto fail;
    /* After the sources: its entries name them, wherever the list stands in the file. */
    struct cfg_node *dead = NULL;
    if (cfg_get_node(root, "dead_letters", CFG_SEQ, &dead, e) ||
        dead_letters_load(&s->dead_letters, dead, s->items, s->n, e))
        goto fail;
    if (cfg_finish(root, "the top level", e))
        goto fail;
    return s;
fail:
    sources_free(s);
    return NULL;
}

struct sources *sources_load(const char *path, struct err *e)
{
    struct cfg_doc *doc = cfg_parse_file(path, e);
    if (!doc)
        return NULL;
    struct sources *s = load_doc(doc, path, e);
    cfg_doc_free(doc);
    return s;
}

struct sources *sources_load_string(const char *name, const char *text, struct err *e)
{
    struct cfg_doc *doc = cfg_parse_string(name, text, strlen(text), e);
    if (!doc)
        return NULL;
    struct sources *s = load_doc(doc, name, e);
    cfg_doc_free(doc);
    return s;
}

void sources_free(struct sources *s)
{
    if (!s)
        return;
    dead_letters_free(&s->dead_letters); /* first: it refers to the collectors */
    for (size_t i = 0; i < s->n; i++)
        collector_free(s->items[i]);
    free(s->items);
    free(s->path);
    free(s);
}

struct collector *sources_find(const struct sources *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->items[i]->name, name) == 0)
            return s->items[i];
    return NULL;
}
