/* check_metrics.c: unit tests for the metric catalogue and the metric set.
 *
 * The catalogue is the public API, so it is pinned here against the family list of the design:
 * a family that disappears or changes type fails this test before it breaks a dashboard. */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "support/check_run.h"
#include "support/random_samples.h"

/* Every family of the metric contract, with its type. */
static const struct {
    const char *name;
    enum metric_type type;
} expected_families[] = {
    {"qrel_queue_messages", METRIC_GAUGE},
    {"qrel_queue_oldest_message_age_seconds", METRIC_GAUGE},
    {"qrel_consumer_lag_seconds", METRIC_GAUGE},
    {"qrel_lease_timeout_seconds", METRIC_GAUGE},
    {"qrel_lease_oldest_age_seconds", METRIC_GAUGE},
    {"qrel_handler_duration_seconds", METRIC_SUMMARY},
    {"qrel_lease_margin_ratio", METRIC_GAUGE},
    {"qrel_max_deliveries", METRIC_GAUGE},
    {"qrel_redeliveries_total", METRIC_COUNTER},
    {"qrel_messages_redelivered", METRIC_GAUGE},
    {"qrel_messages_consumed_total", METRIC_COUNTER},
    {"qrel_messages_dead_lettered_total", METRIC_COUNTER},
    {"qrel_lease_expiries_total", METRIC_COUNTER},
    {"qrel_lease_orphaned_messages", METRIC_GAUGE},
    {"qrel_lease_eta_beyond_messages", METRIC_GAUGE},
    /* nor these: Laravel's leases expired under a running handler, and its worker timeout */
    {"qrel_lease_expired_messages", METRIC_GAUGE},
    {"qrel_handler_timeout_seconds", METRIC_GAUGE},
    {"qrel_dedup_handled_messages", METRIC_GAUGE},
    {"qrel_dedup_duplicates_total", METRIC_COUNTER},
    {"qrel_dead_letter_messages", METRIC_GAUGE},
    {"qrel_dead_letter_oldest_age_seconds", METRIC_GAUGE},
    {"qrel_dead_letter_replayed_messages", METRIC_GAUGE},
    {"qrel_dead_letter_newest_age_seconds", METRIC_GAUGE},
    {"qrel_dead_letter_classified_messages", METRIC_GAUGE},
    {"qrel_dead_letter_classify_errors_total", METRIC_COUNTER},
    {"qrel_claims", METRIC_GAUGE},
    {"qrel_claim_in_flight_window_seconds", METRIC_GAUGE},
    {"qrel_outbox_pending_messages", METRIC_GAUGE},
    {"qrel_outbox_oldest_pending_age_seconds", METRIC_GAUGE},
    {"qrel_dedup_window_seconds", METRIC_GAUGE},
    {"qrel_retry_horizon_seconds", METRIC_GAUGE},
    /* not in design/metrics.md: the non-numeric settings of a queue (pubsub), see docs */
    {"qrel_queue_consumers", METRIC_GAUGE},
    {"qrel_queue_info", METRIC_GAUGE},
    /* not in design/metrics.md either: rows stamped ahead of the database's now() (issue 14) */
    {"qrel_excluded_objects", METRIC_GAUGE},
    {"qrel_future_stamped_rows", METRIC_GAUGE},
    /* nor this: redis_stream groups whose pending scan pending_scan_limit cut short (issue 14) */
    {"qrel_pending_scan_truncated_groups", METRIC_GAUGE},
    /* nor this: entries a kind could not read and passed over (issue 29) */
    {"qrel_skipped_entries", METRIC_GAUGE},
    /* nor this: a job runner that deletes its failed jobs (delayed_job, issue 25) */
    {"qrel_dead_letters_not_kept", METRIC_GAUGE},
    {"qrel_source_queues", METRIC_GAUGE},
    {"qrel_queue_retention_seconds", METRIC_GAUGE},
    {"qrel_dead_letter_retention_seconds", METRIC_GAUGE},
    {"qrel_audit_failed", METRIC_GAUGE},
    {"qrel_audit_failed_queues", METRIC_GAUGE},
    {"qrel_collector_up", METRIC_GAUGE},
    {"qrel_collector_duration_seconds", METRIC_GAUGE},
    {"qrel_collector_last_success_timestamp_seconds", METRIC_GAUGE},
    {"qrel_collector_errors_total", METRIC_COUNTER},
    {"qrel_sample_age_seconds", METRIC_GAUGE},
    {"qrel_build_info", METRIC_GAUGE},
    {"qrel_config_last_reload_successful", METRIC_GAUGE},
    {"qrel_config_last_reload_success_timestamp_seconds", METRIC_GAUGE},
    /* the exporter's process and HTTP server (issue 23), the process_* ones named as every
     * Prometheus client library names them */
    {"qrel_http_requests_total", METRIC_COUNTER},
    {"process_cpu_seconds_total", METRIC_COUNTER},
    {"process_max_fds", METRIC_GAUGE},
    {"process_open_fds", METRIC_GAUGE},
    {"process_resident_memory_bytes", METRIC_GAUGE},
    {"process_start_time_seconds", METRIC_GAUGE},
    {"process_virtual_memory_bytes", METRIC_GAUGE},
};

#define N_EXPECTED (sizeof expected_families / sizeof expected_families[0])

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

START_TEST(test_catalog_sorted)
{
    ck_assert_uint_gt(metric_catalog_count(), 0);
    for (size_t i = 1; i < metric_catalog_count(); i++)
        ck_assert_msg(strcmp(metric_catalog_at(i - 1)->name, metric_catalog_at(i)->name) < 0,
                      "%s before %s", metric_catalog_at(i - 1)->name, metric_catalog_at(i)->name);
    ck_assert_ptr_null(metric_catalog_at(metric_catalog_count()));
}
END_TEST

