/* cli.c: `qrel`, the command line. `qrel scrape` runs one collection of every configured source
 * and prints the exposition, the same as the exporter's /metrics (scrape.h assembles both): for
 * cron, node_exporter's textfile collector, and tests. `qrel check` runs one collection and the
 * reliability rules over it, and answers like a Nagios plugin. `qrel dlq` inspects one queue's
 * dead letters against its work table and replays the ones whose work was not done (the engine
 * is dlq.c, the output dlq_report.c). The flags of every command are parsed and judged in args.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "args.h"
#include "audit_report.h"
#include "config.h"
#include "dlq.h"
#include "dlq_report.h"
#include "dlq_run.h"

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

static int cmd_scrape(int argc, char **argv)
{
    struct err e;
    err_clear(&e);
    struct cli_args a;
    int rc = cli_args_parse(CLI_SCRAPE, argc, argv, &a);
    if (rc >= 0)
        return rc;
    enum expfmt_format fmt = a.other_format ? EXPFMT_OPENMETRICS : EXPFMT_TEXT;
    struct sources *src = sources_load(a.config_file, &e);
    double loaded = deadline_wall_now();
    if (!src) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    const char *only = a.source;
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
    struct cli_args a;
    int rc = cli_args_parse(CLI_CHECK, argc, argv, &a);
    if (rc >= 0)
        return rc;
    int json = a.other_format;
    double limit = a.timeout;
    struct err e;
    err_clear(&e);
    struct sources *src = sources_load(a.config_file, &e);
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

static volatile sig_atomic_t dlq_stop;

static void dlq_on_signal(int sig)
{
    (void)sig;
    dlq_stop = 1;
}

static int cmd_dlq(int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_args_parse(CLI_DLQ, argc, argv, &a);
    if (rc >= 0)
        return rc;
    a.o.stop = &dlq_stop;
    struct err e;
    err_clear(&e);
    struct sources *src = sources_load(a.config_file, &e);
    if (!src) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    struct dead_letter_join *j;
    const char *source = a.source;
    if (dlq_find(src, source, a.queue, &j, &e)) {
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
    /* inspect --limit is bounded by max_entries, which bounds what one run reads. */
    size_t max = !a.replay && a.limit && a.limit < j->max_entries ? a.limit : j->max_entries;
    if (!a.replay && a.limit > max)
        fprintf(stderr, "qrel dlq: --limit=%zu is above the entry's max_entries: reading %zu\n",
                a.limit, max);
    struct dlq_run_opts ro = {.replay = a.replay,
                              .max = max,
                              .limit = a.limit,
                              .page = DLQ_PAGE,
                              .timeout = timeout,
                              .o = &a.o};
    struct dlq_report_ctx x = {.source = j->broker->name,
                               .kind = j->broker->kind->name,
                               .queue = j->queue,
                               .work_source = j->work->name,
                               .sample = a.sample,
                               .now = deadline_wall_now(),
                               .json = a.other_format,
                               .stream = stdout};
    struct buf out;
    buf_init(&out);
    rc = dlq_run(j, &ro, &x, &out);
    fwrite(out.data ? out.data : "", 1, out.len, stdout);
    buf_free(&out);
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
