/* rabbitmq/dlq.h: `qrel dlq`'s hooks for RabbitMQ (collectors/rabbitmq/dlq.c, core/dlq_kind.h),
 * named by the top (rabbitmq.c). Its pure parts are declared in rabbitmq.h. Private. */
#ifndef QREL_RABBITMQ_DLQ_H
#define QREL_RABBITMQ_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind rabbitmq_dlq_kind;

#endif