START_TEST(test_catalog_names_types_help)
{
    regex_t re;
    /* process_: the client libraries' standard families, kept under their usual names. */
    ck_assert_int_eq(regcomp(&re, "^(qrel|process)_[a-z0-9_]+$", REG_EXTENDED | REG_NOSUB), 0);
    for (size_t i = 0; i < metric_catalog_count(); i++) {
        const struct metric_family *f = metric_catalog_at(i);
        ck_assert_msg(regexec(&re, f->name, 0, NULL, 0) == 0, "bad name %s", f->name);
        if (f->type == METRIC_COUNTER)
            ck_assert_msg(ends_with(f->name, "_total"), "counter %s lacks _total", f->name);
        else
            ck_assert_msg(!ends_with(f->name, "_total"), "gauge %s ends in _total", f->name);
        ck_assert_ptr_nonnull(f->help);
        ck_assert_msg(strlen(f->help) > 20, "%s: HELP too short", f->name);
        ck_assert_msg(strchr(f->help, '\n') == NULL, "%s: HELP has a newline", f->name);
        ck_assert_ptr_eq(metric_catalog_find(f->name), f);
    }
    regfree(&re);
}
END_TEST

START_TEST(test_catalog_matches_contract)
{
    ck_assert_uint_eq(metric_catalog_count(), N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const struct metric_family *f = metric_catalog_find(expected_families[i].name);
        ck_assert_msg(f != NULL, "missing %s", expected_families[i].name);
        ck_assert_str_eq(f->name, expected_families[i].name);
        ck_assert_int_eq(f->type, expected_families[i].type);
    }
}
END_TEST

START_TEST(test_catalog_find_misses)
{
    ck_assert_ptr_null(metric_catalog_find(NULL));
    ck_assert_ptr_null(metric_catalog_find(""));
    ck_assert_ptr_null(metric_catalog_find("qrel_foo"));
    ck_assert_ptr_null(metric_catalog_find("qrel_collector_errors")); /* counters keep _total */
    ck_assert_ptr_null(metric_catalog_find("qrel_queue_messages_"));
    ck_assert_ptr_null(metric_catalog_find("a"));
    ck_assert_ptr_null(metric_catalog_find("zzz"));
}
END_TEST

static const struct {
    const char *name;
    int valid;
} label_names[] = {
    {"queue", 1}, {"_x", 1},     {"Group2", 1},   {"a_b_c", 1}, {"_", 1},
    {"", 0},      {"__name", 0}, {"__", 0},       {"2x", 0},    {"a-b", 0},
    {"a.b", 0},   {"a b", 0},    {"\xc3\xa9", 0}, {"x\n", 0},
};

START_TEST(test_label_name_valid)
{
    const char *n = label_names[_i].name;
    ck_assert_msg(metric_label_name_valid(n) == label_names[_i].valid, "\"%s\"", n);
}
END_TEST

START_TEST(test_label_name_null)
{
    ck_assert_int_eq(metric_label_name_valid(NULL), 0);
}
END_TEST

static void assert_label(const struct metric_sample *sm, size_t i, const char *name,
                         const char *value)
{
    ck_assert_uint_lt(i, sm->nlabels);
    ck_assert_str_eq(sm->labels[i].name, name);
    ck_assert_str_eq(sm->labels[i].value, value);
    ck_assert_uint_eq(sm->labels[i].name_len, strlen(name));
    ck_assert_uint_eq(sm->labels[i].value_len, strlen(value));
    ck_assert_int_eq(sm->labels[i].value_escape, strcspn(value, "\\\"\n") < strlen(value));
}

/* Sample i of s, the way the tests below look at it. */
static struct metric_sample get(const struct metric_set *s, size_t i)
{
    struct metric_sample sm;
    metric_set_get(s, i, &sm);
    return sm;
}

START_TEST(test_add_with_base_labels)
{
    struct metric_set *s = metric_set_new("cache", "redis_stream");
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", 3.0, "queue", "orders", "group",
                                    "mailer", "state", "ready", NULL),
                     0);
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1.0, NULL), 0);
    ck_assert_uint_eq(metric_set_len(s), 2);

    struct metric_sample sm = get(s, 0);
    ck_assert_ptr_eq(sm.family, metric_catalog_find("qrel_queue_messages"));
    ck_assert_ptr_eq(metric_set_family(s, 0), sm.family);
    ck_assert_double_eq(sm.value, 3.0);
    ck_assert_uint_eq(sm.nlabels, 5);
    assert_label(&sm, 0, "source", "cache");
    assert_label(&sm, 1, "kind", "redis_stream");
    assert_label(&sm, 2, "queue", "orders");
    assert_label(&sm, 3, "group", "mailer");
    assert_label(&sm, 4, "state", "ready");

    sm = get(s, 1);
    ck_assert_ptr_eq(sm.family, metric_catalog_find("qrel_collector_up"));
    ck_assert_ptr_eq(metric_set_family(s, 1), sm.family);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 0, "source", "cache");
    assert_label(&sm, 1, "kind", "redis_stream");
    /* Out of range: no family, no labels. */
    sm = get(s, 2);
    ck_assert_ptr_null(sm.family);
    ck_assert_uint_eq(sm.nlabels, 0);
    ck_assert_ptr_null(metric_set_family(s, 2));
    ck_assert_ptr_null(metric_set_error(s));
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_without_base_labels)
{
    struct metric_set *s = metric_set_new(NULL, NULL);
    ck_assert_int_eq(
        metric_set_add(s, "qrel_build_info", 1, "version", "0.1.0", "revision", "abc", NULL), 0);
    ck_assert_int_eq(metric_set_add(s, "qrel_config_last_reload_successful", 1, NULL), 0);
    struct metric_sample sm = get(s, 0);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 0, "version", "0.1.0");
    assert_label(&sm, 1, "revision", "abc");
    sm = get(s, 1);
    ck_assert_ptr_eq(sm.family, metric_catalog_find("qrel_config_last_reload_successful"));
    ck_assert_uint_eq(sm.nlabels, 0);
    /* set_kind has nothing to change on a set without base labels */
    metric_set_set_kind(s, "postgres");
    ck_assert_int_eq(metric_set_add(s, "qrel_config_last_reload_successful", 0, NULL), 0);
    ck_assert_uint_eq(get(s, 2).nlabels, 0);
    /* and labels named like the base ones are ordinary labels there */
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, "source", "s", "kind", "k", NULL),
                     0);
    sm = get(s, 3);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 0, "source", "s");
    assert_label(&sm, 1, "kind", "k");
    metric_set_free(s);
}
END_TEST

