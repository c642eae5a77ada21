/* scrape.c: see scrape.h. The one function that decides what a scrape serves; the programs only
 * choose the options and write the sets out (http.c streams them, cli.c prints them or reads
 * the report). */
#include "scrape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dead_letters.h"
#include "log.h"
#include "process_stats.h"
#include "version.h"

struct scrape {
    struct scheduler_scrape *sc;
    struct metric_set **sets; /* the collections' (not ours), then ours: */
    size_t nsets;
    struct metric_set **joins; /* the dead-letter joins' series */
    size_t njoins;
    struct metric_set *audit; /* qrel_audit_failed* */
    struct metric_set *self;  /* the exporter's own series, or NULL */
    struct audit_report *report;
    size_t failed;
};

/* The dead-letter joins, once the collections are in: for each join whose broker source this
 * scrape collected and found up, under the deadline the scrape gave that source. */
static void run_joins(struct scheduler *s, struct scrape *x)
{
    const struct dead_letters *d = &scheduler_sources(s)->dead_letters;
    x->joins = xcalloc(d->n + 1, sizeof *x->joins);
    for (size_t k = 0; k < d->n; k++) {
        struct dead_letter_join *j = &d->v[k];
        /* An entry of a kind whose reads have side effects is for `qrel dlq` only: the exporter
         * stays read-only. */
        if (!j->broker->kind->dead_letter_ids)
            continue;
        struct deadline dl;
        /* A broker not up: its queue's series are not served either. */
        if (!scheduler_scrape_up(x->sc, j->broker, &dl))
            continue;
        x->joins[x->njoins++] = dead_letters_run(j, &dl);
    }
}

/* The rules over the very collection served, so the series, the landing page and `qrel check`
 * agree. With a report, the series are the report's (audit_add_metrics); without, audit_run_series
 * gives the same series without building the report. */
static void run_audit(struct scheduler *s, struct scrape *x, int report)
{
    const struct audit_config *cfg = &scheduler_sources(s)->audit;
    x->audit = metric_set_new(NULL, NULL);
    int rc;
    if (report) {
        x->report = audit_run(x->sets, x->nsets, cfg);
        rc = audit_add_metrics(x->report, x->audit);
    } else {
        rc = audit_run_series(x->sets, x->nsets, cfg, x->audit);
    }
    if (rc != 0)
        log_kv(LOG_ERROR, "qrel_audit_failed: a bad series (a bug)", "err",
               metric_set_error(x->audit), NULL);
}

/* The process families of the Prometheus client libraries, with their names and meanings, so
 * that the dashboards and alerts written for any exporter work on this one. */
static void add_process(struct metric_set *m)
{
    struct process_stats p;
    process_stats_read(&p);
    if (p.have_stat) {
        metric_set_add(m, "process_cpu_seconds_total", p.cpu_seconds, NULL);
        metric_set_add(m, "process_resident_memory_bytes", p.resident_bytes, NULL);
        metric_set_add(m, "process_virtual_memory_bytes", p.virtual_bytes, NULL);
    }
    if (p.have_start)
        metric_set_add(m, "process_start_time_seconds", p.start_time, NULL);
    if (p.have_fds)
        metric_set_add(m, "process_open_fds", p.open_fds, NULL);
    if (p.have_max_fds)
        metric_set_add(m, "process_max_fds", p.max_fds, NULL);
}

/* One series per handler and code that has answered at least once, as promhttp does: a code
 * never sent has no series rather than a 0 for each of 500 codes. */
static void add_requests(struct metric_set *m, const struct http_requests *r)
{
    for (int h = 0; h < HTTP_HANDLER_COUNT; h++) {
        for (unsigned code = HTTP_CODE_MIN; code <= HTTP_CODE_MAX; code++) {
            unsigned long long n = http_requests_get(r, (enum http_handler)h, code);
            if (!n)
                continue;
            char c[8];
            snprintf(c, sizeof c, "%u", code);
            metric_set_add(m, "qrel_http_requests_total", (double)n, "handler",
                           http_handler_label(r, (enum http_handler)h), "code", c, NULL);
        }
    }
}

static struct metric_set *self_series(const struct scrape_self *self)
{
    struct metric_set *m = metric_set_new(NULL, NULL);
    metric_set_add(m, "qrel_build_info", 1.0, "version", QREL_VERSION, "revision", QREL_REVISION,
                   NULL);
    metric_set_add(m, "qrel_config_last_reload_successful", self->config_ok ? 1.0 : 0.0, NULL);
    metric_set_add(m, "qrel_config_last_reload_success_timestamp_seconds", self->config_loaded,
                   NULL);
    if (self->process)
        add_process(m);
    if (self->requests)
        add_requests(m, self->requests);
    return m;
}

struct scrape *scrape_run(struct scheduler *s, const struct scrape_opts *o)
{
    struct scrape *x = xcalloc(1, sizeof *x);
    struct scheduler_opts so = {
        .scrape_timeout = o->scrape_timeout, .only = o->only, .max_age = o->max_age};
    x->sc = scheduler_scrape(s, &so);
    x->failed = scheduler_scrape_failed(x->sc);
    if (o->max_age <= 0)
        run_joins(s, x);
    size_t n;
    struct metric_set *const *coll = scheduler_scrape_sets(x->sc, &n);
    x->sets = xcalloc(n + x->njoins + 2, sizeof *x->sets);
    memcpy(x->sets, coll, n * sizeof *x->sets);
    if (x->njoins)
        memcpy(x->sets + n, x->joins, x->njoins * sizeof *x->sets);
    x->nsets = n + x->njoins;
    run_audit(s, x, o->report);
    x->sets[x->nsets++] = x->audit;
    if (o->self && !o->only) {
        x->self = self_series(o->self);
        x->sets[x->nsets++] = x->self;
    }
    return x;
}

struct metric_set *const *scrape_sets(const struct scrape *x, size_t *n)
{
    *n = x->nsets;
    return x->sets;
}

const struct audit_report *scrape_report(const struct scrape *x)
{
    return x->report;
}

size_t scrape_failed(const struct scrape *x)
{
    return x->failed;
}

void scrape_free(struct scrape *x)
{
    if (!x)
        return;
    audit_report_free(x->report);
    metric_set_free(x->self);
    metric_set_free(x->audit);
    for (size_t i = 0; i < x->njoins; i++)
        metric_set_free(x->joins[i]);
    free(x->joins);
    free(x->sets);
    scheduler_scrape_free(x->sc);
    free(x);
}
