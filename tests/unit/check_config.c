/* check_config.c: unit tests for core/config.c.
 *
 * Config errors are user-facing, so most tests compare the exact message: a table of bad inputs,
 * each with the getter that trips over it and the text the user must see. The rest pin the
 * parts a message depends on: duration syntax, null handling, positions, known-key hints. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "buf.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/check_str.h"

static struct cfg_doc *parse(const char *text, struct err *e)
{
    err_clear(e);
    return cfg_parse_string("x.yml", text, strlen(text), e);
}

/* Parses text that must be valid; fails the test otherwise. */
static struct cfg_doc *parse_ok(const char *text)
{
    struct err e;
    struct cfg_doc *d = parse(text, &e);
    ck_assert_msg(d != NULL, "parse failed: %s", e.msg);
    return d;
}

/* ---- durations ---- */

static const struct {
    const char *text;
    double seconds;
} good_durations[] = {
    {"0", 0},
    {"500ms", 0.5},
    {"30s", 30},
    {"1h30m", 5400},
    {"2d", 172800},
    {"1w", 604800},
    {"1y", 31536000},
    {"1m30s500ms", 90.5},
    {"5m", 300},
    {"0s", 0},
    {"1y1w1d1h1m1s1ms", 31536000 + 604800 + 86400 + 3600 + 60 + 1 + 0.001},
    {"90s", 90},
};

START_TEST(test_duration_good)
{
    double secs = -1;
    ck_assert_int_eq(cfg_parse_duration(good_durations[_i].text, &secs), 0);
    ck_assert_double_eq_tol(secs, good_durations[_i].seconds, 1e-9);
}
END_TEST

static const char *const bad_durations[] = {
    "5",    "1.5s", "-1s", "30 s", "s",   "1x", "30s1h", "",     "1ms1s",
    "1s1s", "00",   " 1s", "1s ",  "+1s", "1S", "1h 1m", "1e3s", "10000000000000000000000s",
    "300y", "1sm",
};

START_TEST(test_duration_bad)
{
    double secs = 42;
    ck_assert_msg(cfg_parse_duration(bad_durations[_i], &secs) < 0, "accepted \"%s\"",
                  bad_durations[_i]);
    ck_assert_double_eq(secs, 42);
}
END_TEST