START_TEST(test_set_kind)
{
    struct metric_set *s = metric_set_new("shop-db", "postgres");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    metric_set_set_kind(s, "dedup_table");
    ck_assert_int_eq(metric_set_add(s, "qrel_dedup_handled_messages", 42, "queue", "handled", NULL),
                     0);
    metric_set_set_kind(s, "outbox");
    ck_assert_int_eq(metric_set_add(s, "qrel_outbox_pending_messages", 7, "queue", "outbox", NULL),
                     0);
    struct metric_sample sm = get(s, 0);
    assert_label(&sm, 1, "kind", "postgres");
    sm = get(s, 1);
    assert_label(&sm, 1, "kind", "dedup_table");
    sm = get(s, 2);
    assert_label(&sm, 0, "source", "shop-db");
    assert_label(&sm, 1, "kind", "outbox");
    assert_label(&sm, 2, "queue", "outbox");

    /* Only the last of several set_kind calls without an add in between counts. */
    metric_set_set_kind(s, "claim_table");
    metric_set_set_kind(s, "dedup_table");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    /* No kind: the samples have the source label only, and "kind" is free to use. */
    metric_set_set_kind(s, NULL);
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, "kind", "mine", NULL), 0);
    metric_set_set_kind(s, "outbox");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    ck_assert_uint_eq(metric_set_len(s), 7);
    sm = get(s, 3);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 1, "kind", "dedup_table");
    sm = get(s, 4);
    ck_assert_uint_eq(sm.nlabels, 1);
    assert_label(&sm, 0, "source", "shop-db");
    sm = get(s, 5);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 1, "kind", "mine");
    sm = get(s, 6);
    ck_assert_uint_eq(sm.nlabels, 2);
    assert_label(&sm, 1, "kind", "outbox");
    /* The earlier samples keep their kinds. */
    sm = get(s, 0);
    assert_label(&sm, 1, "kind", "postgres");
    sm = get(s, 2);
    assert_label(&sm, 1, "kind", "outbox");
    ck_assert_ptr_null(metric_set_error(s));
    metric_set_free(s);
}
END_TEST

/* qrel_source_queues' count: distinct non-empty queue values over every family and schema (the
 * queue label at another position in another family's samples), nothing for a set without it. */
START_TEST(test_distinct_values)
{
    struct metric_set *s = metric_set_new("src", "bullmq");
    ck_assert_uint_eq(metric_set_distinct_values(s, "queue"), 0);
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "a", "state", "ready", NULL);
    metric_set_add(s, "qrel_queue_messages", 1, "queue", "a", "state", "in_flight", NULL);
    metric_set_add(s, "qrel_dead_letter_messages", 0, "dead_letter_queue", "failed", "queue", "b",
                   NULL);
    metric_set_add(s, "qrel_skipped_entries", 2, "queue", "", "reason", "not_json", NULL);
    metric_set_add(s, "qrel_excluded_objects", 1, "object", "queue", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "c", NULL);
    metric_set_add(s, "qrel_lease_timeout_seconds", 30, "queue", "a", NULL);
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_uint_eq(metric_set_distinct_values(s, "queue"), 3);
    ck_assert_uint_eq(metric_set_distinct_values(s, "state"), 2);
    ck_assert_uint_eq(metric_set_distinct_values(s, "group"), 0);
    ck_assert_uint_eq(metric_set_distinct_values(NULL, "queue"), 0);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_copies_strings)
{
    char source[] = "src";
    char queue[] = "orders";
    char name[] = "queue";
    struct metric_set *s = metric_set_new(source, "redis_stream");
    ck_assert_int_eq(
        metric_set_add(s, "qrel_queue_oldest_message_age_seconds", 1.5, name, queue, NULL), 0);
    source[0] = 'X';
    queue[0] = 'X';
    name[0] = 'X';
    struct metric_sample sm = get(s, 0);
    assert_label(&sm, 0, "source", "src");
    assert_label(&sm, 2, "queue", "orders");
    ck_assert_double_eq(sm.value, 1.5);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_empty_value)
{
    struct metric_set *s = metric_set_new("a", "redis_stream");
    ck_assert_int_eq(
        metric_set_add(s, "qrel_consumer_lag_seconds", 0, "queue", "", "group", "", NULL), 0);
    struct metric_sample sm = get(s, 0);
    assert_label(&sm, 2, "queue", "");
    assert_label(&sm, 3, "group", "");
    metric_set_free(s);
}
END_TEST

