/* config_yaml.c: the YAML configuration file as a tree of positioned nodes (config.h), the
 * getters' input (config.c).
 *
 * libyaml's event API builds the tree (its document API would lose nothing we need, but events
 * let us refuse aliases, tags, duplicate keys and extra documents at the exact spot they occur).
 * Each node remembers file:line:col; the builder bounds the file's size, its nesting and its
 * number of values, so a hostile file cannot make the loader spend seconds or hundreds of MB. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "alloc.h"
#include "config_message.h"
#include "hashtab.h"
#include "text.h"

/* A config file is small; anything bigger is a mistake (a log file passed by accident). */
#define CFG_MAX_FILE_SIZE (16u * 1024 * 1024)
/* Bounds the recursion of the tree builder: no sane config nests this deep. */
#define CFG_MAX_DEPTH 64
/* Bounds on the tree, so a hostile or generated file inside the size cap cannot make the loader
 * spend seconds or hundreds of MB (a 4M-item flow list fits in 16 MB; each node costs ~100 B).
 * The largest real configurations list some thousands of streams or queues. */
#define CFG_MAX_ITEMS 50000
#define CFG_MAX_NODES 250000

struct cfg_doc {
    char *file; /* the name used in messages; nodes point at it */
    struct cfg_node *root;
};

/* ---- the tree ---- */

static struct cfg_node *node_new(const char *file, enum cfg_kind kind, yaml_mark_t mark)
{
    struct cfg_node *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->file = file;
    n->line = (int)mark.line + 1;
    n->col = (int)mark.column + 1;
    return n;
}

static void node_free(struct cfg_node *n)
{
    if (!n)
        return;
    free(n->scalar);
    for (size_t i = 0; n->kind == CFG_MAP && i < n->n; i++) {
        free(n->pairs[i].key);
        node_free(n->pairs[i].value);
    }
    for (size_t i = 0; n->kind == CFG_SEQ && i < n->n; i++)
        node_free(n->items[i]);
    free(n->pairs);
    free(n->items);
    for (size_t i = 0; i < n->nasked; i++)
        free(n->asked[i]);
    free(n->asked);
    free(n);
}

struct parse {
    yaml_parser_t parser;
    const char *file;
    const char *text; /* the whole input, to place reader errors that carry only an offset */
    size_t len;
    struct err *e;
    size_t nodes; /* built so far, against CFG_MAX_NODES */
};

/* Turns libyaml's failure into "FILE:L:C: YAML syntax error: ...". Reader errors (bad UTF-8,
 * control characters) report a byte offset instead of a mark, so the position is counted here. */
static int syntax_error(struct parse *p)
{
    yaml_parser_t *y = &p->parser;
    const char *problem = y->problem ? y->problem : "unknown error";
    if (y->error == YAML_MEMORY_ERROR)
        return err_set(p->e, ERR_INTERNAL, "%s: out of memory while parsing YAML", p->file);
    if (y->error == YAML_READER_ERROR) {
        int line = 1, col = 1;
        size_t end = y->problem_offset < p->len ? y->problem_offset : p->len;
        for (size_t i = 0; i < end; i++) {
            unsigned char c = (unsigned char)p->text[i];
            if (c == '\n') {
                line++;
                col = 1;
            } else if ((c & 0xC0) != 0x80) {
                col++; /* columns count characters, as libyaml's marks do */
            }
        }
        return cfg_error_at(p->e, p->file, line, col, "YAML syntax error: %s", problem);
    }
    return cfg_error_at(p->e, p->file, (int)y->problem_mark.line + 1,
                        (int)y->problem_mark.column + 1, "YAML syntax error: %s", problem);
}

static int next_event(struct parse *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&p->parser, ev))
        return syntax_error(p);
    return 0;
}

static int mark_error(struct parse *p, yaml_mark_t m, const char *msg)
{
    return cfg_error_at(p->e, p->file, (int)m.line + 1, (int)m.column + 1, "%s", msg);
}

