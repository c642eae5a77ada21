/* cli.c: `qrel`, the command line. `qrel scrape` runs one collection of every configured source
 * and prints the exposition, the same as the exporter's /metrics (scrape.h assembles both): for
 * cron, node_exporter's textfile collector, and tests. `qrel check` runs one collection and the
 * reliability rules over it, and answers like a Nagios plugin. `qrel dlq` inspects one queue's
 * dead letters against its work table and replays the ones whose work was not done (the engine
 * is dlq.c, the output dlq_report.c). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_report.h"
#include "config.h"
#include "dlq.h"
#include "dlq_report.h"

#include "expfmt.h"
#include "flags.h"
#include "log.h"
#include "scheduler.h"
#include "scrape.h"
#include "sources.h"
#include "alloc.h"
#include "buf.h"
#include "deadline.h"
#include "version.h"

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

static const char usage[] =
    "usage: qrel <command> [flags]\n\n"
    "Commands:\n"
    "  scrape   Collect every configured source once and print the\n"
    "           metrics; exit 1 when any source failed.\n"
    "  check    Collect every source once and evaluate the reliability\n"
    "           rules; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n"
    "  dlq      Inspect one queue's dead letters against its work table,\n"
    "           or replay those whose work was not done (inspect|replay).\n"
    "  metrics  List every metric family qrel can export: name, type, help.\n"
    "  version  Print the version.\n"
    "  help     Show this help.\n\n"
    "Run `qrel <command> --help` for a command's flags.";

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

static int cmd_scrape(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    int npos, om, rc = command_start(&scrape_cmd, argc, argv, 0, &npos, &om);
    if (rc >= 0)
        return rc;
    enum expfmt_format fmt = om ? EXPFMT_OPENMETRICS : EXPFMT_TEXT;
    struct sources *src = sources_load(flags_find(scrape_flags, NSCRAPE, "config.file")->value, &e);
    double loaded = deadline_wall_now();
    if (!src) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    const char *only = flags_find(scrape_flags, NSCRAPE, "source")->value;
    if (only && !sources_find(src, only)) {
        fprintf(stderr, "qrel scrape: no source named \"%s\" in the configuration\n", only);
        sources_free(src);
        return 2;
    }
    /* One run of every source: the exporter's default pool bounds its threads the same way. */
    struct pool *pool = pool_new(POOL_DEFAULT_THREADS, &e);
    struct scheduler *s = scheduler_new(src, pool);
    /* What /metrics serves for this file (/probe's with --source): the file was loaded once,
     * just now, which is what the exporter's reload series say after its first load. */
    struct scrape_self self = {.config_ok = 1, .config_loaded = loaded};
    struct scrape_opts o = {.only = only, .self = &self};
    struct scrape *x = scrape_run(s, &o);
    size_t n;
    struct metric_set *const *sets = scrape_sets(x, &n);
    /* Written in pieces: the exposition of many streams is never held whole in memory. */
    struct expfmt_writer *w = expfmt_writer_new(sets, n, fmt);
    char chunk[64 * 1024];
    size_t got;
    while ((got = expfmt_writer_read(w, chunk, sizeof chunk)) > 0)
        fwrite(chunk, 1, got, stdout);
    expfmt_writer_free(w);
    size_t failed = scrape_failed(x);
    for (size_t i = 0; i < scheduler_source_count(s); i++) {
        struct scheduler_status st;
        scheduler_status_at(s, i, &st);
        if (st.up == 0)
            fprintf(stderr, "qrel scrape: source \"%s\" (%s) failed: %s\n", st.name, st.kind,
                    st.last_error);
    }
    scrape_free(x);
    scheduler_unref(s);
    pool_exit(pool);
    return failed ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
    int npos, json, rc = command_start(&check_cmd, argc, argv, 0, &npos, &json);
    if (rc >= 0)
        return rc;
    const char *timeout = flags_find(check_flags, NCHECK, "timeout")->value;
    double limit = 0;
    if (timeout && (cfg_parse_duration(timeout, &limit) || !(limit > 0))) {
        printf("QREL UNKNOWN - --timeout: want a duration above 0 like \"10s\", got \"%s\"\n",
               timeout);
        return AUDIT_UNKNOWN;
    }
    struct err e;
    err_clear(&e);
    struct sources *src = sources_load(flags_find(check_flags, NCHECK, "config.file")->value, &e);
    if (!src) {
        printf("QREL UNKNOWN - %s\n", e.msg);
        return AUDIT_UNKNOWN;
    }
    /* One run of every source: the exporter's default pool bounds its threads the same way. */
    struct pool *pool = pool_new(POOL_DEFAULT_THREADS, &e);
    struct scheduler *s = scheduler_new(src, pool);
    /* --timeout works as Prometheus' scrape timeout does: the run ends before it. The report is
     * over what /metrics would serve (the dead-letter joins included), so its findings are the
     * qrel_audit_failed series. */
    struct scrape_opts o = {.scrape_timeout = limit, .report = 1};
    struct scrape *x = scrape_run(s, &o);
    const struct audit_report *r = scrape_report(x);

    /* Why each unreadable source failed, in the report's source order. */
    const char **errors = xcalloc(r->nsources ? r->nsources : 1, sizeof *errors);
    struct scheduler_status *st = xcalloc(scheduler_source_count(s) + 1, sizeof *st);
    for (size_t i = 0; i < scheduler_source_count(s); i++)
        scheduler_status_at(s, i, &st[i]);
    for (size_t k = 0; k < r->nsources; k++)
        for (size_t i = 0; i < scheduler_source_count(s); i++)
            if (strcmp(st[i].name, r->sources[k].name) == 0)
                errors[k] = st[i].last_error;

    struct buf out;
    buf_init(&out);
    if (json)
        audit_write_json(&out, r, errors);
    else
        audit_write_text(&out, r, errors);
    fwrite(out.data, 1, out.len, stdout);
    rc = (int)r->status;
    buf_free(&out);
    free(errors);
    free(st);
    scrape_free(x);
    scheduler_unref(s);
    pool_exit(pool);
    return rc;
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

