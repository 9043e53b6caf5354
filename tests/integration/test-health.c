/* SPDX-License-Identifier: Apache-2.0 */
/* One health, two fronts: a unit's NIC link taken down and up again, and the time until each
 * front shows it, measured the same way in both modes: the device plugin's ListAndWatch update
 * at the fake kubelet, the DRA driver's ResourceSlice taint at the fake API server; and kubelet's
 * DRA resource health stream (KEP-4680) from the agent's DRA socket. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "dpenv.h"
#include "dra-slices.h"
#include "dra.h"
#include "drafix.h"
#include "fakeapi.h"
#include "pluginregistration.pb-c.h"
#include "proc.h"
#include "state.h"
#include "testns.h"
#include "waitscale.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define UNIT "rail1"
#define NIC "rail-nic1"
#define WAIT_MS 10000
/* The DRA front's periodic work (claims swept, networkData, the slices'
 * retries, its sockets checked) off for the whole run: a taint that still
 * comes came from the link event, not from a timer. */
#define NO_TICK "dra-tick@*=fail"
#define NO_TICK_LOGGED "periodic work off"

static DpEnv env;
static FakeApi *api;
static char kubeconfig[192];

typedef bool (*Shown)(bool healthy);

/* Poll what the front shows every millisecond, in both modes alike: the
 * milliseconds from the link change until it shows, -1 if it never did. */
