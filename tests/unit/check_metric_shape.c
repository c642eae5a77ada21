/* check_metric_shape.c: unit tests for the metric set's shaped adds (metric_set_shape,
 * metric_set_value, metric_set_add_shaped in core/metrics.h): a sample added through a shape must
 * be the very sample metric_set_add_family stores, and every programming error metric_set_add
 * refuses is refused here too, before anything is added. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "support/check_run.h"

/* The two sets hold the same samples: family, value, label names and values, in order. */
static void assert_same_sets(const struct metric_set *a, const struct metric_set *b)
{
    ck_assert_uint_eq(metric_set_len(a), metric_set_len(b));
    for (size_t i = 0; i < metric_set_len(a); i++) {
        struct metric_sample x, y;
        metric_set_get(a, i, &x);
        metric_set_get(b, i, &y);
        ck_assert_ptr_eq(x.family, y.family);
        ck_assert_double_eq(x.value, y.value);
        ck_assert_uint_eq(x.nlabels, y.nlabels);
        for (size_t k = 0; k < x.nlabels; k++) {
            ck_assert_str_eq(x.labels[k].name, y.labels[k].name);
            ck_assert_str_eq(x.labels[k].value, y.labels[k].value);
            ck_assert_uint_eq(x.labels[k].name_len, y.labels[k].name_len);
            ck_assert_uint_eq(x.labels[k].value_len, y.labels[k].value_len);
            ck_assert_int_eq(x.labels[k].value_escape, y.labels[k].value_escape);
        }
    }
}

/* A queue's series as sidekiq adds them, both ways, with names that need escaping or repair. */
START_TEST(test_same_samples)
{
    static const char *const queues[] = {"orders",  "a\"b\\c\nd", "caf\xc3\xa9",
                                         "bad\xff", "",           "orders"};
    static const char *const states[] = {"ready", "in_flight", "delayed"};
    const struct metric_family *messages = metric_catalog_find("qrel_queue_messages");
    const struct metric_family *dead = metric_catalog_find("qrel_dead_letter_messages");
    const struct metric_family *up = metric_catalog_find("qrel_collector_up");
    struct metric_set *want = metric_set_new("src", "sidekiq");
    struct metric_set *got = metric_set_new("src", "sidekiq");
    struct metric_shape sh_messages, sh_dead, sh_up;
    metric_value state[3], dlq, q;
    ck_assert_int_eq(metric_set_shape(got, messages, &sh_messages, "queue", "state", NULL), 0);
    ck_assert_int_eq(metric_set_shape(got, dead, &sh_dead, "queue", "dead_letter_queue", NULL), 0);
    ck_assert_int_eq(metric_set_shape(got, up, &sh_up, NULL), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(metric_set_value(got, states[i], &state[i]), 0);
    ck_assert_int_eq(metric_set_value(got, "dead", &dlq), 0);
    for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++) {
        ck_assert_int_eq(metric_set_value(got, queues[i], &q), 0);
        for (int k = 0; k < 3; k++) {
            metric_set_add_family(want, messages, (double)i + k, "queue", queues[i], "state",
                                  states[k], NULL);
            ck_assert_int_eq(metric_set_add_shaped(got, &sh_messages, (double)i + k,
                                                   (const metric_value[]){q, state[k]}),
                             0);
        }
        metric_set_add_family(want, dead, 0.5, "queue", queues[i], "dead_letter_queue", "dead",
                              NULL);
        ck_assert_int_eq(metric_set_add_shaped(got, &sh_dead, 0.5, (const metric_value[]){q, dlq}),
                         0);
    }
    metric_set_add_family(want, up, 1, NULL);
    ck_assert_int_eq(metric_set_add_shaped(got, &sh_up, 1, NULL), 0);
    /* shaped and plain adds mix in one set */
    metric_set_add_family(want, dead, 2, "queue", "x", "dead_letter_queue", "dead", NULL);
    metric_set_add_family(got, dead, 2, "queue", "x", "dead_letter_queue", "dead", NULL);
    ck_assert_ptr_null(metric_set_error(want));
    ck_assert_ptr_null(metric_set_error(got));
    assert_same_sets(want, got);
    ck_assert_uint_eq(metric_set_distinct_values(got, "queue"),
                      metric_set_distinct_values(want, "queue"));
    metric_set_free(want);
    metric_set_free(got);
}
END_TEST

