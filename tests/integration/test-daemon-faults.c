/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin daemon under faults: kubelet killed and restarted, its
 * socket dir wiped, a rail NIC deleted and recreated, SIGHUP. Each test runs
 * on a node of its own (4 rails of the kind the harness names, tenants a and
 * b) and ends by checking
 * the registrations and health kubelet sees, and that the plugin exits
 * cleanly on SIGTERM (under ASan: without leaks).
 *
 * Registration counts. The daemon registers each tenant once per kubelet
 * start (kubelet.sock created anew: inotify), once more when its own socket
 * is gone (a new socket, a new endpoint) and on SIGHUP; missing a kubelet
 * start drops the resource off the node, and a second Register of a
 * connected endpoint is refused by kubelet 1.37 ("device plugin already
 * connected"), which wedges the resource. The fake kubelet refuses it the
 * same way (fk_refused) and counts per kubelet start (fk_registered_now):
 * after a kubelet start the tests ask for exactly one registration per
 * resource with the kubelet running then and none refused, once a link flap
 * has gone through the daemon's loop (expect_health_flows), and again before
 * the next start (a late second Register would show there). Where the
 * trigger is the daemon's own (SIGHUP, a NIC, a plugin restart) the total is
 * exact: one per SIGHUP or start, none for a NIC. */
#include <dirent.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "dpenv.h"
#include "macro.h"
#include "netlink.h"
#include "pb.h"
#include "proc.h"
#include "plugin.h"
#include "rpc.h"
#include "state.h"
#include "testns.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define N_RAILS 4
#define WAIT_MS 30000
#define KUBELET_CYCLES 20
#define GAP_RESTARTS 24
#define IDLE_MS 3000
#define THREADS_MAX 64

static DpEnv env;

/* ---- node per test ---- */

static int group_setup(void **state) {
    testns_require_root();
    /* before any thread: links of every test live in this namespace */
    assert_int_equal(testns_enter_private(), 0);
    return 0;
}

/* dpenv_teardown stops the plugin and the fake kubelet and removes the temp
 * dir; the rails it made are ours to delete. */
static int node_teardown(void **state) {
    dpenv_teardown(&env);
    memset(&env, 0, sizeof(env));
    for (unsigned i = 0; i < N_RAILS; i++)
        (void)testns_rail_del(i);
    return 0;
}

/* cmocka runs no teardown after a failed setup: clean up here then. */
static int node_setup(void **state) {
    node_teardown(state); /* rails a failed test may have left */
    if (dpenv_setup(&env, N_RAILS, 0) < 0 || dpenv_plugin_start(&env, NULL) < 0 ||
        fk_wait_registered(env.k, RES_A, 1, WAIT_MS) < 0 ||
        fk_wait_registered(env.k, RES_B, 1, WAIT_MS) < 0) {
        fprintf(stderr, "node setup failed\n");
        node_teardown(state);
        return -1;
    }
    return 0;
}

/* ---- what the plugin process looks like ---- */

static void assert_plugin_alive(void) {
    int status;

    assert_true(env.plugin > 0);
    assert_int_equal(waitpid(env.plugin, &status, WNOHANG), 0);
}

/* SIGTERM: exit 0 (under ASan that includes LeakSanitizer's verdict). */
static void stop_plugin_cleanly(void) {
    pid_t pid = env.plugin;

    env.plugin = 0;
    assert_int_equal(proc_stop(pid, 10000), 0);
}

static unsigned log_count(const char *needle) {
    FILE *f = fopen(env.log, "re");
    char *line = NULL;
    size_t n = 0;
    unsigned k = 0;

    while (f && getline(&line, &n, f) >= 0)
        k += strstr(line, needle) != NULL;
    free(line);
    if (f)
        fclose(f);
    return k;
}

/* The plugin's log lines about kubelet and registering, for a failure's
 * story. */
static void log_print_registrations(void) {
    FILE *f = fopen(env.log, "re");
    char *line = NULL;
    size_t n = 0;

    while (f && getline(&line, &n, f) >= 0)
        if (strstr(line, "egister") || strstr(line, "kubelet"))
            fputs(line, stdout);
    free(line);
    if (f)
        fclose(f);
}

typedef struct LogWait {
    const char *needle;
    unsigned above;
} LogWait;

static bool log_count_above(void *arg) {
    const LogWait *w = arg;

    return log_count(w->needle) > w->above;
}

static void dp_path(const char *file, char *buf, size_t n) {
    snprintf(buf, n, "%s/device-plugins/%s", env.kubelet, file);
}

static ino_t file_ino(const char *file) {
    char path[256];
    struct stat st;

    dp_path(file, path, sizeof(path));
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* The tenant's socket now (its name is new at every server start). */
static void tenant_sock(const char *tenant, char *buf, size_t n) {
    assert_int_equal(dpenv_tenant_socket(&env, tenant, buf, n), 0);
}

static bool tenant_serving(const char *tenant) {
    char path[256];

    return dpenv_tenant_socket(&env, tenant, path, sizeof(path)) == 0;
}

/* The endpoint a tenant registered is one of its socket names. */
static void assert_endpoint(const char *resource, const char *tenant) {
    char prefix[64];
    const char *e = fk_endpoint(env.k, resource);

    snprintf(prefix, sizeof(prefix), "railgate-%s-", tenant);
    assert_non_null(e);
    assert_true(strncmp(e, prefix, strlen(prefix)) == 0);
    assert_int_equal(strlen(e), strlen(prefix) + 8 + 5);
}

/* ---- what kubelet sees ---- */

static void expect_ids(const FkDevice *d, size_t n, const char *const *ids, size_t n_ids,
                       bool healthy) {
    assert_int_equal(n, n_ids);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(d[i].id, ids[i]);
        assert_int_equal(d[i].healthy, healthy);
    }
}

static const char *const IDS_A[] = {"rail0", "rail1"}, *const IDS_B[] = {"rail2", "rail3"};

/* The list the newest registration's stream delivered. */
static void expect_kubelet_list(const char *res, const char *const *ids, size_t n_ids) {
    FkDevice *d = NULL;
    size_t n = 0;

    assert_int_equal(fk_devices(env.k, res, &d, &n, NULL), 0);
    expect_ids(d, n, ids, n_ids, true);
    free(d);
}

/* A ListAndWatch of our own on the tenant's socket: its first message is the
 * full list. The stream is closed again, as kubelet's would be. */
static void expect_fresh_list(const char *tenant, const char *const *ids, size_t n_ids) {
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    _cleanup_(rpc_client_stream_freep) RpcClientStream *s = NULL;
    _cleanup_free_ uint8_t *buf = NULL;
    char path[256];
    size_t len = 0;
    RgError err = {0};

    tenant_sock(tenant, path, sizeof(path));
    assert_int_equal(rpc_channel_new(path, &ch), 0);
    assert_int_equal(rpc_client_stream_open(ch, "/v1beta1.DevicePlugin/ListAndWatch", NULL, 0, &s),
                     0);
    assert_int_equal(rpc_client_stream_recv(s, WAIT_MS, &buf, &len, &err), 0);
    V1beta1__ListAndWatchResponse *r = v1beta1__list_and_watch_response__unpack(NULL, len, buf);
    assert_non_null(r);
    assert_int_equal(r->n_devices, n_ids);
    for (size_t i = 0; i < n_ids; i++) {
        assert_string_equal(r->devices[i]->id, ids[i]);
        assert_string_equal(r->devices[i]->health, "Healthy");
    }
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* Tenants a and b registered at least min_a and min_b times with this
 * kubelet (exactly, if exact), full healthy lists on kubelet's streams and on
 * fresh ones. */
static void expect_served(unsigned min_a, unsigned min_b, bool exact) {
    assert_int_equal(fk_wait_registered(env.k, RES_A, min_a, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, min_b, WAIT_MS), 0);
    if (exact) {
        assert_int_equal(fk_registrations(env.k, RES_A), min_a);
        assert_int_equal(fk_registrations(env.k, RES_B), min_b);
    }
    expect_kubelet_list(RES_A, IDS_A, 2);
    expect_kubelet_list(RES_B, IDS_B, 2);
    expect_fresh_list("a", IDS_A, 2);
    expect_fresh_list("b", IDS_B, 2);
    assert_plugin_alive();
}

/* Each tenant registered exactly once with the kubelet running now and was
 * never refused; full healthy lists on kubelet's streams and on fresh ones. */
static void expect_served_once_now(void) {
    assert_int_equal(fk_wait_registered_now(env.k, RES_A, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered_now(env.k, RES_B, WAIT_MS), 0);
    assert_int_equal(fk_registered_now(env.k, RES_A), 1);
    assert_int_equal(fk_registered_now(env.k, RES_B), 1);
    assert_int_equal(fk_refused(env.k, RES_A), 0);
    assert_int_equal(fk_refused(env.k, RES_B), 0);
    expect_kubelet_list(RES_A, IDS_A, 2);
    expect_kubelet_list(RES_B, IDS_B, 2);
    expect_fresh_list("a", IDS_A, 2);
    expect_fresh_list("b", IDS_B, 2);
    assert_plugin_alive();
}

/* Health still flows on kubelet's stream. Also a barrier: the daemon handles
 * inotify before link events and registers at the top of its next loop, so
 * once the "up" of the flap is seen, every registration that events from
 * before the flap asked for has been made. */
static void expect_health_flows(const char *res, unsigned rail) {
    char nic[32], id[32];

    snprintf(nic, sizeof(nic), "rail-nic%u", rail);
    snprintf(id, sizeof(id), "rail%u", rail);
    assert_int_equal(testns_link_set_up(nic, false), 0);
    assert_int_equal(fk_wait_health(env.k, res, id, false, WAIT_MS), 0);
    assert_int_equal(testns_link_set_up(nic, true), 0);
    assert_int_equal(fk_wait_health(env.k, res, id, true, WAIT_MS), 0);
}

/* ---- 1, 5: kubelet killed and restarted, fds and RSS ---- */

/*
 * Four ways kubelet goes away and comes back, in turn, each while kubelet's
 * ListAndWatch streams are open:
 *   1  fk_stop + fk_start at once: the process dies, a new one binds
 *      kubelet.sock (on ext4 often with the old inode number); our sockets
 *      stay (a kubelet that dies before its dir cleanup);
 *   2  fk_stop, the daemon logs that kubelet is gone, then fk_start;
 *   3  fk_restart twice in a row, faster than the daemon follows;
 *   0  fk_restart: streams dropped, the device-plugin dir emptied (our
 *      sockets too), a new kubelet.sock, as a real kubelet restart does.
 * A new FakeKubelet counts from zero (returns true); fk_restart keeps
 * counting. *starts gets the number of kubelet starts.
 */
static bool kubelet_cycle(unsigned cycle, unsigned *starts) {
    LogWait w = {"kubelet not there", log_count("kubelet not there")};

    switch (cycle % 4) {
    case 1:
    case 2:
        fk_stop(env.k);
        env.k = NULL;
        if (cycle % 4 == 2)
            assert_true(testns_wait_until(log_count_above, &w, WAIT_MS));
        assert_int_equal(fk_start(env.kubelet, &env.k), 0);
        *starts += 1;
        return true;
    case 3:
        assert_int_equal(fk_restart(env.k), 0);
        assert_int_equal(fk_restart(env.k), 0);
        *starts += 2;
        return false;
    default:
        assert_int_equal(fk_restart(env.k), 0);
        *starts += 1;
        return false;
    }
}

static void test_kubelet_restarts(void **state) {
    unsigned starts = 0, fds1 = 0, fds20, regs_a = 0, regs_b = 0;
    long rss1 = 0, rss20;

    for (unsigned cycle = 1; cycle <= KUBELET_CYCLES; cycle++) {
        /* nothing registered while nothing happened: still one each with
         * the kubelet of the last cycle (or the first), none refused */
        if (fk_registered_now(env.k, RES_A) != 1 || fk_registered_now(env.k, RES_B) != 1 ||
            fk_refused(env.k, RES_A) || fk_refused(env.k, RES_B)) {
            printf("before cycle %u: registered with this kubelet a %u, b %u; refused a %u, b "
                   "%u; the plugin's log:\n",
                   cycle, fk_registered_now(env.k, RES_A), fk_registered_now(env.k, RES_B),
                   fk_refused(env.k, RES_A), fk_refused(env.k, RES_B));
            log_print_registrations();
        }
        assert_int_equal(fk_registered_now(env.k, RES_A), 1);
        assert_int_equal(fk_registered_now(env.k, RES_B), 1);
        assert_int_equal(fk_refused(env.k, RES_A), 0);
        assert_int_equal(fk_refused(env.k, RES_B), 0);
        unsigned a0 = fk_registrations(env.k, RES_A), b0 = fk_registrations(env.k, RES_B);
        if (kubelet_cycle(cycle, &starts))
            a0 = b0 = 0;
        assert_int_equal(fk_wait_registered_now(env.k, RES_A, WAIT_MS), 0);
        assert_int_equal(fk_wait_registered_now(env.k, RES_B, WAIT_MS), 0);
        expect_health_flows(cycle % 2 ? RES_A : RES_B, cycle % 2 ? 0 : 3);
        unsigned a = fk_registrations(env.k, RES_A) - a0, b = fk_registrations(env.k, RES_B) - b0;
        if (a > 1 || b > 1)
            printf("cycle %u (kind %u): registrations a +%u, b +%u (with the kubelets that "
                   "stopped on the way: one each with the last)\n",
                   cycle, cycle % 4, a, b);
        regs_a += a;
        regs_b += b;
        expect_served_once_now();
        if (cycle == 1) {
            fds1 = proc_stable_fd_count(env.plugin, 10);
            rss1 = proc_rss_kb(env.plugin);
        }
    }
    fds20 = proc_stable_fd_count(env.plugin, 10);
    rss20 = proc_rss_kb(env.plugin);
    /* a kubelet stopped while it answered: the daemon registers again with
     * the next one (a fake that counted those took them for doubles) */
    printf("kubelet restarts: %u cycles, %u kubelet starts; registrations a %u, b %u, refused 0, "
           "cut short by a stopping kubelet %u; plugin fds %u -> %u, VmRSS %ld -> %ld kB (after "
           "cycle 1 -> after cycle %u)\n",
           KUBELET_CYCLES, starts, regs_a, regs_b, log_count("kubelet stopped during Register"),
           fds1, fds20, rss1, rss20, KUBELET_CYCLES);
    assert_int_equal(fds20, fds1);
    expect_served_once_now();
    stop_plugin_cleanly();
}

#ifdef RAILGATE_FAILPOINTS
/* The plugin started again so that it stops itself between the stat of
 * kubelet.sock and the connect of a Register (failpoint rpc-pinned-connect,
 * pass 3: 1 and 2 are each tenant's first Register, 3 tenant a's after its
 * socket is removed, as kubelet's start removes the plugins' sockets before
 * its own). Its pid, stopped there. */
static pid_t plugin_held_in_register(void) {
    char path[256];
    unsigned a0, b0;
    int status;
    pid_t pid;

    stop_plugin_cleanly();
    a0 = fk_registrations(env.k, RES_A);
    b0 = fk_registrations(env.k, RES_B);
    setenv("RAILGATE_FAILPOINT", "rpc-pinned-connect@3=pause", 1);
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    unsetenv("RAILGATE_FAILPOINT");
    pid = env.plugin;
    assert_int_equal(fk_wait_registered(env.k, RES_A, a0 + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, b0 + 1, WAIT_MS), 0);
    tenant_sock("a", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    return pid;
}
#endif

/*
 * A Register is pinned to the kubelet.sock it aimed at. The race behind a
 * double registration: a tenant rebinds (kubelet wiped its socket) while the
 * old kubelet.sock is still there, and its Register connects while kubelet
 * is being replaced; a call that followed the path (waiting for ready) could
 * reach the new kubelet before the plugin reads the new socket's creation,
 * and register again after it, which a real kubelet refuses ("device plugin
 * already connected"), dropping the resource. Held open between the stat
 * and the connect (the plugin stops there, kubelet restarts, the plugin goes
 * on): the connect reaches another socket than the one stat'ed, is given up
 * (logged), and each tenant registers with the new kubelet exactly once.
 * With the call that followed the path, the log line is missing (checked).
 */
static void test_register_races_kubelet_restart(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    pid_t pid = plugin_held_in_register();
    unsigned a0 = fk_registrations(env.k, RES_A), b0 = fk_registrations(env.k, RES_B);

    assert_int_equal(fk_restart(env.k), 0);
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a0 + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, b0 + 1, WAIT_MS), 0);
    expect_health_flows(RES_A, 1);
    expect_health_flows(RES_B, 3);
    printf("register raced a kubelet restart: registrations with the new kubelet a +%u, b +%u\n",
           fk_registrations(env.k, RES_A) - a0, fk_registrations(env.k, RES_B) - b0);
    assert_int_equal(fk_registrations(env.k, RES_A), a0 + 1);
    assert_int_equal(fk_registrations(env.k, RES_B), b0 + 1);
    assert_true(log_count("was replaced while connecting") >= 1);
    expect_served(a0 + 1, b0 + 1, true);
    stop_plugin_cleanly();
#endif
}

/*
 * kubelet.sock's attributes changing (a chmod, a chown, a relabel: its
 * ctime) do not make it another kubelet. A tenant rebinds while kubelet
 * stays, and its Register is held between the stat of kubelet.sock and the
 * connect while the socket is chmod'ed: the Register goes on to the same
 * kubelet, once, nothing is refused. With ctime in the socket's identity the
 * connect gave it up for a replaced socket, and a chmod after the connect
 * made the daemon take the socket's creation event for a new kubelet and
 * register the same endpoint again, which kubelet 1.37 refuses ("device
 * plugin already connected"): seen once under TCG in tests/vm, where the
 * fake kubelet chmods its socket right after binding it.
 */
static void test_kubelet_sock_attributes_change(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    pid_t pid = plugin_held_in_register();
    unsigned a0 = fk_registrations(env.k, RES_A), b0 = fk_registrations(env.k, RES_B);
    char path[256];

    dp_path("kubelet.sock", path, sizeof(path));
    assert_int_equal(chmod(path, 0660), 0);
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a0 + 1, WAIT_MS), 0);
    expect_health_flows(RES_A, 1);
    expect_health_flows(RES_B, 3);
    assert_int_equal(log_count("was replaced while connecting"), 0);
    assert_int_equal(fk_refused(env.k, RES_A), 0);
    assert_int_equal(fk_refused(env.k, RES_B), 0);
    expect_served(a0 + 1, b0, true);
    stop_plugin_cleanly();
#endif
}

