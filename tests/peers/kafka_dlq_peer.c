/* kafka_dlq_peer.c: the Kafka side of tests/integration/dlq_kafka.sh, as a service and an operator
 * would touch a topic, through librdkafka's API:
 *
 *   kafka_dlq_peer produce BOOTSTRAP TOPIC       < lines PART\tKEY\tVALUE[\tNAME=VALUE]...
 *   kafka_dlq_peer dead-letter BOOTSTRAP TOPIC DLQ
 *   kafka_dlq_peer dump BOOTSTRAP TOPIC
 *   kafka_dlq_peer state BOOTSTRAP TOPIC GROUP
 *
 * produce writes one record per line (KEY "-": none) and waits until all are acknowledged.
 * dead-letter is a consumer's dead-letter handling as Spring Kafka's DeadLetterPublishingRecoverer
 * does it: every record of TOPIC goes to the same partition of DLQ with its key, value and
 * headers, plus kafka_dlt-original-topic / -partition (4-byte int) / -offset (8-byte int) /
 * -exception-message and retry_topic-attempts (4-byte int, 3). dump prints each record of TOPIC
 * from the log start to the end, one line each:
 * "P:O key=K value=V NAME=VALUE ...", bytes outside printable ASCII as \xHH. state prints
 * "P LOW HIGH COMMITTED" per partition, COMMITTED -1 when GROUP has none. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kafka_dlq_peer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static rd_kafka_t *handle(rd_kafka_type_t type, const char *bootstrap, const char *group)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[][2] = {{"bootstrap.servers", bootstrap},
                           {"log_level", "3"},
                           {type == RD_KAFKA_CONSUMER ? "group.id" : "acks",
                            type == RD_KAFKA_CONSUMER ? (group ? group : "kafka-dlq-peer") : "all"},
                           {type == RD_KAFKA_CONSUMER ? "enable.partition.eof" : "linger.ms",
                            type == RD_KAFKA_CONSUMER ? "true" : "0"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr, sizeof errstr))
            die("config", errstr);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk)
        die("rd_kafka_new", errstr);
    return rk;
}

static int partitions(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, t, &md, 10000);
    rd_kafka_topic_destroy(t);
    if (err || md->topic_cnt != 1 || md->topics[0].err)
        die("metadata", topic);
    int n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return n;
}

static void produce_one(rd_kafka_t *p, const char *topic, int part, const void *key, size_t klen,
                        const void *val, size_t vlen, rd_kafka_headers_t *h)
{
    rd_kafka_resp_err_t err = rd_kafka_producev(
        p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part), RD_KAFKA_V_KEY(key, klen),
        RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err)
        die("produce", rd_kafka_err2str(err));
    rd_kafka_poll(p, 0);
}

/* Waits until every record produced is acknowledged, then destroys p. */
static void flush_and_destroy(rd_kafka_t *p)
{
    if (rd_kafka_flush(p, 10000) || rd_kafka_outq_len(p))
        die("produce", "not acknowledged within 10 s");
    rd_kafka_destroy(p);
}

static void produce(const char *bootstrap, const char *topic)
{
    rd_kafka_t *p = handle(RD_KAFKA_PRODUCER, bootstrap, NULL);
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *f[16];
        int n = 0;
        for (char *s = line; s && n < 16; n++) {
            f[n] = s;
            s = strchr(s, '\t');
            if (s)
                *s++ = '\0';
        }
        if (n < 3)
            die("produce wants PART\\tKEY\\tVALUE[\\tNAME=VALUE]...", line);
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        for (int i = 3; i < n; i++) {
            char *eq = strchr(f[i], '=');
            if (!eq)
                die("a header wants NAME=VALUE", f[i]);
            rd_kafka_header_add(h, f[i], eq - f[i], eq + 1, -1);
        }
        int nokey = strcmp(f[1], "-") == 0;
        char *end;
        long part = strtol(f[0], &end, 10);
        if (end == f[0] || *end)
            die("a partition wants a number", f[0]);
        produce_one(p, topic, (int)part, nokey ? NULL : f[1], nokey ? 0 : strlen(f[1]), f[2],
                    strlen(f[2]), h);
    }
    flush_and_destroy(p);
}

static void put_be(unsigned char *b, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)(v & 0xff);
}

