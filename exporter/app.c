/* app.c: see app.h.
 *
 * Two locks: mu guards the current scheduler and the reload series and is held only for a swap
 * or a read (scrapes take it in app_acquire); rmu guards the reload thread's queue. The file is
 * parsed with neither held, so a config on a hung mount delays only the reload itself. */
#include "app.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "alloc.h"
#include "deadline.h"

struct app {
    pthread_mutex_t mu; /* guards current and the reload series */
    struct scheduler *current;
    struct pool *pool;
    char *path;
    int last_reload_ok;
    double last_reload_success;

    pthread_mutex_t rmu; /* guards the fields below */
    pthread_cond_t rcv;
    unsigned long requested; /* reloads asked for so far */
    unsigned long started;   /* requests covered by the reload that runs or ran last */
    unsigned long completed; /* requests covered by the last finished reload */
    int busy;
    int quitting;
    int last_rc;
    struct err last_err;
    pthread_t reloader;
};

/* An empty configuration is valid (the packaged one starts that way) but is rarely what the
 * operator wants for long: said at start and on every reload, with what to do. */
static void warn_if_empty(size_t nsources, const char *path)
{
    if (nsources == 0)
        log_kv(LOG_WARN,
               "no sources configured: serving only the exporter's own series; add sources to "
               "the file and reload (SIGHUP, or POST /-/reload with --web.enable-lifecycle)",
               "file", path, NULL);
}

/* Loads the file with no lock held, then swaps under mu. */
static int reload_now(struct app *a, struct err *e)
{
    struct sources *src = sources_load(a->path, e);
    if (!src) {
        pthread_mutex_lock(&a->mu);
        a->last_reload_ok = 0;
        pthread_mutex_unlock(&a->mu);
        log_kv(LOG_ERROR, "reload failed, keeping the running configuration", "file", a->path,
               "err", e->msg, NULL);
        return -1;
    }
    size_t n = src->n;
    struct scheduler *next = scheduler_new(src, a->pool);
    /* Only this thread swaps current, so it may read it without mu; a failure counted between
     * here and the swap is the one thing a reload can lose. */
    struct scheduler *old = a->current;
    scheduler_inherit(next, old);
    pthread_mutex_lock(&a->mu);
    a->current = next;
    a->last_reload_ok = 1;
    a->last_reload_success = deadline_wall_now();
    pthread_mutex_unlock(&a->mu);
    scheduler_unref(old); /* freed once the last scrape and collection using it end */
    char count[32];
    snprintf(count, sizeof count, "%zu", n);
    log_kv(LOG_INFO, "configuration reloaded", "file", a->path, "sources", count, NULL);
    warn_if_empty(n, a->path);
    return 0;
}

static void *reloader_main(void *p)
{
    struct app *a = p;
    pthread_mutex_lock(&a->rmu);
    for (;;) {
        while (!a->quitting && a->started == a->requested)
            pthread_cond_wait(&a->rcv, &a->rmu);
        if (a->quitting)
            break;
        a->started = a->requested;
        a->busy = 1;
        pthread_mutex_unlock(&a->rmu);
        struct err e;
        err_clear(&e);
        int rc = reload_now(a, &e);
        pthread_mutex_lock(&a->rmu);
        a->busy = 0;
        a->completed = a->started;
        a->last_rc = rc;
        a->last_err = e;
        pthread_cond_broadcast(&a->rcv);
    }
    pthread_mutex_unlock(&a->rmu);
    return NULL;
}

struct app *app_new(const char *config_path, struct pool *pool, struct err *e)
{
    struct sources *src = sources_load(config_path, e);
    if (!src)
        return NULL;
    struct app *a = xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->rmu, NULL);
    pthread_cond_init(&a->rcv, NULL);
    a->path = xstrdup(config_path);
    a->pool = pool;
    size_t nsources = src->n;
    a->current = scheduler_new(src, pool);
    a->last_reload_ok = 1;
    a->last_reload_success = deadline_wall_now();
    warn_if_empty(nsources, config_path);
    if (pthread_create(&a->reloader, NULL, reloader_main, a) != 0) {
        err_set(e, ERR_INTERNAL, "cannot start the reload thread");
        a->quitting = 1;
        a->reloader = pthread_self(); /* nothing to join */
        app_free(a);
        return NULL;
    }
    return a;
}

int app_quit(struct app *a)
{
    pthread_mutex_lock(&a->rmu);
    int already = a->quitting;
    a->quitting = 1;
    int busy = a->busy;
    pthread_cond_broadcast(&a->rcv);
    pthread_mutex_unlock(&a->rmu);
    if (busy)
        return -1;
    if (!already)
        pthread_join(a->reloader, NULL);
    return 0;
}

void app_free(struct app *a)
{
    if (!a)
        return;
    scheduler_unref(a->current);
    free(a->path);
    pthread_cond_destroy(&a->rcv);
    pthread_mutex_destroy(&a->rmu);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void app_request_reload(struct app *a)
{
    pthread_mutex_lock(&a->rmu);
    a->requested++;
    pthread_cond_broadcast(&a->rcv);
    pthread_mutex_unlock(&a->rmu);
}

int app_reload(struct app *a, struct err *e)
{
    pthread_mutex_lock(&a->rmu);
    unsigned long ticket = ++a->requested;
    pthread_cond_broadcast(&a->rcv);
    /* Any reload that started after this request read the file as it is now. */
    while (!a->quitting && a->completed < ticket)
        pthread_cond_wait(&a->rcv, &a->rmu);
    int rc;
    if (a->completed < ticket) {
        err_set(e, ERR_INTERNAL, "the exporter is stopping");
        rc = -1;
    } else {
        rc = a->last_rc;
        if (rc != 0)
            *e = a->last_err;
    }
    pthread_mutex_unlock(&a->rmu);
    return rc;
}

struct scheduler *app_acquire(struct app *a)
{
    pthread_mutex_lock(&a->mu);
    struct scheduler *s = a->current;
    scheduler_ref(s);
    pthread_mutex_unlock(&a->mu);
    return s;
}

void app_self(struct app *a, struct scrape_self *out)
{
    pthread_mutex_lock(&a->mu);
    out->config_ok = a->last_reload_ok;
    out->config_loaded = a->last_reload_success;
    pthread_mutex_unlock(&a->mu);
}