/* A unix socket bound at the device-plugin dir's file; listening (fd kept,
 * returned) or left behind as a killed process leaves it (-1). */
static int bound_socket(const char *file, bool listening) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    char path[256];

    assert_true(fd >= 0);
    dp_path(file, path, sizeof(path));
    assert_true(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (listening) {
        assert_int_equal(listen(fd, 1), 0);
        return fd;
    }
    close(fd);
    return -1;
}

/* Sockets are named anew at every start; one that a killed plugin left (no
 * listener) is removed at the next start, one that somebody serves stays. */
static void test_stale_sockets_swept(void **state) {
    char path[256];
    int live;

    stop_plugin_cleanly();
    (void)bound_socket("railgate-a-0badf00d.sock", false);
    live = bound_socket("railgate-a-0c0ffee0.sock", true);
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 2, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 2, WAIT_MS), 0);
    assert_int_equal(file_ino("railgate-a-0badf00d.sock"), 0);
    assert_true(file_ino("railgate-a-0c0ffee0.sock") != 0);
    assert_true(log_count("railgate-a-0badf00d.sock: nobody serves it") == 1);
    close(live);
    dp_path("railgate-a-0c0ffee0.sock", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    /* the endpoint kubelet has is the name this start made */
    tenant_sock("a", path, sizeof(path));
    assert_string_equal(strrchr(path, '/') + 1, fk_endpoint(env.k, RES_A));
    expect_served(2, 2, true);
    stop_plugin_cleanly();
}

