/* redis_stream/config.c: the keys of a `kind: redis_stream` source (scrape.h) and its state's
 * life. Every key of a mapping is read with its getter before any combination is checked or a
 * missing key is reported, then cfg_finish names a misspelt key with the known ones. No I/O. */
#include "scrape.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "alloc.h"

#define DEFAULT_MAX_STREAMS 10000
#define DEFAULT_PENDING_SCAN_LIMIT 1000
#define DEFAULT_CONSUMER_ACTIVE_WINDOW 300.0 /* seconds */

void redis_stream_destroy(struct collector *c)
{
    struct state *st = c->priv;
    redis_conn_close(st->conn);
    redis_cluster_free(&st->cl);
    for (size_t i = 0; i < st->nspecs; i++) {
        struct stream_spec *sp = &st->specs[i];
        free(sp->name);
        free(sp->pattern);
        exclude_free(&sp->exclude);
        cfg_strv_free(sp->groups);
        free(sp->dlq_tmpl);
    }
    free(st->specs);
    redis_settings_free(&st->rs);
}

/* dead_letter_classify was a block of a stream entry with a connection of its own; it is now the
 * top-level dead_letters list, joined by the core with a postgres source of the file. The error
 * shows the new form with the block's own values, ready to paste. */
static int refuse_classify(struct collector *c, const struct stream_spec *sp,
                           struct cfg_node *block, struct err *e)
{
    struct err ig;
    char *table = NULL, *id_column = NULL, *done = NULL, *id_field = NULL;
    long long max = 0;
    cfg_get_str(block, "table", 0, &table, &ig);
    cfg_get_str(block, "id_column", 0, &id_column, &ig);
    cfg_get_str(block, "done_column", 0, &done, &ig);
    cfg_get_str(block, "id_field", 0, &id_field, &ig);
    if (cfg_get_int(block, "max_entries", 0, 1, 1000000, &max, &ig))
        max = 0;
    char extra[64] = "", done_kv[200] = "";
    if (max > 0)
        snprintf(extra, sizeof extra, ", max_entries: %lld", max);
    if (done)
        snprintf(done_kv, sizeof done_kv, ", done_column: %.120s", done);
    cfg_error(e, block,
              "dead_letter_classify: moved to the top level, reading the table through a postgres "
              "source of this file: dead_letters: [{source: %s, queue: %.120s, id_field: %.60s%s, "
              "work_table: {source: "
              "<postgres source>, table: %.120s, id_column: %.60s%s}}]",
              c->name, sp->name ? sp->name : "<a stream of the pattern>",
              id_field ? id_field : "<id_field>", extra, table ? table : "<table>",
              id_column ? id_column : "<id_column>", done_kv);
    free(table);
    free(id_column);
    free(done);
    free(id_field);
    return -1;
}

