/* args.c: see args.h. Every number a flag takes is read by core/number.h's strict parser
 * within the range docs/operations.md and docs/dlq.md state. */
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "flags.h"
#include "log.h"
#include "number.h"

/* A qrel command: its flags, and how it reports a usage error: on stderr as "qrel NAME: ..."
 * with exit status 2, or for check as a Nagios plugin does, "QREL UNKNOWN - ..." on stdout with
 * exit status 3, which a monitoring system reads as no verdict. */
struct command {
    const char *name;
    struct flag *flags;
    size_t nflags;
    const char *usage;
    int nagios;
    const char *formats[2]; /* the words --format takes: the default, then the other */
};

static struct flag scrape_flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"format", FLAG_STRING, "text", "Output format: text (0.0.4) or openmetrics.", NULL, 0},
    {"source", FLAG_STRING, NULL, "Collect only this source (by name).", NULL, 0},
    FLAGS_LOG("warn"),
};
#define NSCRAPE (sizeof scrape_flags / sizeof scrape_flags[0])
static const struct command scrape_cmd = {
    "scrape", scrape_flags, NSCRAPE, "usage: qrel scrape [flags]", 0, {"text", "openmetrics"}};

static struct flag check_flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"format", FLAG_STRING, "text", "Output format: text (Nagios plugin style) or json.", NULL, 0},
    {"timeout", FLAG_STRING, NULL,
     "Finish within this duration (e.g. 10s); each source's own timeout still applies.", NULL, 0},
    FLAGS_LOG("error"),
};
#define NCHECK (sizeof check_flags / sizeof check_flags[0])
/* Usage and configuration errors exit 3 (UNKNOWN), as a Nagios plugin must: a monitoring
 * system reads any other code as a state of the queues. */
static const struct command check_cmd = {
    "check", check_flags, NCHECK, "usage: qrel check [flags]", 1, {"text", "json"}};