/* ---- 2: device-plugin dir wiped, kubelet.sock recreated ---- */

/* Both tenants logged a rebind more than before times, and serve again.
 * (Inode numbers do not tell: ext4 hands a freed one to the next socket.) */
typedef struct Rebind {
    const char *needle;
    unsigned before;
} Rebind;

static bool sockets_rebound(void *arg) {
    const Rebind *r = arg;

    return log_count(r->needle) >= r->before + 2 && tenant_serving("a") && tenant_serving("b");
}

static void wipe_dp_dir(void) {
    char dir[256], path[512];
    struct dirent *de;

    snprintf(dir, sizeof(dir), "%s/device-plugins", env.kubelet);
    DIR *d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)))
        if (de->d_type != DT_DIR) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            /* the daemon may have rebound meanwhile */
            assert_true(unlink(path) == 0 || errno == ENOENT);
        }
    closedir(d);
}

static void test_socket_dir_wiped(void **state) {
    Rebind rb = {"our socket is gone: rebinding", log_count("our socket is gone: rebinding")};

    assert_true(tenant_serving("a") && tenant_serving("b") && file_ino("kubelet.sock"));
    /* everything goes, kubelet.sock included: kubelet is unreachable */
    wipe_dp_dir();
    /* the daemon serves again on new sockets before kubelet is back */
    assert_true(testns_wait_until(sockets_rebound, &rb, WAIT_MS));
    assert_int_equal(file_ino("kubelet.sock"), 0);
    /* kubelet.sock recreated: a new kubelet process binds it */
    fk_stop(env.k);
    env.k = NULL;
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 1, WAIT_MS), 0);
    expect_health_flows(RES_A, 1);
    unsigned a = fk_registrations(env.k, RES_A), b = fk_registrations(env.k, RES_B);
    printf("socket dir wiped: registrations with the new kubelet a %u, b %u\n", a, b);
    expect_served(a, b, true);
    assert_endpoint(RES_A, "a");
    assert_endpoint(RES_B, "b");
    stop_plugin_cleanly();
}

