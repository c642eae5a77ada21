/* dlq.h: `qrel dlq`'s hooks for ActiveMQ (collectors/activemq/dlq.c, core/dlq_kind.h), named by
 * the top (activemq.c). Its pure parts are declared in activemq.h. Private to the folder. */
#ifndef QREL_ACTIVEMQ_DLQ_H
#define QREL_ACTIVEMQ_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind activemq_dlq_kind;

#endif
