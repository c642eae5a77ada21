/* dlq_report.c: see dlq_report.h. Ids and names come from the broker and may hold any byte, so
 * each is made valid UTF-8 before it is printed or quoted.
 *
 * The report is rendered from a tally (struct dlq_tally), which a run fills page by page: the
 * counts, the first --sample dead letters of each class, of the poison ones and of each skip
 * reason, and the entries of the lists a replay prints whole (moved, failed, …), formatted as
 * they come and, when the report is streamed, written to a temporary file each: what a run of
 * any length holds for its report is bounded, and the report still lists every id. */
#include "dlq_report.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "expfmt.h"

/* s made valid UTF-8, in b (which the caller frees). */
static const char *clean(struct buf *b, const char *s)
{
    buf_init(b);
    buf_utf8_sanitize(b, s, strlen(s));
    return b->data ? b->data : "";
}

static void put_text(struct buf *out, const char *s)
{
    if (!s) {
        buf_puts(out, "-");
        return;
    }
    struct buf b;
    for (const char *p = clean(&b, s); *p; p++)
        buf_putc(out, (unsigned char)*p < 0x20 ? '?' : *p);
    buf_free(&b);
}

static void put_json(struct buf *out, const char *s)
{
    struct buf b;
    buf_json_string(out, s ? clean(&b, s) : NULL);
    if (s)
        buf_free(&b);
}

/* JSON has no inf or nan: a broker's dead_since may be either (a Redis stream field is free
 * text), and the exposition format's "+Inf" would make the whole object unreadable. */
static void put_number(struct buf *out, int has, double v)
{
    if (has && isfinite(v))
        expfmt_format_value(out, v);
    else
        buf_puts(out, "null");
}

/* The last second the date format prints with four digits of year (9999-12-31T23:59:59Z). */
#define LAST_DATE 253402300799.0

static void put_time(struct buf *out, double t, double now)
{
    /* Checked before the cast: a double out of time_t's range makes it undefined, and gmtime
     * fails for a year past int and leaves tm unset. */
    struct tm tm;
    time_t s = t >= 0 && t <= LAST_DATE ? (time_t)t : 0;
    if (!(t >= 0 && t <= LAST_DATE) || !gmtime_r(&s, &tm)) {
        buf_puts(out, "out of range (");
        expfmt_format_value(out, t);
        buf_putc(out, ')');
        return;
    }
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    buf_printf(out, "%s (%.0fs ago)", when, now > t ? now - t : 0.0);
}

/* ---- the inspect part ---- */

static void text_message(struct buf *out, const struct dlq_message *m)
{
    put_text(out, m->message_id);
    if (m->work_id) {
        buf_puts(out, " (");
        put_text(out, m->work_id);
        buf_putc(out, ')');
    }
}

static void json_message(struct buf *out, const struct dlq_message *m)
{
    buf_puts(out, "{\"message_id\":");
    put_json(out, m->message_id);
    buf_puts(out, ",\"work_id\":");
    put_json(out, m->work_id);
    buf_putc(out, '}');
}

static void text_sample(struct buf *out, const struct dlq_sample *m)
{
    struct dlq_message v = {.message_id = m->message_id, .work_id = m->work_id};
    text_message(out, &v);
}

static void json_sample(struct buf *out, const struct dlq_sample *m)
{
    struct dlq_message v = {.message_id = m->message_id, .work_id = m->work_id};
    json_message(out, &v);
}

/* ---- the tally: what the report keeps of a run ---- */

static void sample_add(struct dlq_samples *s, size_t cap, const struct dlq_message *m)
{
    if (s->n >= cap)
        return;
    if (!s->v)
        s->v = xcalloc(cap, sizeof *s->v);
    struct dlq_sample *x = &s->v[s->n++];
    x->message_id = m->message_id ? xstrdup(m->message_id) : NULL;
    x->work_id = m->work_id ? xstrdup(m->work_id) : NULL;
    x->replays = m->replays;
}

static void samples_free(struct dlq_samples *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].message_id);
        free(s->v[i].work_id);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

