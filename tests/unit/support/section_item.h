/* section_item.h: a test fixture shared by the postgres section tests: parse a YAML list and hand
 * its first item to a section's configure(), as postgres.c does. Included by one test file each
 * (static functions), so no library is needed. */
#ifndef QREL_TEST_SECTION_ITEM_H
#define QREL_TEST_SECTION_ITEM_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "postgres/postgres.h"
#include "alloc.h"

static struct cfg_doc *doc;

/* The first item of list (YAML text starting "- "), as postgres.c passes it to configure: the
 * list is put under a key on line 1, so its first item starts on line 2. */
static struct cfg_node *item_of(const char *list)
{
    struct err e;
    char *text = xasprintf("l:\n%s", list);
    doc = cfg_parse_string("q.yml", text, strlen(text), &e);
    free(text);
    ck_assert_msg(doc != NULL, "%s", e.msg);
    struct cfg_node *seq = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "l", CFG_SEQ, &seq, &e), 0);
    ck_assert_uint_ge(seq->n, 1);
    return seq->items[0];
}

/* The row of postgres_sections whose configure hook is fn: the section as postgres.c sees it. */
static inline const struct pg_section_kind *section_of(pg_configure_fn *fn)
{
    for (size_t i = 0; i < postgres_nsections; i++)
        if (postgres_sections[i].configure == fn)
            return &postgres_sections[i];
    ck_abort_msg("no section row has this configure hook");
    return NULL;
}

/* A Check teardown: frees the document item_of parsed. */
static void teardown_doc(void)
{
    cfg_doc_free(doc);
    doc = NULL;
}

#endif
