/* SPDX-License-Identifier: Apache-2.0 */
/* A Prometheus metrics registry: counters, gauges and histograms with labels, text format 0.0.4. */
#pragma once

#include <stddef.h>

#include "macro.h"

#define METRIC_MAX_LABELS 4
#define METRIC_MAX_BUCKETS 32
#define METRIC_MAX_LABEL_VALUE 128 /* bytes of one label value */

typedef enum MetricType {
    METRIC_COUNTER,
    METRIC_GAUGE,
    METRIC_HISTOGRAM,
} MetricType;

/* A metric family, as registered; the strings and arrays must outlive it. */
typedef struct MetricDesc {
    MetricType type;
    const char *name; /* [a-zA-Z_:][a-zA-Z0-9_:]* */
    const char *help;
    const char *const *labels; /* label names, NULL-terminated; NULL: none */
    const double *buckets;     /* histograms: finite upper bounds, increasing; +Inf is implied */
    size_t n_buckets;
    /* label sets it may hold at once (1 without labels); a new one past
     * that is refused: labels come from closed sets, and this bounds a bug */
    size_t max_series;
} MetricDesc;

typedef struct MetricRegistry MetricRegistry;
typedef struct Metric Metric;

int metric_registry_new(MetricRegistry **ret);
/* Frees the registry and every metric registered with it. NULL-safe. */
void metric_registry_free(MetricRegistry *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricRegistry *, metric_registry_free);

/*
 * Register a family; *ret stays valid until the registry is freed. -EINVAL
 * for a name, label name or bucket list the text format cannot carry
 * (histograms may not use the label "le"), -EEXIST for a name taken.
 */
int metric_register(MetricRegistry *r, const MetricDesc *d, Metric **ret);

/*
 * Record into the series of the label values given (one per label name, in
 * order; NULL for a family without labels). All thread-safe. -EINVAL for the
 * wrong metric type, a counter going down, a NaN, or a value that is not
 * valid UTF-8 or longer than METRIC_MAX_LABEL_VALUE; -ENOSPC when the label
 * set is new and the family holds max_series already.
 */
int metric_add(Metric *m, const char *const *values, double v);     /* counter or gauge */
int metric_set(Metric *m, const char *const *values, double v);     /* gauge */
int metric_observe(Metric *m, const char *const *values, double v); /* histogram */
/* Make the series exist (at zero, if new), so that it shows before anything happened. */
int metric_touch(Metric *m, const char *const *values);

/*
 * The Prometheus text exposition format 0.0.4 of every family that has a
 * series, in the order registered, series in the order they came: HELP and
 * TYPE lines, escaped label values, histograms as cumulative _bucket{le=...}
 * lines ending in +Inf, then _sum and _count. A malloc'd, NUL-terminated text.
 */
int metric_registry_render(MetricRegistry *r, char **ret, size_t *ret_len);

/* v as the text format writes a sample value or a bucket bound: the fewest
 * digits that read back as v, as Go's client libraries write it ("0.005",
 * "10", "1e+06"), or "+Inf", "-Inf", "NaN". buf holds at least 32 bytes. */
const char *metric_format_value(double v, char *buf, size_t n);
