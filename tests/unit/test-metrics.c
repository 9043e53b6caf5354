/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics registry: the text exposition byte for byte, bounds, refusals, threads. No root. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static const char *const L_TENANT[] = {"tenant", NULL};
static const char *const L_TWO[] = {"resource", "code", NULL};
static const double BUCKETS[] = {0.005, 0.01, 0.25, 1, 2.5, 10};

static MetricRegistry *reg;

static int setup(void **state) {
    return metric_registry_new(&reg);
}

static int teardown(void **state) {
    metric_registry_free(reg);
    reg = NULL;
    return 0;
}

static Metric *add(MetricType type, const char *name, const char *help, const char *const *labels,
                   size_t max_series) {
    MetricDesc d = {.type = type,
                    .name = name,
                    .help = help,
                    .labels = labels,
                    .buckets = type == METRIC_HISTOGRAM ? BUCKETS : NULL,
                    .n_buckets = type == METRIC_HISTOGRAM ? ELEMENTSOF(BUCKETS) : 0,
                    .max_series = max_series};
    Metric *m = NULL;

    assert_int_equal(metric_register(reg, &d, &m), 0);
    assert_non_null(m);
    return m;
}

static void expect_text(const char *want) {
    char *text = NULL;
    size_t len = 0;

    assert_int_equal(metric_registry_render(reg, &text, &len), 0);
    assert_int_equal(len, strlen(text));
    assert_string_equal(text, want);
    free(text);
}

#define V(...) ((const char *[]){__VA_ARGS__})

static void test_counter_and_gauge(void **state) {
    Metric *c = add(METRIC_COUNTER, "railgate_x_total", "Things done.", L_TWO, 8);
    Metric *g = add(METRIC_GAUGE, "railgate_units", "Units now.", L_TENANT, 8);
    Metric *plain = add(METRIC_GAUGE, "railgate_up", "Always 1.", NULL, 1);

    assert_int_equal(metric_add(c, V("railgate.io/a", "OK"), 1), 0);
    assert_int_equal(metric_add(c, V("railgate.io/b", "INVALID_ARGUMENT"), 2), 0);
    assert_int_equal(metric_add(c, V("railgate.io/a", "OK"), 1), 0);
    assert_int_equal(metric_set(g, V("a"), 4), 0);
    assert_int_equal(metric_set(g, V("b"), 2), 0);
    assert_int_equal(metric_add(g, V("a"), -1.5), 0);
    assert_int_equal(metric_set(plain, NULL, 1), 0);
    expect_text("# HELP railgate_x_total Things done.\n"
                "# TYPE railgate_x_total counter\n"
                "railgate_x_total{resource=\"railgate.io/a\",code=\"OK\"} 2\n"
                "railgate_x_total{resource=\"railgate.io/b\",code=\"INVALID_ARGUMENT\"} 2\n"
                "# HELP railgate_units Units now.\n"
                "# TYPE railgate_units gauge\n"
                "railgate_units{tenant=\"a\"} 2.5\n"
                "railgate_units{tenant=\"b\"} 2\n"
                "# HELP railgate_up Always 1.\n"
                "# TYPE railgate_up gauge\n"
                "railgate_up 1\n");
}

