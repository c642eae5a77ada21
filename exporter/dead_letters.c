/* dead_letters.c: the `dead_letters:` join (see the header for why and what it emits).
 *
 * The core owns only the join: which source to ask, in which order, under which deadline, and
 * how the answers add up. What a dead letter's id is and how a table says "done" belong to the
 * kinds, behind the optional hooks of collector.h, so the core names no kind: the kinds that
 * qualify are found in the registry by the hooks they offer, also for error messages. It is
 * handed the collectors of the file, not the loaded file itself: sources.c loads the joins, so
 * this file knowing sources.h would make the two depend on each other. */
#include "dead_letters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "alloc.h"
#include "buf.h"

void dead_letter_split_of(const struct dead_letter_read *r, const enum dead_letter_work *work,
                          struct dead_letter_split *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < r->nids; i++) {
        if (work[i] == DL_WORK_DONE)
            out->done++;
        else if (work[i] == DL_WORK_NOT_DONE)
            out->not_done++;
        else
            out->unknown++;
    }
    size_t beyond = r->total > r->read ? r->total - r->read : 0;
    out->unknown += (double)(r->without_id + beyond);
}

/* ---- configuration ---- */

/* "a, b" of the kinds that offer a hook, for messages that say what would do. malloc'd. */
/* Whether a kind can play its part of a join: the broker whose dead letters are read, or the
 * source that tells which ids are done. A kind with dlq hooks but no dead_letter_ids reads with
 * side effects: its entries are classified only by `qrel dlq`, never on a scrape (scheduler.c
 * skips them). */
static int can_play(const struct collector_kind *k, int broker)
{
    return broker ? k->dead_letter_ids || k->dlq : k->work_done && k->work_table_configure;
}

static char *kinds_with(int broker)
{
    struct buf b;
    buf_init(&b);
    size_t n = 0;
    for (size_t i = 0; i < collector_kind_count(); i++) {
        const struct collector_kind *k = collector_kind_at(i);
        if (!can_play(k, broker))
            continue;
        if (n++)
            buf_puts(&b, ", ");
        buf_puts(&b, k->name);
    }
    if (n == 0)
        buf_puts(&b, "none in this build");
    return buf_steal(&b);
}

/* The configured sources a join may name. */
struct source_list {
    struct collector *const *items;
    size_t n;
};

static struct collector *source_named(const struct source_list *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->items[i]->name, name) == 0)
            return s->items[i];
    return NULL;
}

/* The source named by map's "source" key, when there is one of a kind that can play its part
 * (broker: the one whose dead letters are read; else the one that tells which ids are done). */
static struct collector *find_source(const struct source_list *s, struct cfg_node *map,
                                     const char *name, int broker, struct err *e)
{
    struct collector *c = source_named(s, name);
    if (c && can_play(c->kind, broker))
        return c;
    if (c) {
        const char *why = broker ? ", whose dead letters qrel can neither classify on a scrape "
                                   "nor read with qrel dlq (kinds that can: "
                                 : "; want a source that can tell which ids are done (of kind ";
        char *k = kinds_with(broker);
        cfg_error(e, cfg_at(map, "source"), "source: \"%s\" is a %s source%s%s)", name,
                  c->kind->name, why, k);
        free(k);
        return NULL;
    }
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < s->n; i++) {
        if (i)
            buf_puts(&b, ", ");
        buf_puts(&b, s->items[i]->name);
    }
    cfg_error(e, cfg_at(map, "source"), "source: no source \"%s\" in this file (sources: %s)", name,
              b.data ? b.data : "none");
    buf_free(&b);
    return NULL;
}

static void join_free(struct dead_letter_join *j)
{
    if (j->table && j->work && j->work->kind->work_table_free)
        j->work->kind->work_table_free(j->table);
    free(j->queue);
    free(j->id_field);
    pthread_mutex_destroy(&j->mu);
}

