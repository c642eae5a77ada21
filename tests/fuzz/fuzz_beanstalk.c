/* fuzz_beanstalk.c: libFuzzer target for beanstalkd's reply handling: the framing of
 * collectors/common/beanstalk.h over a whole input (replies back to back, as a pipeline reads
 * them), then each OK body through the stats readers of collectors/beanstalkd/beanstalkd.h. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "beanstalkd/beanstalkd.h"
#include "common/beanstalk.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_body(const char *body)
{
    static const char *const keys[] = {"current-jobs-ready", "current-jobs-reserved",
                                       "current-jobs-buried", "total-jobs"};
    double vals[4];
    char **names = NULL;
    size_t n = 0;
    struct err e;
    err_clear(&e);
    if (beanstalkd_parse_list(body, &names, &n, &e) == 0)
        for (size_t i = 0; i < n; i++)
            (void)beanstalkd_tube_name_valid(names[i]);
    cfg_strv_free(names);
    err_clear(&e);
    (void)beanstalkd_parse_stats(body, keys, vals, 4, &e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy: the framing writes NULs into it, and ASan sees any read past it. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    size_t off = 0;
    for (;;) {
        size_t used = 0;
        struct beanstalk_reply r;
        struct err e;
        err_clear(&e);
        int rc = beanstalk_frame(buf + off, size - off, 1024, &used, &r, &e);
        if (rc != 1)
            break;
        if (used == 0 || used > size - off)
            __builtin_trap();
        if (r.body)
            read_body(r.body);
        off += used;
    }
    free(buf);
    return 0;
}
