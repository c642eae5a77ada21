/* dlq_run.c: see dlq_run.h. The order of a replay (put back before removing, the lock and the
 * origin's check before the first move, release on every way out) stays the engine's (dlq.c);
 * this file only walks the pages and decides what the command says and returns. */
#include "dlq_run.h"

#include <stdio.h>
#include <string.h>

/* What the run ends with: the exit status from the replay's outcome. */
static int replay_status(const struct dlq_replay_result *res)
{
    return res->n[DLQ_FATE_FAILED] || res->n[DLQ_FATE_NOT_REACHED] || res->n[DLQ_FATE_UNCERTAIN] ||
                   res->interrupted || res->stopped_after_failures
               ? 1
               : 0;
}

/* A refused replay: ERR_CONFIG is the configuration's (2), anything else the broker's (1). */
static int refused(const struct err *e)
{
    fprintf(stderr, "qrel dlq: %s\n", e->msg);
    return e->code == ERR_CONFIG ? 2 : 1;
}

/* A kind without read_page: one read of everything, as one page. */
static int run_whole(struct dead_letter_join *j, const struct dlq_run_opts *ro, struct dlq_tally *t,
                     struct dlq_replay_result *res, int *report)
{
    struct err e;
    err_clear(&e);
    struct deadline dl = deadline_in(ro->timeout);
    struct dlq_read r;
    enum dlq_purpose purpose = ro->replay ? DLQ_REPLAY : DLQ_INSPECT;
    int rc = dlq_read(j, ro->max, purpose, &dl, ro->timeout, &r, &e);
    if (rc && e.code == ERR_LIMIT && ro->replay && ro->limit && ro->limit < ro->max) {
        /* max_entries of dead letters are more than one reply may hold (max_response_bytes):
         * a replay that moves at most --limit reads that many instead. */
        fprintf(stderr, "qrel dlq: %s; reading --limit=%zu instead\n", e.msg, ro->limit);
        err_clear(&e);
        dl = deadline_in(ro->timeout);
        rc = dlq_read(j, ro->limit, DLQ_REPLAY, &dl, ro->timeout, &r, &e);
    }
    if (rc) {
        fprintf(stderr, "qrel dlq: queue \"%s\": %s\n", j->queue, e.msg);
        return 1;
    }
    dlq_tally_read(t, &r);
    int status = 0;
    if (ro->replay) {
        if (dlq_replay(&r, ro->o, res, &e)) {
            status = refused(&e);
        } else {
            *report = 1;
            if (dlq_tally_fates(t, &r, &e)) {
                fprintf(stderr, "qrel dlq: %s\n", e.msg);
                status = 1;
            }
            status = status ? status : replay_status(res);
        }
    } else {
        *report = 1;
    }
    if (dlq_release(&r, &e)) {
        fprintf(stderr, "qrel dlq: releasing what was read failed: %s\n", e.msg);
        status = status ? status : 1;
    }
    dlq_read_free(&r);
    return status;
}

/* What a page's read that failed leaves the run to do: read smaller pages (1), or stop (0:
 * status and report set). */
static int read_failed(struct dead_letter_join *j, struct dlq_read *r, size_t want, size_t *page,
                       struct err *e, int *status, int *report)
{
    if (e->code == ERR_LIMIT && want > 1) {
        /* A page of large dead letters is more than one reply may hold (max_response_bytes):
         * read smaller pages from there on. */
        *page = want / 2;
        fprintf(stderr, "qrel dlq: %s; reading pages of %zu instead\n", e->msg, *page);
        err_clear(e);
        return 1;
    }
    if (r->pages == 0) {
        fprintf(stderr, "qrel dlq: queue \"%s\": %s\n", j->queue, e->msg);
        *status = 1;
        return 0;
    }
    fprintf(stderr, "qrel dlq: queue \"%s\": reading stopped after %zu dead letters: %s\n",
            j->queue, r->read_so_far, e->msg);
    *report = 1;
    *status = 1;
    return 0;
}

