/* postgres/client.c: the kept connection of a postgres source (client.h), opened on first use and
 * dropped after any error, for the scrape (postgres.c) and `qrel dlq` (dlq.c) alike. */
#include "client.h"

int pg_state_conn(struct pg_state *st, const char *source, const struct deadline *dl, struct err *e)
{
    if (!st->conn) {
        st->conn = pg_connect(&st->params, source, dl, e);
        st->conn_gen++;
    }
    return st->conn ? 0 : -1;
}

void pg_state_drop(struct pg_state *st)
{
    pg_close(st->conn);
    st->conn = NULL;
}
