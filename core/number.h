/* number.h: the one strict parser for the numbers a person types into a flag or a config key:
 * counts, decimal rates and durations. Each takes plain decimal text only (no sign unless the
 * range goes below 0, no space, no "0x", no exponent, no "inf" or "nan") and a range the caller
 * states, so a number too large for the type it ends up in (an int of milliseconds, a pacing
 * interval) is refused where it is typed instead of wrapping round later. Pure. */
#ifndef QREL_NUMBER_H
#define QREL_NUMBER_H

#include <stddef.h>

/* The range of every timeout (a source's, --timeout): above 0, at most a day, which also keeps
 * it within an int of milliseconds (24.8 days) where a library wants one. */
#define NUM_TIMEOUT_MIN 0.001
#define NUM_TIMEOUT_MAX 86400.0

/* A whole number from min to max: digits, with a leading '-' only when min < 0.
 * 0, or -1 when s is not one or is out of range (*out untouched). */
int num_parse_int(const char *s, long long min, long long max, long long *out);

/* A decimal from min to max: digits, optionally '.' and more digits (".5" and "5." are
 * refused), a leading '-' only when min < 0. The value is always finite. 0, or -1. */
int num_parse_decimal(const char *s, double min, double max, double *out);

/* A duration in Prometheus' syntax ("500ms", "30s", "1h30m", "0"), in seconds, from min to max.
 * 0, or -1. */
int num_parse_duration(const char *s, double min, double max, double *out);

/* seconds as the shortest duration text in Prometheus' syntax that says it exactly in one unit
 * ("0", "1ms", "90s", "1d"), else "%gs": for messages that state a range. Returns buf. */
const char *num_format_duration(double seconds, char *buf, size_t cap);

/* Seconds as a whole number of milliseconds for an int-typed API (a poll timeout, a library's
 * *.ms property): rounded down, at least lo, and at most hi (hi <= INT_MAX), whatever d is
 * (NaN gives lo). Defence in depth where a bounded duration meets an int. */
int num_seconds_to_ms(double seconds, int lo, int hi);

#endif
