/* postgres/claim.h: the `claim_tables` section's entry and its pure arithmetic
 * (collectors/postgres/claim.c), declared for tests/unit/check_postgres_sections.c. The section's
 * hooks are declared in postgres.h. */
#ifndef QREL_POSTGRES_CLAIM_H
#define QREL_POSTGRES_CLAIM_H

#include "tables.h"

/* The quantiles of qrel_handler_duration_seconds the statement returns, and the index of p99. */
#define CLAIM_NQ 4
#define CLAIM_P99 2

struct claim {
    struct table_item t;      /* table, name, columns, statement (first: tables_free) */
    double in_flight_window;  /* seconds, > 0 */
    double window;            /* seconds, > 0 */
    double lease;             /* lease_timeout in seconds; 0: not declared */
    long long max_deliveries; /* 0: not declared */
    char in_flight_param[64];
    char window_param[64];
};

/* What the statement returned (has_* = the cells were not NULL). */
struct claim_row {
    double in_flight;
    double stale;
    int has_oldest; /* an in-flight claim exists */
    double oldest_age;
    double done;
    int has_q; /* every quantile is there: something was done within the window */
    double q[CLAIM_NQ];
};

/* The derived series; has_* = 0 leaves a series out. */
struct claim_values {
    double lease_oldest_age; /* 0 when nothing is in flight */
    int has_margin;
    double margin;
    int has_horizon;
    double horizon;
};

/* lease ÷ the worst of (handler p99 over the window, oldest current hold), each only where
 * known. Returns 0 and leaves *out alone when there is no lease or nothing to divide by. */
int claim_margin(double lease, int has_p99, double p99, int has_hold, double hold, double *out);

/* The derived series of one statement's row, for a lease and max_deliveries as declared (0: not
 * declared). */
void claim_values(double lease, long long max_deliveries, const struct claim_row *row,
                  struct claim_values *out);

#endif
