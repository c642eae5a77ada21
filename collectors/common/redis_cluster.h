/* redis_cluster.h: what a Redis kind needs to read a Redis Cluster (`cluster: true`).
 *
 * A cluster spreads the keyspace over 16384 hash slots, each served by one master; a key's slot is
 * the CRC16 of the key, or of its hash tag (the part between the first "{" and the next "}" when
 * that part is not empty), modulo 16384. A master answers a command on a key of a slot it does not
 * serve with `MOVED <slot> <host:port>` (the slot lives there now: learn the map again) or, while
 * the slot migrates, `ASK <slot> <host:port>` (ask that node once, after ASKING).
 *
 * The pure part (redis_cluster.c): the slot of a key, the redirect replies, and the slot map read
 * from CLUSTER SLOTS. The connections (redis_cluster_conn.c): one per master, kept across scrapes,
 * and the map learnt from the seed addresses or from any node already known. */
#ifndef QREL_REDIS_CLUSTER_H
#define QREL_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "common/redis.h"
#include "common/redis_settings.h"
#include "deadline.h"
#include "err.h"

#define REDIS_CLUSTER_SLOTS 16384
#define REDIS_CLUSTER_NO_NODE 0xffffu

/* CRC16-CCITT (XModem), the checksum Redis Cluster hashes keys with. */
uint16_t redis_cluster_crc16(const char *buf, size_t len);
/* The hash slot of the len bytes at key, its hash tag honoured. */
unsigned redis_cluster_key_slot(const char *key, size_t len);

/* A `MOVED <slot> <host:port>` or `ASK <slot> <host:port>` error reply. */
struct redis_redirect {
    int ask; /* 1 for ASK, 0 for MOVED */
    unsigned slot;
    char address[300]; /* "host:port" or "[v6]:port", ready for redis_conn_open */
};

/* 1 with *out filled when the len bytes at msg are a redirect, 0 when they are not (any other
 * error, or a malformed redirect). An IPv6 host is put in brackets; an empty host (a node that
 * does not know its address) is not a redirect one can follow: 0. */
int redis_cluster_parse_redirect(const char *msg, size_t len, struct redis_redirect *out);

/* Which master serves each slot: nodes[owner[slot]], REDIS_CLUSTER_NO_NODE for a slot nobody
 * serves. */
struct redis_cluster_map {
    char **nodes; /* the masters' addresses, "host:port" or "[v6]:port", each once */
    size_t nnodes;
    uint16_t owner[REDIS_CLUSTER_SLOTS];
};

/* Fills m (a zeroed or freed map) from a CLUSTER SLOTS reply: [[start, end, [host, port, id, …],
 * replicas…], …]; only the master (the first node of a range) is kept. An empty host stands for
 * the address the reply came from (from_host: the host asked). ERR_PROTOCOL for another shape. */
int redis_cluster_parse_slots(const redisReply *r, const char *from_host,
                              struct redis_cluster_map *m, struct err *e);
void redis_cluster_map_free(struct redis_cluster_map *m); /* empties it; fine on a zeroed map */
/* The node serving key, or REDIS_CLUSTER_NO_NODE. */
unsigned redis_cluster_node_of(const struct redis_cluster_map *m, const char *key, size_t len);
/* The index of the master at address ("host:port" as the map spells it), or
 * REDIS_CLUSTER_NO_NODE. */
unsigned redis_cluster_node_at(const struct redis_cluster_map *m, const char *address);

/* ---- the connections (redis_cluster_conn.c) ---- */

/* A source's view of the cluster: the map and a connection per master, kept across scrapes;
 * stale after a redirect or any error, then learnt again before the next read. */
struct redis_cluster {
    struct redis_cluster_map map;
    struct redis_conn **conns; /* by node of the map; NULL until opened */
    int have_map;
};

/* Learns the map when there is none: CLUSTER SLOTS asked of the seeds (rs->address or
 * rs->addresses), then of the masters known before, the first that answers wins. ERR_CONNECT
 * naming the last failure when none answers. */
int redis_cluster_refresh(struct redis_cluster *cl, const char *source,
                          const struct redis_settings *rs, const struct deadline *dl,
                          struct err *e);
/* The connection to master i of the map, opened when there is none; NULL with e set. */
struct redis_conn *redis_cluster_conn(struct redis_cluster *cl, size_t i, const char *source,
                                      const struct redis_settings *rs, const struct deadline *dl,
                                      struct err *e);
/* Forgets the map and closes every connection (after a redirect or an error). */
void redis_cluster_forget(struct redis_cluster *cl);
/* destroy()'s part: the connections and the map. Fine on a zeroed one. */
void redis_cluster_free(struct redis_cluster *cl);

/* ASK: while a slot migrates, a key already moved is answered with `ASK <slot> <host:port>`: the
 * command goes once to that node, right after ASKING, and the map stays as it is (the slot is
 * still the old master's until the migration ends). A pipeline of such commands has ASKING in
 * front of every one: redis_cluster_pipe_asking before each command added (it adds ASKING when
 * asking), then redis_cluster_exec_each, which checks the ASKING replies and hands fn the
 * commands' replies by their own index (0, 1, ...), as redis_pipe_exec_each would without them. */
void redis_cluster_pipe_asking(struct redis_pipe *p, int asking);
int redis_cluster_exec_each(struct redis_conn *c, struct redis_pipe *p, int asking,
                            const struct deadline *dl, size_t max_bytes, redis_reply_fn fn,
                            void *ctx, struct err *e);

#endif
