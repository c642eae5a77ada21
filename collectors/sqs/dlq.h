/* sqs/dlq.h: `qrel dlq`'s hooks for SQS (collectors/sqs/dlq.c, core/dlq_kind.h), named by the
 * top (sqs.c). Its pure parts are declared in sqs.h. Private to the folder. */
#ifndef QREL_SQS_DLQ_H
#define QREL_SQS_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind sqs_dlq_kind;

#endif
