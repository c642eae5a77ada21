/* sd.h: the body of GET /sd, Prometheus' HTTP service discovery (http_sd) format: one target
 * group per configured source, so Prometheus scrapes each source through /probe on its own
 * (its own `up`, scrape duration and timeout) and can spread sources over servers with
 * `hashmod` relabelling. A pure function of the loaded sources and the advertised address. */
#ifndef QREL_SD_H
#define QREL_SD_H

#include <stddef.h>

#include "err.h"
#include "sources.h"
#include "buf.h"

/* Appends the JSON array to out: for each source
 *   {"targets":["<advertise>"],"labels":{"__metrics_path__":"/probe",
 *    "__param_target":"<name>","source":"<name>","kind":"<kind>"}}
 * An empty configuration gives [], which Prometheus reads as "no targets". */
void sd_render(struct buf *out, const struct sources *src, const char *advertise);

/* The address to advertise: `flag` when given (checked to be host:port with a real host and
 * port), else bound_host:port (the address the server bound, host without brackets) with
 * `hostname` standing in for an empty or wildcard host. 0, or -1 with e set (ERR_CONFIG). */
int sd_advertise_address(const char *flag, const char *bound_host, unsigned port,
                         const char *hostname, char *out, size_t outlen, struct err *e);

#endif
