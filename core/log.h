/* log.h: structured logs to stderr, logfmt or JSON, one write() per line so threads never
 * interleave. Secrets must never be passed here: callers log names and reasons, not values. */
#ifndef QREL_LOG_H
#define QREL_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

int log_parse_level(const char *s, enum log_level *out); /* "debug","info","warn","error" */
int log_parse_format(const char *s, int *json_out);      /* "logfmt" -> 0, "json" -> 1 */
void log_setup(enum log_level min, int json);
int log_enabled(enum log_level lvl);
/* log_kv(LOG_WARN, "collection failed", "source", name, "reason", r, NULL):
 * msg plus NULL-terminated key/value string pairs (a NULL value is written as ""). */
void log_kv(enum log_level lvl, const char *msg, ...) __attribute__((sentinel));

#endif
