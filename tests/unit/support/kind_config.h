/* kind_config.h: a test fixture shared by the collector-kind tests: load a one-source YAML text
 * and configure it through the core's own sources_configure() (the core reads name, kind, timeout
 * and min_interval, the kind its own keys, then unknown keys are refused), then destroy it.
 * Included by one test file each (static inline functions), so no library is needed. */
#ifndef QREL_TEST_KIND_CONFIG_H
#define QREL_TEST_KIND_CONFIG_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "sources.h"
#include "check_refused.h"

/* text: "sources:\n  - name: N\n    kind: K\n..."; configures the first source into *c and
 * returns configure's result, and on success cfg_finish's, with e set on failure. *doc is the
 * parsed text, which c's configuration may point into: the caller frees both with
 * kind_config_free. */
static inline int configure_kind_keep(const struct collector_kind *kind, const char *text,
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

static inline void kind_config_free(struct collector *c, struct cfg_doc *doc)
{
    collector_release(c);
    ck_assert_ptr_null(c->priv);
    free(c->name);
    cfg_doc_free(doc);
}

/* configure_kind_keep, then frees it all. */
static inline int configure_kind_text(const struct collector_kind *kind, const char *text,
                                      struct err *e)
{
    struct collector c;
    struct cfg_doc *d;
    int rc = configure_kind_keep(kind, text, &c, &d, e);
    kind_config_free(&c, d);
    return rc;
}

/* Validates the dead_letters entry (a mapping with queue and id_field) against the configured
 * source c, as the core does, and holds the answer to want: refused with exactly that message, or
 * accepted where want is NULL. */
static inline void kind_config_check_entry(struct collector *c, struct cfg_node *entry,
                                           const char *want)
{
    struct err e;
    char *queue = NULL, *id_field = NULL;
    ck_assert_int_eq(cfg_get_str(entry, "queue", 1, &queue, &e), 0);
    ck_assert_int_eq(cfg_get_str(entry, "id_field", 1, &id_field, &e), 0);
    err_clear(&e);
    int rc = c->kind->dead_letter_validate(c, entry, queue, id_field, &e);
    if (want)
        check_refused(rc, &e, want);
    else
        ck_assert_msg(rc == 0, "%s", e.msg);
    free(queue);
    free(id_field);
}

#endif
