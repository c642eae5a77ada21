/* workload.c: the demo workload's flags, the producer, the incident schedule and the status
 * lines. The consumers (claim-before-send) are in consumer.c; workload.h says what it is for. */
#include "workload.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t started_ms;

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool sleep_unless_stopped(struct workload *w, int64_t ms)
{
    int64_t until = now_ms() + ms;
    for (;;) {
        if (atomic_load(&w->stop))
            return false;
        int64_t left = until - now_ms();
        if (left <= 0)
            return true;
        if (left > 50)
            left = 50; /* a stop is noticed within 50 ms */
        struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

const char *fmt_duration(int64_t ms, char *buf, unsigned long size)
{
    if (ms < 1000)
        snprintf(buf, size, "%lldms", (long long)ms);
    else if (ms % 60000 == 0)
        snprintf(buf, size, "%lldm", (long long)(ms / 60000));
    else if (ms >= 60000 && ms % 1000 == 0)
        snprintf(buf, size, "%lldm%llds", (long long)(ms / 60000), (long long)(ms % 60000 / 1000));
    else if (ms % 1000 == 0)
        snprintf(buf, size, "%llds", (long long)(ms / 1000));
    else
        snprintf(buf, size, "%gs", (double)ms / 1000.0);
    return buf;
}

static pthread_mutex_t say_lock = PTHREAD_MUTEX_INITIALIZER;

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&say_lock);
    printf("workload: t=%.1fs ", (double)(now_ms() - started_ms) / 1000.0);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&say_lock);
    va_end(ap);
}

/* ---- flags ---- */

/* "250ms", "3s", "3.1s", "1m30s", "2h", "0": a sum of number+unit parts. */
static bool parse_duration(const char *s, int64_t *out)
{
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return true;
    }
    double total = 0;
    const char *p = s;
    if (*p == '\0')
        return false;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0 || *p == '+' || *p == '-')
            return false;
        p = end;
        double unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (*p == 's') {
            unit = 1000;
            p++;
        } else if (*p == 'm') {
            unit = 60000;
            p++;
        } else if (*p == 'h') {
            unit = 3600000;
            p++;
        } else {
            return false;
        }
        total += v * unit;
    }
    if (total > 1e12)
        return false;
    *out = (int64_t)llround(total);
    return true;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static void usage(FILE *f)
{
    fputs(
        "usage: qrel_demo_workload [flags]\n"
        "\n"
        "A shop's order-confirmation mailer on a Redis stream, replaying the worked incident of\n"
        "qrel's design notes. An order service writes each order and an outbox row in one\n"
        "PostgreSQL transaction (table orders and the outbox); a relay publishes the outbox to\n"
        "the stream. Consumers in a consumer group read it, take back entries idle longer than\n"
        "the lease (XAUTOCLAIM), dead-letter an entry once it was delivered more than\n"
        "max-deliveries times, record each delivery in a dedup table (a repeated one counts as a\n"
        "duplicate), and send each order's email through a simulated provider with\n"
        "claim-before-send in a claim table:\n"
        "  no claim -> claim it, call the provider, stamp sent_at, acknowledge;\n"
        "  a claim that is done -> acknowledge, nothing to send;\n"
        "  an open claim younger than the in-flight window -> defer (leave it to a redelivery);\n"
        "  an open claim older than that -> take it over and send again.\n"
        "An acknowledgement is refused when another consumer took the entry over meanwhile (as\n"
        "SQS refuses an old receipt handle). While the provider is slow, leases expire under\n"
        "running handlers, and the dead-letter stream fills with orders whose email was sent.\n"
        "\n"
        "flags (--flag VALUE or --flag=VALUE; durations like 250ms, 3s, 3.1s, 1m30s):\n"
        "  --redis HOST:PORT           Redis server                  [127.0.0.1:6379]\n"
        "  --postgres CONNINFO         libpq connection string       [host=127.0.0.1 "
        "user=postgres dbname=postgres]\n"
        "  --stream NAME               the orders stream             [orders]\n"
        "  --group NAME                the consumer group            [mailer]\n"
        "  --dead-letter-stream NAME   where given-up entries go     [orders.dlq]\n"
        "  --claim-table NAME          the claim table (created when missing) "
        "[confirmation_claims]\n"
        "  --dedup-table NAME          the dedup table of handled deliveries [handled_orders]\n"
        "  --outbox-table NAME         the order service's outbox   [outbox]\n"
        "  --consumers N               consumer threads              [8]\n"
        "  --rate R                    orders per second             [0.5]\n"
        "  --lease DUR                 XAUTOCLAIM min-idle           [3s]\n"
        "  --max-deliveries N          deliveries before the DLQ     [3]\n"
        "  --in-flight-window DUR      a younger open claim defers   [12s]\n"
        "  --poll DUR                  idle consumers look for expired leases this often [250ms]\n"
        "  --latency DUR               the provider's median, normally [24ms]\n"
        "  --incident-at DUR           the provider turns slow this long after start [30s]\n"
        "  --incident-for DUR          and stays slow this long      [3m]\n"
        "  --incident-every DUR        repeat the incident this often (0: once) [0]\n"
        "  --incident-latency MIN-MAX  the provider's answer time while slow, uniform [6.5s-8s]\n"
        "  --control-key KEY           Redis key that overrides the schedule: \"incident\" or\n"
        "                              \"normal\"; deleted, the schedule applies "
        "[qrel-demo:phase]\n"
        "  --report-every DUR          status line interval (0: none) [10s]\n"
        "  --duration DUR              stop after this long (0: on SIGINT/SIGTERM only) [0]\n"
        "  --seed N                    random seed                   [1]\n"
        "  --help                      this text\n"
        "\n"
        "Why 6.5s-8s and not the 3.1s-4s of a 3s lease scaled from the worked incident: with\n"
        "claim-before-send, the third delivery (6 s after the first) finds the claim done and\n"
        "acknowledges, so only a provider slower than two leases fills the dead-letter stream.\n"
        "\n"
        "Output: one line per phase change (\"phase=incident ...\", \"phase=normal ...\") and a\n"
        "status line every --report-every, on stdout. Stops cleanly on SIGINT and SIGTERM.\n",
        f);
}

