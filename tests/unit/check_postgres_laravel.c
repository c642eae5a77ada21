/* check_postgres_laravel.c: unit tests for collectors/postgres/laravel.c, the reader of Laravel's
 * job payloads in failed_jobs (qrel dlq on preset laravel) and of the PHP serialize() text of the
 * job's command, on payloads Laravel 8.83 wrote (tests/fixtures/postgres/laravel_failed_*.json:
 * a FailJob with a protected $orderId, failed by Laravel's own worker and failer on the database
 * and the Redis driver), and on hand-cut serialized text for what a recording cannot show
 * (truncated, lying lengths, nesting, models). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/postgres.h"
#include "postgres/queues.h"
#include "support/check_run.h"
#include "support/fixture.h"

START_TEST(test_recorded_payloads)
{
    size_t len;
    char *db = fixture_text("postgres/laravel_failed_database.json", &len);
    struct laravel_payload p;
    ck_assert_int_eq(postgres_laravel_payload_read(db, len, "orderId", &p), 0);
    ck_assert_int_eq(p.has_work_id, 1);
    ck_assert_str_eq(p.work_id, "o1");
    ck_assert_int_eq(strlen(p.uuid), 36);
    ck_assert_int_eq(p.attempts, -1); /* the database driver keeps attempts in its column */
    ck_assert_int_eq(p.replays, 0);
    ck_assert_int_eq(p.retry_until, 0);
    /* the requeued payload: stamped, no attempts added, the command byte for byte */
    char *back = postgres_laravel_payload_requeue(db, len, 1);
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(postgres_laravel_payload_read(back, strlen(back), "orderId", &p), 0);
    ck_assert_int_eq(p.replays, 1);
    ck_assert_int_eq(p.attempts, -1);
    ck_assert_str_eq(p.work_id, "o1");
    ck_assert_ptr_nonnull(strstr(back, "\\u0000*\\u0000orderId"));
    free(back);
    free(db);

    char *rd = fixture_text("postgres/laravel_failed_redis.json", &len);
    ck_assert_int_eq(postgres_laravel_payload_read(rd, len, "orderId", &p), 0);
    ck_assert_str_eq(p.work_id, "r1");
    ck_assert_int_eq(p.attempts, 0);
    free(rd);
}
END_TEST

START_TEST(test_requeue_resets_attempts)
{
    const char in[] = "{\"uuid\":\"u\",\"attempts\":3,\"qrel-replayed\":1,\"data\":{}}";
    char *back = postgres_laravel_payload_requeue(in, strlen(in), 2);
    struct laravel_payload p;
    ck_assert_int_eq(postgres_laravel_payload_read(back, strlen(back), NULL, &p), 0);
    ck_assert_int_eq(p.attempts, 0);
    ck_assert_int_eq(p.replays, 2);
    free(back);
    ck_assert_ptr_null(postgres_laravel_payload_requeue("[1]", 3, 1));
    ck_assert_ptr_null(postgres_laravel_payload_requeue("{\"a\":", 5, 1));
    const char ru[] = "{\"retryUntil\":1700000000,\"qrel-replayed\":\"x\"}";
    ck_assert_int_eq(postgres_laravel_payload_read(ru, strlen(ru), NULL, &p), 0);
    ck_assert_int_eq(p.retry_until, 1);
    ck_assert_int_eq(p.replays, -1); /* a stamp someone else wrote */
}
END_TEST

static int prop(const char *cmd, size_t len, const char *path, char *out)
{
    return postgres_laravel_command_prop(cmd, len, path, out, 64);
}
#define PROP(s, path, out) prop(s, sizeof(s) - 1, path, out)

