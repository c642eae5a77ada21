/* number.c: see number.h. The checks are done on the text before strtoll/strtod see it: alone,
 * those take leading spaces, '+', hex ("0x10"), exponents ("1e-300"), "inf" and "nan". */
#include "number.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many decimal digits s starts with. */
static size_t digits(const char *s)
{
    return strspn(s, "0123456789");
}

int num_parse_int(const char *s, long long min, long long max, long long *out)
{
    if (!s)
        return -1;
    const char *d = s[0] == '-' && min < 0 ? s + 1 : s;
    size_t n = digits(d);
    if (n == 0 || d[n] != '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int num_parse_decimal(const char *s, double min, double max, double *out)
{
    if (!s)
        return -1;
    const char *d = s[0] == '-' && min < 0 ? s + 1 : s;
    size_t n = digits(d);
    if (n == 0)
        return -1;
    if (d[n] == '.') {
        size_t f = digits(d + n + 1);
        if (f == 0)
            return -1;
        n += 1 + f;
    }
    if (d[n] != '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    /* ERANGE on a long run of digits past DBL_MAX; an underflow cannot happen without an
     * exponent, but a tiny value is still caught by min. */
    if (errno == ERANGE || *end != '\0' || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Prometheus model.ParseDuration: "0", or <digits><unit> runs with units strictly in the order
 * y w d h m s ms, each at most once; overflow past int64 nanoseconds is an error as there. */
static int duration_syntax(const char *s, double *seconds)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"y", 365ull * 24 * 3600 * 1000000000ull},
        {"w", 7ull * 24 * 3600 * 1000000000ull},
        {"d", 24ull * 3600 * 1000000000ull},
        {"h", 3600ull * 1000000000ull},
        {"m", 60ull * 1000000000ull},
        {"s", 1000000000ull},
        {"ms", 1000000ull},
    };
    const size_t nunits = sizeof units / sizeof units[0];
    if (!s || *s == '\0')
        return -1;
    if (strcmp(s, "0") == 0) {
        *seconds = 0;
        return 0;
    }
    uint64_t total = 0;
    size_t next_unit = 0; /* units before this index are used up */
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return -1;
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            unsigned digit = (unsigned)(*p - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return -1;
            v = v * 10 + digit;
        }
        const char *u = p;
        while (*p && (*p < '0' || *p > '9'))
            p++;
        size_t ulen = (size_t)(p - u);
        size_t k;
        for (k = 0; k < nunits; k++)
            if (strlen(units[k].name) == ulen && memcmp(units[k].name, u, ulen) == 0)
                break;
        if (k == nunits || k < next_unit)
            return -1;
        next_unit = k + 1;
        if (v > (uint64_t)INT64_MAX / units[k].ns)
            return -1;
        total += v * units[k].ns;
        if (total > (uint64_t)INT64_MAX)
            return -1;
    }
    *seconds = (double)total / 1e9;
    return 0;
}

int num_parse_duration(const char *s, double min, double max, double *out)
{
    double v;
    if (duration_syntax(s, &v) != 0 || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int num_seconds_to_ms(double seconds, int lo, int hi)
{
    double ms = seconds * 1000.0;
    if (!(ms >= (double)lo)) /* NaN too */
        return lo;
    if (ms >= (double)hi)
        return hi;
    return (int)ms;
}

const char *num_format_duration(double seconds, char *buf, size_t cap)
{
    static const struct {
        const char *name;
        double s;
    } units[] = {{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}, {"ms", 0.001}};
    if (seconds == 0) {
        snprintf(buf, cap, "0");
        return buf;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        double n = seconds / units[i].s;
        if (n >= 1 && n < 1e15 && fabs(n - round(n)) < 1e-9) {
            snprintf(buf, cap, "%.0f%s", round(n), units[i].name);
            return buf;
        }
    }
    snprintf(buf, cap, "%gs", seconds);
    return buf;
}
