/* kafka/client.c: the librdkafka handle of a `kafka` source and how the kind's files use it
 * (client.h). One consumer per source, kept between scrapes and destroyed after any error; its
 * error callback keeps the last broker error, because a refused connection or SASL handshake
 * shows up as a mere timeout of the call that waited for it. The consumer is assigned partitions
 * directly and never joins nor commits: it cannot move any group's offsets. */
#include "kafka/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kafka/kafka.h"
#include "log.h"

/* Never joined a group: nothing to leave, so the consumer close (which could wait for a
 * coordinator) is skipped. */
static void destroy_handle(rd_kafka_t **rk)
{
    if (*rk)
        rd_kafka_destroy_flags(*rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    *rk = NULL;
}

static void drop_reader(struct kafka_state *st)
{
    destroy_handle(&st->reader);
    for (size_t i = 0; i < st->reader_ntopics; i++)
        free(st->reader_topics[i]);
    free(st->reader_topics);
    st->reader_topics = NULL;
    st->reader_ntopics = 0;
    st->reader_parts = 0;
}

void kafka_client_drop(struct kafka_state *st)
{
    drop_reader(st);
    destroy_handle(&st->rk);
}

static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque)
{
    struct kafka_state *st = opaque;
    pthread_mutex_lock(&st->mu);
    /* A refused SASL handshake is followed by "all brokers are down": keep the cause. */
    if (st->last_err == RD_KAFKA_RESP_ERR_NO_ERROR ||
        kafka_err_code(st->last_err, st->last_errstr) != ERR_AUTH) {
        st->last_err = (rd_kafka_resp_err_t)code;
        snprintf(st->last_errstr, sizeof st->last_errstr, "%s", reason);
    }
    pthread_mutex_unlock(&st->mu);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    struct kafka_state *st = rd_kafka_opaque(rk);
    char lvl[8];
    snprintf(lvl, sizeof lvl, "%d", level);
    log_kv(LOG_DEBUG, "librdkafka", "source", st->source, "facility", fac, "syslog_level", lvl,
           "text", buf, NULL);
}

rd_kafka_resp_err_t kafka_client_last_error(struct kafka_state *st, char *text, size_t cap)
{
    pthread_mutex_lock(&st->mu);
    rd_kafka_resp_err_t code = st->last_err;
    snprintf(text, cap, "%s", st->last_errstr);
    pthread_mutex_unlock(&st->mu);
    return code;
}

void kafka_client_clear_error(struct kafka_state *st)
{
    pthread_mutex_lock(&st->mu);
    st->last_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    st->last_errstr[0] = '\0';
    pthread_mutex_unlock(&st->mu);
}

static rd_kafka_t *open_handle(struct kafka_state *st, struct err *e)
{
    const struct kafka_client_cbs cb = {.opaque = st, .error_cb = on_error, .log_cb = on_log};
    return kafka_settings_client(&st->cfg, RD_KAFKA_CONSUMER, NULL, &cb, e);
}

int kafka_client_open(struct kafka_state *st, struct err *e)
{
    st->rk = open_handle(st, e);
    return st->rk ? 0 : -1;
}

int kafka_client_reader_open(struct kafka_state *st, struct err *e)
{
    if (!st->reader)
        st->reader = open_handle(st, e);
    return st->reader ? 0 : -1;
}

void kafka_client_reader_topic(struct kafka_state *st, const char *topic, int partitions)
{
    for (size_t i = 0; i < st->reader_ntopics; i++)
        if (strcmp(st->reader_topics[i], topic) == 0)
            return;
    /* Past the bound the reader is dropped at the end of the scrape anyway: the names are only
     * needed to count the partitions of a reader that is kept. */
    st->reader_parts += partitions;
    if (st->reader_parts > KAFKA_READER_KEPT_PARTITIONS)
        return;
    st->reader_topics =
        xrealloc(st->reader_topics, (st->reader_ntopics + 1) * sizeof *st->reader_topics);
    st->reader_topics[st->reader_ntopics++] = xstrdup(topic);
}

void kafka_client_reader_settle(struct kafka_state *st)
{
    if (st->reader_parts > KAFKA_READER_KEPT_PARTITIONS)
        drop_reader(st);
}

/* Serves both handles' error callbacks (error_cb writes st->last_err). */
static void serve_errors(struct kafka_state *st)
{
    if (st->rk)
        rd_kafka_poll(st->rk, 0);
    if (st->reader)
        rd_kafka_poll(st->reader, 0);
}

/* The error of a failed call, with the broker error librdkafka reported meanwhile when that
 * says more (a refused connection or a failed SASL handshake shows up as a timeout of the call
 * itself). */
int kafka_client_call_error(struct kafka_state *st, const char *what, rd_kafka_resp_err_t code,
                            const char *text, struct err *e)
{
    char last[400];
    serve_errors(st);
    rd_kafka_resp_err_t lc = kafka_client_last_error(st, last, sizeof last);
    enum err_code ec = kafka_err_code(code, text);
    if (lc != RD_KAFKA_RESP_ERR_NO_ERROR &&
        (ec == ERR_TIMEOUT || code == RD_KAFKA_RESP_ERR__TRANSPORT)) {
        enum err_code lec = kafka_err_code(lc, last);
        if (lec != ERR_QUERY)
            ec = lec;
        return err_set(e, ec, "kafka: %s: %s (%s)", what, text ? text : rd_kafka_err2str(code),
                       last);
    }
    return err_set(e, ec, "kafka: %s: %s", what, text ? text : rd_kafka_err2str(code));
}