START_TEST(test_command_prop)
{
    char out[64];
    /* public, protected and private properties; an integer id */
    static const char cmd[] = "O:4:\"Ship\":3:{s:2:\"id\";i:42;s:7:\"\0*\0name\";s:3:\"a;b\";"
                              "s:9:\"\0Ship\0own\";b:1;}";
    ck_assert_int_eq(PROP(cmd, "id", out), 0);
    ck_assert_str_eq(out, "42");
    ck_assert_int_eq(PROP(cmd, "name", out), 0);
    ck_assert_str_eq(out, "a;b");
    ck_assert_int_eq(PROP(cmd, "own", out), 1); /* a bool is no id */
    ck_assert_int_eq(PROP(cmd, "missing", out), 1);
    /* an Eloquent model in a job: its ModelIdentifier's id */
    static const char model[] =
        "O:8:\"SendMail\":2:{s:5:\"order\";O:45:"
        "\"Illuminate\\Contracts\\Database\\ModelIdentifier\""
        ":2:{s:5:\"class\";s:5:\"Order\";s:2:\"id\";i:7;}s:4:\"tags\";a:1:{i:0;s:1:\"x\";}}";
    ck_assert_int_eq(PROP(model, "order.id", out), 0);
    ck_assert_str_eq(out, "7");
    ck_assert_int_eq(PROP(model, "order", out), 1); /* an object is no id */
    ck_assert_int_eq(PROP(model, "tags.0", out), 0);
    ck_assert_str_eq(out, "x");
    ck_assert_int_eq(PROP(model, "order.id.x", out), 1);
    /* malformed: every length checked against what is there */
    static const char *const bad[] = {
        "O:4:\"Ship\":1:{s:2:\"id\";i:42;",          /* truncated */
        "O:4:\"Ship\":1:{s:99:\"id\";i:42;}",        /* a string longer than the text */
        "O:4:\"Ship\":2:{s:2:\"id\";i:42;}",         /* fewer members than counted */
        "O:4:\"Ship\":1:{s:2:\"id\";i:42;}trailing", /* bytes after the object */
        "O:4:\"Ship\":1:{s:2:\"id\";r:1;}",          /* a reference */
        "a:1:{s:2:\"id\";i:1;}",                     /* not an object */
        "O:-1:\"Ship\":1:{}",
        "O:4:\"Ship\":99999999999999999999:{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(prop(bad[i], strlen(bad[i]), "id", out) == -1, "bad[%zu]", i);
    /* nesting is bounded */
    char deep[400];
    int n = snprintf(deep, sizeof deep, "O:1:\"A\":1:{s:1:\"a\";");
    for (int i = 0; i < 20; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "a:1:{i:0;");
    n += snprintf(deep + n, sizeof deep - (size_t)n, "N;");
    for (int i = 0; i < 21; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "}");
    ck_assert_int_eq(prop(deep, strlen(deep), "a", out), -1);
    /* a value too long for out */
    static const char longv[] =
        "O:1:\"A\":1:{s:1:\"a\";s:70:\""
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "\";}";
    ck_assert_int_eq(PROP(longv, "a", out), 1);
}
END_TEST

/* The statement: retry_after and the connection written in (a quote doubled), the schema quoted,
 * the expired leases as isReservedButExpired (reserved_at <= now - retry_after). */
START_TEST(test_statement)
{
    char *sql = queues_sql_jobs_laravel("app", 0, 90, "data'base");
    ck_assert_ptr_nonnull(strstr(sql, "WHEN connection = 'data''base' THEN queue"));
    ck_assert_ptr_nonnull(strstr(sql, "FROM \"app\".jobs WHERE reserved_at <= "
                                      "(SELECT date_part('epoch', now())) - 90 "));
    ck_assert_ptr_nonnull(strstr(sql, "sum(n) FILTER (WHERE st = 'e')"));
    ck_assert_ptr_null(strstr(sql, "@C"));
    ck_assert_ptr_null(strstr(sql, "@L"));
    free(sql);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded_payloads, 0},
        {test_requeue_resets_attempts, 0},
        {test_command_prop, 0},
        {test_statement, 0},
    };
    return check_run_tests("pg_laravel", tests, CHECK_ROWS(tests), 0);
}