START_TEST(test_utf8_sanitize)
{
    /* Redis key names are binary: they must come out as valid UTF-8. */
    struct metric_set *s = metric_set_new("bad\xc3", "redis_stream");
    ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", 1, "queue", "a\xff b", "group",
                                    "caf\xc3\xa9", "state", "\xed\xa0\x80", NULL),
                     0);
    struct metric_sample sm = get(s, 0);
    assert_label(&sm, 0, "source", "bad\xEF\xBF\xBD");
    assert_label(&sm, 2, "queue", "a\xEF\xBF\xBD b");
    assert_label(&sm, 3, "group", "caf\xc3\xa9"); /* valid UTF-8 stays as it is */
    assert_label(&sm, 4, "state", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* a surrogate */
    metric_set_set_kind(s, "k\x80");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    sm = get(s, 1);
    assert_label(&sm, 1, "kind", "k\xEF\xBF\xBD");
    metric_set_free(s);
}
END_TEST

START_TEST(test_errors)
{
    struct metric_set *s = metric_set_new("a", "redis_stream");
    ck_assert_int_eq(metric_set_add(s, "qrel_foo", 1, "queue", "q", NULL), -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_str_eq(metric_set_error(s), "unknown metric family \"qrel_foo\"");

    /* Later errors are refused too, but the first one is the one reported. */
    ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", 1, "2bad", "q", NULL), -1);
    ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", 1, "queue", NULL), -1);
    ck_assert_int_eq(metric_set_add(s, NULL, 1, NULL), -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_str_eq(metric_set_error(s), "unknown metric family \"qrel_foo\"");

    /* A good add still works after errors. */
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    ck_assert_uint_eq(metric_set_len(s), 1);
    metric_set_free(s);
}
END_TEST

static const struct {
    const char *family;
    const char *name;  /* label name passed */
    const char *value; /* label value passed (NULL tests the NULL value) */
    const char *error;
} add_errors[] = {
    {"qrel_bar", "queue", "q", "unknown metric family \"qrel_bar\""},
    {"qrel_queue_messages", "2bad", "q", "qrel_queue_messages: invalid label name \"2bad\""},
    {"qrel_queue_messages", "__name__", "q",
     "qrel_queue_messages: invalid label name \"__name__\""},
    {"qrel_queue_messages", "que-ue", "q", "qrel_queue_messages: invalid label name \"que-ue\""},
    {"qrel_queue_messages", "queue", NULL, "qrel_queue_messages: label \"queue\" has a NULL value"},
    {"qrel_queue_messages", "source", "x", "qrel_queue_messages: duplicate label \"source\""},
    {"qrel_queue_messages", "kind", "x", "qrel_queue_messages: duplicate label \"kind\""},
};

START_TEST(test_add_error_table)
{
    struct metric_set *s = metric_set_new("a", "redis_stream");
    ck_assert_int_eq(metric_set_add(s, add_errors[_i].family, 1, "state", "ready",
                                    add_errors[_i].name, add_errors[_i].value, NULL),
                     -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_str_eq(metric_set_error(s), add_errors[_i].error);
    metric_set_free(s);
}
END_TEST

START_TEST(test_duplicate_extra_label)
{
    struct metric_set *s = metric_set_new(NULL, NULL);
    ck_assert_int_eq(metric_set_add(s, "qrel_build_info", 1, "version", "1", "version", "2", NULL),
                     -1);
    ck_assert_str_eq(metric_set_error(s), "qrel_build_info: duplicate label \"version\"");
    metric_set_free(s);
}
END_TEST

START_TEST(test_null_set)
{
    metric_set_free(NULL);
    ck_assert_uint_eq(metric_set_len(NULL), 0);
    struct metric_sample sm = get(NULL, 0);
    ck_assert_ptr_null(sm.family);
    ck_assert_uint_eq(sm.nlabels, 0);
    ck_assert_ptr_null(metric_set_family(NULL, 0));
    ck_assert_ptr_null(metric_set_error(NULL));
    ck_assert_uint_eq(metric_set_bytes(NULL), 0);
    ck_assert_int_eq(metric_set_add(NULL, "qrel_collector_up", 1, NULL), -1);
}
END_TEST

START_TEST(test_large_set)
{
    const int N = large_count(100000);
    struct metric_set *s = metric_set_new("big", "redis_stream");
    char queue[32];
    for (int i = 0; i < N; i++) {
        snprintf(queue, sizeof queue, "stream:%d", i);
        ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", (double)i, "queue", queue,
                                        "group", "g", "state", i % 2 ? "ready" : "in_flight", NULL),
                         0);
    }
    ck_assert_uint_eq(metric_set_len(s), N);
    for (int i = 0; i < N; i += 997) {
        struct metric_sample sm = get(s, (size_t)i);
        snprintf(queue, sizeof queue, "stream:%d", i);
        ck_assert_double_eq(sm.value, (double)i);
        assert_label(&sm, 0, "source", "big");
        assert_label(&sm, 2, "queue", queue);
        assert_label(&sm, 3, "group", "g");
        assert_label(&sm, 4, "state", i % 2 ? "ready" : "in_flight");
    }
    ck_assert_ptr_null(metric_set_error(s));
    metric_set_free(s);
}
END_TEST

START_TEST(test_label_limit)
{
    /* With the two base labels, 14 more make METRIC_MAX_LABELS; one more is refused. */
    struct metric_set *s = metric_set_new("a", "redis_stream");
#define L14                                                                                        \
    "l0", "0", "l1", "1", "l2", "2", "l3", "3", "l4", "4", "l5", "5", "l6", "6", "l7", "7", "l8",  \
        "8", "l9", "9", "l10", "10", "l11", "11", "l12", "12", "l13", "13"
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, L14, NULL), 0);
    struct metric_sample sm = get(s, 0);
    ck_assert_uint_eq(sm.nlabels, METRIC_MAX_LABELS);
    assert_label(&sm, 15, "l13", "13");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, L14, "l14", "14", NULL), -1);
    ck_assert_str_eq(metric_set_error(s), "qrel_collector_up: more than 16 labels");
    ck_assert_uint_eq(metric_set_len(s), 1);
    metric_set_free(s);

    /* Without base labels all 16 are the caller's. */
    s = metric_set_new(NULL, NULL);
    ck_assert_int_eq(metric_set_add(s, "qrel_build_info", 1, L14, "l14", "14", "l15", "15", NULL),
                     0);
    ck_assert_uint_eq(get(s, 0).nlabels, METRIC_MAX_LABELS);
    ck_assert_int_eq(
        metric_set_add(s, "qrel_build_info", 1, L14, "l14", "14", "l15", "15", "l16", "16", NULL),
        -1);
    ck_assert_str_eq(metric_set_error(s), "qrel_build_info: more than 16 labels");
