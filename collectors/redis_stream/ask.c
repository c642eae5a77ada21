/* redis_stream/ask.c: the streams of a cluster scrape to read after ASKING (scrape.h), kept
 * apart so that the pipelines (which meet them) and cluster.c (which reads them) both reach the
 * list without needing each other. While a slot migrates, a named stream already moved is
 * answered with ASK by the master of the slot, and a stream found by a pattern on the importing
 * master is in a slot the map gives another: either is read on the node that holds it, once,
 * after ASKING, and the map is kept. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "scrape.h"

static int known(char **v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return 1;
    return 0;
}

void redis_stream_ask_add(struct state *st, const char *address, const char *name, size_t spec,
                          int from_pattern)
{
    if (known(st->asked, st->nasked, name))
        return; /* read after ASKING already this scrape */
    for (size_t i = 0; i < st->nasks; i++)
        if (strcmp(st->asks[i].name, name) == 0)
            return;
    st->asks = xrealloc(st->asks, (st->nasks + 1) * sizeof *st->asks);
    struct ask *a = &st->asks[st->nasks++];
    a->address = xstrdup(address);
    a->name = xstrdup(name);
    a->spec = spec;
    a->from_pattern = (unsigned char)from_pattern;
}

int redis_stream_ask_done(const struct state *st, const char *name)
{
    return known(st->asked, st->nasked, name);
}

void redis_stream_asks_clear(struct state *st)
{
    for (size_t i = 0; i < st->nasks; i++) {
        free(st->asks[i].address);
        free(st->asks[i].name);
    }
    free(st->asks);
    st->asks = NULL;
    st->nasks = 0;
}

void redis_stream_asked_clear(struct state *st)
{
    for (size_t i = 0; i < st->nasked; i++)
        free(st->asked[i]);
    free(st->asked);
    st->asked = NULL;
    st->nasked = 0;
}
