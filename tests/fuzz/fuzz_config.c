/* fuzz_config.c: libFuzzer target for the configuration loader (core/config.h, exporter/sources.h):
 * any bytes must end in a tree or a file:line:col error, never a crash, a leak or a hang; a
 * tree is then read by the core and every kind's configure(), as a real file would be. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "err.h"
#include "sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e;
    err_clear(&e);
    struct cfg_doc *d = cfg_parse_string("fuzz.yml", (const char *)data, size, &e);
    if (!d) {
        /* Every parse error names the place: "fuzz.yml:L:C: ..." (or says out of memory). */
        if (strncmp(e.msg, "fuzz.yml:", 9) != 0 && e.code != ERR_INTERNAL)
            __builtin_trap();
        return 0;
    }
    cfg_doc_free(d);
    /* sources_load_string reads a NUL-terminated text: stop at the first NUL as a file read
     * would not, but the loader refuses NULs in strings anyway. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    err_clear(&e);
    struct sources *s = sources_load_string("fuzz.yml", text, &e);
    sources_free(s);
    free(text);
    return 0;
}
