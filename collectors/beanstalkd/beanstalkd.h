/* beanstalkd.h: the pure parts of `kind: beanstalkd` (parse.c), for the collector and its unit
 * tests: beanstalkd answers its stats commands with a small YAML document, either a list
 * ("---\n- default\n- emails\n") or a flat mapping ("---\ncurrent-jobs-ready: 3\n..."). */
#ifndef QREL_BEANSTALKD_H
#define QREL_BEANSTALKD_H

#include <stddef.h>

#include "err.h"

/* Parses a YAML list body into a NULL-terminated array of malloc'd strings (free with
 * cfg_strv_free from config.h). Errors: ERR_PROTOCOL naming the line. */
int beanstalkd_parse_list(const char *body, char ***out, size_t *n, struct err *e);

/* Reads the numeric values of keys[0, n) from a YAML mapping body into vals; a key missing from
 * the body, or whose value is not a non-negative number, is an ERR_PROTOCOL error naming it. */
int beanstalkd_parse_stats(const char *body, const char *const *keys, double *vals, size_t n,
                           struct err *e);

/* Is name a tube name beanstalkd accepts (1 to 200 bytes of letters, digits and -+/;.$_(), not
 * starting with '-')? Names that are not cannot be sent in a command line. */
int beanstalkd_tube_name_valid(const char *name);

#endif
