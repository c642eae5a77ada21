/* buf.c: see buf.h. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static void buf_reserve(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
    buf_append(b, &c, 1);
}

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *buf_steal(struct buf *b)
{
    char *p = b->data;
    if (!p)
        p = xstrdup("");
    buf_init(b);
    return p;
}

void buf_substitute(struct buf *b, const char *tmpl, const char *placeholder, const char *value)
{
    size_t plen = strlen(placeholder);
    const char *p = tmpl, *at;
    while (plen && (at = strstr(p, placeholder))) {
        buf_append(b, p, (size_t)(at - p));
        buf_puts(b, value);
        p = at + plen;
    }
    buf_puts(b, p);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it is invalid. Rejects
 * overlong forms, surrogates and code points past U+10FFFF, as Prometheus does. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len;
    unsigned cp;
    if ((p[0] & 0xE0) == 0xC0) {
        len = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        len = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
        return 0;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void buf_utf8_sanitize(struct buf *out, const char *src, size_t len)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        size_t l;
        while (run < len && (l = utf8_seq_len(p + run, len - run)) > 0)
            run += l;
        buf_append(out, p + i, run - i);
        if (run < len) {
            buf_puts(out, "\xEF\xBF\xBD");
            run++;
        }
        i = run;
    }
}

void buf_escaped(struct buf *out, const char *s, const struct buf_escape *how)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (how->rep[*p])
            buf_puts(out, how->rep[*p]);
        else if (how->hex_controls && *p < 0x20)
            buf_printf(out, "\\u%04x", *p);
        else
            buf_putc(out, (char)*p);
    }
}

static const struct buf_escape json_escape = {
    .rep = {['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t"},
    .hex_controls = 1,
};

void buf_json_string(struct buf *out, const char *s)
{
    if (!s) {
        buf_puts(out, "null");
        return;
    }
    buf_putc(out, '"');
    buf_escaped(out, s, &json_escape);
    buf_putc(out, '"');
}
