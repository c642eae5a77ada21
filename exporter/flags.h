/* flags.h: command-line flags in the Prometheus style (--config.file=F or --config.file F,
 * boolean flags as --config.check or --config.check=false), shared by qrel_exporter and qrel.
 * Values point into argv or at the static default: nothing to free. */
#ifndef QREL_FLAGS_H
#define QREL_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"

/* FLAG_LIST: a string flag that may be given several times (--web.listen-address): value is the
 * last one given, flags_collect gathers them all. */
enum flag_type { FLAG_STRING, FLAG_BOOL, FLAG_LIST };

#define FLAG_LIST_MAX 16

struct flag {
    const char *name; /* without the leading "--" */
    enum flag_type type;
    const char *def; /* default value (string), NULL for none */
    const char *help;
    const char *value; /* filled by flags_parse: the given value or def */
    int given;         /* how many times it was given */
};

/* The --log.level and --log.format rows every command's table has; level is its default. */
// clang-format off
#define FLAGS_LOG(level)                                                                        \
    {"log.level", FLAG_STRING, level, "Only log messages at or above: debug, info, warn, error.", \
     NULL, 0},                                                                                  \
    {"log.format", FLAG_STRING, "logfmt", "Log format: logfmt or json.", NULL, 0}
// clang-format on

/* Parses argv[start..]. Positional arguments (not starting with "--") are moved, in order, to
 * the front of argv[start..]; *npos receives their count. "-h"/"--help" sets *help. */
int flags_parse(struct flag *flags, size_t n, int argc, char **argv, int start, int *npos,
                int *help, struct err *e);
int flags_bool(const struct flag *f); /* value as a boolean */
/* Every value of --name in argv[start..] in order (as --name=V or --name V), at most max; call it
 * before flags_parse, which reorders argv. *n receives the count. */
int flags_collect(int argc, char **argv, int start, const char *name, const char **out, size_t max,
                  size_t *n, struct err *e);
struct flag *flags_find(struct flag *flags, size_t n, const char *name);
void flags_usage(FILE *out, const char *usage, const struct flag *flags, size_t n);

#endif