int dlq_tally_init(struct dlq_tally *t, const struct dlq_report_ctx *x, struct err *e)
{
    memset(t, 0, sizeof *t);
    t->sample = x->sample;
    t->json = x->json;
    for (int f = 0; f < DLQ_FATE_COUNT && x->stream; f++) {
        if (f == DLQ_FATE_SKIPPED)
            continue; /* a sample, kept in memory */
        t->list[f].f = tmpfile();
        if (!t->list[f].f) {
            int errno_was = errno;
            dlq_tally_free(t);
            return err_set(e, ERR_INTERNAL,
                           "cannot create a temporary file for the report's lists: %s",
                           strerror(errno_was));
        }
    }
    return 0;
}

void dlq_tally_free(struct dlq_tally *t)
{
    for (int c = 0; c < 3; c++)
        samples_free(&t->cls[c]);
    samples_free(&t->poison);
    for (int c = 0; c < DLQ_CHOICE_COUNT; c++)
        samples_free(&t->skipped[c]);
    for (int f = 0; f < DLQ_FATE_COUNT; f++) {
        if (t->list[f].f)
            fclose(t->list[f].f);
        buf_free(&t->list[f].mem);
    }
    free(t->dead_letter_queue);
    free(t->origin);
    memset(t, 0, sizeof *t);
}

void dlq_tally_read(struct dlq_tally *t, const struct dlq_read *r)
{
    const struct dlq_batch *b = &r->batch;
    if (!t->dead_letter_queue && b->dead_letter_queue)
        t->dead_letter_queue = xstrdup(b->dead_letter_queue);
    if (!t->origin && b->origin)
        t->origin = xstrdup(b->origin);
    dlq_summary_add(&t->s, b->v, r->work, b->n);
    if (t->s.total < b->total)
        t->s.total = b->total;
    for (size_t i = 0; i < b->n; i++) {
        sample_add(&t->cls[r->work[i]], t->sample, &b->v[i]);
        if (dlq_is_poison(&b->v[i]))
            sample_add(&t->poison, t->sample, &b->v[i]);
    }
}

/* One entry of a list the report prints whole, formatted as the report prints it. */
static void list_entry(struct buf *out, const struct dlq_message *m, enum dlq_fate f,
                       const char *error, int first, int json)
{
    int why = f == DLQ_FATE_FAILED || f == DLQ_FATE_UNCERTAIN;
    if (!json && why)
        buf_puts(out, "\n  "); /* one a line: each has its reason */
    else
        buf_puts(out, !first ? (json ? "," : ", ") : (json ? "" : " "));
    if (json && why) {
        buf_puts(out, "{\"message_id\":");
        put_json(out, m->message_id);
        buf_puts(out, ",\"work_id\":");
        put_json(out, m->work_id);
        if (f == DLQ_FATE_UNCERTAIN)
            buf_puts(out, ",\"outcome\":\"may_have_been_put_back\"");
        buf_puts(out, ",\"error\":");
        put_json(out, error);
        buf_putc(out, '}');
    } else if (json) {
        json_message(out, m);
    } else {
        text_message(out, m);
        if (why) {
            buf_puts(out, ": ");
            put_text(out, error);
        }
    }
}

int dlq_tally_fates(struct dlq_tally *t, const struct dlq_read *r, struct err *e)
{
    struct buf one;
    buf_init(&one);
    int rc = 0;
    for (size_t i = 0; i < r->batch.n && rc == 0; i++) {
        const struct dlq_message *m = &r->batch.v[i];
        enum dlq_fate f = r->fate[i];
        if (f == DLQ_FATE_SKIPPED) {
            sample_add(&t->skipped[r->choice[i]], t->sample, m);
            continue;
        }
        struct dlq_list *l = &t->list[f];
        buf_reset(&one);
        list_entry(&one, m, f, r->error ? r->error[i] : NULL, l->n == 0, t->json);
        l->n++;
        if (!l->f)
            buf_append(&l->mem, one.data, one.len);
        else if (fwrite(one.data, 1, one.len, l->f) != one.len)
            rc = err_set(e, ERR_INTERNAL, "writing the report's list to a temporary file: %s",
                         strerror(errno));
    }
    buf_free(&one);
    return rc;
}

/* Appends list l to out; when the report is streamed, out goes to the stream first and the
 * list is copied from its file straight after it. */