/* A broker error reported while we wait that will not go away by waiting longer. */
int kafka_client_fatal_pending(struct kafka_state *st, const char *what, struct err *e)
{
    char last[400];
    serve_errors(st);
    rd_kafka_resp_err_t lc = kafka_client_last_error(st, last, sizeof last);
    if (lc == RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    enum err_code ec = kafka_err_code(lc, last);
    if (lc == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || ec == ERR_AUTH || ec == ERR_LIMIT ||
        ec == ERR_PROTOCOL)
        return err_set(e, ec, "kafka: %s: %s", what, last);
    return 0;
}

int kafka_client_slice_ms(const struct deadline *dl, int max)
{
    int64_t left = deadline_remaining_ms(dl);
    return left < max ? (int)left : max;
}

int kafka_client_timed_out(struct kafka_state *st, const char *what, struct err *e)
{
    char last[400];
    serve_errors(st);
    rd_kafka_resp_err_t lc = kafka_client_last_error(st, last, sizeof last);
    if (lc != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* Waited in vain because no broker could be reached or we were refused: that is the
         * reason, not the wait. */
        enum err_code ec = kafka_err_code(lc, last);
        if (ec != ERR_CONNECT && ec != ERR_AUTH)
            ec = ERR_TIMEOUT;
        return err_set(e, ec, "kafka: %s: timed out (last broker error: %s)", what, last);
    }
    return err_set(e, ERR_TIMEOUT, "kafka: %s: timed out", what);
}

/* librdkafka 2.0.2 does not wake a broker's thread when a partition is assigned or resumed: a
 * thread with nothing to fetch sleeps up to 1 s, so each round would start fetching on that
 * tick. A ListOffsets to each leader of the round's partitions (the reply wakes its thread,
 * which then sees the assignment) starts the fetches at once. One partition per leader is
 * enough to wake it: asking for all of them made librdkafka match every partition of each reply
 * against the whole request, quadratic in the partitions (a third of a lag scrape's ListOffsets
 * work at 1,000 partitions). Its own errors are left to the fetch that follows, which reports
 * them with the partition. */
void kafka_client_wake(struct kafka_state *st, const struct deadline *dl,
                       const rd_kafka_topic_partition_list_t *round, const int32_t *leaders)
{
    int ms = kafka_client_slice_ms(dl, 1 << 30);
    if (ms <= 0 || round->cnt == 0)
        return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    int32_t *picked = xcalloc((size_t)round->cnt, sizeof *picked);
    int n = 0;
    for (int k = 0; k < round->cnt; k++) {
        int seen = 0; /* leaders are few: a pass over those picked so far */
        for (int j = 0; j < n && !seen; j++)
            seen = picked[j] == leaders[k];
        if (seen)
            continue;
        picked[n++] = leaders[k];
        rd_kafka_topic_partition_list_add(l, round->elems[k].topic, round->elems[k].partition)
            ->offset = RD_KAFKA_OFFSET_END;
    }
    (void)rd_kafka_offsets_for_times(st->reader, l, ms);
    rd_kafka_topic_partition_list_destroy(l);
    free(picked);
}

/* Waits for the next message of the assigned partitions, at most 100 ms at a time: 0 with *m
 * set (NULL when none came), or -1 on the deadline, a broker error that waiting will not cure,
 * or a fetch error. The end of a partition's log and an offset out of range (records deleted
 * since ListOffsets) are messages, not errors: they end that partition's read. */
int kafka_client_poll(struct kafka_state *st, const struct deadline *dl, rd_kafka_message_t **m,
                      struct err *e)
{
    *m = NULL;
    int ms = kafka_client_slice_ms(dl, 100);
    if (ms <= 0)
        return kafka_client_timed_out(st, "Fetch", e);
    rd_kafka_message_t *got = rd_kafka_consumer_poll(st->reader, ms);
    if (!got)
        return kafka_client_fatal_pending(st, "Fetch", e);
    if (got->err && got->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
        got->err != RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET &&
        got->err != RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
        char what[300];
        if (got->rkt)
            snprintf(what, sizeof what, "Fetch \"%s\" partition %d", rd_kafka_topic_name(got->rkt),
                     (int)got->partition);
        else
            snprintf(what, sizeof what, "Fetch");
        int rc = kafka_client_call_error(st, what, got->err, rd_kafka_message_errstr(got), e);
        rd_kafka_message_destroy(got);
        return rc;
    }
    *m = got;
    return 0;
}

/* Unassigns every partition and drops what the fetchers had read past the records wanted: the
 * rest of each fetch response stays queued for the consumer, outdated but holding the
 * response's whole buffer, until the next poll; the handle lives on between scrapes, so that
 * was 1 MB held at 1,000 lagging partitions (issue 14). The poll only discards (and frees)
 * them: an error it might return now belongs to no read. */
rd_kafka_resp_err_t kafka_client_unassign(struct kafka_state *st)
{
    rd_kafka_resp_err_t err = rd_kafka_assign(st->reader, NULL);
    rd_kafka_message_t *m;
    while ((m = rd_kafka_consumer_poll(st->reader, 0)))
        rd_kafka_message_destroy(m);
    return err;
}

void kafka_client_pause(struct kafka_state *st, const char *topic, int32_t partition)
{
    rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(one, topic, partition);
    rd_kafka_pause_partitions(st->reader, one);
    rd_kafka_topic_partition_list_destroy(one);
}