/* Calls fn on every record of topic from the log start to the high watermark. */
static void read_all(const char *bootstrap, const char *topic,
                     void (*fn)(const rd_kafka_message_t *m, void *arg), void *arg)
{
    rd_kafka_t *c = handle(RD_KAFKA_CONSUMER, bootstrap, NULL);
    int np = partitions(c, topic), left = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++) {
        int64_t lo, hi;
        if (rd_kafka_query_watermark_offsets(c, topic, p, &lo, &hi, 10000))
            die("watermarks", topic);
        if (lo < hi) {
            rd_kafka_topic_partition_list_add(l, topic, p)->offset = lo;
            left++;
        }
    }
    if (left && rd_kafka_assign(c, l))
        die("assign", topic);
    for (int waited = 0; left && waited < 200;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m) {
            waited++;
            continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            left--;
        else if (m->err)
            die("fetch", rd_kafka_message_errstr(m));
        else
            fn(m, arg);
        rd_kafka_message_destroy(m);
    }
    if (left)
        die("fetch", "the end of every partition not reached within 20 s");
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(c);
}

struct dlq_out {
    rd_kafka_t *p;
    const char *dlq;
};

static void dead_letter_one(const rd_kafka_message_t *m, void *arg)
{
    struct dlq_out *o = arg;
    rd_kafka_headers_t *orig = NULL, *h;
    h = rd_kafka_message_headers(m, &orig) == RD_KAFKA_RESP_ERR_NO_ERROR
            ? rd_kafka_headers_copy(orig)
            : rd_kafka_headers_new(6);
    const char *topic = rd_kafka_topic_name(m->rkt);
    unsigned char part[4], off[8], attempts[4];
    put_be(part, (uint64_t)m->partition, 4);
    put_be(off, (uint64_t)m->offset, 8);
    put_be(attempts, 3, 4);
    rd_kafka_header_add(h, "kafka_dlt-original-topic", -1, topic, -1);
    rd_kafka_header_add(h, "kafka_dlt-original-partition", -1, part, 4);
    rd_kafka_header_add(h, "kafka_dlt-original-offset", -1, off, 8);
    rd_kafka_header_add(h, "kafka_dlt-exception-message", -1, "handler failed 3 times", -1);
    rd_kafka_header_add(h, "retry_topic-attempts", -1, attempts, 4);
    produce_one(o->p, o->dlq, m->partition, m->key, m->key_len, m->payload, m->len, h);
}

static void print_bytes(const char *label, const void *v, size_t n)
{
    const unsigned char *b = v;
    printf(" %s=", label);
    if (!b) {
        printf("(null)");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (b[i] > ' ' && b[i] < 127 && b[i] != '\\')
            putchar(b[i]);
        else
            printf("\\x%02x", b[i]);
}

static void dump_one(const rd_kafka_message_t *m, void *arg)
{
    printf("%d:%lld", (int)m->partition, (long long)m->offset);
    print_bytes("key", m->key, m->key_len);
    print_bytes("value", m->payload, m->len);
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *v;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &v, &size) == 0; i++)
            print_bytes(name, v, size);
    }
    putchar('\n');
}

static void state(const char *bootstrap, const char *topic, const char *group)
{
    rd_kafka_t *c = handle(RD_KAFKA_CONSUMER, bootstrap, group);
    int np = partitions(c, topic);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++)
        rd_kafka_topic_partition_list_add(l, topic, p);
    if (rd_kafka_committed(c, l, 10000))
        die("committed", group);
    for (int p = 0; p < np; p++) {
        int64_t lo, hi;
        if (rd_kafka_query_watermark_offsets(c, topic, p, &lo, &hi, 10000))
            die("watermarks", topic);
        long long committed = l->elems[p].offset < 0 ? -1 : (long long)l->elems[p].offset;
        printf("%d %lld %lld %lld\n", p, (long long)lo, (long long)hi, committed);
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(c);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "produce") == 0) {
        produce(argv[2], argv[3]);
    } else if (argc == 5 && strcmp(argv[1], "dead-letter") == 0) {
        struct dlq_out o = {handle(RD_KAFKA_PRODUCER, argv[2], NULL), argv[4]};
        read_all(argv[2], argv[3], dead_letter_one, &o);
        flush_and_destroy(o.p);
    } else if (argc == 4 && strcmp(argv[1], "dump") == 0) {
        read_all(argv[2], argv[3], dump_one, NULL);
    } else if (argc == 5 && strcmp(argv[1], "state") == 0) {
        state(argv[2], argv[3], argv[4]);
    } else {
        die("usage: produce|dead-letter|dump|state (see the top of kafka_dlq_peer.c)", NULL);
    }
    return 0;
}
