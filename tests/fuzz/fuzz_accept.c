/* fuzz_accept.c: libFuzzer target for the Accept header negotiation (exporter/expfmt.h): any
 * header picks one of the two formats, and that format has a content type. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *accept = malloc(size + 1);
    if (!accept)
        return 0;
    memcpy(accept, data, size);
    accept[size] = '\0'; /* MHD hands over header values NUL-terminated */
    enum expfmt_format f = expfmt_negotiate(accept);
    if ((f != EXPFMT_TEXT && f != EXPFMT_OPENMETRICS) || !expfmt_content_type(f))
        __builtin_trap();
    free(accept);
    return 0;
}