static int bad_flag(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, "qrel_demo_workload: %s %s: want %s (see --help)\n", flag, value, want);
    return 2;
}

/* The option of a flag whose value is kept as given (a name, a connection string), or NULL. */
static const char **text_flag(struct workload_opts *o, const char *flag)
{
    const struct {
        const char *flag;
        const char **dst;
    } texts[] = {
        {"--postgres", &o->pg_conninfo},
        {"--stream", &o->stream},
        {"--group", &o->group},
        {"--dead-letter-stream", &o->dead_letter_stream},
        {"--claim-table", &o->claim_table},
        {"--dedup-table", &o->dedup_table},
        {"--outbox-table", &o->outbox_table},
        {"--control-key", &o->control_key},
    };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        if (strcmp(flag, texts[k].flag) == 0)
            return texts[k].dst;
    return NULL;
}

/* Parses argv into o; returns 0, or the exit status (2 on a bad flag, -1 after --help). */
static int parse_flags(int argc, char **argv, struct workload_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "qrel_demo_workload: unexpected argument %s (see --help)\n", arg);
            return 2;
        }
        char name[64];
        const char *value;
        const char *eq = strchr(arg, '=');
        if (eq) {
            size_t n = (size_t)(eq - arg);
            if (n >= sizeof name)
                n = sizeof name - 1;
            memcpy(name, arg, n);
            name[n] = '\0';
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg);
            if (i + 1 >= argc) {
                fprintf(stderr, "qrel_demo_workload: %s needs a value (see --help)\n", arg);
                return 2;
            }
            value = argv[++i];
        }
        long l;
        int64_t d;
        const char **text;
        if (strcmp(name, "--redis") == 0) {
            const char *colon = strrchr(value, ':');
            if (!colon || colon == value || !parse_long(colon + 1, 1, 65535, &l))
                return bad_flag(name, value, "HOST:PORT");
            size_t n = (size_t)(colon - value);
            if (n >= sizeof o->redis_host)
                return bad_flag(name, value, "HOST:PORT with a shorter host");
            memcpy(o->redis_host, value, n);
            o->redis_host[n] = '\0';
            o->redis_port = (int)l;
        } else if ((text = text_flag(o, name))) {
            *text = value;
        } else if (strcmp(name, "--consumers") == 0) {
            if (!parse_long(value, 1, 256, &l))
                return bad_flag(name, value, "a number from 1 to 256");
            o->consumers = (int)l;
        } else if (strcmp(name, "--max-deliveries") == 0) {
            if (!parse_long(value, 1, 1000000, &l))
                return bad_flag(name, value, "a number from 1 to 1000000");
            o->max_deliveries = l;
        } else if (strcmp(name, "--seed") == 0) {
            if (!parse_long(value, 0, 2147483647L, &l))
                return bad_flag(name, value, "a number from 0 to 2147483647");
            o->seed = (unsigned long)l;
        } else if (strcmp(name, "--rate") == 0) {
            char *end;
            errno = 0;
            double r = strtod(value, &end);
            if (end == value || *end || errno || !(r > 0) || r > 10000)
                return bad_flag(name, value, "orders per second, above 0 and at most 10000");
            o->rate = r;
        } else if (strcmp(name, "--incident-latency") == 0) {
            char lo[32], *dash = strchr(value, '-');
            int64_t hi_ms;
            size_t n = dash ? (size_t)(dash - value) : 0;
            if (!dash || n >= sizeof lo)
                return bad_flag(name, value, "MIN-MAX, e.g. 6.5s-8s");
            memcpy(lo, value, n);
            lo[n] = '\0';
            if (!parse_duration(lo, &d) || !parse_duration(dash + 1, &hi_ms) || hi_ms < d)
                return bad_flag(name, value, "MIN-MAX with MIN <= MAX, e.g. 6.5s-8s");
            o->incident_min_ms = d;
            o->incident_max_ms = hi_ms;
        } else {
            struct {
                const char *flag;
                int64_t *dst;
                bool positive;
            } durations[] = {
                {"--lease", &o->lease_ms, true},
                {"--in-flight-window", &o->in_flight_window_ms, true},
                {"--poll", &o->poll_ms, true},
                {"--latency", &o->latency_ms, false},
                {"--incident-at", &o->incident_at_ms, false},
                {"--incident-for", &o->incident_for_ms, false},
                {"--incident-every", &o->incident_every_ms, false},
                {"--report-every", &o->report_every_ms, false},
                {"--duration", &o->duration_ms, false},
            };
            bool known = false;
            for (size_t k = 0; k < sizeof durations / sizeof durations[0]; k++) {
                if (strcmp(name, durations[k].flag) != 0)
                    continue;
                known = true;
                if (!parse_duration(value, &d) || (durations[k].positive && d == 0))
                    return bad_flag(name, value,
                                    durations[k].positive ? "a duration above 0, e.g. 3s"
                                                          : "a duration, e.g. 3s or 0");
                *durations[k].dst = d;
            }
            if (!known) {
                fprintf(stderr, "qrel_demo_workload: unknown flag %s (see --help)\n", name);
                return 2;
            }
        }
    }
    if (o->incident_every_ms > 0 && o->incident_every_ms < o->incident_for_ms) {
        fprintf(stderr, "qrel_demo_workload: --incident-every must be at least --incident-for\n");
        return 2;
    }
    return 0;
}

