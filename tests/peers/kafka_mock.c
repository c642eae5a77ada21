/* kafka_mock.c: a Kafka protocol peer for the integration tests, built on librdkafka's mock
 * cluster (rdkafka_mock.h), since no real broker can be installed on the test machines.
 *
 *   kafka_mock -p PORT[,PORT...] [-t TOPIC:PARTITIONS]... [-m TOPIC:PART:COUNT:FIRST_MS:STEP_MS]...
 *              [-r TOPIC:PART:HEADER:VALUE]... [-c GROUP:TOPIC:PART:OFFSET]...
 *
 * Starts one mock broker per port (librdkafka 2.0.2 always binds 127.0.0.1:0, so this program
 * defines bind() itself and turns each such bind into the next port of -p: the tests pick free
 * ports and must know them up front), creates the topics, produces COUNT records to a partition
 * with the timestamps FIRST_MS, FIRST_MS+STEP_MS, ... (epoch milliseconds, CreateTime), commits
 * -r records (after the -m ones) with the given value (the rest of the argument, colons included)
 * and, when HEADER is NAME=VAL rather than empty, that header, commits
 * OFFSET for GROUP without joining it, prints BOOTSTRAP=host:port,... and runs until SIGTERM or
 * SIGINT. Everything is done before BOOTSTRAP= is printed, so a test can read it as "ready".
 *
 * Topics are created from several threads at once. In librdkafka 2.0.2 the mock cluster's thread
 * sleeps in poll() for up to 1 s between timers and now and then misses the wake-up of an op
 * posted from another thread, so a topic_create (one op, waited for) can take the whole second:
 * one after another, 100 topics of 10 partitions took 30-43 s on a loaded machine (bench/kafka.sh
 * gave up at 30 s). Ops posted at once are all served by the same wake-up, late or not: 1 s. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_PORTS 8

static int ports[MAX_PORTS];
static int nports, next_port;

/* librdkafka's mock binds its listeners to 127.0.0.1:0; each such bind gets the next fixed port
 * instead. Every other bind is passed through untouched. */
int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static int (*real_bind)(int, const struct sockaddr *, socklen_t);
    if (!real_bind)
        *(void **)&real_bind = dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, addr, sizeof in);
        if (in.sin_port == 0 && in.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
            next_port < nports) {
            in.sin_port = htons((unsigned short)ports[next_port++]);
            return real_bind(fd, (const struct sockaddr *)&in, sizeof in);
        }
    }
    return real_bind(fd, addr, len);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kafka_mock: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static long long num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        die(what, s);
    return v;
}

/* Splits s at ':' into at most max fields (in place); returns how many. */
static int split(char *s, char **f, int max)
{
    int n = 0;
    for (char *p = s; n < max;) {
        f[n++] = p;
        p = strchr(p, ':');
        if (!p)
            break;
        *p++ = '\0';
    }
    return n;
}

/* Topics created at once (threads; each waits for its op), so a missed wake-up costs its second
 * once per batch, not once per topic. */
#define TOPIC_BATCH 64

struct topic_job {
    rd_kafka_mock_cluster_t *mc;
    char *arg; /* TOPIC:PARTITIONS, split in place */
    rd_kafka_resp_err_t err;
};

static void *topic_create(void *opaque)
{
    struct topic_job *j = opaque;
    char *f[2];
    if (split(j->arg, f, 2) != 2)
        die("-t wants TOPIC:PARTITIONS", j->arg);
    j->err = rd_kafka_mock_topic_create(j->mc, f[0], (int)num(f[1], "bad partition count"), 1);
    return NULL;
}

/* Creates the topics of -t, TOPIC_BATCH at a time; dies naming the first that failed. */
static void topics_create(rd_kafka_mock_cluster_t *mc, char **topics, int ntopics)
{
    struct topic_job jobs[TOPIC_BATCH];
    pthread_t threads[TOPIC_BATCH];
    for (int first = 0; first < ntopics; first += TOPIC_BATCH) {
        int n = ntopics - first < TOPIC_BATCH ? ntopics - first : TOPIC_BATCH;
        for (int i = 0; i < n; i++) {
            jobs[i] = (struct topic_job){mc, topics[first + i], RD_KAFKA_RESP_ERR_NO_ERROR};
            if (pthread_create(&threads[i], NULL, topic_create, &jobs[i]))
                die("cannot start a thread", NULL);
        }
        for (int i = 0; i < n; i++)
            pthread_join(threads[i], NULL);
        for (int i = 0; i < n; i++)
            if (jobs[i].err)
                die("cannot create topic", jobs[i].arg); /* split() left the name alone */
    }
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *bootstrap, const char *group)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr) ||
        (group && rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr)) ||
        (group && rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr)) ||
        rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr))
        die("config", errstr);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk)
        die("rd_kafka_new", errstr);
    return rk;
}

