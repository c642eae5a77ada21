/* redis_stream/output.c: the series of one scrape (scrape.h), from the values parse.c computed.
 * metric_set_add's result is not checked: a failed add is a programming error the set
 * remembers, and the scheduler fails the collection with it (collector.h). */
#include "scrape.h"

void redis_stream_emit_group(struct metric_set *out, const char *q, const char *g,
                             const struct redis_stream_group_values *v)
{
    if (v->has_ready)
        metric_set_add(out, "qrel_queue_messages", v->ready, "queue", q, "group", g, "state",
                       "ready", NULL);
    metric_set_add(out, "qrel_queue_messages", v->in_flight, "queue", q, "group", g, "state",
                   "in_flight", NULL);
    if (v->has_consumer_lag)
        metric_set_add(out, "qrel_consumer_lag_seconds", v->consumer_lag_seconds, "queue", q,
                       "group", g, NULL);
    if (v->has_oldest_message_age)
        metric_set_add(out, "qrel_queue_oldest_message_age_seconds", v->oldest_message_age_seconds,
                       "queue", q, "group", g, NULL);
    if (v->has_lease_timeout)
        metric_set_add(out, "qrel_lease_timeout_seconds", v->lease_timeout_seconds, "queue", q,
                       "group", g, NULL);
    metric_set_add(out, "qrel_lease_oldest_age_seconds", v->lease_oldest_age_seconds, "queue", q,
                   "group", g, NULL);
    if (v->has_lease_margin)
        metric_set_add(out, "qrel_lease_margin_ratio", v->lease_margin_ratio, "queue", q, "group",
                       g, NULL);
    if (v->has_max_deliveries)
        metric_set_add(out, "qrel_max_deliveries", v->max_deliveries, "queue", q, "group", g, NULL);
    if (v->has_retry_horizon)
        metric_set_add(out, "qrel_retry_horizon_seconds", v->retry_horizon_seconds, "queue", q,
                       "group", g, NULL);
    metric_set_add(out, "qrel_messages_redelivered", v->messages_redelivered, "queue", q, "group",
                   g, NULL);
    if (v->has_consumed)
        metric_set_add(out, "qrel_messages_consumed_total", v->consumed, "queue", q, "group", g,
                       NULL);
}

void redis_stream_emit_dlq(struct metric_set *out, const struct target *t, const struct dlq *d,
                           int64_t now_ms, struct entry_skips *skips)
{
    metric_set_add(out, "qrel_dead_letter_messages", (double)d->len, "queue", t->name,
                   "dead_letter_queue", t->dlq, NULL);
    /* An id that gives no age leaves that age out. The refused entry is counted on the
     * dead-letter stream that holds it, once: by the first stream naming it (dlq_owner), and
     * once when the oldest entry is also the newest. */
    double age;
    int first_ok = d->found && redis_stream_entry_age(now_ms, d->first.ms, &age) == 0;
    if (first_ok)
        metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", age, "queue", t->name,
                       "dead_letter_queue", t->dlq, NULL);
    int last_ok = d->found_last && redis_stream_entry_age(now_ms, d->last.ms, &age) == 0;
    if (last_ok)
        metric_set_add(out, "qrel_dead_letter_newest_age_seconds", age, "queue", t->name,
                       "dead_letter_queue", t->dlq, NULL);
    if (!t->dlq_owner)
        return;
    int same =
        d->found && d->found_last && d->first.ms == d->last.ms && d->first.seq == d->last.seq;
    if (d->found && !first_ok)
        entry_skips_add(skips, t->dlq, ENTRY_BAD_TIMESTAMP);
    if (d->found_last && !last_ok && !same)
        entry_skips_add(skips, t->dlq, ENTRY_BAD_TIMESTAMP);
}

void redis_stream_emit_truncated(struct metric_set *out, size_t groups)
{
    metric_set_add(out, "qrel_pending_scan_truncated_groups", (double)groups, NULL);
}

void redis_stream_emit_excluded(struct metric_set *out, const struct state *st,
                                const struct scrape *sc)
{
    int any = 0;
    for (size_t i = 0; i < st->nspecs && !any; i++)
        any = exclude_any(&st->specs[i].exclude);
    if (!any)
        return;
    metric_set_add(out, "qrel_excluded_objects", (double)sc->excluded, "object", "stream", NULL);
}