static void put_list(struct buf *out, const struct dlq_report_ctx *x, struct dlq_list *l)
{
    if (!l->f) {
        buf_append(out, l->mem.data ? l->mem.data : "", l->mem.len);
        return;
    }
    fwrite(out->data ? out->data : "", 1, out->len, x->stream);
    buf_reset(out);
    char chunk[8192];
    size_t got;
    rewind(l->f);
    while ((got = fread(chunk, 1, sizeof chunk, l->f)) > 0)
        fwrite(chunk, 1, got, x->stream);
}

/* How often qrel replayed them before, by their replay stamp: shown once any message was
 * replayed before (a queue nobody replayed, or a kind that cannot stamp, would get a line that
 * says nothing; the JSON has the counts always). */
static void replays_text(struct buf *out, const struct dlq_summary *s)
{
    if (!s->replays[DLQ_REPLAYS_ONCE] && !s->replays[DLQ_REPLAYS_POISON])
        return;
    buf_printf(out, "replayed before: never %zu, once %zu, poison %zu (%d times or more)",
               s->replays[DLQ_REPLAYS_NEVER], s->replays[DLQ_REPLAYS_ONCE],
               s->replays[DLQ_REPLAYS_POISON], DLQ_POISON);
    if (s->replays[DLQ_REPLAYS_UNKNOWN])
        buf_printf(out, "; unknown: %zu", s->replays[DLQ_REPLAYS_UNKNOWN]);
    buf_putc(out, '\n');
}

/* The poison messages, as a sample like the classes': their replays beside each. */
static void poison_text(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_tally *t,
                        const struct dlq_summary *s)
{
    size_t n = s->replays[DLQ_REPLAYS_POISON], shown = 0;
    if (!n || !x->sample)
        return;
    buf_puts(out, "sample poison:");
    for (size_t i = 0; i < t->poison.n && shown < x->sample; i++) {
        const struct dlq_sample *m = &t->poison.v[i];
        buf_puts(out, shown++ ? ", " : " ");
        text_sample(out, m);
        buf_printf(out, " x%lld", (long long)m->replays);
    }
    if (n > shown)
        buf_printf(out, ", … (%zu more)", n - shown);
    buf_putc(out, '\n');
}

static const enum dead_letter_work classes[3] = {DL_WORK_DONE, DL_WORK_NOT_DONE, DL_WORK_UNKNOWN};

static void inspect_text(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_kind *k,
                         const struct dlq_tally *t)
{
    const struct dlq_summary *s = &t->s;
    buf_puts(out, "dead letters of queue ");
    put_text(out, x->queue);
    buf_puts(out, " (source ");
    put_text(out, x->source);
    buf_printf(out, ", %s) in ", x->kind);
    put_text(out, t->dead_letter_queue);
    buf_puts(out, ", origin ");
    put_text(out, t->origin);
    buf_printf(out, "\nread %zu of %zu", s->read, s->total);
    if (s->total > s->read)
        buf_printf(out, " (%zu not read: raise --limit to see them)", s->total - s->read);
    buf_puts(out, "; classified against work_table source ");
    put_text(out, x->work_source);
    buf_putc(out, '\n');
    static const char *const why[3] = {"its work was done: replaying it would repeat the work",
                                       "its work was not done: replay moves these",
                                       "no id, or the work table cannot tell"};
    for (int c = 0; c < 3; c++) {
        buf_printf(out, "  %-9s %6zu  %s", dlq_work_name(classes[c]), s->n[classes[c]], why[c]);
        if (classes[c] == DL_WORK_UNKNOWN && s->without_id)
            buf_printf(out, " (%zu without an id)", s->without_id);
        buf_putc(out, '\n');
    }
    if (s->has_dead_since) {
        buf_puts(out, "dead since: oldest ");
        put_time(out, s->oldest, x->now);
        buf_puts(out, ", newest ");
        put_time(out, s->newest, x->now);
        buf_putc(out, '\n');
    }
    if (s->has_deliveries) {
        buf_printf(out, "deliveries: min %lld, max %lld;", (long long)s->min_deliveries,
                   (long long)s->max_deliveries);
        for (size_t i = 0; i < DLQ_HIST_BUCKETS; i++) {
            int64_t lo, hi;
            dlq_hist_bounds(i, &lo, &hi);
            if (!s->hist[i])
                continue;
            if (hi == lo)
                buf_printf(out, " %lld: %zu,", (long long)lo, s->hist[i]);
            else if (hi < 0)
                buf_printf(out, " %lld+: %zu,", (long long)lo, s->hist[i]);
            else
                buf_printf(out, " %lld-%lld: %zu,", (long long)lo, (long long)hi, s->hist[i]);
        }
        out->data[--out->len] = '\0'; /* the last comma */
        if (s->deliveries_unknown)
            buf_printf(out, "; unknown: %zu", s->deliveries_unknown);
        buf_putc(out, '\n');
    }
    replays_text(out, s);
    for (int c = 0; c < 3 && x->sample; c++) {
        if (!s->n[classes[c]])
            continue;
        buf_printf(out, "sample %s:", dlq_work_name(classes[c]));
        size_t shown = 0;
        const struct dlq_samples *sm = &t->cls[classes[c]];
        for (size_t i = 0; i < sm->n && shown < x->sample; i++) {
            buf_puts(out, shown++ ? ", " : " ");
            text_sample(out, &sm->v[i]);
        }
        if (s->n[classes[c]] > shown)
            buf_printf(out, ", … (%zu more)", s->n[classes[c]] - shown);
        buf_putc(out, '\n');
    }
    poison_text(out, x, t, s);
    if (k->read_effect)
        buf_printf(out, "reading changed: %s\n", k->read_effect);
}

