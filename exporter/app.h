/* app.h: the running exporter's state shared by the HTTP server and the signal loop: the current
 * scheduler (swapped on reload) and the state its own series report (scrape.h builds them).
 *
 * Reload is all-or-nothing: a file that fails to load leaves the running scheduler in place and
 * sets qrel_config_last_reload_successful to 0. Reloads run one at a time on their own thread and
 * read the file without holding the lock scrapes take, so a slow or stuck file system stalls
 * neither a scrape nor shutdown. Each source's error counters and last success carry over to the
 * new configuration when a source of the same name and kind is still there. */
#ifndef QREL_APP_H
#define QREL_APP_H

#include "err.h"
#include "scheduler.h"
#include "scrape.h"

struct app;

/* Loads path; NULL with e set when the first load fails. Starts the reload thread. Every
 * scheduler collects on pool, which the caller frees after app_free. */
struct app *app_new(const char *config_path, struct pool *pool, struct err *e);
/* Frees; call only after app_quit returned 0. */
void app_free(struct app *a);
/* Asks for a reload (SIGHUP) and returns at once; requests made while one runs coalesce. */
void app_request_reload(struct app *a);
/* Reloads and waits for the outcome (POST /-/reload): 0, or -1 with e set. Returns early with an
 * error when app_quit is called meanwhile. */
int app_reload(struct app *a, struct err *e);
/* Stops the reload thread: 0 when it ended, -1 when a reload is still stuck in the file system
 * (the caller then exits without app_free). */
int app_quit(struct app *a);
/* The current scheduler with a reference the caller drops with scheduler_unref. */
struct scheduler *app_acquire(struct app *a);
/* The figures of the exporter's own series (the reload state), for scrape_opts.self. */
void app_self(struct app *a, struct scrape_self *out);

#endif
