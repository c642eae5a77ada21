/* postgres.c: `kind: postgres`, one connection to one database and the application tables in it
 * that tell about reliability: dedup tables, claim tables, outboxes (postgres.h).
 *
 * This file owns the source-level keys (connection and secrets, read by pg_params_configure),
 * the connection (kept across scrapes, dropped after any error) and the walk over the sections;
 * each section (collectors/postgres/<section>.c) knows its own items. Before a section's samples
 * are added, the metric set's kind label becomes the section's, so `kind` says what a series
 * describes while qrel_collector_up{kind="postgres"} names the source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "postgres.h"
#include "alloc.h"
#include "buf.h"
#include "client.h"
#include "dlq.h"
#include "work_table.h"

const struct pg_section_kind postgres_sections[] = {
    {"dedup_tables", "dedup_table", dedup_configure, dedup_collect, tables_check, tables_free,
     NULL},
    {"claim_tables", "claim_table", claim_configure, claim_collect, tables_check, tables_free,
     NULL},
    {"outboxes", "outbox", outbox_configure, outbox_collect, tables_check, outbox_free, NULL},
    {"queues", "pg_jobs", queues_configure, queues_collect, queues_check, queues_destroy, NULL},
    {"queries", "sql", sql_configure, sql_collect, sql_check, sql_destroy, sql_finish},
};
#define NSECTIONS (sizeof postgres_sections / sizeof postgres_sections[0])
const size_t postgres_nsections = NSECTIONS;

/* The state (struct pg_state) and the kept connection are client.h's: dlq.c reads them too. */

static void destroy(struct collector *c)
{
    struct pg_state *st = c->priv;
    pg_close(st->conn);
    for (size_t i = 0; i < st->nitems; i++)
        st->items[i].sec->destroy(st->items[i].state);
    free(st->items);
    pg_params_free(&st->params);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct pg_state *st = c->priv;

    /* The section lists are looked up first so that every error's list of known keys names
     * them too (a misspelt "outboxs" is reported with the right spelling beside it). */
    struct cfg_node *lists[NSECTIONS];
    for (size_t s = 0; s < NSECTIONS; s++)
        if (cfg_get_node(map, postgres_sections[s].key, CFG_SEQ, &lists[s], e))
            return -1;
    char where[300];
    snprintf(where, sizeof where, "source \"%s\"", c->name);
    /* Every key of the source is read by now: a misspelt one is reported before an entry's
     * error. */
    if (pg_params_configure(&st->params, map, c->name, e) || cfg_finish(map, where, e))
        return -1;

    for (size_t s = 0; s < NSECTIONS; s++) {
        if (!lists[s])
            continue;
        char what[64];
        snprintf(what, sizeof what, "each entry of %s", postgres_sections[s].key);
        for (size_t i = 0; i < lists[s]->n; i++) {
            struct cfg_node *node = lists[s]->items[i];
            if (cfg_expect(node, CFG_MAP, what, e))
                return -1;
            void *item = postgres_sections[s].configure(node, c->name, e);
            if (!item)
                return -1;
            st->items = xrealloc(st->items, (st->nitems + 1) * sizeof *st->items);
            st->items[st->nitems].sec = &postgres_sections[s];
            st->items[st->nitems].state = item;
            st->nitems++;
        }
        if (postgres_sections[s].finish && lists[s]->n) {
            void **mine = xcalloc(lists[s]->n, sizeof *mine);
            size_t n = 0;
            for (size_t i = 0; i < st->nitems; i++)
                if (st->items[i].sec == &postgres_sections[s])
                    mine[n++] = st->items[i].state;
            int rc = postgres_sections[s].finish(mine, n, e);
            free(mine);
            if (rc)
                return -1;
        }
    }
    if (st->nitems == 0) {
        struct buf b;
        buf_init(&b);
        for (size_t s = 0; s < NSECTIONS; s++)
            buf_printf(&b, "%s%s", s ? (s + 1 == NSECTIONS ? " or " : ", ") : "",
                       postgres_sections[s].key);
        cfg_error(e, map, "want at least one entry in %s of source \"%s\"", b.data, c->name);
        buf_free(&b);
        return -1;
    }
    return 0;
}

