/* util.c: see util.h. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define QREL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QREL_ASAN 1
#endif
#endif
#ifndef QREL_ASAN
#define QREL_ASAN 0
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(size_t n)
{
    fprintf(stderr, "qrel: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

void xmalloc_release(void)
{
    /* Not under AddressSanitizer: it replaces malloc, and glibc's malloc_trim then sets up
     * glibc's own arenas beside it, which abort at thread exit ("a->attached_threads > 0"). */
#if defined(__GLIBC__) && !QREL_ASAN
    malloc_trim(0);
#endif
}

void xmalloc_setup(void)
{
#if defined(__GLIBC__) && !QREL_ASAN
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 1);
#endif
}

char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    struct buf b;
    buf_init(&b);
    buf_vprintf(&b, fmt, ap);
    return buf_steal(&b);
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static void buf_reserve(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
    buf_append(b, &c, 1);
}

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *buf_steal(struct buf *b)
{
    char *p = b->data;
    if (!p)
        p = xstrdup("");
    buf_init(b);
    return p;
}

char *util_read_file(const char *path, size_t max, size_t *len_out)
{
    /* Non-blocking open and a check of what was opened: a FIFO (or a device) named as a config
     * or secret file would otherwise block the reader for ever, and with it a reload. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        int saved = S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
        close(fd);
        errno = saved;
        return NULL;
    }
    if (st.st_size > 0 && (size_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    struct buf b;
    buf_init(&b);
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            buf_free(&b);
            errno = EIO;
            return NULL;
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > max) {
            close(fd);
            buf_free(&b);
            errno = EFBIG;
            return NULL;
        }
        buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    if (len_out)
        *len_out = b.len;
    return buf_steal(&b);
}

const char *util_read_error(int errnum)
{
    return errnum == ENODEV ? "not a regular file" : strerror(errnum);
}

void util_chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

void buf_substitute(struct buf *b, const char *tmpl, const char *placeholder, const char *value)
{
    size_t plen = strlen(placeholder);
    const char *p = tmpl, *at;
    while (plen && (at = strstr(p, placeholder))) {
        buf_append(b, p, (size_t)(at - p));
        buf_puts(b, value);
        p = at + plen;
    }
    buf_puts(b, p);
}

char *util_substitute(const char *tmpl, const char *placeholder, const char *value)
{
    struct buf b;
    buf_init(&b);
    buf_substitute(&b, tmpl, placeholder, value);
    return buf_steal(&b);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it is invalid. Rejects
 * overlong forms, surrogates and code points past U+10FFFF, as Prometheus does. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len;
    unsigned cp;
    if ((p[0] & 0xE0) == 0xC0) {
        len = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        len = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
        return 0;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void util_utf8_sanitize(struct buf *out, const char *src, size_t len)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        size_t l;
        while (run < len && (l = utf8_seq_len(p + run, len - run)) > 0)
            run += l;
        buf_append(out, p + i, run - i);
        if (run < len) {
            buf_puts(out, "\xEF\xBF\xBD");
            run++;
        }
        i = run;
    }
}

double util_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm):
 * timegm() is not POSIX. */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static int rfc3339_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

int util_parse_rfc3339(const char *s, double *epoch)
{
    int Y, M, D, h, m, sec;
    const char *p = s;
    if (!s || rfc3339_digits(&p, 4, &Y) || *p++ != '-' || rfc3339_digits(&p, 2, &M) ||
        *p++ != '-' || rfc3339_digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
        return -1;
    p++;
    if (rfc3339_digits(&p, 2, &h) || *p++ != ':' || rfc3339_digits(&p, 2, &m) || *p++ != ':' ||
        rfc3339_digits(&p, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    double frac = 0, scale = 0.1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (rfc3339_digits(&p, 2, &oh) || *p++ != ':' || rfc3339_digits(&p, 2, &om))
            return -1;
        offset = sign * (oh * 3600L + om * 60L);
    } else {
        return -1;
    }
    if (*p)
        return -1;
    long long days = days_from_civil(Y, (unsigned)M, (unsigned)D);
    *epoch = (double)(days * 86400 + h * 3600LL + m * 60LL + sec - offset) + frac;
    return 0;
}

void buf_escaped(struct buf *out, const char *s, const struct buf_escape *how)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (how->rep[*p])
            buf_puts(out, how->rep[*p]);
        else if (how->hex_controls && *p < 0x20)
            buf_printf(out, "\\u%04x", *p);
        else
            buf_putc(out, (char)*p);
    }
}

static const struct buf_escape json_escape = {
    .rep = {['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t"},
    .hex_controls = 1,
};

void buf_json_string(struct buf *out, const char *s)
{
    if (!s) {
        buf_puts(out, "null");
        return;
    }
    buf_putc(out, '"');
    buf_escaped(out, s, &json_escape);
    buf_putc(out, '"');
}

static int base64_digit(unsigned char c, int strict)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || (!strict && c == '-'))
        return 62;
    if (c == '/' || (!strict && c == '_'))
        return 63;
    return -1;
}

long util_base64_decode(const char *in, size_t len, int strict, unsigned char *out)
{
    size_t n = len;
    while (n > 0 && in[n - 1] == '=')
        n--;
    size_t pad = len - n;
    /* one digit alone holds no byte; padding is at most two '=' that end a group of 4 */
    if (n % 4 == 1 || pad > 2 || (pad && len % 4) || (strict && (len == 0 || len % 4)))
        return -1;
    long k = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = base64_digit((unsigned char)in[i], strict);
        if (d < 0)
            return -1;
        acc = (acc << 6) | (unsigned)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return k;
}
