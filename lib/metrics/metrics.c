/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics registry and the Prometheus text exposition format 0.0.4. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct Series {
    char *values[METRIC_MAX_LABELS];
    double value;     /* counter, gauge; histogram: the sum */
    uint64_t count;   /* histogram: observations */
    uint64_t *counts; /* histogram: per bucket, not cumulative; [n_buckets] is +Inf */
} Series;

struct Metric {
    MetricRegistry *registry;
    MetricDesc d;
    size_t n_labels;
    Series *series;
    size_t n_series;
    Metric *next;
};

/* One lock for everything: recording is a few additions, and a scrape holds
 * it only while it writes text into memory. */
struct MetricRegistry {
    pthread_mutex_t lock;
    Metric *first, *last;
};

int metric_registry_new(MetricRegistry **ret) {
    MetricRegistry *r = calloc(1, sizeof(*r));

    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->lock, NULL);
    *ret = r;
    return 0;
}

static void series_done(const Metric *m, Series *s) {
    for (size_t i = 0; i < m->n_labels; i++)
        free(s->values[i]);
    free(s->counts);
}

void metric_registry_free(MetricRegistry *r) {
    if (!r)
        return;
    for (Metric *m = r->first, *next; m; m = next) {
        next = m->next;
        for (size_t i = 0; i < m->n_series; i++)
            series_done(m, &m->series[i]);
        free(m->series);
        free(m);
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- names and values ---------------------------------------------------- */

static bool name_char(char c, bool first, bool colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
           (!first && c >= '0' && c <= '9');
}

static bool name_valid(const char *s, bool colon) {
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!name_char(*p, p == s, colon))
            return false;
    return true;
}

static bool label_name_valid(const char *s, MetricType type) {
    /* "__" names are Prometheus's own; "le" is the histogram's bucket label */
    return name_valid(s, false) && strncmp(s, "__", 2) != 0 &&
           !(type == METRIC_HISTOGRAM && streq(s, "le"));
}

/* Well-formed UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_valid(const unsigned char *s) {
    while (*s) {
        unsigned c = *s, n = c < 0x80                ? 0
                             : c >= 0xc2 && c < 0xe0 ? 1
                             : (c & 0xf0) == 0xe0    ? 2
                             : c >= 0xf0 && c < 0xf5 ? 3
                                                     : 4;
        if (n == 4)
            return false;
        unsigned cp = n == 0 ? c : c & (0x3f >> n);
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        s += n + 1;
    }
    return true;
}

static bool buckets_valid(const double *b, size_t n) {
    if (!b || n == 0 || n > METRIC_MAX_BUCKETS)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(b[i]) || (i > 0 && b[i] <= b[i - 1]))
            return false;
    return true;
}

static int desc_check(const MetricDesc *d, size_t *ret_n_labels) {
    size_t n = 0;

    if (!name_valid(d->name, true) || !d->help || d->type > METRIC_HISTOGRAM)
        return -EINVAL;
    for (; d->labels && d->labels[n]; n++) {
        if (n == METRIC_MAX_LABELS || !label_name_valid(d->labels[n], d->type))
            return -EINVAL;
        for (size_t j = 0; j < n; j++)
            if (streq(d->labels[j], d->labels[n]))
                return -EINVAL;
    }
    if ((d->type == METRIC_HISTOGRAM) != (d->buckets != NULL) ||
        (d->type == METRIC_HISTOGRAM && !buckets_valid(d->buckets, d->n_buckets)))
        return -EINVAL;
    if (d->max_series == 0 || (n == 0 && d->max_series != 1))
        return -EINVAL;
    *ret_n_labels = n;
    return 0;
}

int metric_register(MetricRegistry *r, const MetricDesc *d, Metric **ret) {
    Metric *m;
    size_t n_labels;
    int rc = desc_check(d, &n_labels);

    if (rc < 0)
        return rc;
    m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->registry = r;
    m->d = *d;
    m->n_labels = n_labels;
    pthread_mutex_lock(&r->lock);
    for (Metric *o = r->first; o; o = o->next)
        if (streq(o->d.name, d->name)) {
            pthread_mutex_unlock(&r->lock);
            free(m);
            return -EEXIST;
        }
    if (r->last)
        r->last->next = m;
    else
        r->first = m;
    r->last = m;
    pthread_mutex_unlock(&r->lock);
    *ret = m;
    return 0;
}

/* ---- series -------------------------------------------------------------- */

static int values_check(const Metric *m, const char *const *values) {
    if (m->n_labels > 0 && !values)
        return -EINVAL;
    for (size_t i = 0; i < m->n_labels; i++)
        if (!values[i] || strlen(values[i]) > METRIC_MAX_LABEL_VALUE ||
            !utf8_valid((const unsigned char *)values[i]))
            return -EINVAL;
    return 0;
}

static int series_init(const Metric *m, Series *s, const char *const *values) {
    *s = (Series){0};
    for (size_t i = 0; i < m->n_labels; i++)
        if (!(s->values[i] = strdup(values[i]))) {
            series_done(m, s);
            return -ENOMEM;
        }
    if (m->d.type == METRIC_HISTOGRAM &&
        !(s->counts = calloc(m->d.n_buckets + 1, sizeof(uint64_t)))) {
        series_done(m, s);
        return -ENOMEM;
    }
    return 0;
}

/* The series of values, made if new. Called with the lock held. */
static int series_get(Metric *m, const char *const *values, Series **ret) {
    Series *grown;
    int r;

    for (size_t i = 0; i < m->n_series; i++) {
        size_t j = 0;
        while (j < m->n_labels && streq(m->series[i].values[j], values[j]))
            j++;
        if (j == m->n_labels) {
            *ret = &m->series[i];
            return 0;
        }
    }
    if (m->n_series >= m->d.max_series)
        return -ENOSPC;
    grown = realloc(m->series, (m->n_series + 1) * sizeof(Series));
    if (!grown)
        return -ENOMEM;
    m->series = grown;
    r = series_init(m, &m->series[m->n_series], values);
    if (r < 0)
        return r;
    *ret = &m->series[m->n_series++];
    return 0;
}

typedef enum Op { OP_TOUCH, OP_ADD, OP_SET, OP_OBSERVE } Op;

static void series_apply(const Metric *m, Series *s, Op op, double v) {
    size_t b = 0;

    switch (op) {
    case OP_TOUCH:
        break;
    case OP_ADD:
        s->value += v;
        break;
    case OP_SET:
        s->value = v;
        break;
    case OP_OBSERVE:
        while (b < m->d.n_buckets && v > m->d.buckets[b])
            b++;
        s->counts[b]++;
        s->count++;
        s->value += v;
        break;
    }
}

static bool op_allowed(MetricType t, Op op, double v) {
    if (isnan(v))
        return false;
    switch (op) {
    case OP_TOUCH:
        return true;
    case OP_ADD:
        return t == METRIC_GAUGE || (t == METRIC_COUNTER && v >= 0);
    case OP_SET:
        return t == METRIC_GAUGE;
    case OP_OBSERVE:
        return t == METRIC_HISTOGRAM;
    }
    return false;
}

static int record(Metric *m, const char *const *values, Op op, double v) {
    Series *s = NULL;
    int r;

    if (!m || !op_allowed(m->d.type, op, v))
        return -EINVAL;
    r = values_check(m, values);
    if (r < 0)
        return r;
    pthread_mutex_lock(&m->registry->lock);
    r = series_get(m, values, &s);
    if (r >= 0)
        series_apply(m, s, op, v);
    pthread_mutex_unlock(&m->registry->lock);
    return r;
}

int metric_add(Metric *m, const char *const *values, double v) {
    return record(m, values, OP_ADD, v);
}

int metric_set(Metric *m, const char *const *values, double v) {
    return record(m, values, OP_SET, v);
}

int metric_observe(Metric *m, const char *const *values, double v) {
    return record(m, values, OP_OBSERVE, v);
}

int metric_touch(Metric *m, const char *const *values) {
    return record(m, values, OP_TOUCH, 0);
}

/* ---- exposition ---------------------------------------------------------- */

/*
 * As Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, like the Prometheus
 * client libraries do (le labels are strings: the same bound must read the
 * same in every scrape): the fewest significant digits that read back as v,
 * in exponent form below 1e-4 and from 1e6 on.
 */
const char *metric_format_value(double v, char *buf, size_t n) {
    int digits = 1, exp;

    if (isnan(v) || isinf(v)) {
        snprintf(buf, n, "%s", isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
        return buf;
    }
    for (; digits < 17; digits++) {
        snprintf(buf, n, "%.*e", digits - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, n, "%.*e", digits - 1, v);
    exp = atoi(strchr(buf, 'e') + 1);
    if (exp >= -4 && exp < 6)
        snprintf(buf, n, "%.*f", digits - 1 - exp > 0 ? digits - 1 - exp : 0, v);
    return buf;
}

/* HELP text escapes backslash and newline; label values the double quote too. */
static void put_escaped(FILE *f, const char *s, bool quote) {
    for (; *s; s++)
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (quote && *s == '"')
            fputs("\\\"", f);
        else
            fputc(*s, f);
}

/* name{labels[,le="..."]} value */
static void put_sample(FILE *f, const Metric *m, const Series *s, const char *suffix,
                       const char *le, double v) {
    char num[32];
    bool any = m->n_labels > 0 || le;

    fprintf(f, "%s%s%s", m->d.name, suffix, any ? "{" : "");
    for (size_t i = 0; i < m->n_labels; i++) {
        fprintf(f, "%s%s=\"", i ? "," : "", m->d.labels[i]);
        put_escaped(f, s->values[i], true);
        fputc('"', f);
    }
    if (le)
        fprintf(f, "%sle=\"%s\"", m->n_labels ? "," : "", le);
    fprintf(f, "%s %s\n", any ? "}" : "", metric_format_value(v, num, sizeof(num)));
}

static void put_histogram(FILE *f, const Metric *m, const Series *s) {
    uint64_t cumulative = 0;
    char le[32];

    for (size_t b = 0; b <= m->d.n_buckets; b++) {
        cumulative += s->counts[b];
        if (b < m->d.n_buckets)
            metric_format_value(m->d.buckets[b], le, sizeof(le));
        else
            snprintf(le, sizeof(le), "+Inf");
        put_sample(f, m, s, "_bucket", le, (double)cumulative);
    }
    put_sample(f, m, s, "_sum", NULL, s->value);
    put_sample(f, m, s, "_count", NULL, (double)s->count);
}

static void put_family(FILE *f, const Metric *m) {
    static const char *const types[] = {"counter", "gauge", "histogram"};

    if (m->n_series == 0)
        return;
    fprintf(f, "# HELP %s ", m->d.name);
    put_escaped(f, m->d.help, false);
    fprintf(f, "\n# TYPE %s %s\n", m->d.name, types[m->d.type]);
    for (size_t i = 0; i < m->n_series; i++)
        if (m->d.type == METRIC_HISTOGRAM)
            put_histogram(f, m, &m->series[i]);
        else
            put_sample(f, m, &m->series[i], "", NULL, m->series[i].value);
}

int metric_registry_render(MetricRegistry *r, char **ret, size_t *ret_len) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int failed;

    if (!f)
        return -ENOMEM;
    pthread_mutex_lock(&r->lock);
    for (const Metric *m = r->first; m; m = m->next)
        put_family(f, m);
    pthread_mutex_unlock(&r->lock);
    failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        free(buf);
        return -ENOMEM;
    }
    *ret = buf;
    *ret_len = len;
    return 0;
}