static long until_shown(Shown shown, bool healthy, uint64_t since) {
    uint64_t deadline = since + (uint64_t)wait_scaled_ms(WAIT_MS);

    for (;;) {
        if (shown(healthy))
            return (long)(clock_monotonic_ms() - since);
        if (clock_monotonic_ms() >= deadline)
            return -1;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The fake kubelet's last ListAndWatch update says so. */
static bool dp_shows(bool healthy) {
    FkDevice *d = NULL;
    size_t n = 0;
    bool ok = false;

    if (fk_devices(env.k, RES_A, &d, &n, NULL) < 0)
        return false;
    for (size_t i = 0; i < n; i++)
        ok |= streq(d[i].id, UNIT) && d[i].healthy == healthy;
    free(d);
    return ok;
}

/* The device in the node's slices carries the unhealthy taint, or none;
 * its value into value (n bytes, "" without one) when value is not NULL. */
static bool dra_taint(bool healthy, char *value, size_t n) {
    json_t *l = fakeapi_list(api, DRA_SLICES_PATH), *s, *d;
    json_t *items = json_object_get(l, "items");
    size_t i, j;
    int found = -1;

    if (value)
        value[0] = 0;
    json_array_foreach(items, i, s) {
        json_array_foreach(json_object_get(json_object_get(s, "spec"), "devices"), j, d) {
            if (!streq_ptr(json_string_value(json_object_get(d, "name")), UNIT))
                continue;
            json_t *t = json_array_get(json_object_get(d, "taints"), 0);
            found = t && streq_ptr(json_string_value(json_object_get(t, "key")),
                                   "railgate.io/unhealthy");
            if (t && value)
                snprintf(value, n, "%s", json_string_value(json_object_get(t, "value")) ?: "");
        }
    }
    json_decref(l);
    return found >= 0 && found == !healthy;
}

static bool dra_shows(bool healthy) {
    return dra_taint(healthy, NULL, 0);
}

#ifdef RAILGATE_FAILPOINTS
static bool no_tick_logged(void *arg) {
    (void)arg;
    return file_contains(env.log, NO_TICK_LOGGED);
}
#endif

/* Down, then up: both must show, each latency printed. */
static void measure(const char *mode, Shown shown) {
    uint64_t t0;
    long down, up;

    assert_true(until_shown(shown, true, clock_monotonic_ms()) >= 0);
    t0 = clock_monotonic_ms();
    assert_int_equal(testns_link_set_up(NIC, false), 0);
    down = until_shown(shown, false, t0);
    if (down < 0)
        fail_msg("%s: %s never shown unhealthy after %s went down", mode, UNIT, NIC);
    /* past the DRA front's rate limit (in both modes alike): the next
     * latency is the up event's alone */
    struct timespec gap = {.tv_sec = 0, .tv_nsec = (DRA_HEALTH_MIN_GAP_MS + 100) * 1000000L};
    nanosleep(&gap, NULL);
    t0 = clock_monotonic_ms();
    assert_int_equal(testns_link_set_up(NIC, true), 0);
    up = until_shown(shown, true, t0);
    if (up < 0)
        fail_msg("%s: %s never shown healthy after %s came up", mode, UNIT, NIC);
    printf("health latency %-14s unhealthy %ld ms, healthy again %ld ms\n", mode, down, up);
    fflush(stdout);
}

/* The unit's RDMA device loses its uverbs node (ib_uverbs unloaded, the
 * device unbound), then gets it back: each front shows it from the inotify
 * event, with the reason (the agent's log; DRA: the taint's value). */
static void uverbs_gone(const char *mode, Shown shown) {
    assert_true(until_shown(shown, true, clock_monotonic_ms()) >= 0);
    assert_int_equal(dpenv_dev_node(&env, "/dev/infiniband/uverbs1", false), 0);
    if (until_shown(shown, false, clock_monotonic_ms()) < 0)
        fail_msg("%s: %s never shown unhealthy without its uverbs node", mode, UNIT);
    if (!file_contains(env.log, "Unhealthy: RDMA device mlx5_1 has no uverbs device node"))
        fail_msg("%s: the agent's log does not say why %s is unhealthy", mode, UNIT);
    if (shown == dra_shows) {
        char value[64];
        assert_true(dra_taint(false, value, sizeof(value)));
        assert_string_equal(value, "rdma-device-mlx5-1-has-no-uverbs-device-node");
    }
    assert_int_equal(dpenv_dev_node(&env, "/dev/infiniband/uverbs1", true), 0);
    if (until_shown(shown, true, clock_monotonic_ms()) < 0)
        fail_msg("%s: %s never shown healthy after its uverbs node came back", mode, UNIT);
}

/* A link that flaps: the slices follow it, but the API server gets one
 * write per DRA_HEALTH_MIN_GAP_MS at most, however fast it flaps. */
static void flap(void) {
    unsigned before = fakeapi_requests(api, "PUT", DRA_SLICES_PATH), writes;
    uint64_t t0 = clock_monotonic_ms(), elapsed;
    const unsigned changes = 40;

    /* a change every 20 ms, twice the coalescing window: unlimited, each
     * would be a write of the slices */
    for (unsigned i = 0; i < changes; i++) {
        struct timespec every = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};
        assert_int_equal(testns_link_set_up(NIC, i % 2 == 1), 0);
        nanosleep(&every, NULL);
    }
    if (until_shown(dra_shows, true, t0) < 0)
        fail_msg("dra: %s never shown healthy after the flapping", UNIT);
    /* anything still due goes out within a gap: wait it out, then count */
    struct timespec gap = {.tv_sec = 0, .tv_nsec = (DRA_HEALTH_MIN_GAP_MS + 100) * 1000000L};
    nanosleep(&gap, NULL);
    assert_true(dra_shows(true));
    writes = fakeapi_requests(api, "PUT", DRA_SLICES_PATH) - before;
    elapsed = clock_monotonic_ms() - t0;
    printf("health flapping %u link changes in %llu ms: %u slice write(s)\n", changes,
           (unsigned long long)elapsed, writes);
    fflush(stdout);
    /* the first change's window, then one per gap of the time it all took */
    assert_true(writes <= 1 + elapsed / DRA_HEALTH_MIN_GAP_MS + 1);
}

static int group_setup(void **state) {
    (void)state;
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(dpenv_setup(&env, 4, 0), 0);
    /* rails 1 to 3 have RDMA devices: their uverbs nodes count too */
    assert_int_equal(dpenv_rdma(&env, 1, NULL), 0);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    dpenv_teardown(&env);
    if (api)
        fakeapi_stop(api);
    return 0;
}

/* The agent said at start which RDMA netns mode this kernel has, in both
 * modes ("unavailable (no RDMA netlink: ...)" without ib_core). */
static void rdma_mode_logged(void) {
    const char *mode = dpenv_rdma_netns_mode();
    char line[128];

    /* the text format's msg="..." */
    snprintf(line, sizeof(line), "msg=\"RDMA netns mode: %s%s", mode,
             streq(mode, "unavailable") ? " (no RDMA netlink: " : "\"");
    if (!file_contains(env.log, line))
        fail_msg("the agent's log has no \"%s\"", line);
}

/* Device-plugin mode: the loop has no timer for health at all. */
static void test_device_plugin_mode(void **state) {
    (void)state;
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 1, WAIT_MS), 0);
    rdma_mode_logged();
    measure("device-plugin", dp_shows);
    uverbs_gone("device-plugin", dp_shows);
    assert_int_equal(proc_stop(env.plugin, 10000), 0);
    env.plugin = 0;
}

