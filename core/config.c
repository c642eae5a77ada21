/* config.c: the YAML configuration as a tree of positioned nodes, and the strict typed getters.
 *
 * libyaml's event API builds the tree (its document API would lose nothing we need, but events
 * let us refuse aliases, tags, duplicate keys and extra documents at the exact spot they occur).
 * Every node remembers file:line:col so that any later complaint, from the core or from a
 * collector's configure(), can point at the offending text. Getters record the keys they were
 * asked for, so cfg_finish can reject a misspelt key and list the keys that would have worked:
 * a silently ignored typo in a monitoring config is a missing alert nobody notices.
 *
 * Message shapes (user-facing, compared exactly by tests/unit/check_config.c):
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

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "alloc.h"
#include "buf.h"
#include "hashtab.h"
#include "text.h"

/* A config file is small; anything bigger is a mistake (a log file passed by accident). */
#define CFG_MAX_FILE_SIZE (16u * 1024 * 1024)
/* Bounds the recursion of the tree builder: no sane config nests this deep. */
#define CFG_MAX_DEPTH 64
/* Values are quoted in messages at most this long, so the key and position always fit. */
#define CFG_QUOTE_MAX 160
/* Bounds on the tree, so a hostile or generated file inside the size cap cannot make the loader
 * spend seconds or hundreds of MB (a 4M-item flow list fits in 16 MB; each node costs ~100 B).
 * The largest real configurations list some thousands of streams or queues. */
#define CFG_MAX_ITEMS 50000
#define CFG_MAX_NODES 250000

struct cfg_doc {
    char *file; /* the name used in messages; nodes point at it */
    struct cfg_node *root;
};

/* ---- messages ---- */

static const char *kind_word(enum cfg_kind k)
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

static int error_at(struct err *e, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int error_at(struct err *e, const char *file, int line, int col, const char *fmt, ...)
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
        return cfg_error(e, node, "%s: want %s, got %s", what, kind_word(want), kind_word(got));
    return cfg_error(e, node, "want %s, got %s", kind_word(want), kind_word(got));
}

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
        return error_at(p->e, p->file, line, col, "YAML syntax error: %s", problem);
    }
    return error_at(p->e, p->file, (int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1,
                    "YAML syntax error: %s", problem);
}

static int next_event(struct parse *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&p->parser, ev))
        return syntax_error(p);
    return 0;
}

static int mark_error(struct parse *p, yaml_mark_t m, const char *msg)
{
    return error_at(p->e, p->file, (int)m.line + 1, (int)m.column + 1, "%s", msg);
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
        error_at(p->e, p->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
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
            rc = error_at(p->e, p->file, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                          "mapping keys must be strings, got %s", kind_word(k));
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
            error_at(p->e, p->file, line, col, "duplicate key %s (first at line %d)",
                     quote(q, sizeof q, key), map->pairs[first].line);
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
        rc = error_at(p->e, p->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                      "nesting deeper than %d levels", CFG_MAX_DEPTH);
    if (rc == 0 && ++p->nodes > CFG_MAX_NODES)
        rc = error_at(p->e, p->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
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
                  kind_word(doc_root->kind));
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
        err_set(e, ERR_CONFIG, "cannot read config file %s: %s", quote(q, sizeof q, path),
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
    return kind_word(v->kind);
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

/* Decimal only, optional '-': strtoll alone would also take spaces, '+' and trailing junk. */
static int parse_int(const char *s, long long *out)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    if (*d == '\0')
        return -1;
    for (const char *c = d; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || !end || *end != '\0')
        return -1;
    *out = v;
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
    if (v->kind != CFG_SCALAR || parse_int(v->scalar, &n) < 0 || n < min || n > max) {
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
        return cfg_error(e, v, "%s: want a list of strings, got %s", key, kind_word(v->kind));
    for (size_t i = 0; i < v->n; i++) {
        const struct cfg_node *item = v->items[i];
        if (item->kind != CFG_SCALAR)
            return cfg_error(e, item, "%s: want a list of strings, got %s in item %zu", key,
                             kind_word(item->kind), i + 1);
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
        error_at(e, map->file, pair->line, pair->col, "%s", b.data);
        buf_free(&b);
        return -1;
    }
    return 0;
}

/* Prometheus model.ParseDuration: "0", or <digits><unit> runs with units strictly in the order
 * y w d h m s ms, each at most once; overflow past int64 nanoseconds is an error as there. */
int cfg_parse_duration(const char *s, double *seconds)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"y", 365ull * 24 * 3600 * 1000000000ull},
        {"w", 7ull * 24 * 3600 * 1000000000ull},
        {"d", 24ull * 3600 * 1000000000ull},
        {"h", 3600ull * 1000000000ull},
        {"m", 60ull * 1000000000ull},
        {"s", 1000000000ull},
        {"ms", 1000000ull},
    };
    const size_t nunits = sizeof units / sizeof units[0];
    if (!s || *s == '\0')
        return -1;
    if (strcmp(s, "0") == 0) {
        *seconds = 0;
        return 0;
    }
    uint64_t total = 0;
    size_t next_unit = 0; /* units before this index are used up */
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return -1;
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            unsigned digit = (unsigned)(*p - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return -1;
            v = v * 10 + digit;
        }
        const char *u = p;
        while (*p && (*p < '0' || *p > '9'))
            p++;
        size_t ulen = (size_t)(p - u);
        size_t k;
        for (k = 0; k < nunits; k++)
            if (strlen(units[k].name) == ulen && memcmp(units[k].name, u, ulen) == 0)
                break;
        if (k == nunits || k < next_unit)
            return -1;
        next_unit = k + 1;
        if (v > (uint64_t)INT64_MAX / units[k].ns)
            return -1;
        total += v * units[k].ns;
        if (total > (uint64_t)INT64_MAX)
            return -1;
    }
    *seconds = (double)total / 1e9;
    return 0;
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
