/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's /metrics under the fake kubelet: values follow what happened (root, private netns).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "dpenv.h"
#include "proc.h"
#include "rpc.h"
#include "scrape.h"
#include "strv.h"
#include "testns.h"
#include "waitscale.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define WAIT_MS 10000

static DpEnv env;
static char addr[320];

/* Addresses on the namespace's loopback device that are not loopback's:
 * the endpoint's and its clients', each a client of its own. */
#define SERVER_IP "192.0.2.100"
static const char *const CLIENTS[] = {"192.0.2.1", "192.0.2.2", "192.0.2.3"};

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(testns_addr_add("lo", SERVER_IP "/32"), 0);
    for (size_t i = 0; i < ELEMENTSOF(CLIENTS); i++) {
        char cidr[32];

        snprintf(cidr, sizeof(cidr), "%s/32", CLIENTS[i]);
        assert_int_equal(testns_addr_add("lo", cidr), 0);
    }
    assert_int_equal(dpenv_setup(&env, 4, 0), 0);
    return 0;
}

static int group_teardown(void **state) {
    dpenv_teardown(&env);
    return 0;
}

/* Every test starts its own plugin; a failed one leaves it for this. */
static int plugin_teardown(void **state) {
    if (env.plugin > 0)
        proc_stop(env.plugin, 5000);
    env.plugin = 0;
    return 0;
}

/* A free port on loopback: the namespace is the test's own, so it stays free. */
static unsigned free_port(int family) {
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr *sa = family == AF_INET6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4;
    socklen_t len = family == AF_INET6 ? sizeof(a6) : sizeof(a4);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    if (bind(fd, sa, len) < 0) {
        close(fd);
        return 0;
    }
    assert_int_equal(getsockname(fd, sa, &len), 0);
    close(fd);
    return ntohs(family == AF_INET6 ? a6.sin6_port : a4.sin_port);
}

static void start(const char *listen_flag) {
    unsigned a = fk_registrations(env.k, RES_A), b = fk_registrations(env.k, RES_B);
    char flag[200];

    if (listen_flag)
        snprintf(flag, sizeof(flag), "--metrics-listen=%s", listen_flag);
    assert_int_equal(dpenv_plugin_start(&env, listen_flag ? flag : NULL), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, b + 1, WAIT_MS), 0);
}

static void stop(void) {
    assert_int_equal(proc_stop(env.plugin, 5000), 0);
    env.plugin = 0;
}

/* The series reaches want (the plugin counts a Register once it has reaped it). */
static void expect(const char *series, double want) {
    double last = 0;

    if (!scrape_wait(addr, series, want, WAIT_MS, &last))
        fail_msg("%s: %g, not %g", series, last, want);
}

#define REG(res, why) "railgate_registrations_total{resource=\"" res "\",reason=\"" why "\"}"
#define UNITS(t, h) "railgate_units{tenant=\"" t "\",health=\"" h "\"}"
#define TRANSITIONS(t, to) "railgate_unit_health_transitions_total{tenant=\"" t "\",to=\"" to "\"}"
#define ALLOC(code) "railgate_allocate_requests_total{resource=\"" RES_A "\",code=\"" code "\"}"
#define ALLOC_COUNT "railgate_allocate_duration_seconds_count{resource=\"" RES_A "\"}"

/* Listening sockets of this namespace, TCP or unix, outside kubelet's dir
 * and the state dir (the node agent's socket, always there). */
static unsigned listeners(void) {
    static const char *const tcp[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    char line[512], path[400];
    unsigned n = 0, flags, st;

    for (size_t i = 0; i < ELEMENTSOF(tcp); i++) {
        FILE *f = fopen(tcp[i], "re");
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f))
            n += sscanf(line, " %*u: %*s %*s %x", &st) == 1 && st == 0x0a; /* TCP_LISTEN */
        fclose(f);
    }
    FILE *f = fopen("/proc/net/unix", "re");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        path[0] = 0;
        if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %399s", &flags, path) >= 1 &&
            (flags & 0x10000) && strncmp(path, env.kubelet, strlen(env.kubelet)) != 0 &&
            strncmp(path, env.state, strlen(env.state)) != 0)
            n++;
    }
    fclose(f);
    return n;
}

