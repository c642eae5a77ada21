/* check_common_redis_sentinel.c: the Sentinel keys every Redis kind reads (redis_settings.c with
 * redis_sentinel.c): exactly one of address and sentinels with master_name, each refusal at the
 * key at fault with file:line:col and never quoting a password; and the pure readers of the
 * replies to SENTINEL get-master-addr-by-name and ROLE, fed replies as Redis 7.0 and its sentinel
 * write them. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "common/redis_sentinel.h"
#include "config.h"
#include "support/check_refused.h"
#include "support/check_run.h"

/* Reads text (one source's keys) as a Redis kind does: read, cfg_finish, check. */
static int settings_text(const char *text, struct redis_settings *s, struct err *e)
{
    err_clear(e);
    struct cfg_doc *d = cfg_parse_string("x.yml", text, strlen(text), e);
    ck_assert_msg(d != NULL, "YAML of the test: %s", e->msg);
    struct cfg_node *map = cfg_doc_root(d);
    int rc = redis_settings_read(map, s, e) || cfg_finish(map, "source \"cache\"", e) ||
                     redis_settings_check(map, s, e)
                 ? -1
                 : 0;
    cfg_doc_free(d);
    return rc;
}

static const struct check_case bad[] = {
    {"address: h:1\nsentinels: [\"s:26379\"]\nmaster_name: m\n",
     "x.yml:2:12: sentinels: give either address or sentinels with master_name, not both"},
    {"sentinels: [\"s:26379\"]\n",
     "x.yml:1:12: master_name: required with sentinels (the name the sentinels monitor)"},
    {"master_name: m\n", "x.yml:1:14: master_name: only with sentinels (a list of host:port)"},
    {"address: h:1\nsentinel_username: u\n",
     "x.yml:2:20: sentinel_username: only with sentinels (a list of host:port)"},
    {"address: h:1\nsentinel_password_env: QREL_TEST_SENTINEL_PW\n",
     "x.yml:2:24: sentinel_password_env: only with sentinels (a list of host:port)"},
    {"sentinels: []\nmaster_name: m\n", "x.yml:1:12: sentinels: want at least one host:port"},
    {"sentinels: [\"s:26379\", \"s:0\"]\nmaster_name: m\n",
     "x.yml:1:24: sentinels: want a port from 1 to 65535 in \"s:0\""},
    {"sentinels: \"s:26379\"\nmaster_name: m\n",
     "x.yml:1:12: sentinels: want a list of strings, got a string"},
    {"sentinels: [\"s:26379\"]\nmaster_name: \"\"\n",
     "x.yml:2:14: master_name: want a non-empty string"},
    {"sentinels: [\"s:26379\"]\nmaster_name: m\nsentinel_username: u\n",
     "x.yml:3:20: sentinel_username: needs sentinel_password_file or sentinel_password_env"},
    {"sentinels: [\"s:26379\"]\nmaster_name: m\nsentinel_password_env: QREL_TEST_SENTINEL_PW\n"
     "sentinel_password_file: /nonexistent\n",
     "x.yml:3:24: sentinel_password_env: want either sentinel_password_file or "
     "sentinel_password_env, not both"},
    /* The master's own credentials keep their rule. */
    {"sentinels: [\"s:26379\"]\nmaster_name: m\nusername: u\n",
     "x.yml:3:11: username: needs password_file or password_env (Redis authenticates a user with "
     "a password)"},
    {"sentinels: [\"s:26379\"]\nmaster_nmae: m\n",
     "x.yml:2:1: unknown key \"master_nmae\" in source \"cache\" (known keys: address, "
     "addresses, cluster, db, master_name, max_response_bytes, password_env, password_file, "
     "sentinel_password_env, "
     "sentinel_password_file, sentinel_username, sentinels, tls_config, username)"},
};

START_TEST(test_refused)
{
    setenv("QREL_TEST_SENTINEL_PW", "hunter2", 1);
    struct redis_settings s;
    struct err e;
    int rc = settings_text(bad[_i].in, &s, &e);
    redis_settings_free(&s);
    check_refused(rc, &e, bad[_i].want);
    ck_assert_ptr_null(strstr(e.msg, "hunter2"));
}
END_TEST

