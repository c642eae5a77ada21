/* sqs/settings.h: the configuration of an `sqs` source (collectors/sqs/settings.c): the keys
 * configure() reads into the state (client.h) and what the hooks ask of them later. No I/O.
 * Private to the folder. */
#ifndef QREL_SQS_SETTINGS_H
#define QREL_SQS_SETTINGS_H

#include "collector.h"
#include "config.h"
#include "err.h"
#include "sqs/client.h"

/* Reads the source mapping map into c's state (c->priv, a struct sqs_state) and judges it:
 * region, endpoints, credentials, queues. 0, or -1 with a file:line:col error; the state is then
 * half filled and sqs_settings_free frees it either way. */
int sqs_settings_read(struct collector *c, struct cfg_node *map, struct err *e);
/* Frees what st holds (not st). */
void sqs_settings_free(struct sqs_state *st);

/* Whether the source watches the queue called name: listed by name or URL, or matched by the
 * prefix, or every queue, and then not left out by exclude. */
int sqs_settings_watches(const struct sqs_state *st, const char *name);

/* The URL the source's queues list gives for the queue called name (malloc'd), NULL when the
 * queue is not listed by URL. */
char *sqs_settings_url(const struct sqs_state *st, const char *name);

#endif
