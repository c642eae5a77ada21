/* options.c: see options.h. The numbers go through core/number.h's strict parser, the
 * advertised address through sd_advertise_address, so a bad one is refused before the server
 * starts rather than by it (which exited 1). */
#include "options.h"

#include <stdio.h>
#include <string.h>

#include "flags.h"
#include "number.h"
#include "pool.h"
#include "sd.h"
#include "version.h"

#define DEFAULT_LISTEN ":19318"

static struct flag flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"config.check", FLAG_BOOL, "false", "Validate the configuration file and exit.", NULL, 0},
    {"web.listen-address", FLAG_LIST, DEFAULT_LISTEN,
     "Address to listen on for /metrics and the other endpoints; repeat it to listen on several "
     "(/sd and the landing page advertise the first).",
     NULL, 0},
    {"web.systemd-socket", FLAG_BOOL, "false",
     "Listen on the sockets systemd passes (socket activation: LISTEN_FDS, LISTEN_PID) instead of "
     "--web.listen-address.",
     NULL, 0},
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

static const char *flag(const char *name)
{
    return flags_find(flags, NFLAGS, name)->value;
}

int exporter_options_parse(int argc, char **argv, struct exporter_options *o)
{
    memset(o, 0, sizeof *o);
    struct err e;
    err_clear(&e);
    int npos, help;
    size_t nlisten = 0;
    /* Every --web.listen-address, before flags_parse reorders argv. */
    if (flags_collect(argc, argv, 1, "web.listen-address", o->listen_addresses, FLAG_LIST_MAX,
                      &nlisten, &e) ||
        flags_parse(flags, NFLAGS, argc, argv, 1, &npos, &help, &e)) {
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
    if (log_parse_level(flag("log.level"), &o->level)) {
        fprintf(stderr, "qrel_exporter: --log.level: want debug, info, warn or error, got \"%s\"\n",
                flag("log.level"));
        return 2;
    }
    if (log_parse_format(flag("log.format"), &o->log_json)) {
        fprintf(stderr, "qrel_exporter: --log.format: want logfmt or json, got \"%s\"\n",
                flag("log.format"));
        return 2;
    }
    /* The server works out the default itself once it has bound. */
    char advertise[300];
    o->advertise_address = flag("web.advertise-address");
    if (o->advertise_address &&
        sd_advertise_address(o->advertise_address, "", 1, "", advertise, sizeof advertise, &e)) {
        fprintf(stderr, "qrel_exporter: %s\n", e.msg);
        return 2;
    }
    o->config_file = flag("config.file");
    o->config_check = flags_bool(flags_find(flags, NFLAGS, "config.check"));
    if (o->config_check)
        return -1; /* nothing else is used */
    o->concurrency_text = flag("collector.concurrency");
    if (parse_concurrency(o->concurrency_text, &o->concurrency)) {
        fprintf(stderr, "qrel_exporter: --collector.concurrency: want 1 to %d, got \"%s\"\n",
                POOL_MAX_THREADS, o->concurrency_text);
        return 2;
    }
    o->nlisten = nlisten;
    if (o->nlisten == 0)
        o->listen_addresses[o->nlisten++] = DEFAULT_LISTEN;
    o->systemd_socket = flags_bool(flags_find(flags, NFLAGS, "web.systemd-socket"));
    if (o->systemd_socket && nlisten) {
        fprintf(stderr, "qrel_exporter: --web.systemd-socket and --web.listen-address exclude each "
                        "other\n");
        return 2;
    }
    o->web_config_file = flag("web.config.file");
    o->telemetry_path = flag("web.telemetry-path");
    o->enable_lifecycle = flags_bool(flags_find(flags, NFLAGS, "web.enable-lifecycle"));
    return -1;
}
