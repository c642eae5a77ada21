/* alloc.c: see alloc.h. */
#include "alloc.h"

#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define QREL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QREL_ASAN 1
#endif
#endif
#ifndef QREL_ASAN
#define QREL_ASAN 0
#endif
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "qrel: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

void xmalloc_release(void)
{
    /* Not under AddressSanitizer: it replaces malloc, and glibc's malloc_trim then sets up
     * glibc's own arenas beside it, which abort at thread exit ("a->attached_threads > 0"). */
#if defined(__GLIBC__) && !QREL_ASAN
    malloc_trim(0);
#endif
}

void xmalloc_setup(void)
{
#if defined(__GLIBC__) && !QREL_ASAN
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 1);
#endif
}

char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    /* Measured first, then written: one allocation of the exact size. */
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0) { /* an encoding error: an empty string, as buf_printf gives */
        va_end(again);
        return xstrdup("");
    }
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, again);
    va_end(again);
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

char *xstrjoin(const char *first, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *))
        n += strlen(a);
    va_end(ap);
    char *out = xmalloc(n + 1), *q = out;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        size_t len = strlen(a);
        memcpy(q, a, len);
        q += len;
    }
    va_end(ap);
    *q = '\0';
    return out;
}