#undef L14
    metric_set_free(s);
}
END_TEST

START_TEST(test_strings_stored_once)
{
    struct metric_set *s = metric_set_new("cache", "redis_stream");
    ck_assert_int_eq(
        metric_set_add(s, "qrel_queue_messages", 1, "queue", "q", "state", "ready", NULL), 0);
    ck_assert_int_eq(
        metric_set_add(s, "qrel_consumer_lag_seconds", 2, "queue", "q", "group", "ready", NULL), 0);
    struct metric_sample a = get(s, 0), b = get(s, 1);
    ck_assert_ptr_eq(a.labels[0].value, b.labels[0].value); /* source */
    ck_assert_ptr_eq(a.labels[2].name, b.labels[2].name);   /* "queue" */
    ck_assert_ptr_eq(a.labels[2].value, b.labels[2].value); /* "q" */
    ck_assert_ptr_eq(a.labels[3].value, b.labels[3].value); /* "ready", under two names */
    assert_label(&b, 3, "group", "ready");
    metric_set_free(s);
}
END_TEST

/* Values found among the recent ones at their position (intern_value's ring) are the very
 * strings they equal and nothing else: a prefix, an extension, an empty value, a cycle longer
 * than the ring, and a value repaired to UTF-8 twice. */
START_TEST(test_recent_values)
{
    static const char *const vals[] = {
        "ab", "abc", "a", "",  "abc", "ab",   "b\"q", "ab",           "x",
        "y",  "z",   "w", "v", "ab",  "\xff", "\xff", "\xef\xbf\xbd", "ab"};
    const size_t n = sizeof vals / sizeof vals[0];
    struct metric_set *s = metric_set_new("src", "redis_stream");
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", (double)i, "queue", vals[i],
                                        "state", vals[n - 1 - i], NULL),
                         0);
    for (size_t i = 0; i < n; i++) {
        struct metric_sample m = get(s, i);
        const char *want = strcmp(vals[i], "\xff") == 0 ? "\xef\xbf\xbd" : vals[i];
        const char *want_state =
            strcmp(vals[n - 1 - i], "\xff") == 0 ? "\xef\xbf\xbd" : vals[n - 1 - i];
        assert_label(&m, 2, "queue", want);
        assert_label(&m, 3, "state", want_state);
        ck_assert_uint_eq(m.labels[2].value_len, strlen(want));
        ck_assert_int_eq(m.labels[2].value_escape, strchr(want, '"') != NULL);
        for (size_t k = 0; k < i; k++) { /* every string once: equal values, equal pointers */
            struct metric_sample o = get(s, k);
            ck_assert_int_eq(o.labels[2].value == m.labels[2].value,
                             strcmp(o.labels[2].value, want) == 0);
        }
    }
    metric_set_free(s);
}
END_TEST

START_TEST(test_label_names_vary)
{
    /* One family with different label names from one add to the next. */
    struct metric_set *s = metric_set_new("a", "postgres");
    for (int i = 0; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        switch (i % 4) {
        case 0:
            ck_assert_int_eq(metric_set_add(s, "qrel_claims", i, "queue", v, NULL), 0);
            break;
        case 1:
            ck_assert_int_eq(metric_set_add(s, "qrel_claims", i, "queue", v, "state", v, NULL), 0);
            break;
        case 2:
            ck_assert_int_eq(metric_set_add(s, "qrel_claims", i, "state", v, "queue", v, NULL), 0);
            break;
        default:
            ck_assert_int_eq(metric_set_add(s, "qrel_claims", i, NULL), 0);
            break;
        }
    }
    for (int i = 0; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        struct metric_sample sm = get(s, (size_t)i);
        ck_assert_double_eq(sm.value, i);
        static const size_t nlabels[] = {3, 4, 4, 2};
        ck_assert_uint_eq(sm.nlabels, nlabels[i % 4]);
        if (i % 4 == 0 || i % 4 == 1)
            assert_label(&sm, 2, "queue", v);
        if (i % 4 == 1)
            assert_label(&sm, 3, "state", v);
        if (i % 4 == 2) {
            assert_label(&sm, 2, "state", v);
            assert_label(&sm, 3, "queue", v);
        }
    }
    metric_set_free(s);
}
END_TEST

