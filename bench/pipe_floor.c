/* pipe_floor.c: the floor for the Redis benchmarks: sends a file of RESP commands as one pipeline
 * over an open connection and reads every reply back with hiredis's reader, RUNS times, and
 * prints the fastest and the median run in seconds. Nothing is done with the replies but
 * counting them, so this is what the same commands cost the server and the loopback at the least;
 * `redis-cli --pipe` costs more (its start, and the ECHO it uses to find the last reply).
 * With RUNS 0 it makes one run for each line read on stdin and prints that run's seconds, until
 * stdin ends: a benchmark then takes turns between it and qrel on the same open connection and
 * warm heap, as a running exporter keeps its own.
 *
 *   pipe_floor PORT FILE RUNS      (127.0.0.1; FILE as redis-cli --pipe takes it) */
#include <arpa/inet.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

/* Top-level commands in a RESP file: its lines that start with '*' at the top level are what
 * matter, and the benchmark writes one array per command, so counting the arrays whose
 * elements are all bulk strings is enough: each "*N" is followed by N "$len" lines. */
static size_t count_commands(const char *p, size_t n)
{
    size_t count = 0, i = 0;
    while (i < n) {
        if (p[i] != '*')
            return count;
        long argc = strtol(p + i + 1, NULL, 10);
        const char *nl = memchr(p + i, '\n', n - i);
        if (!nl)
            return count;
        i = (size_t)(nl - p) + 1;
        for (long a = 0; a < argc && i < n; a++) {
            long len = strtol(p + i + 1, NULL, 10);
            nl = memchr(p + i, '\n', n - i);
            if (!nl)
                return count;
            i = (size_t)(nl - p) + 1 + (size_t)len + 2;
        }
        count++;
    }
    return count;
}

/* One run: the whole file written, every reply read back; its seconds, or -1 when the
 * connection failed (the reason printed). */
static double one_run(int fd, const char *cmds, long size, size_t want)
{
    static char buf[1 << 16];
    redisReader *rd = redisReaderCreate();
    double t0 = floor_now();
    for (long off = 0; off < size;) {
        ssize_t w = write(fd, cmds + off, (size_t)(size - off));
        if (w <= 0)
            return perror("write"), -1;
        off += w;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            return perror("read"), -1;
        redisReaderFeed(rd, buf, (size_t)n);
        void *reply;
        while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
            freeReplyObject(reply);
            got++;
        }
    }
    double t = floor_now() - t0;
    redisReaderFree(rd);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: pipe_floor PORT FILE RUNS   (RUNS 0: a run per line of stdin)\n");
        return 2;
    }
    size_t nbytes;
    char *cmds = floor_read_file(argv[2], &nbytes);
    if (!cmds)
        return 1;
    long size = (long)nbytes;
    size_t want = count_commands(cmds, (size_t)size);
    int runs = (int)strtol(argv[3], NULL, 10);
    int interactive = runs == 0;
    if (runs < 1)
        runs = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)strtol(argv[1], NULL, 10))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        return perror("connect"), 1;
    if (interactive) {
        char line[64];
        while (fgets(line, sizeof line, stdin)) {
            double t = one_run(fd, cmds, size, want);
            if (t < 0)
                return 1;
            printf("%.6f\n", t);
            fflush(stdout);
        }
        free(cmds);
        close(fd);
        return 0;
    }
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = 0; r < runs; r++)
        if ((t[r] = one_run(fd, cmds, size, want)) < 0)
            return 1;
    floor_median(t, runs);
    printf("%.6f %.6f %zu\n", t[0], t[runs / 2], want);
    free(t);
    free(cmds);
    close(fd);
    return 0;
}
