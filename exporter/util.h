/* util.h: allocation that cannot fail silently, a growable byte buffer, small string helpers.
 *
 * An exporter that runs out of memory cannot report anything useful, so the x* allocators abort
 * with a message instead of making every caller handle NULL. Everything else in the tree may
 * therefore assume allocations succeed. */
#ifndef QREL_UTIL_H
#define QREL_UTIL_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* Hands the heap pages freed since the last call back to the kernel. glibc keeps freed memory
 * for reuse (per arena, above M_TRIM_THRESHOLD only at the top of the heap), so after one large
 * scrape the exporter would stay that large: 12.8 MiB of own memory after 2,000 streams with deep
 * pending lists, 3.5 MiB with trimming (issue 14). Called once a scrape's memory is freed. */
void xmalloc_release(void);
/* Called once before any thread starts: one malloc arena for the whole process. glibc gives each
 * thread that allocates its own arena (up to 8 per core), and every arena keeps its own partly
 * used pages, which malloc_trim cannot give back: with librdkafka's 6 threads qrel's own memory
 * after a Kafka scrape was 7.1-8.6 MiB with the arenas, 6.1-6.5 MiB with one; after a RabbitMQ
 * scrape of 10,000 queues 5.9-8.8 and 6.0 MiB, and the peak RSS 46-56 and 37.4 MiB (issue 14). A
 * scrape is one collector thread's work at a time per source, so the shared lock costs little.
 * MALLOC_ARENA_MAX in the environment still decides when it is set. */
void xmalloc_setup(void);
char *xstrdup(const char *s); /* xstrdup(NULL) == NULL */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

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

/* Reads a whole regular file (at most max bytes, else error). Returns a NUL-terminated malloc'd
 * string or NULL with errno set (EFBIG when larger than max, ENODEV for a FIFO, socket or device,
 * which are refused without blocking). *len_out may be NULL. */
char *util_read_file(const char *path, size_t max, size_t *len_out);
/* What went wrong in util_read_file, for messages: strerror, or "not a regular file". */
const char *util_read_error(int errnum);

/* Strips trailing "\r\n", "\n" and spaces in place (for secrets read from files). */
void util_chomp(char *s);
/* tmpl with every placeholder (e.g. "{topic}") replaced by value: a dead-letter name per queue
 * from one configured pattern, a schema in a statement. util_substitute returns it (never NULL;
 * free it), buf_substitute appends it to b. An empty placeholder replaces nothing. */
char *util_substitute(const char *tmpl, const char *placeholder, const char *value);
void buf_substitute(struct buf *b, const char *tmpl, const char *placeholder, const char *value);

/* Copies the valid UTF-8 of src into out; each invalid byte becomes U+FFFD. */
void util_utf8_sanitize(struct buf *out, const char *src, size_t len);

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

/* Wall-clock now in seconds since the epoch (CLOCK_REALTIME). */
double util_wall_now(void);

/* An RFC 3339 date-time ("2024-05-01T10:00:00.25Z", "…+02:00"; 't', 'z' and a space for 'T'
 * too) as seconds since the epoch, fraction kept. 0, or -1 when s is not one. Pure: no time zone
 * database, no timegm (not POSIX). */
int util_parse_rfc3339(const char *s, double *epoch);

/* Decodes the len bytes of base64 at in into out, which must hold len / 4 * 3 + 2 bytes, and
 * returns how many bytes it wrote, or -1 when in is not base64. strict (HTTP Basic credentials):
 * the standard alphabet, padded to a multiple of 4, not empty. Otherwise (protobuf's JSON for
 * bytes, as Pub/Sub sends message data): the standard or the URL-safe alphabet, padding optional
 * but, when present, completing the last group of 4. Bits left over in the last digit are
 * ignored. */
long util_base64_decode(const char *in, size_t len, int strict, unsigned char *out);

#endif
