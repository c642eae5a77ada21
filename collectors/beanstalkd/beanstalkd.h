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

/* ---- `qrel dlq` ---- */

/* What `stats-job <id>` says of a job (beanstalkd 1.12: id, tube, state, pri, age, delay, ttr,
 * time-left, file, reserves, timeouts, releases, buries, kicks). age is the seconds since it was
 * put (beanstalkd keeps no time of the bury); reserves how often a worker took it. */
struct beanstalkd_job {
    unsigned long long id;
    char tube[201];
    char state[16]; /* ready, reserved, delayed, buried */
    double age;
    long long reserves, releases;
};
int beanstalkd_parse_job(const char *body, struct beanstalkd_job *out, struct err *e);

/* A dead_letters entry's id_field: a key of the job body parsed as JSON, dots between nested
 * keys (common/json_id.h). 0, or -1 with a reason in why. */
int beanstalkd_dlq_id_field(const char *id_field, char *why, size_t cap);

#endif
