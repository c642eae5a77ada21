/* audit_report.c: see audit_report.h. */
#include "audit_report.h"

#include <math.h>
#include <string.h>

#include "expfmt.h"

static void json_number(struct buf *out, int has, double v)
{
    if (!has || !isfinite(v))
        buf_puts(out, "null");
    else
        expfmt_format_value(out, v);
}

/* ,"key":value: a member after an object's first. */
static void json_member(struct buf *out, const char *key, const char *v)
{
    buf_printf(out, ",\"%s\":", key);
    buf_json_string(out, v);
}

static void json_number_member(struct buf *out, const char *key, int has, double v)
{
    buf_printf(out, ",\"%s\":", key);
    json_number(out, has, v);
}

/* The members that say where a finding or a queue is, in the order both objects have them;
 * first when they open the object. */
static void json_where(struct buf *out, int first, const char *source, const char *kind,
                       const char *queue, const char *group)
{
    buf_puts(out, first ? "\"source\":" : ",\"source\":");
    buf_json_string(out, source);
    json_member(out, "kind", kind);
    json_member(out, "queue", queue);
    json_member(out, "group", group);
}

void audit_write_name(struct buf *out, const char *name)
{
    int plain = *name != '\0';
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '\\' || *p == 0x7f)
            plain = 0;
    if (plain)
        buf_puts(out, name);
    else
        buf_json_string(out, name);
}

void audit_write_queue(struct buf *out, const struct audit_finding *f,
                       void (*put)(struct buf *, const char *))
{
    put(out, f->queue);
    if (f->group) {
        buf_puts(out, " (group ");
        put(out, f->group);
        buf_putc(out, ')');
    }
}

static const char *error_of(const char *const *errors, size_t i)
{
    return errors && errors[i] && errors[i][0] ? errors[i] : NULL;
}

static void write_finding(struct buf *out, const struct audit_finding *f)
{
    buf_printf(out, "%s ", audit_status_name(f->severity));
    audit_write_name(out, f->source);
    buf_putc(out, ' ');
    audit_write_queue(out, f, audit_write_name);
    buf_printf(out, ": %s [%s]\n", f->message, audit_rule_name(f->rule));
}

static void write_unknown(struct buf *out, const struct audit_source *s, const char *err)
{
    buf_puts(out, "UNKNOWN ");
    audit_write_name(out, s->name);
    buf_printf(out, " (%s): cannot be read, so its queues were not checked: %s\n", s->kind,
               err ? err : "the collection failed");
}

void audit_write_text(struct buf *out, const struct audit_report *r, const char *const *errors)
{
    size_t crit = r->count[AUDIT_CRITICAL], warn = r->count[AUDIT_WARNING],
           unk = r->count[AUDIT_UNKNOWN];
    buf_printf(out,
               "QREL %s - %zu critical, %zu warning, %zu unknown | critical=%zu;;;0 "
               "warning=%zu;;;0 unknown=%zu;;;0 queues=%zu;;;0\n",
               audit_status_name(r->status), crit, warn, unk, crit, warn, unk, r->nqueues);
    /* Worst first: critical findings, unreadable sources, then warnings. */
    size_t i = 0;
    for (; i < r->nfindings && r->findings[i].severity == AUDIT_CRITICAL; i++)
        write_finding(out, &r->findings[i]);
    for (size_t k = 0; k < r->nsources; k++)
        if (!r->sources[k].up)
            write_unknown(out, &r->sources[k], error_of(errors, k));
    for (; i < r->nfindings; i++)
        write_finding(out, &r->findings[i]);
    buf_printf(out, "checked %zu queue%s in %zu source%s\n", r->nqueues, r->nqueues == 1 ? "" : "s",
               r->nsources, r->nsources == 1 ? "" : "s");
}

void audit_write_json(struct buf *out, const struct audit_report *r, const char *const *errors)
{
    buf_puts(out, "{\"status\":");
    buf_json_string(out, audit_status_label(r->status));
    buf_printf(out,
               ",\"exit_code\":%d,\"counts\":{\"critical\":%zu,\"warning\":%zu,\"unknown\":%zu},"
               "\"findings\":[",
               (int)r->status, r->count[AUDIT_CRITICAL], r->count[AUDIT_WARNING],
               r->count[AUDIT_UNKNOWN]);
    for (size_t i = 0; i < r->nfindings; i++) {
        const struct audit_finding *f = &r->findings[i];
        buf_puts(out, i ? ",{\"severity\":" : "{\"severity\":");
        buf_json_string(out, audit_status_label(f->severity));
        json_member(out, "rule", audit_rule_name(f->rule));
        json_where(out, 0, f->source, f->kind, f->queue, f->group);
        json_number_member(out, "value", 1, f->value);
        json_number_member(out, "limit", 1, f->limit);
        json_member(out, "message", f->message);
        buf_putc(out, '}');
    }
    buf_puts(out, "],\"sources\":[");
    for (size_t i = 0; i < r->nsources; i++) {
        const struct audit_source *s = &r->sources[i];
        buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        buf_json_string(out, s->name);
        buf_puts(out, ",\"kind\":");
        buf_json_string(out, s->kind);
        buf_printf(out, ",\"up\":%s,\"error\":", s->up ? "true" : "false");
        buf_json_string(out, s->up ? NULL : error_of(errors, i));
        buf_putc(out, '}');
    }
    buf_puts(out, "],\"queues\":[");
    for (size_t i = 0; i < r->nqueues; i++) {
        const struct audit_queue *q = &r->queues[i];
        buf_puts(out, i ? ",{" : "{");
        json_where(out, 1, q->source, q->kind, q->queue, q->group);
        json_member(out, "status", audit_status_label(q->worst));
        json_number_member(out, "margin", q->has_margin, q->margin);
        json_number_member(out, "dead_letter_messages", q->has_dead, q->dead);
        json_number_member(out, "oldest_age_seconds", q->has_age, q->age);
        json_number_member(out, "depth", q->has_depth, q->depth);
        buf_puts(out, ",\"rules\":[");
        int first = 1;
        for (int k = 0; k < AUDIT_RULE_COUNT; k++) {
            if (!(q->rules & (1u << k)))
                continue;
            if (!first)
                buf_putc(out, ',');
            first = 0;
            buf_json_string(out, audit_rule_name((enum audit_rule)k));
        }
        buf_puts(out, "]}");
    }
    buf_puts(out, "]}\n");
}
