/* fuzz_laravel.c: libFuzzer target for the readers of Laravel's job payloads. The postgres kind's
 * (collectors/postgres/laravel.c): the input as a failed_jobs payload (JSON, then the PHP
 * serialize() text of data.command, read for a property path) and as serialized text directly,
 * for paths of one and two parts; then the payload requeued and read back. The laravel kind's
 * (collectors/laravel/parse.c): its fast path against jansson alone, which must agree wherever
 * jansson reads the document (the fast path does not validate the values it skips, so on a
 * document jansson refuses as no JSON it may still answer). Any input must end in a result, never
 * a read outside the bytes given. */
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "laravel/laravel.h"
#include "postgres/postgres.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Same figure: both NaN, or equal with the same sign. */
static int same_figure(double a, double b)
{
    return (a != a && b != b) || (a == b && signbit(a) == signbit(b));
}

static void laravel_kind_paths(const char *s, size_t size)
{
    struct laravel_job fast, ref;
    enum entry_skip why;
    struct err e = {0};
    int answered = laravel_parse_job_fast(s, size, &fast);
    int rc = laravel_parse_job_jansson(s, size, &ref, &why, &e);
    if (!answered)
        return;
    /* jansson read it: the same figures; jansson found the figures wrong: never answered */
    if (rc == 0 &&
        !(same_figure(fast.attempts, ref.attempts) && same_figure(fast.timeout, ref.timeout) &&
          same_figure(fast.created_at, ref.created_at)))
        abort();
    if (rc != 0 && (why == ENTRY_MISSING_FIELD || why == ENTRY_BAD_VALUE))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    laravel_kind_paths(s, size);
    static const char *const paths[] = {"orderId", "order.id", "0", "a"};
    char out[32];
    struct laravel_payload p;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        (void)postgres_laravel_command_prop(s, size, paths[i], out, sizeof out);
        (void)postgres_laravel_payload_read(s, size, paths[i], &p);
    }
    char *back = postgres_laravel_payload_requeue(s, size, 3);
    if (back) {
        /* what qrel pushes back must read as a payload stamped 3 */
        if (postgres_laravel_payload_read(back, strlen(back), "orderId", &p) != 0 || p.replays != 3)
            abort();
        free(back);
    }
    return 0;
}