static int load_entry(struct dead_letter_join *j, struct cfg_node *map, size_t index,
                      const struct source_list *s, struct err *e)
{
    char *source = NULL, *work_source = NULL;
    struct cfg_node *wt = NULL;
    long long max = 0;
    int rc = -1;
    char where[100];
    snprintf(where, sizeof where, "entry %zu of dead_letters", index + 1);
    /* Every key read before anything is judged, so a misspelt key is what gets reported. */
    if (cfg_get_str(map, "source", 0, &source, e) || cfg_get_str(map, "queue", 0, &j->queue, e) ||
        cfg_get_str(map, "id_field", 0, &j->id_field, e) ||
        cfg_get_int(map, "max_entries", DEAD_LETTERS_DEFAULT_MAX_ENTRIES, 1, 1000000, &max, e) ||
        cfg_get_node(map, "work_table", CFG_MAP, &wt, e) || cfg_finish(map, where, e))
        goto out;
    j->max_entries = (size_t)max;
    const char *missing = !source        ? "source"
                          : !j->queue    ? "queue"
                          : !j->id_field ? "id_field"
                          : !wt          ? "work_table"
                                         : NULL;
    if (missing) {
        cfg_error(e, map, "missing required key \"%s\" in this mapping", missing);
        goto out;
    }
    if (!*source || !*j->queue || !*j->id_field) {
        const char *k = !*source ? "source" : !*j->queue ? "queue" : "id_field";
        cfg_error(e, cfg_at(map, k), "%s: want a non-empty string", k);
        goto out;
    }
    j->broker = find_source(s, map, source, 1, e);
    if (!j->broker)
        goto out;
    if (j->broker->kind->dead_letter_validate &&
        j->broker->kind->dead_letter_validate(j->broker, map, j->queue, j->id_field, e))
        goto out;

    char wwhere[160];
    snprintf(wwhere, sizeof wwhere, "work_table of %s", where);
    if (cfg_get_str(wt, "source", 1, &work_source, e))
        goto out;
    j->work = find_source(s, wt, work_source, 0, e);
    if (!j->work)
        goto out;
    j->table = j->work->kind->work_table_configure(j->work, wt, wwhere, e);
    if (!j->table)
        goto out;
    rc = 0;
out:
    free(source);
    free(work_source);
    return rc;
}

int dead_letters_load(struct dead_letters *d, struct cfg_node *list, struct collector *const *items,
                      size_t n, struct err *e)
{
    const struct source_list sl = {items, n};
    const struct source_list *s = &sl;
    memset(d, 0, sizeof *d);
    if (!list)
        return 0;
    d->v = xcalloc(list->n ? list->n : 1, sizeof *d->v);
    for (size_t i = 0; i < list->n; i++) {
        struct cfg_node *map = list->items[i];
        if (cfg_expect(map, CFG_MAP, "each entry of dead_letters", e))
            return -1;
        struct dead_letter_join *j = &d->v[d->n++];
        pthread_mutex_init(&j->mu, NULL);
        j->log_limit.every_ms = 60000;
        if (load_entry(j, map, i, s, e))
            return -1;
        for (size_t k = 0; k + 1 < d->n; k++)
            if (d->v[k].broker == j->broker && strcmp(d->v[k].queue, j->queue) == 0)
                return cfg_error(e, cfg_at(map, "queue"),
                                 "queue: \"%s\" of source \"%s\" is listed twice in dead_letters",
                                 j->queue, j->broker->name);
    }
    return 0;
}

void dead_letters_free(struct dead_letters *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        join_free(&d->v[i]);
    free(d->v);
    memset(d, 0, sizeof *d);
}

/* ---- per scrape ---- */

/* Reads the dead letters' ids and asks the work table, each source locked only for its part. */
static int join_once(struct dead_letter_join *j, const struct deadline *dl,
                     struct dead_letter_read *r, struct dead_letter_split *split, struct err *e)
{
    if (collector_lock(j->broker, dl, e))
        return err_prefix(e, "source \"%s\"", j->broker->name);
    int rc = j->broker->kind->dead_letter_ids(j->broker, j->queue, j->id_field, j->max_entries, dl,
                                              r, e);
    collector_unlock(j->broker);
    if (rc)
        return err_prefix(e, "source \"%s\"", j->broker->name);
    enum dead_letter_work *work = xcalloc(r->nids ? r->nids : 1, sizeof *work);
    if (collector_lock(j->work, dl, e) == 0) {
        rc = j->work->kind->work_done(j->work, j->table, (const char *const *)r->ids, r->nids, dl,
                                      work, e);
        collector_unlock(j->work);
    } else {
        rc = -1;
    }
    if (rc == 0)
        dead_letter_split_of(r, work, split);
    free(work);
    return rc ? err_prefix(e, "work_table source \"%s\"", j->work->name) : 0;
}