/* ---- a unit's NIC in a pod ---- */

#define POD_CTR "pod-h"
#define POD_NIC "rail-nic1"

static void pod_link_set_up(int fd, const char *name, bool up) {
    LinkChange c = LINK_CHANGE_INIT;

    c.state = up ? LINK_SET_UP : LINK_SET_DOWN;
    assert_int_equal(testns_link_change_in(fd, name, &c), 0);
}

/* The fake kubelet's last update of tenant a has rail0 and rail1 so. */
static void a_shows(bool rail0, bool rail1) {
    FkDevice *d = NULL;
    size_t n = 0;
    int seen = 0;

    assert_int_equal(fk_devices(env.k, RES_A, &d, &n, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        if (streq(d[i].id, "rail0") && d[i].healthy == rail0)
            seen |= 1;
        if (streq(d[i].id, "rail1") && d[i].healthy == rail1)
            seen |= 2;
    }
    free(d);
    if (seen != 3)
        fail_msg("tenant a's update: rail0 %s, rail1 %s wanted", rail0 ? "Healthy" : "Unhealthy",
                 rail1 ? "Healthy" : "Unhealthy");
}

static uint64_t stream_seq(const char *res) {
    FkDevice *d = NULL;
    size_t n = 0;
    uint64_t seq = 0;

    assert_int_equal(fk_devices(env.k, res, &d, &n, &seq), 0);
    free(d);
    return seq;
}

static bool log_has(void *line) {
    return file_contains(env.log, line);
}

/* The agent logged that rail1 turned so, for this reason (within the wait:
 * wait_ms). */
static void logged_within(const char *health, const char *reason, int wait_ms) {
    char line[160];

    snprintf(line, sizeof(line), "unit=%s msg=\"%s: %s\"", UNIT, health, reason);
    if (testns_wait_until(log_has, line, wait_ms))
        return;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "tail -20 '%s' >&2", env.log);
    (void)!system(cmd);
    fail_msg("the agent's log has no %s", line);
}

static void logged(const char *health, const char *reason) {
    logged_within(health, reason, 0);
}

/*
 * Device-plugin mode (no health timer: what shows came from an event). A
 * rail moved into a namespace of the test's (its pod), its record as the
 * CNI writes it: the agent reads it there, by the record's identity (a
 * veth's peer on the host, a dummy's or macvlan's anchor), never by name,
 * holding nothing there. Its carrier gone (a veth's host-side peer down, as
 * a fabric's side of the cable): rail1 Unhealthy at once, rail0 Healthy in
 * the same update, tenant b's stream sent nothing. Renamed in the pod and
 * set down: still found. The GPU's node gone: Unhealthy while in the pod
 * too. The pod's namespace deleted: the NIC goes with it, "NIC missing",
 * and the agent lives.
 */
