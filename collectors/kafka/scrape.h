/* kafka/scrape.h: what the broker says about the topics and groups of a `kafka` source
 * (collectors/kafka/scrape.c): one Metadata request, the group entries resolved to (group,
 * topic) targets (ListGroups only for a pattern or regex), the watermarks of the wanted
 * partitions and the groups' committed offsets. The lag scrape (lag.c) reads all of it; the
 * dead-letter reads (records.c, dlq.c) the parts of one dead-letter topic. Private to the
 * folder. */
#ifndef QREL_KAFKA_SCRAPE_H
#define QREL_KAFKA_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "deadline.h"
#include "err.h"
#include "hashtab.h"
#include "kafka/client.h"

struct kafka_topic_data {
    const rd_kafka_metadata_topic_t *md; /* NULL: the topic does not exist */
    int wanted;                          /* watermarks are needed */
    int excluded;                        /* an entry's topic_pattern found it, its exclude
                                            left it out */
    int64_t *low, *high;                 /* per partition index of md */
};

/* One group measured on one topic. */
struct kafka_target {
    char *group;
    size_t spec;
    size_t topic; /* index into scrape.topics */
    size_t dlq;   /* index into scrape.topics, SIZE_MAX: none */
    char *dlq_name;
    int64_t *committed; /* per partition */
    size_t *need;       /* per partition: index into scrape.needs, SIZE_MAX: none */
};

/* Records to read, from offset up to until: their timestamps are ages. */
struct kafka_need {
    size_t topic;
    int32_t partition;
    int32_t leader; /* its leader broker, as the metadata says (kafka_client_wake) */
    int64_t offset;
    int64_t until; /* the last offset to read; == offset: the first record only */
    int done;
    int got;         /* a record was read */
    int64_t ts;      /* the first record's; -1: no record there (end of log, gone, no timestamp) */
    int64_t last_ts; /* the last record's up to until; -1 as above */
    int bad_ts;      /* a record's timestamp was out of the sane range: set to -1, no age */
};

struct kafka_scrape {
    const rd_kafka_metadata_t *md;
    struct kafka_topic_data *topics; /* one per metadata topic */
    size_t ntopics;
    struct kafka_target *t;
    size_t n;
    struct kafka_need *needs;
    size_t nneeds, needs_cap;
    struct hashtab need_index; /* needs by (topic, partition, offset): lag.c */
    int capped;
    size_t excluded_groups; /* listed groups a pattern found and an exclude left out */
    int has_exclude;        /* some entry has an exclude key: qrel_excluded_objects is served */
};

void kafka_scrape_free(struct kafka_scrape *sc); /* the members */
/* The index of topic name in sc->topics; SIZE_MAX when the broker does not list it. */
size_t kafka_scrape_topic_find(const struct kafka_scrape *sc, const char *name);
/* The Metadata of every topic into sc->md and sc->topics. */
int kafka_scrape_metadata(struct kafka_state *st, const struct deadline *dl,
                          struct kafka_scrape *sc, struct err *e);
/* The targets of the source's group entries (ListGroups when one has a pattern or regex). */
int kafka_scrape_targets(struct kafka_state *st, const struct deadline *dl, struct kafka_scrape *sc,
                         struct err *e);
/* One target: group on sc->topics[topic], as entry sp (index spec) measures it. */
void kafka_scrape_add_target(struct kafka_scrape *sc, const struct kafka_group_spec *sp,
                             size_t spec, const char *group, size_t topic);
/* The low and high watermarks of every partition of the wanted topics. */
int kafka_scrape_watermarks(struct kafka_state *st, const struct deadline *dl,
                            struct kafka_scrape *sc, struct err *e);
/* The committed offsets of every target's group on its topic. */
int kafka_scrape_committed(struct kafka_state *st, const struct deadline *dl,
                           struct kafka_scrape *sc, struct err *e);

#endif