/* ---- 3: a rail NIC deleted and recreated under the same name ---- */

static void test_nic_recreated(void **state) {
    Link before, after;

    for (unsigned round = 0; round < 3; round++) {
        assert_int_equal(testns_link_get("rail-nic1", &before), 0);
        assert_int_equal(testns_rail_del(1), 0);
        assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", false, WAIT_MS), 0);
        assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", true, 0), 0);
        assert_int_equal(testns_kind_link_add("rail-nic1", "rail-peer1"), 0);
        assert_int_equal(testns_link_get("rail-nic1", &after), 0);
        assert_int_not_equal(after.ifindex, before.ifindex); /* a new link, same name */
        /* down, then up without carrier, then carrier: healthy only then */
        assert_int_equal(testns_rail_carrier(1, false), 0);
        assert_int_equal(testns_link_set_up("rail-nic1", true), 0);
        assert_int_equal(testns_rail_carrier(1, true), 0);
        assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", true, WAIT_MS), 0);
        /* the new link is followed: its flaps show too */
        expect_health_flows(RES_A, 1);
    }
    expect_served(1, 1, true); /* a NIC is not a reason to register again */
    stop_plugin_cleanly();
}

/* ---- 4: SIGHUP ---- */

/* Tenant a takes rails 0-2, b only rail 3. */
static void rewrite_config_split_3_1(void) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = fopen(env.config, "re");

    assert_non_null(f);
    assert_true(getdelim(&text, &n, '\0', f) > 0);
    fclose(f);
    char *a = strstr(text, "\"rails\": [0, 1]"), *b = strstr(text, "\"rails\": [2, 3]");
    assert_non_null(a);
    assert_non_null(b);
    f = fopen(env.config, "we");
    assert_non_null(f);
    fprintf(f, "%.*s\"rails\": [0, 1, 2]%.*s\"rails\": [3]%s", (int)(a - text), text,
            (int)(b - (a + strlen("\"rails\": [0, 1]"))), a + strlen("\"rails\": [0, 1]"),
            b + strlen("\"rails\": [2, 3]"));
    assert_int_equal(fclose(f), 0);
    free(text);
}