static char pod_path[128];
static int pod_fd = -EBADF;

/* Whatever the case left, even failed: its namespace, the record, the
 * agent; rail1 made again once its pair went with the namespace. */
static int in_pod_teardown(void **state) {
    Link l;

    (void)state;
    if (pod_fd >= 0)
        close(TAKE_FD(pod_fd));
    if (pod_path[0])
        (void)testns_named_remove(pod_path);
    pod_path[0] = 0;
    (void)state_pod_release(env.state, POD_CTR, UNIT);
    if (env.plugin > 0)
        (void)proc_stop(env.plugin, 10000);
    env.plugin = 0;
    if (testns_link_get(POD_NIC, &l) == -ENODEV)
        assert_int_equal(dpenv_rail_remake(1), 0);
    return 0;
}

static void test_in_pod_device_plugin(void **state) {
    char *path = pod_path;
    int fd;
    uint64_t t0, b_before;
    long down;

    (void)state;
    assert_int_equal(truncate(env.log, 0) < 0 && errno != ENOENT ? -errno : 0, 0);
    /* this agent's registrations, not the last test's */
    unsigned reg_a = fk_registrations(env.k, RES_A), reg_b = fk_registrations(env.k, RES_B);
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, reg_a + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, reg_b + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);
    if (file_contains(env.log, "cannot follow the link events of pods"))
        fail_msg("the agent follows no pod's link events");

    /* as the CNI's ADD: recorded, claimed, moved, up there */
    assert_int_equal(dpenv_pod_take_or_skip(&env, POD_CTR, 1, path, sizeof(pod_path), &pod_fd), 0);
    fd = pod_fd;
    /* read there: it arrives down, the agent says so, then up */
    logged_within("Healthy", "NIC in its pod", wait_scaled_ms(WAIT_MS));
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);
    a_shows(true, true);

    /* the far end of the cable down (a veth's peer on the host, as a
     * fabric's side): the pod's end has no carrier */
    b_before = stream_seq(RES_B);
    t0 = clock_monotonic_ms();
    assert_int_equal(dpenv_pod_carrier(1, fd, false), 0);
    down = until_shown(dp_shows, false, t0);
    if (down < 0)
        fail_msg("%s in its pod never shown unhealthy after its carrier went", UNIT);
    a_shows(true, false);
    assert_int_equal(stream_seq(RES_B), b_before);
    logged("Unhealthy", "NIC in its pod: no carrier");
    printf("health latency %-14s unhealthy %ld ms\n", "in-pod", down);
    fflush(stdout);
    assert_int_equal(dpenv_pod_carrier(1, fd, true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);
    a_shows(true, true);

    /* the tenant's own doing: down, renamed, up, down again, up */
    pod_link_set_up(fd, POD_NIC, false);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, false, WAIT_MS), 0);
    logged("Unhealthy", "NIC in its pod: link down");
    LinkChange rename = LINK_CHANGE_INIT;
    rename.name = "eth9";
    assert_int_equal(testns_link_change_in(fd, POD_NIC, &rename), 0);
    pod_link_set_up(fd, "eth9", true);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);
    pod_link_set_up(fd, "eth9", false);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, false, WAIT_MS), 0);
    a_shows(true, false);
    pod_link_set_up(fd, "eth9", true);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);

    /* the CNI working on the attachment (its lock held, as a DEL that moves
     * the NIC home and finds it down on arrival): not shown, and read again
     * once the lock is free */
    char key[STATE_KEY_MAX + 1];
    assert_int_equal(state_unit_holder(env.state, UNIT, key, sizeof(key)), 0);
    int lock = state_attachment_lock(env.state, key);
    assert_true(lock >= 0);
    uint64_t seq = stream_seq(RES_A);
    pod_link_set_up(fd, "eth9", false);
    logged_within("Healthy", "NIC attached to a pod: the CNI is working on it",
                  wait_scaled_ms(WAIT_MS));
    a_shows(true, true);
    assert_int_equal(stream_seq(RES_A), seq); /* nothing sent */
    state_attachment_unlock(env.state, key, lock, false);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, false, WAIT_MS), 0);
    logged("Unhealthy", "NIC in its pod: link down");
    pod_link_set_up(fd, "eth9", true);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);

    /* the GPU's device node gone while its NIC is in the pod */
    dpenv_gpu_node(&env, 1, false);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, false, WAIT_MS), 0);
    logged("Unhealthy", "GPU device node missing");
    dpenv_gpu_node(&env, 1, true);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);

    /* the pod's namespace deleted: a virtual NIC dies with it, and its
     * veth peer or anchor with it */
    assert_int_equal(testns_named_remove(path), 0);
    pod_path[0] = 0;
    close(TAKE_FD(pod_fd));
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, false, WAIT_MS), 0);
    logged("Unhealthy", "NIC missing");
    assert_int_equal(state_pod_release(env.state, POD_CTR, UNIT), 0);
    assert_int_equal(dpenv_rail_remake(1), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, UNIT, true, WAIT_MS), 0);
    a_shows(true, true);
    assert_int_equal(kill(env.plugin, 0), 0); /* alive: no crash */
    assert_int_equal(proc_stop(env.plugin, 10000), 0);
    env.plugin = 0;
}

