/* fuzz_laravel.c: libFuzzer target for the reader of Laravel's job payloads
 * (collectors/postgres/laravel.c): the input as a failed_jobs payload (JSON, then the PHP
 * serialize() text of data.command, read for a property path) and as serialized text directly,
 * for paths of one and two parts; then the payload requeued and read back. Any input must end in
 * a result, never a read outside the bytes given. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/postgres.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
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
