/* settings.h: the configuration of a `kafka` source (collectors/kafka/settings.c): what
 * configure() reads from the YAML mapping, the librdkafka properties it maps to, and the group
 * entries with their name matchers. No broker is involved, so every message is unit-tested. */
#ifndef QREL_KAFKA_SETTINGS_H
#define QREL_KAFKA_SETTINGS_H

#include <regex.h>
#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "common/exclude.h"
#include "config.h"
#include "err.h"

/* One entry of groups: which groups (name, glob or regex) on which topics (list, glob or regex). */
struct kafka_group_spec {
    char *name; /* exactly one of name, pattern and regex */
    char *pattern;
    char *regex;
    regex_t group_re;
    int has_group_re;
    char **topics; /* exactly one of topics, topic_pattern and topic_regex */
    size_t ntopics;
    char *topic_pattern;
    char *topic_regex;
    regex_t topic_re;
    int has_topic_re;
    struct exclude exclude;       /* groups a pattern or regex found, left out */
    struct exclude topic_exclude; /* topics a topic_pattern or topic_regex found, left out */
    double max_poll_interval;     /* seconds; <= 0: not configured */
    char *dlq_tmpl;               /* dead_letter_topic, NULL when not configured */
    int per_partition;
};

struct kafka_settings {
    char *bootstrap;
    /* librdkafka properties, in pairs: what the config keys map to, secrets included (values of
     * sasl.password and ssl.key.password are wiped on free) */
    char **props;
    size_t nprops;
    long long max_lag_fetches;
    long long max_response_bytes;
    char *client_group;
    double timeout; /* the source's, for librdkafka's connection timeouts */
    struct kafka_group_spec *specs;
    size_t nspecs;
};

/* Reads the source mapping map of source (named in messages) into *s, and has librdkafka check
 * every property. 0, or -1 with a file:line:col error; *s is then half filled: free it with
 * kafka_settings_free either way. */
int kafka_settings_read(struct kafka_settings *s, const char *source, double timeout,
                        struct cfg_node *map, struct err *e);
void kafka_settings_free(struct kafka_settings *s);

/* A librdkafka configuration from s (qrel's fixed properties, then the configured ones). NULL
 * with *bad_key the property librdkafka refused and errstr why; errstr never holds a secret. */
rd_kafka_conf_t *kafka_settings_conf(const struct kafka_settings *s, char *errstr, size_t cap,
                                     const char **bad_key);

/* The callbacks a client is made with (each may be NULL), and their opaque. */
struct kafka_client_cbs {
    void *opaque;
    void (*error_cb)(rd_kafka_t *rk, int code, const char *reason, void *opaque);
    void (*log_cb)(const rd_kafka_t *rk, int level, const char *fac, const char *buf);
    void (*dr_msg_cb)(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
};

/* A librdkafka client of type from s (kafka_settings_conf), with the pairs of extra (NULL-ended;
 * may be NULL) set over it and the callbacks of cb. NULL with e set (ERR_CONFIG, naming the
 * property and never quoting a secret's value). */
rd_kafka_t *kafka_settings_client(const struct kafka_settings *s, rd_kafka_type_t type,
                                  const char *const *extra, const struct kafka_client_cbs *cb,
                                  struct err *e);

/* Whether a librdkafka property holds a secret (its value is never quoted nor logged). */
int kafka_settings_is_secret(const char *prop);

/* Whether the entry selects this group / this topic (topics of a list are looked up, not
 * matched: 0 for them). */
int kafka_spec_group_match(const struct kafka_group_spec *sp, const char *group);
int kafka_spec_topic_match(const struct kafka_group_spec *sp, const char *topic);
/* 1 when the entry's pattern or regex (topic_pattern or topic_regex) matches the name but its
 * exclude (topic_exclude) leaves it out: what qrel_excluded_objects counts. */
int kafka_spec_group_excluded(const struct kafka_group_spec *sp, const char *group);
int kafka_spec_topic_excluded(const struct kafka_group_spec *sp, const char *topic);

/* The first entry of groups that measures topic (listed, or matched by topic_pattern or
 * topic_regex) and has a dead_letter_topic; NULL when none. */
const struct kafka_group_spec *kafka_settings_dlq_spec(const struct kafka_settings *s,
                                                       const char *topic);

#endif