static void test_histogram(void **state) {
    Metric *h = add(METRIC_HISTOGRAM, "railgate_allocate_duration_seconds", "Time.", L_TENANT, 4);
    Metric *bare = add(METRIC_HISTOGRAM, "railgate_lookup_seconds", "Lookups.", NULL, 1);

    /* on a bound counts in that bucket (le: less or equal) */
    assert_int_equal(metric_observe(h, V("a"), 0.005), 0);
    assert_int_equal(metric_observe(h, V("a"), 0.2), 0);
    assert_int_equal(metric_observe(h, V("a"), 0.25), 0);
    assert_int_equal(metric_observe(h, V("a"), 7), 0);
    assert_int_equal(metric_touch(bare, NULL), 0);
    expect_text("# HELP railgate_allocate_duration_seconds Time.\n"
                "# TYPE railgate_allocate_duration_seconds histogram\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"0.005\"} 1\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"0.01\"} 1\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"0.25\"} 3\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"1\"} 3\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"2.5\"} 3\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"10\"} 4\n"
                "railgate_allocate_duration_seconds_bucket{tenant=\"a\",le=\"+Inf\"} 4\n"
                "railgate_allocate_duration_seconds_sum{tenant=\"a\"} 7.455\n"
                "railgate_allocate_duration_seconds_count{tenant=\"a\"} 4\n"
                "# HELP railgate_lookup_seconds Lookups.\n"
                "# TYPE railgate_lookup_seconds histogram\n"
                "railgate_lookup_seconds_bucket{le=\"0.005\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"0.01\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"0.25\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"1\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"2.5\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"10\"} 0\n"
                "railgate_lookup_seconds_bucket{le=\"+Inf\"} 0\n"
                "railgate_lookup_seconds_sum 0\n"
                "railgate_lookup_seconds_count 0\n");
}

static void test_escaping(void **state) {
    Metric *g = add(METRIC_GAUGE, "railgate_esc", "A \\ backslash\nand a \"quote\".", L_TENANT, 4);

    assert_int_equal(metric_set(g, V("a\\b\"c\nd"), 1), 0);
    assert_int_equal(metric_set(g, V("gr\xc3\xbc\xc3\x9f"), 2), 0); /* UTF-8 passes as it is */
    assert_int_equal(metric_set(g, V(""), 3), 0);
    expect_text("# HELP railgate_esc A \\\\ backslash\\nand a \"quote\".\n"
                "# TYPE railgate_esc gauge\n"
                "railgate_esc{tenant=\"a\\\\b\\\"c\\nd\"} 1\n"
                "railgate_esc{tenant=\"gr\xc3\xbc\xc3\x9f\"} 2\n"
                "railgate_esc{tenant=\"\"} 3\n");
}

static void test_values(void **state) {
    char buf[32];

    assert_string_equal(metric_format_value(0, buf, sizeof(buf)), "0");
    assert_string_equal(metric_format_value(42, buf, sizeof(buf)), "42");
    assert_string_equal(metric_format_value(10, buf, sizeof(buf)), "10");
    assert_string_equal(metric_format_value(123456, buf, sizeof(buf)), "123456");
    assert_string_equal(metric_format_value(1e6, buf, sizeof(buf)), "1e+06");
    assert_string_equal(metric_format_value(1234567, buf, sizeof(buf)), "1.234567e+06");
    assert_string_equal(metric_format_value(-0.25, buf, sizeof(buf)), "-0.25");
    assert_string_equal(metric_format_value(7.455, buf, sizeof(buf)), "7.455");
    assert_string_equal(metric_format_value(-1.5, buf, sizeof(buf)), "-1.5");
    assert_string_equal(metric_format_value(0.1, buf, sizeof(buf)), "0.1");
    assert_string_equal(metric_format_value(0.1 + 0.2, buf, sizeof(buf)), "0.30000000000000004");
    assert_string_equal(metric_format_value(0.0001, buf, sizeof(buf)), "0.0001");
    assert_string_equal(metric_format_value(1e-05, buf, sizeof(buf)), "1e-05");
    assert_string_equal(metric_format_value(18446744073709551616.0, buf, sizeof(buf)),
                        "1.8446744073709552e+19");
    assert_string_equal(metric_format_value(INFINITY, buf, sizeof(buf)), "+Inf");
    assert_string_equal(metric_format_value(-INFINITY, buf, sizeof(buf)), "-Inf");
    assert_string_equal(metric_format_value(NAN, buf, sizeof(buf)), "NaN");

    Metric *g = add(METRIC_GAUGE, "railgate_g", "G.", NULL, 1);
    assert_int_equal(metric_set(g, NULL, INFINITY), 0);
    expect_text("# HELP railgate_g G.\n# TYPE railgate_g gauge\nrailgate_g +Inf\n");
}