/* ---- the incident schedule ---- */

static bool scheduled_incident(const struct workload_opts *o, int64_t t)
{
    if (o->incident_for_ms == 0 || t < o->incident_at_ms)
        return false;
    int64_t since = t - o->incident_at_ms;
    if (o->incident_every_ms > 0)
        since %= o->incident_every_ms;
    return since < o->incident_for_ms;
}

static void announce_phase(struct workload *w, bool incident, const char *why)
{
    char a[32], b[32], lease[32];
    if (incident)
        say("phase=incident provider=%s-%s lease=%s (%s): leases expire under running handlers",
            fmt_duration(w->o.incident_min_ms, a, sizeof a),
            fmt_duration(w->o.incident_max_ms, b, sizeof b),
            fmt_duration(w->o.lease_ms, lease, sizeof lease), why);
    else
        say("phase=normal provider=%s lease=%s (%s)", fmt_duration(w->o.latency_ms, a, sizeof a),
            fmt_duration(w->o.lease_ms, lease, sizeof lease), why);
}

static void report(struct workload *w)
{
    struct workload_stats *s = &w->s;
    say("status phase=%s orders=%ld published=%ld deliveries=%ld redeliveries=%ld emails=%ld "
        "deferred=%ld "
        "taken_over=%ld already_done=%ld dead_lettered=%ld acks=%ld late_acks_refused=%ld "
        "errors=%ld",
        atomic_load(&w->incident) ? "incident" : "normal", atomic_load(&s->orders),
        atomic_load(&s->published), atomic_load(&s->deliveries), atomic_load(&s->redeliveries),
        atomic_load(&s->emails), atomic_load(&s->deferred), atomic_load(&s->taken_over),
        atomic_load(&s->already_done), atomic_load(&s->dead_lettered), atomic_load(&s->acks),
        atomic_load(&s->late_acks_refused), atomic_load(&s->errors));
}