static int configure_stream(struct collector *c, struct state *st, struct cfg_node *item,
                            size_t index, struct err *e)
{
    if (cfg_expect(item, CFG_MAP, "each entry of streams", e))
        return -1;
    st->specs = xrealloc(st->specs, (st->nspecs + 1) * sizeof *st->specs);
    struct stream_spec *sp = &st->specs[st->nspecs++];
    memset(sp, 0, sizeof *sp);
    sp->pol.claim_min_idle = -1;

    struct cfg_node *groups_node = NULL, *idle = NULL, *max_deliveries = NULL, *block = NULL;
    if (cfg_get_str(item, "name", 0, &sp->name, e) ||
        cfg_get_str(item, "pattern", 0, &sp->pattern, e) ||
        exclude_read(&sp->exclude, item, "exclude", NULL, e) ||
        cfg_get_node(item, "groups", CFG_SEQ, &groups_node, e) ||
        cfg_get_strlist(item, "groups", &sp->groups, &sp->ngroups, e) ||
        cfg_get_duration(item, "claim_min_idle", -1.0, &sp->pol.claim_min_idle, e) ||
        cfg_get_node(item, "claim_min_idle", CFG_SCALAR, &idle, e) ||
        cfg_get_node(item, "max_deliveries", CFG_SCALAR, &max_deliveries, e) ||
        (max_deliveries &&
         cfg_get_int(item, "max_deliveries", 1, 1, 1000000, &sp->pol.max_deliveries, e)) ||
        cfg_get_str(item, "dead_letter_stream", 0, &sp->dlq_tmpl, e) ||
        cfg_get_node(item, "dead_letter_classify", CFG_MAP, &block, e))
        return -1;
    int one = !sp->name != !sp->pattern;
    const char *key = sp->name ? "name" : "pattern";
    const char *val = sp->name ? sp->name : sp->pattern;
    char where[400];
    if (one)
        snprintf(where, sizeof where, "%s \"%s\" of source \"%s\"", sp->name ? "stream" : "pattern",
                 val, c->name);
    else
        snprintf(where, sizeof where, "entry %zu of streams of source \"%s\"", index + 1, c->name);
    if (cfg_finish(item, where, e))
        return -1;

    if (!one)
        return cfg_error(e, item, "want exactly one of name and pattern in each entry of streams");
    if (exclude_check(&sp->exclude, item, e))
        return -1;
    if (sp->name && exclude_any(&sp->exclude)) /* it would only hide the stream it names */
        return cfg_error(e, cfg_at(item, "exclude"),
                         "exclude: only with pattern (name selects one stream)");
    if (!*val)
        return cfg_error(e, cfg_at(item, key), "%s: want a non-empty string", key);
    for (size_t i = 0; i + 1 < st->nspecs; i++) {
        const char *other = sp->name ? st->specs[i].name : st->specs[i].pattern;
        if (other && strcmp(other, val) == 0)
            return cfg_error(e, cfg_at(item, key), "%s: \"%s\" is listed twice", key, val);
    }
    if (groups_node && sp->ngroups == 0)
        return cfg_error(e, groups_node,
                         "groups: want at least one group name (leave groups out for every group)");
    if (idle && sp->pol.claim_min_idle <= 0)
        return cfg_error(e, idle, "claim_min_idle: want a duration above 0");
    if (!idle)
        sp->pol.claim_min_idle = -1;
    if (sp->dlq_tmpl && !*sp->dlq_tmpl)
        return cfg_error(e, cfg_at(item, "dead_letter_stream"),
                         "dead_letter_stream: want a non-empty stream name");
    if (sp->dlq_tmpl && (sp->name || strcmp(sp->dlq_tmpl, "{stream}") == 0)) {
        /* Its own dead-letter stream: a dead letter would be delivered again, and a replay
         * would move nothing anywhere. */
        char *d = sp->name ? redis_stream_dlq_name(sp->dlq_tmpl, sp->name) : NULL;
        int self = !sp->name || strcmp(d, sp->name) == 0;
        free(d);
        if (self)
            return cfg_error(e, cfg_at(item, "dead_letter_stream"),
                             "dead_letter_stream: \"%s\" is %s \"%s\" itself (a dead letter "
                             "would be delivered again)",
                             sp->dlq_tmpl, sp->name ? "stream" : "every stream of pattern", val);
    }
    if (block)
        return refuse_classify(c, sp, block, e);
    return 0;
}

int redis_stream_configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    struct cfg_node *streams = NULL;
    if (cfg_refuse_renamed(map, "max_reply_bytes", "max_response_bytes", NULL, e) ||
        redis_settings_read(map, &st->rs, e) ||
        cfg_get_int(map, "max_streams", DEFAULT_MAX_STREAMS, 1, 10000000, &st->max_streams, e) ||
        cfg_get_int(map, "pending_scan_limit", DEFAULT_PENDING_SCAN_LIMIT, 1, 1000000,
                    &st->pending_scan_limit, e) ||
        cfg_get_positive_duration(map, "consumer_active_window", DEFAULT_CONSUMER_ACTIVE_WINDOW,
                                  &st->consumer_active_window, e) ||
        cfg_get_node(map, "streams", CFG_SEQ, &streams, e) || collector_finish(c, map, e) ||
        redis_settings_check(map, &st->rs, e))
        return -1;
    if (!streams || streams->n == 0)
        return cfg_error(e, streams ? streams : map,
                         "streams: want a list of at least one {name: ...} or {pattern: ...}");
    for (size_t i = 0; i < streams->n; i++)
        if (configure_stream(c, st, streams->items[i], i, e))
            return -1;
    return 0;
}

const struct stream_spec *redis_stream_spec_of(const struct state *st, const char *queue)
{
    for (size_t i = 0; i < st->nspecs; i++)
        if (st->specs[i].name && strcmp(st->specs[i].name, queue) == 0)
            return &st->specs[i];
    for (size_t i = 0; i < st->nspecs; i++)
        if (st->specs[i].pattern && fnmatch(st->specs[i].pattern, queue, 0) == 0)
            return &st->specs[i];
    return NULL;
}
