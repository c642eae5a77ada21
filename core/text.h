/* text.h: small text, time and encoding helpers: whole files, secrets' line ends,
 * placeholders, RFC 3339 dates, base64. Pure apart from text_read_file. */
#ifndef QREL_TEXT_H
#define QREL_TEXT_H

#include <stddef.h>

/* Reads a whole regular file (at most max bytes, else error). Returns a NUL-terminated malloc'd
 * string or NULL with errno set (EFBIG when larger than max, ENODEV for a FIFO, socket or device,
 * which are refused without blocking). *len_out may be NULL. */
char *text_read_file(const char *path, size_t max, size_t *len_out);
/* What went wrong in text_read_file, for messages: strerror, or "not a regular file". */
const char *text_read_error(int errnum);

/* Strips trailing "\r\n", "\n" and spaces in place (for secrets read from files). */
void text_chomp(char *s);
/* tmpl with every placeholder (e.g. "{topic}") replaced by value: a dead-letter name per queue
 * from one configured pattern. Never NULL; free it. An empty placeholder replaces nothing. */
char *text_substitute(const char *tmpl, const char *placeholder, const char *value);

/* An RFC 3339 date-time ("2024-05-01T10:00:00.25Z", "…+02:00"; 't', 'z' and a space for 'T'
 * too) as seconds since the epoch, fraction kept. 0, or -1 when s is not one. Pure: no time zone
 * database, no timegm (not POSIX). */
int text_parse_rfc3339(const char *s, double *epoch);

/* Decodes the len bytes of base64 at in into out, which must hold len / 4 * 3 + 2 bytes, and
 * returns how many bytes it wrote, or -1 when in is not base64. strict (HTTP Basic credentials):
 * the standard alphabet, padded to a multiple of 4, not empty. Otherwise (protobuf's JSON for
 * bytes, as Pub/Sub sends message data): the standard or the URL-safe alphabet, padding optional
 * but, when present, completing the last group of 4. Bits left over in the last digit are
 * ignored. */
long text_base64_decode(const char *in, size_t len, int strict, unsigned char *out);

#endif
