/* audit_config.c: the audit's vocabulary and its configuration (declared in audit.h): the rule
 * table (names, severities, which way is worse), the status names and ranks, the order of names,
 * and the `audit:` section of the configuration file.
 *
 * The bottom of the audit's files: the engine (audit.c), the series (audit_series.c) and the
 * report writers (audit_report.c) read the vocabulary, and this file calls none of them, so no
 * two of the audit's objects use each other's symbols. */
#include "audit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"

/* below: a finding is worse the further its value lies below its limit (a margin, a dedup
 * window), else the further above (messages, ages), which ranks the per-queue series. */
static const struct {
    const char *name;
    enum audit_status severity;
    int below;
} rules[AUDIT_RULE_COUNT] = {
    [AUDIT_DEAD_LETTER_QUEUE_NOT_EMPTY] = {"dead_letter_queue_not_empty", AUDIT_CRITICAL, 0},
    [AUDIT_LEASE_MARGIN_BELOW_1] = {"lease_margin_below_1", AUDIT_CRITICAL, 1},
    [AUDIT_LEASE_MARGIN_BELOW_2] = {"lease_margin_below_2", AUDIT_WARNING, 1},
    [AUDIT_STALE_CLAIMS] = {"stale_claims", AUDIT_WARNING, 0},
    [AUDIT_OUTBOX_LAGGING] = {"outbox_lagging", AUDIT_WARNING, 0},
    [AUDIT_DEDUP_WINDOW_SHORTER_THAN_RETRY_HORIZON] = {"dedup_window_shorter_than_retry_horizon",
                                                       AUDIT_WARNING, 1},
    [AUDIT_NO_DEAD_LETTER_QUEUE] = {"no_dead_letter_queue", AUDIT_WARNING, 0},
    [AUDIT_CLAIM_WINDOW_TOO_SHORT] = {"claim_window_too_short", AUDIT_WARNING, 0},
    [AUDIT_ORPHANED_MESSAGES] = {"orphaned_messages", AUDIT_CRITICAL, 0},
    [AUDIT_ETA_BEYOND_LEASE] = {"eta_beyond_lease", AUDIT_WARNING, 0},
    [AUDIT_SKIPPED_ENTRIES] = {"skipped_entries", AUDIT_WARNING, 0},
    [AUDIT_DEAD_LETTERS_NOT_KEPT] = {"dead_letters_not_kept", AUDIT_WARNING, 0},
    [AUDIT_SOURCE_WATCHES_NOTHING] = {"source_watches_nothing", AUDIT_WARNING, 1},
    [AUDIT_HANDLER_TIMEOUT_NOT_BELOW_LEASE] = {"handler_timeout_not_below_lease", AUDIT_CRITICAL,
                                               0},
    [AUDIT_DELIVERY_LIMIT_DROPS] = {"delivery_limit_drops", AUDIT_CRITICAL, 0},
    [AUDIT_NO_BROKER_LEASE] = {"no_broker_lease", AUDIT_WARNING, 0},
    [AUDIT_BACKLOG_WITHOUT_CONSUMER] = {"backlog_without_consumer", AUDIT_WARNING, 0},
    [AUDIT_DEAD_LETTERS_EXPIRE_UNREAD] = {"dead_letters_expire_unread", AUDIT_WARNING, 1},
};

const char *audit_rule_name(enum audit_rule r)
{
    return r < AUDIT_RULE_COUNT ? rules[r].name : "unknown";
}

enum audit_status audit_rule_severity(enum audit_rule r)
{
    return r < AUDIT_RULE_COUNT ? rules[r].severity : AUDIT_UNKNOWN;
}

const char *audit_status_name(enum audit_status s)
{
    static const char *const names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
    return (unsigned)s < 4 ? names[s] : "UNKNOWN";
}

const char *audit_status_label(enum audit_status s)
{
    static const char *const names[] = {"ok", "warning", "critical", "unknown"};
    return (unsigned)s < 4 ? names[s] : "unknown";
}

/* Orders names as the report does: absent (NULL) first, so a queue's own finding comes before
 * its groups'. */
int audit_cmp_name(const char *a, const char *b)
{
    if (a == b)
        return 0;
    if (!a)
        return -1;
    if (!b)
        return 1;
    return strcmp(a, b);
}

double audit_rule_badness(enum audit_rule rule, double value, double limit)
{
    int below = rule < AUDIT_RULE_COUNT && rules[rule].below;
    double d = below ? limit - value : value - limit;
    return isnan(d) ? 0 : d;
}

/* ---- configuration ---- */

void audit_config_default(struct audit_config *c)
{
    memset(c, 0, sizeof *c);
    c->outbox_lag = AUDIT_DEFAULT_OUTBOX_LAG;
    c->queue_series = AUDIT_DEFAULT_QUEUE_SERIES;
}

/* queue_series: a count, or "all" for the series of every finding. */
static int parse_queue_series(struct cfg_node *map, struct audit_config *c, struct err *e)
{
    struct cfg_node *n = NULL;
    if (cfg_get_node(map, "queue_series", CFG_SCALAR, &n, e))
        return -1;
    if (!n)
        return 0;
    if (strcmp(n->scalar, "all") == 0) {
        c->queue_series = AUDIT_QUEUE_SERIES_ALL;
        return 0;
    }
    long long v;
    if (num_parse_int(n->scalar, 0, 1000000, &v)) {
        char q[64];
        return cfg_error(e, n,
                         "queue_series: want a number of series from 0 to 1000000 or \"all\", "
                         "got %s",
                         cfg_quote(q, sizeof q, n->scalar));
    }
    c->queue_series = (long)v;
    return 0;
}

int audit_config_parse(struct cfg_node *map, struct audit_config *c, struct err *e)
{
    audit_config_default(c);
    if (!map)
        return 0;
    struct cfg_node *list = NULL;
    if (cfg_get_positive_duration(map, "outbox_lag", AUDIT_DEFAULT_OUTBOX_LAG, &c->outbox_lag, e) ||
        cfg_get_node(map, "disabled_rules", CFG_SEQ, &list, e) || parse_queue_series(map, c, e))
        return -1;
    for (size_t i = 0; list && i < list->n; i++) {
        struct cfg_node *item = list->items[i];
        if (cfg_expect(item, CFG_SCALAR, "each entry of disabled_rules", e))
            return -1;
        int found = 0;
        for (int r = 0; r < AUDIT_RULE_COUNT; r++) {
            if (strcmp(item->scalar, rules[r].name) == 0) {
                c->disabled[r] = 1;
                found = 1;
            }
        }
        if (!found) {
            struct buf b;
            buf_init(&b);
            for (int r = 0; r < AUDIT_RULE_COUNT; r++)
                buf_printf(&b, "%s%s", r ? ", " : "", rules[r].name);
            cfg_error(e, item, "disabled_rules: want rule names (%s), got \"%s\"", b.data,
                      item->scalar);
            buf_free(&b);
            return -1;
        }
    }
    return cfg_finish(map, "audit", e);
}