START_TEST(test_accepted)
{
    setenv("QREL_TEST_SENTINEL_PW", "hunter2", 1);
    struct redis_settings s;
    struct err e;
    int rc = settings_text("sentinels: [\"10.0.0.1:26379\", \"[::1]:26380\", unix:/run/s.sock]\n"
                           "master_name: mymaster\nsentinel_username: watcher\n"
                           "sentinel_password_env: QREL_TEST_SENTINEL_PW\n",
                           &s, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
    ck_assert_ptr_null(s.address);
    ck_assert_uint_eq(s.nsentinels, 3);
    ck_assert_str_eq(s.sentinels[1], "[::1]:26380");
    ck_assert_str_eq(s.master_name, "mymaster");
    ck_assert_str_eq(s.sentinel_username, "watcher");
    ck_assert_str_eq(s.sentinel_password, "hunter2");
    redis_settings_free(&s);
    /* The address form is untouched: no Sentinel key, nothing set. */
    ck_assert_int_eq(settings_text("address: h:1\n", &s, &e), 0);
    ck_assert_ptr_null(s.sentinels);
    ck_assert_ptr_null(s.master_name);
    redis_settings_free(&s);
    /* Neither form: the message it always gave. */
    check_refused(settings_text("db: 1\n", &s, &e), &e,
                  "x.yml:1:1: missing required key \"address\" in this mapping");
    redis_settings_free(&s);
}
END_TEST

/* Parses one RESP reply (as the server sends it) with hiredis's own reader. */
static redisReply *reply_of(const char *resp)
{
    redisReader *r = redisReaderCreate();
    void *out = NULL;
    ck_assert_int_eq(redisReaderFeed(r, resp, strlen(resp)), REDIS_OK);
    ck_assert_int_eq(redisReaderGetReply(r, &out), REDIS_OK);
    ck_assert_ptr_nonnull(out);
    redisReaderFree(r);
    return out;
}

static const struct check_case masters[] = {
    {"*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n", "127.0.0.1:6380"},
    {"*2\r\n$3\r\n::1\r\n$4\r\n6380\r\n", "[::1]:6380"},
    /* What a sentinel answers for a name it does not monitor. */
    {"*-1\r\n", "does not know master \"mymaster\""},
    {"$-1\r\n", "does not know master \"mymaster\""},
    /* A plain Redis asked a sentinel's command. */
    {"-ERR unknown command 'SENTINEL', with args beginning with: \r\n",
     "ERR unknown command 'SENTINEL', with args beginning with: "},
    {"*1\r\n$9\r\n127.0.0.1\r\n", "SENTINEL get-master-addr-by-name: want [host, port], got array"},
    {":1\r\n", "SENTINEL get-master-addr-by-name: want [host, port], got integer"},
};

START_TEST(test_master_reply)
{
    redisReply *r = reply_of(masters[_i].in);
    char out[64] = "";
    struct err e;
    err_clear(&e);
    int rc = redis_sentinel_parse_master(r, "mymaster", out, sizeof out, &e);
    freeReplyObject(r);
    if (rc == 0)
        ck_assert_str_eq(out, masters[_i].want);
    else
        ck_assert_str_eq(e.msg, masters[_i].want);
}
END_TEST

static const struct check_case roles[] = {
    {"*3\r\n$6\r\nmaster\r\n:4242\r\n*0\r\n", NULL},
    {"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:4242\r\n",
     "ROLE says slave, not master (a stale answer)"},
    {"*2\r\n$8\r\nsentinel\r\n*0\r\n", "ROLE says sentinel, not master (a stale answer)"},
    {"-NOPERM this user has no permissions to run the 'role' command\r\n",
     "ROLE: NOPERM this user has no permissions to run the 'role' command"},
    {"*0\r\n", "ROLE: want a list starting with the role, got array"},
};

START_TEST(test_role_reply)
{
    redisReply *r = reply_of(roles[_i].in);
    struct err e;
    err_clear(&e);
    int rc = redis_sentinel_parse_role(r, &e);
    freeReplyObject(r);
    if (!roles[_i].want)
        ck_assert_msg(rc == 0, "%s", e.msg);
    else
        ck_assert_str_eq(e.msg, roles[_i].want);
    ck_assert_int_eq(rc, roles[_i].want ? -1 : 0);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_refused, CHECK_ROWS(bad)},
        {test_accepted, 0},
        {test_master_reply, CHECK_ROWS(masters)},
        {test_role_reply, CHECK_ROWS(roles)},
    };
    return check_run_tests("common_redis_sentinel", tests, CHECK_ROWS(tests), 0);
}
