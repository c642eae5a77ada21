/* kafka/scrape.c: the offsets a `kafka` source reads from the brokers (scrape.h): Metadata,
 * ListGroups, ListOffsets (latest and earliest, batched per leader broker by librdkafka) and one
 * OffsetFetch per group (ListConsumerGroupOffsets with the partitions named, which every broker
 * and librdkafka's mock support), each bounded by the caller's deadline. */
#include "kafka/scrape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kafka/kafka.h"
#include "alloc.h"

void kafka_scrape_free(struct kafka_scrape *sc)
{
    for (size_t i = 0; i < sc->ntopics; i++) {
        free(sc->topics[i].low);
        free(sc->topics[i].high);
    }
    free(sc->topics);
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->t[i].group);
        free(sc->t[i].dlq_name);
        free(sc->t[i].committed);
        free(sc->t[i].need);
    }
    free(sc->t);
    free(sc->needs);
    hashtab_free(&sc->need_index);
    if (sc->md)
        rd_kafka_metadata_destroy(sc->md);
}

size_t kafka_scrape_topic_find(const struct kafka_scrape *sc, const char *name)
{
    for (size_t i = 0; i < sc->ntopics; i++)
        if (sc->topics[i].md && strcmp(sc->topics[i].md->topic, name) == 0)
            return i;
    return SIZE_MAX;
}

int kafka_scrape_metadata(struct kafka_state *st, const struct deadline *dl,
                          struct kafka_scrape *sc, struct err *e)
{
    int64_t t0 = deadline_now_ms();
    for (;;) {
        int ms = kafka_client_slice_ms(dl, 250);
        if (ms <= 0)
            return kafka_client_timed_out(st, "Metadata", e);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t rc = rd_kafka_metadata(st->rk, 1, NULL, &md, ms);
        if (rc == RD_KAFKA_RESP_ERR_NO_ERROR) {
            sc->md = md;
            break;
        }
        if (kafka_client_fatal_pending(st, "Metadata", e))
            return -1;
        /* librdkafka does not always say "all brokers are down" again (it suppresses repeated
         * errors): a connect error and still no metadata after a second is the answer. */
        char last[400];
        rd_kafka_resp_err_t lc = kafka_client_last_error(st, last, sizeof last);
        if (lc && kafka_err_code(lc, last) == ERR_CONNECT && deadline_now_ms() - t0 >= 1000)
            return err_set(e, ERR_CONNECT, "kafka: Metadata: %s", last);
        if (rc != RD_KAFKA_RESP_ERR__TIMED_OUT && rc != RD_KAFKA_RESP_ERR__TRANSPORT)
            return kafka_client_call_error(st, "Metadata", rc, NULL, e);
    }
    sc->ntopics = (size_t)sc->md->topic_cnt;
    sc->topics = xcalloc(sc->ntopics ? sc->ntopics : 1, sizeof *sc->topics);
    for (size_t i = 0; i < sc->ntopics; i++) {
        const rd_kafka_metadata_topic_t *t = &sc->md->topics[i];
        /* A topic the broker lists with an error (being deleted, not authorised) has no usable
         * partitions: treated as absent. */
        sc->topics[i].md = t->err ? NULL : t;
    }
    return 0;
}

/* Group names matched by the patterns, from ListGroups (asked once, only when a pattern
 * exists). Brokers without ListGroups (librdkafka's mock) fail with a message that says to name
 * the groups instead. */