/* The agent in DRA mode against the fake API server, its periodic work off
 * where the build has the failpoint: what the stream carries then comes
 * from health's events and the resend's own timer. */
static void dra_agent_start(void) {
    char members[256];

    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig.json", env.tmp);
    if (!api)
        assert_int_equal(fakeapi_start(&api), 0);
    assert_int_equal(fakeapi_write_kubeconfig(api, kubeconfig, NULL), 0);
    snprintf(members, sizeof(members), "\"mode\": \"dra\", \"cdiDir\": \"%s/cdi\"", env.tmp);
    assert_int_equal(dpenv_config_extra(&env, members), 0);
    assert_int_equal(truncate(env.log, 0) < 0 && errno != ENOENT ? -errno : 0, 0);
    setenv("KUBECONFIG", kubeconfig, 1);
    setenv("NODE_NAME", "node-1", 1);
#ifdef RAILGATE_FAILPOINTS
    setenv("RAILGATE_FAILPOINT", NO_TICK, 1);
#endif
    assert_int_equal(dpenv_plugin_start(&env, "--log-level=debug"), 0);
    unsetenv("RAILGATE_FAILPOINT");
#ifdef RAILGATE_FAILPOINTS
    /* the build has the failpoint and it is on: no timer reads health */
    if (!testns_wait_until(no_tick_logged, NULL, wait_scaled_ms(WAIT_MS)))
        fail_msg("the agent never said \"%s\": its periodic work may read health", NO_TICK_LOGGED);
#endif
}

/* DRA mode, its periodic work off (NO_TICK): the taint comes from the event. */
static void test_dra_mode(void **state) {
    (void)state;
    dra_agent_start();
#ifndef RAILGATE_FAILPOINTS
    print_message("a build without failpoints: the periodic work runs; the failpoint build "
                  "(ASan, scripts/dev.sh) proves the taint comes from the event\n");
#endif
    measure("dra", dra_shows);
    /* the API client's libcurl, which device-plugin mode never loads (lib/kube/kubecurl.c) */
    assert_int_equal(proc_maps_library(env.plugin, "libcurl.so."), 1);
    rdma_mode_logged();
    uverbs_gone("dra", dra_shows);
    flap();
    assert_int_equal(proc_stop(env.plugin, 10000), 0);
    env.plugin = 0;
}

/* ---- DRA mode: the resource health service kubelet watches (KEP-4680) ---- */