/*
 * README: "SIGHUP rebinds and re-registers every tenant"; it does not re-read
 * the node config, a config change needs a restart. Both are checked: a
 * SIGHUP gives one new registration per tenant on new sockets with the old
 * units; the restart serves the new split.
 */
static void test_sighup(void **state) {
    Rebind rb = {"restarting server", log_count("restarting server")};

    assert_int_equal(kill(env.plugin, SIGHUP), 0);
    assert_true(testns_wait_until(sockets_rebound, &rb, WAIT_MS));
    expect_served(2, 2, true);

    /* a config change and SIGHUP: the old config is served still */
    rewrite_config_split_3_1();
    rb.before = log_count("restarting server");
    assert_int_equal(kill(env.plugin, SIGHUP), 0);
    assert_true(testns_wait_until(sockets_rebound, &rb, WAIT_MS));
    expect_served(3, 3, true);
    expect_health_flows(RES_B, 2);
    expect_served(3, 3, true);

    /* the restart README asks for applies it */
    stop_plugin_cleanly();
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    static const char *const new_a[] = {"rail0", "rail1", "rail2"}, *const new_b[] = {"rail3"};
    assert_int_equal(fk_wait_registered(env.k, RES_A, 4, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 4, WAIT_MS), 0);
    expect_kubelet_list(RES_A, new_a, 3);
    expect_kubelet_list(RES_B, new_b, 1);
    expect_fresh_list("a", new_a, 3);
    expect_fresh_list("b", new_b, 1);
    assert_int_equal(fk_registrations(env.k, RES_A), 4);
    assert_int_equal(fk_registrations(env.k, RES_B), 4);
    stop_plugin_cleanly();
}

/* ---- 6: waiting for kubelet costs nothing ---- */

/* utime + stime of pid, in seconds (reported, not asserted: under QEMU's
 * TCG on a loaded host a guest's CPU time runs on while the host has the
 * vCPU descheduled, and the first run of any code pays its translation). */
static double cpu_seconds(pid_t pid) {
    char path[64], buf[1024];
    unsigned long utime = 0, stime = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* after the command name: state is field 3, utime 14, stime 15 */
    char *q = strrchr(buf, ')');
    assert_non_null(q);
    assert_int_equal(
        sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime), 2);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct Thread {
    pid_t tid;
    char comm[16];
    unsigned long woken; /* voluntary context switches: blocked, then woken */
    char state;          /* R, S, D, ... */
} Thread;

/* A line "<key>:\t<value>" of a /proc status file, as a number. */
static bool status_number(const char *path, const char *key, unsigned long *ret) {
    FILE *f = fopen(path, "re");
    char line[256];
    size_t n = strlen(key);
    bool found = false;

    while (f && !found && fgets(line, sizeof(line), f))
        found =
            strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%lu", ret) == 1;
    if (f)
        fclose(f);
    return found;
}

/* The "State:" line of a /proc status file: its letter. */
static bool status_state(const char *path, char *ret) {
    FILE *f = fopen(path, "re");
    char line[256];
    bool found = false;

    while (f && !found && fgets(line, sizeof(line), f))
        found = sscanf(line, "State: %c", ret) == 1;
    if (f)
        fclose(f);
    return found;
}

/* Every thread of pid: its state, how often it was woken so far. */
static size_t threads(pid_t pid, Thread *t, size_t max) {
    char path[96];
    struct dirent *de;
    size_t n = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d)) && n < max) {
        if (de->d_name[0] == '.')
            continue;
        Thread *x = &t[n];
        x->tid = (pid_t)atoi(de->d_name);
        snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)x->tid);
        FILE *f = fopen(path, "re");
        if (!f || !fgets(x->comm, sizeof(x->comm), f)) {
            if (f)
                fclose(f);
            continue; /* it ended meanwhile */
        }
        fclose(f);
        x->comm[strcspn(x->comm, "\n")] = 0;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)x->tid);
        if (status_state(path, &x->state) &&
            status_number(path, "voluntary_ctxt_switches", &x->woken))
            n++;
    }
    closedir(d);
    return n;
}

/* The daemon's main thread asleep (state S) in its loop's poll(): what the
 * last event asked for is done. A loop that spins (a poll() that returns at
 * once) is never found so. */
