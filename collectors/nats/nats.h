/* nats.h: the pure part of the `nats` kind (collectors/nats/parse.c), exposed for unit tests.
 *
 * The collector itself is `nats_kind` (registry.c). nats_jsz_collect turns one page of
 * nats-server's /jsz?streams=true&consumers=true&config=true into series without any I/O, so
 * tests feed recorded replies (pinned to nats-server 2.9.10) and check every field and every
 * error path. */
#ifndef QREL_NATS_H
#define QREL_NATS_H

#include "common/exclude.h"
#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "metrics.h"

/* One entry of `streams:` in the config. */
struct nats_stream_spec {
    char *name;       /* the queue label: STREAM, or ACCOUNT/STREAM outside $G */
    char **consumers; /* NULL-terminated; NULL: every durable consumer */
    size_t nconsumers;
    char *dead_letter_stream; /* a stream of the same account, or NULL */
};

struct nats_filter {
    const char *account; /* the configured account: queue labels without an ACCOUNT/ prefix */
    /* Only this account's details are read (others in the document are skipped): nats-server
     * 2.9 answers acc=NAME for an account without JetStream with every account. NULL: all. */
    const char *only_account;
    const char *const *skip_accounts; /* accounts already collected this scrape */
    size_t nskip;
    const struct nats_stream_spec *specs; /* NULL / 0: every stream */
    size_t nspecs;
    const struct exclude *exclude;           /* streams left out (NULL: none) */
    const struct exclude *exclude_consumers; /* consumers of an entry without consumers */
    /* A pull consumer that delivered within this many seconds (delivered.last_active) has a
     * client (qrel_queue_consumers); 0: the default, NATS_ACTIVE_WINDOW. */
    double active_window;
};

#define NATS_ACTIVE_WINDOW 300.0

struct nats_page {
    double accounts_total;   /* the top-level "accounts" count; -1 when the document has none */
    size_t accounts_in_page; /* account_details entries, skipped ones included */
    char **accounts;         /* names of the accounts collected, malloc'd (nats_page_free) */
    size_t naccounts;
    size_t streams, consumers;                   /* reported in this page */
    size_t excluded_streams, excluded_consumers; /* left out by the exclude keys */
};

void nats_page_free(struct nats_page *pg);

/* Adds the series of one /jsz page to out. local_now (epoch seconds) is used only when the
 * document has no "now". Errors are ERR_PROTOCOL and name the JSON path:
 *   $.account_details[0].stream_detail[1].consumer_detail[0].num_pending: want a number, ...
 * (the caller prefixes the request). */
int nats_jsz_collect(const json_t *doc, const struct nats_filter *f, double local_now,
                     struct metric_set *out, struct nats_page *pg, struct err *e);

/* The clients durable consumer cons (at JSON path ctx; its config cfg at cfgpath) has, as /jsz
 * tells them, into *out: a push consumer 1 while a subscriber listens on its deliver subject
 * (push_bound), else 0; a pull consumer its waiting pull requests (num_waiting), else 1 when it
 * delivered a message within window seconds before now (delivered.last_active), else 0. 0, or -1
 * with ERR_PROTOCOL naming the path of a value of the wrong type. */
int nats_consumer_clients(const json_t *cons, const char *ctx, const json_t *cfg,
                          const char *cfgpath, double now, double window, double *out,
                          struct err *e);

/* The time from a message's first delivery until the broker gives it up: the sum of the lease of
 * every delivery. Delivery k (1-based) is held for backoff[min(k-1, n-1)] when the consumer has
 * a backoff list, else for ack_wait. Seconds; -1 when max_deliver is unlimited (<= 0). */
double nats_retry_horizon(double ack_wait, long long max_deliver, const double *backoff, size_t n);

#endif
