/* options.h: qrel_exporter's flags, parsed and judged before anything starts: what main() needs,
 * or the exit status of --help, --version or a usage error (printed: "qrel_exporter: ..." on
 * stderr, status 2). Apart from main() so that the fuzz target fuzz_flags reaches it; it opens
 * no file and starts nothing. */
#ifndef QREL_OPTIONS_H
#define QREL_OPTIONS_H

#include <stddef.h>

#include "flags.h"
#include "log.h"

struct exporter_options {
    const char *config_file;
    int config_check;
    const char *listen_addresses[FLAG_LIST_MAX]; /* every --web.listen-address, in order */
    size_t nlisten;                              /* at least 1 (the default) */
    int systemd_socket;                          /* --web.systemd-socket: LISTEN_FDS instead */
    const char *web_config_file, *telemetry_path;
    const char *advertise_address; /* NULL: the server works it out once it has bound */
    size_t concurrency;            /* 1 to POOL_MAX_THREADS */
    const char *concurrency_text;  /* as given, for the start-up log */
    int enable_lifecycle;
    enum log_level level;
    int log_json;
};

/* Parses argv[1..] into *o. -1 to go on, else the exit status (0 after --help or --version,
 * printed on stdout; 2 on a usage error). Values point into argv or at static defaults. */
int exporter_options_parse(int argc, char **argv, struct exporter_options *o);

#endif
