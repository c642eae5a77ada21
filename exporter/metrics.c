/* metrics.c: the metric catalogue and the metric set (see metrics.h).
 *
 * The catalogue below is the project's public API: every name, type and HELP text a user can see.
 * It is one sorted static array so that lookups are a binary search and the exposition writer can
 * emit families in name order by walking it. A set may hold hundreds of thousands of samples (a
 * Redis with many streams and groups), so each sample keeps its labels and all their strings in a
 * single allocation, and the sample array grows geometrically. */
#include "metrics.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Sorted by name (strcmp order): metric_catalog_find relies on it and check_metrics verifies it.
 * HELP says what the value is, in which unit, and what to do about it; the labels source and kind
 * are on every collector series and are documented once in docs/metrics.md. */
static const struct metric_family catalog[] = {
    {"qrel_audit_failed", METRIC_GAUGE,
     "1 for each reliability rule (label rule, with its severity) that the current configuration "
     "of queue breaks; the series disappears once the configuration is fixed."},
    {"qrel_build_info", METRIC_GAUGE,
     "Always 1; the version and revision labels identify the qrel build that is running."},
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
    {"qrel_dead_letter_messages", METRIC_GAUGE,
     "Messages in dead_letter_queue, the dead-letter queue of queue: deliveries the broker gave up "
     "on, which need an owner to inspect and replay or drop them."},
    {"qrel_dead_letter_oldest_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest message in dead_letter_queue, the dead-letter queue of queue."},
    {"qrel_dedup_duplicates_total", METRIC_COUNTER,
     "Deliveries that the dedup table of queue refused as already handled, where the table "
     "records them: each one is a duplicate the broker made."},
    {"qrel_dedup_handled_messages", METRIC_GAUGE,
     "Messages the dedup table of queue recorded as handled within its window."},
    {"qrel_dedup_window_seconds", METRIC_GAUGE,
     "Seconds a dedup key of queue is remembered (table retention, SQS FIFO 5 minutes, NATS "
     "duplicate window); it must exceed qrel_retry_horizon_seconds."},
    {"qrel_handler_duration_seconds", METRIC_GAUGE,
     "Handler time in seconds for queue at the given quantile (0.5, 0.9, 0.99, 1) over the "
     "configured window, from the start and finish times a table records."},
    {"qrel_lease_expiries_total", METRIC_COUNTER,
     "Lease expiries on queue counted by the broker (visibility timeout, ack deadline or TTR ran "
     "out): each one redelivers a message whose handler may still be running."},
    {"qrel_lease_margin_ratio", METRIC_GAUGE,
     "Lease timeout of queue divided by the longer of the handler p99 (where known) and the oldest "
     "current hold; below 1, leases expire under running handlers and duplicates are being made."},
    {"qrel_lease_oldest_age_seconds", METRIC_GAUGE,
     "Seconds the longest-held in-flight message of queue has been held right now; past "
     "qrel_lease_timeout_seconds it can be delivered again while its handler still runs."},
    {"qrel_lease_timeout_seconds", METRIC_GAUGE,
     "Lease in seconds (visibility timeout, ack deadline, claim min-idle, ...) after which an "
     "unacknowledged message of queue is delivered again, from the broker or the config file."},
    {"qrel_max_deliveries", METRIC_GAUGE,
     "Deliveries of one message of queue the broker allows before it dead-letters the message."},
    {"qrel_messages_redelivered", METRIC_GAUGE,
     "Messages of queue now pending that have been delivered more than once: evidence that "
     "leases expired or handlers failed."},
    {"qrel_outbox_oldest_pending_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest unpublished row of the outbox table queue; growth means the "
     "relay is stuck."},
    {"qrel_outbox_pending_messages", METRIC_GAUGE,
     "Rows of the outbox table queue that the relay has not published yet."},
    {"qrel_queue_messages", METRIC_GAUGE,
     "Messages in queue (per consumer group where the kind has groups) by state: ready, in_flight "
     "(delivered, not acknowledged) or delayed (scheduled or waiting to retry)."},
    {"qrel_queue_oldest_message_age_seconds", METRIC_GAUGE,
     "Age in seconds of the oldest message of queue not yet acknowledged."},
    {"qrel_redeliveries_total", METRIC_COUNTER,
     "Redeliveries of messages of queue as counted by the broker (cumulative, resets when the "
     "broker's counter does)."},
    {"qrel_retry_horizon_seconds", METRIC_GAUGE,
     "Seconds from a message's first delivery to the last retry the broker will make (max "
     "deliveries times the lease, plus backoff); the dedup window must be longer."},
    {"qrel_sample_age_seconds", METRIC_GAUGE,
     "Age in seconds of the data behind this source's values (cache age, cloud metric delay)."},
};

#define CATALOG_LEN (sizeof catalog / sizeof catalog[0])

const struct metric_family *metric_catalog_find(const char *name)
{
    if (!name)
        return NULL;
    size_t lo = 0, hi = CATALOG_LEN;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, catalog[mid].name);
        if (c == 0)
            return &catalog[mid];
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
    return i < CATALOG_LEN ? &catalog[i] : NULL;
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

/* One label of the add in progress: the name points at the caller's string, the value was
 * sanitized into the set's scratch buffer (at off, len bytes). */
struct pending_label {
    const char *name;
    size_t name_len;
    size_t off;
    size_t len;
};

struct metric_set {
    char *source; /* sanitized copies, or NULL for no such base label */
    char *kind;
    struct metric_sample *samples;
    size_t len;
    size_t cap;
    char *error; /* the first programming error, or NULL */
    const struct metric_family *last_family;
    /* Reused by every add so that a sample costs one allocation, not one per string. */
    struct buf scratch;
    struct pending_label *pending;
    size_t npending;
    size_t pending_cap;
};