static void inspect_json(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_kind *kd,
                         const struct dlq_tally *t)
{
    const struct dlq_summary *s = &t->s;
    const char *const names[][2] = {
        {"source", x->source}, {"kind", x->kind},
        {"queue", x->queue},   {"dead_letter_queue", t->dead_letter_queue},
        {"origin", t->origin}, {"work_table_source", x->work_source}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        buf_printf(out, "%s\"%s\":", i ? "," : "", names[i][0]);
        put_json(out, names[i][1]);
    }
    buf_printf(out, ",\"total\":%zu,\"read\":%zu,\"unread\":%zu", s->total, s->read,
               s->total - s->read);
    buf_puts(out, ",\"classes\":{");
    for (int c = 0; c < 3; c++)
        buf_printf(out, "%s\"%s\":%zu", c ? "," : "", dlq_work_name(classes[c]), s->n[classes[c]]);
    buf_printf(out, "},\"without_id\":%zu,\"dead_since\":{\"oldest\":", s->without_id);
    put_number(out, s->has_dead_since, s->oldest);
    buf_puts(out, ",\"newest\":");
    put_number(out, s->has_dead_since, s->newest);
    buf_puts(out, "},\"deliveries\":{\"min\":");
    put_number(out, s->has_deliveries, (double)s->min_deliveries);
    buf_puts(out, ",\"max\":");
    put_number(out, s->has_deliveries, (double)s->max_deliveries);
    buf_printf(out, ",\"unknown\":%zu,\"histogram\":[", s->deliveries_unknown);
    for (size_t i = 0, k = 0; i < DLQ_HIST_BUCKETS; i++) {
        int64_t lo, hi;
        dlq_hist_bounds(i, &lo, &hi);
        if (!s->hist[i])
            continue;
        buf_printf(out, "%s{\"from\":%lld,\"to\":", k++ ? "," : "", (long long)lo);
        put_number(out, hi >= 0, (double)hi);
        buf_printf(out, ",\"messages\":%zu}", s->hist[i]);
    }
    buf_puts(out, "]},\"replays\":{");
    for (int k = 0; k < DLQ_REPLAYS_COUNT; k++)
        buf_printf(out, "%s\"%s\":%zu", k ? "," : "", dlq_replays_name((enum dlq_replays)k),
                   s->replays[k]);
    buf_puts(out, "},\"samples\":{");
    for (int c = 0; c < 3; c++) {
        buf_printf(out, "%s\"%s\":[", c ? "," : "", dlq_work_name(classes[c]));
        const struct dlq_samples *sm = &t->cls[classes[c]];
        for (size_t i = 0; i < sm->n && i < x->sample; i++) {
            buf_puts(out, i ? "," : "");
            json_sample(out, &sm->v[i]);
        }
        buf_putc(out, ']');
    }
    buf_puts(out, ",\"poison\":[");
    for (size_t i = 0; i < t->poison.n && i < x->sample; i++) {
        const struct dlq_sample *m = &t->poison.v[i];
        buf_puts(out, i ? "," : "");
        buf_puts(out, "{\"message_id\":");
        put_json(out, m->message_id);
        buf_puts(out, ",\"work_id\":");
        put_json(out, m->work_id);
        buf_printf(out, ",\"replays\":%lld}", (long long)m->replays);
    }
    buf_puts(out, "]},\"read_effect\":");
    put_json(out, kd->read_effect);
    buf_puts(out, ",\"cannot_replay\":");
    put_json(out, kd->cannot_replay);
}