START_TEST(test_long_values)
{
    /* Values around and beyond the set's 64 KiB storage chunks, between short ones. */
    static const size_t sizes[] = {10, 65535, 3, 65536, 65537, 7, 200000, 1, 40000, 40000, 0};
    enum { N = sizeof sizes / sizeof sizes[0] };
    char *vals[N];
    struct metric_set *s = metric_set_new("a", "redis_stream");
    for (size_t i = 0; i < N; i++) {
        vals[i] = malloc(sizes[i] + 1);
        ck_assert_ptr_nonnull(vals[i]);
        for (size_t k = 0; k < sizes[i]; k++)
            vals[i][k] = (char)('a' + (i + k) % 26);
        if (sizes[i] > 100)
            vals[i][sizes[i] / 2] = '"';
        vals[i][sizes[i]] = '\0';
        ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", (double)i, "queue", vals[i],
                                        "group", "g", NULL),
                         0);
    }
    for (size_t i = 0; i < N; i++) {
        struct metric_sample sm = get(s, i);
        ck_assert_double_eq(sm.value, (double)i);
        ck_assert_uint_eq(sm.labels[2].value_len, sizes[i]);
        ck_assert(memcmp(sm.labels[2].value, vals[i], sizes[i] + 1) == 0);
        ck_assert_int_eq(sm.labels[2].value_escape, sizes[i] > 100);
        assert_label(&sm, 3, "group", "g");
        free(vals[i]);
    }
    metric_set_free(s);
}
END_TEST

/* ---- families outside the catalogue ---- */