int main(int argc, char **argv)
{
    /* Each list has room for every argument: the benchmarks pass thousands (bench/kafka.sh). */
    char **topics = calloc((size_t)argc, sizeof *topics),
         **produce = calloc((size_t)argc, sizeof *produce),
         **commits = calloc((size_t)argc, sizeof *commits),
         **records = calloc((size_t)argc, sizeof *records);
    if (!topics || !produce || !commits || !records)
        die("out of memory", NULL);
    int ntopics = 0, nproduce = 0, ncommits = 0, nrecords = 0, opt;
    while ((opt = getopt(argc, argv, "p:t:m:c:r:")) != -1) {
        switch (opt) {
        case 'p':
            for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                if (nports == MAX_PORTS)
                    die("too many ports", NULL);
                ports[nports++] = (int)num(tok, "bad port");
            }
            break;
        case 't':
        case 'm':
        case 'r':
        case 'c': {
            char **v = opt == 't' ? topics : opt == 'm' ? produce : opt == 'r' ? records : commits;
            int *n = opt == 't'   ? &ntopics
                     : opt == 'm' ? &nproduce
                     : opt == 'r' ? &nrecords
                                  : &ncommits;
            v[(*n)++] = optarg;
            break;
        }
        default:
            fprintf(stderr, "usage: kafka_mock -p PORT[,PORT] [-t T:N] [-m T:P:COUNT:FIRST_MS:"
                            "STEP_MS] [-r T:P:HEADER:VALUE] [-c G:T:P:OFFSET]\n");
            return 2;
        }
    }
    if (nports == 0)
        die("-p is required", NULL);

    /* The cluster lives in a handle of its own that never talks to it. */
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!host)
        die("rd_kafka_new", errstr);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, nports);
    if (!mc)
        die("cannot start the mock cluster (a port in use?)", NULL);
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(mc);

    topics_create(mc, topics, ntopics);

    if (nproduce || nrecords) {
        rd_kafka_t *p = client(RD_KAFKA_PRODUCER, bootstrap, NULL);
        for (int i = 0; i < nproduce; i++) {
            char *f[5];
            if (split(produce[i], f, 5) != 5)
                die("-m wants TOPIC:PART:COUNT:FIRST_MS:STEP_MS", produce[i]);
            int part = (int)num(f[1], "bad partition");
            long long count = num(f[2], "bad count"), first = num(f[3], "bad timestamp"),
                      step = num(f[4], "bad step");
            for (long long k = 0; k < count; k++) {
                char payload[64];
                int len = snprintf(payload, sizeof payload, "record %lld", k);
                rd_kafka_resp_err_t err =
                    rd_kafka_producev(p, RD_KAFKA_V_TOPIC(f[0]), RD_KAFKA_V_PARTITION(part),
                                      RD_KAFKA_V_VALUE(payload, (size_t)len),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                      RD_KAFKA_V_TIMESTAMP(first + k * step), RD_KAFKA_V_END);
                if (err)
                    die("produce", rd_kafka_err2str(err));
                rd_kafka_poll(p, 0);
            }
        }
        for (int i = 0; i < nrecords; i++) {
            /* Split by hand: the value keeps its colons (split() ends every field at one). */
            char *f[4] = {records[i], NULL, NULL, NULL};
            for (int k = 1; k < 4; k++) {
                char *colon = strchr(f[k - 1], ':');
                if (!colon)
                    die("-r wants TOPIC:PART:HEADER:VALUE", records[i]);
                *colon = '\0';
                f[k] = colon + 1;
            }
            rd_kafka_headers_t *h = rd_kafka_headers_new(1);
            char *eq = strchr(f[2], '=');
            if (*f[2] && !eq)
                die("-r wants HEADER as NAME=VALUE or empty", f[2]);
            if (eq)
                rd_kafka_header_add(h, f[2], eq - f[2], eq + 1, -1);
            rd_kafka_resp_err_t err = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(f[0]), RD_KAFKA_V_PARTITION((int)num(f[1], "bad partition")),
                RD_KAFKA_V_VALUE(f[3], strlen(f[3])), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
            if (err) {
                rd_kafka_headers_destroy(h);
                die("produce", rd_kafka_err2str(err));
            }
            rd_kafka_poll(p, 0);
        }
        if (rd_kafka_flush(p, 10000) || rd_kafka_outq_len(p))
            die("produce", "records not delivered within 10 s");
        rd_kafka_destroy(p);
    }

    /* Consecutive -c of one group are committed together, by one consumer. */
    for (int i = 0; i < ncommits;) {
        char *f[4];
        if (split(commits[i], f, 4) != 4)
            die("-c wants GROUP:TOPIC:PART:OFFSET", commits[i]);
        const char *group = f[0];
        /* A consumer that never subscribes commits as a "simple" consumer (generation -1). */
        rd_kafka_t *c = client(RD_KAFKA_CONSUMER, bootstrap, group);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        for (;;) {
            rd_kafka_topic_partition_list_add(l, f[1], (int)num(f[2], "bad partition"))->offset =
                num(f[3], "bad offset");
            if (++i == ncommits)
                break;
            size_t glen = strlen(group);
            if (strncmp(commits[i], group, glen) || commits[i][glen] != ':')
                break;
            if (split(commits[i], f, 4) != 4)
                die("-c wants GROUP:TOPIC:PART:OFFSET", commits[i]);
        }
        rd_kafka_resp_err_t err = rd_kafka_commit(c, l, 0);
        for (int k = 0; !err && k < l->cnt; k++)
            err = l->elems[k].err;
        if (err)
            die("commit", rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
    }

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("BOOTSTRAP=%s\n", bootstrap);
    fflush(stdout);
    while (!stop)
        usleep(50000);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
    free(topics);
    free(produce);
    free(commits);
    free(records);
    fprintf(stderr, "kafka_mock: stopped\n");
    return 0;
}