START_TEST(test_duration_getter)
{
    struct cfg_doc *d = parse_ok("a: 1h30m\nb: ~\nc: \"\"\n");
    struct cfg_node *root = cfg_doc_root(d);
    struct err e;
    double v;
    ck_assert_int_eq(cfg_get_duration(root, "a", 7, &v, &e), 0);
    ck_assert_double_eq(v, 5400);
    ck_assert_int_eq(cfg_get_duration(root, "b", 7, &v, &e), 0);
    ck_assert_double_eq(v, 7);
    ck_assert_int_eq(cfg_get_duration(root, "zz", 2.5, &v, &e), 0);
    ck_assert_double_eq(v, 2.5);
    ck_assert_int_eq(cfg_get_duration(root, "c", 7, &v, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:3:4: c: want a duration like \"5s\", got \"\"");
    cfg_doc_free(d);
}
END_TEST

/* ---- exact error messages ---- */

enum getter {
    G_PARSE, /* cfg_parse_string itself fails */
    G_STR,
    G_STR_REQUIRED,
    G_SECRET,
    G_SECRET_REQUIRED,
    G_DURATION,
    G_INT, /* range 0..15 */
    G_BOOL,
    G_STRLIST,
    G_MAP,
    G_SEQ,
    G_FINISH, /* asks for the keys in `key` (space separated), then cfg_finish */
};

struct bad_case {
    const char *yaml;
    enum getter getter;
    /* A key ("section.key" reads key inside the mapping under section), or for G_FINISH the
     * space-separated keys to ask first. */
    const char *key;
    const char *msg;
};

static const struct bad_case bad_cases[] = {
    /* durations */
    {"timeout: 5\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got \"5\""},
    {"timeout: 1.5s\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got \"1.5s\""},
    {"timeout: -1s\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got \"-1s\""},
    {"timeout: 30 s\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got \"30 s\""},
    {"timeout: 30s1h\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got \"30s1h\""},
    {"timeout: [5s]\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got a list"},
    {"timeout: {a: 1}\n", G_DURATION, "timeout",
     "x.yml:1:10: timeout: want a duration like \"5s\", got a mapping"},
    /* kinds */
    {"global: {}\nsources:\n  name: x\n", G_SEQ, "sources",
     "x.yml:3:3: sources: want a list, got a mapping"},
    {"global: [1]\n", G_MAP, "global", "x.yml:1:9: global: want a mapping, got a list"},
    {"global: 5\n", G_MAP, "global", "x.yml:1:9: global: want a mapping, got a string"},
    {"name: [a]\n", G_STR, "name", "x.yml:1:7: name: want a string, got a list"},
    {"name:\n  a: 1\n", G_STR, "name", "x.yml:2:3: name: want a string, got a mapping"},
    /* integers */
    {"x: 1\ndb: abc\n", G_INT, "db", "x.yml:2:5: db: want an integer from 0 to 15, got \"abc\""},
    {"x: 1\ndb: 16\n", G_INT, "db", "x.yml:2:5: db: want an integer from 0 to 15, got \"16\""},
    {"db: -1\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \"-1\""},
    {"db: 0x1\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \"0x1\""},
    {"db: 1.0\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \"1.0\""},
    {"db: +1\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \"+1\""},
    {"db: \" 1\"\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \" 1\""},
    {"db: \"-\"\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got \"-\""},
    {"db: 99999999999999999999\n", G_INT, "db",
     "x.yml:1:5: db: want an integer from 0 to 15, got \"99999999999999999999\""},
    {"db: [1]\n", G_INT, "db", "x.yml:1:5: db: want an integer from 0 to 15, got a list"},
    /* booleans */
    {"tls: yes\n", G_BOOL, "tls", "x.yml:1:6: tls: want true or false, got \"yes\""},
    {"tls: True\n", G_BOOL, "tls", "x.yml:1:6: tls: want true or false, got \"True\""},
    {"tls: 1\n", G_BOOL, "tls", "x.yml:1:6: tls: want true or false, got \"1\""},
    {"tls: {}\n", G_BOOL, "tls", "x.yml:1:6: tls: want true or false, got a mapping"},
    /* string lists */
    {"groups: mailer\n", G_STRLIST, "groups",
     "x.yml:1:9: groups: want a list of strings, got a string"},
    {"groups: {a: b}\n", G_STRLIST, "groups",
     "x.yml:1:9: groups: want a list of strings, got a mapping"},
    {"groups:\n  - a\n  - b: c\n", G_STRLIST, "groups",
     "x.yml:3:5: groups: want a list of strings, got a mapping in item 2"},
    {"groups: [a, [b]]\n", G_STRLIST, "groups",
     "x.yml:1:13: groups: want a list of strings, got a list in item 2"},
    {"groups: [a, ~]\n", G_STRLIST, "groups",
     "x.yml:1:13: groups: want a list of strings, got null in item 2"},
    /* secrets: never quoted */
    {"password_file: [hunter2]\n", G_SECRET, "password_file",
     "x.yml:1:16: password_file: want a string"},
    {"password_file: {hunter2: 1}\n", G_SECRET, "password_file",
     "x.yml:1:16: password_file: want a string"},
    {"other: 1\n", G_SECRET_REQUIRED, "password_file",
     "x.yml:1:1: missing required key \"password_file\" in this mapping"},
    /* required keys; null counts as absent */
    {"a: 1\nb: 2\nredis:\n  db: 1\n", G_STR_REQUIRED, "redis.address",
     "x.yml:4:3: missing required key \"address\" in this mapping"},
    {"db: 1\nname: ~\n", G_STR_REQUIRED, "name",
     "x.yml:1:1: missing required key \"name\" in this mapping"},
    {"{db: 1}\n", G_STR_REQUIRED, "address",
     "x.yml:1:1: missing required key \"address\" in this mapping"},
    /* unknown keys */
    {"address: a\ndb: 1\nadress: b\n", G_FINISH, "db address password_file db",
     "x.yml:3:1: unknown key \"adress\" in source \"cache\" (known keys: address, db, "
     "password_file)"},
    {"adress: b\n", G_FINISH, "", "x.yml:1:1: unknown key \"adress\" in source \"cache\""},
    {"a: 1\n\"we\\\"ird\\n\": 2\n", G_FINISH, "a",
     "x.yml:2:1: unknown key \"we\\\"ird\\n\" in source \"cache\" (known keys: a)"},
    /* parse errors */
    {"s:\n  name: a\n  x: 1\n  y: 2\n  name: b\n", G_PARSE, NULL,
     "x.yml:5:3: duplicate key \"name\" (first at line 2)"},
    {"name: a\nx: 1\ny: 2\nz: 3\nname: b\n", G_PARSE, NULL,
     "x.yml:5:1: duplicate key \"name\" (first at line 1)"},
    {"s:\n  - name: a\n    name: b\n", G_PARSE, NULL,
     "x.yml:3:5: duplicate key \"name\" (first at line 2)"},
    {"a: &x 1\nb: *x\n", G_PARSE, NULL, "x.yml:1:4: YAML aliases are not supported"},
    {"a: [1]\nb: *x\n", G_PARSE, NULL, "x.yml:2:4: YAML aliases are not supported"},
    {"a: !!str 1\n", G_PARSE, NULL, "x.yml:1:4: YAML tags are not supported"},
    {"a: 1\n---\nb: 2\n", G_PARSE, NULL, "x.yml:2:1: more than one YAML document"},
    {"[a, b]\n", G_PARSE, NULL, "x.yml:1:1: the config file must be a mapping, got a list"},
    {"hello\n", G_PARSE, NULL, "x.yml:1:1: the config file must be a mapping, got a string"},
    {"? [a]\n: 1\n", G_PARSE, NULL, "x.yml:1:3: mapping keys must be strings, got a list"},
    {"a: 1\nb: [1, 2\n", G_PARSE, NULL,
     "x.yml:3:1: YAML syntax error: did not find expected ',' or ']'"},
    {"a: 1\n b: 2\n", G_PARSE, NULL,
     "x.yml:2:3: YAML syntax error: mapping values are not allowed in this context"},
    {"a: \"x\n", G_PARSE, NULL, "x.yml:2:1: YAML syntax error: found unexpected end of stream"},
    {"a: 1\nb: \t\x01\n", G_PARSE, NULL,
     "x.yml:2:5: YAML syntax error: control characters are not allowed"},
    {"a: \xff\n", G_PARSE, NULL, "x.yml:1:4: YAML syntax error: invalid leading UTF-8 octet"},
    /* NUL escapes: "ca\0che" would be read as "ca" by every C string after the parse */
    {"a: \"ca\\0che\"\n", G_PARSE, NULL, "x.yml:1:4: a NUL character is not allowed in a string"},
    {"a: [x, \"\\0\"]\n", G_PARSE, NULL, "x.yml:1:8: a NUL character is not allowed in a string"},
    {"\"k\\0\": 1\n", G_PARSE, NULL, "x.yml:1:1: a NUL character is not allowed in a key"},
};

/* Runs one bad case: the parse or the getter must fail with exactly c->msg. */
static void run_bad_case(const struct bad_case *c)
{
    struct err e;
    struct cfg_doc *d = parse(c->yaml, &e);
    if (c->getter == G_PARSE) {
        ck_assert_msg(d == NULL, "parsed: %s", c->yaml);
        ck_assert_int_eq(e.code, ERR_CONFIG);
        ck_assert_str_eq(e.msg, c->msg);
        return;
    }
    ck_assert_msg(d != NULL, "parse failed: %s", e.msg);
    struct cfg_node *root = cfg_doc_root(d);
    const char *key = c->key;
    const char *dot = c->getter == G_FINISH ? NULL : strchr(key, '.');
    if (dot) {
        char section[64];
        snprintf(section, sizeof section, "%.*s", (int)(dot - key), key);
        ck_assert_int_eq(cfg_get_node(root, section, CFG_MAP, &root, &e), 0);
        ck_assert_ptr_nonnull(root);
        key = dot + 1;
    }
    struct cfg_node *node = NULL;
    char *s = (char *)"untouched";
    char **v = NULL;
    size_t n = 0;
    double dur = 0;
    long long i = 0;
    int b = 0, rc = 0;
    switch (c->getter) {
    case G_STR:
        rc = cfg_get_str(root, key, 0, &s, &e);
        break;
    case G_STR_REQUIRED:
        rc = cfg_get_str(root, key, 1, &s, &e);
        break;
    case G_SECRET:
        rc = cfg_get_secret_ref(root, key, 0, &s, &e);
        break;
    case G_SECRET_REQUIRED:
        rc = cfg_get_secret_ref(root, key, 1, &s, &e);
        break;
    case G_DURATION:
        rc = cfg_get_duration(root, key, 1, &dur, &e);
        break;
    case G_INT:
        rc = cfg_get_int(root, key, 0, 0, 15, &i, &e);
        break;
    case G_BOOL:
        rc = cfg_get_bool(root, key, 0, &b, &e);
        break;
    case G_STRLIST:
        rc = cfg_get_strlist(root, key, &v, &n, &e);
        break;
    case G_MAP:
        rc = cfg_get_node(root, key, CFG_MAP, &node, &e);
        break;
    case G_SEQ:
        rc = cfg_get_node(root, key, CFG_SEQ, &node, &e);
        break;
    case G_FINISH: {
        char keys[256];
        snprintf(keys, sizeof keys, "%s", c->key);
        for (char *save = NULL, *k = strtok_r(keys, " ", &save); k;
             k = strtok_r(NULL, " ", &save)) {
            struct cfg_node *any;
            ck_assert_int_eq(cfg_get_node(root, k, CFG_NULL, &any, &e), 0);
        }
        rc = cfg_finish(root, "source \"cache\"", &e);
        break;
    }
    case G_PARSE:
        break;
    }
    check_refused(rc, &e, c->msg);
    /* A failing getter hands out nothing to free. */
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(node);
    if (c->getter == G_STR || c->getter == G_STR_REQUIRED || c->getter == G_SECRET ||
        c->getter == G_SECRET_REQUIRED)
        ck_assert_ptr_null(s);
    cfg_doc_free(d);
}

START_TEST(test_bad_messages)
{
    run_bad_case(&bad_cases[_i]);
}
END_TEST

/* The example from the header and the design docs, at its documented position. */
START_TEST(test_bad_message_timeout)
{
    const char *text = "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\ni: 9\nj: 10\nk: 11\n"
                       "l: 12\nglobal:\n  timeout: 5\n";
    struct err e;
    struct cfg_doc *d = cfg_parse_string("qrel.yml", text, strlen(text), &e);
    ck_assert_ptr_nonnull(d);
    struct cfg_node *global;
    double v;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "global", CFG_MAP, &global, &e), 0);
    ck_assert_int_eq(cfg_get_duration(global, "timeout", 10, &v, &e), -1);
    ck_assert_str_eq(e.msg, "qrel.yml:14:12: timeout: want a duration like \"5s\", got \"5\"");
    ck_assert_double_eq(v, 10);
    cfg_doc_free(d);

    /* Exactly 14:7 as in the docs: the value starts in column 7. */
    text = "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\ni: 9\nj: 10\nk: 11\nl: 12\nm: 13\n"
           "t:    5\n";
    d = cfg_parse_string("qrel.yml", text, strlen(text), &e);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(cfg_get_duration(cfg_doc_root(d), "t", 10, &v, &e), -1);
    ck_assert_str_eq(e.msg, "qrel.yml:14:7: t: want a duration like \"5s\", got \"5\"");
    cfg_doc_free(d);
}
END_TEST

