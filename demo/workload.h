/* workload.h: what the demo workload's threads share.
 *
 * qrel_demo_workload replays the worked incident of the design notes on real servers: an order
 * service writes each order with an outbox row in one PostgreSQL transaction; a relay publishes
 * the outbox to a Redis stream; consumers read it through a consumer group, take back entries
 * whose lease (the XAUTOCLAIM min-idle) expired, dead-letter those delivered too often, record
 * each delivery in a dedup table, and send each order's confirmation email through a simulated
 * provider with claim-before-send in a claim table. The provider's latency turns slow for a while,
 * and what qrel exists to show follows: leases expire under running handlers, entries are
 * redelivered, and the dead-letter stream fills with orders whose email was sent. */
#ifndef QREL_DEMO_WORKLOAD_H
#define QREL_DEMO_WORKLOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct workload_opts {
    char redis_host[256];
    int redis_port;
    const char *pg_conninfo;
    const char *stream, *group, *dead_letter_stream, *control_key;
    const char *claim_table, *dedup_table, *outbox_table;
    int consumers;
    double rate;                 /* orders per second */
    int64_t lease_ms;            /* the XAUTOCLAIM min-idle */
    long max_deliveries;         /* a delivery beyond this is dead-lettered */
    int64_t in_flight_window_ms; /* a younger open claim defers, an older one is taken over */
    int64_t poll_ms;             /* how long an idle consumer blocks before it looks again */
    int64_t latency_ms;          /* the provider's median in the normal phase */
    int64_t incident_at_ms, incident_for_ms, incident_every_ms;
    int64_t incident_min_ms, incident_max_ms;
    int64_t report_every_ms, duration_ms;
    unsigned long seed;
};

/* What everybody counts; printed in the status lines and at exit. */
struct workload_stats {
    atomic_long orders, published, deliveries, redeliveries, emails, deferred, taken_over,
        already_done, dead_lettered, acks, late_acks_refused, errors;
};

struct workload {
    struct workload_opts o;
    struct workload_stats s;
    atomic_bool stop;
    atomic_bool incident; /* the provider is slow now */
};

/* The consumer thread; arg is a struct consumer_arg. */
struct consumer_arg {
    struct workload *w;
    int index; /* 1-based: the consumer is named "mailer-<index>" */
};
void *consumer_main(void *arg);

/* Shared helpers (workload.c). */
int64_t now_ms(void);
/* Sleeps ms, in slices, returning false as soon as the workload is told to stop. */
bool sleep_unless_stopped(struct workload *w, int64_t ms);
/* Formats a duration the way the flags take it: "24ms", "3s", "3.1s", "1m30s". */
const char *fmt_duration(int64_t ms, char *buf, unsigned long size);
/* Prints one line to stdout, prefixed with the time since start, and flushes. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
