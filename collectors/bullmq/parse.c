/* parse.c: BullMQ's (and Bull 3/4's) key names and events (see bullmq.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bullmq.h"
#include "alloc.h"

char *bullmq_queue_of_meta_key(const char *key, size_t len, const char *prefix)
{
    static const char suffix[] = ":meta";
    size_t plen = strlen(prefix), slen = sizeof suffix - 1;
    if (len <= plen + 1 + slen || memcmp(key, prefix, plen) != 0 || key[plen] != ':' ||
        memcmp(key + len - slen, suffix, slen) != 0)
        return NULL;
    return xstrndup(key + plen + 1, len - plen - 1 - slen);
}

char *bullmq_queue_of_found_key(const char *key, size_t len, const char *prefix)
{
    static const char id[] = ":id";
    size_t plen = strlen(prefix), slen = sizeof id - 1;
    if (len > plen + 1 + slen && memcmp(key, prefix, plen) == 0 && key[plen] == ':' &&
        memcmp(key + len - slen, id, slen) == 0)
        return xstrndup(key + plen + 1, len - plen - 1 - slen);
    return bullmq_queue_of_meta_key(key, len, prefix);
}

char *bullmq_discovery_match(const char *prefix)
{
    return xasprintf("%s:*:[im][de]*", prefix);
}

int bullmq_is_stalled_event(const char *const *names, const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && values[i] && strcmp(names[i], "event") == 0)
            return strcmp(values[i], "stalled") == 0;
    return 0;
}

int bullmq_queue_tagged(const char *prefix, const char *queue)
{
    char *base = xasprintf("%s:%s:", prefix, queue);
    const char *open = strchr(base, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    int tagged = close && close > open + 1;
    free(base);
    return tagged;
}
