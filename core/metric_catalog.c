/* metric_catalog.c: the metric catalogue (metrics.h), the project's public API: every name, type
 * and HELP text a user can see, as one sorted static array, so that lookups are a binary search
 * and the exposition writer can emit families in name order by walking it; and the rules for
 * names that families defined elsewhere (a postgres source's queries) and labels must follow.
 * A new family is one row here and one in docs/metrics.md (tests/artifacts/metric_docs.sh
 * compares them). The storage of samples is metrics.c. */
#include "metric_catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Sorted by name (strcmp order): metric_catalog_find relies on it and check_metrics verifies it.
 * HELP says what the value is, in which unit, and what to do about it; the labels source and kind
 * are on every collector series and are documented once in docs/metrics.md. */
const struct metric_family metric_catalog_rows[] = {
    /* The process families of the Prometheus client libraries, same names and meanings: served
     * by the exporter on /metrics, about the exporter's own process (not a probed target). */
    {"process_cpu_seconds_total", METRIC_COUNTER,
     "User and system CPU time the exporter's process has used, in seconds."},
    {"process_max_fds", METRIC_GAUGE,
     "The most file descriptors the exporter's process may open (its soft RLIMIT_NOFILE)."},
    {"process_open_fds", METRIC_GAUGE,
     "File descriptors the exporter's process has open; each source's connection holds one."},
    {"process_resident_memory_bytes", METRIC_GAUGE,
     "Resident memory of the exporter's process in bytes; steady growth across scrapes of an "
     "unchanged configuration is a leak worth a bug report."},
    {"process_start_time_seconds", METRIC_GAUGE,
     "Unix time in seconds when the exporter's process started."},
    {"process_virtual_memory_bytes", METRIC_GAUGE,
     "Virtual memory size of the exporter's process in bytes."},
    {"qrel_audit_failed", METRIC_GAUGE,
     "1 for each reliability rule (label rule, with its severity) that the current configuration "
     "of queue breaks; the series disappears once the configuration is fixed. Only the worst "
     "queues of each rule and source have one: qrel_audit_failed_queues counts them all."},
    {"qrel_audit_failed_queues", METRIC_GAUGE,
     "How many queues (or consumer groups) of source and kind break the reliability rule (label "
     "rule, with its severity); the series disappears once none does."},
    {"qrel_build_info", METRIC_GAUGE,
     "Always 1; the version and revision labels identify the qrel build that is running."},
    {"qrel_claim_in_flight_window_seconds", METRIC_GAUGE,
     "Seconds a claim of the claim table queue counts as in flight (a later delivery defers to "
     "it); a crashed attempt is taken over only by a delivery after that, which the "
     "claim_window_too_short audit rule checks against the lease and the deliveries allowed."},
    {"qrel_claims", METRIC_GAUGE,
     "Rows of the claim table queue by state: in_flight (claimed, not done, younger than the "
     "in-flight window), stale (older, the attempt is presumed dead) or done."},
    {"qrel_collector_duration_seconds", METRIC_GAUGE,
     "Seconds the last collection of this source took; compare with the source's timeout."},
    {"qrel_collector_errors_total", METRIC_COUNTER,
     "Failed collections of this source since the exporter started, by reason (config, connect, "
     "timeout, auth, protocol, query, limit, internal); the log has the details."},
    {"qrel_collector_last_success_timestamp_seconds", METRIC_GAUGE,
     "Unix time in seconds of the last successful collection of this source."},
    {"qrel_collector_up", METRIC_GAUGE,
     "1 if the last collection of this source succeeded, 0 if it failed (see "
     "qrel_collector_errors_total and the log for why)."},
    {"qrel_config_last_reload_success_timestamp_seconds", METRIC_GAUGE,
     "Unix time in seconds of the last successful load of the configuration file."},
    {"qrel_config_last_reload_successful", METRIC_GAUGE,
     "1 if the last load of the configuration file succeeded, 0 if it failed (the log says why)."},
    {"qrel_consumer_lag_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest entry of queue not yet consumed by group (0 when it has caught "
     "up): how far behind the group is, in time."},
    {"qrel_dead_letter_classified_messages", METRIC_GAUGE,
     "Messages in dead_letter_queue (fed by queue) by whether the linked dedup or claim table "
     "records their work: done (a replay repeats work), not_done or unknown."},
    {"qrel_dead_letter_classify_errors_total", METRIC_COUNTER,
     "Failed classifications of the dead letters of queue (the dead_letters: join) since the "
     "exporter started, by reason; the queue's classified series are absent while it fails."},
    {"qrel_dead_letter_messages", METRIC_GAUGE,
     "Messages in dead_letter_queue, the dead-letter queue of queue: deliveries the broker gave up "
     "on, which need an owner to inspect and replay or drop them."},
    {"qrel_dead_letter_newest_age_seconds", METRIC_GAUGE,
     "Age in seconds of the newest message in dead_letter_queue, the dead-letter queue of queue: "
     "how long ago something was last dead-lettered. Kafka dead-letter topics do not shrink when "
     "read, so their size cannot tell whether dead-lettering goes on; this can."},
    {"qrel_dead_letter_oldest_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest message in dead_letter_queue, the dead-letter queue of queue."},
    {"qrel_dead_letter_replayed_messages", METRIC_GAUGE,
     "Dead letters of dead_letter_queue (fed by queue) by their replay stamp: never replayed by "
     "qrel dlq, replayed once and dead again, or poison (replayed twice or more, dead again each "
     "time: replaying it again is unlikely to help)."},
    {"qrel_dead_letter_retention_seconds", METRIC_GAUGE,
     "Seconds dead_letter_queue, the dead-letter queue of queue, keeps a message before the broker "
     "deletes it (+Inf: no limit). At or below qrel_queue_retention_seconds plus "
     "qrel_retry_horizon_seconds of queue, dead letters can expire before anyone reads them (SQS: "
     "a standard queue's dead letter keeps its original enqueue time); qrel check warns."},
    {"qrel_dead_letters_not_kept", METRIC_GAUGE,
     "1 when the runner of queue deletes the jobs that fail for good instead of keeping them as "
     "dead letters (declared, or seen: none kept while some are one failure from the end), else "
     "0: what they were and why they failed is lost, and none can be replayed."},
    {"qrel_dedup_duplicates_total", METRIC_COUNTER,
     "Deliveries that the dedup table of queue refused as already handled, where the table "
     "records them: each one is a duplicate the broker made."},
    {"qrel_dedup_handled_messages", METRIC_GAUGE,
     "Messages the dedup table of queue recorded as handled within its window."},
    {"qrel_dedup_window_seconds", METRIC_GAUGE,
     "Seconds a dedup key of queue is remembered (table retention, SQS FIFO 5 minutes, NATS "
     "duplicate window); it must exceed qrel_retry_horizon_seconds."},
    {"qrel_excluded_objects", METRIC_GAUGE,
     "Objects of the kind named by label object (queue, vhost, topic, group, stream, ...) that "
     "the last collection found and left out by the source's exclude keys: neither read nor "
     "exported."},
    {"qrel_future_stamped_rows", METRIC_GAUGE,
     "Rows of the table queue (jobs, for a job runner) whose timestamp lies more than a second "
     "after the database's now(): the clocks of the hosts that write them run ahead. They are in "
     "no window of the other "
     "series; any above 0 means the writers' clocks need fixing. Counted up to 1000 per table."},
    {"qrel_handler_duration_seconds", METRIC_SUMMARY,
     "Handler time in seconds for queue at the given quantile (0.5, 0.9, 0.99, 1) over the "
     "configured window, from the start and finish times a table records."},
    {"qrel_handler_timeout_seconds", METRIC_GAUGE,
     "Seconds a worker lets one handler of queue run before it kills it (the worker's timeout or "
     "the job's own); at or above qrel_lease_timeout_seconds a slow job is delivered again while "
     "it still runs."},
    {"qrel_http_requests_total", METRIC_COUNTER,
     "HTTP requests the exporter answered since it started, by handler (the route, or other for "
     "an unknown path) and status code: 503 is a scrape shed under load, 401 a refused login."},
    {"qrel_lease_eta_beyond_messages", METRIC_GAUGE,
     "Messages of queue delivered and held unacknowledged until an ETA or countdown that lies "
     "beyond the lease (Celery's visibility timeout): each is delivered again every lease while "
     "it waits, and runs once per delivery."},
    {"qrel_lease_expired_messages", METRIC_GAUGE,
     "Messages of queue still held in flight whose lease has already run out: their handler "
     "still runs (or its worker died), and the next consumer to poll takes them again."},
    {"qrel_lease_expiries_total", METRIC_COUNTER,
     "Lease expiries on queue counted by the broker (visibility timeout, ack deadline or TTR ran "
     "out): each one redelivers a message whose handler may still be running."},
    {"qrel_lease_margin_ratio", METRIC_GAUGE,
     "Lease timeout of queue divided by the longer of the handler p99 (where known) and the oldest "
     "current hold; below 1, leases expire under running handlers and duplicates are being made."},
    {"qrel_lease_oldest_age_seconds", METRIC_GAUGE,
     "Seconds the longest-held in-flight message of queue has been held right now; past "
     "qrel_lease_timeout_seconds it can be delivered again while its handler still runs."},
    {"qrel_lease_orphaned_messages", METRIC_GAUGE,
     "Messages of queue held by a consumer that stopped sending heartbeats, where no lease gives "
     "them back (Sidekiq without super_fetch): lost unless someone enqueues them again."},
    {"qrel_lease_timeout_seconds", METRIC_GAUGE,
     "Lease in seconds (visibility timeout, ack deadline, claim min-idle, ...) after which an "
     "unacknowledged message of queue is delivered again, from the broker or the config file."},
    {"qrel_max_deliveries", METRIC_GAUGE,
     "Deliveries of one message of queue the broker allows before it dead-letters the message."},
    {"qrel_messages_consumed_total", METRIC_COUNTER,
     "Messages of queue (per consumer group where the kind has groups) that consumers "
     "acknowledged or completed, as the broker or framework counts them (cumulative; resets "
     "when its counter does). Its rate is the throughput that drains the backlog."},
    {"qrel_messages_dead_lettered_total", METRIC_COUNTER,
     "Messages of queue that the broker or framework gave up on and dead-lettered (or kept as "
     "failed for good), as it counts them (cumulative; resets when its counter does)."},
    {"qrel_messages_redelivered", METRIC_GAUGE,
     "Messages of queue now pending that have been delivered more than once: evidence that "
     "leases expired or handlers failed."},
    {"qrel_outbox_oldest_pending_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest unpublished row of the outbox table queue; growth means the "
     "relay is stuck."},
    {"qrel_outbox_pending_messages", METRIC_GAUGE,
     "Rows of the outbox table queue that the relay has not published yet."},
    {"qrel_pending_scan_truncated_groups", METRIC_GAUGE,
     "Consumer groups of source with more pending entries than its pending_scan_limit: their "
     "qrel_messages_redelivered and qrel_lease_oldest_age_seconds count only the oldest "
     "pending_scan_limit entries; raise the limit to read them all."},
    {"qrel_queue_consumers", METRIC_GAUGE,
     "Consumers the broker counts on queue (per consumer group where the kind has groups) now, "
     "or active within the kind's window; 0 with ready messages is a backlog nobody takes "
     "(qrel check's backlog_without_consumer). Absent where the broker cannot tell."},
    {"qrel_queue_info", METRIC_GAUGE,
     "Always 1; the labels state delivery settings of queue that are not numbers: "
     "dead_letter_queue (empty when none), exactly_once and ordered (true or false)."},
    {"qrel_queue_messages", METRIC_GAUGE,
     "Messages in queue (per consumer group where the kind has groups) by state: ready, in_flight "
     "(delivered, not acknowledged) or delayed (scheduled or waiting to retry)."},
    {"qrel_queue_oldest_message_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest message of queue not yet acknowledged."},
    {"qrel_queue_retention_seconds", METRIC_GAUGE,
     "Seconds queue keeps a message before the broker deletes it unread (+Inf: no limit)."},
    {"qrel_redeliveries_total", METRIC_COUNTER,
     "Redeliveries of messages of queue as counted by the broker (cumulative, resets when the "
     "broker's counter does)."},
    {"qrel_retry_horizon_seconds", METRIC_GAUGE,
     "Seconds from a message's first delivery to the last retry the broker will make (max "
     "deliveries times the lease, plus backoff); the dedup window must be longer."},
    {"qrel_sample_age_seconds", METRIC_GAUGE,
     "Age in seconds of the data behind this source's values (cache age, cloud metric delay)."},
    {"qrel_skipped_entries", METRIC_GAUGE,
     "Entries of queue (empty when the entry names none) that the last collection could not read "
     "and passed over, by reason (not_json, missing_field, bad_value, bad_timestamp, too_deep): "
     "the source's other series are still served, without these entries."},
    {"qrel_source_queues", METRIC_GAUGE,
     "Queues (streams, topics, tubes, tables: distinct queue label values) that the last "
     "successful collection of this source found and exported; 0 means its discovery, pattern or "
     "exclude matched nothing and every queue alert on it stays silent (qrel check warns)."},
};