/* A set without base labels, and a family from outside the catalogue. */
START_TEST(test_no_base_labels_and_user_family)
{
    static const struct metric_family mine = {"app_rows", METRIC_GAUGE, "Rows."};
    struct metric_set *want = metric_set_new(NULL, NULL);
    struct metric_set *got = metric_set_new(NULL, NULL);
    struct metric_shape sh;
    metric_value t;
    ck_assert_int_eq(metric_set_shape(got, &mine, &sh, "table", NULL), 0);
    ck_assert_int_eq(metric_set_value(got, "orders", &t), 0);
    ck_assert_int_eq(metric_set_add_shaped(got, &sh, 7, &t), 0);
    metric_set_add_family(want, &mine, 7, "table", "orders", NULL);
    ck_assert_ptr_null(metric_set_error(got));
    assert_same_sets(want, got);
    ck_assert_uint_eq(metric_set_dynamic_count(got), 1);
    metric_set_free(want);
    metric_set_free(got);
}
END_TEST

/* Each refused shape: -1, the error metric_set_add would give, and its adds refused. */
static const struct {
    const char *family;
    const char *name; /* the label name after "queue" */
    const char *error;
} shape_errors[] = {
    {NULL, "state", "metric_set_shape: NULL family"},
    {"qrel_queue_messages", "2bad", "qrel_queue_messages: invalid label name \"2bad\""},
    {"qrel_queue_messages", "__name__", "qrel_queue_messages: invalid label name \"__name__\""},
    {"qrel_queue_messages", "queue", "qrel_queue_messages: duplicate label \"queue\""},
    {"qrel_queue_messages", "source", "qrel_queue_messages: duplicate label \"source\""},
    {"qrel_queue_messages", "kind", "qrel_queue_messages: duplicate label \"kind\""},
};