#define ALL_HEALTHY "rail0=HEALTHY rail1=HEALTHY rail2=HEALTHY rail3=HEALTHY"
#define RAIL1_DOWN "rail0=HEALTHY rail1=UNHEALTHY(NIC link down) rail2=HEALTHY rail3=HEALTHY"

static char dra_sock[512];

/* As kubelet finds it: GetInfo on the one registration socket gives the
 * endpoint, and lists the health service (both versions) beside DRAPlugin. */
static bool dra_health_endpoint(void *arg) {
    Pluginregistration__PluginInfo *info = drafix_registration_info(env.kubelet);
    bool ok = info && info->n_supported_versions == 4 &&
              streq(info->supported_versions[2], DRA_HEALTH_V1) &&
              streq(info->supported_versions[3], DRA_HEALTH_V1ALPHA1);

    (void)arg;
    if (ok)
        snprintf(dra_sock, sizeof(dra_sock), "%s", info->endpoint);
    if (info)
        pluginregistration__plugin_info__free_unpacked(info, NULL);
    return ok;
}

/* The next message of a watch within timeout_ms (raw, and as text). */
static char *watch_recv(RpcClientStream *s, int timeout_ms, uint8_t **ret_raw, size_t *ret_len,
                        int64_t *ret_updated) {
    uint8_t *m = NULL;
    size_t len = 0;
    RgError err = {0};
    int r = rpc_client_stream_recv(s, timeout_ms, &m, &len, &err);

    if (r < 0)
        fail_msg("no message on the health watch: %s (%d) %s", strerror(-r), err.code, err.msg);
    char *text = drafix_health_text(m, len, "node-1", ret_updated);
    if (!text)
        fail_msg("a message on the health watch is not the node's list");
    if (ret_raw) {
        *ret_raw = m;
        *ret_len = len;
    } else
        free(m);
    return text;
}

/* Messages until one says want (each is the complete list); the ms it took. */
static long watch_until(RpcClientStream *s, const char *want, uint64_t since) {
    uint64_t deadline = since + (uint64_t)wait_scaled_ms(WAIT_MS);
    char *last = NULL;

    for (;;) {
        int left = clock_left_ms(deadline);
        if (left <= 0)
            fail_msg("the health watch never said \"%s\"; last \"%s\"", want, last ?: "");
        free(last);
        last = watch_recv(s, left, NULL, NULL, NULL);
        if (streq(last, want)) {
            free(last);
            return (long)(clock_monotonic_ms() - since);
        }
    }
}

static RpcClientStream *watch_open(RpcChannel *ch, const char *method) {
    RpcClientStream *s = NULL;

    assert_int_equal(rpc_client_stream_open(ch, method, NULL, 0, &s), 0);
    return s;
}

/* Both versions' first message, the same bytes (opened again if a second
 * boundary fell between the two: last_updated_time is in seconds). */
static void watch_versions_equal(RpcChannel *ch) {
    for (int tries = 0;; tries++) {
        RpcClientStream *a = watch_open(ch, DRA_METHOD_WATCH_V1);
        RpcClientStream *b = watch_open(ch, DRA_METHOD_WATCH_V1ALPHA1);
        uint8_t *ma = NULL, *mb = NULL;
        size_t la = 0, lb = 0;
        int64_t ta = 0, tb = 0;
        char *text_a = watch_recv(a, wait_scaled_ms(WAIT_MS), &ma, &la, &ta);
        char *text_b = watch_recv(b, wait_scaled_ms(WAIT_MS), &mb, &lb, &tb);

        rpc_client_stream_free(a);
        rpc_client_stream_free(b);
        assert_string_equal(text_a, ALL_HEALTHY);
        assert_string_equal(text_b, text_a);
        if (ta == tb || tries == 2) {
            assert_int_equal(ta, tb);
            assert_int_equal(la, lb);
            assert_memory_equal(ma, mb, la);
        }
        free(text_a);
        free(text_b);
        free(ma);
        free(mb);
        if (ta == tb)
            return;
    }
}

