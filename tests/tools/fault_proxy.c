/* fault_proxy.c: a TCP proxy for the integration tests that cuts what the server writes into
 * small pieces (issue 29: every reader survives any split of any reply).
 *
 *   fault_proxy --target HOST:PORT --port-file FILE [--listen PORT] [--chunk N] [--delay-us U]
 *               [--stats-file FILE]
 *
 * It listens on 127.0.0.1 (PORT, or one the kernel picks, written to FILE once it listens) and
 * forwards every connection to HOST:PORT. What the client sends goes through whole; what the
 * server sends is written back in pieces of 1 and 7 bytes in turn (or N bytes each with --chunk)
 * with U microseconds (default 200) between two pieces of a connection, on a socket with
 * TCP_NODELAY, so that a reader on loopback really sees a status line cut from its body, a
 * length cut in two, a CRLF cut between CR and LF. One process, one poll loop, any number of
 * connections at once. The stats file (rewritten whole after each piece written, at most every
 * 50 ms, and at exit) says how many connections and pieces there were and the largest piece:
 * the tests read it to prove their traffic was cut. SIGTERM ends it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* What the proxy holds of one direction before it stops reading that side. */
#define HOLD_MAX (256 * 1024)
#define MAX_CONNS 256

struct pending {
    char *data;
    size_t off, len, cap;
};

struct conn {
    int cfd, sfd;       /* the client's socket, the server's */
    struct pending c2s; /* from the client, not yet written to the server */
    struct pending s2c; /* from the server, not yet written to the client */
    int64_t next_us;    /* when the next piece to the client may go */
    unsigned pieces;    /* pieces written on this connection: picks 1 or 7 */
    int server_eof;     /* the server closed: close once s2c is written */
};

