/* log.h: structured logs to stderr, logfmt or JSON, one write() per line so threads never
 * interleave, and the one way to rate-limit a line that repeats (struct log_limit). Secrets must
 * never be passed here: callers log names and reasons, not values. */
#ifndef QREL_LOG_H
#define QREL_LOG_H

#include <stdint.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

int log_parse_level(const char *s, enum log_level *out); /* "debug","info","warn","error" */
int log_parse_format(const char *s, int *json_out);      /* "logfmt" -> 0, "json" -> 1 */
void log_setup(enum log_level min, int json);
int log_enabled(enum log_level lvl);
/* log_kv(LOG_WARN, "collection failed", "source", name, "reason", r, NULL):
 * msg plus NULL-terminated key/value string pairs (a NULL value is written as ""). */
void log_kv(enum log_level lvl, const char *msg, ...) __attribute__((sentinel));

/* How often a repeated line may be logged: at most burst lines (0 means 1) per every_ms of the
 * same key; a line whose key differs from the last one's passes at once and starts a new window.
 * A failure that repeats on every scrape, or a burst of refused connections, must not flood the
 * log, while a new failure is seen at once. Set every_ms and burst, zero the rest (a static or
 * zeroed struct with the two fields set is ready); it owns nothing. Not locked: the caller
 * serialises the calls on one limit (each user already holds a lock of its own). */
struct log_limit {
    int64_t every_ms;
    int burst;
    /* state */
    int64_t window_ms; /* when the current window began */
    uint64_t key;      /* the hash of the last key that passed */
    long passed;       /* lines passed in the window */
    long held;         /* lines held back since the last one that passed */
    int started;
};

/* Whether a line of key (NULL: every line alike) may be logged at now_ms (deadline_now_ms(), or a
 * test's clock). When it may, *held (if not NULL) gets how many lines were held back before it,
 * for a caller that reports them ("similar messages left out"); else *held is 0. */
int log_limit_pass(struct log_limit *l, const char *key, int64_t now_ms, long *held);
/* Forgets the last key and window (a failure that ended): the next line passes at once. */
void log_limit_reset(struct log_limit *l);

/* log_kv at lvl when the line passes l (log_limit_pass, now), else at LOG_DEBUG, so a repeat is
 * still there for whoever runs with debug logs. */
void log_kv_limited(struct log_limit *l, enum log_level lvl, const char *key, const char *msg, ...)
    __attribute__((sentinel));

#endif
