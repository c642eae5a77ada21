/* buf.h: a growable byte buffer and the escaping that writes into one (JSON, HTML, UTF-8
 * repair, placeholder substitution). */
#ifndef QREL_BUF_H
#define QREL_BUF_H

#include <stdarg.h>
#include <stddef.h>

/* A growable, always NUL-terminated byte buffer. The buffer owns data; buf_free releases it,
 * buf_steal hands it to the caller (who frees it with free()). */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b); /* len = 0, keeps the allocation */
void buf_append(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap);
char *buf_steal(struct buf *b); /* never NULL; the buffer is empty afterwards */

/* Appends tmpl with every placeholder (e.g. "{topic}") replaced by value (text_substitute
 * returns the same as a string). An empty placeholder replaces nothing. */
void buf_substitute(struct buf *b, const char *tmpl, const char *placeholder, const char *value);

/* Copies the valid UTF-8 of src into out; each invalid byte becomes U+FFFD. */
void buf_utf8_sanitize(struct buf *out, const char *src, size_t len);

/* An escaping scheme for buf_escaped: the text that replaces each byte (NULL keeps the byte),
 * and whether the other bytes below 0x20 become \u00XX (JSON's form for them). One table per
 * format, so that JSON and HTML escaping are one loop. */
struct buf_escape {
    const char *rep[256];
    int hex_controls;
};

/* Appends s with each byte replaced as how says. */
void buf_escaped(struct buf *out, const char *s, const struct buf_escape *how);

/* Appends s as a JSON string ("null" for NULL): quotes, backslashes and control characters
 * escaped, other bytes as they are (the caller passes UTF-8). */
void buf_json_string(struct buf *out, const char *s);

#endif
