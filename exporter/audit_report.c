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

static const char *error_of(const char *const *errors, size_t i)
{
    return errors && errors[i] && errors[i][0] ? errors[i] : NULL;
}

static void write_finding(struct buf *out, const struct audit_finding *f)
{
    buf_printf(out, "%s ", audit_status_name(f->severity));
    audit_write_name(out, f->source);
    buf_putc(out, ' ');
    audit_write_name(out, f->queue);
    if (f->group) {
        buf_puts(out, " (group ");
        audit_write_name(out, f->group);
        buf_putc(out, ')');
    }
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
        buf_puts(out, ",\"rule\":");
        buf_json_string(out, audit_rule_name(f->rule));
        buf_puts(out, ",\"source\":");
        buf_json_string(out, f->source);
        buf_puts(out, ",\"kind\":");
        buf_json_string(out, f->kind);
        buf_puts(out, ",\"queue\":");
        buf_json_string(out, f->queue);
        buf_puts(out, ",\"group\":");
        buf_json_string(out, f->group);
        buf_puts(out, ",\"value\":");
        json_number(out, 1, f->value);
        buf_puts(out, ",\"limit\":");
        json_number(out, 1, f->limit);
        buf_puts(out, ",\"message\":");
        buf_json_string(out, f->message);
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
        buf_puts(out, i ? ",{\"source\":" : "{\"source\":");
        buf_json_string(out, q->source);
        buf_puts(out, ",\"kind\":");
        buf_json_string(out, q->kind);
        buf_puts(out, ",\"queue\":");
        buf_json_string(out, q->queue);
        buf_puts(out, ",\"group\":");
        buf_json_string(out, q->group);
        buf_puts(out, ",\"status\":");
        buf_json_string(out, audit_status_label(q->worst));
        buf_puts(out, ",\"margin\":");
        json_number(out, q->has_margin, q->margin);
        buf_puts(out, ",\"dead_letter_messages\":");
        json_number(out, q->has_dead, q->dead);
        buf_puts(out, ",\"oldest_age_seconds\":");
        json_number(out, q->has_age, q->age);
        buf_puts(out, ",\"depth\":");
        json_number(out, q->has_depth, q->depth);
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