static int ensure_conn(struct collector *c, struct pg_state *st, const struct deadline *dl,
                       struct err *e)
{
    return pg_state_conn(st, c->name, dl, e);
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct pg_state *st = c->priv;
    int rc = -1;
    if (ensure_conn(c, st, dl, e))
        return -1;
    for (size_t i = 0; i < st->nitems; i++) {
        const struct pg_item *it = &st->items[i];
        metric_set_set_kind(out, it->sec->kind_label);
        if (it->sec->collect(it->state, st->conn, dl, out, e)) {
            /* The server said no (a column renamed since start-up, say): the item's check names
             * the table and column, which the server's own message may not. */
            if (e->code == ERR_QUERY && it->sec->check && !deadline_expired(dl)) {
                struct err ce;
                err_clear(&ce);
                if (it->sec->check(it->state, st->conn, dl, &ce) && ce.code == ERR_QUERY)
                    *e = ce;
            }
            goto out;
        }
    }
    rc = 0;
out:
    metric_set_set_kind(out, c->kind->name);
    if (rc) {
        pg_close(st->conn);
        st->conn = NULL;
    }
    return rc;
}

/* For --config.check: a connection of its own (a running exporter's collection may hold the
 * kept one), every item checked, every problem reported. */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    struct pg_state *st = c->priv;
    struct pg_conn *conn = pg_connect(&st->params, c->name, dl, e);
    if (!conn)
        return -1;
    size_t failed = 0;
    struct err first;
    err_clear(&first);
    for (size_t i = 0; i < st->nitems; i++) {
        const struct pg_item *it = &st->items[i];
        if (!it->sec->check)
            continue;
        struct err ie;
        err_clear(&ie);
        if (it->sec->check(it->state, conn, dl, &ie)) {
            if (!failed++)
                first = ie;
            if (ie.code == ERR_TIMEOUT || ie.code == ERR_CONNECT)
                break; /* the rest would only repeat it */
        }
    }
    pg_close(conn);
    if (!failed)
        return 0;
    *e = first;
    if (failed > 1) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, " (and %zu more problem%s)", failed - 1,
                 failed > 2 ? "s" : "");
    }
    return -1;
}

/* ---- the work table of a dead-letter join (work_table.h), on the kept connection ---- */

static void *wt_configure(struct collector *c, struct cfg_node *map, const char *where,
                          struct err *e)
{
    (void)c;
    return work_table_configure(map, where, e);
}

static int wt_done(struct collector *c, void *table, const char *const *ids, size_t n,
                   const struct deadline *dl, enum dead_letter_work *work, struct err *e)
{
    struct pg_state *st = c->priv;
    if (ensure_conn(c, st, dl, e))
        return -1;
    if (work_table_run(table, st->conn, st->conn_gen, ids, n, dl, work, e)) {
        pg_close(st->conn);
        st->conn = NULL;
        return -1;
    }
    return 0;
}

static void *wt_send(struct collector *c, void *table, const char *const *ids, size_t n,
                     const struct deadline *dl, struct err *e)
{
    struct pg_state *st = c->priv;
    if (ensure_conn(c, st, dl, e))
        return NULL;
    struct work_table_pending *p = work_table_send(table, st->conn, st->conn_gen, ids, n, dl, e);
    if (!p) {
        pg_close(st->conn);
        st->conn = NULL;
    }
    return p;
}

static int wt_collect(struct collector *c, void *pending, const struct deadline *dl,
                      enum dead_letter_work *work, struct err *e)
{
    struct pg_state *st = c->priv;
    if (work_table_collect(pending, dl, work, e)) {
        pg_close(st->conn);
        st->conn = NULL;
        return -1;
    }
    return 0;
}

/* A connection of its own, as check() has. */
static int wt_check(struct collector *c, void *table, const struct deadline *dl, struct err *e)
{
    struct pg_state *st = c->priv;
    struct pg_conn *conn = pg_connect(&st->params, c->name, dl, e);
    if (!conn)
        return -1;
    int rc = work_table_check(table, conn, dl, e);
    pg_close(conn);
    return rc;
}

static void wt_free(void *table)
{
    work_table_free(table);
}

const struct collector_kind postgres_kind = {
    .name = "postgres",
    .state_size = sizeof(struct pg_state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .check = check,
    .work_table_configure = wt_configure,
    .work_done = wt_done,
    .work_done_send = wt_send,
    .work_done_collect = wt_collect,
    .work_table_check = wt_check,
    .work_table_free = wt_free,
    .dead_letter_validate = postgres_dlq_validate,
    .dlq = &postgres_dlq,
};