static int usage_error(const struct command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int usage_error(const struct command *c, const char *fmt, ...)
{
    FILE *out = c->nagios ? stdout : stderr;
    if (c->nagios)
        fputs("QREL UNKNOWN - ", out);
    else
        fprintf(out, "qrel %s: ", c->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    return c->nagios ? AUDIT_UNKNOWN : 2;
}

/* What every command does first: parse its flags, answer --help, refuse more than most
 * positional arguments (*npos says how many there are), set up logging, read --format (*other:
 * 1 for the second of c->formats). -1 to go on, else the exit status. */
static int command_start(const struct command *c, int argc, char **argv, int most, int *npos,
                         int *other)
{
    struct err e;
    err_clear(&e);
    int help;
    if (flags_parse(c->flags, c->nflags, argc, argv, 2, npos, &help, &e))
        return usage_error(c, "%s", e.msg);
    if (help) {
        flags_usage(stdout, c->usage, c->flags, c->nflags);
        return 0;
    }
    if (*npos > most)
        return usage_error(c, "unexpected argument \"%s\"", argv[2 + most]);
    enum log_level level;
    int json;
    if (log_parse_level(flags_find(c->flags, c->nflags, "log.level")->value, &level) ||
        log_parse_format(flags_find(c->flags, c->nflags, "log.format")->value, &json))
        return usage_error(c, "bad --log.level or --log.format");
    log_setup(level, json);
    const char *format = flags_find(c->flags, c->nflags, "format")->value;
    *other = strcmp(format, c->formats[1]) == 0;
    if (!*other && strcmp(format, c->formats[0]) != 0)
        return usage_error(c, "--format: want %s or %s, got \"%s\"", c->formats[0], c->formats[1],
                           format);
    return -1;
}

static int scrape_parse_args(int argc, char **argv, struct cli_args *a)
{
    int npos, rc = command_start(&scrape_cmd, argc, argv, 0, &npos, &a->other_format);
    if (rc >= 0)
        return rc;
    a->config_file = flags_find(scrape_flags, NSCRAPE, "config.file")->value;
    a->source = flags_find(scrape_flags, NSCRAPE, "source")->value;
    return -1;
}

static int check_parse_args(int argc, char **argv, struct cli_args *a)
{
    int npos, rc = command_start(&check_cmd, argc, argv, 0, &npos, &a->other_format);
    if (rc >= 0)
        return rc;
    const char *timeout = flags_find(check_flags, NCHECK, "timeout")->value;
    if (timeout && num_parse_duration(timeout, NUM_TIMEOUT_MIN, NUM_TIMEOUT_MAX, &a->timeout)) {
        printf(
            "QREL UNKNOWN - --timeout: want a duration from 1ms to 1d like \"10s\", got \"%s\"\n",
            timeout);
        return AUDIT_UNKNOWN;
    }
    a->config_file = flags_find(check_flags, NCHECK, "config.file")->value;
    return -1;
}

/* The flags of both `qrel dlq` commands; those after NDLQ_INSPECT are replay's only. */
static struct flag dlq_flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"source", FLAG_STRING, NULL, "The broker source of the dead_letters entry (required).", NULL,
     0},
    {"queue", FLAG_STRING, NULL, "The queue of that entry (required).", NULL, 0},
    {"format", FLAG_STRING, "text", "Output format: text or json (one object, see docs/dlq.md).",
     NULL, 0},
    {"limit", FLAG_STRING, NULL,
     "inspect: read at most N dead letters (default: the entry's max_entries); replay: move at "
     "most N.",
     NULL, 0},
    {"sample", FLAG_STRING, "10", "Ids shown per class and per reason for skipping.", NULL, 0},
    {"timeout", FLAG_STRING, NULL,
     "Time for the read and the classification, and for each move (default: the source's "
     "timeout).",
     NULL, 0},
    FLAGS_LOG("warn"),
    {"only", FLAG_STRING, "not_done",
     "replay: which dead letters to move: not_done, unknown, or all (done ones too, whose work "
     "a replay repeats).",
     NULL, 0},
    {"rate", FLAG_STRING, NULL, "replay: move at most N a second, e.g. 50/s (default: no limit).",
     NULL, 0},
    {"yes", FLAG_BOOL, NULL, "replay: really move them; without it a replay is a dry run.", NULL,
     0},
    {"include-poison", FLAG_BOOL, NULL,
     "replay: move poison messages too (replayed twice or more, dead again each time); skipped "
     "by default.",
     NULL, 0},
};
#define NDLQ (sizeof dlq_flags / sizeof dlq_flags[0])
#define NDLQ_INSPECT 9

static const char dlq_usage[] =
    "usage: qrel dlq inspect|replay --source=S --queue=Q [flags]\n\n"
    "Reads the dead letters of one queue of the file's dead_letters entries and\n"
    "classifies each against the entry's work table: done (replaying it would\n"
    "repeat the work), not_done, or unknown (no id, or the table cannot tell).\n"
    "inspect prints the counts, ages, delivery counts and sample ids; replay moves\n"
    "the chosen dead letters back to their queue, each put back before it is\n"
    "removed, and without --yes only says what it would move. Exit status 0 when\n"
    "all went well, 1 when the read or any move failed, 2 on a usage or\n"
    "configuration error.";
static const struct command dlq_cmd = {"dlq", dlq_flags, NDLQ, dlq_usage, 0, {"text", "json"}};

/* The most --limit and --sample take: a dead_letters entry's max_entries reads no more. */
#define DLQ_COUNT_MAX 1000000
/* --rate's range, messages a second: below the least, the pacing interval of one message would
 * be over a quarter of an hour; above the most, no broker answers that fast. */
#define DLQ_RATE_MIN 0.001
#define DLQ_RATE_MAX 1000000

