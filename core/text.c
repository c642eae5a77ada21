/* text.c: see text.h. */
#include "text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"

char *text_read_file(const char *path, size_t max, size_t *len_out)
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

const char *text_read_error(int errnum)
{
    return errnum == ENODEV ? "not a regular file" : strerror(errnum);
}

void text_chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

char *text_substitute(const char *tmpl, const char *placeholder, const char *value)
{
    struct buf b;
    buf_init(&b);
    buf_substitute(&b, tmpl, placeholder, value);
    return buf_steal(&b);
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

int text_parse_rfc3339(const char *s, double *epoch)
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

long text_base64_decode(const char *in, size_t len, int strict, unsigned char *out)
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
