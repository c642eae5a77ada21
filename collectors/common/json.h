/* json.h: reading broker JSON (jansson) with errors that name the path that was wrong.
 *
 * A broker answering something unexpected must give a message a user can act on:
 *   "GET /api/queues: $[12].arguments.x-delivery-limit: want a number, got a string"
 * so every getter takes the path of the object it reads from (ctx, e.g. "$[12]") and the error
 * names ctx.key and what was found. Getters return 1 when the key holds a value of the wanted
 * type, 0 when it is absent or JSON null (a value the broker does not have: leave the series
 * out), -1 with ERR_PROTOCOL on a wrong type. The json_need_* variants also fail when absent. */
#ifndef QREL_JSON_H
#define QREL_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/* Parses a response body. what names the request in errors ("GET /jsz"). The document is the
 * caller's (json_decref). NULL with ERR_PROTOCOL and the position on malformed or truncated
 * JSON. */
json_t *json_parse_body(const char *body, size_t len, const char *what, struct err *e);

/* The JSON type of v as a word for messages: "an object", "a list", "a string", ... */
const char *json_type_word(const json_t *v);

/* Child paths for messages: "$.queues" + "[3]" -> "$.queues[3]"; out is cap bytes. */
void json_path_key(char *out, size_t cap, const char *ctx, const char *key);
void json_path_index(char *out, size_t cap, const char *ctx, size_t i);

int json_get_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                    struct err *e);
int json_get_array(const json_t *obj, const char *ctx, const char *key, json_t **out,
                   struct err *e);
/* *out points into the document. */
int json_get_string(const json_t *obj, const char *ctx, const char *key, const char **out,
                    struct err *e);
int json_get_number(const json_t *obj, const char *ctx, const char *key, double *out,
                    struct err *e);
/* A number, or a string holding a decimal number (SQS attributes and RedrivePolicy send counts
 * as strings; AWS's docs show numbers). */
int json_get_numeric(const json_t *obj, const char *ctx, const char *key, double *out,
                     struct err *e);
int json_get_bool(const json_t *obj, const char *ctx, const char *key, int *out, struct err *e);

/* Absent or null is an error ("$.streams[0].state: missing"). */
int json_need_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                     struct err *e);
int json_need_array(const json_t *obj, const char *ctx, const char *key, json_t **out,
                    struct err *e);
int json_need_string(const json_t *obj, const char *ctx, const char *key, const char **out,
                     struct err *e);
int json_need_number(const json_t *obj, const char *ctx, const char *key, double *out,
                     struct err *e);

/* The document root (or any value) must be of this type: "$: want a list, got an object". */
int json_expect_object(const json_t *v, const char *ctx, struct err *e);
int json_expect_array(const json_t *v, const char *ctx, struct err *e);

/* A string holding an RFC 3339 time, as epoch seconds in *out; a string that is none is an error
 * ("$.publishTime: want an RFC 3339 time, got \"yesterday\""). need: absent is an error too. */
int json_get_time(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e);
int json_need_time(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e);

/* RFC 3339 timestamp ("2026-11-29T15:04:05.123456789Z", offsets allowed) to epoch seconds.
 * 0 or -1 when it is not one. */
int json_parse_rfc3339(const char *s, double *epoch);

#endif
