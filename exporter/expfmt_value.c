/* expfmt_value.c: sample values as text for both exposition formats (expfmt.h): the shortest
 * decimal that reads back as the same double, byte-exact because scrapers and promtool are
 * strict, and fast (mostly without printf) because one scrape of a large Redis formats hundreds
 * of thousands of them. */
#include "expfmt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes the decimal digits of u ending just before end; returns where they start. */
static char *digits_before(char *end, unsigned long long u)
{
    do {
        *--end = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return end;
}

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 u128;

static const uint64_t pow10_u64[20] = {
    1ULL,
    10ULL,
    100ULL,
    1000ULL,
    10000ULL,
    100000ULL,
    1000000ULL,
    10000000ULL,
    100000000ULL,
    1000000000ULL,
    10000000000ULL,
    100000000000ULL,
    1000000000000ULL,
    10000000000000ULL,
    100000000000000ULL,
    1000000000000000ULL,
    10000000000000000ULL,
    100000000000000000ULL,
    1000000000000000000ULL,
    10000000000000000000ULL,
};

/* v = f / 2^s exactly, and its rounding interval is (lo4, hi4) / 2^(s+2). Does the nearest
 * decimal with k fractional digits, *d / 10^k, lie strictly inside it (1), outside (0), or
 * exactly on an end (-1)? Everything fits in 128 bits: f < 2^53 and k <= 21, so the products
 * stay below 2^55 * 10^21 < 2^126. */
static int fixed_reads_back(uint64_t f, int s, uint64_t lo4, uint64_t hi4, int k, u128 *d)
{
    u128 num, lo, hi;
    if (k <= 19) { /* the common case: 64 x 64 bit products */
        uint64_t p10 = pow10_u64[k];
        num = (u128)f * p10;
        lo = (u128)lo4 * p10;
        hi = (u128)hi4 * p10;
    } else {
        u128 p10 = (u128)pow10_u64[19] * pow10_u64[k - 19];
        num = f * p10;
        lo = lo4 * p10;
        hi = hi4 * p10;
    }
    u128 half = (u128)1 << (s - 1);
    u128 rem = num & ((half << 1) - 1);
    *d = num >> s;
    if (rem > half || (rem == half && (*d & 1))) /* ties to even, as printf rounds */
        (*d)++;
    u128 scaled = *d << (s + 2);
    if (scaled == lo || scaled == hi)
        return -1;
    return scaled > lo && scaled < hi;
}

/* The shortest decimal that reads back as v, for 1e-4 <= v < 1e15 not an integer: exactly what
 * the snprintf/strtod search in expfmt_value_to prints there (%g stays in fixed notation over
 * this whole range), at a fraction of its cost (~1.5 us for a noisy value such as
 * "now - timestamp"; 200k of those would take 300 ms).
 *
 * The nearest k-digit decimal reads back iff it is inside v's rounding interval, and the smallest
 * such k gives the shortest text. Finer grids are never farther from v, so the property is
 * monotone in k and a binary search finds the smallest k in a few steps; except just above a
 * power of two, where the interval is lopsided (the gap below is half the gap above), so a scan
 * is used. A decimal exactly on an end of the interval would need strtod's tie rule: rare enough
 * to leave to the slow path. Writes to p, returns the length, or 0 for "use the slow path". */
static size_t format_fixed_shortest(char *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int biased = (int)(bits >> 52 & 0x7FF); /* v is normal here: 1 <= biased <= 2046 */
    uint64_t f = (bits & ((1ULL << 52) - 1)) | 1ULL << 52;
    int s = 1075 - biased; /* v = f / 2^s */
    if (s < 1 || s > 66)
        return 0;
    int lopsided = f == 1ULL << 52;
    uint64_t hi4 = (f << 2) + 2;
    uint64_t lo4 = (f << 2) - (lopsided ? 1 : 2);
    /* 17 significant digits always read back, i.e. k = 16 - floor(log10 v). 78913 / 2^18 is just
     * under log10 2, so t is at most floor(log10 v) + 1 and 18 - t bounds k from above. */
    int t = (52 - s) * 78913 / 262144;
    int k_end = 18 - t < 22 ? 18 - t : 22; /* the answer is in [1, k_end) */
    u128 d = 0, best = 0;
    int k = 0;
    if (lopsided) {
        for (int i = 1; i < k_end && !k; i++) {
            int r = fixed_reads_back(f, s, lo4, hi4, i, &d);
            if (r < 0)
                return 0;
            if (r) {
                k = i;
                best = d;
            }
        }
    } else {
        int lo = 1, hi = k_end;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            int r = fixed_reads_back(f, s, lo4, hi4, mid, &d);
            if (r < 0)
                return 0;
            if (r) {
                hi = mid;
                k = mid;
                best = d;
            } else {
                lo = mid + 1;
            }
        }
    }
    if (!k || best >= (u128)100000000000000000ULL)
        return 0; /* none found, or more than 17 digits: not expected, leave it to printf */

    char tmp[24];
    char *end = tmp + sizeof tmp;
    char *dig = digits_before(end, (unsigned long long)best);
    size_t nd = (size_t)(end - dig), nk = (size_t)k;
    char *q = p;
    if (nd <= nk) {
        *q++ = '0';
        *q++ = '.';
        for (size_t z = nd; z < nk; z++)
            *q++ = '0';
        memcpy(q, dig, nd);
        q += nd;
    } else {
        memcpy(q, dig, nd - nk);
        q += nd - nk;
        *q++ = '.';
        memcpy(q, dig + nd - nk, nk);
        q += nk;
    }
    return (size_t)(q - p);
}
#endif

size_t expfmt_value_to(char *p, double v)
{
    if (isnan(v)) {
        memcpy(p, "NaN", 3);
        return 3;
    }
    if (isinf(v)) {
        memcpy(p, v > 0 ? "+Inf" : "-Inf", 4);
        return 4;
    }
    /* Integers are the most common values (counts, flags, whole seconds) and need no search.
     * |v| <= 1e15 keeps them exact and makes the cast safe; -0 prints as 0. */
    if (fabs(v) <= 1e15 && v == floor(v)) {
        char tmp[24];
        char *end = tmp + sizeof tmp;
        long long n = (long long)v;
        char *q = digits_before(end, n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n);
        if (n < 0)
            *--q = '-';
        memcpy(p, q, (size_t)(end - q));
        return (size_t)(end - q);
    }
#ifdef __SIZEOF_INT128__
    double a = fabs(v);
    if (a >= 1e-4 && a < 1e15) {
        size_t n = format_fixed_shortest(p + (v < 0), a);
        if (n) {
            if (v < 0)
                *p = '-';
            return n + (v < 0);
        }
    }
#endif
    /* The shortest of 15, 16, 17 significant digits that reads back exactly; 17 always does.
     * snprintf and strtod share the C locale (the exporter never calls setlocale). */
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(p, EXPFMT_VALUE_MAX, "%.*g", prec, v);
        if (prec == 17 || strtod(p, NULL) == v)
            break;
    }
    return n > 0 ? (size_t)n : 0;
}

void expfmt_format_value(struct buf *out, double v)
{
    char tmp[EXPFMT_VALUE_MAX];
    buf_append(out, tmp, expfmt_value_to(tmp, v));
}
