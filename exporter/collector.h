/* collector.h: THE contract between the core and a collector kind.
 *
 * A kind is one `const struct collector_kind` (collectors/<kind>/<kind>.c) listed in the registry.
 * configure() parses and validates the kind's own keys (no I/O); collect() talks to the broker
 * and fills a metric set; destroy() frees the kind's state. The core owns the common keys
 * (name, kind, timeout) and runs collect() on its own thread under a deadline:
 *   - collect blocks only inside helpers that honour the deadline;
 *   - it may add samples and then fail: the core then discards them and reports up 0;
 *   - after any error it drops its connection and reconnects on the next call;
 *   - one instance never runs twice at once, instances run in parallel: no globals.
 * Secrets are read by configure() from *_file keys or the environment and never put into an
 * error message, a label or a log line. */
#ifndef QREL_COLLECTOR_H
#define QREL_COLLECTOR_H

#include <stddef.h>

#include "config.h"
#include "deadline.h"
#include "err.h"
#include "metrics.h"

struct collector;

struct collector_kind {
    const char *name; /* `kind:` in the config and the kind label of qrel_collector_up */
    int (*configure)(struct collector *c, struct cfg_node *map, struct err *e);
    int (*collect)(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e);
    void (*destroy)(struct collector *c); /* frees priv; may be called after a failed configure */
    /* Optional (NULL when the kind has nothing to verify): checks the configuration against the
     * live server — tables and columns exist, permissions suffice — for --config.check. Errors
     * name the source and the object, never a secret. */
    int (*check)(struct collector *c, const struct deadline *dl, struct err *e);
    /* Optional (NULL: no hints): what to change when an audit rule fires on a queue of this kind,
     * as a clause the rule's message ends with (no trailing period), or NULL for rules the kind
     * has nothing to add to. rule is the rule's name as the `rule` label spells it (e.g.
     * "no_dead_letter_queue"); the text is static. Today only no_dead_letter_queue asks, and a
     * kind without a hint for it is not audited by that rule (it has no dead-letter queue to
     * set up). */
    const char *(*audit_hint)(const char *rule);
};

struct collector {
    char *name; /* the `source` label */
    const struct collector_kind *kind;
    double timeout;      /* seconds */
    void *priv;          /* the kind's state */
    double min_interval; /* seconds; 0: collect on every scrape. Else a result younger than this
                          * is served again, with qrel_sample_age_seconds saying how old it is */
};

/* collectors/registry.c: the kinds this build has. */
const struct collector_kind *collector_kind_find(const char *name);
size_t collector_kind_count(void);
const struct collector_kind *collector_kind_at(size_t i);

#endif
