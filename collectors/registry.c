/* registry.c: the static table of collector kinds this build has. The list IS this table: a new
 * kind is one folder collectors/<kind>/, one qrel_kind() line in collectors/CMakeLists.txt (which
 * defines QREL_WITH_<KIND> here when the kind is built) and one row in each list below. */
#include <string.h>

#include "collector.h"

#ifdef QREL_WITH_REDIS_STREAM
extern const struct collector_kind redis_stream_kind;
#endif
#ifdef QREL_WITH_POSTGRES
extern const struct collector_kind postgres_kind;
#endif
#ifdef QREL_WITH_KAFKA
extern const struct collector_kind kafka_kind;
#endif
#ifdef QREL_WITH_SQS
extern const struct collector_kind sqs_kind;
#endif
#ifdef QREL_WITH_NATS
extern const struct collector_kind nats_kind;
#endif
#ifdef QREL_WITH_PUBSUB
extern const struct collector_kind pubsub_kind;
#endif
#ifdef QREL_WITH_RABBITMQ
extern const struct collector_kind rabbitmq_kind;
#endif
#ifdef QREL_WITH_BEANSTALKD
extern const struct collector_kind beanstalkd_kind;
#endif
#ifdef QREL_WITH_RQ
extern const struct collector_kind rq_kind;
#endif
#ifdef QREL_WITH_SIDEKIQ
extern const struct collector_kind sidekiq_kind;
#endif
#ifdef QREL_WITH_CELERY
extern const struct collector_kind celery_kind;
#endif
#ifdef QREL_WITH_BULLMQ
extern const struct collector_kind bullmq_kind;
#endif

static const struct collector_kind *const kinds[] = {
#ifdef QREL_WITH_REDIS_STREAM
    &redis_stream_kind,
#endif
#ifdef QREL_WITH_POSTGRES
    &postgres_kind,
#endif
#ifdef QREL_WITH_KAFKA
    &kafka_kind,
#endif
#ifdef QREL_WITH_SQS
    &sqs_kind,
#endif
#ifdef QREL_WITH_NATS
    &nats_kind,
#endif
#ifdef QREL_WITH_PUBSUB
    &pubsub_kind,
#endif
#ifdef QREL_WITH_RABBITMQ
    &rabbitmq_kind,
#endif
#ifdef QREL_WITH_BEANSTALKD
    &beanstalkd_kind,
#endif
#ifdef QREL_WITH_RQ
    &rq_kind,
#endif
#ifdef QREL_WITH_SIDEKIQ
    &sidekiq_kind,
#endif
#ifdef QREL_WITH_CELERY
    &celery_kind,
#endif
#ifdef QREL_WITH_BULLMQ
    &bullmq_kind,
#endif
    NULL,
};

size_t collector_kind_count(void)
{
    return sizeof kinds / sizeof kinds[0] - 1;
}

const struct collector_kind *collector_kind_at(size_t i)
{
    return i < collector_kind_count() ? kinds[i] : NULL;
}

const struct collector_kind *collector_kind_find(const char *name)
{
    for (size_t i = 0; i < collector_kind_count(); i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}
