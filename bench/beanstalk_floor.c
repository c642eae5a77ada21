/* beanstalk_floor.c: the floor for bench/beanstalkd.sh: sends a file of beanstalkd commands (one
 * a line, as qrel sent them in one scrape) as one pipeline over an open connection, reads every
 * reply back, RUNS times, and prints the fastest and the median run in seconds and the replies a
 * run read. A reply is its status line, and for the ones that carry data (OK, FOUND, RESERVED:
 * the byte count is the line's last word) that many bytes and a CRLF, which are skipped unread:
 * this is what the same commands cost the server and the loopback at the least. qrel sends them
 * in three round trips (the ids of its third come from the second's replies); this sends all
 * of them in one.
 *
 *   beanstalk_floor PORT FILE RUNS      (127.0.0.1) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

/* The replies' parse state, kept across reads: the bytes of data still to skip, and the status
 * line read so far. */
struct replies {
    size_t count;
    size_t skip;
    char line[512];
    size_t len;
};

/* A status line is complete: counts it, and when it announces data, skips the data and its CRLF. */
static void on_line(struct replies *r)
{
    r->line[r->len] = '\0';
    r->count++;
    if (!strncmp(r->line, "OK ", 3) || !strncmp(r->line, "FOUND ", 6) ||
        !strncmp(r->line, "RESERVED ", 9)) {
        const char *last = strrchr(r->line, ' ');
        r->skip = (size_t)strtoull(last + 1, NULL, 10) + 2;
    }
    r->len = 0;
}

static void feed(struct replies *r, const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (r->skip) {
            size_t k = n - i < r->skip ? n - i : r->skip;
            r->skip -= k;
            i += k;
            continue;
        }
        char c = p[i++];
        if (c == '\n') {
            if (r->len && r->line[r->len - 1] == '\r')
                r->len--;
            on_line(r);
        } else if (r->len < sizeof r->line - 1) {
            r->line[r->len++] = c;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: beanstalk_floor PORT FILE RUNS\n");
        return 2;
    }
    size_t nbytes;
    char *cmds = floor_read_file(argv[2], &nbytes);
    if (!cmds)
        return 1;
    long size = (long)nbytes;
    size_t want = 0;
    for (long i = 0; i < size; i++)
        want += cmds[i] == '\n';
    int runs = (int)strtol(argv[3], NULL, 10);
    if (runs < 1)
        runs = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)strtol(argv[1], NULL, 10))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        return perror("connect"), 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    /* The last piece of a write goes out at once, not when the previous one is acknowledged. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double *t = calloc((size_t)runs, sizeof *t);
    char buf[1 << 16];
    for (int r = 0; r < runs; r++) {
        struct replies rp = {0};
        double t0 = floor_now();
        /* Written and read at once: beanstalkd answers a connection's commands one at a time
         * and reads the next only once the reply is sent, so a writer that read nothing until
         * it had written everything would stall once the loopback's buffers fill. */
        long off = 0;
        while (rp.count < want || rp.skip) {
            struct pollfd pfd = {fd, (short)(POLLIN | (off < size ? POLLOUT : 0)), 0};
            if (poll(&pfd, 1, -1) < 0)
                return perror("poll"), 1;
            if (off < size && (pfd.revents & POLLOUT)) {
                ssize_t w = write(fd, cmds + off, (size_t)(size - off));
                if (w < 0 && errno != EAGAIN)
                    return perror("write"), 1;
                off += w > 0 ? w : 0;
            }
            if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n == 0 || (n < 0 && errno != EAGAIN))
                    return fprintf(stderr, "read: the connection ended\n"), 1;
                if (n > 0)
                    feed(&rp, buf, (size_t)n);
            }
        }
        t[r] = floor_now() - t0;
    }
    floor_median(t, runs);
    printf("%.6f %.6f %zu\n", t[0], t[runs / 2], want);
    free(t);
    free(cmds);
    close(fd);
    return 0;
}
