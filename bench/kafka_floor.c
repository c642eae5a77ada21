/* kafka_floor.c: the floor for bench/kafka.sh: the Kafka requests a consumer-lag scrape needs,
 * sent through librdkafka as a client that knows the answer's shape would send them, with
 * nothing done with the replies but keeping the numbers. One run is: one Metadata request (all
 * topics); the latest and the earliest offsets of every partition of the named topics (two
 * offsets_for_times calls, each one ListOffsets per leader broker); every group's committed
 * offsets (ListConsumerGroupOffsets, all groups sent before any reply is awaited: librdkafka 2.0
 * takes one group per request); and, for every partition some group lags on, the record at the
 * committed offset (one assign, so librdkafka batches the reads per broker), for its timestamp.
 * The handle is created once and kept, as an exporter keeps its own.
 *
 *   kafka_floor BOOTSTRAP GROUPS_FILE RUNS
 *
 * GROUPS_FILE holds "GROUP TOPIC" lines. Prints the fastest and the median run in seconds, the
 * partitions and lagging reads of the last run, and the requests librdkafka logged as sent
 * (debug=protocol) per run, by type. */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor.h"

#define MAX_TYPES 32
#define WAIT_MS 30000

static struct {
    char name[48];
    long n;
} sent[MAX_TYPES];
static int nsent;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* librdkafka's protocol debug lines read "Sent FetchRequest (v11, ...)": counted by type. */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac;
    const char *p = strstr(buf, "Sent ");
    if (!p)
        return;
    char name[48];
    if (sscanf(p + 5, "%47[A-Za-z]", name) != 1)
        return;
    size_t len = strlen(name);
    if (len <= 7 || strcmp(name + len - 7, "Request"))
        return;
    name[len - 7] = '\0';
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < nsent && strcmp(sent[i].name, name))
        i++;
    if (i == nsent && nsent < MAX_TYPES)
        snprintf(sent[nsent++].name, sizeof sent[0].name, "%s", name);
    if (i < nsent)
        sent[i].n++;
    pthread_mutex_unlock(&mu);
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kafka_floor: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

struct group {
    char *name, *topic;
};

