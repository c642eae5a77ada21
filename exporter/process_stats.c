/* process_stats.c: see process_stats.h. The definitions follow the Prometheus client libraries
 * (client_golang's process collector): CPU is user plus system time, the start time is the boot
 * time plus the start ticks, open descriptors are the entries of /proc/self/fd. */
#include "process_stats.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "text.h"

/* /proc/stat holds a line per CPU; a large machine's is tens of KiB. */
#define PROC_TEXT_MAX (1024 * 1024)

/* Reads one unsigned decimal field at *p, skipping the spaces before it. */
static int field_ull(const char **p, unsigned long long *out)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
        return -1;
    *p = end;
    return 0;
}

/* Skips one field of any content (the state letter, signed numbers we do not use). */
static int field_skip(const char **p)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s || *s == '\n')
        return -1;
    while (*s && *s != ' ' && *s != '\n')
        s++;
    *p = s;
    return 0;
}

int process_stat_parse(const char *text, struct process_stat *out)
{
    const char *p = text ? strrchr(text, ')') : NULL;
    if (!p)
        return -1;
    p++;
    memset(out, 0, sizeof *out);
    /* Field 3 (state) is the first after the ')'; walk to field 24. */
    for (int f = 3; f <= 24; f++) {
        unsigned long long v = 0;
        int rc;
        switch (f) {
        case 14:
            rc = field_ull(&p, &out->utime);
            break;
        case 15:
            rc = field_ull(&p, &out->stime);
            break;
        case 22:
            rc = field_ull(&p, &out->starttime);
            break;
        case 23:
            rc = field_ull(&p, &out->vsize);
            break;
        case 24: /* signed in the kernel's format, never negative in practice */
            rc = field_ull(&p, &v);
            out->rss = (long long)v;
            break;
        default:
            rc = field_skip(&p);
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

int process_boot_time_parse(const char *text, unsigned long long *btime)
{
    for (const char *line = text; line && *line;) {
        if (strncmp(line, "btime ", 6) == 0) {
            const char *p = line + 6;
            return field_ull(&p, btime);
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

/* Entries of /proc/self/fd, the directory's own descriptor included (as client libraries count). */
static int count_fds(double *out)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    *out = (double)n;
    return 0;
}

void process_stats_read(struct process_stats *out)
{
    memset(out, 0, sizeof *out);
    long ticks = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    struct process_stat st;
    char *stat = text_read_file("/proc/self/stat", PROC_TEXT_MAX, NULL);
    if (stat && ticks > 0 && page > 0 && process_stat_parse(stat, &st) == 0) {
        out->have_stat = 1;
        out->cpu_seconds = (double)(st.utime + st.stime) / (double)ticks;
        out->resident_bytes = (double)st.rss * (double)page;
        out->virtual_bytes = (double)st.vsize;
        unsigned long long btime;
        char *ps = text_read_file("/proc/stat", PROC_TEXT_MAX, NULL);
        if (ps && process_boot_time_parse(ps, &btime) == 0) {
            out->have_start = 1;
            out->start_time = (double)btime + (double)st.starttime / (double)ticks;
        }
        free(ps);
    }
    free(stat);
    out->have_fds = count_fds(&out->open_fds) == 0;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        out->have_max_fds = 1;
        out->max_fds = (double)rl.rlim_cur;
    }
}