/*
 * The stream kubelet watches, on the DRA socket GetInfo names: the whole
 * node at the open (all HEALTHY, pool the node, lease 60 s); a free unit's
 * NIC down, then up, each in one complete list; v1alpha1 the same bytes;
 * the list sent again with nothing changing (the lease renewed, its timer
 * no part of the periodic work NO_TICK turns off); a new watch the
 * snapshot again.
 */
static void test_dra_health_service(void **state) {
    RpcChannel *ch = NULL;
    RpcClientStream *v1, *v1alpha1;
    long down, up;
    uint64_t t0;
    char *text;

    (void)state;
    dra_agent_start();
    if (!testns_wait_until(dra_health_endpoint, NULL, wait_scaled_ms(WAIT_MS)))
        fail_msg("no registration socket whose GetInfo lists both health services");
    assert_int_equal(rpc_channel_new(dra_sock, &ch), 0);
    v1 = watch_open(ch, DRA_METHOD_WATCH_V1);
    text = watch_recv(v1, wait_scaled_ms(WAIT_MS), NULL, NULL, NULL);
    assert_string_equal(text, ALL_HEALTHY);
    free(text);
    if (!file_contains(env.log, "kubelet watches the units' health (" DRA_HEALTH_V1 ")"))
        fail_msg("the agent did not log the watch");

    t0 = clock_monotonic_ms();
    assert_int_equal(testns_link_set_up(NIC, false), 0);
    down = watch_until(v1, RAIL1_DOWN, t0);
    /* the slices' taint follows the same event */
    if (until_shown(dra_shows, false, t0) < 0)
        fail_msg("dra: %s never tainted after %s went down", UNIT, NIC);
    t0 = clock_monotonic_ms();
    assert_int_equal(testns_link_set_up(NIC, true), 0);
    up = watch_until(v1, ALL_HEALTHY, t0);
    if (until_shown(dra_shows, true, t0) < 0)
        fail_msg("dra: %s still tainted after %s came up", UNIT, NIC);
    printf("health latency %-14s unhealthy %ld ms, healthy again %ld ms\n", "dra-stream", down, up);
    fflush(stdout);

    watch_versions_equal(ch);

    /* nothing changes: the whole list again within the resend period, to
     * both versions' watches */
    v1alpha1 = watch_open(ch, DRA_METHOD_WATCH_V1ALPHA1);
    text = watch_recv(v1alpha1, wait_scaled_ms(WAIT_MS), NULL, NULL, NULL);
    free(text);
    text = watch_recv(v1, wait_scaled_ms((DRA_HEALTH_RESEND_S + 5) * 1000), NULL, NULL, NULL);
    assert_string_equal(text, ALL_HEALTHY);
    free(text);
    text = watch_recv(v1alpha1, wait_scaled_ms(WAIT_MS), NULL, NULL, NULL);
    assert_string_equal(text, ALL_HEALTHY);
    free(text);
    rpc_client_stream_free(v1alpha1);

    /* kubelet's watch ends (it redials after a restart): the snapshot again */
    rpc_client_stream_free(v1);
    v1 = watch_open(ch, DRA_METHOD_WATCH_V1);
    text = watch_recv(v1, wait_scaled_ms(WAIT_MS), NULL, NULL, NULL);
    assert_string_equal(text, ALL_HEALTHY);
    free(text);
    rpc_client_stream_free(v1);
    rpc_channel_free(ch);
    assert_int_equal(proc_stop(env.plugin, 10000), 0);
    env.plugin = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_plugin_mode),
        cmocka_unit_test_teardown(test_in_pod_device_plugin, in_pod_teardown),
        cmocka_unit_test(test_dra_mode),
        cmocka_unit_test(test_dra_health_service),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
