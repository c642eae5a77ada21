/* cli.c: `qrel`, the command line. `qrel scrape` runs one collection of every configured source
 * and prints the exposition: for cron, node_exporter's textfile collector, and tests. `qrel check`
 * runs one collection and the reliability rules over it, and answers like a Nagios plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_report.h"
#include "config.h"

#include "expfmt.h"
#include "flags.h"
#include "log.h"
#include "scheduler.h"
#include "sources.h"
#include "util.h"
#include "version.h"

static struct flag scrape_flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"format", FLAG_STRING, "text", "Output format: text (0.0.4) or openmetrics.", NULL, 0},
    {"source", FLAG_STRING, NULL, "Collect only this source (by name).", NULL, 0},
    {"log.level", FLAG_STRING, "warn", "Only log messages at or above: debug, info, warn, error.",
     NULL, 0},
    {"log.format", FLAG_STRING, "logfmt", "Log format: logfmt or json.", NULL, 0},
};
#define NSCRAPE (sizeof scrape_flags / sizeof scrape_flags[0])

static struct flag check_flags[] = {
    {"config.file", FLAG_STRING, "qrel.yml", "Configuration file (YAML).", NULL, 0},
    {"format", FLAG_STRING, "text", "Output format: text (Nagios plugin style) or json.", NULL, 0},
    {"timeout", FLAG_STRING, NULL,
     "Finish within this duration (e.g. 10s); each source's own timeout still applies.", NULL, 0},
    {"log.level", FLAG_STRING, "error", "Only log messages at or above: debug, info, warn, error.",
     NULL, 0},
    {"log.format", FLAG_STRING, "logfmt", "Log format: logfmt or json.", NULL, 0},
};
#define NCHECK (sizeof check_flags / sizeof check_flags[0])

static const char usage[] =
    "usage: qrel <command> [flags]\n\n"
    "Commands:\n"
    "  scrape   Collect every configured source once and print the\n"
    "           metrics; exit 1 when any source failed.\n"
    "  check    Collect every source once and evaluate the reliability\n"
    "           rules; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n"
    "  metrics  List every metric family qrel can export: name, type, help.\n"
    "  version  Print the version.\n"
    "  help     Show this help.\n\n"
    "Run `qrel <command> --help` for a command's flags.";

static int cmd_scrape(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    int npos, help;
    if (flags_parse(scrape_flags, NSCRAPE, argc, argv, 2, &npos, &help, &e)) {
        fprintf(stderr, "qrel scrape: %s\n", e.msg);
        return 2;
    }
    if (help) {
        flags_usage(stdout, "usage: qrel scrape [flags]", scrape_flags, NSCRAPE);
        return 0;
    }
    if (npos > 0) {
        fprintf(stderr, "qrel scrape: unexpected argument \"%s\"\n", argv[2]);
        return 2;
    }
    enum log_level level;
    int json;
    if (log_parse_level(flags_find(scrape_flags, NSCRAPE, "log.level")->value, &level) ||
        log_parse_format(flags_find(scrape_flags, NSCRAPE, "log.format")->value, &json)) {
        fprintf(stderr, "qrel scrape: bad --log.level or --log.format\n");
        return 2;
    }
    log_setup(level, json);
    const char *format = flags_find(scrape_flags, NSCRAPE, "format")->value;
    enum expfmt_format fmt;
    if (strcmp(format, "text") == 0)
        fmt = EXPFMT_TEXT;
    else if (strcmp(format, "openmetrics") == 0)
        fmt = EXPFMT_OPENMETRICS;
    else {
        fprintf(stderr, "qrel scrape: --format: want text or openmetrics, got \"%s\"\n", format);
        return 2;
    }
    struct sources *src = sources_load(flags_find(scrape_flags, NSCRAPE, "config.file")->value, &e);
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
    struct scheduler_opts o = {.scrape_timeout = 0, .only = only, .max_age = 0};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    size_t n;
    struct metric_set *const *sets = scheduler_scrape_sets(sc, &n);
    /* Written in pieces: the exposition of many streams is never held whole in memory. */
    struct expfmt_writer *w = expfmt_writer_new(sets, n, fmt);
    char chunk[64 * 1024];
    size_t got;
    while ((got = expfmt_writer_read(w, chunk, sizeof chunk)) > 0)
        fwrite(chunk, 1, got, stdout);
    expfmt_writer_free(w);
    size_t failed = scheduler_scrape_failed(sc);
    for (size_t i = 0; i < scheduler_source_count(s); i++) {
        struct scheduler_status st;
        scheduler_status_at(s, i, &st);
        if (st.up == 0)
            fprintf(stderr, "qrel scrape: source \"%s\" (%s) failed: %s\n", st.name, st.kind,
                    st.last_error);
    }
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    pool_exit(pool);
    return failed ? 1 : 0;
}

/* Usage and configuration errors exit 3 (UNKNOWN), as a Nagios plugin must: a monitoring
 * system reads any other code as a state of the queues. */
static int cmd_check(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    int npos, help;
    if (flags_parse(check_flags, NCHECK, argc, argv, 2, &npos, &help, &e)) {
        printf("QREL UNKNOWN - %s\n", e.msg);
        return AUDIT_UNKNOWN;
    }
    if (help) {
        flags_usage(stdout, "usage: qrel check [flags]", check_flags, NCHECK);
        return 0;
    }
    if (npos > 0) {
        printf("QREL UNKNOWN - unexpected argument \"%s\"\n", argv[2]);
        return AUDIT_UNKNOWN;
    }
    enum log_level level;
    int json_log;
    if (log_parse_level(flags_find(check_flags, NCHECK, "log.level")->value, &level) ||
        log_parse_format(flags_find(check_flags, NCHECK, "log.format")->value, &json_log)) {
        printf("QREL UNKNOWN - bad --log.level or --log.format\n");
        return AUDIT_UNKNOWN;
    }
    log_setup(level, json_log);
    const char *format = flags_find(check_flags, NCHECK, "format")->value;
    int json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "text") != 0) {
        printf("QREL UNKNOWN - --format: want text or json, got \"%s\"\n", format);
        return AUDIT_UNKNOWN;
    }
    const char *timeout = flags_find(check_flags, NCHECK, "timeout")->value;
    double limit = 0;
    if (timeout && (cfg_parse_duration(timeout, &limit) || !(limit > 0))) {
        printf("QREL UNKNOWN - --timeout: want a duration above 0 like \"10s\", got \"%s\"\n",
               timeout);
        return AUDIT_UNKNOWN;
    }
    struct sources *src = sources_load(flags_find(check_flags, NCHECK, "config.file")->value, &e);
    if (!src) {
        printf("QREL UNKNOWN - %s\n", e.msg);
        return AUDIT_UNKNOWN;
    }
    /* One run of every source: the exporter's default pool bounds its threads the same way. */
    struct pool *pool = pool_new(POOL_DEFAULT_THREADS, &e);
    struct scheduler *s = scheduler_new(src, pool);
    /* --timeout works as Prometheus' scrape timeout does: the run ends before it. */
    struct scheduler_opts o = {.scrape_timeout = limit, .only = NULL, .max_age = 0};
    struct scheduler_scrape *sc = scheduler_scrape(s, &o);
    size_t n;
    struct metric_set *const *sets = scheduler_scrape_sets(sc, &n);
    struct audit_report *r = audit_run(sets, n, &scheduler_sources(s)->audit);

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
    int rc = (int)r->status;
    buf_free(&out);
    free(errors);
    free(st);
    audit_report_free(r);
    scheduler_scrape_free(sc);
    scheduler_unref(s);
    pool_exit(pool);
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