static struct {
    unsigned long long conns, pieces, bytes;
    size_t largest;
} stats;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what)
{
    fprintf(stderr, "fault_proxy: %s: %s\n", what, strerror(errno));
    exit(2);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void set_nonblock_nodelay(int fd)
{
    int one = 1;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl");
    /* Without it the kernel may merge two small pieces into one segment. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void pending_add(struct pending *p, const char *data, size_t n)
{
    if (p->off > 0 && p->off == p->len)
        p->off = p->len = 0;
    if (p->len + n > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + n)
            cap *= 2;
        p->data = realloc(p->data, cap);
        if (!p->data)
            die("realloc");
        p->cap = cap;
    }
    memcpy(p->data + p->len, data, n);
    p->len += n;
}

static size_t pending_left(const struct pending *p)
{
    return p->len - p->off;
}

static void write_stats(const char *path)
{
    if (!path)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "connections %llu\npieces %llu\nbytes %llu\nlargest %zu\n", stats.conns,
            stats.pieces, stats.bytes, stats.largest);
    if (fclose(f) == 0)
        rename(tmp, path);
}

static int connect_target(const char *host, const char *port)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        /* A blocking connect: the target is on loopback, it answers or refuses at once. */
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static void conn_close(struct conn *c)
{
    close(c->cfd);
    close(c->sfd);
    free(c->c2s.data);
    free(c->s2c.data);
    memset(c, 0, sizeof *c);
    c->cfd = c->sfd = -1;
}

/* Reads what fd has into p; 0 on EOF or error, 1 otherwise. */
static int pull(int fd, struct pending *p)
{
    char buf[16384];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
        pending_add(p, buf, (size_t)n);
        return 1;
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Writes p to fd, at most max bytes; -1 on error, else the bytes written. */
static ssize_t push(int fd, struct pending *p, size_t max)
{
    size_t n = pending_left(p) < max ? pending_left(p) : max;
    ssize_t w = send(fd, p->data + p->off, n, MSG_NOSIGNAL);
    if (w < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    p->off += (size_t)w;
    return w;
}

int main(int argc, char **argv)
{
    const char *target = NULL, *port_file = NULL, *stats_file = NULL;
    long listen_port = 0, chunk = 0, delay_us = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--target"))
            target = argv[i + 1];
        else if (!strcmp(argv[i], "--port-file"))
            port_file = argv[i + 1];
        else if (!strcmp(argv[i], "--stats-file"))
            stats_file = argv[i + 1];
        else if (!strcmp(argv[i], "--listen"))
            listen_port = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--chunk"))
            chunk = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--delay-us"))
            delay_us = strtol(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "fault_proxy: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    const char *colon = target ? strrchr(target, ':') : NULL;
    if (!colon || !port_file || listen_port < 0 || listen_port > 65535 || chunk < 0 ||
        delay_us < 0) {
        fprintf(stderr, "usage: fault_proxy --target HOST:PORT --port-file FILE [--listen PORT] "
                        "[--chunk N] [--delay-us U] [--stats-file FILE]\n");
        return 2;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - target), target);
    const char *tport = colon + 1;

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)listen_port);
    if (bind(lfd, (struct sockaddr *)&sin, sizeof sin) || listen(lfd, 64))
        die("listen");
    socklen_t sl = sizeof sin;
    getsockname(lfd, (struct sockaddr *)&sin, &sl);
    set_nonblock_nodelay(lfd);
    write_stats(stats_file);
    /* Written once it listens: the shell waits for this file. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (!pf)
        die("port file");
    fprintf(pf, "%d\n", ntohs(sin.sin_port));
    if (fclose(pf) || rename(tmp, port_file))
        die("port file");

    static struct conn conns[MAX_CONNS];
    for (int i = 0; i < MAX_CONNS; i++)
        conns[i].cfd = conns[i].sfd = -1;
    struct pollfd pfd[1 + 2 * MAX_CONNS];
    int who[1 + 2 * MAX_CONNS];
    int64_t stats_at = 0;
    int stats_dirty = 0;
    while (!stop) {
        int64_t now = now_us(), wait = -1;
        int n = 0;
        pfd[n] = (struct pollfd){lfd, POLLIN, 0};
        who[n++] = -1;
        for (int i = 0; i < MAX_CONNS; i++) {
            struct conn *c = &conns[i];
            if (c->cfd < 0)
                continue;
            short ce = 0, se = 0;
            if (pending_left(&c->c2s) == 0)
                ce |= POLLIN;
            else
                se |= POLLOUT;
            if (!c->server_eof && pending_left(&c->s2c) < HOLD_MAX)
                se |= POLLIN;
            if (pending_left(&c->s2c) > 0) {
                if (c->next_us <= now)
                    ce |= POLLOUT;
                else if (wait < 0 || c->next_us - now < wait)
                    wait = c->next_us - now;
            }
            pfd[n] = (struct pollfd){c->cfd, ce, 0};
            who[n++] = i;
            pfd[n] = (struct pollfd){c->sfd, se, 0};
            who[n++] = i;
        }
        if (stats_dirty && (wait < 0 || wait > 50000))
            wait = 50000;
        struct timespec ts = {(time_t)(wait / 1000000), (long)(wait % 1000000) * 1000};
        if (ppoll(pfd, (nfds_t)n, wait < 0 ? NULL : &ts, NULL) < 0) {
            if (errno == EINTR)
                continue;
            die("ppoll");
        }
        now = now_us();
        if (pfd[0].revents & POLLIN) {
            int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            int slot = -1;
            for (int i = 0; cfd >= 0 && i < MAX_CONNS && slot < 0; i++)
                if (conns[i].cfd < 0)
                    slot = i;
            int sfd = slot >= 0 ? connect_target(host, tport) : -1;
            if (sfd < 0) {
                if (cfd >= 0)
                    close(cfd); /* the client sees what it would see of a dead server */
            } else {
                set_nonblock_nodelay(cfd);
                set_nonblock_nodelay(sfd);
                conns[slot].cfd = cfd;
                conns[slot].sfd = sfd;
                stats.conns++;
                stats_dirty = 1;
            }
        }
        for (int k = 1; k < n; k++) {
            struct conn *c = &conns[who[k]];
            short re = pfd[k].revents;
            if (!re || c->cfd < 0)
                continue;
            int ok = 1;
            if (pfd[k].fd == c->cfd) {
                if (re & POLLOUT) {
                    size_t piece = chunk ? (size_t)chunk : (c->pieces % 2 ? 7 : 1);
                    ssize_t w = push(c->cfd, &c->s2c, piece);
                    if (w < 0)
                        ok = 0;
                    else if (w > 0) {
                        c->pieces++;
                        c->next_us = now + delay_us;
                        stats.pieces++;
                        stats.bytes += (unsigned long long)w;
                        if ((size_t)w > stats.largest)
                            stats.largest = (size_t)w;
                        stats_dirty = 1;
                    }
                }
                if (ok && (re & (POLLIN | POLLHUP | POLLERR)) && pending_left(&c->c2s) == 0)
                    ok = pull(c->cfd, &c->c2s); /* the client closing ends the connection */
            } else if (pfd[k].fd == c->sfd) {
                if ((re & POLLOUT) && push(c->sfd, &c->c2s, SIZE_MAX) < 0)
                    ok = 0;
                if (ok && (re & (POLLIN | POLLHUP | POLLERR)) && !c->server_eof)
                    c->server_eof = !pull(c->sfd, &c->s2c);
            }
            if (!ok || (c->server_eof && pending_left(&c->s2c) == 0))
                conn_close(c);
        }
        if (stats_dirty && now - stats_at >= 50000) {
            write_stats(stats_file);
            stats_at = now;
            stats_dirty = 0;
        }
    }
    write_stats(stats_file);
    return 0;
}