static int list_groups(struct kafka_state *st, const struct deadline *dl, char ***names, size_t *n,
                       struct err *e)
{
    *names = NULL;
    *n = 0;
    int ms = kafka_client_slice_ms(dl, 1 << 30);
    if (ms <= 0)
        return kafka_client_timed_out(st, "ListGroups", e);
    char errstr[256];
    rd_kafka_queue_t *q = rd_kafka_queue_new(st->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(st->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    rd_kafka_AdminOptions_set_request_timeout(o, ms, errstr, sizeof errstr);
    rd_kafka_ListConsumerGroups(st->rk, o, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ms + 100);
    int rc = -1;
    if (!ev) {
        kafka_client_timed_out(st, "ListGroups", e);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        kafka_client_call_error(st, "ListGroups", rd_kafka_event_error(ev),
                                rd_kafka_event_error_string(ev), e);
        goto out;
    }
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t nerr = 0, nvalid = 0;
    const rd_kafka_error_t **errs = rd_kafka_ListConsumerGroups_result_errors(res, &nerr);
    if (nerr) {
        rd_kafka_resp_err_t code = rd_kafka_error_code(errs[0]);
        if (code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE)
            err_set(e, ERR_QUERY,
                    "kafka: ListGroups: the broker does not support listing groups (%s), so a "
                    "group pattern cannot be resolved: list the groups by name",
                    rd_kafka_error_string(errs[0]));
        else
            kafka_client_call_error(st, "ListGroups", code, rd_kafka_error_string(errs[0]), e);
        goto out;
    }
    const rd_kafka_ConsumerGroupListing_t **valid =
        rd_kafka_ListConsumerGroups_result_valid(res, &nvalid);
    *names = xcalloc(nvalid + 1, sizeof **names);
    for (size_t i = 0; i < nvalid; i++)
        (*names)[(*n)++] = xstrdup(rd_kafka_ConsumerGroupListing_group_id(valid[i]));
    rc = 0;
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    return rc;
}

static int is_dlq_of_spec(const struct kafka_group_spec *sp, const struct kafka_scrape *sc,
                          const char *name)
{
    if (!sp->dlq_tmpl)
        return 0;
    for (size_t i = 0; i < sc->ntopics; i++) {
        const struct kafka_topic_data *td = &sc->topics[i];
        if (!td->md || strcmp(td->md->topic, name) == 0)
            continue;
        if (!sp->topics && !kafka_spec_topic_match(sp, td->md->topic))
            continue;
        char *d = kafka_dlq_name(sp->dlq_tmpl, td->md->topic);
        int same = strcmp(d, name) == 0;
        free(d);
        if (same)
            return 1;
    }
    return 0;
}

void kafka_scrape_add_target(struct kafka_scrape *sc, const struct kafka_group_spec *sp,
                             size_t spec, const char *group, size_t topic)
{
    sc->t = xrealloc(sc->t, (sc->n + 1) * sizeof *sc->t);
    struct kafka_target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->group = xstrdup(group);
    t->spec = spec;
    t->topic = topic;
    t->dlq = SIZE_MAX;
    sc->topics[topic].wanted = 1;
    int np = sc->topics[topic].md->partition_cnt;
    t->committed = xcalloc(np ? (size_t)np : 1, sizeof *t->committed);
    t->need = xcalloc(np ? (size_t)np : 1, sizeof *t->need);
    for (int p = 0; p < np; p++) {
        t->committed[p] = -1;
        t->need[p] = SIZE_MAX;
    }
    if (sp->dlq_tmpl) {
        t->dlq_name = kafka_dlq_name(sp->dlq_tmpl, sc->topics[topic].md->topic);
        t->dlq = kafka_scrape_topic_find(sc, t->dlq_name);
        if (t->dlq != SIZE_MAX)
            sc->topics[t->dlq].wanted = 1;
    }
}

static void add_group_targets(struct kafka_scrape *sc, const struct kafka_group_spec *sp,
                              size_t spec, const char *group)
{
    if (sp->topics) {
        for (size_t k = 0; k < sp->ntopics; k++) {
            size_t ti = kafka_scrape_topic_find(sc, sp->topics[k]);
            if (ti != SIZE_MAX)
                kafka_scrape_add_target(sc, sp, spec, group, ti);
        }
        return;
    }
    for (size_t ti = 0; ti < sc->ntopics; ti++) {
        const struct kafka_topic_data *td = &sc->topics[ti];
        /* Internal topics (__consumer_offsets, __transaction_state) are nobody's queue. */
        if (!td->md || strncmp(td->md->topic, "__", 2) == 0)
            continue;
        if (kafka_spec_topic_excluded(sp, td->md->topic))
            sc->topics[ti].excluded = 1;
        if (!kafka_spec_topic_match(sp, td->md->topic) || is_dlq_of_spec(sp, sc, td->md->topic))
            continue;
        kafka_scrape_add_target(sc, sp, spec, group, ti);
    }
}

int kafka_scrape_targets(struct kafka_state *st, const struct deadline *dl, struct kafka_scrape *sc,
                         struct err *e)
{
    char **listed = NULL;
    size_t nlisted = 0;
    int need_list = 0;
    for (size_t i = 0; i < st->cfg.nspecs; i++) {
        const struct kafka_group_spec *sp = &st->cfg.specs[i];
        need_list |= sp->name == NULL;
        sc->has_exclude |= exclude_any(&sp->exclude) || exclude_any(&sp->topic_exclude);
    }
    if (need_list && list_groups(st, dl, &listed, &nlisted, e))
        return -1;
    char *excluded = xcalloc(nlisted ? nlisted : 1, 1);
    for (size_t i = 0; i < st->cfg.nspecs; i++) {
        const struct kafka_group_spec *sp = &st->cfg.specs[i];
        if (sp->name) {
            add_group_targets(sc, sp, i, sp->name);
            continue;
        }
        for (size_t k = 0; k < nlisted; k++) {
            int dup = 0; /* a group a named entry (or an earlier pattern) already reports */
            for (size_t j = 0; j < sc->n && !dup; j++)
                dup = strcmp(sc->t[j].group, listed[k]) == 0;
            if (dup)
                continue;
            if (kafka_spec_group_match(sp, listed[k]))
                add_group_targets(sc, sp, i, listed[k]);
            else if (kafka_spec_group_excluded(sp, listed[k]))
                excluded[k] = 1;
        }
    }
    /* a group counts as excluded when an exclude left it out and no other entry reports it */
    for (size_t k = 0; k < nlisted; k++) {
        int reported = 0;
        for (size_t j = 0; j < sc->n && !reported && excluded[k]; j++)
            reported = strcmp(sc->t[j].group, listed[k]) == 0;
        sc->excluded_groups += excluded[k] && !reported;
    }
    free(excluded);
    cfg_strv_free(listed);
    return 0;
}

static int partition_index(const rd_kafka_metadata_topic_t *md, int32_t id)
{
    for (int p = 0; p < md->partition_cnt; p++)
        if (md->partitions[p].id == id)
            return p;
    return -1;
}

/* Where a partition of the ListOffsets request is in sc: each element's opaque points at its
 * slot, so a reply is placed without a pass over the topics by name and over the partitions
 * (which cost partitions * topics name comparisons). */
struct wm_slot {
    size_t topic; /* index into sc->topics */
    int p;        /* index into its metadata's partitions */
};

/* The topic of tp in sc with *p its partition's index; NULL when it is none of them. The slot
 * is checked against the name and the id, and looked up by them if librdkafka did not keep it. */
static struct kafka_topic_data *wm_partition(struct kafka_scrape *sc,
                                             const rd_kafka_topic_partition_t *tp, int *p)
{
    const struct wm_slot *slot = tp->opaque;
    if (slot) {
        struct kafka_topic_data *td = &sc->topics[slot->topic];
        if (td->md->partitions[slot->p].id == tp->partition &&
            strcmp(td->md->topic, tp->topic) == 0) {
            *p = slot->p;
            return td;
        }
    }
    size_t ti = kafka_scrape_topic_find(sc, tp->topic);
    if (ti == SIZE_MAX)
        return NULL;
    *p = partition_index(sc->topics[ti].md, tp->partition);
    return *p >= 0 ? &sc->topics[ti] : NULL;
}

/* Latest and earliest offsets of every wanted partition: ListOffsets, which librdkafka sends
 * once per leader broker for each of the two. */
int kafka_scrape_watermarks(struct kafka_state *st, const struct deadline *dl,
                            struct kafka_scrape *sc, struct err *e)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    size_t nslots = 0;
    for (size_t i = 0; i < sc->ntopics; i++)
        if (sc->topics[i].wanted)
            nslots += (size_t)sc->topics[i].md->partition_cnt;
    struct wm_slot *slots = xcalloc(nslots, sizeof *slots);
    nslots = 0;
    for (size_t i = 0; i < sc->ntopics; i++) {
        struct kafka_topic_data *td = &sc->topics[i];
        if (!td->wanted)
            continue;
        int np = td->md->partition_cnt;
        td->low = xcalloc(np ? (size_t)np : 1, sizeof *td->low);
        td->high = xcalloc(np ? (size_t)np : 1, sizeof *td->high);
        for (int p = 0; p < np; p++, nslots++) {
            slots[nslots].topic = i;
            slots[nslots].p = p;
            rd_kafka_topic_partition_list_add(l, td->md->topic, td->md->partitions[p].id)->opaque =
                &slots[nslots];
        }
    }
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0 && l->cnt; pass++) {
        int64_t which = pass == 0 ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
        for (int k = 0; k < l->cnt; k++)
            l->elems[k].offset = which;
        int ms = kafka_client_slice_ms(dl, 1 << 30);
        if (ms <= 0) {
            rc = kafka_client_timed_out(st, "ListOffsets", e);
            break;
        }
        rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(st->rk, l, ms);
        if (err) {
            rc = err == RD_KAFKA_RESP_ERR__TIMED_OUT
                     ? kafka_client_timed_out(st, "ListOffsets", e)
                     : kafka_client_call_error(st, "ListOffsets", err, NULL, e);
            break;
        }
        for (int k = 0; k < l->cnt && rc == 0; k++) {
            const rd_kafka_topic_partition_t *tp = &l->elems[k];
            if (tp->err) {
                char what[300];
                snprintf(what, sizeof what, "ListOffsets \"%s\" partition %d", tp->topic,
                         (int)tp->partition);
                rc = kafka_client_call_error(st, what, tp->err, NULL, e);
                break;
            }
            int p;
            struct kafka_topic_data *td = wm_partition(sc, tp, &p);
            if (td)
                (pass == 0 ? td->high : td->low)[p] = tp->offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    free(slots);
    return rc;
}

/* Committed offsets: one ListConsumerGroupOffsets (OffsetFetch) per group, with its partitions
 * named, all in flight at once. */
int kafka_scrape_committed(struct kafka_state *st, const struct deadline *dl,
                           struct kafka_scrape *sc, struct err *e)
{
    if (sc->n == 0)
        return 0;
    rd_kafka_queue_t *q = rd_kafka_queue_new(st->rk);
    size_t inflight = 0, *mine = xcalloc(sc->n, sizeof *mine);
    int rc = 0;
    char errstr[256];
    int ms = kafka_client_slice_ms(dl, 1 << 30);
    if (ms <= 0) {
        rd_kafka_queue_destroy(q);
        free(mine);
        return kafka_client_timed_out(st, "OffsetFetch", e);
    }
    for (size_t i = 0; i < sc->n; i++) {
        int first = 1; /* the first target of its group sends the request for all of them */
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(sc->t[j].group, sc->t[i].group) != 0;
        if (!first)
            continue;
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
        for (size_t j = i; j < sc->n; j++) {
            if (strcmp(sc->t[j].group, sc->t[i].group))
                continue;
            const rd_kafka_metadata_topic_t *md = sc->topics[sc->t[j].topic].md;
            for (int p = 0; p < md->partition_cnt; p++)
                if (!rd_kafka_topic_partition_list_find(l, md->topic, md->partitions[p].id))
                    rd_kafka_topic_partition_list_add(l, md->topic, md->partitions[p].id);
        }
        rd_kafka_ListConsumerGroupOffsets_t *req =
            rd_kafka_ListConsumerGroupOffsets_new(sc->t[i].group, l);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_AdminOptions_t *o =
            rd_kafka_AdminOptions_new(st->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
        rd_kafka_AdminOptions_set_request_timeout(o, ms, errstr, sizeof errstr);
        rd_kafka_ListConsumerGroupOffsets(st->rk, &req, 1, o, q);
        rd_kafka_ListConsumerGroupOffsets_destroy(req);
        rd_kafka_AdminOptions_destroy(o);
        inflight++;
    }
    while (inflight && rc == 0) {
        int wait = kafka_client_slice_ms(dl, 1 << 30);
        rd_kafka_event_t *ev = wait > 0 ? rd_kafka_queue_poll(q, wait) : NULL;
        if (!ev) {
            rc = kafka_client_timed_out(st, "OffsetFetch", e);
            break;
        }
        inflight--;
        if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT) {
            rd_kafka_event_destroy(ev);
            inflight++;
            continue;
        }
        if (rd_kafka_event_error(ev)) {
            rc = kafka_client_call_error(st, "OffsetFetch", rd_kafka_event_error(ev),
                                         rd_kafka_event_error_string(ev), e);
            rd_kafka_event_destroy(ev);
            break;
        }
        size_t ng = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &ng);
        for (size_t g = 0; g < ng && rc == 0; g++) {
            const char *gname = rd_kafka_group_result_name(gr[g]);
            const rd_kafka_error_t *ge = rd_kafka_group_result_error(gr[g]);
            char what[300];
            snprintf(what, sizeof what, "OffsetFetch group \"%s\"", gname);
            if (ge) {
                rc = kafka_client_call_error(st, what, rd_kafka_error_code(ge),
                                             rd_kafka_error_string(ge), e);
                break;
            }
            const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(gr[g]);
            /* The group's targets, found once: a pass over every target for each partition of
             * the reply made the replies cost partitions * targets name comparisons. */
            size_t nmine = 0;
            for (size_t j = 0; j < sc->n; j++)
                if (strcmp(sc->t[j].group, gname) == 0)
                    mine[nmine++] = j;
            for (int k = 0; pl && k < pl->cnt && rc == 0; k++) {
                const rd_kafka_topic_partition_t *tp = &pl->elems[k];
                if (tp->err) {
                    rc = kafka_client_call_error(st, what, tp->err, NULL, e);
                    break;
                }
                for (size_t j = 0; j < nmine; j++) {
                    struct kafka_target *t = &sc->t[mine[j]];
                    const rd_kafka_metadata_topic_t *md = sc->topics[t->topic].md;
                    if (strcmp(md->topic, tp->topic))
                        continue;
                    int p = partition_index(md, tp->partition);
                    if (p >= 0)
                        t->committed[p] = tp->offset < 0 ? -1 : tp->offset;
                }
            }
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    free(mine);
    return rc;
}