/* Refuses the YAML features a config has no use for: aliases make the same text appear in two
 * places (and the position of a value ambiguous); tags would be silently ignored otherwise. */
static int check_plain_node(struct parse *p, const yaml_event_t *ev)
{
    const yaml_char_t *anchor = NULL, *tag = NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return mark_error(p, ev->start_mark, "YAML aliases are not supported");
    case YAML_SCALAR_EVENT:
        anchor = ev->data.scalar.anchor;
        tag = ev->data.scalar.tag;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
        break;
    default:
        break;
    }
    if (anchor)
        return mark_error(p, ev->start_mark, "YAML aliases are not supported");
    if (tag)
        return mark_error(p, ev->start_mark, "YAML tags are not supported");
    return 0;
}

/* YAML 1.2 core schema nulls, but only when written plain: a quoted "" is an empty string. */
static int is_plain_null(const yaml_event_t *ev)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (strcmp((const char *)ev->data.scalar.value, nulls[i]) == 0)
            return 1;
    return 0;
}

static int build_node(struct parse *p, yaml_event_t *ev, int depth, struct cfg_node **out);

/* The next item of a list or mapping holding n: 1 with *ev to build, 0 at the end event end
 * (consumed), -1 on an error, which is also what one more item than CFG_MAX_ITEMS is ("more than
 * N <what> (the limit)"). */
static int next_item(struct parse *p, yaml_event_t *ev, yaml_event_type_t end, size_t n,
                     const char *what)
{
    if (next_event(p, ev) < 0)
        return -1;
    if (ev->type == end) {
        yaml_event_delete(ev);
        return 0;
    }
    if (n >= CFG_MAX_ITEMS) {
        cfg_error_at(p->e, p->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                     "more than %d %s (the limit)", CFG_MAX_ITEMS, what);
        yaml_event_delete(ev);
        return -1;
    }
    return 1;
}

static int build_seq(struct parse *p, struct cfg_node *seq, int depth)
{
    size_t cap = 0;
    yaml_event_t ev;
    int rc;
    while ((rc = next_item(p, &ev, YAML_SEQUENCE_END_EVENT, seq->n, "items in one list")) > 0) {
        struct cfg_node *item;
        if (build_node(p, &ev, depth + 1, &item) < 0)
            return -1;
        if (seq->n == cap) {
            cap = cap ? cap * 2 : 4;
            seq->items = xrealloc(seq->items, cap * sizeof *seq->items);
        }
        seq->items[seq->n++] = item;
    }
    return rc;
}

/* The keys of one mapping go into the project's hash index (hashtab.h) while it is built: the
 * duplicate check stays linear however many keys a file has (a scan of the earlier keys made
 * 50,000 keys cost 5.8 s). The index holds pair numbers, so the pairs array may move as it
 * grows. */
static uint64_t key_hash(const char *k)
{
    return hashtab_hash(k, strlen(k), 0);
}

static uint64_t pair_hash_of(const void *ctx, uint32_t id)
{
    const struct cfg_node *map = ctx;
    return key_hash(map->pairs[id].key);
}

