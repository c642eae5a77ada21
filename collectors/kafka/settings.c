/* kafka/settings.c: the configuration of a `kafka` source (settings.h). Every key of a mapping
 * is read before any combination is judged, so a misspelt key is reported with the known keys
 * rather than as the "missing" message it would otherwise cause. */
#include "kafka/settings.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/glob.h"
#include "common/secret.h"
#include "kafka/kafka.h"
#include "alloc.h"
#include "number.h"

#define DEFAULT_MAX_LAG_FETCHES 1000
#define DEFAULT_MAX_RESPONSE_BYTES 100000000LL
#define DEFAULT_CLIENT_GROUP "qrel-monitor"

static void wipe_str(char *s)
{
    if (!s)
        return;
    volatile char *p = s;
    while (*p)
        *p++ = 0;
}

int kafka_settings_is_secret(const char *prop)
{
    return strstr(prop, "password") || strstr(prop, "secret") || strstr(prop, "oauthbearer");
}

void kafka_settings_free(struct kafka_settings *s)
{
    for (size_t i = 0; i < s->nspecs; i++) {
        struct kafka_group_spec *sp = &s->specs[i];
        free(sp->name);
        free(sp->pattern);
        free(sp->regex);
        if (sp->has_group_re)
            regfree(&sp->group_re);
        cfg_strv_free(sp->topics);
        free(sp->topic_pattern);
        free(sp->topic_regex);
        if (sp->has_topic_re)
            regfree(&sp->topic_re);
        free(sp->dlq_tmpl);
        exclude_free(&sp->exclude);
        exclude_free(&sp->topic_exclude);
    }
    free(s->specs);
    for (size_t i = 0; i + 1 < s->nprops; i += 2) {
        if (kafka_settings_is_secret(s->props[i]))
            wipe_str(s->props[i + 1]);
        free(s->props[i]);
        free(s->props[i + 1]);
    }
    free(s->props);
    free(s->bootstrap);
    free(s->client_group);
    memset(s, 0, sizeof *s);
}

static void add_prop(struct kafka_settings *s, const char *key, char *value_owned)
{
    s->props = xrealloc(s->props, (s->nprops + 2) * sizeof *s->props);
    s->props[s->nprops++] = xstrdup(key);
    s->props[s->nprops++] = value_owned;
}

static int compile_re(struct cfg_node *at, const char *key, const char *regex, regex_t *re,
                      struct err *e)
{
    if (!*regex)
        return cfg_error(e, at, "%s: want a non-empty regular expression", key);
    char *full = kafka_full_regex(regex);
    int rc = regcomp(re, full, REG_EXTENDED | REG_NOSUB);
    free(full);
    if (rc) {
        char why[200];
        regerror(rc, re, why, sizeof why);
        return cfg_error(e, at, "%s: want a regular expression (POSIX extended): %s", key, why);
    }
    return 0;
}

/* A glob key: refused when it reads as a regular expression, which it was before `regex` came
 * (an upgraded config fails here instead of matching nothing). */
static int check_glob(struct cfg_node *at, const char *key, const char *glob, const char *regex_key,
                      struct err *e)
{
    if (!*glob)
        return cfg_error(e, at, "%s: want a non-empty glob", key);
    const char *rx = glob_regex_syntax(glob);
    if (rx)
        return cfg_error(e, at,
                         "%s: \"%.100s\" looks like a regular expression (it has \"%s\"): %s is a "
                         "glob (*, ?, [...]); write %s: for a regular expression",
                         key, glob, rx, key, regex_key);
    return 0;
}

