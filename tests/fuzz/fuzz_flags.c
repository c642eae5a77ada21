/* fuzz_flags.c: libFuzzer target for the command-line flags, parsed and judged without running
 * anything: the qrel commands' whole parse (cli/args.h: scrape, check, dlq, every number through
 * core/number.h) and qrel_exporter's (exporter/options.h: --collector.concurrency,
 * --web.advertise-address and the rest, as it judges them before it starts). The input is split
 * at newlines into arguments; its first byte picks the program. A value a parser accepts must be
 * within the range the docs state, and an accepted advertise address must be printable ASCII (it
 * goes into /sd's JSON as it is). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "number.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 16

/* The checks a successful parse of a qrel command must pass. */
static void check_cli(const struct cli_args *a)
{
    if (a->timeout < 0 || a->timeout > NUM_TIMEOUT_MAX || (a->timeout > 0 && a->timeout < 0.001))
        __builtin_trap();
    if (a->o.rate < 0 || a->o.rate > 1000000 || (a->o.rate > 0 && a->o.rate < 0.001))
        __builtin_trap();
    if (a->limit > 1000000 || a->sample > 1000000)
        __builtin_trap();
}

/* The checks a successful parse of qrel_exporter's flags must pass. */
static void check_exporter(const struct exporter_options *o)
{
    if (!o->config_check && (o->concurrency < 1 || o->concurrency > 10000))
        __builtin_trap();
    for (const char *p = o->advertise_address; p && *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e || *p == '"' || *p == '\\')
            __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t which = data[0] % 4;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    static const char *const commands[] = {"scrape", "check", "dlq"};
    char *argv[MAX_ARGS + 3] = {"qrel", (char *)commands[which % 3]};
    int argc = 2;
    for (char *p = text; argc < MAX_ARGS + 2;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    if (which == 3) {
        struct exporter_options o;
        argv[1] = "--log.level=info"; /* qrel_exporter has no command word */
        if (exporter_options_parse(argc, argv, &o) == -1)
            check_exporter(&o);
    } else {
        struct cli_args a;
        if (cli_args_parse((enum cli_command)which, argc, argv, &a) == -1)
            check_cli(&a);
    }
    free(text);
    return 0;
}