static int build_map_pairs(struct parse *p, struct cfg_node *map, int depth, struct hashtab *ix)
{
    size_t cap = 0;
    yaml_event_t ev;
    int rc;
    while ((rc = next_item(p, &ev, YAML_MAPPING_END_EVENT, map->n, "keys in one mapping")) > 0) {
        rc = check_plain_node(p, &ev);
        if (rc == 0 && ev.type != YAML_SCALAR_EVENT) {
            enum cfg_kind k = ev.type == YAML_MAPPING_START_EVENT ? CFG_MAP : CFG_SEQ;
            rc = cfg_error_at(p->e, p->file, (int)ev.start_mark.line + 1,
                              (int)ev.start_mark.column + 1, "mapping keys must be strings, got %s",
                              cfg_kind_word(k));
        }
        if (rc == 0 && memchr(ev.data.scalar.value, '\0', ev.data.scalar.length))
            rc = mark_error(p, ev.start_mark, "a NUL character is not allowed in a key");
        if (rc < 0) {
            yaml_event_delete(&ev);
            return -1;
        }
        const char *key = (const char *)ev.data.scalar.value;
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        struct hashtab_probe probe;
        uint32_t first;
        for (first = hashtab_first(ix, key_hash(key), &probe); first != HASHTAB_END;
             first = hashtab_next(ix, &probe))
            if (strcmp(map->pairs[first].key, key) == 0)
                break;
        if (first != HASHTAB_END) {
            char q[CFG_QUOTE_MAX];
            cfg_error_at(p->e, p->file, line, col, "duplicate key %s (first at line %d)",
                         cfg_quote(q, sizeof q, key), map->pairs[first].line);
            yaml_event_delete(&ev);
            return -1;
        }
        if (map->n == cap) {
            cap = cap ? cap * 2 : 4;
            map->pairs = xrealloc(map->pairs, cap * sizeof *map->pairs);
        }
        /* The pair joins the map before its value is built, so a failure below frees the key. */
        struct cfg_pair *pair = &map->pairs[map->n++];
        pair->key = xstrdup(key);
        pair->line = line;
        pair->col = col;
        pair->known = 0;
        pair->value = NULL;
        hashtab_add(ix, &probe, (uint32_t)(map->n - 1), pair_hash_of, map);
        yaml_event_delete(&ev);

        yaml_event_t vev;
        if (next_event(p, &vev) < 0)
            return -1;
        if (build_node(p, &vev, depth + 1, &pair->value) < 0)
            return -1;
    }
    return rc;
}

static int build_map(struct parse *p, struct cfg_node *map, int depth)
{
    struct hashtab ix = {0};
    int rc = build_map_pairs(p, map, depth, &ix);
    hashtab_free(&ix);
    return rc;
}

/* Builds the node that starts with ev (consumed: deleted here in every case). On failure *out
 * is NULL and everything built so far is freed. */
static int build_node(struct parse *p, yaml_event_t *ev, int depth, struct cfg_node **out)
{
    *out = NULL;
    int rc = check_plain_node(p, ev);
    if (rc == 0 && depth > CFG_MAX_DEPTH)
        rc = cfg_error_at(p->e, p->file, (int)ev->start_mark.line + 1,
                          (int)ev->start_mark.column + 1, "nesting deeper than %d levels",
                          CFG_MAX_DEPTH);
    if (rc == 0 && ++p->nodes > CFG_MAX_NODES)
        rc = cfg_error_at(p->e, p->file, (int)ev->start_mark.line + 1,
                          (int)ev->start_mark.column + 1,
                          "more than %d values in the file (the limit)", CFG_MAX_NODES);
    /* A "\0" escape would make every C string of the value end early: "ca\0che" would name
     * the source "ca". */
    if (rc == 0 && ev->type == YAML_SCALAR_EVENT &&
        memchr(ev->data.scalar.value, '\0', ev->data.scalar.length))
        rc = mark_error(p, ev->start_mark, "a NUL character is not allowed in a string");
    if (rc < 0) {
        yaml_event_delete(ev);
        return -1;
    }
    struct cfg_node *n = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        if (is_plain_null(ev)) {
            n = node_new(p->file, CFG_NULL, ev->start_mark);
        } else {
            n = node_new(p->file, CFG_SCALAR, ev->start_mark);
            n->scalar = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        }
        yaml_event_delete(ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
        n = node_new(p->file, CFG_SEQ, ev->start_mark);
        yaml_event_delete(ev);
        rc = build_seq(p, n, depth);
        break;
    case YAML_MAPPING_START_EVENT:
        n = node_new(p->file, CFG_MAP, ev->start_mark);
        yaml_event_delete(ev);
        rc = build_map(p, n, depth);
        break;
    default:
        /* libyaml only hands out node events here; anything else is a bug on one side. */
        rc = mark_error(p, ev->start_mark, "YAML syntax error: unexpected event");
        yaml_event_delete(ev);
        break;
    }
    if (rc < 0) {
        node_free(n);
        return -1;
    }
    *out = n;
    return 0;
}

