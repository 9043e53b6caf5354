/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's metrics: closed label sets, the exposition, and the endpoint on a unix socket.
 * No root. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agentmetrics.h"
#include "config.h"
#include "rpc.h"
#include "scrape.h"
#include "waitscale.h"

#define WAIT_MS 10000

static const char CONFIG[] =
    "{\"rails\": [{\"index\": 0, \"nic\": {\"name\": \"n0\"}}, {\"index\": 1, \"nic\": "
    "{\"name\": \"n1\"}}],"
    " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],"
    "  \"vrf\": {\"table\": 100}},"
    " {\"name\": \"b\", \"resource\": \"example.com/b-units\", \"namespaces\": [\"team-b\"],"
    "  \"rails\": [1], \"vrf\": {\"table\": 200}}]}";

static NodeConfig *config;
static char tmp[64], sock[128], addr[160];

static int setup(void **state) {
    RgError err = {0};

    if (config_parse(CONFIG, "node.json", &config, &err) < 0)
        fail_msg("%s", err.msg);
    snprintf(tmp, sizeof(tmp), "/tmp/rg-metrics-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    snprintf(sock, sizeof(sock), "%s/run/metrics.sock", tmp);
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    return metrics_init(config);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

static int teardown(void **state) {
    metrics_free();
    config_free(config);
    config = NULL;
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static char *render(void) {
    char *text = NULL;
    size_t len = 0;

    assert_int_equal(metrics_render(&text, &len), 0);
    return text;
}

/* The value of series now; NAN when it is not there. */
static double value(const char *series) {
    char *text = render();
    double v = NAN;

    if (!scrape_sample(text, series, &v))
        v = NAN;
    free(text);
    return v;
}

static size_t count_lines(const char *prefix) {
    char *text = render();
    size_t n = 0;

    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    free(text);
    return n;
}

/* ---- what is recorded ---------------------------------------------------- */

/* The exposition of a fresh agent, byte for byte: the contract with dashboards. */
static void test_initial_exposition(void **state) {
    char *text = render();

    assert_string_equal(
        text,
        "# HELP railgate_build_info The version of railgate-device-plugin, as a label; the value "
        "is always 1.\n"
        "# TYPE railgate_build_info gauge\n"
        "railgate_build_info{version=\"" RAILGATE_VERSION "\"} 1\n"
        "# HELP railgate_registrations_total Registrations of the resource that kubelet "
        "accepted, by why it registered (again).\n"
        "# TYPE railgate_registrations_total counter\n"
        "railgate_registrations_total{resource=\"railgate.io/a\",reason=\"rebind\"} 0\n"
        "railgate_registrations_total{resource=\"railgate.io/a\",reason=\"sighup\"} 0\n"
        "railgate_registrations_total{resource=\"railgate.io/a\",reason=\"kubelet_restart\"} 0\n"
        "railgate_registrations_total{resource=\"railgate.io/a\",reason=\"start\"} 0\n"
        "railgate_registrations_total{resource=\"example.com/b-units\",reason=\"rebind\"} 0\n"
        "railgate_registrations_total{resource=\"example.com/b-units\",reason=\"sighup\"} 0\n"
        "railgate_registrations_total{resource=\"example.com/b-units\",reason=\"kubelet_"
        "restart\"} 0\n"
        "railgate_registrations_total{resource=\"example.com/b-units\",reason=\"start\"} 0\n"
        "# HELP railgate_registration_failures_total Registrations of the resource that failed; "
        "each is retried with backoff.\n"
        "# TYPE railgate_registration_failures_total counter\n"
        "railgate_registration_failures_total{resource=\"railgate.io/a\"} 0\n"
        "railgate_registration_failures_total{resource=\"example.com/b-units\"} 0\n"
        "# HELP railgate_units The tenant's units by health, a unit in a pod by its NIC there.\n"
        "# TYPE railgate_units gauge\n"
        "railgate_units{tenant=\"a\",health=\"healthy\"} 0\n"
        "railgate_units{tenant=\"a\",health=\"unhealthy\"} 0\n"
        "railgate_units{tenant=\"b\",health=\"healthy\"} 0\n"
        "railgate_units{tenant=\"b\",health=\"unhealthy\"} 0\n"
        "# HELP railgate_unit_health_transitions_total Units of the tenant that turned healthy "
        "or unhealthy.\n"
        "# TYPE railgate_unit_health_transitions_total counter\n"
        "railgate_unit_health_transitions_total{tenant=\"a\",to=\"healthy\"} 0\n"
        "railgate_unit_health_transitions_total{tenant=\"a\",to=\"unhealthy\"} 0\n"
        "railgate_unit_health_transitions_total{tenant=\"b\",to=\"healthy\"} 0\n"
        "railgate_unit_health_transitions_total{tenant=\"b\",to=\"unhealthy\"} 0\n"
        "# HELP railgate_allocate_requests_total Allocate calls from kubelet, by the gRPC code "
        "answered.\n"
        "# TYPE railgate_allocate_requests_total counter\n"
        "railgate_allocate_requests_total{resource=\"railgate.io/a\",code=\"OK\"} 0\n"
        "railgate_allocate_requests_total{resource=\"example.com/b-units\",code=\"OK\"} 0\n");
    free(text);
}

static void test_off(void **state) {
    char *text = NULL;
    size_t len;

    metrics_free();
    /* nothing to record into: every call returns quietly */
    metrics_registered("railgate.io/a", REGISTER_REASON_START);
    metrics_allocate_observe("railgate.io/a", RPC_OK, 0.001);
    metrics_cni_report("ADD", 0, 0.05, 1, "a");
    metrics_lookup_observe("OK", 0.001);
    assert_int_equal(metrics_render(&text, &len), -ENODATA);
    assert_int_equal(metrics_init(config), 0);
    assert_true(
        value("railgate_registrations_total{resource=\"railgate.io/a\",reason=\"start\"}") == 0);
}

static void test_registrations(void **state) {
    metrics_registered("railgate.io/a", REGISTER_REASON_START);
    metrics_registered("railgate.io/a", REGISTER_REASON_KUBELET_RESTART);
    metrics_registered("railgate.io/a", REGISTER_REASON_KUBELET_RESTART);
    metrics_registered("example.com/b-units", REGISTER_REASON_SIGHUP);
    metrics_registered("example.com/b-units", REGISTER_REASON_NONE); /* counted as rebind */
    metrics_registration_failed("railgate.io/a");
    metrics_registered("railgate.io/zzz", REGISTER_REASON_START); /* not ours */
    assert_true(
        value("railgate_registrations_total{resource=\"railgate.io/a\",reason=\"start\"}") == 1);
    assert_true(value("railgate_registrations_total{resource=\"railgate.io/a\",reason=\"kubelet_"
                      "restart\"}") == 2);
    assert_true(value("railgate_registrations_total{resource=\"example.com/b-units\",reason="
                      "\"sighup\"}") == 1);
    assert_true(value("railgate_registrations_total{resource=\"example.com/b-units\",reason="
                      "\"rebind\"}") == 1);
    assert_true(value("railgate_registration_failures_total{resource=\"railgate.io/a\"}") == 1);
    assert_true(value("railgate_registrations_total{resource=\"other\",reason=\"start\"}") == 1);
}

static void test_units_and_transitions(void **state) {
    metrics_units("a", 3, 1);
    metrics_units("b", 2, 0);
    metrics_units("a", 2, 2);
    metrics_health_transition("a", false);
    metrics_health_transition("a", false);
    metrics_health_transition("a", true);
    assert_true(value("railgate_units{tenant=\"a\",health=\"healthy\"}") == 2);
    assert_true(value("railgate_units{tenant=\"a\",health=\"unhealthy\"}") == 2);
    assert_true(value("railgate_units{tenant=\"b\",health=\"healthy\"}") == 2);
    assert_true(value("railgate_unit_health_transitions_total{tenant=\"a\",to=\"unhealthy\"}") ==
                2);
    assert_true(value("railgate_unit_health_transitions_total{tenant=\"a\",to=\"healthy\"}") == 1);
    assert_true(value("railgate_unit_health_transitions_total{tenant=\"b\",to=\"healthy\"}") == 0);
}

static void test_allocate(void **state) {
    for (unsigned i = 0; i < 5; i++)
        metrics_allocate_observe("railgate.io/a", RPC_OK, 0.0003);
    metrics_allocate_observe("railgate.io/a", RPC_INVALID_ARGUMENT, 0.002);
    metrics_allocate_observe("railgate.io/a", 99, 0.002); /* no gRPC code */
    metrics_preferred_observe("example.com/b-units", RPC_OK, 0.0001);
    assert_true(value("railgate_allocate_requests_total{resource=\"railgate.io/a\",code=\"OK\"}") ==
                5);
    assert_true(value("railgate_allocate_requests_total{resource=\"railgate.io/a\",code="
                      "\"INVALID_ARGUMENT\"}") == 1);
    assert_true(
        value("railgate_allocate_requests_total{resource=\"railgate.io/a\",code=\"other\"}") == 1);
    assert_true(value("railgate_allocate_duration_seconds_count{resource=\"railgate.io/a\"}") == 7);
    assert_true(value("railgate_allocate_duration_seconds_bucket{resource=\"railgate.io/a\",le="
                      "\"0.0005\"}") == 5);
    assert_true(value("railgate_allocate_duration_seconds_bucket{resource=\"railgate.io/a\",le="
                      "\"0.0025\"}") == 7);
    assert_true(value("railgate_preferred_allocation_requests_total{resource=\"example.com/"
                      "b-units\",code=\"OK\"}") == 1);
    assert_true(value("railgate_preferred_allocation_duration_seconds_count{resource="
                      "\"example.com/b-units\"}") == 1);
}

static void test_lookup(void **state) {
    metrics_lookup_observe("OK", 0.0004);
    metrics_lookup_observe("OK", 0.003);
    metrics_lookup_observe("UNAVAILABLE", 15);
    metrics_lookup_observe("bad status", 0.1);
    metrics_lookup_observe(NULL, 0.1);
    metrics_lookup_observe("ABCDEFGHIJKLMNOPQRSTUVWXYZ_ABCDEFG", 0.1); /* 34: too long */
    assert_true(value("railgate_pod_lookup_requests_total{code=\"OK\"}") == 2);
    assert_true(value("railgate_pod_lookup_requests_total{code=\"UNAVAILABLE\"}") == 1);
    assert_true(value("railgate_pod_lookup_requests_total{code=\"other\"}") == 3);
    assert_true(value("railgate_pod_lookup_duration_seconds_count") == 6);
    assert_true(value("railgate_pod_lookup_duration_seconds_bucket{le=\"0.0005\"}") == 1);
    assert_true(value("railgate_pod_lookup_duration_seconds_bucket{le=\"10\"}") == 5);
    assert_true(value("railgate_pod_lookup_duration_seconds_bucket{le=\"30\"}") == 6);
}

/* DRA mode's calls: claims by result, each call's time. */
static void test_dra(void **state) {
    metrics_dra_observe(true, 2, 1, 0.02);
    metrics_dra_observe(true, 1, 0, 0.003);
    metrics_dra_observe(false, 0, 1, 0.0004);
    assert_true(value("railgate_dra_claims_total{operation=\"prepare\",result=\"ok\"}") == 3);
    assert_true(value("railgate_dra_claims_total{operation=\"prepare\",result=\"error\"}") == 1);
    assert_true(value("railgate_dra_claims_total{operation=\"unprepare\",result=\"error\"}") == 1);
    assert_true(value("railgate_dra_request_duration_seconds_count{operation=\"prepare\"}") == 2);
    assert_true(value("railgate_dra_request_duration_seconds_bucket{operation=\"prepare\",le="
                      "\"0.005\"}") == 1);
    assert_true(value("railgate_dra_request_duration_seconds_count{operation=\"unprepare\"}") == 1);
}

static void test_cni_report(void **state) {
    metrics_cni_report("ADD", 0, 0.05, 2, "a");
    metrics_cni_report("add", 0, 0.07, 1, "a"); /* any case */
    metrics_cni_report("DEL", 0, 0.04, 2, "a");
    metrics_cni_report("ADD", 100, 0.01, 0, "b");
    metrics_cni_report("ADD", 11, 0.01, 1, "b"); /* failed: no rails counted */
    metrics_cni_report("GC", 0, 0.2, 0, NULL);
    metrics_cni_report("CHECK", 0, 0.02, 1, "");
    metrics_cni_report("FROB", 0, 0.01, 1, "zzz");
    metrics_cni_report("STATUS", 42, 0.001, 0, NULL);
    metrics_cni_report(NULL, -1, 0.001, 0, NULL);
    assert_true(value("railgate_cni_commands_total{command=\"ADD\",code=\"0\"}") == 2);
    assert_true(value("railgate_cni_commands_total{command=\"ADD\",code=\"100\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"ADD\",code=\"11\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"DEL\",code=\"0\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"GC\",code=\"0\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"other\",code=\"0\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"STATUS\",code=\"other\"}") == 1);
    assert_true(value("railgate_cni_commands_total{command=\"other\",code=\"other\"}") == 1);
    assert_true(value("railgate_cni_command_duration_seconds_count{command=\"ADD\"}") == 4);
    assert_true(
        value("railgate_cni_command_duration_seconds_bucket{command=\"ADD\",le=\"0.05\"}") == 3);
    assert_true(value("railgate_cni_command_duration_seconds_sum{command=\"GC\"}") == 0.2);
    /* the finer buckets from 50 to 500 ms */
    assert_true(value("railgate_cni_command_duration_seconds_bucket{command=\"GC\",le=\"0.15\"}") ==
                0);
    assert_true(value("railgate_cni_command_duration_seconds_bucket{command=\"GC\",le=\"0.2\"}") ==
                1);
    assert_true(value("railgate_cni_rails_total{command=\"ADD\",tenant=\"a\"}") == 3);
    assert_true(value("railgate_cni_rails_total{command=\"DEL\",tenant=\"a\"}") == 2);
    assert_true(value("railgate_cni_rails_total{command=\"CHECK\",tenant=\"none\"}") == 1);
    assert_true(value("railgate_cni_rails_total{command=\"other\",tenant=\"other\"}") == 1);
    assert_true(isnan(value("railgate_cni_rails_total{command=\"ADD\",tenant=\"b\"}")));
}

/* Whatever a peer sends, the label sets stay closed: nothing grows past them,
 * and nothing known is crowded out. */
static void test_cardinality_closed(void **state) {
    char s[32];

    for (int i = 0; i < 5000; i++) {
        snprintf(s, sizeof(s), "X%d", i);
        metrics_cni_report(s, i, 0.01, 1, s);
        metrics_allocate_observe(s, i, 0.001);
        metrics_registered(s, (RegisterReason)(i % 7));
        metrics_units(s, 1, 1);
        metrics_health_transition(s, i % 2);
        snprintf(s, sizeof(s), "status %d", i);
        metrics_lookup_observe(s, 0.001);
    }
    /* 7 commands x 17 codes at most; here every odd one is "other" */
    assert_true(count_lines("railgate_cni_commands_total{") <= 7 * 17);
    assert_true(count_lines("railgate_cni_rails_total{command=\"other\"") == 1);
    assert_true(count_lines("railgate_allocate_requests_total{resource=\"other\"") == 17 + 1);
    assert_true(count_lines("railgate_units{tenant=\"other\"") == 2);
    assert_true(count_lines("railgate_pod_lookup_requests_total{") == 1);
    /* the known series still count */
    metrics_cni_report("ADD", 0, 0.01, 1, "a");
    metrics_lookup_observe("OK", 0.001);
    metrics_allocate_observe("railgate.io/a", RPC_OK, 0.001);
    assert_true(value("railgate_cni_commands_total{command=\"ADD\",code=\"0\"}") == 1);
    assert_true(value("railgate_cni_rails_total{command=\"ADD\",tenant=\"a\"}") == 1);
    assert_true(value("railgate_pod_lookup_requests_total{code=\"OK\"}") == 1);
    assert_true(value("railgate_allocate_requests_total{resource=\"railgate.io/a\",code=\"OK\"}") ==
                1);
}

/* ---- the endpoint --------------------------------------------------------- */

static MetricsServer *serve(unsigned max_connections, unsigned timeout_s, unsigned mode) {
    MetricsConfig c = {.listen = addr,
                       .socket_mode = mode,
                       .socket_group = -1,
                       .max_connections = max_connections,
                       .max_per_client = max_connections,
                       .timeout_s = timeout_s,
                       .deadline_s = CONFIG_MAX_TIMEOUT_S};
    MetricsServer *s = NULL;

    assert_int_equal(metrics_server_start(&c, &s), 0);
    return s;
}

static unsigned fd_count(void) {
    DIR *d = opendir("/proc/self/fd");
    unsigned n = 0;

    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void test_serve_get(void **state) {
    unsigned fds = fd_count();
    MetricsServer *s = serve(4, 10, 0600);
    HttpReply r = {0};
    char type[128], *text;
    struct stat st;

    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    metrics_registered("railgate.io/a", REGISTER_REASON_START);
    assert_int_equal(http_request(addr, "GET", "/metrics", WAIT_MS, &r), 0);
    assert_int_equal(r.status, 200);
    assert_true(http_header(&r, "Content-Type", type, sizeof(type)));
    assert_string_equal(type, "text/plain; version=0.0.4; charset=utf-8");
    text = render();
    assert_string_equal(r.body, text);
    free(text);
    assert_non_null(strstr(r.body, "railgate_registrations_total{resource=\"railgate.io/a\","
                                   "reason=\"start\"} 1\n"));
    http_reply_done(&r);
    /* a query string is not part of the path */
    assert_int_equal(http_status(addr, "GET", "/metrics?debug=1", WAIT_MS), 200);
    /* HEAD: the headers alone */
    assert_int_equal(http_request(addr, "HEAD", "/metrics", WAIT_MS, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    http_reply_done(&r);
    metrics_server_stop(s);
    /* the socket goes with the server, and so does every fd */
    assert_int_equal(access(sock, F_OK), -1);
    assert_int_equal(fd_count(), fds);
}

static void test_serve_refusals(void **state) {
    static const char *const paths[] = {"/",          "/metric", "/metrics/",
                                        "/metrics/x", "/debug",  "/../metrics"};
    MetricsServer *s = serve(4, 10, 0600);
    HttpReply r = {0};
    char allow[64];

    for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
        assert_int_equal(http_request(addr, "GET", paths[i], WAIT_MS, &r), 0);
        if (r.status != 404)
            fail_msg("GET %s: %d", paths[i], r.status);
        assert_null(strstr(r.body, "railgate_"));
        http_reply_done(&r);
    }
    static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
        assert_int_equal(http_request(addr, methods[i], "/metrics", WAIT_MS, &r), 0);
        if (r.status != 405)
            fail_msg("%s /metrics: %d", methods[i], r.status);
        assert_true(http_header(&r, "Allow", allow, sizeof(allow)));
        assert_string_equal(allow, "GET, HEAD");
        assert_null(strstr(r.body, "railgate_"));
        http_reply_done(&r);
    }
    /* a body is never read, and does not change the answer */
    assert_int_equal(http_exchange(addr,
                                   "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                   "Connection: close\r\n\r\nhello",
                                   WAIT_MS, &r),
                     0);
    assert_int_equal(r.status, 405);
    http_reply_done(&r);
    /* not HTTP at all */
    assert_int_equal(http_exchange(addr, "\x16\x03\x01 garbage\r\n\r\n", WAIT_MS, &r), 0);
    assert_int_equal(r.status, 400);
    http_reply_done(&r);
    metrics_server_stop(s);
}

/* A connection that sends nothing is closed after timeoutSeconds. */
static void test_serve_idle_timeout(void **state) {
    MetricsServer *s = serve(4, 1, 0600);
    int fd = http_connect(addr);

    assert_true(fd >= 0);
    /* half a request, then silence */
    assert_int_equal(write(fd, "GET /metrics HTTP/1.1\r\n", 23), 23);
    assert_true(http_wait_closed(fd, WAIT_MS));
    close(fd);
    metrics_server_stop(s);
}

/* Past maxConnections a new connection waits in the listen backlog,
 * unanswered; once one of the open ones ends, it is served. */
static void test_serve_connection_limit(void **state) {
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    MetricsServer *s = serve(2, 600, 0600);
    int a = http_connect(addr), b = http_connect(addr), c;
    struct pollfd p;
    char buf[16];

    assert_true(a >= 0 && b >= 0);
    /* a served request proves both taken in, before the third comes */
    assert_int_equal(write(a, "GET", 3), 3);
    assert_int_equal(write(b, req, strlen(req)), (ssize_t)strlen(req));
    assert_int_equal(read(b, buf, 12), 12);
    assert_memory_equal(buf, "HTTP/1.1 200", 12);
    close(b);
    b = http_connect(addr);
    assert_true(b >= 0);
    assert_int_equal(write(b, "GET", 3), 3);
    c = http_connect(addr);
    assert_true(c >= 0);
    assert_int_equal(write(c, req, strlen(req)), (ssize_t)strlen(req));
    /* a window in which nothing may happen (never scaled) */
    p = (struct pollfd){.fd = c, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 300), 0);
    close(a);
    p = (struct pollfd){.fd = c, .events = POLLIN};
    assert_int_equal(poll(&p, 1, wait_scaled_ms(WAIT_MS)), 1);
    assert_int_equal(read(c, buf, 12), 12);
    assert_memory_equal(buf, "HTTP/1.1 200", 12);
    close(c);
    close(b);
    metrics_server_stop(s);
}

/*
 * Clients that trickle their headers, never idle for the idle timeout, hold
 * every connection: each is cut off at the deadline and the scrape waiting
 * meanwhile is answered. A unix socket's clients are not limited per client.
 */
static void test_serve_deadline(void **state) {
    MetricsConfig c = {.listen = addr,
                       .socket_mode = 0600,
                       .socket_group = -1,
                       .max_connections = 2,
                       .max_per_client = 1,
                       .timeout_s = CONFIG_MAX_TIMEOUT_S,
                       .deadline_s = 1};
    MetricsServer *s = NULL;
    Trickler t[2];
    int fd;

    assert_int_equal(metrics_server_start(&c, &s), 0);
    for (size_t i = 0; i < ELEMENTSOF(t); i++)
        assert_int_equal(trickler_open(&t[i], addr, NULL), 0);
    fd = http_connect(addr);
    assert_true(fd >= 0);
    assert_int_equal(http_send_get(fd), 0);
    assert_int_equal(http_status_trickling(fd, t, ELEMENTSOF(t), WAIT_MS), 200);
    close(fd);
    /* the first cut freed the scrape's connection; the slow clients are all cut */
    for (int left = wait_scaled_ms(WAIT_MS); trickle(t, ELEMENTSOF(t)) > 0 && left > 0;
         left -= TRICKLE_STEP_MS)
        (void)poll(NULL, 0, TRICKLE_STEP_MS);
    for (size_t i = 0; i < ELEMENTSOF(t); i++) {
        assert_true(t[i].fd < 0);
        assert_true(t[i].closed_us - t[i].opened_us >= 1e6);
    }
    tricklers_close(t, ELEMENTSOF(t));
    metrics_server_stop(s);
}

/* The socket file as the config asks for it; a second server never takes it
 * over, nor does its failed start remove it (test-listen.c has the rest). */
static void test_unix_socket_files(void **state) {
    MetricsConfig c = {.listen = addr,
                       .socket_mode = 0660,
                       .socket_group = geteuid() == 0 ? 4242 : -1,
                       .max_connections = 2,
                       .max_per_client = 2,
                       .timeout_s = 5,
                       .deadline_s = 5};
    MetricsServer *s = NULL, *other = NULL;
    struct stat st;

    assert_int_equal(metrics_server_start(&c, &s), 0);
    assert_int_equal(stat(sock, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0660);
    if (c.socket_group >= 0)
        assert_int_equal(st.st_gid, 4242);
    assert_int_equal(metrics_server_start(&c, &other), -EADDRINUSE);
    assert_null(other);
    assert_int_equal(access(sock, F_OK), 0);
    assert_true(scrape_wait(addr, "railgate_build_info{version=\"" RAILGATE_VERSION "\"}", 1,
                            WAIT_MS, NULL));
    metrics_server_stop(s);
    assert_int_equal(access(sock, F_OK), -1);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {

        T(test_initial_exposition), T(test_off),
        T(test_registrations),      T(test_units_and_transitions),
        T(test_allocate),           T(test_lookup),
        T(test_cni_report),         T(test_cardinality_closed),
        T(test_serve_get),          T(test_serve_refusals),
        T(test_serve_idle_timeout), T(test_serve_connection_limit),
        T(test_unix_socket_files),  T(test_dra),
        T(test_serve_deadline),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
