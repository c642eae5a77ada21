/* floor.h: what the floor programs of the benchmarks (pipe_floor.c, beanstalk_floor.c,
 * kafka_floor.c) share: a monotonic clock, the sort of their run times and the reading of the
 * recorded commands. Header-only, so that each benchmark script
 * builds its floor with one cc line. */
#ifndef QREL_BENCH_FLOOR_H
#define QREL_BENCH_FLOOR_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double floor_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int floor_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts the n run times (n > 0) and returns their median; t[0] is then the fastest. */
static inline double floor_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, floor_cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The whole of the file path (the commands one scrape sent, recorded), NUL-terminated, its size
 * in *size; NULL with the reason printed when it cannot be read. */
static inline char *floor_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return perror(path), NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[n] = 0;
    *size = (size_t)n;
    return buf;
}

#endif
