/* alloc.h: allocation that cannot fail silently.
 *
 * An exporter that runs out of memory cannot report anything useful, so the x* allocators abort
 * with a message instead of making every caller handle NULL. Everything else in the tree may
 * therefore assume allocations succeed. */
#ifndef QREL_ALLOC_H
#define QREL_ALLOC_H

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
/* The concatenation of its arguments up to a NULL: xstrjoin(prefix, ":", queue, NULL). For the
 * keys a Redis kind builds per queue, where xasprintf's format parsing cost 2,100 instructions a
 * key, 7% of a Sidekiq scrape of 10,000 queues (callgrind); this costs about a tenth of it. */
char *xstrjoin(const char *first, ...) __attribute__((sentinel));

#endif
