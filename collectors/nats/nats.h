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
#include <stdint.h>

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

/* ---- `qrel dlq` on JetStream (dead_letter.c) ---- */

/* STREAM.INFO's state. filtered: the messages of the subjects_filter asked for, -1 without. */
struct nats_stream_state {
    long long messages, first_seq, last_seq, filtered;
};
/* A stored message, as STREAM.MSG.GET returns it (hdrs and data decoded from base64). */
struct nats_stored {
    char *subject;
    long long seq;
    unsigned char *hdrs; /* the header block "NATS/1.0\r\nK: V\r\n\r\n", or NULL */
    size_t hdrs_len;
    unsigned char *data; /* NUL-terminated beyond data_len */
    size_t data_len;
    double time; /* unix seconds it was stored */
};
/* A MAX_DELIVERIES advisory: stream and stream_seq of the message given up. */
struct nats_advisory {
    char *stream, *consumer;
    long long stream_seq; /* -1: absent */
    long long deliveries; /* -1: absent */
    double time;          /* its timestamp; 0: absent */
};
struct nats_header {
    char *key, *value;
};
struct nats_headers {
    struct nats_header *v; /* in the block's order, repeated keys kept */
    size_t n;
};

/* A JetStream API reply's "error": 0 none, 1 "no message found" (err_code 10037), -1 with e set
 * (ERR_AUTH for 401/403, ERR_QUERY otherwise, naming what) or a reply that is no object. */
int nats_api_error(const json_t *doc, const char *what, struct err *e);
/* STREAM.INFO's reply: 0, or -1 with e set (a missing stream is err_code 10059, ERR_QUERY). */
int nats_stream_state_parse(const json_t *doc, const char *what, struct nats_stream_state *s,
                            struct err *e);
/* STREAM.MSG.GET's reply: 0 found (m filled, nats_stored_free), 1 no message at that sequence,
 * -1 with e set. */
int nats_msg_get_parse(const json_t *doc, const char *what, struct nats_stored *m, struct err *e);
void nats_stored_free(struct nats_stored *m);
/* An advisory's JSON: 0, or -1 when it names no stream or no stream_seq (what it had is kept;
 * nats_advisory_free either way). */
int nats_advisory_parse(const char *data, size_t len, struct nats_advisory *a);
void nats_advisory_free(struct nats_advisory *a);
/* A header block: 0 (h empty for none), -1 when it is not "NATS/1.0" lines of "Key: Value". */
int nats_headers_parse(const unsigned char *blk, size_t len, struct nats_headers *h);
const char *nats_headers_get(const struct nats_headers *h, const char *key); /* case-blind */
void nats_headers_free(struct nats_headers *h);
/* 1 for a header a replay does not copy: Nats-Msg-Id (its own instead), Nats-Expected-* (the
 * first publish's conditions) and the stamp (the new count instead). */
int nats_header_replaced(const char *key);
/* The stamp's value: 0 absent (NULL), N, -1 not a whole number. */
int64_t nats_dlq_replays(const char *stamp);
/* The Nats-Msg-Id of the replay of stream's message seq, malloc'd: the same for every run, so
 * JetStream's duplicate window drops a second publish of it. */
char *nats_replay_msg_id(const char *stream, long long seq);
/* A PubAck: 0 (duplicate set when JetStream had the Nats-Msg-Id already and stored nothing), -1
 * with e set for an API error, no JSON, or an ack from another stream than stream. */
int nats_pub_ack_parse(const char *data, size_t len, const char *stream, int *duplicate,
                       struct err *e);
/* STREAM.MSG.DELETE's reply: 0 deleted, 1 not there (deleted before, or beyond the last
 * sequence), -1 with e set. */
int nats_msg_delete_parse(const json_t *doc, const char *what, struct err *e);
/* The JetStream stream name of a queue label (ACCOUNT/STREAM outside $G). */
const char *nats_dlq_stream_name(const char *queue);

#endif