void dlq_report_inspect_tally(struct buf *out, const struct dlq_report_ctx *x,
                              const struct dlq_kind *k, const struct dlq_tally *t)
{
    if (!x->json) {
        inspect_text(out, x, k, t);
        return;
    }
    buf_puts(out, "{\"command\":\"inspect\",");
    inspect_json(out, x, k, t);
    buf_puts(out, "}\n");
}

/* A whole read as one page of a tally kept in memory. */
static void tally_of(struct dlq_tally *t, const struct dlq_report_ctx *x, const struct dlq_read *r)
{
    struct dlq_report_ctx mem = *x;
    struct err e;
    mem.stream = NULL; /* no file: cannot fail */
    dlq_tally_init(t, &mem, &e);
    dlq_tally_read(t, r);
    t->s.total = r->batch.total > t->s.read ? r->batch.total : t->s.read;
    if (r->fate)
        dlq_tally_fates(t, r, &e);
}

void dlq_report_inspect(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r)
{
    struct dlq_tally t;
    tally_of(&t, x, r);
    dlq_report_inspect_tally(out, x, r->kind, &t);
    dlq_tally_free(&t);
}

/* ---- the replay part ---- */

static const char *const skip_names[DLQ_CHOICE_COUNT] = {
    [DLQ_SKIP_DONE] = "done",       [DLQ_SKIP_NOT_DONE] = "not_done",
    [DLQ_SKIP_UNKNOWN] = "unknown", [DLQ_SKIP_LIMIT] = "beyond_limit",
    [DLQ_SKIP_POISON] = "poison",
};

/* The sample of the skipped for one reason, and "… (k more)" in text. */
static void skipped_sample(struct buf *out, const struct dlq_tally *t, int choice, size_t n,
                           int json)
{
    const struct dlq_samples *sm = &t->skipped[choice];
    for (size_t i = 0; i < sm->n && i < t->sample; i++) {
        buf_puts(out, i ? (json ? "," : ", ") : (json ? "" : " "));
        if (json)
            json_sample(out, &sm->v[i]);
        else
            text_sample(out, &sm->v[i]);
    }
    size_t shown = sm->n < t->sample ? sm->n : t->sample;
    if (!json && n > shown)
        buf_printf(out, "%s… (%zu more)", shown ? ", " : " ", n - shown);
}

static void replay_text(struct buf *out, const struct dlq_report_ctx *x, struct dlq_tally *t,
                        const struct dlq_replay_opts *o, const struct dlq_replay_result *res)
{
    buf_printf(out, "replay --only=%s", dlq_only_name(o->only));
    if (o->limit)
        buf_printf(out, " --limit=%zu", o->limit);
    buf_printf(out, ": %zu chosen\n", res->chosen);
    enum dlq_fate f = o->yes ? DLQ_FATE_MOVED : DLQ_FATE_WOULD_MOVE;
    buf_puts(out, o->yes ? "" : "dry run, nothing changed: ");
    if (res->n[f] == 0) {
        buf_puts(out, o->yes ? "moved nothing\n" : "nothing to move\n");
    } else {
        buf_printf(out, "%s %zu to ", o->yes ? "moved" : "would move", res->n[f]);
        put_text(out, t->origin);
        buf_putc(out, ':');
        put_list(out, x, &t->list[f]);
        buf_putc(out, '\n');
        if (res->poison_moved)
            buf_printf(out, "of them poison (replayed %d times or more, --include-poison): %zu\n",
                       DLQ_POISON, res->poison_moved);
        buf_puts(out, o->yes ? "" : "run again with --yes to move them\n");
    }
    for (int c = DLQ_SKIP_DONE; c < DLQ_CHOICE_COUNT; c++) {
        if (!res->skipped[c])
            continue;
        buf_printf(out, "skipped %zu %s:", res->skipped[c], skip_names[c]);
        skipped_sample(out, t, c, res->skipped[c], 0);
        buf_putc(out, '\n');
    }
    if (res->n[DLQ_FATE_FAILED]) {
        buf_printf(out, "failed %zu:", res->n[DLQ_FATE_FAILED]);
        put_list(out, x, &t->list[DLQ_FATE_FAILED]);
        buf_putc(out, '\n');
    }
    if (res->n[DLQ_FATE_UNCERTAIN]) {
        buf_printf(out, "may have been put back %zu:", res->n[DLQ_FATE_UNCERTAIN]);
        put_list(out, x, &t->list[DLQ_FATE_UNCERTAIN]);
        buf_putc(out, '\n');
    }
    if (res->n[DLQ_FATE_GONE]) {
        buf_printf(out, "gone %zu (removed from ", res->n[DLQ_FATE_GONE]);
        put_text(out, t->dead_letter_queue);
        buf_puts(out, " by another replay or client first; not put back):");
        put_list(out, x, &t->list[DLQ_FATE_GONE]);
        buf_putc(out, '\n');
    }
    if (res->n[DLQ_FATE_NOT_REACHED]) {
        buf_printf(out, "not reached %zu (%s):", res->n[DLQ_FATE_NOT_REACHED],
                   res->stopped_after_failures ? "stopped after failures in a row" : "interrupted");
        put_list(out, x, &t->list[DLQ_FATE_NOT_REACHED]);
        buf_putc(out, '\n');
    }
}

