/* redis_stream/dlq.c: `qrel dlq`'s hooks for Redis streams (core/dlq_kind.h).
 *
 * A dead-letter stream is read with XLEN and XRANGE, which change nothing (no group reads it),
 * so there is no read_effect and nothing to release. A replay never strands an entry and never
 * puts one back twice:
 * - check_origin asks XINFO GROUPS of the stream it came from (the queue): a stream that does not
 *   exist (XADD would create it, with no group, and consumers that create their group at `$`
 *   would never read it) or that no group reads is refused, and every entry stays dead;
 * - lock takes `qrel:replay-lock:<dead-letter stream>` with SET NX PX, so one replay per
 *   dead-letter stream runs at a time; it expires, so a killed replay blocks the next one only
 *   for a while, and each move renews it;
 * - move_window is one Lua script for up to DLQ_MOVE_WINDOW entries, atomic in Redis: it checks
 *   once that the lock is still this run's (and renews it) and that the stream is still read by
 *   a group, then, entry by entry, adds the entry to the stream (NOMKSTREAM, its fields in their
 *   order) and deletes it from the dead-letter stream, and replies with each entry's outcome. An
 *   entry another replay or client removed meanwhile is not put back ("gone": its copy is
 *   deleted again before any consumer can read it); a window cut short by a timeout happened
 *   whole or not at all. move is the same script for one entry (a paced replay's).
 * The entry gets a new id: Redis refuses ids below the stream's last one, and consumers read by
 * group position, not by id.
 * It also gets the replay stamp, a last field DLQ_STAMP holding its replays + 1: the script drops
 * an earlier stamp field, so an entry replayed twice carries one stamp saying 2, not two (a
 * consumer that dead-letters it again copies its fields, stamp included, and the next read tells a
 * poison message from a new one). */
#include "client.h"
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/redis_lock.h"

/* What a page of the read fills: the batch, and whether its entries keep their fields (a
 * replay puts them back; inspect only counts and names them, so it holds no body). */
struct reading {
    struct dlq_batch *b;
    int keep_fields;
};

static int add_entries(const redisReply *r, const char *id_field, void *out, struct err *e)
{
    struct reading *rd = out;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array of entries, got %s",
                       redis_reply_type_name(r));
    for (size_t k = 0; k < r->elements; k++) {
        struct dlq_message *m = dlq_batch_push(rd->b);
        if (redis_stream_dlq_entry(r->element[k], id_field, m, e))
            return err_prefix(e, "entry %zu", k + 1);
        if (!rd->keep_fields) {
            redis_stream_fields_free(m->kind_data);
            m->kind_data = NULL;
        }
    }
    return 0;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    /* a removed entry is gone: a rerun cannot see it again, so purpose changes only what is kept */
    struct reading rd = {out, purpose == DLQ_REPLAY};
    out->dead_letter_queue = redis_stream_client_read_dead(c, queue, id_field, max, dl, add_entries,
                                                           &rd, &out->total, e);
    if (!out->dead_letter_queue)
        return -1;
    out->origin = xstrdup(queue);
    return 0;
}

/* A page at a time (read_page): what `qrel dlq` holds is one page, however long the stream. */
static int dlq_read_page(struct collector *c, const char *queue, const char *id_field, size_t max,
                         enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *b,
                         struct err *e)
{
    struct reading rd = {b, purpose == DLQ_REPLAY};
    if (redis_stream_client_read_dead_page(c, queue, id_field, max, dl, add_entries, &rd, b, e))
        return -1;
    if (!b->origin)
        b->origin = xstrdup(queue);
    return 0;
}

/* After a failure: the connection is dropped, and e names it (the pipeline's own errors do
 * already, a reply's do not). */
static void drop_conn(struct state *st, struct err *e)
{
    const char *label = redis_conn_label(st->conn);
    if (strncmp(e->msg, label, strlen(label)) != 0)
        err_prefix(e, "%s", label);
    redis_conn_close(st->conn);
    st->conn = NULL;
}

/* One command on the source's connection, its reply handed to fn. The connection is dropped
 * after any failure, as collect() does. */
/* Runs p on the source's connection, dropping it after an error (redis_lock_runner's shape). */
static int run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                    const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    if (!redis_stream_client_conn(c, dl, e))
        return -1;
    if (redis_pipe_exec_each(st->conn, p, dl, st->rs.max_response_bytes, fn, ctx, e)) {
        drop_conn(st, e);
        return -1;
    }
    return 0;
}

