/* postgres/claim.c: the `claim_tables` section of a postgres source (kind label `claim_table`).
 *
 * An effect outside the database (an email, a card charge) cannot share a transaction with a
 * dedup row, so the consumer claims the message first: a row (id, claimed_at, done_at NULL),
 * stamped done when the provider answers. A second delivery that finds a young claim defers (the
 * first attempt is presumably still running); one that finds a claim older than the in-flight
 * window takes over and sends again. The table therefore shows the lease at work: how long
 * handlers take (done_at - claimed_at), how long the oldest running attempt has held its claim,
 * and how many attempts died without finishing (stale claims: work that may never have happened,
 * or happened without its stamp). Compared with the lease of the broker that feeds the handler,
 * the handler's tail gives the margin before the broker redelivers under a running handler.
 *
 * One statement per table, built at configure time with every identifier quoted, two parts
 * joined into one row: the open claims (done_at IS NULL: an index on done_at, or a partial index
 * WHERE done_at IS NULL, reads only those) and the claims done within the window (an indexable
 * `done_at >= now() - $2::interval`, up to now()), with the quantiles from percentile_cont in
 * the same pass, and the rows stamped ahead of now() counted up to a cap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "alloc.h"

#define CLAIM_DEFAULT_WINDOW 300.0
/* Holds and durations below 1 ms count as 1 ms in the margin, so a claim made this instant
 * gives a large ratio rather than a division by 0. */
#define CLAIM_MIN_DENOMINATOR 0.001

/* The quantiles of qrel_handler_duration_seconds, in the order of the statement's columns. */
static const char *const claim_quantile_labels[] = {"0.5", "0.9", "0.99", "1"};

/* The columns of a claim table, in their order in tables_specs. */
enum { CLAIM_ID, CLAIM_CLAIMED_AT, CLAIM_DONE_AT };

/* ---- the statement and its values (pure; tests/unit/check_postgres_sections.c) ---- */

/* The one statement of a claim table: one row of nine float8 columns,
 *   in_flight, stale   open claims (done_at IS NULL) claimed within the in-flight window ($1,
 *                      up to now()) / before it
 *   oldest_age         now() - the oldest in-flight claimed_at, seconds; NULL when none
 *   done               claims with done_at within the window ($2, up to now())
 *   q50, q90, q99, q1  percentile_cont of done_at - claimed_at over those, seconds (1 = max);
 *                      NULL when none is done
 *   ahead              open claims whose claimed_at, and done claims whose done_at, lie after
 *                      now() (clock skew between the writers and the database), up to
 *                      PG_AHEAD_CAP (postgres.h)
 * The parts are separate subqueries so that each is read through its own index path. Each
 * window is bounded by now(): a row stamped ahead is in no window (it would be counted, and
 * sorted by percentile_cont, for as long as the skew lasts). The open claims ahead are counted
 * in the pass over the open claims; the done ones by a range of the done_at index that stops
 * after PG_AHEAD_CAP entries. The casts to timestamptz make the duration real elapsed time for
 * `timestamp` columns too. */
static char *claim_sql(const struct claim *c)
{
    char *t = pg_table_sql(c->t.table);
    if (!t)
        return NULL;
    char *ca = pg_quote_ident(c->t.col[CLAIM_CLAIMED_AT]);
    char *da = pg_quote_ident(c->t.col[CLAIM_DONE_AT]);
    char *ahead_done = xasprintf(PG_AHEAD_SQL, t, da);
    char *sql = xasprintf(
        "SELECT o.in_flight, o.stale, o.oldest_age, f.done, f.q[1], f.q[2], f.q[3], f.q[4], "
        "LEAST(o.ahead + %s, " PG_AHEAD_CAP ") "
        "FROM (SELECT count(*) FILTER (WHERE %s >= now() - $1::interval AND %s <= " PG_AHEAD_NOW
        ")::float8 AS in_flight, count(*) FILTER (WHERE %s < now() - $1::interval)::float8 AS "
        "stale, date_part('epoch', now() - min(%s) FILTER (WHERE %s >= now() - $1::interval AND %s "
        "<= " PG_AHEAD_NOW ")) AS oldest_age, count(*) FILTER (WHERE %s > " PG_AHEAD_NOW
        ")::float8 AS ahead "
        "FROM %s WHERE %s IS NULL) AS o, "
        "(SELECT count(*)::float8 AS done, percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP "
        "(ORDER BY date_part('epoch', %s::timestamptz - %s::timestamptz)) AS q "
        "FROM %s WHERE %s >= now() - $2::interval AND %s <= " PG_AHEAD_NOW ") AS f",
        ahead_done, ca, ca, ca, ca, ca, ca, ca, t, da, da, ca, t, da, da);
    free(ahead_done);
    free(t);
    free(ca);
    free(da);
    return sql;
}

/* lease ÷ the worst of (handler p99 over the window, oldest current hold), each only where
 * known. Returns 0 and leaves *out alone when there is no lease or nothing to divide by. */
int claim_margin(double lease, int has_p99, double p99, int has_hold, double hold, double *out)
{
    if (lease <= 0 || (!has_p99 && !has_hold))
        return 0;
    double worst = CLAIM_MIN_DENOMINATOR;
    if (has_p99 && p99 > worst)
        worst = p99;
    if (has_hold && hold > worst)
        worst = hold;
    *out = lease / worst;
    return 1;
}