static volatile sig_atomic_t dlq_stop;

static void dlq_on_signal(int sig)
{
    (void)sig;
    dlq_stop = 1;
}

/* A whole number >= min of a flag, or -1 with the message printed. */
static int dlq_count_flag(const char *name, size_t min, size_t *out)
{
    const char *v = flags_find(dlq_flags, NDLQ, name)->value;
    char *end;
    errno = 0;
    unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (!v || *v < '0' || *v > '9' || *end || errno || n < min) {
        fprintf(stderr, "qrel dlq: --%s: want a whole number >= %zu, got \"%s\"\n", name, min,
                v ? v : "");
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* Everything a dlq command needs before it talks to a broker; 2 on a usage error (printed). */
struct dlq_args {
    int replay, json;
    size_t limit, sample;
    double timeout; /* 0: the source's */
    struct dlq_replay_opts o;
};

static int dlq_parse_args(int argc, char **argv, struct dlq_args *a)
{
    struct err e;
    err_clear(&e);
    int npos, rc;
    memset(a, 0, sizeof *a);
    if ((rc = command_start(&dlq_cmd, argc, argv, 1, &npos, &a->json)) >= 0)
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
    if (timeout && (cfg_parse_duration(timeout, &a->timeout) || !(a->timeout > 0))) {
        fprintf(stderr, "qrel dlq: --timeout: want a duration above 0 like \"10s\", got \"%s\"\n",
                timeout);
        return 2;
    }
    if (dlq_parse_only(flags_find(dlq_flags, NDLQ, "only")->value, &a->o.only, &e)) {
        fprintf(stderr, "qrel dlq: %s\n", e.msg);
        return 2;
    }
    const char *rate = flags_find(dlq_flags, NDLQ, "rate")->value;
    if (rate) {
        char *end;
        a->o.rate = strtod(rate, &end);
        if (end == rate || (*end && strcmp(end, "/s") != 0) || !(a->o.rate > 0) ||
            a->o.rate > 1e6) {
            fprintf(stderr, "qrel dlq: --rate: want messages a second like \"50/s\", got \"%s\"\n",
                    rate);
            return 2;
        }
    }
    a->o.limit = a->replay ? a->limit : 0;
    a->o.yes = flags_bool(flags_find(dlq_flags, NDLQ, "yes"));
    a->o.max_failures_in_a_row = 3;
    a->o.stop = &dlq_stop;
    return -1; /* go on */
}

static int cmd_dlq(int argc, char **argv)
{
    struct dlq_args a;
    int rc = dlq_parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct err e;
    err_clear(&e);
    struct sources *src = sources_load(flags_find(dlq_flags, NDLQ, "config.file")->value, &e);
    if (!src) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    struct dead_letter_join *j;
    const char *source = flags_find(dlq_flags, NDLQ, "source")->value;
    if (dlq_find(src, source, flags_find(dlq_flags, NDLQ, "queue")->value, &j, &e)) {
        fprintf(stderr, "qrel dlq: %s\n", e.msg);
        sources_free(src);
        return 2;
    }
    if (a.replay && j->broker->kind->dlq->cannot_replay) {
        char *k = dlq_kinds_that_can(1);
        fprintf(stderr,
                "qrel dlq replay: source \"%s\" is a %s source, which cannot be "
                "replayed: %s (kinds that can: %s)\n",
                source, j->broker->kind->name, j->broker->kind->dlq->cannot_replay, k);
        free(k);
        sources_free(src);
        return 2;
    }
    /* SIGINT and SIGTERM stop a replay before its next message, and everything read is still
     * released: without SA_RESTART, so that a pacing sleep ends at once. */
    struct sigaction sa = {.sa_handler = dlq_on_signal};
    sigemptyset(&sa.sa_mask);
    for (const int *sig = (const int[]){SIGINT, SIGTERM, 0}; *sig; sig++)
        sigaction(*sig, &sa, NULL);

    double timeout = a.timeout > 0 ? a.timeout : j->broker->timeout;
    struct deadline dl = deadline_in(timeout);
    /* inspect --limit is bounded by max_entries, which bounds what one read holds. */
    size_t max = !a.replay && a.limit && a.limit < j->max_entries ? a.limit : j->max_entries;
    if (!a.replay && a.limit > max)
        fprintf(stderr, "qrel dlq: --limit=%zu is above the entry's max_entries: reading %zu\n",
                a.limit, max);
    struct dlq_read r;
    rc = dlq_read(j, max, a.replay ? DLQ_REPLAY : DLQ_INSPECT, &dl, timeout, &r, &e);
    if (rc && e.code == ERR_LIMIT && a.replay && a.limit && a.limit < max) {
        /* max_entries of dead letters are more than one reply may hold (max_response_bytes):
         * a replay that moves at most --limit reads that many instead. */
        fprintf(stderr, "qrel dlq: %s; reading --limit=%zu instead\n", e.msg, a.limit);
        err_clear(&e);
        dl = deadline_in(timeout);
        rc = dlq_read(j, a.limit, DLQ_REPLAY, &dl, timeout, &r, &e);
    }
    if (rc) {
        fprintf(stderr, "qrel dlq: queue \"%s\": %s\n", j->queue, e.msg);
        sources_free(src);
        return 1;
    }
    struct dlq_report_ctx x = {.source = j->broker->name,
                               .kind = j->broker->kind->name,
                               .queue = j->queue,
                               .work_source = j->work->name,
                               .sample = a.sample,
                               .now = deadline_wall_now(),
                               .json = a.json};
    struct buf out;
    buf_init(&out);
    rc = 0;
    if (!a.replay) {
        dlq_report_inspect(&out, &x, &r);
    } else {
        struct dlq_replay_result res;
        if (dlq_replay(&r, &a.o, &res, &e)) {
            fprintf(stderr, "qrel dlq: %s\n", e.msg);
            rc = e.code == ERR_CONFIG ? 2 : 1; /* else refused by what the broker said */
        } else {
            dlq_report_replay(&out, &x, &r, &a.o, &res);
            rc = res.n[DLQ_FATE_FAILED] || res.n[DLQ_FATE_NOT_REACHED] || res.n[DLQ_FATE_UNCERTAIN]
                     ? 1
                     : 0;
        }
    }
    if (dlq_release(&r, &e)) {
        fprintf(stderr, "qrel dlq: releasing what was read failed: %s\n", e.msg);
        rc = rc ? rc : 1;
    }
    fwrite(out.data ? out.data : "", 1, out.len, stdout);
    buf_free(&out);
    dlq_read_free(&r);
    sources_free(src);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        puts(usage);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("qrel %s (revision %s)\n", QREL_VERSION, QREL_REVISION);
        return 0;
    }
    if (strcmp(argv[1], "scrape") == 0)
        return cmd_scrape(argc, argv);
    if (strcmp(argv[1], "check") == 0)
        return cmd_check(argc, argv);
    if (strcmp(argv[1], "dlq") == 0)
        return cmd_dlq(argc, argv);
    if (strcmp(argv[1], "metrics") == 0) {
        /* The catalogue is the public API; docs and dashboards are checked against it. */
        for (size_t i = 0; i < metric_catalog_count(); i++) {
            const struct metric_family *f = metric_catalog_at(i);
            printf("%s\t%s\t%s\n", f->name,
                   f->type == METRIC_COUNTER   ? "counter"
                   : f->type == METRIC_SUMMARY ? "summary"
                                               : "gauge",
                   f->help);
        }
        return 0;
    }
    fprintf(stderr, "qrel: unknown command \"%s\" (see qrel help)\n", argv[1]);
    return 2;
}
