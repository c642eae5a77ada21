/* split_peer.h: a loopback server, on a thread of the test, that answers one connection with a
 * recorded reply cut into pieces, each piece read by the client before the next is written, so a
 * reader's real read loop (its socket, its deadline, its buffer) sees exactly the splits a test
 * asks for: every byte alone, or the reply cut in two at one chosen point. Issue 29: "every
 * reader survives any split of any reply".
 *
 * "Read before the next is written" is an event, not a delay: the client's socket is in this
 * process, so after each piece the peer waits until that socket has no byte left unread
 * (FIONREAD), whatever the machine's load. Header-only; included by one test file each. */
#ifndef QREL_TESTS_SPLIT_PEER_H
#define QREL_TESTS_SPLIT_PEER_H

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long the peer waits for anything before it gives up (the test then fails on its result). */
#define SPLIT_PEER_WAIT_MS 20000

struct split_peer {
    const char *reply; /* the bytes to answer with */
    size_t reply_len;
    const char *req_suffix; /* the request is whole once it ends with this */
    size_t step;            /* pieces of step bytes; 0: two pieces cut at cut */
    size_t cut;
    int port;      /* where it listens (set by split_peer_start) */
    size_t pieces; /* pieces written, each read alone by the client (set when joined) */
    int lfd;
    pthread_t thread;
};

static inline int split_peer_wait(int fd, short events)
{
    struct pollfd p = {fd, events, 0};
    return poll(&p, 1, SPLIT_PEER_WAIT_MS) == 1;
}

/* The socket of this process whose local port is port: the client's end of the connection. */
static inline int split_peer_client_fd(int port)
{
    for (int fd = 0; fd < 1024; fd++) {
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        if (getsockname(fd, (struct sockaddr *)&a, &al) == 0 && a.sin_family == AF_INET &&
            ntohs(a.sin_port) == port)
            return fd;
    }
    return -1;
}

/* Waits until the client has read every byte written to it; 0 when it closed or never did. */
static inline int split_peer_drained(int client_fd)
{
    struct timespec pause = {0, 20000};
    for (long waited_us = 0; waited_us < SPLIT_PEER_WAIT_MS * 1000L; waited_us += 20) {
        int unread = 0;
        if (ioctl(client_fd, FIONREAD, &unread) != 0)
            return 0;
        if (unread == 0)
            return 1;
        nanosleep(&pause, NULL);
    }
    return 0;
}

static inline void *split_peer_run(void *arg)
{
    struct split_peer *p = arg;
    if (!split_peer_wait(p->lfd, POLLIN))
        return NULL;
    int fd = accept(p->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    getpeername(fd, (struct sockaddr *)&peer, &pl);
    int client = split_peer_client_fd(ntohs(peer.sin_port));
    /* The request, whole: the reply must not be read as an answer to half of it. */
    char req[65536];
    size_t got = 0, sl = strlen(p->req_suffix);
    while (got < sl || memcmp(req + got - sl, p->req_suffix, sl) != 0) {
        ssize_t n = got < sizeof req && split_peer_wait(fd, POLLIN)
                        ? recv(fd, req + got, sizeof req - got, 0)
                        : -1;
        if (n <= 0)
            goto out;
        got += (size_t)n;
    }
    for (size_t off = 0; off < p->reply_len && client >= 0;) {
        size_t n = p->step ? p->step : (off < p->cut ? p->cut : p->reply_len - off);
        if (n > p->reply_len - off)
            n = p->reply_len - off;
        if (send(fd, p->reply + off, n, MSG_NOSIGNAL) != (ssize_t)n)
            break;
        off += n;
        p->pieces++;
        /* The last piece needs no wait: nothing follows it that it could merge with. */
        if (off < p->reply_len && !split_peer_drained(client))
            break;
    }
    /* Until the client closes: the connection's end is the client's business. */
    char c;
    if (split_peer_wait(fd, POLLIN))
        (void)recv(fd, &c, 1, 0);
out:
    close(fd);
    return NULL;
}

/* Listens on 127.0.0.1 (p->port) and serves one connection on a thread. */
static inline void split_peer_start(struct split_peer *p)
{
    p->pieces = 0;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(p->lfd, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(p->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(p->lfd, 1), 0);
    ck_assert_int_eq(getsockname(p->lfd, (struct sockaddr *)&a, &al), 0);
    p->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&p->thread, NULL, split_peer_run, p), 0);
}

/* After the client closed its connection: waits for the thread and closes the listener. */
static inline void split_peer_join(struct split_peer *p)
{
    pthread_join(p->thread, NULL);
    close(p->lfd);
}

#endif
