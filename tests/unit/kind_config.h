/* kind_config.h: a test fixture shared by the collector-kind tests: load a one-source YAML text
 * and configure its kind the way sources.c does (the core reads name, kind, timeout and
 * min_interval, the kind its own keys, then unknown keys are refused), then destroy it. Included
 * by one test file each (static function), so no library is needed. */
#ifndef QREL_TEST_KIND_CONFIG_H
#define QREL_TEST_KIND_CONFIG_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"

/* text: "sources:\n  - name: N\n    kind: K\n..."; returns configure's result, and on success
 * cfg_finish's, with e set on failure. */
static int configure_kind_text(const struct collector_kind *kind, const char *text, struct err *e)
{
    err_clear(e);
    struct cfg_doc *d = cfg_parse_string("x.yml", text, strlen(text), e);
    ck_assert_msg(d != NULL, "YAML of the test: %s", e->msg);
    struct cfg_node *seq = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(d), "sources", CFG_SEQ, &seq, e), 0);
    struct cfg_node *map = seq->items[0];
    char *name = NULL, *kind_name = NULL;
    double timeout = 10, min_interval = 0;
    ck_assert_int_eq(cfg_get_str(map, "name", 1, &name, e), 0);
    ck_assert_int_eq(cfg_get_str(map, "kind", 1, &kind_name, e), 0);
    ck_assert_int_eq(cfg_get_duration(map, "timeout", 10, &timeout, e), 0);
    ck_assert_int_eq(cfg_get_duration(map, "min_interval", 0, &min_interval, e), 0);
    struct collector c = {
        .name = name, .kind = kind, .timeout = timeout, .min_interval = min_interval};
    int rc = kind->configure(&c, map, e);
    if (rc == 0) {
        char where[200];
        snprintf(where, sizeof where, "source \"%s\"", name);
        rc = cfg_finish(map, where, e);
    }
    kind->destroy(&c);
    ck_assert_ptr_null(c.priv);
    free(name);
    free(kind_name);
    cfg_doc_free(d);
    return rc;
}

#endif
