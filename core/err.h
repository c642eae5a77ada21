/* err.h: the error value every fallible function fills in.
 *
 * Functions return 0 on success and -1 on failure, filling the caller's struct err. The code is
 * also the `reason` label of qrel_collector_errors_total, so it must stay a small closed set. */
#ifndef QREL_ERR_H
#define QREL_ERR_H

enum err_code {
    ERR_NONE = 0,
    ERR_CONFIG,   /* the configuration is invalid (file:line:col in msg) */
    ERR_CONNECT,  /* could not reach the server (refused, DNS, reset) */
    ERR_TIMEOUT,  /* the deadline passed */
    ERR_AUTH,     /* the server refused our credentials */
    ERR_PROTOCOL, /* the server answered something we could not understand */
    ERR_QUERY,    /* the server understood and answered with an error */
    ERR_LIMIT,    /* a reply or result exceeded a configured cap */
    ERR_INTERNAL, /* a bug or resource failure on our side */
    ERR_CODE_COUNT
};

struct err {
    enum err_code code;
    char msg[512];
};

/* Sets code and formats msg (truncated to fit). Returns -1 so callers can `return err_set(...)`. */
int err_set(struct err *e, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes msg with "prefix: " (keeps the code). Returns -1. */
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void err_clear(struct err *e);
/* The reason label for a code: "config", "connect", "timeout", "auth", "protocol", "query",
 * "limit", "internal"; "none" for ERR_NONE. */
const char *err_reason(enum err_code code);

#endif