static void test_off_by_default(void **state) {
    assert_int_equal(listeners(), 0);
    start(NULL);
    assert_int_equal(listeners(), 0);
    assert_false(file_contains(env.log, "metrics"));
    /* nor is libmicrohttpd loaded, nor the GnuTLS it brings (agent/metrics-mhd.c) */
    assert_int_equal(proc_maps_library(env.plugin, "libmicrohttpd.so."), 0);
    assert_int_equal(proc_maps_library(env.plugin, "libgnutls.so."), 0);
    stop();
}

static void test_http_errors(void) {
    HttpReply r = {0};
    char allow[64];

    assert_int_equal(http_status(addr, "GET", "/", WAIT_MS), 404);
    assert_int_equal(http_status(addr, "GET", "/metricsx", WAIT_MS), 404);
    assert_int_equal(http_status(addr, "HEAD", "/metrics", WAIT_MS), 200);
    assert_int_equal(http_request(addr, "POST", "/metrics", WAIT_MS, &r), 0);
    assert_int_equal(r.status, 405);
    assert_true(http_header(&r, "Allow", allow, sizeof(allow)));
    assert_string_equal(allow, "GET, HEAD");
    http_reply_done(&r);
}

static unsigned count_lines_starting(const char *body, const char *prefix) {
    unsigned n = 0;

    for (const char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

static void test_build_info_and_start(void) {
    HttpReply r = {0};
    char type[128], series[128];

    assert_int_equal(http_request(addr, "GET", "/metrics", WAIT_MS, &r), 0);
    assert_int_equal(r.status, 200);
    assert_true(http_header(&r, "Content-Type", type, sizeof(type)));
    assert_string_equal(type, "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(strstr(r.body, "\nrailgate_build_info{version=\"" RAILGATE_VERSION "\"} 1\n"));
    http_reply_done(&r);
    /* served by the libmicrohttpd loaded when metrics are on */
    assert_int_equal(proc_maps_library(env.plugin, "libmicrohttpd.so."), 1);
    expect(REG(RES_A, "start"), 1);
    expect(REG(RES_B, "start"), 1);
    expect(REG(RES_A, "kubelet_restart"), 0);
    /* the RDMA netns mode this kernel has (no ib_core: unavailable), one series */
    snprintf(series, sizeof(series), "railgate_rdma_netns_mode{mode=\"%s\"}",
             dpenv_rdma_netns_mode());
    expect(series, 1);
    assert_int_equal(http_request(addr, "GET", "/metrics", WAIT_MS, &r), 0);
    assert_int_equal(count_lines_starting(r.body, "railgate_rdma_netns_mode{"), 1);
    http_reply_done(&r);
    expect(UNITS("a", "healthy"), 2);
    expect(UNITS("a", "unhealthy"), 0);
    expect(UNITS("b", "healthy"), 2);
    /* the first reading of health is no transition */
    expect(TRANSITIONS("a", "healthy"), 0);
}

static void test_reregistrations(void) {
    unsigned a = fk_registrations(env.k, RES_A);

    assert_int_equal(fk_restart(env.k), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 1, WAIT_MS), 0);
    expect(REG(RES_A, "kubelet_restart"), 1);
    expect(REG(RES_B, "kubelet_restart"), 1);
    expect(REG(RES_A, "start"), 1);
    expect(REG(RES_A, "rebind"), 0);
    assert_int_equal(kill(env.plugin, SIGHUP), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 2, WAIT_MS), 0);
    expect(REG(RES_A, "sighup"), 1);
    expect(REG(RES_B, "sighup"), 1);
    expect(REG(RES_A, "kubelet_restart"), 1);
    expect("railgate_registration_failures_total{resource=\"" RES_A "\"}", 0);
}

/*
 * A plugin that registers with a new kubelet before it reads the new
 * socket's creation event books a kubelet restart all the same: held at a
 * failpoint once it saw kubelet.sock go, it finds the next one by stat, its
 * tenants rebind and register there, and the event is read after.
 */
