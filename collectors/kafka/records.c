/* kafka/records.c: the records of a dead-letter topic, read at offsets (records.h). The
 * consumer is the reader the lag scrape uses (client.c): assigned partitions directly, never in a
 * group, never committing; a partition's read ends at its last planned offset or at the end of
 * its log, whichever comes first. */
#include "kafka/records.h"

#include <stdlib.h>
#include <string.h>

#include "kafka/kafka.h"
#include "alloc.h"

/* One partition of the dead-letter topic: the offsets to read. */
struct dl_part {
    int32_t id;
    int64_t from, until;
    int done;
};

/* The last value of header name on m (NULL: absent or null). */
const void *kafka_records_header(const rd_kafka_message_t *m, const char *name, size_t *size)
{
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    *size = 0;
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(h, name, &v, size) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return NULL;
    return v;
}

/* The id m carries at id_field (a header or a JSON key of its value), malloc'd into *id with its
 * length; *id = NULL when it carries none. */
void kafka_records_id(const rd_kafka_message_t *m, const char *id_field, char **id, size_t *len)
{
    const char *header = kafka_id_field_header(id_field);
    if (!header) {
        kafka_json_id(m->payload, m->len, id_field, id, len);
        return;
    }
    const void *v = kafka_records_header(m, header, len);
    *id = v ? xstrndup(v, *len) : NULL;
}

/* Reads the records of every partition from from[p] (NULL: its log start) up to the high
 * watermark, max in all, passing each to fn; each partition is paused once its last planned
 * offset (or the end of the log) is seen. *total grows by the records in those ranges. */
int kafka_records_read(struct kafka_state *st, const struct deadline *dl,
                       const struct kafka_topic_data *td, const int64_t *from, size_t max,
                       size_t *total, kafka_records_fn fn, void *arg, struct err *e)
{
    int np = td->md->partition_cnt;
    struct dl_part *parts = xcalloc(np ? (size_t)np : 1, sizeof *parts);
    int32_t *leaders = xcalloc(np ? (size_t)np : 1, sizeof *leaders);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np ? np : 1);
    size_t n = 0, budget = max;
    for (int p = 0; p < np; p++) {
        int64_t start = from ? from[p] : td->low[p];
        if (td->high[p] <= start)
            continue;
        uint64_t size = (uint64_t)(td->high[p] - start);
        *total += (size_t)size;
        if (budget == 0)
            continue;
        uint64_t take = size < budget ? size : budget;
        budget -= (size_t)take;
        parts[n].id = td->md->partitions[p].id;
        parts[n].from = start;
        parts[n].until = start + (int64_t)take - 1;
        leaders[n] = td->md->partitions[p].leader;
        rd_kafka_topic_partition_list_add(l, td->md->topic, parts[n].id)->offset = start;
        n++;
    }
    int rc = 0;
    if (n == 0)
        goto out;
    if (kafka_client_reader_open(st, e)) {
        rc = -1;
        goto out;
    }
    kafka_client_reader_topic(st, td->md->topic, np);
    rd_kafka_resp_err_t err = rd_kafka_assign(st->reader, l);
    if (!err)
        err = rd_kafka_resume_partitions(st->reader, l);
    if (err) {
        rc = kafka_client_call_error(st, "assign", err, NULL, e);
        goto out;
    }
    kafka_client_wake(st, dl, l, leaders);
    size_t left = n;
    while (left && rc == 0) {
        rd_kafka_message_t *m = NULL;
        if ((rc = kafka_client_poll(st, dl, &m, e)) != 0 || !m)
            continue;
        struct dl_part *dp = NULL;
        if (m->rkt && strcmp(rd_kafka_topic_name(m->rkt), td->md->topic) == 0)
            for (size_t i = 0; i < n && !dp; i++)
                if (parts[i].id == m->partition)
                    dp = &parts[i];
        if (dp && !dp->done) {
            if (!m->err && m->offset >= dp->from && m->offset <= dp->until)
                fn(m, arg);
            /* The end of the log (transaction markers, records deleted since ListOffsets) ends
             * the partition's read as its last planned offset does. */
            if (m->err || m->offset >= dp->until) {
                dp->done = 1;
                left--;
                kafka_client_pause(st, td->md->topic, m->partition);
            }
        }
        rd_kafka_message_destroy(m);
    }
    err = kafka_client_unassign(st);
    if (rc == 0 && err)
        rc = kafka_client_call_error(st, "unassign", err, NULL, e);
    if (rc == 0)
        kafka_client_reader_settle(st);
out:
    rd_kafka_topic_partition_list_destroy(l);
    free(parts);
    free(leaders);
    return rc;
}

/* The metadata and watermarks of dead-letter topic name into sc, for dead_letter_ids and
 * dlq_read: 0 with *ti its index, SIZE_MAX when the topic does not exist (not created yet:
 * nothing was dead-lettered). The handle is opened when needed; *inner is dl stopped a little
 * before the core's, so a timeout says what was waited for. */
int kafka_records_topic(struct kafka_state *st, const struct deadline *dl, struct deadline *inner,
                        const char *name, struct kafka_scrape *sc, size_t *ti, struct err *e)
{
    *inner = *dl;
    if (deadline_remaining_ms(dl) > 1000)
        inner->at_ms -= 150;
    *ti = SIZE_MAX;
    kafka_client_clear_error(st);
    if ((!st->rk && kafka_client_open(st, e)) || kafka_scrape_metadata(st, inner, sc, e))
        return -1;
    *ti = kafka_scrape_topic_find(sc, name);
    if (*ti == SIZE_MAX)
        return 0;
    sc->topics[*ti].wanted = 1;
    return kafka_scrape_watermarks(st, inner, sc, e);
}
