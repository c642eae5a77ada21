/* landing.c: see landing.h. The page is built whole in memory: it has one row per queue, which
 * is small next to an exposition, and a person reads it, not a scraper. */
#include "landing.h"

#include <math.h>
#include <string.h>

#include "audit_report.h"
#include "version.h"

/* HTML text and attribute values: the five characters that can end either. */
static const struct buf_escape html_escape = {
    .rep = {['<'] = "&lt;", ['>'] = "&gt;", ['&'] = "&amp;", ['"'] = "&quot;", ['\''] = "&#39;"},
};

static void esc(struct buf *b, const char *s)
{
    buf_escaped(b, s, &html_escape);
}

static const char style[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#1d1d1f;background:#fff}"
    "h1{margin:0 0 .2em}h2{margin:1.4em 0 .4em;font-size:1.2em}"
    "table{border-collapse:collapse;font-size:.92em}"
    "td,th{border:1px solid #d0d0d0;padding:.3em .6em;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".badge{display:inline-block;padding:.1em .5em;border-radius:.3em;font-weight:bold;"
    "color:#fff;font-size:.85em}"
    ".critical .badge,.badge.critical{background:#c62828}"
    ".warning .badge,.badge.warning{background:#b26a00}"
    ".unknown .badge,.badge.unknown{background:#616161}.ok .badge,.badge.ok{background:#2e7d32}"
    "tr.critical td{background:#fdecea}tr.warning td{background:#fff4e5}"
    ".summary{font-size:1.15em;margin:.6em 0}.bad{color:#c62828;font-weight:bold}"
    "ul.findings{padding-left:1.2em}ul.findings li{margin:.35em 0;max-width:70em}"
    "code{background:#f2f2f2;padding:0 .2em}.up{color:#2e7d32}.down{color:#c62828}"
    ".muted{color:#666}nav a{margin-right:1em}";

static void badge(struct buf *b, enum audit_status s)
{
    buf_printf(b, "<span class=\"badge %s\">%s</span>", audit_status_label(s),
               audit_status_name(s));
}

static void seconds_cell(struct buf *b, int has, double v)
{
    buf_puts(b, "<td class=\"n\">");
    if (has)
        audit_format_seconds(b, v);
    else
        buf_puts(b, "<span class=\"muted\">–</span>");
    buf_puts(b, "</td>");
}

static void number_cell(struct buf *b, int has, double v, int bad, const char *fmt)
{
    buf_puts(b, "<td class=\"n\">");
    if (!has || !isfinite(v))
        buf_puts(b, "<span class=\"muted\">–</span>");
    else {
        if (bad)
            buf_puts(b, "<span class=\"bad\">");
        buf_printf(b, fmt, v);
        if (bad)
            buf_puts(b, "</span>");
    }
    buf_puts(b, "</td>");
}

/* A section's heading, then the paragraph that says it is empty when it has no rows (0). */
static int section(struct buf *b, const char *heading, size_t rows, const char *empty)
{
    buf_printf(b, "<h2>%s</h2>\n", heading);
    if (rows == 0)
        buf_printf(b, "%s\n", empty);
    return rows > 0;
}

static void queues_table(struct buf *b, const struct audit_report *r)
{
    if (!section(b, "Queues, worst first", r->nqueues,
                 "<p class=\"muted\">No queue was collected.</p>"))
        return;
    buf_puts(b, "<table id=\"queues\">\n<tr><th>Status</th><th>Queue</th><th>Group</th>"
                "<th>Source</th><th>Kind</th><th>Lease margin</th><th>Dead letters</th>"
                "<th>Oldest age</th><th>Depth</th><th>Rules broken</th></tr>\n");
    for (size_t i = 0; i < r->nqueues; i++) {
        const struct audit_queue *q = &r->queues[i];
        buf_printf(b, "<tr class=\"queue %s\"><td>", audit_status_label(q->worst));
        badge(b, q->worst);
        buf_puts(b, "</td><td class=\"name\">");
        esc(b, q->queue);
        buf_puts(b, "</td><td>");
        esc(b, q->group ? q->group : "");
        buf_puts(b, "</td><td>");
        esc(b, q->source);
        buf_puts(b, "</td><td>");
        esc(b, q->kind);
        buf_puts(b, "</td>");
        number_cell(b, q->has_margin, q->margin, q->has_margin && q->margin < 1, "%.2f");
        number_cell(b, q->has_dead, q->dead, q->has_dead && q->dead > 0, "%.0f");
        seconds_cell(b, q->has_age, q->age);
        number_cell(b, q->has_depth, q->depth, 0, "%.0f");
        buf_puts(b, "<td>");
        int first = 1;
        for (int k = 0; k < AUDIT_RULE_COUNT; k++) {
            if (!(q->rules & (1u << k)))
                continue;
            buf_printf(b, "%s<code>%s</code>", first ? "" : " ",
                       audit_rule_name((enum audit_rule)k));
            first = 0;
        }
        buf_puts(b, "</td></tr>\n");
    }
    buf_puts(b, "</table>\n");
}

static void findings_list(struct buf *b, const struct audit_report *r)
{
    if (!section(b, "What to change, worst first", r->nfindings,
                 "<p>No reliability rule is broken.</p>"))
        return;
    buf_puts(b, "<ul class=\"findings\">\n");
    for (size_t i = 0; i < r->nfindings; i++) {
        const struct audit_finding *f = &r->findings[i];
        buf_printf(b, "<li class=\"%s\">", audit_status_label(f->severity));
        badge(b, f->severity);
        buf_puts(b, " <b>");
        audit_write_queue(b, f, esc);
        buf_puts(b, "</b> <span class=\"muted\">");
        esc(b, f->source);
        buf_puts(b, "</span>: ");
        esc(b, f->message);
        buf_printf(b, " <code>%s</code></li>\n", audit_rule_name(f->rule));
    }
    buf_puts(b, "</ul>\n");
}

static void sources_table(struct buf *b, struct scheduler *s)
{
    buf_puts(b, "<h2>Sources</h2>\n<p>Collect one source alone with "
                "<code>/probe?target=NAME</code>.</p>\n");
    size_t n = scheduler_source_count(s);
    if (n == 0) {
        /* A fresh install (the packaged /etc/qrel/qrel.yml) lands here: say what to do. */
        buf_puts(b, "<p id=\"no-sources\">No sources are configured: this exporter watches "
                    "nothing yet and serves only its own series. Add one entry per broker or "
                    "database under <code>sources:</code> in <code>");
        esc(b, scheduler_sources(s)->path);
        buf_puts(b,
                 "</code> (every kind and key: <code>qrel.example.yml</code>, in "
                 "<code>/usr/share/doc/qrel/examples/</code> when installed from the package), "
                 "check it with <code>qrel_exporter --config.check</code>, then reload: "
                 "<code>systemctl reload qrel-exporter</code>, <code>SIGHUP</code> or "
                 "<code>POST /-/reload</code> (with <code>--web.enable-lifecycle</code>).</p>\n");
        return;
    }
    buf_puts(b, "<table id=\"sources\">\n<tr><th>Source</th><th>Kind</th><th>Last collection</th>"
                "<th>Last error</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        struct scheduler_status st;
        scheduler_status_at(s, i, &st);
        buf_puts(b, "<tr><td>");
        esc(b, st.name);
        buf_puts(b, "</td><td>");
        esc(b, st.kind);
        if (st.up < 0)
            buf_puts(b, "</td><td class=\"unknown\">not yet collected</td><td>");
        else if (st.up)
            buf_printf(b, "</td><td class=\"up\">up (%.3fs)</td><td>", st.last_duration);
        else
            buf_puts(b, "</td><td class=\"down\">down</td><td>");
        esc(b, st.last_error);
        buf_puts(b, "</td></tr>\n");
    }
    buf_puts(b, "</table>\n");
}

void landing_render(struct buf *b, const char *telemetry_path, struct scheduler *s,
                    const struct audit_report *r)
{
    buf_printf(b,
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
               "<title>qrel: %s</title><style>%s</style></head><body>\n<h1>qrel exporter</h1>\n"
               "<p>Message-queue reliability metrics for Prometheus. Version " QREL_VERSION
               " (" QREL_REVISION ").</p>\n<nav><a href=\"",
               audit_status_name(r->status), style);
    esc(b, telemetry_path);
    buf_puts(b, "\">Metrics</a><a href=\"/-/healthy\">Health</a>"
                "<a href=\"/-/ready\">Readiness</a></nav>\n");
    buf_printf(b, "<p class=\"summary %s\" id=\"status\">", audit_status_label(r->status));
    badge(b, r->status);
    buf_printf(b, " %zu critical, %zu warning, %zu unknown (sources that cannot be read)</p>\n",
               r->count[AUDIT_CRITICAL], r->count[AUDIT_WARNING], r->count[AUDIT_UNKNOWN]);
    buf_printf(b,
               "<p class=\"muted\">From the latest collection, at most %.0f s old. The rules are "
               "those of <code>qrel check</code>; the same findings are the "
               "<code>qrel_audit_failed</code> series.</p>\n",
               LANDING_MAX_AGE);
    queues_table(b, r);
    findings_list(b, r);
    sources_table(b, s);
    buf_puts(b, "</body></html>\n");
}