static bool main_loop_asleep(void *arg) {
    char path[96], buf[512], state = 0;
    long nr = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)env.plugin, (int)env.plugin);
    f = fopen(path, "re");
    if (!f)
        return false;
    if (fscanf(f, "%ld", &nr) != 1)
        nr = -1;
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)env.plugin, (int)env.plugin);
    f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *q = strrchr(buf, ')');
    if (q && q[1] == ' ')
        state = q[2];
#ifdef SYS_poll
    if (nr == SYS_poll)
        return state == 'S';
#endif
    return nr == SYS_ppoll && state == 'S';
}

typedef struct Idle {
    unsigned own;       /* wakeups of the daemon's own threads (own_thread) */
    char own_woken[64]; /* which of them woke */
    unsigned other_max; /* the most of any other thread (gRPC core's, named by it) */
    char other[16];     /* which */
    bool asleep_after;  /* the main loop asleep in poll() again after it */
    double cpu;         /* share of a core, reported only */
} Idle;

/* The daemon's own threads: its main loop (the program's name) and the
 * threads it names "rg-..." (node agent, Register, ...), but not the thread
 * that drains a gRPC server's completion queue, which gRPC core wakes now
 * and then for its own bookkeeping, as it does its timer threads. */
static bool own_thread(const char *comm, const char *main_comm) {
    return streq(comm, main_comm) ||
           (strncmp(comm, "rg-", 3) == 0 && !streq(comm, "rg-grpc-server"));
}

static void note_woken(Idle *idle, const char *comm) {
    size_t n = strlen(idle->own_woken), k = strlen(comm);

    /* a whole entry ("rg-agent" is in "rg-agent-work" but is another thread) */
    for (const char *p = idle->own_woken; (p = strstr(p, comm)); p += k)
        if ((p == idle->own_woken || p[-1] == ',') && (p[k] == ',' || p[k] == 0))
            return;
    snprintf(idle->own_woken + n, sizeof(idle->own_woken) - n, "%s%s", n ? "," : "", comm);
}

/* The threads of the daemon as they were when its own were all found asleep. */
typedef struct Snapshot {
    Thread t[THREADS_MAX];
    size_t n;
    const char *own; /* the main thread's name, in t */
} Snapshot;

/*
 * The main loop asleep in its poll() and every other thread of the daemon's
 * own asleep too (state S): a thread created at start-up that has not yet
 * run to its first wait (R: under load, it may not have been scheduled
 * since), or one preempted on its way there, would count the waits it
 * reaches later as wakeups.
 */
static bool daemon_asleep(void *arg) {
    Snapshot *s = arg;

    if (!main_loop_asleep(NULL))
        return false;
    s->n = threads(env.plugin, s->t, THREADS_MAX);
    s->own = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].tid == env.plugin)
            s->own = s->t[i].comm;
    if (!s->own)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (own_thread(s->t[i].comm, s->own) && s->t[i].state != 'S')
            return false;
    return true;
}

/*
 * How often the plugin's threads were woken over IDLE_MS of nothing
 * happening (a window in which nothing may happen, not a wait), counted
 * from the moment its threads all sleep. Wakeups do not depend on how fast
 * the machine is; a poll loop shows as many of them.
 */
static Idle idle_wakeups(void) {
    static Snapshot s; /* big: not on the stack */
    Thread b[THREADS_MAX];
    Idle idle = {0};

    assert_true(testns_wait_until(daemon_asleep, &s, WAIT_MS));
    const Thread *a = s.t;
    const char *own = s.own;
    size_t na = s.n;
    double c0 = cpu_seconds(env.plugin), t0 = now_us();
    (void)poll(NULL, 0, IDLE_MS);
    double c1 = cpu_seconds(env.plugin), t1 = now_us();
    size_t nb = threads(env.plugin, b, THREADS_MAX);
    /* woken by an event at the end, it is asleep again soon; spinning, never */
    idle.asleep_after = testns_wait_until(main_loop_asleep, NULL, WAIT_MS);
    idle.cpu = (c1 - c0) / ((t1 - t0) / 1e6);
    for (size_t i = 0; i < nb; i++) {
        unsigned long before = 0; /* a thread that started meanwhile: all of it */
        for (size_t k = 0; k < na; k++)
            if (a[k].tid == b[i].tid)
                before = a[k].woken;
        unsigned d = (unsigned)(b[i].woken - before);
        if (own_thread(b[i].comm, own)) {
            idle.own += d;
            if (d)
                note_woken(&idle, b[i].comm);
        } else if (d > idle.other_max) {
            idle.other_max = d;
            snprintf(idle.other, sizeof(idle.other), "%s", b[i].comm);
        }
    }
    return idle;
}

/* Asleep: the daemon's threads woken at most own_max times in the window
 * (0: the main loop slept in one poll() throughout, so it cannot have spun
 * or polled, and so did the node agent's threads), the main loop asleep again after it (a loop that
 * spins on a poll() that returns at once is never found asleep), and no other thread woken more
 * than ten times a second (gRPC core's timers: well below that; a poll loop: well above). */
static void assert_asleep(const Idle *idle, unsigned own_max) {
    assert_true(idle->asleep_after);
    assert_true(idle->own <= own_max);
    assert_true(idle->other_max <= IDLE_MS / 100);
}

static bool log_says_waiting(void *arg) {
    return log_count("kubelet not there") > 0;
}

static void rmdir_kubelet(const char *sub) {
    char path[256];

    snprintf(path, sizeof(path), "%s%s%s", env.kubelet, sub ? "/" : "", sub ? sub : "");
    assert_int_equal(rmdir(path), 0);
}