static void test_reregistration_ahead_of_event(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    unsigned a = fk_registrations(env.k, RES_A), b = fk_registrations(env.k, RES_B);
    unsigned refused = fk_refused(env.k, RES_A);
    long from = file_length(env.log);
    int st = 0;

    snprintf(addr, sizeof(addr), "127.0.0.1:%u", free_port(AF_INET));
    assert_int_equal(setenv("RAILGATE_FAILPOINT", "dp-kubelet-removed=pause", 1), 0);
    start(addr);
    assert_int_equal(unsetenv("RAILGATE_FAILPOINT"), 0);
    fk_down(env.k);
    assert_int_equal(waitpid(env.plugin, &st, WUNTRACED), env.plugin);
    assert_true(WIFSTOPPED(st));
    assert_int_equal(fk_up(env.k), 0);
    assert_int_equal(kill(env.plugin, SIGCONT), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 2, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, b + 2, WAIT_MS), 0);
    /* it registered before it knew of the new kubelet: the log says so */
    assert_true(file_contains_from(env.log, from, "our socket is gone: rebinding"));
    expect(REG(RES_A, "kubelet_restart"), 1);
    expect(REG(RES_B, "kubelet_restart"), 1);
    expect(REG(RES_A, "rebind"), 0);
    expect(REG(RES_A, "start"), 1);
    /* once, with the new kubelet: it did not register with it twice */
    assert_int_equal(fk_registered_now(env.k, RES_A), 1);
    assert_int_equal(fk_refused(env.k, RES_A), refused);
    stop();
#endif
}

static void test_allocations(void) {
    char *ids[] = {"rail0"}, *bad[] = {"rail3"}, *avail[] = {"rail0", "rail1"}, **got = NULL;
    V1beta1__AllocateResponse *resp = NULL;
    RgError err = {0};

    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(fk_allocate(env.k, RES_A, ids, 1, &resp, &err), 0);
        v1beta1__allocate_response__free_unpacked(resp, NULL);
    }
    expect(ALLOC("OK"), 5);
    expect(ALLOC_COUNT, 5);
    expect("railgate_allocate_duration_seconds_bucket{resource=\"" RES_A "\",le=\"+Inf\"}", 5);
    /* another tenant's unit */
    assert_true(fk_allocate(env.k, RES_A, bad, 1, &resp, &err) < 0);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    expect(ALLOC("INVALID_ARGUMENT"), 1);
    expect(ALLOC("OK"), 5);
    expect(ALLOC_COUNT, 6);
    assert_int_equal(fk_preferred(env.k, RES_A, avail, 2, NULL, 0, 1, &got, &err), 0);
    strv_free(got);
    expect("railgate_preferred_allocation_requests_total{resource=\"" RES_A "\",code=\"OK\"}", 1);
    expect("railgate_allocate_requests_total{resource=\"" RES_B "\",code=\"OK\"}", 0);
}

