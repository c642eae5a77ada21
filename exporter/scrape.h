/* scrape.h: what a scrape serves, assembled in one place for every reader: `/metrics`, `/probe`,
 * the landing page, `qrel scrape` and `qrel check`.
 *
 * A scrape is, in this order: the collections of the sources and each source's meta series
 * (scheduler.h); the dead-letter joins of the sources collected and up (dead_letters.h); the
 * audit's series over those two (qrel_audit_failed*, audit.h); and, when the whole file is
 * scraped, the exporter's own series (qrel_build_info, qrel_config_last_reload_*, and from the
 * exporter also process_* and qrel_http_requests_total, as node and blackbox exporters serve
 * theirs: on /metrics only, never on a probe of a target). So `qrel
 * scrape` prints what `/metrics` serves for the same file, and `qrel scrape --source=NAME` what
 * `/probe?target=NAME` serves: one source's collection, its joins and the audit over them, no own
 * series (a probe is about one source, and those series would repeat on every probe target).
 *
 * The landing page (scrape_opts.max_age) runs no dead-letter join: it shows no classification
 * and must not cost a read per view.
 *
 * The exporter's own series are built here from struct scrape_self, which the caller fills with
 * what only it knows (a running exporter its reloads, `qrel scrape` its one load). The request
 * counts only the HTTP server knows are a field of that struct, filled by http.c, so that the
 * names of every own series stay in this file. */
#ifndef QREL_SCRAPE_H
#define QREL_SCRAPE_H

#include <stddef.h>

#include "audit.h"
#include "http_requests.h"
#include "metrics.h"
#include "scheduler.h"

/* The state of the program that serves the scrape, for its own series. */
struct scrape_self {
    int config_ok;        /* the last load of the file succeeded */
    double config_loaded; /* wall-clock seconds of the last successful load */
    /* The process_* series of the calling process: the exporter sets it; `qrel scrape` does not
     * (a command that ends after one scrape has no process worth watching). */
    int process;
    const struct http_requests *requests; /* qrel_http_requests_total (http.c), or NULL */
};

struct scrape_opts {
    double scrape_timeout; /* X-Prometheus-Scrape-Timeout-Seconds or --timeout, 0 when absent */
    const char *only;      /* one source (/probe, --source), NULL for the whole file */
    double max_age;        /* the landing page: see scheduler_opts.max_age; no joins */
    int report;            /* keep the audit's report (the landing page, qrel check) */
    const struct scrape_self *self; /* the own series' figures; NULL or only set: none served */
};

struct scrape;

/* Collects on s and assembles the scrape. Never NULL; the scrape holds its own reference on s.
 * Free with scrape_free. */
struct scrape *scrape_run(struct scheduler *s, const struct scrape_opts *o);
/* The sets to expose, in the order above; valid until scrape_free. */
struct metric_set *const *scrape_sets(const struct scrape *x, size_t *n);
/* The audit over this scrape's collections and joins when opts.report was set, else NULL; owned
 * by the scrape. */
const struct audit_report *scrape_report(const struct scrape *x);
size_t scrape_failed(const struct scrape *x); /* sources with qrel_collector_up 0 */
void scrape_free(struct scrape *x);           /* NULL is fine */

#endif