/* The plugin started again with kubelet away (and its dirs too, if no_dirs). */
static void restart_plugin_without_kubelet(bool no_dirs) {
    stop_plugin_cleanly();
    if (no_dirs) {
        rmdir_kubelet("device-plugins");
        rmdir_kubelet("pod-resources");
        rmdir_kubelet(NULL);
    }
    assert_int_equal(unlink(env.log) == 0 || errno == ENOENT, 1);
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    assert_true(testns_wait_until(log_says_waiting, NULL, WAIT_MS));
}

static bool tenants_serving(void *arg) {
    return tenant_serving("a") && tenant_serving("b");
}

static void print_idle(const char *what, const Idle *idle) {
    printf("%s: the daemon's threads woken %u times in %d ms (%s), the most of any other %u "
           "(%s); %.4f of a core\n",
           what, idle->own, IDLE_MS, idle->own_woken[0] ? idle->own_woken : "none", idle->other_max,
           idle->other[0] ? idle->other : "none", idle->cpu);
}

/*
 * README: while kubelet is away the daemon waits (inotify, backoff), it does
 * not poll. Counted in wakeups, from the moment its loop sleeps: kubelet's
 * socket missing (its tenants serving), then its dirs missing too; then
 * kubelet comes and both tenants register once. (CPU seconds over elapsed
 * seconds, asserted before, measured under TCG the end of the daemon's
 * start-up and the host's load: 0.13-0.28 of a core for a daemon that
 * strace shows asleep in one poll() the whole time.)
 */
static void test_waiting_costs_nothing(void **state) {
    fk_stop(env.k);
    env.k = NULL;
    restart_plugin_without_kubelet(false);
    assert_true(testns_wait_until(tenants_serving, NULL, WAIT_MS));
    Idle no_socket = idle_wakeups();
    restart_plugin_without_kubelet(true);
    Idle no_dir = idle_wakeups();
    print_idle("waiting for kubelet, kubelet.sock missing", &no_socket);
    print_idle("waiting for kubelet, its dirs missing", &no_dir);
    assert_asleep(&no_socket, 0);
    assert_asleep(&no_dir, 0);
    /* the dirs and the socket appear: registered once, no backoff sat out */
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
    expect_health_flows(RES_B, 2);
    expect_served(1, 1, true);
    stop_plugin_cleanly();
}

/* ---- 7: kubelet restarts with gaps: one Register each, no stream closed ---- */

typedef struct Regs {
    unsigned a, b;
} Regs;

static bool registered_both(void *arg) {
    const Regs *want = arg;

    return fk_registrations(env.k, RES_A) >= want->a && fk_registrations(env.k, RES_B) >= want->b;
}

/*
 * kubelet restarts GAP_RESTARTS times, kubelet.sock away for 0 to ~500 ms
 * each time. Every start gets exactly one Register per tenant that kubelet
 * sees, and the daemon counts exactly one kubelet start (its log line is
 * written on the main thread before the health flap that serves as
 * barrier: a stale event after it would be one more); kubelet never sees a
 * stream of its current registration end. (An attempt that finds
 * kubelet.sock bound but not yet listening is refused before kubelet sees
 * anything, and retried.)
 */
static void test_restart_gaps(void **state) {
    double ms[GAP_RESTARTS];
    unsigned a0 = fk_registrations(env.k, RES_A), b0 = fk_registrations(env.k, RES_B);
    unsigned starts0 = log_count("kubelet is up");
    unsigned max_gap = 0;

    for (unsigned i = 0; i < GAP_RESTARTS; i++) {
        unsigned gap = (i * 97) % 520;
        Regs want = {a0 + i + 1, b0 + i + 1};

        max_gap = gap > max_gap ? gap : max_gap;

        assert_int_equal(fk_restart_gap(env.k, gap), 0);
        double t0 = now_us();
        assert_true(testns_wait_until(registered_both, &want, WAIT_MS));
        ms[i] = (now_us() - t0) / 1000.0;
        assert_int_equal(fk_wait_registered(env.k, RES_A, want.a, WAIT_MS), 0);
        assert_int_equal(fk_wait_registered(env.k, RES_B, want.b, WAIT_MS), 0);
        expect_health_flows(i % 2 ? RES_A : RES_B, i % 2 ? 0 : 3);
        assert_int_equal(fk_registrations(env.k, RES_A), want.a);
        assert_int_equal(fk_registrations(env.k, RES_B), want.b);
        assert_int_equal(fk_streams_lost(env.k, RES_A), 0);
        assert_int_equal(fk_streams_lost(env.k, RES_B), 0);
        assert_int_equal(log_count("kubelet is up"), starts0 + i + 1);
    }
    expect_served(a0 + GAP_RESTARTS, b0 + GAP_RESTARTS, true);
    assert_int_equal(fk_streams_lost(env.k, RES_A), 0);
    assert_int_equal(fk_streams_lost(env.k, RES_B), 0);
    double med = percentile(ms, GAP_RESTARTS, 50), p99 = percentile(ms, GAP_RESTARTS, 99);
    printf("restart gaps: %u kubelet starts (kubelet.sock away 0-%u ms), registrations a %u, "
           "b %u, streams closed by the plugin 0; re-registration (new kubelet.sock to both "
           "Registers seen) median %.1f ms, p99 %.1f ms\n",
           GAP_RESTARTS, max_gap, fk_registrations(env.k, RES_A) - a0,
           fk_registrations(env.k, RES_B) - b0, med, p99);
    stop_plugin_cleanly();
}

/* ---- 8: SIGTERM while kubelet hangs in Register ---- */

/* A kubelet.sock that accepts connections into its backlog and never says a
 * word: every Register hangs until its deadline. */
static int hung_kubelet(void) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char path[256];

    assert_true(fd >= 0);
    dp_path("kubelet.sock", path, sizeof(path));
    assert_true(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 64), 0);
    return fd;
}

/* A Register connected: its connection waits in the backlog, never accepted. */
static bool connection_pending(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, WAIT_MS) == 1 && (p.revents & POLLIN);
}