static void test_empty_families_hidden(void **state) {
    add(METRIC_COUNTER, "railgate_never_total", "Nothing yet.", L_TENANT, 4);
    expect_text("");
    Metric *c = add(METRIC_COUNTER, "railgate_zero_total", "Known, zero.", L_TENANT, 4);
    assert_int_equal(metric_touch(c, V("a")), 0);
    expect_text("# HELP railgate_zero_total Known, zero.\n"
                "# TYPE railgate_zero_total counter\n"
                "railgate_zero_total{tenant=\"a\"} 0\n");
}

static void expect_desc_refused(MetricDesc d, int err) {
    Metric *m = NULL;

    assert_int_equal(metric_register(reg, &d, &m), err);
    assert_null(m);
}

static void test_register_refusals(void **state) {
    static const char *const le[] = {"le", NULL}, *const dunder[] = {"__x", NULL},
                             *const bad[] = {"a-b", NULL}, *const twice[] = {"a", "a", NULL},
                             *const five[] = {"a", "b", "c", "d", "e", NULL};
    static const double down[] = {1, 0.5}, inf[] = {1, INFINITY};
    MetricDesc ok = {.type = METRIC_COUNTER, .name = "ok_total", .help = "", .max_series = 1};
    MetricDesc d;

    d = ok, d.name = "1abc";
    expect_desc_refused(d, -EINVAL);
    d = ok, d.name = "a b";
    expect_desc_refused(d, -EINVAL);
    d = ok, d.name = "";
    expect_desc_refused(d, -EINVAL);
    d = ok, d.help = NULL;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.labels = dunder, d.max_series = 2;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.labels = bad, d.max_series = 2;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.labels = twice, d.max_series = 2;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.labels = five, d.max_series = 2;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.max_series = 0;
    expect_desc_refused(d, -EINVAL);
    d = ok, d.max_series = 2; /* no labels: one series */
    expect_desc_refused(d, -EINVAL);
    d = ok, d.buckets = BUCKETS, d.n_buckets = 1; /* buckets on a counter */
    expect_desc_refused(d, -EINVAL);
    d = ok, d.type = METRIC_HISTOGRAM, d.name = "h";
    expect_desc_refused(d, -EINVAL); /* no buckets */
    d.buckets = down, d.n_buckets = 2;
    expect_desc_refused(d, -EINVAL);
    d.buckets = inf;
    expect_desc_refused(d, -EINVAL);
    d.buckets = BUCKETS, d.n_buckets = 1, d.labels = le, d.max_series = 2;
    expect_desc_refused(d, -EINVAL);
    /* a colon is for recording rules' names, allowed in metric names only */
    d = ok, d.name = "job:ok:total";
    Metric *m = NULL;
    assert_int_equal(metric_register(reg, &d, &m), 0);
    expect_desc_refused(d, -EEXIST);
}