static const struct {
    const char *name;
    enum metric_type type;
    const char *help;
    const char *why; /* NULL: valid */
} family_checks[] = {
    {"shop_orders_pending", METRIC_GAUGE, "Orders not yet shipped.", NULL},
    {"shop:orders:rate5m", METRIC_GAUGE, "h", NULL},
    {"_x", METRIC_GAUGE, "h", NULL},
    {":x", METRIC_GAUGE, "h", NULL},
    {"shop_refunds_total", METRIC_COUNTER, "h", NULL},
    {"Shop_2", METRIC_GAUGE, "h", NULL},
    {"qrel", METRIC_GAUGE, "h", NULL},
    {"", METRIC_GAUGE, "h", "the name is empty"},
    {NULL, METRIC_GAUGE, "h", "the name is empty"},
    {"2shop", METRIC_GAUGE, "h", "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"shop-orders", METRIC_GAUGE, "h", "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"shop orders", METRIC_GAUGE, "h", "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"shop.orders", METRIC_GAUGE, "h", "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"caf\xc3\xa9", METRIC_GAUGE, "h", "the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"qrel_queue_messages", METRIC_GAUGE, "h", "the name is taken by one of qrel's own families"},
    {"qrel_redeliveries_total", METRIC_COUNTER, "h",
     "the name is taken by one of qrel's own families"},
    {"qrel_my_orders", METRIC_GAUGE, "h",
     "names starting with qrel_ are reserved for qrel's own families"},
    {"shop_refunds", METRIC_COUNTER, "h", "a counter's name must end in _total"},
    {"_total", METRIC_COUNTER, "h", "a counter's name must end in _total"},
    {"shop_refunds_total", METRIC_GAUGE, "h",
     "a gauge's name must not end in _total (the suffix marks counters)"},
    {"shop_orders", (enum metric_type)7, "h", "the type must be gauge or counter"},
    {"shop_orders", METRIC_GAUGE, "", "the help text is empty"},
    {"shop_orders", METRIC_GAUGE, NULL, "the help text is empty"},
};

START_TEST(test_family_validate)
{
    char why[128] = "unchanged";
    int rc = metric_family_validate(family_checks[_i].name, family_checks[_i].type,
                                    family_checks[_i].help, why, sizeof why);
    const char *name = family_checks[_i].name ? family_checks[_i].name : "(null)";
    if (!family_checks[_i].why) {
        ck_assert_msg(rc == 0, "\"%s\" refused: %s", name, why);
        ck_assert_str_eq(why, "unchanged");
    } else {
        ck_assert_msg(rc == -1, "\"%s\" accepted", name);
        ck_assert_str_eq(why, family_checks[_i].why);
    }
}
END_TEST

START_TEST(test_family_validate_why_optional)
{
    ck_assert_int_eq(metric_family_validate("2x", METRIC_GAUGE, "h", NULL, 0), -1);
    char why[8];
    ck_assert_int_eq(metric_family_validate("2x", METRIC_GAUGE, "h", why, sizeof why), -1);
    ck_assert_str_eq(why, "the nam"); /* truncated, terminated */
}
END_TEST

static const struct metric_family shop_pending = {"shop_orders_pending", METRIC_GAUGE,
                                                  "Orders not yet shipped."};
static const struct metric_family shop_refunds = {"shop_refunds_total", METRIC_COUNTER,
                                                  "Refunds since the shop opened."};

START_TEST(test_add_family)
{
    struct metric_set *s = metric_set_new("db", "sql");
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 4, "region", "eu", NULL), 0);
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(s, &shop_refunds, 9, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 5, "region", "us", NULL), 0);
    /* a catalogue pointer is the catalogue family */
    ck_assert_int_eq(metric_set_add_family(s, metric_catalog_find("qrel_collector_up"), 0, NULL),
                     0);
    ck_assert_ptr_null(metric_set_error(s));
    ck_assert_uint_eq(metric_set_len(s), 5);

    size_t ncat = metric_catalog_count();
    ck_assert_uint_eq(metric_set_dynamic_count(s), 2);
    ck_assert_ptr_eq(metric_set_dynamic_at(s, 0), &shop_pending);
    ck_assert_ptr_eq(metric_set_dynamic_at(s, 1), &shop_refunds);
    ck_assert_ptr_null(metric_set_dynamic_at(s, 2));
    ck_assert_uint_eq(metric_set_family_index(s, 0), ncat);
    ck_assert_uint_eq(metric_set_family_index(s, 2), ncat + 1);
    ck_assert_uint_eq(metric_set_family_index(s, 3), ncat);
    const struct metric_family *up = metric_catalog_find("qrel_collector_up");
    ck_assert_uint_eq(metric_set_family_index(s, 1), (size_t)(up - metric_catalog_at(0)));
    ck_assert_uint_eq(metric_set_family_index(s, 4), (size_t)(up - metric_catalog_at(0)));
    ck_assert_uint_eq(metric_set_family_index(s, 5), (size_t)-1);
    ck_assert_ptr_eq(metric_set_family(s, 0), &shop_pending);
    ck_assert_ptr_eq(metric_set_family(s, 1), up);
    ck_assert_ptr_eq(metric_set_family(s, 2), &shop_refunds);
    ck_assert_ptr_eq(metric_set_family(s, 4), up);

    struct metric_sample sm;
    metric_set_get(s, 3, &sm);
    ck_assert_ptr_eq(sm.family, &shop_pending);
    ck_assert_double_eq(sm.value, 5);
    ck_assert_uint_eq(sm.nlabels, 3);
    ck_assert_str_eq(sm.labels[0].value, "db");
    ck_assert_str_eq(sm.labels[1].value, "sql");
    ck_assert_str_eq(sm.labels[2].name, "region");
    ck_assert_str_eq(sm.labels[2].value, "us");
    metric_set_get(s, 2, &sm);
    ck_assert_ptr_eq(sm.family, &shop_refunds);
    ck_assert_uint_eq(sm.nlabels, 2);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_family_same_name)
{
    /* Two definitions with one name (say two sources of one config) are one family in a set. */
    static const struct metric_family other = {"shop_orders_pending", METRIC_GAUGE, "Other."};
    struct metric_set *s = metric_set_new("db", "sql");
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 1, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(s, &other, 2, NULL), 0);
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 3, NULL), 0);
    ck_assert_uint_eq(metric_set_dynamic_count(s), 1);
    ck_assert_uint_eq(metric_set_family_index(s, 1), metric_set_family_index(s, 0));
    ck_assert_ptr_eq(metric_set_family(s, 1), &shop_pending);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_family_errors)
{
    static const struct metric_family bad_counter = {"shop_refunds", METRIC_COUNTER, "h"};
    static const struct metric_family reserved = {"qrel_queue_messages", METRIC_GAUGE, "h"};
    struct metric_set *s = metric_set_new("db", "sql");
    ck_assert_int_eq(metric_set_add_family(s, &bad_counter, 1, NULL), -1);
    ck_assert_str_eq(metric_set_error(s),
                     "invalid metric family \"shop_refunds\": a counter's name must end in _total");
    ck_assert_int_eq(metric_set_add_family(s, &reserved, 1, NULL), -1);
    ck_assert_int_eq(metric_set_add_family(s, NULL, 1, NULL), -1);
    ck_assert_int_eq(metric_set_add_family(NULL, &shop_pending, 1, NULL), -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_uint_eq(metric_set_dynamic_count(s), 0);
    metric_set_free(s);

    s = metric_set_new("db", "sql");
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 1, "source", "x", NULL), -1);
    ck_assert_str_eq(metric_set_error(s), "shop_orders_pending: duplicate label \"source\"");
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 1, "9", "x", NULL), -1);
    /* by name, metric_set_add still knows only the catalogue */
    ck_assert_int_eq(metric_set_add(s, "shop_orders_pending", 1, NULL), -1);
    ck_assert_int_eq(metric_set_add_family(s, &shop_pending, 1, "region", "eu", NULL), 0);
    ck_assert_int_eq(metric_set_add(s, "shop_orders_pending", 1, NULL), -1);
    ck_assert_uint_eq(metric_set_len(s), 1);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_familyv)
{
    struct metric_set *s = metric_set_new("db", "sql");
    const char *names[16] = {"a", "b"};
    const char *values[16] = {"1", ""};
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 2), 0);
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_refunds, 3, NULL, NULL, 0), 0);
    struct metric_sample sm;
    metric_set_get(s, 0, &sm);
    ck_assert_uint_eq(sm.nlabels, 4);
    ck_assert_str_eq(sm.labels[3].name, "b");
    ck_assert_str_eq(sm.labels[3].value, "");
    metric_set_get(s, 1, &sm);
    ck_assert_ptr_eq(sm.family, &shop_refunds);
    ck_assert_uint_eq(sm.nlabels, 2);
    /* errors: a NULL value, too many labels, a bad name */
    values[1] = NULL;
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 2), -1);
    ck_assert_str_eq(metric_set_error(s), "shop_orders_pending: label \"b\" has a NULL value");
    metric_set_free(s);

    s = metric_set_new("db", "sql");
    static char nm[16][8];
    for (int i = 0; i < 16; i++) {
        snprintf(nm[i], sizeof nm[i], "l%d", i);
        names[i] = nm[i];
        values[i] = "v";
    }
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 14), 0);
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 15), -1);
    ck_assert_str_eq(metric_set_error(s), "shop_orders_pending: more than 16 labels");
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 16), -1);
    names[0] = "__x";
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 1), -1);
    names[0] = NULL;
    ck_assert_int_eq(metric_set_add_familyv(s, &shop_pending, 2, names, values, 1), -1);
    ck_assert_int_eq(metric_set_add_familyv(s, NULL, 2, names, values, 1), -1);
    ck_assert_int_eq(metric_set_add_familyv(NULL, &shop_pending, 2, names, values, 1), -1);
    ck_assert_uint_eq(metric_set_len(s), 1);
    metric_set_free(s);
}
END_TEST

