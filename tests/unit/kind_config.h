/* kind_config.h: a test fixture shared by the collector-kind tests: load a one-source YAML text
 * and configure it through the core's own sources_configure() (the core reads name, kind, timeout
 * and min_interval, the kind its own keys, then unknown keys are refused), then destroy it.
 * Included by one test file each (static function), so no library is needed. */
#ifndef QREL_TEST_KIND_CONFIG_H
#define QREL_TEST_KIND_CONFIG_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "sources.h"

/* text: "sources:\n  - name: N\n    kind: K\n..."; configures the first source into *c and
 * returns configure's result, and on success cfg_finish's, with e set on failure. *doc is the
 * parsed text, which c's configuration may point into: the caller frees both with
 * kind_config_free. */
static int configure_kind_keep(const struct collector_kind *kind, const char *text,
                               struct collector *c, struct cfg_doc **doc, struct err *e)
{
    err_clear(e);
    struct cfg_doc *d = cfg_parse_string("x.yml", text, strlen(text), e);
    ck_assert_msg(d != NULL, "YAML of the test: %s", e->msg);
    struct cfg_node *seq = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "sources", CFG_SEQ, &seq, e), 0);
    struct sources s = {.timeout = SOURCES_DEFAULT_TIMEOUT};
    memset(c, 0, sizeof *c);
    int rc = sources_configure(&s, c, seq->items[0], e);
    ck_assert_msg(c->kind == kind, "the source's kind is %s", kind->name);
    *doc = d;
    return rc;
}

static void kind_config_free(struct collector *c, struct cfg_doc *doc)
{
    collector_release(c);
    ck_assert_ptr_null(c->priv);
    free(c->name);
    cfg_doc_free(doc);
}

/* configure_kind_keep, then frees it all. */
static int configure_kind_text(const struct collector_kind *kind, const char *text, struct err *e)
{
    struct collector c;
    struct cfg_doc *d;
    int rc = configure_kind_keep(kind, text, &c, &d, e);
    kind_config_free(&c, d);
    return rc;
}

#endif