static int configure_group(struct kafka_settings *s, const char *source, struct cfg_node *item,
                           size_t index, struct err *e)
{
    if (cfg_expect(item, CFG_MAP, "each entry of groups", e))
        return -1;
    s->specs = xrealloc(s->specs, (s->nspecs + 1) * sizeof *s->specs);
    struct kafka_group_spec *sp = &s->specs[s->nspecs++];
    memset(sp, 0, sizeof *sp);
    struct cfg_node *topics_node = NULL;
    if (cfg_get_str(item, "name", 0, &sp->name, e) ||
        cfg_get_str(item, "pattern", 0, &sp->pattern, e) ||
        cfg_get_str(item, "regex", 0, &sp->regex, e) ||
        cfg_get_node(item, "topics", CFG_SEQ, &topics_node, e) ||
        cfg_get_strlist(item, "topics", &sp->topics, &sp->ntopics, e) ||
        cfg_get_str(item, "topic_pattern", 0, &sp->topic_pattern, e) ||
        cfg_get_str(item, "topic_regex", 0, &sp->topic_regex, e) ||
        exclude_read(&sp->exclude, item, "exclude", "exclude_regex", e) ||
        exclude_read(&sp->topic_exclude, item, "topic_exclude", "topic_exclude_regex", e) ||
        cfg_get_positive_duration(item, "max_poll_interval", -1.0, &sp->max_poll_interval, e) ||
        cfg_get_nonempty(item, "dead_letter_topic", &sp->dlq_tmpl, e) ||
        cfg_get_bool(item, "per_partition", 0, &sp->per_partition, e))
        return -1;
    /* messages name the entry by what selects its groups, when that is clear */
    char where[300];
    int nsel = (sp->name != NULL) + (sp->pattern != NULL) + (sp->regex != NULL);
    if (nsel == 1)
        snprintf(where, sizeof where, "group %s \"%.100s\" of source \"%s\"",
                 sp->name      ? "name"
                 : sp->pattern ? "pattern"
                               : "regex",
                 sp->name      ? sp->name
                 : sp->pattern ? sp->pattern
                               : sp->regex,
                 source);
    else
        snprintf(where, sizeof where, "entry %zu of groups of source \"%s\"", index + 1, source);
    if (cfg_finish(item, where, e))
        return -1;

    if (nsel != 1)
        return cfg_error(e, item,
                         "want exactly one of name, pattern and regex in each entry of groups");
    if (sp->name && !*sp->name)
        return cfg_error(e, cfg_at(item, "name"), "name: want a non-empty string");
    if (sp->pattern && check_glob(cfg_at(item, "pattern"), "pattern", sp->pattern, "regex", e))
        return -1;
    if (sp->regex) {
        if (compile_re(cfg_at(item, "regex"), "regex", sp->regex, &sp->group_re, e))
            return -1;
        sp->has_group_re = 1;
    }

    if (exclude_check(&sp->exclude, item, e) || exclude_check(&sp->topic_exclude, item, e))
        return -1;
    /* an exclude beside an exact name would only ever hide what was asked for by name */
    if (sp->name && exclude_any(&sp->exclude))
        return cfg_error(e, cfg_at(item, sp->exclude.globs ? "exclude" : "exclude_regex"),
                         "%s: only with pattern or regex (name selects one group)",
                         sp->exclude.globs ? "exclude" : "exclude_regex");
    if (topics_node && exclude_any(&sp->topic_exclude))
        return cfg_error(
            e, cfg_at(item, sp->topic_exclude.globs ? "topic_exclude" : "topic_exclude_regex"),
            "%s: only with topic_pattern or topic_regex (topics lists the topics)",
            sp->topic_exclude.globs ? "topic_exclude" : "topic_exclude_regex");

    if ((topics_node != NULL) + (sp->topic_pattern != NULL) + (sp->topic_regex != NULL) != 1)
        return cfg_error(e, item,
                         "want exactly one of topics, topic_pattern and topic_regex in each entry "
                         "of groups (the topics whose lag the group is measured on)");
    if (topics_node && sp->ntopics == 0)
        return cfg_error(e, topics_node, "topics: want at least one topic name");
    for (size_t i = 0; i < sp->ntopics; i++)
        if (!*sp->topics[i])
            return cfg_error(e, topics_node->items[i], "topics: want non-empty topic names");
    /* Its own dead-letter topic: a dead letter would be delivered again, and a replay would
     * move nothing anywhere. */
    for (size_t i = 0; sp->dlq_tmpl && i < sp->ntopics; i++) {
        char *d = kafka_dlq_name(sp->dlq_tmpl, sp->topics[i]);
        int self = strcmp(d, sp->topics[i]) == 0;
        free(d);
        if (self)
            return cfg_error(e, cfg_at(item, "dead_letter_topic"),
                             "dead_letter_topic: \"%s\" is topic \"%s\" itself (a dead letter "
                             "would be delivered again)",
                             sp->dlq_tmpl, sp->topics[i]);
    }
    if (sp->dlq_tmpl && !topics_node && strcmp(sp->dlq_tmpl, "{topic}") == 0)
        return cfg_error(e, cfg_at(item, "dead_letter_topic"),
                         "dead_letter_topic: \"%s\" is every topic of the entry itself (a dead "
                         "letter would be delivered again)",
                         sp->dlq_tmpl);
    if (sp->topic_pattern && check_glob(cfg_at(item, "topic_pattern"), "topic_pattern",
                                        sp->topic_pattern, "topic_regex", e))
        return -1;
    if (sp->topic_regex) {
        if (compile_re(cfg_at(item, "topic_regex"), "topic_regex", sp->topic_regex, &sp->topic_re,
                       e))
            return -1;
        sp->has_topic_re = 1;
    }
    return 0;
}

