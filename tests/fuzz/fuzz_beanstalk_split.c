/* fuzz_beanstalk_split.c: libFuzzer target for beanstalkd's reply framing as the reader uses it
 * (issue 29: every reader survives any split of any reply). The reader frames the same buffer
 * again each time more bytes arrive, so framing the growing prefixes of an input must end exactly
 * as framing the whole input at once: the same verdict and, for a reply, the same status, line and
 * body. The first input byte chooses the growth step (1 to 16 bytes); the rest is the reply. A
 * framing that wrote into the buffer before the reply was whole (dcf2970) fails here. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/beanstalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)(data[0] % 16) + 1;
    data++;
    size--;
    /* Exact-size copies: ASan sees any read past them. */
    char *whole = malloc(size ? size : 1), *grown = malloc(size ? size : 1);
    if (!whole || !grown) {
        free(whole);
        free(grown);
        return 0;
    }
    memcpy(whole, data, size);
    memcpy(grown, data, size);
    struct beanstalk_reply rw, rg;
    struct err ew, eg;
    size_t uw = 0, ug = 0, have = 0;
    int fw = beanstalk_frame(whole, size, 1024, &uw, &rw, &ew);
    int fg = 0;
    while (fg == 0 && have < size) {
        have = size - have > step ? have + step : size;
        fg = beanstalk_frame(grown, have, 1024, &ug, &rg, &eg);
    }
    if (fg != fw)
        __builtin_trap();
    if (fw == 1 &&
        (ug != uw || strcmp(rg.status, rw.status) != 0 || strcmp(rg.line, rw.line) != 0 ||
         (rg.body == NULL) != (rw.body == NULL) || rg.body_len != rw.body_len ||
         (rw.body && memcmp(rg.body, rw.body, rw.body_len) != 0)))
        __builtin_trap();
    free(whole);
    free(grown);
    return 0;
}
