/* live_check.c: one collection and the dead-letter queues of `dead_letters` entries, for the
 * --config.check hooks of the kinds only the broker can judge (live_check.h). Reading at most 0
 * dead letters runs every lookup `qrel dlq` makes before its first receive or pull, and nothing
 * after: no message is received, so no receive count or delivery attempt changes. */
#include "common/live_check.h"

#include <stdlib.h>
#include <string.h>

#include "dlq_kind.h"
#include "metrics.h"
#include "alloc.h"

void live_check_note(char ***queues, const char *queue)
{
    size_t n = 0;
    for (; *queues && (*queues)[n]; n++)
        if (strcmp((*queues)[n], queue) == 0)
            return;
    *queues = xrealloc(*queues, (n + 2) * sizeof **queues);
    (*queues)[n] = xstrdup(queue);
    (*queues)[n + 1] = NULL;
}

/* What a scrape does with c: the core drops a collection whose metric set refused a sample. */
static int collect_once(struct collector *c, const struct deadline *dl, struct err *e)
{
    struct metric_set *set = metric_set_new(c->name, c->kind->name);
    int rc = c->kind->collect(c, dl, set, e);
    if (rc == 0 && metric_set_error(set))
        rc = err_set(e, ERR_INTERNAL, "%s", metric_set_error(set));
    metric_set_free(set);
    return rc;
}

static int find_dead_letter_queue(struct collector *c, const char *queue, const struct deadline *dl,
                                  struct err *e)
{
    const struct dlq_kind *k = c->kind->dlq;
    struct dlq_batch b;
    memset(&b, 0, sizeof b);
    int rc = k->read(c, queue, "", 0, DLQ_INSPECT, dl, &b, e);
    if (rc == 0 && k->release)
        rc = k->release(c, &b, dl, e);
    dlq_batch_free(&b, k);
    return rc ? err_prefix(e, "dead_letters: queue \"%s\"", queue) : 0;
}

int live_check(struct collector *c, char *const *queues, const struct deadline *dl, struct err *e)
{
    if (collect_once(c, dl, e))
        return -1;
    for (size_t i = 0; queues && queues[i]; i++)
        if (find_dead_letter_queue(c, queues[i], dl, e))
            return -1;
    return 0;
}