static char *sanitized_dup(const char *s)
{
    if (!s)
        return NULL;
    struct buf b;
    buf_init(&b);
    util_utf8_sanitize(&b, s, strlen(s));
    return buf_steal(&b);
}

struct metric_set *metric_set_new(const char *source, const char *kind)
{
    struct metric_set *s = xcalloc(1, sizeof *s);
    if (source) {
        s->source = sanitized_dup(source);
        s->kind = sanitized_dup(kind);
    }
    buf_init(&s->scratch);
    return s;
}

void metric_set_free(struct metric_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->len; i++)
        free(s->samples[i].labels); /* the block also holds the label strings */
    free(s->samples);
    free(s->source);
    free(s->kind);
    free(s->error);
    buf_free(&s->scratch);
    free(s->pending);
    free(s);
}

void metric_set_set_kind(struct metric_set *s, const char *kind)
{
    if (!s || !s->source)
        return; /* a set without base labels stays without them */
    free(s->kind);
    s->kind = sanitized_dup(kind);
}

/* Records the first programming error; returns -1 so callers can `return set_error(...)`. */
static int set_error(struct metric_set *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int set_error(struct metric_set *s, const char *fmt, ...)
{
    if (!s->error) {
        struct buf b;
        va_list ap;
        buf_init(&b);
        va_start(ap, fmt);
        buf_vprintf(&b, fmt, ap);
        va_end(ap);
        s->error = buf_steal(&b);
    }
    return -1;
}

/* Queues one label; value is sanitized unless it already is (the base labels). */
static void push_label(struct metric_set *s, const char *name, const char *value, int sanitize)
{
    if (s->npending == s->pending_cap) {
        s->pending_cap = s->pending_cap ? s->pending_cap * 2 : 8;
        s->pending = xrealloc(s->pending, s->pending_cap * sizeof *s->pending);
    }
    struct pending_label *p = &s->pending[s->npending++];
    p->name = name;
    p->name_len = strlen(name);
    p->off = s->scratch.len;
    /* Nearly every value is ASCII: check that while measuring it, sanitize only when needed. */
    size_t n = 0;
    unsigned char high = 0;
    for (; value[n]; n++)
        high |= (unsigned char)value[n];
    if (sanitize && (high & 0x80))
        util_utf8_sanitize(&s->scratch, value, n);
    else
        buf_append(&s->scratch, value, n);
    p->len = s->scratch.len - p->off;
}

static int label_queued(const struct metric_set *s, const char *name)
{
    for (size_t i = 0; i < s->npending; i++) {
        if (s->pending[i].name[0] == name[0] && strcmp(s->pending[i].name, name) == 0)
            return 1;
    }
    return 0;
}

int metric_set_add(struct metric_set *s, const char *family, double value, ...)
{
    if (!s)
        return -1;
    /* Collectors add runs of one family: try the previous one before the binary search. */
    const struct metric_family *f = s->last_family;
    if (!f || !family || strcmp(family, f->name) != 0)
        f = metric_catalog_find(family);
    if (!f)
        return set_error(s, "unknown metric family \"%s\"", family ? family : "(null)");

    s->npending = 0;
    buf_reset(&s->scratch);
    if (s->source)
        push_label(s, "source", s->source, 0);
    if (s->kind)
        push_label(s, "kind", s->kind, 0);

    int rc = 0;
    va_list ap;
    va_start(ap, value);
    for (;;) {
        const char *name = va_arg(ap, const char *);
        if (!name)
            break;
        /* Read no further after an error: a missing value may be the terminating NULL. */
        const char *v = va_arg(ap, const char *);
        if (!metric_label_name_valid(name)) {
            rc = set_error(s, "%s: invalid label name \"%s\"", f->name, name);
            break;
        }
        if (!v) {
            rc = set_error(s, "%s: label \"%s\" has a NULL value", f->name, name);
            break;
        }
        if (label_queued(s, name)) {
            rc = set_error(s, "%s: duplicate label \"%s\"", f->name, name);
            break;
        }
        push_label(s, name, v, 1);
    }
    va_end(ap);
    if (rc)
        return -1;

    /* One block: the label array, then each name and value NUL-terminated. */
    size_t n = s->npending;
    struct metric_label *labels = NULL;
    if (n) {
        size_t bytes = n * sizeof *labels;
        for (size_t i = 0; i < n; i++)
            bytes += s->pending[i].name_len + 1 + s->pending[i].len + 1;
        labels = xmalloc(bytes);
        char *p = (char *)(labels + n);
        for (size_t i = 0; i < n; i++) {
            const struct pending_label *pl = &s->pending[i];
            labels[i].name = p;
            memcpy(p, pl->name, pl->name_len + 1);
            p += pl->name_len + 1;
            labels[i].value = p;
            memcpy(p, s->scratch.data + pl->off, pl->len);
            p[pl->len] = '\0';
            p += pl->len + 1;
        }
    }

    if (s->len == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->samples = xrealloc(s->samples, s->cap * sizeof *s->samples);
    }
    s->last_family = f;
    struct metric_sample *sm = &s->samples[s->len++];
    sm->family = f;
    sm->labels = labels;
    sm->nlabels = n;
    sm->value = value;
    return 0;
}

size_t metric_set_len(const struct metric_set *s)
{
    return s ? s->len : 0;
}

const struct metric_sample *metric_set_at(const struct metric_set *s, size_t i)
{
    return s && i < s->len ? &s->samples[i] : NULL;
}

const char *metric_set_error(const struct metric_set *s)
{
    return s ? s->error : NULL;
}