START_TEST(test_add_family_many)
{
    /* Hundreds of families, alternating with catalogue ones: every sample keeps its own. */
    enum { NF = 300 };
    static struct metric_family fams[NF];
    static char names[NF][32];
    for (int i = 0; i < NF; i++) {
        snprintf(names[i], sizeof names[i], "app_f%03d", i);
        fams[i] = (struct metric_family){names[i], METRIC_GAUGE, "h"};
    }
    struct metric_set *s = metric_set_new("db", "sql");
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NF; i++) {
            ck_assert_int_eq(metric_set_add_family(s, &fams[i], i, "k", names[i], NULL), 0);
            ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", i, NULL), 0);
        }
    }
    ck_assert_uint_eq(metric_set_dynamic_count(s), NF);
    struct metric_sample sm;
    for (size_t i = 0; i < metric_set_len(s); i++) {
        metric_set_get(s, i, &sm);
        if (i % 2) {
            ck_assert_str_eq(sm.family->name, "qrel_collector_up");
            ck_assert_uint_eq(sm.nlabels, 2);
        } else {
            ck_assert_ptr_eq(sm.family, &fams[(i / 2) % NF]);
            ck_assert_str_eq(sm.labels[2].value, names[(i / 2) % NF]);
        }
    }
    size_t bytes = metric_set_bytes(s);
    ck_assert_uint_gt(bytes, NF * sizeof(void *));
    metric_set_free(s);
}
END_TEST

/* The benchmark's shape: 10 samples of 5 labels for each of n_streams streams. */
static struct metric_set *bench_set(int n, int n_streams)
{
    struct metric_set *s = metric_set_new("bench", "redis_stream");
    char queue[32];
    for (int i = 0; i < n; i++) {
        snprintf(queue, sizeof queue, "bench:%d", i % n_streams);
        ck_assert_int_eq(metric_set_add(s, "qrel_queue_messages", (double)i, "queue", queue,
                                        "group", "g1", "state", i % 2 ? "ready" : "in_flight",
                                        NULL),
                         0);
    }
    return s;
}

START_TEST(test_set_bytes)
{
    /* A set costs a few hundred bytes, not the 64 KiB chunks of a large one. */
    struct metric_set *s = metric_set_new("a", "redis_stream");
    ck_assert_int_eq(metric_set_add(s, "qrel_collector_up", 1, NULL), 0);
    ck_assert_uint_lt(metric_set_bytes(s), 2048);
    /* A dynamic family costs a small table, once per set. */
    size_t before = metric_set_bytes(s);
    static const struct metric_family app = {"app_jobs", METRIC_GAUGE, "Jobs."};
    ck_assert_int_eq(metric_set_add_family(s, &app, 1, NULL), 0);
    ck_assert_uint_le(metric_set_bytes(s) - before, 128);
    metric_set_free(s);

    /* 100k samples of 5 labels: 10,000 streams (as in the benchmark), then every value distinct,
     * fit in 6 MB, so a scrape of them does not dominate the exporter's memory (a tenth of them
     * under valgrind, large_count: 40 bytes a sample holds there too). */
    const int N = large_count(100000);
    s = bench_set(N, N / 10);
    ck_assert_uint_le(metric_set_bytes(s), 6000000);
    ck_assert_uint_le(metric_set_bytes(s) / N, 40);
    metric_set_free(s);
    s = bench_set(N, N);
    ck_assert_uint_le(metric_set_bytes(s), 6000000);
    metric_set_free(s);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("catalog");
    tcase_add_test(tc, test_catalog_sorted);
    tcase_add_test(tc, test_catalog_names_types_help);
    tcase_add_test(tc, test_catalog_matches_contract);
    tcase_add_test(tc, test_catalog_find_misses);
    tcase_add_loop_test(tc, test_label_name_valid, 0, sizeof label_names / sizeof label_names[0]);
    tcase_add_test(tc, test_label_name_null);
    suite_add_tcase(s, tc);

    tc = tcase_create("set");
    tcase_add_test(tc, test_add_with_base_labels);
    tcase_add_test(tc, test_add_without_base_labels);
    tcase_add_test(tc, test_set_kind);
    tcase_add_test(tc, test_add_copies_strings);
    tcase_add_test(tc, test_distinct_values);
    tcase_add_test(tc, test_add_empty_value);
    tcase_add_test(tc, test_utf8_sanitize);
    tcase_add_test(tc, test_errors);
    tcase_add_loop_test(tc, test_add_error_table, 0, sizeof add_errors / sizeof add_errors[0]);
    tcase_add_test(tc, test_duplicate_extra_label);
    tcase_add_test(tc, test_null_set);
    tcase_add_test(tc, test_large_set);
    tcase_add_test(tc, test_label_limit);
    tcase_add_test(tc, test_strings_stored_once);
    tcase_add_test(tc, test_recent_values);
    tcase_add_test(tc, test_label_names_vary);
    tcase_add_test(tc, test_long_values);
    tcase_add_test(tc, test_set_bytes);
    tcase_set_timeout(tc, 60); /* the large set under valgrind */
    suite_add_tcase(s, tc);

    tc = tcase_create("dynamic families");
    tcase_add_loop_test(tc, test_family_validate, 0,
                        sizeof family_checks / sizeof family_checks[0]);
    tcase_add_test(tc, test_family_validate_why_optional);
    tcase_add_test(tc, test_add_family);
    tcase_add_test(tc, test_add_family_same_name);
    tcase_add_test(tc, test_add_family_errors);
    tcase_add_test(tc, test_add_familyv);
    tcase_add_test(tc, test_add_family_many);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(metrics_suite(), CK_NORMAL);
}