static void test_health(void) {
    assert_int_equal(testns_link_set_up("rail-nic1", false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", false, WAIT_MS), 0);
    expect(UNITS("a", "unhealthy"), 1);
    expect(UNITS("a", "healthy"), 1);
    expect(TRANSITIONS("a", "unhealthy"), 1);
    expect(UNITS("b", "healthy"), 2);
    assert_int_equal(testns_link_set_up("rail-nic1", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", true, WAIT_MS), 0);
    expect(UNITS("a", "healthy"), 2);
    expect(TRANSITIONS("a", "healthy"), 1);
    expect(TRANSITIONS("b", "unhealthy"), 0);
}

/* On loopback, from the flag: every value follows what the node did. */
static void test_tcp(void **state) {
    unsigned port = free_port(AF_INET);

    snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
    start(addr);
    assert_true(file_contains(env.log, "serving metrics on 127.0.0.1:"));
    test_build_info_and_start();
    test_http_errors();
    test_reregistrations();
    test_allocations();
    test_health();
    stop();
    /* gone with the daemon */
    assert_true(http_connect(addr) < 0);
    assert_int_equal(listeners(), 0);
}

static void test_ipv6(void **state) {
    unsigned port = free_port(AF_INET6);

    if (!port)
        skip(); /* no IPv6 on this kernel's loopback */
    snprintf(addr, sizeof(addr), "[::1]:%u", port);
    start(addr);
    expect("railgate_build_info{version=\"" RAILGATE_VERSION "\"}", 1);
    stop();
}

/* From the node config, on a unix socket made 0660; the flag overrides it. */
static void test_unix_from_config(void **state) {
    char sock[256], json[400], tcp[64];
    struct stat st;

    snprintf(sock, sizeof(sock), "%s/run/railgate/metrics.sock", env.tmp);
    snprintf(json, sizeof(json), "{\"listen\": \"unix:%s\", \"socketMode\": \"0660\"}", sock);
    assert_int_equal(dpenv_config_metrics(&env, json), 0);
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    start(NULL);
    expect(REG(RES_A, "start"), 1);
    expect(UNITS("b", "healthy"), 2);
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);
    assert_int_equal(st.st_uid, 0);
    test_http_errors();
    stop();
    assert_int_equal(access(sock, F_OK), -1);

    snprintf(tcp, sizeof(tcp), "127.0.0.1:%u", free_port(AF_INET));
    start(tcp);
    snprintf(addr, sizeof(addr), "%s", tcp);
    expect(REG(RES_A, "start"), 1);
    assert_int_equal(access(sock, F_OK), -1);
    stop();
    assert_int_equal(dpenv_config_metrics(&env, NULL), 0);
}

static bool plugin_gave_up(void *arg) {
    return file_contains(env.log, "cannot serve metrics on");
}

/* Asked for metrics it cannot serve, the daemon says so and does not start. */
static void test_port_taken(void **state) {
    unsigned port = free_port(AF_INET);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unsigned regs = fk_registrations(env.k, RES_A);
    char flag[64];

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 1), 0);
    snprintf(flag, sizeof(flag), "--metrics-listen=127.0.0.1:%u", port);
    assert_int_equal(dpenv_plugin_start(&env, flag), 0);
    assert_true(testns_wait_until(plugin_gave_up, NULL, WAIT_MS));
    assert_int_equal(proc_stop(env.plugin, 5000), 1);
    env.plugin = 0;
    assert_int_equal(fk_registrations(env.k, RES_A), regs);
    close(fd);
}

/* ---- slow clients ------------------------------------------------------- */

static Trickler slow[8];
static size_t n_slow;
static int scraper = -EBADF;

static int slow_teardown(void **state) {
    tricklers_close(slow, n_slow);
    n_slow = 0;
    if (scraper >= 0)
        close(scraper);
    scraper = -EBADF;
    plugin_teardown(state);
    return dpenv_config_metrics(&env, NULL);
}

/* The daemon with these metrics limits, listening on every address at port. */
static void start_slow(unsigned port, const char *limits) {
    char json[300];

    snprintf(json, sizeof(json), "{\"listen\": \"0.0.0.0:%u\", %s}", port, limits);
    assert_int_equal(dpenv_config_metrics(&env, json), 0);
    snprintf(addr, sizeof(addr), SERVER_IP ":%u", port);
    start(NULL);
    assert_true(scrape_wait(addr, "railgate_build_info{version=\"" RAILGATE_VERSION "\"}", 1,
                            WAIT_MS, NULL));
}

/* Connections the kernel completed that the server has not taken yet: the
 * queue of the socket listening on port (its rx_queue in /proc/net/tcp). */
static int accept_queue(unsigned port) {
    char line[512];
    unsigned local_port, st, rx;
    int n = -1;
    FILE *f = fopen("/proc/net/tcp", "re");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, " %*u: %*x:%x %*s %x %*x:%x", &local_port, &st, &rx) == 3 &&
            local_port == port && st == 0x0a /* TCP_LISTEN */)
            n = (int)rx;
    fclose(f);
    return n;
}

typedef struct Queued {
    unsigned port;
    int want;
} Queued;

/* The slow clients go on while we wait for the queue. */
static bool queue_is(void *arg) {
    const Queued *q = arg;

    (void)trickle(slow, n_slow);
    return accept_queue(q->port) == q->want;
}

static void wait_queue(unsigned port, int want) {
    Queued q = {port, want};

    if (!testns_wait_until(queue_is, &q, WAIT_MS))
        fail_msg("the listening socket's queue: %d, not %d", accept_queue(port), want);
}

/* A whole GET /metrics from from to to, its answer not read yet. */
static void scrape_begin(const char *to, const char *from) {
    scraper = http_connect_from(to, from);
    assert_true(scraper >= 0);
    assert_int_equal(http_send_get(scraper), 0);
}

/* The scrape's status, read while the slow clients go on. */
static int scrape_finish(void) {
    int status = http_status_trickling(scraper, slow, n_slow, WAIT_MS);

    close(scraper);
    scraper = -EBADF;
    return status;
}

static bool all_cut(void *arg) {
    return trickle(slow, n_slow) == 0;
}

