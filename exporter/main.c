/* main.c: qrel_exporter — flags, signals and wiring only.
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
#include "flags.h"
#include "http.h"
#include "log.h"
#include "number.h"
#include "pool.h"
#include "sd.h"
#include "sources.h"
#include "alloc.h"
#include "version.h"
#include "webconfig.h"

#define DEFAULT_LISTEN ":19318"

static struct flag flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"config.check", FLAG_BOOL, "false", "Validate the configuration file and exit.", NULL, 0},
    {"web.listen-address", FLAG_STRING, DEFAULT_LISTEN,
     "Address to listen on for /metrics and the other endpoints.", NULL, 0},
    {"web.config.file", FLAG_STRING, NULL,
     "Web configuration file (TLS and basic auth, the exporter-toolkit format).", NULL, 0},
    {"web.telemetry-path", FLAG_STRING, "/metrics", "Path under which to expose metrics.", NULL, 0},
    {"web.advertise-address", FLAG_STRING, NULL,
     "host:port Prometheus should scrape this exporter at, as listed by /sd (default: the listen "
     "address, with this machine's host name when it listens on all interfaces).",
     NULL, 0},
    {"collector.concurrency", FLAG_STRING, "64",
     "Most collections running at once (1 to 10000); the rest wait for a free thread and report "
     "up 0 when their scrape deadline passes first.",
     NULL, 0},
    {"web.enable-lifecycle", FLAG_BOOL, "false",
     "Enable reload via HTTP request (POST /-/reload); SIGHUP always reloads.", NULL, 0},
    FLAGS_LOG("info"),
    {"version", FLAG_BOOL, "false", "Print the version and exit.", NULL, 0},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

static const char usage[] =
    "usage: qrel_exporter [flags]\n\n"
    "Serves message-queue reliability metrics (queue depth and age, lease margin, redeliveries,\n"
    "dead letters) for Prometheus. Reload the configuration with SIGHUP (or POST /-/reload with\n"
    "--web.enable-lifecycle).";

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

static const char *flag(const char *name)
{
    return flags_find(flags, NFLAGS, name)->value;
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

/* --collector.concurrency: a whole number within the pool's limits (plain digits: strtol alone
 * took " 5" and "+5"). */
static int parse_concurrency(const char *v, size_t *out)
{
    long long n;
    if (num_parse_int(v, 1, POOL_MAX_THREADS, &n))
        return -1;
    *out = (size_t)n;
    return 0;
}

int main(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    int npos, help;
    if (flags_parse(flags, NFLAGS, argc, argv, 1, &npos, &help, &e)) {
        fprintf(stderr, "qrel_exporter: %s\n", e.msg);
        return 2;
    }
    if (help) {
        flags_usage(stdout, usage, flags, NFLAGS);
        return 0;
    }
    if (npos > 0) {
        fprintf(stderr, "qrel_exporter: unexpected argument \"%s\" (see --help)\n", argv[1]);
        return 2;
    }
    if (flags_bool(flags_find(flags, NFLAGS, "version"))) {
        printf("qrel_exporter %s (revision %s)\n", QREL_VERSION, QREL_REVISION);
        return 0;
    }
    enum log_level level;
    int json;
    if (log_parse_level(flag("log.level"), &level)) {
        fprintf(stderr, "qrel_exporter: --log.level: want debug, info, warn or error, got \"%s\"\n",
                flag("log.level"));
        return 2;
    }
    if (log_parse_format(flag("log.format"), &json)) {
        fprintf(stderr, "qrel_exporter: --log.format: want logfmt or json, got \"%s\"\n",
                flag("log.format"));
        return 2;
    }
    log_setup(level, json);

    /* Judged here with the other flags, so a bad one is a usage error (2) before anything
     * starts; the server works out the default itself once it has bound. */
    char advertise[300];
    if (flag("web.advertise-address") &&
        sd_advertise_address(flag("web.advertise-address"), "", 1, "", advertise, sizeof advertise,
                             &e)) {
        fprintf(stderr, "qrel_exporter: %s\n", e.msg);
        return 2;
    }
    if (flags_bool(flags_find(flags, NFLAGS, "config.check")))
        return config_check(flag("config.file"));
    size_t concurrency;
    if (parse_concurrency(flag("collector.concurrency"), &concurrency)) {
        fprintf(stderr, "qrel_exporter: --collector.concurrency: want 1 to %d, got \"%s\"\n",
                POOL_MAX_THREADS, flag("collector.concurrency"));
        return 2;
    }

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
    if (flag("web.config.file")) {
        web = webconfig_load(flag("web.config.file"), &e);
        if (!web) {
            log_kv(LOG_ERROR, "cannot load the web configuration", "err", e.msg, NULL);
            return 1;
        }
    }
    struct pool *pool = pool_new(concurrency, &e);
    struct app *a = pool ? app_new(flag("config.file"), pool, &e) : NULL;
    if (!a) {
        log_kv(LOG_ERROR, "cannot load configuration", "err", e.msg, NULL);
        pool_free(pool);
        webconfig_free(web);
        return 1;
    }
    struct http_opts ho = {flag("web.listen-address"), flag("web.telemetry-path"), web,
                           flag("web.advertise-address"),
                           flags_bool(flags_find(flags, NFLAGS, "web.enable-lifecycle"))};
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
           "config", flag("config.file"), "tls", web && web->cert_pem ? "true" : "false",
           "basic_auth", web && web->nusers ? "true" : "false", "advertise",
           http_advertise_address(h), "collector_concurrency", flag("collector.concurrency"), NULL);

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