/*
 * Register runs off the main thread: with Register hanging, SIGTERM is
 * answered at once, not after up to tenants x DP_REGISTER_TIMEOUT_MS.
 * The daemon exits 0 with its sockets removed, its log saying that both
 * Registers were cancelled and neither ran into its deadline (no clock
 * read: a slow machine takes longer, never differently).
 */
static void test_sigterm_while_kubelet_hangs(void **state) {
    _cleanup_close_ int fd = -EBADF;
    char path[256];

    stop_plugin_cleanly();
    fk_stop(env.k);
    env.k = NULL;
    fd = hung_kubelet();
    assert_int_equal(unlink(env.log), 0);
    assert_int_equal(dpenv_plugin_start(&env, NULL), 0);
    assert_true(connection_pending(fd));
    double t0 = now_us();
    pid_t pid = env.plugin;
    env.plugin = 0;
    assert_int_equal(proc_stop(pid, 3 * DP_REGISTER_TIMEOUT_MS), 0);
    double waited_ms = (now_us() - t0) / 1000.0;
    printf("SIGTERM while kubelet hangs in Register: exited 0 after %.0f ms (deadline %d ms)\n",
           waited_ms, DP_REGISTER_TIMEOUT_MS);
    assert_int_equal(log_count("with kubelet failed"), 0);
    /* both Registers were cancelled, neither ran into its deadline */
    assert_int_equal(log_count("with kubelet cancelled: shutting down"), 2);
    assert_int_equal(log_count("with kubelet ended while shutting down"), 0);
    assert_false(tenant_serving("a"));
    assert_false(tenant_serving("b"));
    dp_path("kubelet.sock", path, sizeof(path));
    (void)unlink(path);
}

/* ---- 9: the units dir recreated: markers still followed ---- */

static void units_dir_remove(void) {
    char dir[256], path[512];
    struct dirent *de;

    snprintf(dir, sizeof(dir), "%s/units", env.state);
    DIR *d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            assert_int_equal(unlink(path), 0);
        }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

/*
 * The CNI's markers say "NIC in a pod: read it there". The units dir removed
 * and made again (state dir cleanup): a marker that goes and comes
 * afterwards still turns the unit of a NIC gone from the host unhealthy and
 * healthy again (read in its pod). No link event comes meanwhile: only the
 * dir watch can tell.
 */
static void test_units_dir_recreated(void **state) {
    char path[128], key[STATE_KEY_MAX + 1];
    int fd = -EBADF;

    units_dir_remove();
    assert_int_equal(state_dir_ensure(env.state), 0);
    assert_int_equal(state_key("test-pod", "eth0", key, sizeof(key)), 0);
    assert_int_equal(dpenv_pod_take_or_skip(&env, "test-pod", 3, path, sizeof(path), &fd), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, WAIT_MS), 0);
    assert_int_equal(state_unit_release(env.state, "rail3", key), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", false, WAIT_MS), 0);
    assert_int_equal(state_unit_mark(env.state, "rail3", key), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, WAIT_MS), 0);
    assert_int_equal(dpenv_pod_release(&env, "test-pod", "rail3"), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", false, WAIT_MS), 0);
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
    assert_int_equal(dpenv_rail_remake(3), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, WAIT_MS), 0);
    expect_served(1, 1, true);
    stop_plugin_cleanly();
}

/* ---- 10: link events lost while the daemon was stopped ---- */

#define FLAPS 3000

/*
 * The daemon stopped (SIGSTOP) while a rail NIC flaps FLAPS times: the
 * kernel drops link events and flags the socket with ENOBUFS (POLLERR). On
 * SIGCONT the daemon re-reads every rail, serves the true state, and goes
 * back to sleep. (Here events are queued too, POLLIN with POLLERR; the
 * daemon also reads on POLLERR alone, which no test can bring about on
 * purpose: the kernel flags an overrun only while the queue is full.)
 */
static void test_link_event_overrun(void **state) {
    assert_int_equal(kill(env.plugin, SIGSTOP), 0);
    for (unsigned i = 0; i < FLAPS; i++)
        assert_int_equal(testns_link_set_up("rail-nic1", i % 2 == 0), 0);
    /* it ends down */
    assert_int_equal(kill(env.plugin, SIGCONT), 0);
    LogWait w = {"link events lost", 0};
    assert_true(testns_wait_until(log_count_above, &w, WAIT_MS));
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", false, WAIT_MS), 0);
    /* events are handled in order: once a flap after them shows, the queue
     * of the 3000 is read */
    expect_health_flows(RES_A, 0);
    Idle idle = idle_wakeups();
    print_idle("link events lost, re-read, then idle", &idle);
    /* asleep; the kernel may still report carrier and operstate changes of
     * the flapped links (its linkwatch runs up to a second late, later
     * under TCG), each a wakeup of the loop: a few, never a poll loop's */
    assert_asleep(&idle, IDLE_MS / 100);
    assert_int_equal(testns_link_set_up("rail-nic1", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", true, WAIT_MS), 0);
    expect_served(1, 1, true);
    stop_plugin_cleanly();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kubelet_restarts, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_register_races_kubelet_restart, node_setup,
                                        node_teardown),
        cmocka_unit_test_setup_teardown(test_kubelet_sock_attributes_change, node_setup,
                                        node_teardown),
        cmocka_unit_test_setup_teardown(test_stale_sockets_swept, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_socket_dir_wiped, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_nic_recreated, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_sighup, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_waiting_costs_nothing, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_restart_gaps, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_while_kubelet_hangs, node_setup,
                                        node_teardown),
        cmocka_unit_test_setup_teardown(test_units_dir_recreated, node_setup, node_teardown),
        cmocka_unit_test_setup_teardown(test_link_event_overrun, node_setup, node_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