/*
 * Slow clients take every connection and trickle their headers, never idle
 * for the idle timeout: each is cut off at its deadline, and the scrape that
 * waited meanwhile is answered.
 */
static void test_slow_clients_cut(void **state) {
    unsigned port = free_port(AF_INET), deadline_s = (unsigned)wait_scaled_ms(3000) / 1000;
    char limits[200];

    snprintf(limits, sizeof(limits),
             "\"maxConnections\": 4, \"maxConnectionsPerClient\": 2, "
             "\"timeoutSeconds\": 600, \"deadlineSeconds\": %u",
             deadline_s);
    start_slow(port, limits);
    /* two from each of two clients: every connection, none past its client's limit */
    for (n_slow = 0; n_slow < 4; n_slow++)
        assert_int_equal(trickler_open(&slow[n_slow], addr, CLIENTS[n_slow / 2]), 0);
    scrape_begin(addr, CLIENTS[2]);
    /* every connection is taken: the scrape waits in the listen backlog */
    wait_queue(port, 1);
    assert_int_equal(scrape_finish(), 200);
    /* each slow client was cut off, however long after its deadline we saw it */
    if (!testns_wait_until(all_cut, NULL, WAIT_MS))
        fail_msg("%u slow clients still connected", trickle(slow, n_slow));
    for (size_t i = 0; i < n_slow; i++) {
        if (slow[i].closed_us - slow[i].opened_us < deadline_s * 1e6)
            fail_msg("slow client %zu cut after %.3f s, before its deadline (%u s)", i,
                     (slow[i].closed_us - slow[i].opened_us) / 1e6, deadline_s);
        assert_true(slow[i].sent > 0);
    }
    /* and the endpoint is free again */
    assert_int_equal(http_status(addr, "GET", "/metrics", WAIT_MS), 200);
    stop();
}

static bool closed(void *arg) {
    Trickler *t = arg;

    (void)trickle(t, 1);
    return t->fd < 0;
}

/*
 * One address gets maxConnectionsPerClient connections at once; another is
 * served meanwhile. Loopback's clients are all one address and not limited
 * per client: they queue for the connections instead.
 */
static void test_per_client_limit(void **state) {
    unsigned port = free_port(AF_INET);
    char lo[64];

    start_slow(port, "\"maxConnections\": 4, \"maxConnectionsPerClient\": 1, "
                     "\"timeoutSeconds\": 600, \"deadlineSeconds\": 600");
    assert_int_equal(trickler_open(&slow[0], addr, CLIENTS[0]), 0);
    n_slow = 1;
    wait_queue(port, 0);
    /* the client's second is closed as it comes, its first goes on */
    assert_int_equal(trickler_open(&slow[1], addr, CLIENTS[0]), 0);
    if (!testns_wait_until(closed, &slow[1], WAIT_MS))
        fail_msg("a second connection from %s is open", CLIENTS[0]);
    assert_int_equal(trickle(slow, 1), 1);
    /* another client is served */
    scrape_begin(addr, CLIENTS[1]);
    assert_int_equal(scrape_finish(), 200);
    /* three from loopback, all taken in: with the first, every connection */
    snprintf(lo, sizeof(lo), "127.0.0.1:%u", port);
    for (n_slow = 2; n_slow < 5; n_slow++)
        assert_int_equal(trickler_open(&slow[n_slow], lo, NULL), 0);
    scrape_begin(lo, NULL);
    wait_queue(port, 1);
    assert_int_equal(trickle(slow, n_slow), 4);
    /* the first goes away: the queued scrape is served */
    tricklers_close(slow, 1);
    assert_int_equal(scrape_finish(), 200);
    stop();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_off_by_default, plugin_teardown),
        cmocka_unit_test_teardown(test_tcp, plugin_teardown),
        cmocka_unit_test_teardown(test_reregistration_ahead_of_event, plugin_teardown),
        cmocka_unit_test_teardown(test_ipv6, plugin_teardown),
        cmocka_unit_test_teardown(test_unix_from_config, plugin_teardown),
        cmocka_unit_test_teardown(test_port_taken, plugin_teardown),
        cmocka_unit_test_teardown(test_slow_clients_cut, slow_teardown),
        cmocka_unit_test_teardown(test_per_client_limit, slow_teardown),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