static int run_one(struct collector *c, int argc, const char *const *argv, const size_t *argvlen,
                   redis_reply_fn fn, void *ctx, const struct deadline *dl, struct err *e)
{
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_add(p, argc, argv, argvlen);
    int rc = run_pipe(c, p, fn, ctx, dl, e);
    redis_pipe_free(p);
    return rc;
}

/* A reply that must be of type want (and no error); its integer is kept in got when there is
 * one. */
struct one_reply {
    const char *cmd;
    int want;
    long long got;
};

static int check_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    struct one_reply *o = ctx;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "%s: %.*s", o->cmd, n, r->str);
    }
    if (!r || (int)r->type != o->want)
        return err_set(e, ERR_PROTOCOL, "%s: unexpected reply (%s)", o->cmd,
                       redis_reply_type_name(r));
    o->got = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    return 0;
}

/* ---- the origin must exist and be read by a group ---- */

static int origin_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    const char *origin = ctx;
    if (redis_reply_is_error(r, "ERR no such key"))
        return err_set(e, ERR_QUERY,
                       "stream \"%.200s\" does not exist: a replay would create it with no "
                       "consumer group, and no consumer would read what it put back",
                       origin);
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "stream \"%.200s\": XINFO GROUPS: %.*s", origin, n, r->str);
    }
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "XINFO GROUPS: want an array, got %s",
                       redis_reply_type_name(r));
    if (r->elements == 0)
        return err_set(e, ERR_QUERY,
                       "stream \"%.200s\" has no consumer group: no consumer would read what a "
                       "replay put back (create the consumers' group first)",
                       origin);
    return 0;
}

static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    if (strcmp(b->origin, b->dead_letter_queue) == 0)
        return err_set(e, ERR_CONFIG,
                       "stream \"%.200s\" is its own dead-letter stream: a replay would move "
                       "nothing anywhere",
                       b->origin);
    const char *argv[] = {"XINFO", "GROUPS", b->origin};
    return run_one(c, 3, argv, NULL, origin_reply, b->origin, dl, e);
}

/* ---- one replay per dead-letter stream ---- */

static int dlq_lock(struct collector *c, struct dlq_batch *b, double hold,
                    const struct deadline *dl, struct err *e)
{
    return redis_replay_lock_batch(c, run_pipe, b, NULL, "dead-letter stream ", hold, dl, e);
}

static int dlq_unlock(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                      struct err *e)
{
    return redis_replay_unlock_batch(c, run_pipe, b, dl, e);
}

/* ---- the move: one script a window ---- */

/* The script passes at most 7,900 field names and values (the stamp's included) to XADD, and
 * refuses an entry with more: Lua's unpack stops at about 8,000 values, and an error there would
 * end the script half-way, after the window's earlier moves. */

/* A window of moves in one script, atomic in Redis: it runs whole while nothing else runs. KEYS:
 * dead-letter stream, stream, lock; ARGV: token, hold ms, then per entry its id, its stamp, the
 * count of its field names and values, and those. The checks that do not depend on the entry
 * (the lock is this run's, which it renews; the stream is still read by a group) run once, and a
 * failed one refuses the whole window before anything is written, as it would have refused each
 * entry's move. Then per entry, in order: it is added to the stream (NOMKSTREAM, its fields in
 * their order, the stamp last) and deleted from the dead-letter stream; when the delete finds it
 * gone (another client removed it) the copy just added is deleted again, which no consumer can
 * have seen, the script being atomic. Adding first and learning "gone" from XDEL's count spares
 * each entry the XRANGE that would ask first: on a stream deleted from its head, as a replay does,
 * each lookup walks the node's deleted entries, and that XRANGE was a quarter of Redis's work
 * (callgrind). The reply has one element per entry: 1 moved, 0 gone (nothing left changed), or
 * an error (its XADD was refused: nothing done, still dead). Redis does not undo a script's writes
 * when a command fails, so each command is a pcall and an entry's failure stays its own: the next
 * entry is moved as if alone. An XDEL refused after its XADD (a user allowed to add but not to
 * delete) leaves that entry in both places and stops the window, the rest refused unmoved, so
 * that the mistake is not repeated on every entry. */
/* How the script tells an entry put back but not removed (the XDEL refused) from one not put
 * back: its error reply starts with this, the XDEL's error after it. */
#define BOTH_MARK "BOTH: "
#define BOTH_REPLY "QREL " BOTH_MARK