void claim_values(double lease, long long max_deliveries, const struct claim_row *row,
                  struct claim_values *out)
{
    memset(out, 0, sizeof *out);
    /* A claim stamped in the future (clock skew between writers) is held 0 s, not less. */
    double hold = row->has_oldest && row->oldest_age > 0 ? row->oldest_age : 0;
    out->lease_oldest_age = hold;
    out->has_margin =
        claim_margin(lease, row->has_q, row->q[CLAIM_P99], row->has_oldest, hold, &out->margin);
    if (lease > 0 && max_deliveries > 0) {
        out->has_horizon = 1;
        out->horizon = (double)max_deliveries * lease;
    }
}

/* ---- configuration ---- */

void *claim_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct claim *c = xcalloc(1, sizeof *c);
    struct cfg_node *n = NULL;
    if (tables_read(&c->t, &tables_specs[TABLES_CLAIM], item, e) ||
        cfg_get_positive_duration(item, "in_flight_window", 0, &c->in_flight_window, e) ||
        cfg_get_positive_duration(item, "window", CLAIM_DEFAULT_WINDOW, &c->window, e) ||
        cfg_get_positive_duration(item, "lease_timeout", 0, &c->lease, e) ||
        cfg_get_node(item, "max_deliveries", CFG_SCALAR, &n, e) ||
        (n && cfg_get_int(item, "max_deliveries", 1, 1, 1000000, &c->max_deliveries, e)) ||
        tables_finish(&c->t, item, source, c->in_flight_window <= 0 ? "in_flight_window" : NULL, e))
        goto fail;
    const char *claimed_at = c->t.col[CLAIM_CLAIMED_AT];
    if (strcmp(claimed_at, c->t.col[CLAIM_DONE_AT]) == 0) {
        cfg_error(e, cfg_at(item, "done_at_column"),
                  "done_at_column: want a column other than claimed_at_column (\"%s\")",
                  claimed_at);
        goto fail;
    }
    c->t.sql = claim_sql(c);
    pg_interval_param(c->in_flight_param, sizeof c->in_flight_param, c->in_flight_window);
    pg_interval_param(c->window_param, sizeof c->window_param, c->window);
    return c;
fail:
    tables_free(c);
    return NULL;
}

/* ---- collection ---- */

/* The result is not checked: a failed add is a programming error the set remembers, and the
 * scheduler fails the collection with it (collector.h). */
static void claim_add(struct metric_set *out, const char *family, double v, const char *queue,
                      const char *lname, const char *lvalue)
{
    if (lname)
        metric_set_add(out, family, v, "queue", queue, lname, lvalue, NULL);
    else
        metric_set_add(out, family, v, "queue", queue, NULL);
}

int claim_collect(void *item, struct pg_conn *conn, const struct deadline *dl,
                  struct metric_set *out, struct err *e)
{
    struct claim *c = item;
    const char *params[2] = {c->in_flight_param, c->window_param};
    /* in_flight, stale, done and ahead are counts, never NULL */
    struct table_item_row r = {
        .n = 5 + CLAIM_NQ,
        .need = 1u << 0 | 1u << 1 | 1u << 3 | 1u << (4 + CLAIM_NQ),
        .shape = "counts (in_flight, stale, oldest, done, quantiles, ahead)",
    };
    if (tables_query(&c->t, conn, dl, 2, params, &r, e))
        return -1;
    struct claim_row row = {.in_flight = r.v[0],
                            .stale = r.v[1],
                            .has_oldest = r.has[2],
                            .oldest_age = r.v[2],
                            .done = r.v[3],
                            .has_q = 1};
    for (int i = 0; i < CLAIM_NQ; i++) {
        row.q[i] = r.v[4 + i];
        row.has_q &= r.has[4 + i];
    }
    double ahead = r.v[4 + CLAIM_NQ]; /* rows stamped after now(), in no window */

    struct claim_values v;
    claim_values(c->lease, c->max_deliveries, &row, &v);
    const char *q = c->t.name;
    claim_add(out, "qrel_claims", row.in_flight, q, "state", "in_flight");
    claim_add(out, "qrel_claims", row.stale, q, "state", "stale");
    claim_add(out, "qrel_claims", row.done, q, "state", "done");
    claim_add(out, "qrel_future_stamped_rows", ahead, q, NULL, NULL);
    claim_add(out, "qrel_lease_oldest_age_seconds", v.lease_oldest_age, q, NULL, NULL);
    claim_add(out, "qrel_claim_in_flight_window_seconds", c->in_flight_window, q, NULL, NULL);
    if (row.has_q)
        for (int i = 0; i < CLAIM_NQ; i++)
            claim_add(out, "qrel_handler_duration_seconds", row.q[i], q, "quantile",
                      claim_quantile_labels[i]);
    if (c->lease > 0)
        claim_add(out, "qrel_lease_timeout_seconds", c->lease, q, NULL, NULL);
    if (v.has_margin)
        claim_add(out, "qrel_lease_margin_ratio", v.margin, q, NULL, NULL);
    if (c->max_deliveries > 0)
        claim_add(out, "qrel_max_deliveries", (double)c->max_deliveries, q, NULL, NULL);
    if (v.has_horizon)
        claim_add(out, "qrel_retry_horizon_seconds", v.horizon, q, NULL, NULL);
    return 0;
}
