/* redis_sentinel.h: finding a Redis kind's master through Redis Sentinel, and the one call that
 * opens a Redis kind's connection, whichever form its config takes.
 *
 * A source names either `address` or `sentinels` with `master_name` (redis_settings.h). With
 * sentinels, every connect asks them in turn for the master's address (`SENTINEL
 * get-master-addr-by-name`), connects there and checks with `ROLE` that the server really is the
 * master, so a sentinel's stale answer is not trusted. The kinds already drop their connection
 * after any error and open a new one on the next scrape, so a failover is followed there. */
#ifndef QREL_REDIS_SENTINEL_H
#define QREL_REDIS_SENTINEL_H

#include <stddef.h>

#include <hiredis.h>

#include "common/redis.h"
#include "common/redis_settings.h"
#include "config.h"
#include "deadline.h"
#include "err.h"

/* Reads the Sentinel keys into s (called by redis_settings_read; reads only). */
int redis_sentinel_read(struct cfg_node *map, struct redis_settings *s, struct err *e);
/* Judges them after cfg_finish: -1 with a file:line:col error; 1 the sentinel form, valid; 0 no
 * Sentinel key at all (the address form, which redis_settings_check judges). */
int redis_sentinel_check(struct cfg_node *map, struct redis_settings *s, struct err *e);
void redis_sentinel_free(struct redis_settings *s);

/* Opens the source's connection within dl: to rs->address, or to the master the sentinels name
 * (trying each in turn, each within its share of what is left of dl). Messages start with
 * `redis "<source>"`, name the address that failed and never a password. NULL on error. */
struct redis_conn *redis_sentinel_connect(const char *source, const struct redis_settings *rs,
                                          const struct deadline *dl, struct err *e);

/* After a failed scrape on conn (not yet closed), whose stats were *before when the scrape began,
 * on a connection that served an earlier scrape: 1 when the failure says the master is gone (a
 * Sentinel source, a connect error, not a byte read in this scrape, time left), so the caller
 * closes the connection and runs the scrape once more through a new redis_sentinel_connect,
 * which asks the sentinels again. A failover then costs no scrape once the sentinels have
 * promoted a replica. Nothing was read, so nothing was emitted twice. */
int redis_sentinel_master_gone(const struct redis_settings *rs, const struct redis_stats *before,
                               const struct redis_conn *conn, const struct deadline *dl,
                               const struct err *e);

/* Pure: the reply to SENTINEL get-master-addr-by-name into "host:port" ("[v6]:port"), in out of
 * size n. A nil reply is a master name the sentinel does not know (ERR_QUERY). */
int redis_sentinel_parse_master(const redisReply *r, const char *master_name, char *out, size_t n,
                                struct err *e);
/* Pure: the reply to ROLE says "master" (0), or -1 naming the role it says. */
int redis_sentinel_parse_role(const redisReply *r, struct err *e);

#endif