/* ---- setup ---- */

static redisContext *redis_connect(const struct workload_opts *o)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(o->redis_host, o->redis_port, tv);
    if (!c || c->err) {
        fprintf(stderr, "qrel_demo_workload: redis %s:%d: %s\n", o->redis_host, o->redis_port,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    return c;
}

static bool setup_redis(redisContext *c, const struct workload_opts *o)
{
    redisReply *r = redisCommand(c, "XGROUP CREATE %s %s 0 MKSTREAM", o->stream, o->group);
    if (!r) {
        fprintf(stderr, "qrel_demo_workload: redis: %s\n", c->errstr);
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR || strncmp(r->str, "BUSYGROUP", 9) == 0;
    if (!ok)
        fprintf(stderr, "qrel_demo_workload: XGROUP CREATE %s %s: %s\n", o->stream, o->group,
                r->str);
    freeReplyObject(r);
    return ok;
}

/* Runs SQL (several statements may be given); says what failed. */
static bool pg_exec(PGconn *pg, const char *what, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "qrel_demo_workload: %s: %s", what, PQerrorMessage(pg));
    PQclear(res);
    return ok;
}

/* The application's tables, as docs/kinds/postgres.md describes them, with the indexes qrel's
 * queries want: the orders and their outbox (written in one transaction), the dedup table of
 * handled deliveries and the claim table of sent emails. */
static bool setup_postgres(PGconn *pg, const struct workload_opts *o)
{
    char *claims = PQescapeIdentifier(pg, o->claim_table, strlen(o->claim_table));
    char *dedup = PQescapeIdentifier(pg, o->dedup_table, strlen(o->dedup_table));
    char *outbox = PQescapeIdentifier(pg, o->outbox_table, strlen(o->outbox_table));
    bool ok = claims && dedup && outbox;
    if (ok) {
        char sql[2048];
        snprintf(
            sql, sizeof sql,
            "SET client_min_messages = warning;"
            "CREATE TABLE IF NOT EXISTS orders (order_id bigserial PRIMARY KEY,"
            " created_at timestamptz NOT NULL DEFAULT now());"
            "CREATE TABLE IF NOT EXISTS %s (id bigserial PRIMARY KEY, order_id bigint NOT NULL,"
            " created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz);"
            "CREATE INDEX IF NOT EXISTS outbox_pending ON %s (created_at)"
            " WHERE published_at IS NULL;"
            "CREATE TABLE IF NOT EXISTS %s (order_id bigint PRIMARY KEY,"
            " handled_at timestamptz NOT NULL DEFAULT now(),"
            " duplicate_count integer NOT NULL DEFAULT 0);"
            "CREATE INDEX IF NOT EXISTS handled_at ON %s (handled_at);"
            "CREATE TABLE IF NOT EXISTS %s (order_id bigint PRIMARY KEY,"
            " claimed_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz);"
            "CREATE INDEX IF NOT EXISTS claims_done ON %s (sent_at, claimed_at)",
            outbox, outbox, dedup, dedup, claims, claims);
        ok = pg_exec(pg, "creating the tables", sql);
    }
    if (ok) {
        char sql[512];
        /* one statement, so one transaction: the order and its event exist together or not */
        snprintf(sql, sizeof sql,
                 "WITH o AS (INSERT INTO orders DEFAULT VALUES RETURNING order_id)"
                 " INSERT INTO %s (order_id) SELECT order_id FROM o",
                 outbox);
        PGresult *r = PQprepare(pg, "new_order", sql, 0, NULL);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        snprintf(sql, sizeof sql,
                 "SELECT id, order_id FROM %s WHERE published_at IS NULL ORDER BY id LIMIT 100",
                 outbox);
        r = PQprepare(pg, "unpublished", sql, 0, NULL);
        ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        snprintf(sql, sizeof sql, "UPDATE %s SET published_at = now() WHERE id = $1", outbox);
        r = PQprepare(pg, "published", sql, 1, NULL);
        ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
            fprintf(stderr, "qrel_demo_workload: preparing the order service: %s",
                    PQerrorMessage(pg));
    }
    PQfreemem(claims);
    PQfreemem(dedup);
    PQfreemem(outbox);
    return ok;
}

/* The main thread's connections (order service, outbox relay, control key), tables set up.
 * On failure both are NULL. */
static bool connect_main(const struct workload_opts *o, redisContext **redis, PGconn **pg)
{
    *redis = redis_connect(o);
    *pg = *redis ? PQconnectdb(o->pg_conninfo) : NULL;
    if (*pg && PQstatus(*pg) != CONNECTION_OK)
        fprintf(stderr, "qrel_demo_workload: postgres: %s", PQerrorMessage(*pg));
    if (*pg && PQstatus(*pg) == CONNECTION_OK && setup_redis(*redis, o) && setup_postgres(*pg, o))
        return true;
    if (*redis)
        redisFree(*redis);
    PQfinish(*pg); /* NULL is fine */
    *redis = NULL;
    *pg = NULL;
    return false;
}

/* ---- main ---- */

static atomic_bool *stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(stop_flag, true);
}

