/* json_members.h: the top-level members of a JSON object, walked without building the document
 * (and json_skip_value, the skip it uses).
 *
 * A kind that reads a few top-level members of many job payloads (sidekiq, laravel) spends most of
 * a scrape building documents with jansson only to read two or three numbers. This scanner walks
 * the members of the top-level object and skips their values by their brackets and quotes
 * without building or validating them. It is a fast path only: a caller takes its answer when the
 * members it wants are plainly well-formed and asks jansson (the reference, with its messages)
 * about anything else. No I/O, no allocation. */
#ifndef QREL_JSON_MEMBERS_H
#define QREL_JSON_MEMBERS_H

#include <stddef.h>

/* One top-level member as written: its name's text between the quotes (klen bytes, escapes not
 * decoded: escaped says whether it had any), the member's text from the name's opening quote,
 * its value's text [v, v_end), and how deep the value nests (0 for a string, number or literal,
 * 1 for [] or {}, 2 for [[]], ...). */
struct json_member {
    const char *key;
    size_t klen;
    int escaped;
    const char *member;
    const char *v, *v_end;
    int depth;
};
typedef int (*json_member_fn)(void *ctx, const struct json_member *m);

/* Walks the top-level members of the object json, calling fn on each in order: 1 when json is
 * an object walked to its end and fn returned 0 for each, 0 otherwise. Values are skipped by
 * their brackets and quotes, not validated: a caller that must know the document is valid JSON
 * asks jansson too. */
int json_members(const char *json, size_t len, json_member_fn fn, void *ctx);

/* Past the JSON value that starts at p (no whitespace before it), skipped by its brackets and
 * quotes as the members' values are, not validated; NULL when it does not end before end. For a
 * caller that walks a document's outer levels itself. */
const char *json_skip_value(const char *p, const char *end);

#endif
