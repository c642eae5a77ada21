/* cli.c: `qrel`, the command line. `qrel scrape` runs one collection of every configured source
 * and prints the exposition: for cron, node_exporter's textfile collector, and tests. */
#include <stdio.h>
#include <string.h>

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

static const char usage[] =
    "usage: qrel <command> [flags]\n\n"
    "Commands:\n"
    "  scrape   Collect every configured source once and print the\n"
    "           metrics; exit 1 when any source failed.\n"
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
    struct scheduler *s = scheduler_new(src);
    struct scheduler_opts o = {0, only};
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
    return failed ? 1 : 0;
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
    if (strcmp(argv[1], "metrics") == 0) {
        /* The catalogue is the public API; docs and (later) dashboards are checked against it. */
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
