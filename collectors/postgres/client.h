/* postgres/client.h: the state of a postgres source and its kept connection, shared by the top
 * (postgres.c) and `qrel dlq`'s hooks (dlq.c). Private to the folder. */
#ifndef QREL_POSTGRES_CLIENT_H
#define QREL_POSTGRES_CLIENT_H

#include "postgres.h"

/* One entry of a section's list, as configured. */
struct pg_item {
    const struct pg_section_kind *sec;
    void *state;
};

struct pg_state {
    struct pg_params params;
    struct pg_item *items;
    size_t nitems;
    struct pg_conn *conn;   /* kept between scrapes, dropped after any error */
    unsigned long conn_gen; /* counts connections made, so a work table knows a new one */
};

/* Opens the kept connection when there is none. 0, or -1 with e set. */
int pg_state_conn(struct pg_state *st, const char *source, const struct deadline *dl,
                  struct err *e);
/* Drops the kept connection (after an error; the next call reconnects). A transaction left open
 * is rolled back by the server. */
void pg_state_drop(struct pg_state *st);

#endif
