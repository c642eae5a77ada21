/* check_common_redis_cluster.c: the pure part of collectors/common/redis_cluster.c: the hash slot
 * of a key (CRC16 and the hash tag, against the values Redis documents and CLUSTER KEYSLOT gives),
 * the MOVED and ASK redirects, and the slot map of a CLUSTER SLOTS reply as Redis 7.0 sends it. */
#include <check.h>
#include <string.h>

#include "common/redis_cluster.h"
#include "support/check_run.h"

static unsigned slot(const char *key)
{
    return redis_cluster_key_slot(key, strlen(key));
}

START_TEST(test_crc16_and_slots)
{
    ck_assert_uint_eq(redis_cluster_crc16("123456789", 9), 0x31C3); /* the cluster spec's check */
    ck_assert_uint_eq(slot("foo"), 12182);                          /* CLUSTER KEYSLOT foo */
    ck_assert_uint_eq(slot("bar"), 5061);
    ck_assert_uint_eq(slot(""), 0);
    ck_assert_uint_eq(slot("{user1000}.following"), slot("user1000"));
    ck_assert_uint_eq(slot("{user1000}.followers"), slot("user1000"));
    ck_assert_uint_eq(slot("foo{}{bar}"), redis_cluster_crc16("foo{}{bar}", 10) % 16384);
    ck_assert_uint_eq(slot("foo{{bar}}zap"), slot("{bar"));
    ck_assert_uint_eq(slot("foo{bar}{zap}"), slot("bar"));
    ck_assert_uint_eq(slot("{orders}:dead"), slot("{orders}"));
    ck_assert_uint_eq(slot("no{close"), redis_cluster_crc16("no{close", 8) % 16384);
}
END_TEST

static int redirect(const char *msg, struct redis_redirect *r)
{
    return redis_cluster_parse_redirect(msg, strlen(msg), r);
}

START_TEST(test_redirects)
{
    struct redis_redirect r;
    ck_assert_int_eq(redirect("MOVED 3999 127.0.0.1:6381", &r), 1);
    ck_assert_int_eq(r.ask, 0);
    ck_assert_uint_eq(r.slot, 3999);
    ck_assert_str_eq(r.address, "127.0.0.1:6381");
    ck_assert_int_eq(redirect("ASK 16383 10.0.0.7:7002", &r), 1);
    ck_assert_int_eq(r.ask, 1);
    ck_assert_uint_eq(r.slot, 16383);
    ck_assert_str_eq(r.address, "10.0.0.7:7002");
    ck_assert_int_eq(redirect("MOVED 1 ::1:7000", &r), 1);
    ck_assert_str_eq(r.address, "[::1]:7000");
    ck_assert_int_eq(redirect("MOVED 16384 127.0.0.1:7000", &r), 0); /* no such slot */
    ck_assert_int_eq(redirect("MOVED 5 :7000", &r), 0);              /* a node without address */
    ck_assert_int_eq(redirect("MOVED 5 127.0.0.1", &r), 0);
    ck_assert_int_eq(redirect("MOVED 5 127.0.0.1:99999", &r), 0);
    ck_assert_int_eq(redirect("MOVED x 127.0.0.1:7000", &r), 0);
    ck_assert_int_eq(redirect("ERR no such key", &r), 0);
    ck_assert_int_eq(redirect("ASKING", &r), 0);
    ck_assert_int_eq(redirect("CLUSTERDOWN The cluster is down", &r), 0);
}
END_TEST

/* A reply as hiredis parses the RESP text. */
static redisReply *parse(const char *resp)
{
    redisReader *rd = redisReaderCreate();
    ck_assert_int_eq(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
    void *r = NULL;
    ck_assert_int_eq(redisReaderGetReply(rd, &r), REDIS_OK);
    ck_assert_ptr_nonnull(r);
    redisReaderFree(rd);
    return r;
}

START_TEST(test_slots)
{
    /* Two ranges on one master, one on another whose host is empty (a node that does not know its
     * own address: the one asked), with replicas after the master. */
    redisReply *r = parse("*3\r\n"
                          "*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                          "*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nr1\r\n"
                          "*3\r\n:5461\r\n:5461\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n"
                          "*3\r\n:5462\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n");
    struct redis_cluster_map m;
    memset(&m, 0, sizeof m);
    struct err e;
    ck_assert_int_eq(redis_cluster_parse_slots(r, "10.1.1.1", &m, &e), 0);
    ck_assert_uint_eq(m.nnodes, 2);
    ck_assert_str_eq(m.nodes[0], "127.0.0.1:7000");
    ck_assert_str_eq(m.nodes[1], "10.1.1.1:7001");
    ck_assert_uint_eq(m.owner[0], 0);
    ck_assert_uint_eq(m.owner[5461], 0);
    ck_assert_uint_eq(m.owner[5462], 1);
    ck_assert_uint_eq(m.owner[16383], 1);
    ck_assert_uint_eq(redis_cluster_node_of(&m, "foo", 3), 1); /* slot 12182 */
    ck_assert_uint_eq(redis_cluster_node_of(&m, "bar", 3), 0); /* slot 5061 */
    /* A redirect's node is spelt as the map spells its masters: an ASK or MOVED is followed to
     * the master of that address; one the map does not know is NO_NODE. */
    struct redis_redirect rd;
    ck_assert_int_eq(redirect("ASK 5462 10.1.1.1:7001", &rd), 1);
    ck_assert_uint_eq(redis_cluster_node_at(&m, rd.address), 1);
    ck_assert_uint_eq(redis_cluster_node_at(&m, "127.0.0.1:7000"), 0);
    ck_assert_uint_eq(redis_cluster_node_at(&m, "127.0.0.1:7001"), REDIS_CLUSTER_NO_NODE);
    ck_assert_uint_eq(redis_cluster_node_at(&m, "127.0.0.1:700"), REDIS_CLUSTER_NO_NODE);
    freeReplyObject(r);

    /* A slot nobody serves, and shapes that are not CLUSTER SLOTS. */
    r = parse("*1\r\n*3\r\n:0\r\n:99\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n");
    ck_assert_int_eq(redis_cluster_parse_slots(r, "h", &m, &e), 0);
    ck_assert_uint_eq(m.owner[100], REDIS_CLUSTER_NO_NODE);
    freeReplyObject(r);
    static const char *const bad[] = {
        "-ERR This instance has cluster support disabled\r\n",    "*1\r\n*2\r\n:0\r\n:5\r\n",
        "*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$1\r\nh\r\n:7000\r\n",     /* end before start */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:7000\r\n", /* past the last slot */
        "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:0\r\n",        /* no port */
    };
    for (int i = 0; i < CHECK_ROWS(bad); i++) {
        r = parse(bad[i]);
        ck_assert_int_eq(redis_cluster_parse_slots(r, "h", &m, &e), -1);
        ck_assert_int_eq(e.code, ERR_PROTOCOL);
        ck_assert_uint_eq(m.nnodes, 0);
        freeReplyObject(r);
    }
    redis_cluster_map_free(&m);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_crc16_and_slots, 0},
        {test_redirects, 0},
        {test_slots, 0},
    };
    return check_run_tests("redis_cluster", tests, CHECK_ROWS(tests), 0);
}