static const char move_script[] =
    "local function refuse(why) return redis.error_reply('QREL ' .. why) end "
    "local function failed(r) return type(r) == 'table' and r.err ~= nil end "
    "if redis.call('GET', KEYS[3]) ~= ARGV[1] then "
    "return refuse('this replay lost its lock (it expired; another replay may hold it now)') "
    "end "
    "redis.call('PEXPIRE', KEYS[3], ARGV[2]) "
    "local g = redis.pcall('XINFO', 'GROUPS', KEYS[2]) "
    "if failed(g) then return refuse('stream ' .. KEYS[2] .. ': ' .. g.err) end "
    "if #g == 0 then return refuse('stream ' .. KEYS[2] .. ' has no consumer group any more') end "
    "local out, a, stop = {}, 3, nil "
    "while a <= #ARGV do "
    "local id, n = ARGV[a], tonumber(ARGV[a + 2]) "
    "local f = {} "
    "for i = a + 3, a + 2 + n - 1, 2 do "
    "if ARGV[i] ~= '" DLQ_STAMP "' then f[#f + 1] = ARGV[i]; f[#f + 1] = ARGV[i + 1] end "
    "end "
    "f[#f + 1] = '" DLQ_STAMP "'; f[#f + 1] = ARGV[a + 1] "
    "a = a + 3 + n "
    "local r = stop or (#f > 7900 and refuse('its ' .. #f .. ' field names and values are more "
    "than a script can pass on (7900)')) "
    "if not r then r = redis.pcall('XADD', KEYS[2], 'NOMKSTREAM', '*', unpack(f)) "
    "if type(r) == 'boolean' then r = refuse('stream ' .. KEYS[2] .. ' added nothing') "
    "elseif type(r) == 'string' then "
    "local d = redis.pcall('XDEL', KEYS[1], id) "
    "if failed(d) then "
    "stop = refuse('not moved: an earlier entry of its window could not be removed') "
    "r = refuse('" BOTH_MARK "' .. d.err) "
    "elseif d == 1 then r = 1 "
    "else d = redis.pcall('XDEL', KEYS[2], r) "
    "if failed(d) then "
    "stop = refuse('not moved: an earlier entry of its "
    "window could not be taken back') "
    "r = refuse('gone from ' .. KEYS[1] .. ', and its copy "
    "on ' .. KEYS[2] .. ' could not be "
    "taken back: ' .. d.err) "
    "else r = 0 end "
    "end "
    "end "
    "end "
    "out[#out + 1] = r "
    "end "
    "return out";

/* Adds the EVAL of move_script for the n messages m[0..n) to p, the window position of each
 * message it carries in at[] (one that cannot be moved gets its outcome in out[] instead). Returns
 * how many it carries (0: nothing added). */
static size_t add_window(struct redis_pipe *p, const struct dlq_batch *b,
                         struct dlq_message *const *m, size_t n, size_t *at,
                         struct dlq_move_outcome *out)
{
    const struct redis_replay_lock *l = b->kind_data;
    enum { HEAD = 8 };
    size_t argc = HEAD, sent = 0;
    for (size_t i = 0; i < n; i++) {
        const struct redis_stream_fields *f = m[i]->kind_data;
        argc += 3 + (f ? f->n : 0);
    }
    const char **argv = xcalloc(argc, sizeof *argv);
    size_t *argvlen = xcalloc(argc, sizeof *argvlen);
    char(*num)[2][24] = xcalloc(n ? n : 1, sizeof *num); /* each entry's stamp and field count */
    const char *head[HEAD] = {"EVAL",
                              move_script,
                              "3",
                              b->dead_letter_queue,
                              b->origin,
                              l ? l->key : "",
                              l ? l->token : "",
                              l ? l->hold_ms : ""};
    for (size_t i = 0; i < HEAD; i++) {
        argv[i] = head[i];
        argvlen[i] = strlen(head[i]);
    }
    size_t a = HEAD;
    for (size_t i = 0; i < n; i++) {
        const struct redis_stream_fields *f = m[i]->kind_data;
        if (!l) {
            err_set(&out[i].e, ERR_INTERNAL, "a move without the replay lock");
            continue;
        }
        if (!f || f->n == 0) {
            err_set(&out[i].e, ERR_INTERNAL, "entry %s has no fields to put back",
                    m[i]->message_id);
            continue;
        }
        /* replays + 1; an unreadable stamp counts as none */
        snprintf(num[i][0], sizeof num[i][0], "%lld",
                 (long long)(m[i]->replays > 0 ? m[i]->replays + 1 : 1));
        snprintf(num[i][1], sizeof num[i][1], "%zu", f->n);
        const char *three[] = {m[i]->message_id, num[i][0], num[i][1]};
        for (size_t k = 0; k < 3; k++, a++) {
            argv[a] = three[k];
            argvlen[a] = strlen(three[k]);
        }
        for (size_t k = 0; k < f->n; k++, a++) {
            argv[a] = f->v[k];
            argvlen[a] = f->len[k];
        }
        at[sent++] = i;
    }
    if (sent)
        redis_pipe_add(p, (int)a, argv, argvlen);
    free(argv);
    free(argvlen);
    free(num);
    return sent;
}

