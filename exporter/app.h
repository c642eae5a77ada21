/* app.h: the running exporter's state shared by the HTTP server and the signal loop: the current
 * scheduler (swapped on reload) and the exporter's own series.
 *
 * Reload is all-or-nothing: a file that fails to load leaves the running scheduler in place and
 * sets qrel_config_last_reload_successful to 0. */
#ifndef QREL_APP_H
#define QREL_APP_H

#include "err.h"
#include "metrics.h"
#include "scheduler.h"

struct app;

/* Loads path; NULL with e set when the first load fails. Every scheduler collects on pool, which
 * the caller frees after app_free. */
struct app *app_new(const char *config_path, struct pool *pool, struct err *e);
void app_free(struct app *a);
int app_reload(struct app *a, struct err *e);
/* The current scheduler with a reference the caller drops with scheduler_unref. */
struct scheduler *app_acquire(struct app *a);
/* qrel_build_info and the reload series, in a set without source/kind labels. */
struct metric_set *app_exporter_metrics(struct app *a);

#endif