rd_kafka_conf_t *kafka_settings_conf(const struct kafka_settings *s, char *errstr, size_t cap,
                                     const char **bad_key)
{
    char num[32];
    long long fetch_max = s->max_response_bytes / 2 < 1048576 ? s->max_response_bytes / 2 : 1048576;
    long long fetch_part = fetch_max < 65536 ? fetch_max : 65536;
    /* Each clamped to its property's range in librdkafka (at least 1 s, as a connection needs):
     * a cast alone overflows the int at 24.8 days, and a value past the range is refused. */
    int setup_ms = num_seconds_to_ms(s->timeout, 1000, INT_MAX);
    int api_version_ms = num_seconds_to_ms(s->timeout, 1000, 300000);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    struct {
        const char *k;
        const char *v;
    } fixed[] = {
        {"bootstrap.servers", s->bootstrap},
        {"client.id", "qrel"},
        /* A group id is needed by assign() in librdkafka 2.0; nothing joins or commits it. */
        {"group.id", s->client_group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},
        {"auto.offset.reset", "error"},
        /* A round's next fetch waits for the broker's reply to the one in flight, which a
         * partition at the end of its log holds for fetch.wait.max.ms. */
        {"fetch.wait.max.ms", "10"},
        {"fetch.error.backoff.ms", "100"},
        /* Counted over the one queue all partitions deliver to: at or above it librdkafka 2.0.2
         * stops fetching every partition until its broker thread's next 1 s tick. Librdkafka's
         * default, so only the bytes bound (queued.max.messages.kbytes) and the pauses limit
         * what is read ahead. */
        {"queued.min.messages", "100000"},
        {"log.connection.close", "false"},
        {"log_level", "4"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (rd_kafka_conf_set(conf, fixed[i].k, fixed[i].v, errstr, cap) != RD_KAFKA_CONF_OK) {
            *bad_key = fixed[i].k;
            goto fail;
        }
    struct {
        const char *k;
        long long v;
    } nums[] = {
        {"receive.message.max.bytes", s->max_response_bytes},
        {"fetch.max.bytes", fetch_max},
        {"fetch.message.max.bytes", fetch_part},
        {"socket.connection.setup.timeout.ms", setup_ms},
        {"api.version.request.timeout.ms", api_version_ms},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        snprintf(num, sizeof num, "%lld", nums[i].v);
        if (rd_kafka_conf_set(conf, nums[i].k, num, errstr, cap) != RD_KAFKA_CONF_OK) {
            *bad_key = nums[i].k;
            goto fail;
        }
    }
    for (size_t i = 0; i + 1 < s->nprops; i += 2)
        if (rd_kafka_conf_set(conf, s->props[i], s->props[i + 1], errstr, cap) !=
            RD_KAFKA_CONF_OK) {
            *bad_key = s->props[i];
            goto fail;
        }
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

rd_kafka_t *kafka_settings_client(const struct kafka_settings *s, rd_kafka_type_t type,
                                  const char *const *extra, const struct kafka_client_cbs *cb,
                                  struct err *e)
{
    char errstr[512];
    const char *bad = NULL;
    rd_kafka_conf_t *conf = kafka_settings_conf(s, errstr, sizeof errstr, &bad);
    for (size_t i = 0; conf && extra && extra[i]; i += 2)
        if (rd_kafka_conf_set(conf, extra[i], extra[i + 1], errstr, sizeof errstr)) {
            bad = extra[i];
            rd_kafka_conf_destroy(conf);
            conf = NULL;
        }
    if (!conf) {
        err_set(e, ERR_CONFIG, "kafka: %s: %s", bad,
                kafka_settings_is_secret(bad) ? "invalid value" : errstr);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, cb->opaque);
    if (cb->error_cb)
        rd_kafka_conf_set_error_cb(conf, cb->error_cb);
    if (cb->log_cb)
        rd_kafka_conf_set_log_cb(conf, cb->log_cb);
    if (cb->dr_msg_cb)
        rd_kafka_conf_set_dr_msg_cb(conf, cb->dr_msg_cb);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        err_set(e, ERR_CONFIG, "kafka: cannot create the client: %s", errstr);
    }
    return rk;
}

/* The config keys that map one-to-one to librdkafka properties: the mapping they stand in (the
 * source, or tls_config) and the key there, for messages. */
static const struct {
    int tls;
    const char *key, *prop;
} prop_keys[] = {
    {0, "security_protocol", "security.protocol"}, {0, "sasl_mechanism", "sasl.mechanisms"},
    {0, "sasl_username", "sasl.username"},         {1, "ca_file", "ssl.ca.location"},
    {1, "cert_file", "ssl.certificate.location"},  {1, "key_file", "ssl.key.location"},
};

/* The flat TLS keys of earlier releases, refused with the tls_config key that replaced them. */
static const struct {
    const char *old_key, *new_key;
} renamed_tls[] = {
    {"tls_ca_file", "tls_config.ca_file"},
    {"tls_cert_file", "tls_config.cert_file"},
    {"tls_key_file", "tls_config.key_file"},
    {"tls_key_password_file", "tls_config.key_password_file"},
    {"tls_key_password_env", "tls_config.key_password_env"},
    {"tls_verify_hostname", "tls_config.insecure_skip_verify"},
};

/* What the key/librdkafka pairs, the secrets, tls_config and the free-form librdkafka map hold.
 * tls and extra are set to the nodes read, for messages. */
static int read_props(struct kafka_settings *s, struct cfg_node *map, struct cfg_node **tls,
                      struct err *e)
{
    for (size_t i = 0; i < sizeof renamed_tls / sizeof renamed_tls[0]; i++)
        if (cfg_refuse_renamed(map, renamed_tls[i].old_key, renamed_tls[i].new_key,
                               strcmp(renamed_tls[i].old_key, "tls_verify_hostname") == 0
                                   ? "the TLS settings are a map, as for the HTTP kinds; "
                                     "insecure_skip_verify: true turns off the host name check "
                                     "and the certificate verification"
                                   : "the TLS settings are a map, as for the HTTP kinds",
                               e))
            return -1;
    if (cfg_get_node(map, "tls_config", CFG_MAP, tls, e))
        return -1;
    for (size_t i = 0; i < sizeof prop_keys / sizeof prop_keys[0]; i++) {
        struct cfg_node *in = prop_keys[i].tls ? *tls : map;
        char *v = NULL;
        /* The TLS files are opened by librdkafka: no FIFO there (cfg_get_path). */
        if (in && (prop_keys[i].tls ? cfg_get_path(in, prop_keys[i].key, &v, e)
                                    : cfg_get_nonempty(in, prop_keys[i].key, &v, e)))
            return -1;
        if (v)
            add_prop(s, prop_keys[i].prop, v);
    }
    char *pw = NULL;
    if (secret_get(map, "sasl_password", 0, &pw, e))
        return -1;
    if (pw)
        add_prop(s, "sasl.password", pw);
    if (*tls) {
        if (secret_get(*tls, "key_password", 0, &pw, e))
            return -1;
        if (pw)
            add_prop(s, "ssl.key.password", pw);
        int insecure = 0;
        if (cfg_get_bool(*tls, "insecure_skip_verify", 0, &insecure, e) ||
            cfg_finish(*tls, "tls_config", e))
            return -1;
        if (insecure) {
            add_prop(s, "enable.ssl.certificate.verification", xstrdup("false"));
            add_prop(s, "ssl.endpoint.identification.algorithm", xstrdup("none"));
        }
    }

    /* Any other librdkafka property, as written: for what the keys above do not cover. Secrets
     * stay out of it: they belong in *_file keys, and the file would quote them. */
    struct cfg_node *extra = NULL;
    if (cfg_get_node(map, "librdkafka", CFG_MAP, &extra, e))
        return -1;
    for (size_t i = 0; extra && i < extra->n; i++) {
        struct cfg_pair *p = &extra->pairs[i];
        p->known = 1;
        if (p->value->kind != CFG_SCALAR)
            return cfg_error(e, p->value, "librdkafka: %s: want a string value", p->key);
        if (kafka_settings_is_secret(p->key))
            return cfg_error(e, p->value,
                             "librdkafka: %s: secrets cannot be given here; use "
                             "sasl_password_file or tls_config.key_password_file",
                             p->key);
        add_prop(s, p->key, xstrdup(p->value->scalar ? p->value->scalar : ""));
    }
    return 0;
}

int kafka_settings_read(struct kafka_settings *s, const char *source, double timeout,
                        struct cfg_node *map, struct err *e)
{
    memset(s, 0, sizeof *s);
    s->timeout = timeout;
    char where[300];
    snprintf(where, sizeof where, "source \"%s\"", source);
    struct cfg_node *groups = NULL, *tls = NULL;
    if (cfg_refuse_renamed(map, "max_reply_bytes", "max_response_bytes", NULL, e) ||
        cfg_get_str(map, "bootstrap_servers", 0, &s->bootstrap, e) ||
        cfg_get_node(map, "groups", CFG_SEQ, &groups, e) || read_props(s, map, &tls, e) ||
        cfg_get_int(map, "max_lag_fetches", DEFAULT_MAX_LAG_FETCHES, 0, 1000000,
                    &s->max_lag_fetches, e) ||
        cfg_get_int(map, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, 65536, 1000000000,
                    &s->max_response_bytes, e) ||
        cfg_get_nonempty(map, "client_group_id", &s->client_group, e) || cfg_finish(map, where, e))
        return -1;
    if (!s->bootstrap)
        return cfg_get_str(map, "bootstrap_servers", 1, &s->bootstrap, e);
    if (!*s->bootstrap || strchr(s->bootstrap, '@') || strstr(s->bootstrap, "://"))
        return cfg_error(e, cfg_at(map, "bootstrap_servers"),
                         "bootstrap_servers: want host:port[,host:port...] (no URL, no "
                         "credentials)");
    if (!s->client_group)
        s->client_group = xstrdup(DEFAULT_CLIENT_GROUP);

    char errstr[512];
    const char *bad = NULL;
    rd_kafka_conf_t *conf = kafka_settings_conf(s, errstr, sizeof errstr, &bad);
    if (!conf) {
        struct cfg_node *at = cfg_at(map, "librdkafka");
        const char *k = "librdkafka";
        for (size_t i = 0; i < sizeof prop_keys / sizeof prop_keys[0]; i++)
            if (strcmp(prop_keys[i].prop, bad) == 0) {
                k = prop_keys[i].key;
                at = prop_keys[i].tls ? cfg_at(tls, k) : cfg_at(map, k);
            }
        return cfg_error(e, at, "%s: librdkafka refuses it: %s", k,
                         kafka_settings_is_secret(bad) ? "invalid value" : errstr);
    }
    rd_kafka_conf_destroy(conf);

    if (!groups || groups->n == 0)
        return cfg_error(e, groups ? groups : map,
                         "groups: want a list of at least one {name: ..., topics: [...]}");
    for (size_t i = 0; i < groups->n; i++)
        if (configure_group(s, source, groups->items[i], i, e))
            return -1;
    return 0;
}

static int group_selected(const struct kafka_group_spec *sp, const char *group)
{
    if (sp->name)
        return strcmp(sp->name, group) == 0;
    if (sp->pattern)
        return glob_match(sp->pattern, group);
    return regexec(&sp->group_re, group, 0, NULL, 0) == 0;
}

static int topic_selected(const struct kafka_group_spec *sp, const char *topic)
{
    if (sp->topic_pattern)
        return glob_match(sp->topic_pattern, topic);
    if (sp->has_topic_re)
        return regexec(&sp->topic_re, topic, 0, NULL, 0) == 0;
    return 0;
}

int kafka_spec_group_match(const struct kafka_group_spec *sp, const char *group)
{
    return group_selected(sp, group) && !exclude_match(&sp->exclude, group);
}

int kafka_spec_topic_match(const struct kafka_group_spec *sp, const char *topic)
{
    return topic_selected(sp, topic) && !exclude_match(&sp->topic_exclude, topic);
}

int kafka_spec_group_excluded(const struct kafka_group_spec *sp, const char *group)
{
    return group_selected(sp, group) && exclude_match(&sp->exclude, group);
}

int kafka_spec_topic_excluded(const struct kafka_group_spec *sp, const char *topic)
{
    return topic_selected(sp, topic) && exclude_match(&sp->topic_exclude, topic);
}

/* The first entry of groups that measures topic (listed, or matched by topic_pattern or
 * topic_regex) and has a
 * dead_letter_topic; NULL when none. */
const struct kafka_group_spec *kafka_settings_dlq_spec(const struct kafka_settings *s,
                                                       const char *topic)
{
    for (size_t i = 0; i < s->nspecs; i++) {
        const struct kafka_group_spec *sp = &s->specs[i];
        if (!sp->dlq_tmpl)
            continue;
        for (size_t k = 0; k < sp->ntopics; k++)
            if (strcmp(sp->topics[k], topic) == 0)
                return sp;
        if (kafka_spec_topic_match(sp, topic))
            return sp;
    }
    return NULL;
}