/* GET the control key: 1 incident, 0 normal, -1 absent (the schedule decides). */
static int control_phase(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    int phase = -1;
    if (r && r->type == REDIS_REPLY_STRING)
        phase = strcmp(r->str, "incident") == 0 ? 1 : strcmp(r->str, "normal") == 0 ? 0 : -1;
    if (r)
        freeReplyObject(r);
    return phase;
}

/* The order service: an order and its outbox row, in one transaction. */
static bool produce(struct workload *w, PGconn *pg)
{
    PGresult *r = PQexecPrepared(pg, "new_order", 0, NULL, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (ok)
        atomic_fetch_add(&w->s.orders, 1);
    else
        say("order service: postgres: %s", PQerrorMessage(pg));
    PQclear(r);
    return ok;
}

/* The outbox relay: publishes unpublished rows to the stream, then marks them published (a
 * crash in between publishes again: at least once, which the consumers are built for). */
static bool relay(struct workload *w, PGconn *pg, redisContext *c)
{
    PGresult *rows = PQexecPrepared(pg, "unpublished", 0, NULL, NULL, NULL, 0);
    if (PQresultStatus(rows) != PGRES_TUPLES_OK) {
        say("outbox relay: postgres: %s", PQerrorMessage(pg));
        PQclear(rows);
        return false;
    }
    bool ok = true;
    for (int i = 0; ok && i < PQntuples(rows); i++) {
        const char *id = PQgetvalue(rows, i, 0), *order = PQgetvalue(rows, i, 1);
        char email[64];
        snprintf(email, sizeof email, "customer%s@example.com", order);
        redisReply *x = redisCommand(c, "XADD %s * order %s email %s", w->o.stream, order, email);
        ok = x && x->type == REDIS_REPLY_STRING;
        if (!ok)
            say("outbox relay: redis: %s", x ? x->str : c->errstr);
        if (x)
            freeReplyObject(x);
        if (!ok)
            break;
        const char *params[] = {id};
        PGresult *u = PQexecPrepared(pg, "published", 1, params, NULL, NULL, 0);
        ok = PQresultStatus(u) == PGRES_COMMAND_OK;
        if (!ok)
            say("outbox relay: postgres: %s", PQerrorMessage(pg));
        PQclear(u);
        if (ok)
            atomic_fetch_add(&w->s.published, 1);
    }
    PQclear(rows);
    return ok;
}

int main(int argc, char **argv)
{
    static struct workload w = {
        .o =
            {
                .redis_host = "127.0.0.1",
                .redis_port = 6379,
                .pg_conninfo = "host=127.0.0.1 user=postgres dbname=postgres",
                .stream = "orders",
                .group = "mailer",
                .dead_letter_stream = "orders.dlq",
                .claim_table = "confirmation_claims",
                .dedup_table = "handled_orders",
                .outbox_table = "outbox",
                .control_key = "qrel-demo:phase",
                .consumers = 8,
                .rate = 0.5,
                .lease_ms = 3000,
                .max_deliveries = 3,
                .in_flight_window_ms = 12000,
                .poll_ms = 250,
                .latency_ms = 24,
                .incident_at_ms = 30000,
                .incident_for_ms = 180000,
                .incident_min_ms = 6500,
                .incident_max_ms = 8000,
                .report_every_ms = 10000,
                .seed = 1,
            },
    };
    started_ms = now_ms();
    int rc = parse_flags(argc, argv, &w.o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;

    redisContext *redis = NULL;
    PGconn *pg = NULL;
    if (!connect_main(&w.o, &redis, &pg))
        return 1;

    /* Signals go to this thread only: the consumers start with them blocked. */
    stop_flag = &w.stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);

    pthread_t *threads = calloc((size_t)w.o.consumers, sizeof *threads);
    struct consumer_arg *args = calloc((size_t)w.o.consumers, sizeof *args);
    int started = 0;
    for (int i = 0; threads && args && i < w.o.consumers; i++) {
        args[i] = (struct consumer_arg){&w, i + 1};
        if (pthread_create(&threads[i], NULL, consumer_main, &args[i]) != 0)
            break;
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started < w.o.consumers) {
        fprintf(stderr, "qrel_demo_workload: could not start %d consumer threads\n", w.o.consumers);
        atomic_store(&w.stop, true);
        rc = 1;
    }

    char lease[32], window[32], lat[32];
    say("started: %d consumers, %g orders/s on stream %s group %s, lease %s, %ld deliveries, "
        "claims in %s (in-flight window %s), provider median %s",
        w.o.consumers, w.o.rate, w.o.stream, w.o.group,
        fmt_duration(w.o.lease_ms, lease, sizeof lease), w.o.max_deliveries, w.o.claim_table,
        fmt_duration(w.o.in_flight_window_ms, window, sizeof window),
        fmt_duration(w.o.latency_ms, lat, sizeof lat));
    announce_phase(&w, false, "start");

    const int64_t produce_every = (int64_t)llround(1000.0 / w.o.rate);
    int64_t next_order = now_ms(), next_report = now_ms() + w.o.report_every_ms;
    int64_t next_control = 0, next_relay = 0;
    int control = -1;
    while (!atomic_load(&w.stop)) {
        int64_t now = now_ms(), t = now - started_ms;
        if (w.o.duration_ms > 0 && t >= w.o.duration_ms)
            break;
        if (now >= next_control) {
            control = control_phase(redis, w.o.control_key);
            next_control = now + 250;
        }
        bool incident = control >= 0 ? control == 1 : scheduled_incident(&w.o, t);
        if (incident != atomic_load(&w.incident)) {
            atomic_store(&w.incident, incident);
            announce_phase(&w, incident, control >= 0 ? w.o.control_key : "schedule");
        }
        if (now >= next_order || now >= next_relay) {
            bool ok = true;
            if (now >= next_order) {
                ok = produce(&w, pg);
                next_order += produce_every;
                if (next_order < now - 1000) /* fell behind (a stall): don't burst to catch up */
                    next_order = now;
            }
            ok = ok && relay(&w, pg, redis);
            next_relay = now + 1000; /* and right after each order */
            if (!ok) {
                atomic_fetch_add(&w.s.errors, 1);
                /* a lost connection: make new ones (and prepare the statements again) */
                if (redis->err || PQstatus(pg) != CONNECTION_OK) {
                    redisFree(redis);
                    PQfinish(pg);
                    redis = NULL;
                    pg = NULL;
                    while (sleep_unless_stopped(&w, 1000) && !connect_main(&w.o, &redis, &pg))
                        ;
                    if (!redis)
                        break;
                }
            }
        }
        if (w.o.report_every_ms > 0 && now >= next_report) {
            report(&w);
            next_report += w.o.report_every_ms;
        }
        sleep_unless_stopped(&w, 20);
    }
    atomic_store(&w.stop, true);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    free(args);
    if (redis)
        redisFree(redis);
    if (pg)
        PQfinish(pg);
    say("stopped");
    report(&w);
    return rc;
}