/* A kind with read_page: read, classify, (replay) move, tally, drop; page after page. A replay
 * that moves by windows reads the next page and sends its lookup before this page moves, and
 * collects the lookup after (dlq_read_ahead): the work table answers while the broker moves. */
static int run_pages(struct dead_letter_join *j, const struct dlq_run_opts *ro, struct dlq_tally *t,
                     struct dlq_replay_result *res, int *report)
{
    const struct dlq_replay_opts *o = ro->o;
    struct dlq_read r;
    struct dlq_replay_state st = {0};
    struct err e;
    err_clear(&e);
    dlq_read_start(j, ro->timeout, &r);
    /* Paced moves set the pace themselves; a dry run moves nothing to overlap. */
    int overlap = ro->replay && o->yes && !(o->rate > 0) && dlq_can_read_ahead(&r);
    int status = 0, have = 0; /* have: r holds the next page already, read ahead */
    size_t page = ro->page;
    while (have || (r.read_so_far < ro->max && !(r.pages && r.batch.end))) {
        if (ro->replay && o->yes && o->stop && *o->stop) {
            res->interrupted = 1; /* the pages not read yet are left as they are */
            break;
        }
        size_t want = ro->max - r.read_so_far < page ? ro->max - r.read_so_far : page;
        if (!have) {
            /* Each page gets the timeout: the lock a replay holds outlasts a page's read and
             * lookup. */
            struct deadline dl = deadline_in(ro->timeout);
            if (dlq_read_next(&r, want, ro->replay ? DLQ_REPLAY : DLQ_INSPECT, &dl, &e)) {
                if (read_failed(j, &r, want, &page, &e, &status, report))
                    continue;
                break;
            }
        }
        have = 0;
        if (ro->replay && dlq_replay_choose(&r, o, &st, res, &e)) {
            status = refused(&e);
            *report = 0; /* refused before anything moved: as a whole read's refusal */
            break;
        }
        /* Only once the lock is held and the origin checked: a refused replay reads one page. */
        int ahead = overlap && st.guarded && r.read_so_far < ro->max && !r.batch.end;
        if (ahead) {
            struct deadline dl = deadline_in(ro->timeout);
            want = ro->max - r.read_so_far < page ? ro->max - r.read_so_far : page;
            dlq_read_ahead(&r, want, DLQ_REPLAY, &dl);
        }
        if (ro->replay)
            dlq_replay_move(&r, o, &st, res);
        *report = 1;
        dlq_tally_read(t, &r);
        if (ro->replay && dlq_tally_fates(t, &r, &e)) {
            fprintf(stderr, "qrel dlq: %s; stopped\n", e.msg);
            status = 1;
            break;
        }
        if (res->interrupted || res->stopped_after_failures)
            break; /* what was read ahead is left as it is */
        if (ahead) {
            struct deadline dl = deadline_in(ro->timeout);
            if (dlq_take_ahead(&r, &dl, &e) == 0)
                have = 1;
            else if (!read_failed(j, &r, want, &page, &e, &status, report))
                break;
        }
    }
    dlq_drop_ahead(&r);
    dlq_replay_finish(&r, &st);
    dlq_read_free(&r);
    if (ro->replay && *report)
        status = status ? status : replay_status(res);
    return status;
}

int dlq_run(struct dead_letter_join *j, const struct dlq_run_opts *ro,
            const struct dlq_report_ctx *x, struct buf *out)
{
    const struct dlq_kind *k = j->broker->kind->dlq;
    struct dlq_tally t;
    struct dlq_replay_result res;
    memset(&res, 0, sizeof res);
    struct err e;
    err_clear(&e);
    if (dlq_tally_init(&t, x, &e)) {
        fprintf(stderr, "qrel dlq: %s\n", e.msg);
        return 1;
    }
    int report = 0;
    int status = k->read_page && !k->release ? run_pages(j, ro, &t, &res, &report)
                                             : run_whole(j, ro, &t, &res, &report);
    if (report) {
        if (ro->replay)
            dlq_report_replay_tally(out, x, k, &t, ro->o, &res);
        else
            dlq_report_inspect_tally(out, x, k, &t);
    }
    dlq_tally_free(&t);
    return status;
}