/* One run; returns the lagging reads it made and sets *parts. */
static int run(rd_kafka_t *rk, struct group *g, int ng, int *parts)
{
    const rd_kafka_metadata_t *md;
    if (rd_kafka_metadata(rk, 1, NULL, &md, WAIT_MS))
        die("metadata", NULL);
    rd_kafka_topic_partition_list_t *hi = rd_kafka_topic_partition_list_new(1024);
    for (int t = 0; t < md->topic_cnt; t++) {
        int named = 0;
        for (int i = 0; i < ng && !named; i++)
            named = strcmp(g[i].topic, md->topics[t].topic) == 0;
        for (int p = 0; named && p < md->topics[t].partition_cnt; p++)
            rd_kafka_topic_partition_list_add(hi, md->topics[t].topic, p)->offset =
                RD_KAFKA_OFFSET_END;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_partition_list_t *lo = rd_kafka_topic_partition_list_copy(hi);
    for (int i = 0; i < lo->cnt; i++)
        lo->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    if (rd_kafka_offsets_for_times(rk, hi, WAIT_MS) || rd_kafka_offsets_for_times(rk, lo, WAIT_MS))
        die("offsets_for_times", NULL);
    *parts = hi->cnt;

    /* every group's request first, then the replies */
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    for (int i = 0; i < ng; i++) {
        rd_kafka_topic_partition_list_t *want = rd_kafka_topic_partition_list_new(16);
        for (int k = 0; k < hi->cnt; k++)
            if (strcmp(hi->elems[k].topic, g[i].topic) == 0)
                rd_kafka_topic_partition_list_add(want, g[i].topic, hi->elems[k].partition);
        rd_kafka_ListConsumerGroupOffsets_t *req =
            rd_kafka_ListConsumerGroupOffsets_new(g[i].name, want);
        rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, o, q);
        rd_kafka_ListConsumerGroupOffsets_destroy(req);
        rd_kafka_topic_partition_list_destroy(want);
    }
    rd_kafka_topic_partition_list_t *lag = rd_kafka_topic_partition_list_new(1024);
    for (int got = 0; got < ng; got++) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, WAIT_MS);
        if (!ev || rd_kafka_event_error(ev))
            die("ListConsumerGroupOffsets", ev ? rd_kafka_event_error_string(ev) : "no reply");
        size_t n;
        const rd_kafka_group_result_t **res = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
        for (size_t r = 0; r < n; r++) {
            const rd_kafka_topic_partition_list_t *c = rd_kafka_group_result_partitions(res[r]);
            for (int k = 0; c && k < c->cnt; k++) {
                rd_kafka_topic_partition_t *h = rd_kafka_topic_partition_list_find(
                    hi, c->elems[k].topic, c->elems[k].partition);
                /* one read per partition and offset, however many groups wait there */
                if (h && c->elems[k].offset >= 0 && c->elems[k].offset < h->offset) {
                    rd_kafka_topic_partition_t *l = rd_kafka_topic_partition_list_find(
                        lag, c->elems[k].topic, c->elems[k].partition);
                    if (!l)
                        l = rd_kafka_topic_partition_list_add(lag, c->elems[k].topic,
                                                              c->elems[k].partition),
                        l->offset = c->elems[k].offset;
                    else if (c->elems[k].offset < l->offset)
                        l->offset = c->elems[k].offset;
                }
            }
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);

    /* the first unconsumed record of each lagging partition */
    int reads = 0;
    if (lag->cnt) {
        if (rd_kafka_assign(rk, lag))
            die("assign", NULL);
        char *seen = calloc((size_t)lag->cnt, 1);
        double end = floor_now() + WAIT_MS / 1000.0;
        while (reads < lag->cnt && floor_now() < end) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
            if (!m)
                continue;
            if (!m->err && m->rkt) {
                for (int k = 0; k < lag->cnt; k++)
                    if (!seen[k] && lag->elems[k].partition == m->partition &&
                        strcmp(lag->elems[k].topic, rd_kafka_topic_name(m->rkt)) == 0) {
                        seen[k] = 1;
                        reads++;
                        rd_kafka_timestamp_type_t tt;
                        (void)rd_kafka_message_timestamp(m, &tt);
                        break;
                    }
            }
            rd_kafka_message_destroy(m);
        }
        free(seen);
        rd_kafka_assign(rk, NULL);
        if (reads < lag->cnt)
            die("lagging reads", "not every partition answered within 30 s");
    }
    rd_kafka_topic_partition_list_destroy(lag);
    rd_kafka_topic_partition_list_destroy(hi);
    rd_kafka_topic_partition_list_destroy(lo);
    return reads;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: kafka_floor BOOTSTRAP GROUPS_FILE RUNS\n");
        return 2;
    }
    int runs = (int)strtol(argv[3], NULL, 10);
    if (runs < 1)
        die("RUNS", "want a positive number");
    FILE *f = fopen(argv[2], "r");
    if (!f)
        die("cannot open", argv[2]);
    struct group *g = NULL;
    int ng = 0;
    char gname[256], topic[256];
    while (fscanf(f, "%255s %255s", gname, topic) == 2) {
        g = realloc(g, (size_t)(ng + 1) * sizeof *g);
        g[ng].name = strdup(gname);
        g[ng].topic = strdup(topic);
        ng++;
    }
    fclose(f);

    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {
        {"bootstrap.servers", argv[1]},  {"group.id", "kafka-floor"},
        {"enable.auto.commit", "false"}, {"enable.partition.eof", "false"},
        {"fetch.wait.max.ms", "10"},     {"debug", "protocol"},
    };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof errstr))
            die("config", errstr);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk)
        die("rd_kafka_new", errstr);

    int parts = 0, reads = 0;
    reads = run(rk, g, ng, &parts); /* connects to every broker: not measured */
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nsent; i++)
        sent[i].n = 0;
    pthread_mutex_unlock(&mu);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = 0; r < runs; r++) {
        double t0 = floor_now();
        reads = run(rk, g, ng, &parts);
        t[r] = floor_now() - t0;
    }
    double median = floor_median(t, runs);
    printf("fastest %.6f median %.6f groups %d partitions %d lag_reads %d\n", t[0], median, ng,
           parts, reads);
    long total = 0;
    pthread_mutex_lock(&mu);
    printf("requests per run:");
    for (int i = 0; i < nsent; i++) {
        if (sent[i].n)
            printf(" %s %.1f", sent[i].name, (double)sent[i].n / runs);
        total += sent[i].n;
    }
    pthread_mutex_unlock(&mu);
    printf(" total %.1f\n", (double)total / runs);
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    for (int i = 0; i < ng; i++) {
        free(g[i].name);
        free(g[i].topic);
    }
    free(g);
    free(t);
    return 0;
}
