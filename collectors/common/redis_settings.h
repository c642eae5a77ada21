/* redis_settings.h: the connection keys every Redis-based kind takes (address, username,
 * password_file / password_env, db, max_response_bytes, tls_config), read and checked in one place
 * so the job-framework kinds (rq, sidekiq, celery, bullmq) and redis_stream spell and judge them
 * alike.
 *
 * Reading and judging are two steps, as the configuration rules want: redis_settings_read only
 * reads (so every key is known to cfg_finish before anything is refused), redis_settings_check
 * judges what was read and points at the key at fault. */
#ifndef QREL_REDIS_SETTINGS_H
#define QREL_REDIS_SETTINGS_H

#include <stddef.h>

#include "config.h"
#include "err.h"

struct redis_settings {
    char *address;  /* required, unless sentinels */
    char *username; /* NULL: the default user */
    char *
        password; /* from password_file / password_env; NULL: none. Free with redis_settings_free */
    long db;
    size_t max_response_bytes;
    /* Redis Cluster (redis_cluster.h): cluster: true reads every master; the seeds are address
     * or addresses (a list, for more than one). no_cluster: set by a kind that cannot run on a
     * cluster, before redis_settings_read (which keeps it), the reason redis_settings_check
     * refuses cluster: true with. */
    int cluster;
    char **addresses;
    size_t naddresses;
    const char *no_cluster;
    /* Sentinel (redis_sentinel.h): the master's address asked of these instead of address. */
    char **sentinels; /* NULL: the address form */
    size_t nsentinels;
    char *master_name;
    char *sentinel_username;
    char *sentinel_password; /* from sentinel_password_file / _env */
    /* TLS (redis_tls.h): tls_config, NULL when absent (plaintext). */
    struct tls_config *tls;
};

int redis_settings_read(struct cfg_node *map, struct redis_settings *s, struct err *e);
/* After cfg_finish: the address is present and parses, a username comes with a password, and a
 * tls_config goes with a TCP address and its files load. */
int redis_settings_check(struct cfg_node *map, struct redis_settings *s, struct err *e);
void redis_settings_free(struct redis_settings *s); /* wipes the password; NULL is fine */

#endif