/* A whole number from min to DLQ_COUNT_MAX of a flag, or -1 with the message printed. */
static int dlq_count_flag(const char *name, long long min, size_t *out)
{
    const char *v = flags_find(dlq_flags, NDLQ, name)->value;
    long long n;
    if (num_parse_int(v, min, DLQ_COUNT_MAX, &n)) {
        fprintf(stderr, "qrel dlq: --%s: want a whole number from %lld to %d, got \"%s\"\n", name,
                min, DLQ_COUNT_MAX, v ? v : "");
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* --rate: "50" or "50/s", the number within the range. 0 or -1. */
static int dlq_rate_flag(const char *v, double *out)
{
    size_t len = strlen(v);
    if (len >= 2 && strcmp(v + len - 2, "/s") == 0)
        len -= 2;
    char num[64];
    if (len >= sizeof num)
        return -1;
    memcpy(num, v, len);
    num[len] = '\0';
    return num_parse_decimal(num, DLQ_RATE_MIN, DLQ_RATE_MAX, out);
}

static int dlq_parse_args(int argc, char **argv, struct cli_args *a)
{
    struct err e;
    err_clear(&e);
    int npos, rc;
    memset(a, 0, sizeof *a);
    if ((rc = command_start(&dlq_cmd, argc, argv, 1, &npos, &a->other_format)) >= 0)
        return rc;
    if (npos != 1 || (strcmp(argv[2], "inspect") != 0 && strcmp(argv[2], "replay") != 0))
        return usage_error(&dlq_cmd, "want one command, inspect or replay (see qrel dlq --help)");
    a->replay = strcmp(argv[2], "replay") == 0;
    for (size_t i = NDLQ_INSPECT; i < NDLQ && !a->replay; i++)
        if (dlq_flags[i].given) {
            fprintf(stderr, "qrel dlq inspect: --%s is a flag of qrel dlq replay\n",
                    dlq_flags[i].name);
            return 2;
        }
    for (const char *const *k = (const char *const[]){"source", "queue", NULL}; *k; k++)
        if (!flags_find(dlq_flags, NDLQ, *k)->value || !*flags_find(dlq_flags, NDLQ, *k)->value)
            return usage_error(&dlq_cmd, "--%s is required", *k);
    if ((flags_find(dlq_flags, NDLQ, "limit")->given && dlq_count_flag("limit", 1, &a->limit)) ||
        dlq_count_flag("sample", 0, &a->sample))
        return 2;
    const char *timeout = flags_find(dlq_flags, NDLQ, "timeout")->value;
    if (timeout && num_parse_duration(timeout, NUM_TIMEOUT_MIN, NUM_TIMEOUT_MAX, &a->timeout)) {
        fprintf(stderr,
                "qrel dlq: --timeout: want a duration from 1ms to 1d like \"10s\", got \"%s\"\n",
                timeout);
        return 2;
    }
    if (dlq_parse_only(flags_find(dlq_flags, NDLQ, "only")->value, &a->o.only, &e)) {
        fprintf(stderr, "qrel dlq: %s\n", e.msg);
        return 2;
    }
    const char *rate = flags_find(dlq_flags, NDLQ, "rate")->value;
    if (rate && dlq_rate_flag(rate, &a->o.rate)) {
        fprintf(stderr,
                "qrel dlq: --rate: want messages a second from 0.001 to 1000000 like \"50/s\", got "
                "\"%s\"\n",
                rate);
        return 2;
    }
    a->o.limit = a->replay ? a->limit : 0;
    a->o.yes = flags_bool(flags_find(dlq_flags, NDLQ, "yes"));
    a->o.include_poison = flags_bool(flags_find(dlq_flags, NDLQ, "include-poison"));
    a->o.max_failures_in_a_row = 3;
    a->config_file = flags_find(dlq_flags, NDLQ, "config.file")->value;
    a->source = flags_find(dlq_flags, NDLQ, "source")->value;
    a->queue = flags_find(dlq_flags, NDLQ, "queue")->value;
    return -1; /* go on */
}

int cli_args_parse(enum cli_command cmd, int argc, char **argv, struct cli_args *a)
{
    memset(a, 0, sizeof *a);
    switch (cmd) {
    case CLI_SCRAPE:
        return scrape_parse_args(argc, argv, a);
    case CLI_CHECK:
        return check_parse_args(argc, argv, a);
    case CLI_DLQ:
        return dlq_parse_args(argc, argv, a);
    }
    return 2;
}
