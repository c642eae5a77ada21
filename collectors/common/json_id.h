/* json_id.h: the id a message carries in its JSON body, at a dotted path ("order.id" in
 * {"order": {"id": 17}}), for the dead-letter join and `qrel dlq` of every kind whose messages
 * are JSON (Kafka records, SQS bodies, Pub/Sub data). No I/O. */
#ifndef QREL_JSON_ID_H
#define QREL_JSON_ID_H

#include <stddef.h>

/* 0 when path is keys separated by single dots, none of them empty; else -1. */
int json_id_path_check(const char *path);

/* The id at path in the JSON text value (len bytes): a string as it is, an integer in decimal.
 * malloc'd into *out with its length in *outlen; *out = NULL when the value is not JSON, the
 * path is absent, or its value is of another type (a message without an id). */
void json_id_at(const char *value, size_t len, const char *path, char **out, size_t *outlen);

#endif
