/* json_id.h: where a dead letter carries the id of its work, for the kinds whose messages have a
 * JSON body and named metadata beside it (Kafka records and headers, Pub/Sub data and
 * attributes, SQS bodies and message attributes).
 *
 * The `id_field` of a `dead_letters:` entry is either PREFIX NAME (the kind's metadata: "header:",
 * "attribute:") or a key of the body parsed as JSON, with dots for nesting ("order.id" in
 * {"order": {"id": 17}}; a part of digits is a position in an array: "args.0" is 17 in
 * {"args": [17]}). One spelling and one reading for every kind, so the same entry means the
 * same thing whatever the broker. No I/O. */
#ifndef QREL_JSON_ID_H
#define QREL_JSON_ID_H

#include <stddef.h>

/* 0 when id_field is PREFIX followed by a name, or a dotted JSON key without an empty part; else
 * -1 with a short reason in why (cap bytes), e.g. "want a header name after \"header:\"". */
int json_id_field_check(const char *id_field, const char *prefix, char *why, size_t cap);

/* The name after prefix when id_field starts with it, else NULL (a JSON key). */
const char *json_id_field_name(const char *id_field, const char *prefix);

/* The id at the dotted path in the JSON body (len bytes): a string as it is (with its length: it
 * may hold a NUL, which the caller refuses), an integer in decimal. malloc'd into *out with its
 * length in *outlen; *out = NULL when the body is not JSON, the path is absent, or its value is of
 * another type (a dead letter without an id). The body is parsed only to the path's depth. */
void json_id_at(const char *body, size_t len, const char *path, char **out, size_t *outlen);

#endif
