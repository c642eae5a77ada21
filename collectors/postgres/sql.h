/* postgres/sql.h: the `queries` section's entry (collectors/postgres/sql.c), declared for
 * tests/unit/check_postgres_sql.c with the one pure helper it tests. The section's hooks are
 * declared in postgres.h. */
#ifndef QREL_POSTGRES_SQL_H
#define QREL_POSTGRES_SQL_H

#include <stddef.h>

#include "metrics.h"
#include "postgres.h"

struct sql_metric {
    struct metric_family fam; /* name, type, help point into the strings below */
    char *at;                 /* "file:line:col" of the name, for errors found across queries */
    char *name;
    char *help;
    char *value_column;
};

struct sql_query {
    char *name;
    char *sql;       /* as configured, trailing ';' and blanks removed */
    char *collect;   /* SELECT * FROM (sql) q LIMIT max_rows + 1 */
    char *check_sql; /* SELECT * FROM (sql) q LIMIT 0 */
    char *what;      /* query "NAME", for messages */
    struct sql_metric *metrics;
    size_t nmetrics;
    char **labels; /* NULL-terminated (cfg_get_strlist) */
    size_t nlabels;
    long long max_rows;
};

/* Removes trailing blanks and semicolons, which would break the subquery wrapping: "x;" is one
 * statement. */
void sql_trim(char *sql);

#endif
