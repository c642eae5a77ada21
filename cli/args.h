/* args.h: the flags of the qrel commands, parsed and judged before anything runs: what cli.c's
 * commands need, or the exit status of a usage error (its message already printed, on stderr as
 * "qrel NAME: ..." with status 2, or for check as a Nagios plugin does, "QREL UNKNOWN - ..." on
 * stdout with status 3). Apart from main() so that a unit test and the fuzz target fuzz_flags
 * reach it; it opens no file and talks to no broker. */
#ifndef QREL_ARGS_H
#define QREL_ARGS_H

#include <stddef.h>

#include "dlq.h"

enum cli_command { CLI_SCRAPE, CLI_CHECK, CLI_DLQ };

struct cli_args {
    const char *config_file;
    const char *source;       /* scrape: NULL for every source */
    const char *queue;        /* dlq */
    int other_format;         /* scrape: openmetrics, check and dlq: json */
    double timeout;           /* check and dlq: seconds, 0 when not given */
    int replay;               /* dlq replay rather than inspect */
    size_t limit;             /* dlq: 0 when not given */
    size_t sample;            /* dlq */
    struct dlq_replay_opts o; /* dlq replay's (o.stop left NULL) */
};

/* Parses argv[2..] (argv[1] names the command) into *a. -1 to go on, else the exit status:
 * 0 after --help (printed on stdout), 2 or 3 on a usage error. Values point into argv. */
int cli_args_parse(enum cli_command cmd, int argc, char **argv, struct cli_args *a);

#endif
