/* process_stats.h: the exporter's own process figures, read from Linux's /proc and getrlimit, for
 * the process_* families every Prometheus client library serves (scrape.c adds them to /metrics).
 *
 * The parsers are pure (recorded /proc text in, numbers out) so a unit test pins them; the
 * reader feeds them the live files. Each figure has its own "known" bit: a /proc that cannot be
 * read (another OS, a sandbox) leaves its series out instead of serving a made-up 0. */
#ifndef QREL_PROCESS_STATS_H
#define QREL_PROCESS_STATS_H

#include <stddef.h>

/* The fields of /proc/PID/stat we use, in the kernel's units (proc(5)). */
struct process_stat {
    unsigned long long utime, stime; /* clock ticks in user and kernel mode (fields 14, 15) */
    unsigned long long starttime;    /* clock ticks after boot when the process started (22) */
    unsigned long long vsize;        /* virtual memory in bytes (23) */
    long long rss;                   /* resident pages (24) */
};

/* Parses the text of /proc/PID/stat. The command name (field 2) is in parentheses and may hold
 * spaces and ')' itself, so the fields are counted from the last ')'. 0, or -1 when the text is
 * not such a line. */
int process_stat_parse(const char *text, struct process_stat *out);
/* The boot time (the "btime" line of /proc/stat), in seconds since the epoch. 0, or -1 when
 * there is no such line. */
int process_boot_time_parse(const char *text, unsigned long long *btime);

/* The figures in the units of the families: seconds and bytes. */
struct process_stats {
    int have_stat; /* cpu_seconds, resident_bytes, virtual_bytes */
    double cpu_seconds;
    double resident_bytes;
    double virtual_bytes;
    int have_start;    /* start_time */
    double start_time; /* seconds since the epoch */
    int have_fds;      /* open_fds */
    double open_fds;
    int have_max_fds; /* max_fds */
    double max_fds;   /* the soft RLIMIT_NOFILE; not served when unlimited */
};

/* Reads the calling process's figures now. Never fails as a whole: see the have_ bits. */
void process_stats_read(struct process_stats *out);

#endif
