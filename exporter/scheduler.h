/* scheduler.h: runs the configured collectors for a scrape, in parallel on a bounded pool of
 * threads, each under its own deadline, and keeps each source's health between scrapes.
 *
 * A scheduler is one loaded configuration plus per-source run state. It is reference counted so
 * a reload can swap in a new one while scrapes (and collector threads) still use the old one.
 *
 * Guarantees: a scrape returns by its deadline even when a broker hangs (the collector thread is
 * left to finish on its own deadline); a failing or late source becomes qrel_collector_up 0 with
 * a counted reason while every other source is still served; scrapes that overlap share one
 * collection per source (an instance never runs twice at once); a failing source backs off
 * (doubling from 0.5 s, capped at 30 s) and is tried again after that, never disabled for good.
 * A collection still waiting for a pool thread at its deadline is reported up 0 with the reason
 * "not started before the deadline" (counted as a timeout; a healthy source does not back off for
 * it). Sources whose last attempt failed are handed to the pool after the others.
 * A source's latest successful collection is kept until the next one succeeds when it may be
 * served again: with min_interval, or when the landing page (scheduler_opts.max_age) started it;
 * at most one extra set per source. A plain scrape's set is freed once served. */
#ifndef QREL_SCHEDULER_H
#define QREL_SCHEDULER_H

#include <stddef.h>

#include "deadline.h"
#include "metrics.h"
#include "pool.h"
#include "sources.h"

#define SCHEDULER_BACKOFF_BASE 0.5
#define SCHEDULER_BACKOFF_CAP 30.0
#define SCHEDULER_START_MARGIN_MS 50 /* a collection starts with at least this much time left */
/* X-Prometheus-Scrape-Timeout-Seconds below this is taken as this: a scrape cannot ask for less. */
#define SCHEDULER_SCRAPE_TIMEOUT_FLOOR 0.5

struct scheduler;

/* Takes ownership of src; collects on pool (see pool.h), which must outlive the scheduler and
 * every scrape of it: free the pool last. */
struct scheduler *scheduler_new(struct sources *src, struct pool *pool);
void scheduler_ref(struct scheduler *s);
void scheduler_unref(struct scheduler *s); /* frees with the last reference; NULL is fine */
const struct sources *scheduler_sources(const struct scheduler *s);
/* Carries each source's error counters and last success over from old (the configuration a
 * reload replaces) to s, matched by name and kind, so counters stay monotonic across reloads.
 * Call before s serves any scrape. */
void scheduler_inherit(struct scheduler *s, struct scheduler *old);

struct scheduler_opts {
    double scrape_timeout; /* X-Prometheus-Scrape-Timeout-Seconds, 0 when absent */
    const char *only;      /* collect just this source (for /probe), NULL for all */
    double max_age;        /* > 0: a source whose last attempt succeeded less than this many
                            * seconds ago is served that success again instead of being collected
                            * (the landing page, which must not cost a collection per view) */
};

struct scheduler_scrape;

/* Collects and returns once every source has finished or reached its deadline. Never NULL. */
struct scheduler_scrape *scheduler_scrape(struct scheduler *s, const struct scheduler_opts *o);
/* The collections: one set per successful source plus one of meta series per source, valid until
 * scheduler_scrape_free. What a scrape serves is more (the dead-letter joins, the audit, the
 * exporter's own series): scrape.h assembles it. */
struct metric_set *const *scheduler_scrape_sets(const struct scheduler_scrape *sc, size_t *n);
size_t scheduler_scrape_failed(const struct scheduler_scrape *sc);  /* sources with up 0 */
size_t scheduler_scrape_matched(const struct scheduler_scrape *sc); /* sources collected */
/* 1 when this scrape collected c and it is up, with *dl the deadline the scrape gave it (what a
 * dead-letter join on c runs under, scrape.c); 0 when it was not collected or failed. */
int scheduler_scrape_up(const struct scheduler_scrape *sc, const struct collector *c,
                        struct deadline *dl);
void scheduler_scrape_free(struct scheduler_scrape *sc);

/* A snapshot of one source's health, for the landing page and logs. */
struct scheduler_status {
    const char *name;
    const char *kind;
    int up;              /* result of the last finished attempt, -1 before the first */
    double last_success; /* wall-clock seconds, 0 when never */
    double last_duration;
    char last_error[512]; /* "" when the last attempt succeeded */
};
size_t scheduler_source_count(const struct scheduler *s);
void scheduler_status_at(struct scheduler *s, size_t i, struct scheduler_status *out);

/* The deadline rule, exposed for tests: seconds a scrape waits for a source. The header is raised
 * to SCHEDULER_SCRAPE_TIMEOUT_FLOOR first. A source whose collection outlives this wait but not
 * its own timeout is up 0 in that scrape only: no error is counted and no back-off starts. */
double scheduler_budget(double source_timeout, double scrape_timeout, double offset);

#endif
