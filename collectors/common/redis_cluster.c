/* redis_cluster.c: the pure part of reading a Redis Cluster (redis_cluster.h): the hash slot of a
 * key, the MOVED/ASK redirects and the slot map of a CLUSTER SLOTS reply. No I/O. */
#include "redis_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

uint16_t redis_cluster_crc16(const char *buf, size_t len)
{
    /* Bit by bit: keys are short, and a table would be 512 bytes of constants to get right. */
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned redis_cluster_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) /* "{}" is no tag: the whole key counts */
            return redis_cluster_crc16(open + 1, (size_t)(close - open - 1)) % REDIS_CLUSTER_SLOTS;
    }
    return redis_cluster_crc16(key, len) % REDIS_CLUSTER_SLOTS;
}

/* "host:port" with brackets round an IPv6 host; 0 when it does not fit or host is empty. */
static int join_address(char *out, size_t size, const char *host, size_t hlen, long long port)
{
    if (hlen == 0 || port <= 0 || port > 65535)
        return 0;
    int v6 = memchr(host, ':', hlen) != NULL;
    int n =
        snprintf(out, size, "%s%.*s%s:%lld", v6 ? "[" : "", (int)hlen, host, v6 ? "]" : "", port);
    return n > 0 && (size_t)n < size;
}

int redis_cluster_parse_redirect(const char *msg, size_t len, struct redis_redirect *out)
{
    char buf[400];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, msg, len);
    buf[len] = '\0';
    size_t skip;
    if (strncmp(buf, "MOVED ", 6) == 0) {
        out->ask = 0;
        skip = 6;
    } else if (strncmp(buf, "ASK ", 4) == 0) {
        out->ask = 1;
        skip = 4;
    } else {
        return 0;
    }
    char *p = buf + skip, *end;
    if (*p < '0' || *p > '9')
        return 0;
    unsigned long slot = strtoul(p, &end, 10);
    if (*end != ' ' || slot >= REDIS_CLUSTER_SLOTS)
        return 0;
    char *addr = end + 1;
    char *colon = strrchr(addr, ':');
    if (!colon || strchr(addr, ' '))
        return 0;
    char *pend;
    long long port = strtoll(colon + 1, &pend, 10);
    if (*pend || pend == colon + 1)
        return 0;
    out->slot = (unsigned)slot;
    return join_address(out->address, sizeof out->address, addr, (size_t)(colon - addr), port);
}

void redis_cluster_map_free(struct redis_cluster_map *m)
{
    for (size_t i = 0; i < m->nnodes; i++)
        free(m->nodes[i]);
    free(m->nodes);
    m->nodes = NULL;
    m->nnodes = 0;
    memset(m->owner, 0xff, sizeof m->owner);
}

static size_t node_index(struct redis_cluster_map *m, const char *addr)
{
    for (size_t i = 0; i < m->nnodes; i++)
        if (strcmp(m->nodes[i], addr) == 0)
            return i;
    m->nodes = xrealloc(m->nodes, (m->nnodes + 1) * sizeof *m->nodes);
    m->nodes[m->nnodes] = xstrdup(addr);
    return m->nnodes++;
}

int redis_cluster_parse_slots(const redisReply *r, const char *from_host,
                              struct redis_cluster_map *m, struct err *e)
{
    redis_cluster_map_free(m);
    if (r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "CLUSTER SLOTS: want an array, got %s",
                       redis_reply_type_name(r));
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        if (x->type != REDIS_REPLY_ARRAY || x->elements < 3 ||
            x->element[0]->type != REDIS_REPLY_INTEGER ||
            x->element[1]->type != REDIS_REPLY_INTEGER ||
            x->element[2]->type != REDIS_REPLY_ARRAY || x->element[2]->elements < 2)
            goto bad;
        long long lo = x->element[0]->integer, hi = x->element[1]->integer;
        const redisReply *node = x->element[2];
        if (lo < 0 || hi < lo || hi >= REDIS_CLUSTER_SLOTS ||
            node->element[0]->type != REDIS_REPLY_STRING ||
            node->element[1]->type != REDIS_REPLY_INTEGER)
            goto bad;
        const char *host = node->element[0]->str;
        size_t hlen = node->element[0]->len;
        if (hlen == 0 || strcmp(host, "?") == 0) { /* the node asked does not know its address */
            host = from_host;
            hlen = strlen(from_host);
        }
        char addr[300];
        if (!join_address(addr, sizeof addr, host, hlen, node->element[1]->integer))
            goto bad;
        uint16_t n = (uint16_t)node_index(m, addr);
        for (long long s = lo; s <= hi; s++)
            m->owner[s] = n;
    }
    return 0;
bad:
    redis_cluster_map_free(m);
    return err_set(e, ERR_PROTOCOL, "CLUSTER SLOTS: want [[start, end, [host, port, …], …], …]");
}

unsigned redis_cluster_node_of(const struct redis_cluster_map *m, const char *key, size_t len)
{
    return m->owner[redis_cluster_key_slot(key, len)];
}

unsigned redis_cluster_node_at(const struct redis_cluster_map *m, const char *address)
{
    for (size_t i = 0; i < m->nnodes; i++)
        if (strcmp(m->nodes[i], address) == 0)
            return (unsigned)i;
    return REDIS_CLUSTER_NO_NODE;
}
