/* check_common_redis_tls.c: the tls_config key of the Redis kinds (common/tls_config.c and tls.c,
 * read through redis_settings like every other connection key): what is read, and the exact
 * message for each config that is refused, at read or at check (a missing ca_file, TLS on a unix
 * socket). Issue 23. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/redis_settings.h"
#include "common/redis_tls.h"
#include "support/check_run.h"

/* Reads y as a source's connection keys: read, cfg_finish, check. Returns the first failure. */
static int read_settings(const char *y, struct redis_settings *s, struct cfg_doc **d, struct err *e)
{
    err_clear(e);
    *d = cfg_parse_string("r.yml", y, strlen(y), e);
    ck_assert_ptr_nonnull(*d);
    struct cfg_node *m = cfg_doc_root(*d);
    if (redis_settings_read(m, s, e) || cfg_finish(m, "source", e))
        return -1;
    return redis_settings_check(m, s, e);
}

START_TEST(test_absent_is_plaintext)
{
    struct redis_settings s;
    struct cfg_doc *d;
    struct err e;
    ck_assert_int_eq(read_settings("address: 127.0.0.1:6380\n", &s, &d, &e), 0);
    ck_assert_ptr_null(s.tls);
    redis_settings_free(&s);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_every_key)
{
    setenv("QREL_TEST_KEY_PW", "k3y-pw", 1);
    struct redis_settings s;
    struct cfg_doc *d;
    struct err e;
    /* insecure_skip_verify without ca_file: nothing to load, so check passes without files. */
    int rc = read_settings("address: 127.0.0.1:6380\n"
                           "tls_config:\n"
                           "  server_name: redis.example.com\n"
                           "  insecure_skip_verify: true\n",
                           &s, &d, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
    ck_assert_ptr_nonnull(s.tls);
    ck_assert_str_eq(s.tls->server_name, "redis.example.com");
    ck_assert_int_eq(s.tls->insecure_skip_verify, 1);
    ck_assert_ptr_null(s.tls->ca_file);
    redis_settings_free(&s);
    cfg_doc_free(d);

    /* Read only (check would load the files): every key lands in its field. */
    err_clear(&e);
    static const char y[] = "address: h:6380\n"
                            "tls_config:\n"
                            "  ca_file: /nonexistent/ca.pem\n"
                            "  cert_file: /nonexistent/c.pem\n"
                            "  key_file: /nonexistent/k.pem\n"
                            "  key_password_env: QREL_TEST_KEY_PW\n";
    d = cfg_parse_string("r.yml", y, strlen(y), &e);
    ck_assert_int_eq(redis_settings_read(cfg_doc_root(d), &s, &e), 0);
    ck_assert_int_eq(cfg_finish(cfg_doc_root(d), "source", &e), 0);
    ck_assert_str_eq(s.tls->ca_file, "/nonexistent/ca.pem");
    ck_assert_str_eq(s.tls->cert_file, "/nonexistent/c.pem");
    ck_assert_str_eq(s.tls->key_file, "/nonexistent/k.pem");
    ck_assert_str_eq(s.tls->key_password, "k3y-pw");
    ck_assert_int_eq(s.tls->insecure_skip_verify, 0);
    redis_settings_free(&s);
    cfg_doc_free(d);
}
END_TEST

/* Each config refused, and the message (no key password in any). */
static const struct check_case refused[] = {
    {"address: h:6380\ntls_config:\n  cert_file: /nonexistent/c.pem\n",
     "r.yml:3:14: tls_config: want both cert_file and key_file, or neither"},
    {"address: h:6380\ntls_config:\n  key_password_env: QREL_TEST_KEY_PW\n",
     "r.yml:3:21: tls_config: a key password needs key_file"},
    {"address: h:6380\ntls_config:\n  server_name: \"\"\n",
     "r.yml:3:16: server_name: want a non-empty string"},
    {"address: h:6380\ntls_config: true\n", "r.yml:2:13: tls_config: want a mapping, got a string"},
    {"address: h:6380\ntls_config:\n  ca_file: /nonexistent/ca.pem\n",
     "r.yml:3:12: tls_config: ca_file: cannot read \"/nonexistent/ca.pem\": No such file or "
     "directory"},
    {"address: unix:/run/redis.sock\ntls_config:\n  insecure_skip_verify: true\n",
     "r.yml:3:3: tls_config: TLS needs a TCP address, not a unix: socket"},
};

START_TEST(test_refused)
{
    setenv("QREL_TEST_KEY_PW", "k3y-pw", 1);
    struct redis_settings s;
    struct cfg_doc *d;
    struct err e;
    ck_assert_int_eq(read_settings(refused[_i].in, &s, &d, &e), -1);
    ck_assert_str_eq(e.msg, refused[_i].want);
    ck_assert_ptr_null(strstr(e.msg, "k3y-pw"));
    redis_settings_free(&s);
    cfg_doc_free(d);
}
END_TEST

START_TEST(test_unknown_key)
{
    struct redis_settings s;
    struct cfg_doc *d;
    struct err e;
    ck_assert_int_eq(read_settings("address: h:6380\ntls_config:\n  ca: x\n", &s, &d, &e), -1);
    ck_assert_msg(strstr(e.msg, "r.yml:3:3: unknown key \"ca\" in tls_config") != NULL, "%s",
                  e.msg);
    redis_settings_free(&s);
    cfg_doc_free(d);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_absent_is_plaintext, 0},
        {test_every_key, 0},
        {test_refused, CHECK_ROWS(refused)},
        {test_unknown_key, 0},
    };
    return check_run_tests("redis_tls", tests, CHECK_ROWS(tests), 30);
}