static void note_error(struct dead_letter_join *j, const struct err *e)
{
    /* Logs are rate-limited as the scheduler's: a new message at once, the same once a minute. */
    log_kv_limited(&j->log_limit, LOG_WARN, e->msg, "dead-letter classification failed", "source",
                   j->broker->name, "queue", j->queue, "reason", err_reason(e->code), "err", e->msg,
                   NULL);
}

struct metric_set *dead_letters_run(struct dead_letter_join *j, const struct deadline *dl)
{
    struct metric_set *out = metric_set_new(j->broker->name, j->broker->kind->name);
    struct dead_letter_read r;
    memset(&r, 0, sizeof r);
    struct dead_letter_split split;
    struct err e;
    err_clear(&e);
    int rc = deadline_expired(dl)
                 ? err_set(&e, ERR_TIMEOUT, "no time left in the scrape after the collections")
                 : join_once(j, dl, &r, &split, &e);
    if (rc && e.code == ERR_NONE)
        err_set(&e, ERR_INTERNAL, "the join failed without saying why");

    pthread_mutex_lock(&j->mu);
    if (rc) {
        j->errors[e.code]++;
        note_error(j, &e);
    } else {
        log_limit_reset(&j->log_limit);
        if (log_enabled(LOG_DEBUG)) {
            char read[32], ids[32], total[32];
            snprintf(read, sizeof read, "%zu", r.read);
            snprintf(ids, sizeof ids, "%zu", r.nids);
            snprintf(total, sizeof total, "%zu", r.total);
            log_kv(LOG_DEBUG, "dead letters classified", "source", j->broker->name, "queue",
                   j->queue, "read", read, "with_id", ids, "total", total, NULL);
        }
    }
    const char *f = "qrel_dead_letter_classified_messages", *q = j->queue;
    const char *dq = r.dead_letter_queue;
    if (rc == 0) {
        /* All three, zeros included, so that a dashboard shows the split as it is. */
        const char *works[3] = {"done", "not_done", "unknown"};
        double v[3] = {split.done, split.not_done, split.unknown};
        for (int i = 0; i < 3; i++) {
            if (dq)
                metric_set_add(out, f, v[i], "queue", q, "dead_letter_queue", dq, "work", works[i],
                               NULL);
            else
                metric_set_add(out, f, v[i], "queue", q, "work", works[i], NULL);
        }
    }
    /* By replay stamp, where the kind reads stamps: all three, zeros included. */
    const char *rf = "qrel_dead_letter_replayed_messages";
    static const char *const replays[3] = {"never", "once", "poison"};
    for (int i = 0; rc == 0 && r.stamps && i < 3; i++) {
        if (dq)
            metric_set_add(out, rf, (double)r.replays[i], "queue", q, "dead_letter_queue", dq,
                           "replays", replays[i], NULL);
        else
            metric_set_add(out, rf, (double)r.replays[i], "queue", q, "replays", replays[i], NULL);
    }
    for (int code = ERR_NONE + 1; code < ERR_CODE_COUNT; code++)
        metric_set_add(out, "qrel_dead_letter_classify_errors_total", j->errors[code], "queue", q,
                       "reason", err_reason((enum err_code)code), NULL);
    pthread_mutex_unlock(&j->mu);
    dead_letter_read_free(&r);
    return out;
}

int dead_letters_check(const struct dead_letters *d, struct err *e)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct dead_letter_join *j = &d->v[i];
        if (!j->work->kind->work_table_check)
            continue;
        struct deadline dl = deadline_in(j->work->timeout);
        if (j->work->kind->work_table_check(j->work, j->table, &dl, e))
            return err_prefix(e,
                              "dead_letters: queue \"%s\" of source \"%s\": work_table source "
                              "\"%s\"",
                              j->queue, j->broker->name, j->work->name);
    }
    return 0;
}
