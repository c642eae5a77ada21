/* collector.c: the collector object the core hands to a kind: made, configured, locked and
 * released here, so that the engine (exporter/sources.c, the dead-letter joins) and the kinds'
 * unit tests go through one implementation of collector.h. */
#include "collector.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "alloc.h"

struct collector *collector_new(void)
{
    struct collector *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->use, NULL); /* the dead-letter join and collect() take turns on it */
    return c;
}

int collector_configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    if (c->kind->state_size && !c->priv)
        c->priv = xcalloc(1, c->kind->state_size);
    return c->kind->configure(c, map, e);
}

int collector_finish(const struct collector *c, struct cfg_node *map, struct err *e)
{
    char where[200];
    snprintf(where, sizeof where, "source \"%s\"", c->name);
    return cfg_finish(map, where, e);
}

void collector_release(struct collector *c)
{
    const struct collector_kind *k = c->kind;
    if (!k || (k->state_size && !c->priv))
        return;
    if (k->destroy)
        k->destroy(c);
    if (k->state_size)
        free(c->priv);
    c->priv = NULL;
}

void collector_free(struct collector *c)
{
    if (!c)
        return;
    collector_release(c);
    pthread_mutex_destroy(&c->use);
    free(c->name);
    free(c);
}

int collector_lock(struct collector *c, const struct deadline *dl, struct err *e)
{
    /* POSIX's timed lock waits on the wall clock: the monotonic time left becomes a wall-clock
     * point now (a clock step while waiting moves it, which costs one slow scrape at most). */
    int64_t left = deadline_remaining_ms(dl);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    int rc = pthread_mutex_timedlock(&c->use, &ts);
    if (rc == 0)
        return 0;
    if (rc == ETIMEDOUT)
        return err_set(
            e, ERR_TIMEOUT,
            "the source was still in use (a collection or a dead-letter join) at the deadline");
    return err_set(e, ERR_INTERNAL, "cannot lock the source (error %d)", rc);
}

void collector_unlock(struct collector *c)
{
    pthread_mutex_unlock(&c->use);
}