static void test_record_refusals(void **state) {
    Metric *c = add(METRIC_COUNTER, "railgate_c_total", "C.", L_TENANT, 2);
    Metric *g = add(METRIC_GAUGE, "railgate_g", "G.", L_TENANT, 2);
    Metric *h = add(METRIC_HISTOGRAM, "railgate_h_seconds", "H.", L_TENANT, 2);
    char long_value[METRIC_MAX_LABEL_VALUE + 2];

    memset(long_value, 'x', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = 0;
    assert_int_equal(metric_add(c, V("a"), -1), -EINVAL);    /* counters only go up */
    assert_int_equal(metric_set(c, V("a"), 1), -EINVAL);     /* and are never set */
    assert_int_equal(metric_observe(c, V("a"), 1), -EINVAL); /* not a histogram */
    assert_int_equal(metric_observe(g, V("a"), 1), -EINVAL);
    assert_int_equal(metric_add(h, V("a"), 1), -EINVAL);
    assert_int_equal(metric_set(g, V("a"), NAN), -EINVAL);
    assert_int_equal(metric_observe(h, V("a"), NAN), -EINVAL);
    assert_int_equal(metric_add(c, NULL, 1), -EINVAL);              /* values missing */
    assert_int_equal(metric_add(c, V(NULL), 1), -EINVAL);           /* a value missing */
    assert_int_equal(metric_add(c, V("\xc3"), 1), -EINVAL);         /* cut UTF-8 */
    assert_int_equal(metric_add(c, V("\xc0\xaf"), 1), -EINVAL);     /* overlong */
    assert_int_equal(metric_add(c, V("\xed\xa0\x80"), 1), -EINVAL); /* a surrogate */
    assert_int_equal(metric_add(c, V(long_value), 1), -EINVAL);
    long_value[METRIC_MAX_LABEL_VALUE] = 0;
    assert_int_equal(metric_add(c, V(long_value), 1), 0);
    assert_int_equal(metric_add(NULL, V("a"), 1), -EINVAL);
    /* the bound: a third label set is refused, the two known still count */
    assert_int_equal(metric_add(c, V("a"), 1), 0);
    assert_int_equal(metric_add(c, V("b"), 1), -ENOSPC);
    assert_int_equal(metric_add(c, V("a"), 1), 0);
    assert_int_equal(metric_touch(c, V("b")), -ENOSPC);
    char *text = NULL;
    size_t len;
    assert_int_equal(metric_registry_render(reg, &text, &len), 0);
    assert_non_null(strstr(text, "railgate_c_total{tenant=\"a\"} 2\n"));
    assert_null(strstr(text, "tenant=\"b\""));
    free(text);
}

#define THREADS 4
#define ROUNDS 20000

static void *hammer(void *arg) {
    Metric **m = arg;
    const char *tenant = (m[2] == NULL) ? "a" : "b";

    for (unsigned i = 0; i < ROUNDS; i++) {
        metric_add(m[0], V(i % 2 ? "a" : "b"), 1);
        metric_observe(m[1], V(tenant), 0.5);
    }
    return NULL;
}

static void *scraper(void *arg) {
    for (unsigned i = 0; i < 200; i++) {
        char *text = NULL;
        size_t len;
        if (metric_registry_render(reg, &text, &len) == 0)
            free(text);
    }
    return NULL;
}

/* Every thread's additions land, whatever the scrapes in between. */
static void test_threads(void **state) {
    Metric *c = add(METRIC_COUNTER, "railgate_t_total", "T.", L_TENANT, 2);
    Metric *h = add(METRIC_HISTOGRAM, "railgate_t_seconds", "T.", L_TENANT, 2);
    Metric *args[THREADS][3];
    pthread_t th[THREADS + 1];
    char *text = NULL;
    size_t len;
    double v;

    for (unsigned i = 0; i < THREADS; i++) {
        args[i][0] = c;
        args[i][1] = h;
        args[i][2] = i % 2 ? c : NULL;
        assert_int_equal(pthread_create(&th[i], NULL, hammer, args[i]), 0);
    }
    assert_int_equal(pthread_create(&th[THREADS], NULL, scraper, NULL), 0);
    for (unsigned i = 0; i <= THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(metric_registry_render(reg, &text, &len), 0);
    const char *l = strstr(text, "railgate_t_total{tenant=\"a\"} ");
    assert_non_null(l);
    v = strtod(l + strlen("railgate_t_total{tenant=\"a\"} "), NULL);
    assert_true(v == THREADS * ROUNDS / 2);
    l = strstr(text, "railgate_t_seconds_count{tenant=\"b\"} ");
    assert_non_null(l);
    v = strtod(l + strlen("railgate_t_seconds_count{tenant=\"b\"} "), NULL);
    assert_true(v == THREADS / 2 * ROUNDS);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counter_and_gauge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_histogram, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_families_hidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
