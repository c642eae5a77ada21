/* log.c: see log.h. Lines are built in memory and written with one write(2), which POSIX keeps
 * whole for pipes up to PIPE_BUF and which in practice keeps lines whole on terminals and files. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "deadline.h"
#include "hashtab.h"

static enum log_level min_level = LOG_INFO;
static int as_json;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

int log_parse_format(const char *s, int *json_out)
{
    if (strcmp(s, "logfmt") == 0)
        *json_out = 0;
    else if (strcmp(s, "json") == 0)
        *json_out = 1;
    else
        return -1;
    return 0;
}

void log_setup(enum log_level min, int json)
{
    min_level = min;
    as_json = json;
}

int log_enabled(enum log_level lvl)
{
    return lvl >= min_level;
}

static void put_logfmt_value(struct buf *b, const char *v)
{
    int quote = *v == '\0';
    for (const char *p = v; *p && !quote; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\')
            quote = 1;
    if (!quote) {
        buf_puts(b, v);
        return;
    }
    buf_putc(b, '"');
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') {
            buf_putc(b, '\\');
            buf_putc(b, *p);
        } else if (*p == '\n') {
            buf_puts(b, "\\n");
        } else if ((unsigned char)*p < ' ') {
            buf_printf(b, "\\x%02x", (unsigned char)*p);
        } else {
            buf_putc(b, *p);
        }
    }
    buf_putc(b, '"');
}

static void put_pair(struct buf *b, const char *k, const char *v, int first)
{
    struct buf clean;
    buf_init(&clean);
    buf_utf8_sanitize(&clean, v, strlen(v));
    if (as_json) {
        if (!first)
            buf_putc(b, ',');
        buf_json_string(b, k);
        buf_putc(b, ':');
        buf_json_string(b, clean.data ? clean.data : "");
    } else {
        if (!first)
            buf_putc(b, ' ');
        buf_puts(b, k);
        buf_putc(b, '=');
        put_logfmt_value(b, clean.data ? clean.data : "");
    }
    buf_free(&clean);
}

static void log_kv_va(enum log_level lvl, const char *msg, va_list ap)
{
    if (lvl < min_level)
        return;
    char ts[40];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof ts - n, ".%03ldZ", now.tv_nsec / 1000000);

    struct buf b;
    buf_init(&b);
    if (as_json)
        buf_putc(&b, '{');
    put_pair(&b, "ts", ts, 1);
    put_pair(&b, "level", level_names[lvl], 0);
    put_pair(&b, "msg", msg, 0);
    const char *k;
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        put_pair(&b, k, v ? v : "", 0);
    }
    if (as_json)
        buf_putc(&b, '}');
    buf_putc(&b, '\n');
    ssize_t w = write(STDERR_FILENO, b.data, b.len);
    (void)w;
    buf_free(&b);
}

void log_kv(enum log_level lvl, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_kv_va(lvl, msg, ap);
    va_end(ap);
}

/* The key is kept as its hash: a fixed size for any message, and two messages that differ are
 * told apart but for a 64-bit collision, which would at worst hold back one line. */
int log_limit_pass(struct log_limit *l, const char *key, int64_t now_ms, long *held)
{
    uint64_t h = key ? hashtab_hash(key, strlen(key), 0) : 0;
    long burst = l->burst > 0 ? l->burst : 1;
    if (!l->started || h != l->key || now_ms - l->window_ms >= l->every_ms) {
        l->started = 1;
        l->key = h;
        l->window_ms = now_ms;
        l->passed = 0;
    }
    if (l->passed >= burst) {
        l->held++;
        if (held)
            *held = 0;
        return 0;
    }
    l->passed++;
    if (held)
        *held = l->held;
    l->held = 0;
    return 1;
}

void log_limit_reset(struct log_limit *l)
{
    l->started = 0;
    l->passed = 0;
    l->held = 0;
}

void log_kv_limited(struct log_limit *l, enum log_level lvl, const char *key, const char *msg, ...)
{
    int pass = log_limit_pass(l, key, deadline_now_ms(), NULL);
    va_list ap;
    va_start(ap, msg);
    log_kv_va(pass ? lvl : LOG_DEBUG, msg, ap);
    va_end(ap);
}
