/* fuzz_json.c: libFuzzer target for the JSON helpers (collectors/common/json.h): a body parses or
 * fails with ERR_PROTOCOL; then every getter is tried on every key of every object, and the
 * RFC 3339 reader on every string, as the collectors do with broker answers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const json_t *v, const char *ctx, int depth)
{
    struct err e;
    char path[256];
    if (depth > 32)
        return;
    if (json_is_string(v)) {
        double t;
        json_parse_rfc3339(json_string_value(v), &t);
    } else if (json_is_array(v)) {
        err_clear(&e);
        json_expect_array(v, ctx, &e);
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            json_path_index(path, sizeof path, ctx, i);
            walk(item, path, depth + 1);
        }
    } else if (json_is_object(v)) {
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)v, key, item)
        {
            json_t *o;
            const char *s;
            double d;
            int b;
            err_clear(&e);
            json_get_object(v, ctx, key, &o, &e);
            json_get_array(v, ctx, key, &o, &e);
            json_get_string(v, ctx, key, &s, &e);
            json_get_number(v, ctx, key, &d, &e);
            json_get_numeric(v, ctx, key, &d, &e);
            json_get_bool(v, ctx, key, &b, &e);
            json_need_string(v, ctx, key, &s, &e);
            json_path_key(path, sizeof path, ctx, key);
            walk(item, path, depth + 1);
        }
    }
    (void)json_type_word(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e;
    err_clear(&e);
    json_t *doc = json_parse_body((const char *)data, size, "fuzz", &e);
    if (!doc) {
        if (e.code != ERR_PROTOCOL)
            __builtin_trap();
        return 0;
    }
    walk(doc, "$", 0);
    json_decref(doc);
    return 0;
}