START_TEST(test_shape_errors)
{
    struct metric_set *s = metric_set_new("a", "sidekiq");
    const struct metric_family *f =
        shape_errors[_i].family ? metric_catalog_find(shape_errors[_i].family) : NULL;
    struct metric_shape sh;
    metric_value v[2];
    ck_assert_int_eq(metric_set_shape(s, f, &sh, "queue", shape_errors[_i].name, NULL), -1);
    ck_assert_ptr_null(sh.family);
    ck_assert_str_eq(metric_set_error(s), shape_errors[_i].error);
    ck_assert_int_eq(metric_set_value(s, "q", &v[0]), 0);
    ck_assert_int_eq(metric_set_value(s, "r", &v[1]), 0);
    ck_assert_int_eq(metric_set_add_shaped(s, &sh, 1, v), -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    ck_assert_str_eq(metric_set_error(s), shape_errors[_i].error);
    metric_set_free(s);
}
END_TEST

START_TEST(test_too_many_labels)
{
    struct metric_set *s = metric_set_new("a", "sidekiq");
    struct metric_shape sh;
    /* 2 base labels + 15 */
    ck_assert_int_eq(metric_set_shape(s, metric_catalog_find("qrel_queue_messages"), &sh, "l0",
                                      "l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "l9", "l10",
                                      "l11", "l12", "l13", "l14", NULL),
                     -1);
    ck_assert_str_eq(metric_set_error(s), "qrel_queue_messages: more than 16 labels");
    metric_set_free(s);
}
END_TEST

/* A shape belongs to the base labels it was made with: the kind label gone, it is refused. */
START_TEST(test_kind_changed)
{
    struct metric_set *s = metric_set_new("a", "sidekiq");
    struct metric_shape sh;
    metric_value q;
    ck_assert_int_eq(
        metric_set_shape(s, metric_catalog_find("qrel_queue_consumers"), &sh, "queue", NULL), 0);
    ck_assert_int_eq(metric_set_value(s, "q", &q), 0);
    metric_set_set_kind(s, "outbox"); /* still a kind label: the shape holds */
    ck_assert_int_eq(metric_set_add_shaped(s, &sh, 1, &q), 0);
    struct metric_sample sm;
    metric_set_get(s, 0, &sm);
    ck_assert_str_eq(sm.labels[1].value, "outbox");
    metric_set_set_kind(s, NULL);
    ck_assert_int_eq(metric_set_add_shaped(s, &sh, 1, &q), -1);
    ck_assert_uint_eq(metric_set_len(s), 1);
    ck_assert_str_eq(metric_set_error(s),
                     "qrel_queue_consumers: shape made before the set's kind label changed");
    metric_set_free(s);
}
END_TEST

START_TEST(test_value_errors)
{
    struct metric_set *s = metric_set_new("a", "sidekiq");
    struct metric_shape sh;
    metric_value q;
    ck_assert_int_eq(
        metric_set_shape(s, metric_catalog_find("qrel_queue_consumers"), &sh, "queue", NULL), 0);
    ck_assert_int_eq(metric_set_value(s, NULL, &q), -1);
    ck_assert_str_eq(metric_set_error(s), "metric_set_value: NULL value");
    /* the value that failed is none: an add with it is refused */
    ck_assert_int_eq(metric_set_add_shaped(s, &sh, 1, &q), -1);
    ck_assert_uint_eq(metric_set_len(s), 0);
    metric_set_free(s);

    s = metric_set_new("a", "sidekiq");
    ck_assert_int_eq(
        metric_set_shape(s, metric_catalog_find("qrel_queue_consumers"), &sh, "queue", NULL), 0);
    q = (metric_value)-1;
    ck_assert_int_eq(metric_set_add_shaped(s, &sh, 1, &q), -1);
    ck_assert_str_eq(metric_set_error(s), "qrel_queue_consumers: label 0 has no value");
    metric_set_free(s);

    /* NULL set: refused, nothing to remember it in */
    ck_assert_int_eq(
        metric_set_shape(NULL, metric_catalog_find("qrel_queue_consumers"), &sh, "queue", NULL),
        -1);
    ck_assert_ptr_null(sh.family);
    ck_assert_int_eq(metric_set_value(NULL, "q", &q), -1);
    ck_assert_int_eq(metric_set_add_shaped(NULL, &sh, 1, &q), -1);
}
END_TEST

/* Many queues through shapes: the same set as through metric_set_add_family, across the arenas'
 * chunk boundaries. */
START_TEST(test_many)
{
    const struct metric_family *messages = metric_catalog_find("qrel_queue_messages");
    struct metric_set *want = metric_set_new("src", "sidekiq");
    struct metric_set *got = metric_set_new("src", "sidekiq");
    struct metric_shape sh;
    metric_value ready, q;
    ck_assert_int_eq(metric_set_shape(got, messages, &sh, "queue", "state", NULL), 0);
    ck_assert_int_eq(metric_set_value(got, "ready", &ready), 0);
    char name[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "queue-%d", i);
        metric_set_add_family(want, messages, i, "queue", name, "state", "ready", NULL);
        metric_set_value(got, name, &q);
        metric_set_add_shaped(got, &sh, i, (const metric_value[]){q, ready});
    }
    ck_assert_ptr_null(metric_set_error(got));
    assert_same_sets(want, got);
    metric_set_free(want);
    metric_set_free(got);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_same_samples, 0},
        {test_no_base_labels_and_user_family, 0},
        {test_shape_errors, CHECK_ROWS(shape_errors)},
        {test_too_many_labels, 0},
        {test_kind_changed, 0},
        {test_value_errors, 0},
        {test_many, 0},
    };
    return check_run_tests("metric_shape", tests, CHECK_ROWS(tests), 0);
}
