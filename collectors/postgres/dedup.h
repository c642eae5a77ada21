/* postgres/dedup.h: the `dedup_tables` section's entry and its pure arithmetic
 * (collectors/postgres/dedup.c), declared for tests/unit/check_postgres_sections.c. The section's
 * hooks are declared in postgres.h. */
#ifndef QREL_POSTGRES_DEDUP_H
#define QREL_POSTGRES_DEDUP_H

#include "tables.h"

enum dedup_mode { DEDUP_UNIQUE, DEDUP_ATTEMPTS_LOG };

/* The columns of a dedup table, in their order in tables_specs. */
enum { DEDUP_ID, DEDUP_HANDLED_AT, DEDUP_DUPLICATES };

struct dedup {
    struct table_item t; /* table, name, columns, statement (first: tables_free) */
    enum dedup_mode mode;
    double window;    /* seconds, > 0 */
    double retention; /* seconds as declared; 0: measured as now() - min(handled_at) */
    char window_param[64];
};

/* What the statement returned (has_* = the cell was not NULL). */
struct dedup_row {
    double handled;
    int has_duplicates;
    double duplicates;
    int has_oldest_age;
    double oldest_age;
};

/* The values of the series; has_* = 0 leaves a series out. */
struct dedup_values {
    double handled;
    int has_duplicates;
    double duplicates;
    int has_window;
    double window_seconds;
};

/* The values of the series from one statement's row; declared_retention 0: measured. */
void dedup_values(double declared_retention, const struct dedup_row *row, struct dedup_values *out);

#endif
