/* fuzz_redis.c: libFuzzer target for the RESP reply handling of collectors/common/redis.h: a
 * server thread on a unix socket answers a 3-command pipeline with the fuzz input and closes; the
 * pipeline must end in replies or an error (protocol, connect, limit), never a crash or a hang. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "common/redis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int listener = -1;
static char address[128];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static const uint8_t *answer;
static size_t answer_len;
static int served = 1;

/* Accepts one connection per input, drains the request, writes the answer and closes. */
static void *server_main(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(listener, NULL, NULL);
        if (c < 0)
            continue;
        pthread_mutex_lock(&mu);
        while (served)
            pthread_cond_wait(&cv, &mu);
        char buf[4096];
        (void)!read(c, buf, sizeof buf);
        size_t off = 0;
        while (off < answer_len) {
            ssize_t n = write(c, answer + off, answer_len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        served = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        close(c);
    }
    return NULL;
}

static void setup(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/qrel-fuzz-redis-%d.sock", (int)getpid());
    unlink(sa.sun_path);
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(listener, 4) != 0)
        abort();
    snprintf(address, sizeof address, "unix:%s", sa.sun_path);
    pthread_t t;
    pthread_create(&t, NULL, server_main, NULL);
    pthread_detach(t);
}

static int on_reply(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    size_t *n = ctx;
    (*n)++;
    (void)redis_reply_type_name(r);
    (void)redis_reply_is_error(r, "NOGROUP");
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++)
            (void)redis_reply_type_name(r->element[i]);
    (void)index;
    (void)e;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (listener < 0)
        setup();
    pthread_mutex_lock(&mu);
    answer = data;
    answer_len = size;
    served = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);

    struct deadline dl = deadline_in(2.0);
    struct err e;
    err_clear(&e);
    struct redis_conn *c = redis_conn_open("fuzz", address, NULL, NULL, 0, &dl, &e);
    if (c) {
        struct redis_pipe *p = redis_pipe_new();
        redis_pipe_addv(p, "XINFO", "STREAM", "orders", NULL);
        redis_pipe_addv(p, "XPENDING", "orders", "g", NULL);
        redis_pipe_addv(p, "PING", NULL);
        size_t n = 0;
        redis_pipe_exec_each(c, p, &dl, 1024 * 1024, on_reply, &n, &e);
        redis_pipe_free(p);
        redis_conn_close(c);
    }
    /* Wait for the server to be done with this input before it goes away; when the connection
     * failed it never came, so stop waiting after a while. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    pthread_mutex_lock(&mu);
    while (!served)
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0)
            break;
    served = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}
