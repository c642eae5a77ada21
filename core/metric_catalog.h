/* metric_catalog.h: the catalogue's table itself, for the metric set's per-sample paths
 * (metrics.c), which index it without a function call. Everyone else uses the metric_catalog_*
 * functions of metrics.h. Rows are sorted by name; a family's index is its row. */
#ifndef QREL_METRIC_CATALOG_H
#define QREL_METRIC_CATALOG_H

#include <stddef.h>

#include "metrics.h"

extern const struct metric_family metric_catalog_rows[];
extern const size_t metric_catalog_len;

#endif