/* The unknown-key example of the header, in its natural place: a source inside the list. */
START_TEST(test_unknown_key_in_source)
{
    const char *text = "global:\n"
                       "  timeout: 10s\n"
                       "sources:\n"
                       "  - name: web\n"
                       "    kind: redis_stream\n"
                       "  - name: cache\n"
                       "    kind: redis_stream\n"
                       "    db: 3\n"
                       "    adress: 127.0.0.1:6379\n"
                       "    password_file: /p\n";
    struct cfg_doc *d = parse_ok(text);
    struct err e;
    struct cfg_node *sources;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "sources", CFG_SEQ, &sources, &e), 0);
    ck_assert_uint_eq(sources->n, 2);
    struct cfg_node *src = sources->items[1];
    char *name, *addr, *pw;
    long long db;
    ck_assert_int_eq(cfg_get_str(src, "name", 1, &name, &e), 0);
    ck_assert_int_eq(cfg_get_str(src, "kind", 1, &addr, &e), 0);
    free(addr);
    ck_assert_int_eq(cfg_get_secret_ref(src, "password_file", 0, &pw, &e), 0);
    ck_assert_str_eq(pw, "/p");
    ck_assert_int_eq(cfg_get_int(src, "db", 0, 0, 15, &db, &e), 0);
    ck_assert_int_eq(db, 3);
    ck_assert_int_eq(cfg_get_str(src, "address", 0, &addr, &e), 0);
    ck_assert_ptr_null(addr);
    /* Asking twice must not repeat the key in the hint. */
    ck_assert_int_eq(cfg_get_int(src, "db", 0, 0, 15, &db, &e), 0);
    ck_assert_int_eq(cfg_finish(src, "source \"cache\"", &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:9:5: unknown key \"adress\" in source \"cache\" (known keys: "
                            "address, db, kind, name, password_file)");
    ck_assert_int_eq(cfg_get_str(src, "address", 1, &addr, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:6:5: missing required key \"address\" in this mapping");
    free(name);
    free(pw);
    cfg_doc_free(d);
}
END_TEST

/* ---- positive getters ---- */

START_TEST(test_ints)
{
    struct cfg_doc *d = parse_ok("a: 0\nb: 15\nc: -3\nd: 9223372036854775807\n"
                                 "e: -9223372036854775808\nf: \"7\"\ng: 007\n");
    struct cfg_node *r = cfg_doc_root(d);
    struct err e;
    long long v;
    ck_assert_int_eq(cfg_get_int(r, "a", 5, 0, 15, &v, &e), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(cfg_get_int(r, "b", 5, 0, 15, &v, &e), 0);
    ck_assert_int_eq(v, 15);
    ck_assert_int_eq(cfg_get_int(r, "c", 5, -10, 10, &v, &e), 0);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(cfg_get_int(r, "d", 5, LLONG_MIN, LLONG_MAX, &v, &e), 0);
    ck_assert(v == LLONG_MAX);
    ck_assert_int_eq(cfg_get_int(r, "e", 5, LLONG_MIN, LLONG_MAX, &v, &e), 0);
    ck_assert(v == LLONG_MIN);
    ck_assert_int_eq(cfg_get_int(r, "f", 5, 0, 15, &v, &e), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(cfg_get_int(r, "g", 5, 0, 15, &v, &e), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(cfg_get_int(r, "absent", 5, 0, 15, &v, &e), 0);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(cfg_get_int(r, "c", 5, 0, 15, &v, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:3:4: c: want an integer from 0 to 15, got \"-3\"");
    ck_assert_int_eq(v, 5);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_bools)
{
    struct cfg_doc *d = parse_ok("a: true\nb: false\nc: ~\n");
    struct cfg_node *r = cfg_doc_root(d);
    struct err e;
    int v;
    ck_assert_int_eq(cfg_get_bool(r, "a", 0, &v, &e), 0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(cfg_get_bool(r, "b", 1, &v, &e), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(cfg_get_bool(r, "c", 1, &v, &e), 0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(cfg_get_bool(r, "d", 0, &v, &e), 0);
    ck_assert_int_eq(v, 0);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_strlists)
{
    struct cfg_doc *d = parse_ok("a: [x, \"y z\", ''] \nb:\n  - one\n  - 2\nc: []\nd: ~\n");
    struct cfg_node *r = cfg_doc_root(d);
    struct err e;
    char **v;
    size_t n;
    ck_assert_int_eq(cfg_get_strlist(r, "a", &v, &n, &e), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[0], "x");
    ck_assert_str_eq(v[1], "y z");
    ck_assert_str_eq(v[2], "");
    ck_assert_ptr_null(v[3]);
    cfg_strv_free(v);
    ck_assert_int_eq(cfg_get_strlist(r, "b", &v, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(v[0], "one");
    ck_assert_str_eq(v[1], "2");
    cfg_strv_free(v);
    /* [] is an empty vector, not absent. */
    ck_assert_int_eq(cfg_get_strlist(r, "c", &v, &n, &e), 0);
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_null(v[0]);
    ck_assert_uint_eq(n, 0);
    cfg_strv_free(v);
    ck_assert_int_eq(cfg_get_strlist(r, "d", &v, &n, &e), 0);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(cfg_get_strlist(r, "none", &v, &n, &e), 0);
    ck_assert_ptr_null(v);
    cfg_strv_free(NULL);
    ck_assert_int_eq(cfg_finish(r, "the top level", &e), 0);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_strings)
{
    struct cfg_doc *d =
        parse_ok("a: plain text\nb: 'single'\nc: \"dq\\tx\"\nd: |\n  line1\n  line2\ne: 12\n");
    struct cfg_node *r = cfg_doc_root(d);
    struct err e;
    char *s;
    ck_assert_int_eq(cfg_get_str(r, "a", 1, &s, &e), 0);
    check_str_free(s, "plain text");
    ck_assert_int_eq(cfg_get_str(r, "b", 1, &s, &e), 0);
    check_str_free(s, "single");
    ck_assert_int_eq(cfg_get_str(r, "c", 1, &s, &e), 0);
    check_str_free(s, "dq\tx");
    ck_assert_int_eq(cfg_get_str(r, "d", 1, &s, &e), 0);
    check_str_free(s, "line1\nline2\n");
    ck_assert_int_eq(cfg_get_str(r, "e", 1, &s, &e), 0);
    check_str_free(s, "12");
    ck_assert_int_eq(cfg_get_str(r, "f", 0, &s, &e), 0);
    ck_assert_ptr_null(s);
    cfg_doc_free(d);
}
END_TEST

/* ---- null handling ---- */

START_TEST(test_nulls)
{
    const char *text = "a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: \"\"\ng: ''\nh: nULL\n"
                       "i: \"null\"\nj: \"~\"\n";
    struct cfg_doc *d = parse_ok(text);
    struct cfg_node *r = cfg_doc_root(d);
    ck_assert_int_eq(r->kind, CFG_MAP);
    ck_assert_uint_eq(r->n, 10);
    static const enum cfg_kind kinds[] = {CFG_NULL,   CFG_NULL,   CFG_NULL,   CFG_NULL,
                                          CFG_NULL,   CFG_SCALAR, CFG_SCALAR, CFG_SCALAR,
                                          CFG_SCALAR, CFG_SCALAR};
    for (size_t i = 0; i < r->n; i++) {
        ck_assert_msg(r->pairs[i].value->kind == kinds[i], "pair %s", r->pairs[i].key);
        if (kinds[i] == CFG_NULL)
            ck_assert_ptr_null(r->pairs[i].value->scalar);
    }
    ck_assert_str_eq(r->pairs[5].value->scalar, "");
    ck_assert_str_eq(r->pairs[7].value->scalar, "nULL");
    ck_assert_str_eq(r->pairs[8].value->scalar, "null");

    /* Getters treat null as absent (defaults apply) but the key counts as known. */
    struct err e;
    char *s = NULL;
    struct cfg_node *node;
    double dur;
    long long n;
    int b;
    char **v;
    size_t nv;
    ck_assert_int_eq(cfg_get_str(r, "a", 0, &s, &e), 0);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(cfg_get_node(r, "b", CFG_MAP, &node, &e), 0);
    ck_assert_ptr_null(node);
    ck_assert_int_eq(cfg_get_duration(r, "c", 3, &dur, &e), 0);
    ck_assert_double_eq(dur, 3);
    ck_assert_int_eq(cfg_get_int(r, "d", 4, 0, 9, &n, &e), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(cfg_get_bool(r, "e", 1, &b, &e), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(cfg_get_str(r, "f", 1, &s, &e), 0);
    check_str_free(s, "");
    ck_assert_int_eq(cfg_get_strlist(r, "g", &v, &nv, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:7:4: g: want a list of strings, got a string");
    ck_assert_int_eq(cfg_get_secret_ref(r, "h", 1, &s, &e), 0);
    free(s);
    ck_assert_int_eq(cfg_get_str(r, "i", 1, &s, &e), 0);
    free(s);
    ck_assert_int_eq(cfg_get_str(r, "j", 1, &s, &e), 0);
    free(s);
    ck_assert_int_eq(cfg_finish(r, "the top level", &e), 0);
    ck_assert_int_eq(cfg_get_str(r, "c", 1, &s, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:1:1: missing required key \"c\" in this mapping");
    cfg_doc_free(d);
}
END_TEST

static const char *const empty_docs[] = {"",       "\n",   "# only a comment\n", "---\n", "--- ~\n",
                                         "null\n", "{}\n", "---\n...\n"};

START_TEST(test_empty_documents)
{
    struct cfg_doc *d = parse_ok(empty_docs[_i]);
    struct cfg_node *r = cfg_doc_root(d);
    ck_assert_int_eq(r->kind, CFG_MAP);
    ck_assert_uint_eq(r->n, 0);
    struct err e;
    double v;
    ck_assert_int_eq(cfg_get_duration(r, "timeout", 10, &v, &e), 0);
    ck_assert_double_eq(v, 10);
    ck_assert_int_eq(cfg_finish(r, "the top level", &e), 0);
    cfg_doc_free(d);
}
END_TEST

/* ---- positions, nesting, tree identity ---- */

static const char multi_doc[] = "# qrel\n"                          /* 1 */
                                "global:\n"                         /* 2 */
                                "  timeout: 10s\n"                  /* 3 */
                                "sources:\n"                        /* 4 */
                                "  - name: cache\n"                 /* 5 */
                                "    kind: redis_stream\n"          /* 6 */
                                "    streams:\n"                    /* 7 */
                                "      - name: orders\n"            /* 8 */
                                "        groups: [mailer, \"b\"]\n" /* 9 */
                                "        max_deliveries: 3\n"       /* 10 */
                                "  - {name: db, kind: postgres}\n"  /* 11 */
                                "empty: \"\"\n";                    /* 12 */

START_TEST(test_positions)
{
    struct cfg_doc *d = parse_ok(multi_doc);
    struct cfg_node *r = cfg_doc_root(d);
    ck_assert_int_eq(r->line, 2);
    ck_assert_int_eq(r->col, 1);
    ck_assert_uint_eq(r->n, 3);
    ck_assert_str_eq(r->pairs[0].key, "global");
    ck_assert_int_eq(r->pairs[0].line, 2);
    ck_assert_int_eq(r->pairs[0].col, 1);
    struct cfg_node *g = r->pairs[0].value;
    ck_assert_int_eq(g->kind, CFG_MAP);
    ck_assert_int_eq(g->line, 3);
    ck_assert_int_eq(g->col, 3);
    ck_assert_int_eq(g->pairs[0].value->line, 3);
    ck_assert_int_eq(g->pairs[0].value->col, 12);
    ck_assert_str_eq(g->pairs[0].value->scalar, "10s");

    struct cfg_node *srcs = r->pairs[1].value;
    ck_assert_int_eq(srcs->kind, CFG_SEQ);
    ck_assert_int_eq(srcs->line, 5);
    ck_assert_int_eq(srcs->col, 3);
    ck_assert_uint_eq(srcs->n, 2);
    struct cfg_node *cache = srcs->items[0];
    ck_assert_int_eq(cache->line, 5);
    ck_assert_int_eq(cache->col, 5);
    ck_assert_str_eq(cache->pairs[1].key, "kind");
    ck_assert_int_eq(cache->pairs[1].line, 6);
    ck_assert_int_eq(cache->pairs[1].col, 5);
    ck_assert_int_eq(cache->pairs[1].value->col, 11);
    struct cfg_node *streams = cache->pairs[2].value;
    struct cfg_node *orders = streams->items[0];
    ck_assert_int_eq(orders->line, 8);
    ck_assert_int_eq(orders->col, 9);
    struct cfg_node *groups = orders->pairs[1].value;
    ck_assert_int_eq(groups->kind, CFG_SEQ);
    ck_assert_int_eq(groups->line, 9);
    ck_assert_int_eq(groups->col, 17);
    ck_assert_int_eq(groups->items[1]->line, 9);
    ck_assert_int_eq(groups->items[1]->col, 26);
    ck_assert_str_eq(groups->items[1]->scalar, "b");
    ck_assert_int_eq(orders->pairs[2].line, 10);
    ck_assert_int_eq(orders->pairs[2].col, 9);
    struct cfg_node *db = srcs->items[1];
    ck_assert_int_eq(db->kind, CFG_MAP);
    ck_assert_int_eq(db->line, 11);
    ck_assert_int_eq(db->col, 5);
    ck_assert_int_eq(db->pairs[1].line, 11);
    ck_assert_int_eq(db->pairs[1].col, 16);
    ck_assert_int_eq(db->pairs[1].value->col, 22);
    ck_assert_int_eq(r->pairs[2].value->kind, CFG_SCALAR);
    ck_assert_int_eq(r->pairs[2].value->line, 12);
    ck_assert_int_eq(r->pairs[2].value->col, 8);

    /* Getters through the nesting, and the errors they give deep inside. */
    struct err e;
    long long md;
    ck_assert_int_eq(cfg_get_int(orders, "max_deliveries", 0, 0, 2, &md, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:10:25: max_deliveries: want an integer from 0 to 2, got \"3\"");
    ck_assert_int_eq(cfg_finish(orders, "stream \"orders\"", &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:8:9: unknown key \"name\" in stream \"orders\" (known keys: "
                            "max_deliveries)");
    ck_assert_int_eq(cfg_expect(groups, CFG_MAP, "groups", &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:9:17: groups: want a mapping, got a list");
    ck_assert_int_eq(cfg_expect(groups, CFG_SEQ, "groups", &e), 0);
    ck_assert_int_eq(cfg_error(&e, db, "%s %d", "custom", 7), -1);
    ck_assert_str_eq(e.msg, "x.yml:11:5: custom 7");
    ck_assert_int_eq(e.code, ERR_CONFIG);
    cfg_doc_free(d);
}
END_TEST

static int nodes_equal(const struct cfg_node *a, const struct cfg_node *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->line != b->line || a->col != b->col || a->n != b->n ||
        strcmp(a->file, b->file) != 0)
        return 0;
    if ((a->scalar == NULL) != (b->scalar == NULL) ||
        (a->scalar && strcmp(a->scalar, b->scalar) != 0))
        return 0;
    for (size_t i = 0; a->kind == CFG_MAP && i < a->n; i++) {
        const struct cfg_pair *p = &a->pairs[i], *q = &b->pairs[i];
        if (strcmp(p->key, q->key) != 0 || p->line != q->line || p->col != q->col ||
            p->known != q->known || !nodes_equal(p->value, q->value))
            return 0;
    }
    for (size_t i = 0; a->kind == CFG_SEQ && i < a->n; i++)
        if (!nodes_equal(a->items[i], b->items[i]))
            return 0;
    return 1;
}

START_TEST(test_parse_twice_equal)
{
    struct cfg_doc *a = parse_ok(multi_doc);
    struct cfg_doc *b = parse_ok(multi_doc);
    ck_assert(cfg_doc_root(a) != cfg_doc_root(b));
    ck_assert(nodes_equal(cfg_doc_root(a), cfg_doc_root(b)));
    struct cfg_doc *c = parse_ok("global:\n  timeout: 11s\n");
    ck_assert(!nodes_equal(cfg_doc_root(a), cfg_doc_root(c)));
    cfg_doc_free(a);
    cfg_doc_free(b);
    cfg_doc_free(c);
    cfg_doc_free(NULL);
}
END_TEST

START_TEST(test_deep_nesting)
{
    char text[400];
    size_t o = 0;
    o += (size_t)snprintf(text + o, sizeof text - o, "a: ");
    for (int i = 0; i < 100; i++)
        text[o++] = '[';
    for (int i = 0; i < 100; i++)
        text[o++] = ']';
    text[o++] = '\n';
    text[o] = '\0';
    struct err e;
    ck_assert_ptr_null(parse(text, &e));
    ck_assert_str_eq(e.msg, "x.yml:1:67: nesting deeper than 64 levels");

    /* Just under the limit is fine. */
    o = (size_t)snprintf(text, sizeof text, "a: ");
    for (int i = 0; i < 63; i++)
        text[o++] = '[';
    for (int i = 0; i < 63; i++)
        text[o++] = ']';
    text[o] = '\0';
    struct cfg_doc *d = parse_ok(text);
    cfg_doc_free(d);
}
END_TEST

/* The tree's bounds: keys per mapping, items per list, values per file; each error points at
 * the first value past the limit. */
START_TEST(test_limits)
{
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < 50001; i++)
        buf_printf(&b, "k%d: 1\n", i);
    struct err e;
    ck_assert_ptr_null(parse(b.data, &e));
    ck_assert_str_eq(e.msg, "x.yml:50001:1: more than 50000 keys in one mapping (the limit)");
    buf_reset(&b);
    buf_puts(&b, "a: [");
    for (int i = 0; i < 50001; i++)
        buf_puts(&b, "1,");
    buf_puts(&b, "1]\n");
    ck_assert_ptr_null(parse(b.data, &e));
    ck_assert_str_eq(e.msg, "x.yml:1:100005: more than 50000 items in one list (the limit)");
    /* 6 lists of 45,000 stay under the per-list bound but not under 250,000 values. */
    buf_reset(&b);
    for (int l = 0; l < 6; l++) {
        buf_printf(&b, "l%d: [", l);
        for (int i = 0; i < 45000; i++)
            buf_puts(&b, "1,");
        buf_puts(&b, "1]\n");
    }
    ck_assert_ptr_null(parse(b.data, &e));
    ck_assert_msg(strstr(e.msg, ": more than 250000 values in the file (the limit)"), "%s", e.msg);
    /* Just under every bound parses. */
    buf_reset(&b);
    for (int i = 0; i < 50000; i++)
        buf_printf(&b, "k%d: 1\n", i);
    cfg_doc_free(parse_ok(b.data));
    buf_free(&b);
}
END_TEST

/* ---- misc API edges ---- */

START_TEST(test_renamed_key)
{
    /* An old spelling is refused at its own position, naming the new one; absent, nothing. */
    struct err e;
    struct cfg_doc *d = parse_ok("a: 1\n  \nmax_reply_bytes: 5\n");
    struct cfg_node *root = cfg_doc_root(d);
    ck_assert_int_eq(cfg_refuse_renamed(root, "max_reply_bytes", "max_response_bytes", NULL, &e),
                     -1);
    ck_assert_str_eq(e.msg, "x.yml:3:1: \"max_reply_bytes\" is now called \"max_response_bytes\"");
    ck_assert_int_eq(cfg_refuse_renamed(root, "pattern", "regex", "pattern is a glob now", &e), 0);
    cfg_doc_free(d);
    d = parse_ok("pattern: 'a.*'\n");
    ck_assert_int_eq(
        cfg_refuse_renamed(cfg_doc_root(d), "pattern", "regex", "pattern is a glob now", &e), -1);
    ck_assert_str_eq(e.msg,
                     "x.yml:1:1: \"pattern\" is now called \"regex\": pattern is a glob now");
    ck_assert_int_eq(cfg_refuse_renamed(NULL, "a", "b", NULL, &e), 0);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_absent_section)
{
    /* A NULL map stands for an absent section: every key is absent, finish passes. */
    struct err e;
    double v;
    char *s = (char *)"x";
    ck_assert_int_eq(cfg_get_duration(NULL, "timeout", 4, &v, &e), 0);
    ck_assert_double_eq(v, 4);
    ck_assert_int_eq(cfg_get_str(NULL, "name", 0, &s, &e), 0);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(cfg_get_str(NULL, "name", 1, &s, &e), -1);
    ck_assert_str_eq(e.msg, "missing required key \"name\" in this mapping");
    ck_assert_int_eq(cfg_finish(NULL, "x", &e), 0);
    ck_assert_int_eq(cfg_expect(NULL, CFG_MAP, "global", &e), -1);
    ck_assert_str_eq(e.msg, "global: want a mapping, got null");

    /* Getters on a node that is not a mapping. */
    struct cfg_doc *d = parse_ok("l: [1, 2]\n");
    struct cfg_node *l;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "l", CFG_NULL, &l, &e), 0);
    ck_assert_int_eq(l->kind, CFG_SEQ);
    ck_assert_int_eq(cfg_get_str(l, "name", 0, &s, &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:1:4: want a mapping, got a list");
    ck_assert_int_eq(cfg_finish(l, "x", &e), -1);
    ck_assert_str_eq(e.msg, "x.yml:1:4: want a mapping, got a list");
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_long_value_is_cut)
{
    char text[1200];
    size_t o = (size_t)snprintf(text, sizeof text, "t: ");
    for (int i = 0; i < 1000; i++)
        text[o++] = 'z';
    text[o] = '\0';
    struct cfg_doc *d = parse_ok(text);
    struct err e;
    double v;
    ck_assert_int_eq(cfg_get_duration(cfg_doc_root(d), "t", 1, &v, &e), -1);
    ck_assert_msg(strncmp(e.msg, "x.yml:1:4: t: want a duration like \"5s\", got \"zzz", 48) == 0,
                  "%s", e.msg);
    size_t len = strlen(e.msg);
    ck_assert_str_eq(e.msg + len - 6, "zz...\"");
    ck_assert(len < sizeof e.msg - 1);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_parse_file)
{
    char path[] = "/tmp/check_config_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "global:\n  timeout: 5\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    struct err e;
    struct cfg_doc *d = cfg_parse_file(path, &e);
    ck_assert_ptr_nonnull(d);
    struct cfg_node *g;
    double v;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "global", CFG_MAP, &g, &e), 0);
    ck_assert_int_eq(cfg_get_duration(g, "timeout", 1, &v, &e), -1);
    char want[512];
    snprintf(want, sizeof want, "%s:2:12: timeout: want a duration like \"5s\", got \"5\"", path);
    ck_assert_str_eq(e.msg, want);
    cfg_doc_free(d);
    unlink(path);

    ck_assert_ptr_null(cfg_parse_file(path, &e));
    snprintf(want, sizeof want, "cannot read config file \"%s\": %s", path, strerror(ENOENT));
    ck_assert_str_eq(e.msg, want);
    ck_assert_int_eq(e.code, ERR_CONFIG);

    /* A FIFO is refused at once (without a writer, reading it would block for ever). */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_ptr_null(cfg_parse_file(path, &e));
    snprintf(want, sizeof want, "cannot read config file \"%s\": not a regular file", path);
    ck_assert_str_eq(e.msg, want);
    unlink(path);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("durations");
    tcase_add_loop_test(tc, test_duration_good, 0,
                        (int)(sizeof good_durations / sizeof good_durations[0]));
    tcase_add_loop_test(tc, test_duration_bad, 0,
                        (int)(sizeof bad_durations / sizeof bad_durations[0]));
    tcase_add_test(tc, test_duration_getter);
    suite_add_tcase(s, tc);

    tc = tcase_create("messages");
    tcase_add_loop_test(tc, test_bad_messages, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, test_bad_message_timeout);
    tcase_add_test(tc, test_unknown_key_in_source);
    suite_add_tcase(s, tc);

    tc = tcase_create("getters");
    tcase_add_test(tc, test_ints);
    tcase_add_test(tc, test_bools);
    tcase_add_test(tc, test_strlists);
    tcase_add_test(tc, test_strings);
    tcase_add_test(tc, test_nulls);
    tcase_add_loop_test(tc, test_empty_documents, 0,
                        (int)(sizeof empty_docs / sizeof empty_docs[0]));
    tcase_add_test(tc, test_absent_section);
    tcase_add_test(tc, test_renamed_key);
    tcase_add_test(tc, test_long_value_is_cut);
    suite_add_tcase(s, tc);

    tc = tcase_create("tree");
    tcase_add_test(tc, test_positions);
    tcase_add_test(tc, test_parse_twice_equal);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_parse_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(config_suite(), CK_NORMAL);
}
