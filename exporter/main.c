/* main.c: qrel_exporter — signals and wiring only (its flags are parsed and judged in options.c).
 *
 * Signals are blocked in every thread and taken by the main thread with sigwait, so SIGHUP
 * (reload) and SIGTERM/SIGINT (stop) never interrupt a collection or an HTTP thread. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "app.h"
#include "options.h"
#include "http.h"
#include "log.h"
#include "pool.h"
#include "sources.h"
#include "alloc.h"
#include "version.h"
#include "webconfig.h"

/* --config.check: the file first (no I/O), then each source whose kind can verify itself
 * against the live server (tables and columns exist) under the source's timeout, then the work
 * tables of the dead_letters joins. */
static int config_check(const char *path)
{
    struct err e;
    err_clear(&e);
    struct sources *s = sources_load(path, &e);
    if (!s) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    int failed = 0;
    for (size_t i = 0; i < s->n; i++) {
        struct collector *c = s->items[i];
        if (!c->kind->check)
            continue;
        struct deadline dl = deadline_in(c->timeout);
        err_clear(&e);
        if (c->kind->check(c, &dl, &e) != 0) {
            fprintf(stderr, "%s: source \"%s\": %s\n", path, c->name, e.msg);
            failed = 1;
        }
    }
    err_clear(&e);
    if (dead_letters_check(&s->dead_letters, &e) != 0) {
        fprintf(stderr, "%s: %s\n", path, e.msg);
        failed = 1;
    }
    if (!failed)
        printf("%s: OK, %zu source%s\n", path, s->n, s->n == 1 ? "" : "s");
    sources_free(s);
    return failed;
}

/* Each source keeps a connection open and every HTTP connection holds a descriptor (up to
 * HTTP_MAX_CONNECTIONS), so 1,000 sources and the limits in http.c need more descriptors than the
 * soft limit services often start with (1024); the hard limit is what the administrator allows. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        log_kv(LOG_WARN, "cannot raise the open file limit to its hard limit", NULL);
}

int main(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    struct exporter_options o;
    int rc = exporter_options_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    log_setup(o.level, o.log_json);
    if (o.config_check)
        return config_check(o.config_file);

    xmalloc_setup(); /* before any thread exists: threads pick their arena when they start */
    /* Block the signals we wait for before any thread exists, so every thread inherits it. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    struct webconfig *web = NULL;
    if (o.web_config_file) {
        web = webconfig_load(o.web_config_file, &e);
        if (!web) {
            log_kv(LOG_ERROR, "cannot load the web configuration", "err", e.msg, NULL);
            return 1;
        }
    }
    struct pool *pool = pool_new(o.concurrency, &e);
    struct app *a = pool ? app_new(o.config_file, pool, &e) : NULL;
    if (!a) {
        log_kv(LOG_ERROR, "cannot load configuration", "err", e.msg, NULL);
        pool_free(pool);
        webconfig_free(web);
        return 1;
    }
    struct http_opts ho = {.listen_addresses = o.listen_addresses,
                           .nlisten = o.nlisten,
                           .systemd_socket = o.systemd_socket,
                           .telemetry_path = o.telemetry_path,
                           .web = web,
                           .advertise_address = o.advertise_address,
                           .enable_lifecycle = o.enable_lifecycle};
    struct http_server *h = http_start(a, &ho, &e);
    if (!h) {
        log_kv(LOG_ERROR, "cannot start the HTTP server", "err", e.msg, NULL);
        if (app_quit(a) == 0)
            app_free(a);
        pool_free(pool);
        webconfig_free(web);
        return 1;
    }
    log_kv(LOG_INFO, "listening", "address", http_bound_address(h), "version", QREL_VERSION,
           "config", o.config_file, "tls", web && web->cert_pem ? "true" : "false", "basic_auth",
           web && web->nusers ? "true" : "false", "advertise", http_advertise_address(h),
           "collector_concurrency", o.concurrency_text, NULL);

    for (;;) {
        int sig = 0;
        if (sigwait(&sigs, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            /* On the reload thread: a file that hangs must not keep this loop from SIGTERM. */
            log_kv(LOG_INFO, "SIGHUP received, reloading", NULL);
            app_request_reload(a);
            continue;
        }
        log_kv(LOG_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
        break;
    }
    /* First the reload thread (which also releases any POST /-/reload waiting on it), then the
     * server, which waits for its connection threads. */
    int reload_stuck = app_quit(a) != 0;
    http_stop(h);
    if (reload_stuck) {
        /* The reload thread is blocked in the file system and still uses the app: leave it to
         * the process exit instead of freeing under it. */
        log_kv(LOG_WARN, "a reload is still reading the configuration; exiting without it", NULL);
        webconfig_free(web);
        return 0;
    }
    app_free(a);
    pool_exit(pool);
    webconfig_free(web);
    return 0;
}