static void replay_json(struct buf *out, const struct dlq_report_ctx *x, struct dlq_tally *t,
                        const struct dlq_replay_opts *o, const struct dlq_replay_result *res)
{
    buf_printf(out,
               ",\"replay\":{\"dry_run\":%s,\"only\":\"%s\",\"limit\":", o->yes ? "false" : "true",
               dlq_only_name(o->only));
    put_number(out, o->limit > 0, (double)o->limit);
    buf_puts(out, ",\"rate\":");
    put_number(out, o->rate > 0, o->rate);
    buf_printf(out, ",\"include_poison\":%s,\"chosen\":%zu,\"poison_moved\":%zu",
               o->include_poison ? "true" : "false", res->chosen, res->poison_moved);
    static const struct {
        const char *key;
        enum dlq_fate f;
    } lists[] = {{"would_move", DLQ_FATE_WOULD_MOVE},
                 {"moved", DLQ_FATE_MOVED},
                 {"failed", DLQ_FATE_FAILED},
                 {"uncertain", DLQ_FATE_UNCERTAIN},
                 {"gone", DLQ_FATE_GONE},
                 {"not_reached", DLQ_FATE_NOT_REACHED}};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        buf_printf(out, ",\"%s\":[", lists[k].key);
        put_list(out, x, &t->list[lists[k].f]);
        buf_putc(out, ']');
    }
    buf_puts(out, ",\"skipped\":{");
    for (int c = DLQ_SKIP_DONE; c < DLQ_CHOICE_COUNT; c++) {
        buf_printf(out, "%s\"%s\":{\"count\":%zu,\"sample\":[", c > DLQ_SKIP_DONE ? "," : "",
                   skip_names[c], res->skipped[c]);
        skipped_sample(out, t, c, res->skipped[c], 1);
        buf_puts(out, "]}");
    }
    buf_printf(out, "},\"interrupted\":%s,\"stopped_after_failures\":%s}",
               res->interrupted ? "true" : "false", res->stopped_after_failures ? "true" : "false");
}

void dlq_report_replay_tally(struct buf *out, const struct dlq_report_ctx *x,
                             const struct dlq_kind *k, struct dlq_tally *t,
                             const struct dlq_replay_opts *o, const struct dlq_replay_result *res)
{
    if (!x->json) {
        inspect_text(out, x, k, t);
        replay_text(out, x, t, o, res);
        return;
    }
    buf_puts(out, "{\"command\":\"replay\",");
    inspect_json(out, x, k, t);
    replay_json(out, x, t, o, res);
    buf_puts(out, "}\n");
}

void dlq_report_replay(struct buf *out, const struct dlq_report_ctx *x, const struct dlq_read *r,
                       const struct dlq_replay_opts *o, const struct dlq_replay_result *res)
{
    struct dlq_tally t;
    tally_of(&t, x, r);
    dlq_report_replay_tally(out, x, r->kind, &t, o, res);
    dlq_tally_free(&t);
}
