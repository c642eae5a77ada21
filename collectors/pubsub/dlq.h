/* pubsub/dlq.h: what the top of the `pubsub` kind (pubsub.c) takes from dlq.c: `qrel dlq`'s
 * hooks, the load-time check of a `dead_letters:` entry and the dead_letter_subscriptions key.
 * Private to the folder. */
#ifndef QREL_PUBSUB_DLQ_H
#define QREL_PUBSUB_DLQ_H

#include "collector.h"
#include "config.h"
#include "dlq_kind.h"
#include "err.h"

extern const struct dlq_kind pubsub_dlq;
int pubsub_dead_letter_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                                const char *id_field, struct err *e);
/* Checks and keeps c's dead_letter_subscriptions mapping (NULL: none), read by
 * configure() with the other keys: subscription -> the subscription of its dead-letter topic. */
int pubsub_dead_letter_subs_configure(struct collector *c, struct cfg_node *map, struct err *e);

#endif