/* The reply to a window's script: an error (the window refused: every entry keeps it, as its own
 * move's refusal) or one element per entry sent, in order. at[k]: the window position of the
 * k-th entry sent. */
struct window {
    const char *origin;
    const size_t *at;
    size_t sent;
    struct dlq_move_outcome *out;
};

static void entry_outcome(struct window *w, size_t k, const redisReply *r)
{
    struct dlq_move_outcome *o = &w->out[w->at[k]];
    struct one_reply one = {"EVAL (move)", REDIS_REPLY_INTEGER, 0};
    err_clear(&o->e);
    if (redis_reply_is_error(r, BOTH_REPLY)) {
        size_t skip = sizeof BOTH_REPLY - 1, n = r->len - skip;
        err_set(&o->e, ERR_QUERY, "XDEL: %.*s", (int)(n > 300 ? 300 : n), r->str + skip);
        o->rc = 2;
    } else if (check_reply(&one, k, r, &o->e)) {
        err_prefix(&o->e, "stream \"%.200s\"", w->origin);
        o->rc = -1;
    } else {
        o->rc = one.got == 1 ? 0 : 1;
    }
}

static int window_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    struct window *w = ctx;
    if (!r || (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_ERROR))
        return err_set(e, ERR_PROTOCOL, "EVAL (move): want an array, got %s",
                       redis_reply_type_name(r));
    if (r->type == REDIS_REPLY_ARRAY && r->elements != w->sent)
        return err_set(e, ERR_PROTOCOL, "EVAL (move): %zu replies for %zu entries", r->elements,
                       w->sent);
    for (size_t k = 0; k < w->sent; k++)
        entry_outcome(w, k, r && r->type == REDIS_REPLY_ARRAY ? r->element[k] : r);
    return 0;
}

static size_t dlq_move_window(struct collector *c, struct dlq_batch *b,
                              struct dlq_message *const *m, size_t n, const struct deadline *dl,
                              struct dlq_move_outcome *out, struct err *e)
{
    struct redis_pipe *p = redis_pipe_new();
    size_t *at = xcalloc(n ? n : 1, sizeof *at);
    for (size_t i = 0; i < n; i++) {
        err_clear(&out[i].e);
        out[i].rc = -1;
    }
    size_t sent = add_window(p, b, m, n, at, out);
    struct window w = {b->origin, at, sent, out};
    int rc = sent ? run_pipe(c, p, window_reply, &w, dl, e) : 0;
    redis_pipe_free(p);
    /* Cut short: the outcomes end before the first entry the script carried (those before it
     * that could not be sent have theirs already). */
    size_t filled = rc == 0 ? n : at[0];
    free(at);
    if (rc)
        err_prefix(e, "stream \"%.200s\"", b->origin);
    return filled;
}

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    struct dlq_move_outcome o;
    if (dlq_move_window(c, b, &m, 1, dl, &o, e) == 0)
        return -1;
    if (o.rc < 0 || o.rc == 2)
        *e = o.e;
    return o.rc;
}

/* No release or read_effect: reading changes nothing. A move is requeue and remove in one step,
 * so neither of those is set; move_window moves up to DLQ_MOVE_WINDOW entries with one script. */
const struct dlq_kind redis_stream_dlq = {.read = dlq_read,
                                          .read_page = dlq_read_page,
                                          .check_origin = dlq_check_origin,
                                          .lock = dlq_lock,
                                          .unlock = dlq_unlock,
                                          .move = dlq_move,
                                          .move_window = dlq_move_window,
                                          .message_free = redis_stream_fields_free,
                                          .batch_free = redis_replay_lock_free};