#define CATALOG_LEN (sizeof metric_catalog_rows / sizeof metric_catalog_rows[0])

const size_t metric_catalog_len = CATALOG_LEN;

_Static_assert(CATALOG_LEN < UINT16_MAX, "a metric set keeps family indexes in uint16");

const struct metric_family *metric_catalog_find(const char *name)
{
    if (!name)
        return NULL;
    size_t lo = 0, hi = CATALOG_LEN;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, metric_catalog_rows[mid].name);
        if (c == 0)
            return &metric_catalog_rows[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

size_t metric_catalog_count(void)
{
    return CATALOG_LEN;
}

const struct metric_family *metric_catalog_at(size_t i)
{
    return i < CATALOG_LEN ? &metric_catalog_rows[i] : NULL;
}

/* ASCII only on purpose: isalpha() depends on the locale, label names must not. */
static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

int metric_label_name_valid(const char *name)
{
    if (!name || !is_name_start(name[0]))
        return 0;
    if (name[0] == '_' && name[1] == '_')
        return 0; /* reserved for Prometheus' internal labels */
    for (const char *p = name + 1; *p; p++) {
        if (!is_name_start(*p) && !(*p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

/* Family names: [a-zA-Z_:][a-zA-Z0-9_:]* (colons are allowed by Prometheus, meant for recording
 * rules, and harmless here). */
static int is_family_name(const char *name)
{
    if (!name || !(is_name_start(name[0]) || name[0] == ':'))
        return 0;
    for (const char *p = name + 1; *p; p++) {
        if (!is_name_start(*p) && *p != ':' && !(*p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int metric_family_validate(const char *name, enum metric_type type, const char *help, char *why,
                           size_t cap)
{
    const char *msg = NULL;
    if (!name || !*name)
        msg = "the name is empty";
    else if (!is_family_name(name))
        msg = "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*";
    else if (metric_catalog_find(name))
        msg = "the name is taken by one of qrel's own families";
    else if (strncmp(name, "qrel_", 5) == 0)
        msg = "names starting with qrel_ are reserved for qrel's own families";
    else if (type != METRIC_GAUGE && type != METRIC_COUNTER)
        msg = "the type must be gauge or counter";
    else if (type == METRIC_COUNTER && (!ends_with(name, "_total") || strlen(name) == 6))
        msg = "a counter's name must end in _total";
    else if (type != METRIC_COUNTER && ends_with(name, "_total"))
        msg = "a gauge's name must not end in _total (the suffix marks counters)";
    else if (!help || !*help)
        msg = "the help text is empty";
    if (!msg)
        return 0;
    if (why && cap)
        snprintf(why, cap, "%s", msg);
    return -1;
}