/* Reads the whole stream: zero documents or one, whose root must be a mapping (or empty). */
static int build_doc(struct parse *p, struct cfg_node **root)
{
    yaml_event_t ev;
    struct cfg_node *doc_root = NULL;
    int ndocs = 0;
    int rc = -1;
    *root = NULL;
    for (;;) {
        if (next_event(p, &ev) < 0)
            goto out;
        yaml_event_type_t type = ev.type;
        if (type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (type == YAML_DOCUMENT_START_EVENT) {
            if (++ndocs > 1) {
                mark_error(p, ev.start_mark, "more than one YAML document");
                yaml_event_delete(&ev);
                goto out;
            }
            yaml_event_delete(&ev);
            if (next_event(p, &ev) < 0)
                goto out;
            if (build_node(p, &ev, 1, &doc_root) < 0)
                goto out;
            continue;
        }
        /* STREAM_START and DOCUMENT_END carry nothing we need. */
        yaml_event_delete(&ev);
    }

    if (!doc_root || doc_root->kind == CFG_NULL) {
        /* An empty file or document is an empty configuration: every default applies. */
        yaml_mark_t start = {0, 0, 0};
        if (doc_root) {
            start.line = (size_t)doc_root->line - 1;
            start.column = (size_t)doc_root->col - 1;
        }
        node_free(doc_root);
        doc_root = node_new(p->file, CFG_MAP, start);
    } else if (doc_root->kind != CFG_MAP) {
        cfg_error(p->e, doc_root, "the config file must be a mapping, got %s",
                  cfg_kind_word(doc_root->kind));
        goto out;
    }
    *root = doc_root;
    doc_root = NULL;
    rc = 0;
out:
    node_free(doc_root);
    return rc;
}

struct cfg_doc *cfg_parse_string(const char *name, const char *text, size_t len, struct err *e)
{
    struct cfg_doc *d = xcalloc(1, sizeof *d);
    d->file = xstrdup(name ? name : "config");
    struct parse p;
    memset(&p, 0, sizeof p);
    if (!yaml_parser_initialize(&p.parser)) {
        err_set(e, ERR_INTERNAL, "%s: cannot initialise the YAML parser", d->file);
        cfg_doc_free(d);
        return NULL;
    }
    p.file = d->file;
    p.text = text ? text : "";
    p.len = text ? len : 0;
    p.e = e;
    yaml_parser_set_input_string(&p.parser, (const unsigned char *)p.text, p.len);
    int rc = build_doc(&p, &d->root);
    yaml_parser_delete(&p.parser);
    if (rc < 0) {
        cfg_doc_free(d);
        return NULL;
    }
    return d;
}

struct cfg_doc *cfg_parse_file(const char *path, struct err *e)
{
    size_t len = 0;
    char *text = text_read_file(path, CFG_MAX_FILE_SIZE, &len);
    if (!text) {
        char q[CFG_QUOTE_MAX];
        err_set(e, ERR_CONFIG, "cannot read config file %s: %s", cfg_quote(q, sizeof q, path),
                text_read_error(errno));
        return NULL;
    }
    struct cfg_doc *d = cfg_parse_string(path, text, len, e);
    free(text);
    return d;
}

struct cfg_node *cfg_doc_root(struct cfg_doc *d)
{
    return d ? d->root : NULL;
}

void cfg_doc_free(struct cfg_doc *d)
{
    if (!d)
        return;
    node_free(d->root);
    free(d->file);
    free(d);
}
