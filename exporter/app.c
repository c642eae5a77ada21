/* app.c: see app.h. */
#include "app.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "util.h"
#include "version.h"

struct app {
    pthread_mutex_t mu; /* guards current and the reload fields; reloads are serialised by it */
    struct scheduler *current;
    struct pool *pool;
    char *path;
    int last_reload_ok;
    double last_reload_success;
};

struct app *app_new(const char *config_path, struct pool *pool, struct err *e)
{
    struct sources *src = sources_load(config_path, e);
    if (!src)
        return NULL;
    struct app *a = xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->path = xstrdup(config_path);
    a->pool = pool;
    a->current = scheduler_new(src, pool);
    a->last_reload_ok = 1;
    a->last_reload_success = util_wall_now();
    return a;
}

void app_free(struct app *a)
{
    if (!a)
        return;
    scheduler_unref(a->current);
    free(a->path);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

int app_reload(struct app *a, struct err *e)
{
    pthread_mutex_lock(&a->mu);
    struct sources *src = sources_load(a->path, e);
    if (!src) {
        a->last_reload_ok = 0;
        pthread_mutex_unlock(&a->mu);
        log_kv(LOG_ERROR, "reload failed, keeping the running configuration", "file", a->path,
               "err", e->msg, NULL);
        return -1;
    }
    struct scheduler *old = a->current;
    a->current = scheduler_new(src, a->pool);
    a->last_reload_ok = 1;
    a->last_reload_success = util_wall_now();
    size_t n = src->n;
    pthread_mutex_unlock(&a->mu);
    scheduler_unref(old); /* freed once the last scrape and collection using it end */
    char count[32];
    snprintf(count, sizeof count, "%zu", n);
    log_kv(LOG_INFO, "configuration reloaded", "file", a->path, "sources", count, NULL);
    return 0;
}

struct scheduler *app_acquire(struct app *a)
{
    pthread_mutex_lock(&a->mu);
    struct scheduler *s = a->current;
    scheduler_ref(s);
    pthread_mutex_unlock(&a->mu);
    return s;
}

struct metric_set *app_exporter_metrics(struct app *a)
{
    struct metric_set *m = metric_set_new(NULL, NULL);
    metric_set_add(m, "qrel_build_info", 1.0, "version", QREL_VERSION, "revision", QREL_REVISION,
                   NULL);
    pthread_mutex_lock(&a->mu);
    metric_set_add(m, "qrel_config_last_reload_successful", a->last_reload_ok ? 1.0 : 0.0, NULL);
    metric_set_add(m, "qrel_config_last_reload_success_timestamp_seconds", a->last_reload_success,
                   NULL);
    pthread_mutex_unlock(&a->mu);
    return m;
}
