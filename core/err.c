/* err.c: see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, enum err_code code, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char pre[256], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Truncation is acceptable here: the message is for people, and the code is kept. */
    size_t n = strlen(pre);
    if (n > sizeof e->msg - 3)
        n = sizeof e->msg - 3;
    memcpy(e->msg, pre, n);
    memcpy(e->msg + n, ": ", 2);
    size_t rest = sizeof e->msg - n - 3;
    size_t olen = strnlen(old, rest);
    memcpy(e->msg + n + 2, old, olen);
    e->msg[n + 2 + olen] = '\0';
    return -1;
}

void err_clear(struct err *e)
{
    e->code = ERR_NONE;
    e->msg[0] = '\0';
}

const char *err_reason(enum err_code code)
{
    static const char *const names[ERR_CODE_COUNT] = {
        [ERR_NONE] = "none",       [ERR_CONFIG] = "config", [ERR_CONNECT] = "connect",
        [ERR_TIMEOUT] = "timeout", [ERR_AUTH] = "auth",     [ERR_PROTOCOL] = "protocol",
        [ERR_QUERY] = "query",     [ERR_LIMIT] = "limit",   [ERR_INTERNAL] = "internal",
    };
    if ((unsigned)code >= ERR_CODE_COUNT)
        return "internal";
    return names[code];
}
