/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink against a kernel's RDMA stack (rdma_rxe: tests/vm/run.sh --module rdma_rxe):
 * the namespace mode read and set, what a second network namespace sees in
 * each mode (nldev and its own sysfs), the kernel refusing to move an rxe
 * device (EOPNOTSUPP), and the rxe device going when its netdev changes
 * namespace. Root, in the initial network namespace (the mode can change only
 * while it is the only one, and rxe devices live there); skipped elsewhere
 * or without rdma_rxe. The mode is set back to what it was at the end.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "netns.h"
#include "rdma.h"
#include "rdmafix.h"
#include "testns.h"

#define NDEV "rgrdma0"
#define RXE "rgrxe0"
#define WAIT_MS 10000

static struct {
    Netlink *nl; /* RDMA netlink in the initial namespace */
    RdmaNetnsMode original;
    bool have_original;
    int other_ns;   /* a second network namespace, held by this fd alone */
    Netlink *other; /* RDMA netlink there (its socket holds the namespace too) */
} F = {.other_ns = -EBADF};

/* ---- fixtures --------------------------------------------------------------- */

static void *new_netns_thread(void *arg) {
    int *fd = arg;

    /* unshare() moves this thread only; the fd keeps the namespace */
    *fd =
        unshare(CLONE_NEWNET) < 0 ? -errno : open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (*fd == -1)
        *fd = -errno;
    return NULL;
}

/* A second network namespace and RDMA netlink in it; closing both ends it. */
static void other_ns_open(void) {
    pthread_t t;
    int fd = -EBADF;

    assert_int_equal(F.other_ns, -EBADF);
    assert_int_equal(pthread_create(&t, NULL, new_netns_thread, &fd), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(fd >= 0);
    F.other_ns = fd;
    assert_int_equal(rdma_open(F.other_ns, &F.other), 0);
}

static void other_ns_close(void) {
    netlink_close(F.other);
    F.other = NULL;
    if (F.other_ns >= 0)
        close(F.other_ns);
    F.other_ns = -EBADF;
}

/* A test that failed half way leaves its namespace for this. */
static int test_teardown(void **state) {
    (void)state;
    other_ns_close();
    return 0;
}

/* ib_core's module parameter is the same variable: "Y" shared, "N" exclusive. */
static char sysfs_param(void) {
    char c = '?';
    int fd = open("/sys/module/ib_core/parameters/netns_mode", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (read(fd, &c, 1) != 1)
            c = '?';
        close(fd);
    }
    return c;
}

static int group_setup(void **state) {
    Link l;

    (void)state;
    rdmafix_require_rxe();
    rdmafix_open(&F.nl, &F.original);
    F.have_original = true;
    /* what a killed run left */
    rdmafix_dev_remove(F.nl, RXE);
    (void)testns_link_del(NDEV);
    assert_int_equal(testns_kind_link_add_as(RAIL_KIND_DUMMY, NDEV, NULL), 0);
    assert_int_equal(testns_link_set_up(NDEV, true), 0);
    assert_int_equal(testns_link_get(NDEV, &l), 0);
    rdmafix_rxe_add(F.nl, RXE, NDEV);
    return 0;
}

/* Whatever failed: the second namespace gone, the device and its netdev
 * removed, the mode the node had. */
static int group_teardown(void **state) {
    (void)state;
    other_ns_close();
    rdmafix_dev_remove(F.nl, RXE);
    (void)testns_link_del(NDEV);
    if (F.have_original)
        rdmafix_mode_restore(F.nl, F.original);
    netlink_close(F.nl);
    F.nl = NULL;
    return 0;
}

/* ---- sysfs of a namespace --------------------------------------------------- */

typedef struct SysfsLook {
    const char *dev;
    bool present;
} SysfsLook;

/* On a thread in the namespace: a sysfs mounted there shows that
 * namespace's view of /sys/class/infiniband. */
static int sysfs_look(void *arg) {
    SysfsLook *s = arg;
    char dir[] = "/tmp/rgtest-rdma-sysfs.XXXXXX", path[128];
    int r;

    if (!mkdtemp(dir))
        return -errno;
    r = testns_sysfs_mount(dir);
    if (r >= 0) {
        snprintf(path, sizeof(path), "%s/class/infiniband/%s", dir, s->dev);
        s->present = access(path, F_OK) == 0;
        (void)testns_named_remove(dir);
    }
    (void)rmdir(dir);
    return r;
}

static bool sysfs_shows_there(int netns_fd, const char *dev) {
    SysfsLook s = {.dev = dev};

    assert_int_equal(netns_run(netns_fd, sysfs_look, &s), 0);
    return s.present;
}

/* The initial namespace's: the system's /sys. */
static bool sysfs_shows_here(const char *dev) {
    char path[128];

    snprintf(path, sizeof(path), "/sys/class/infiniband/%s", dev);
    return access(path, F_OK) == 0;
}

/* ---- the tests -------------------------------------------------------------- */

/* The mode as nldev reads it is ib_core's netns_mode; the kernel's default
 * is shared (unless the boot line set it). */
static void test_mode_read(void **state) {
    RdmaNetnsMode m;
    char cmdline[4096] = "";
    int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);

    (void)state;
    if (fd >= 0) {
        ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);
        cmdline[n > 0 ? n : 0] = 0;
        close(fd);
    }
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    printf("RDMA netns mode at start: %s (ib_core netns_mode %c)\n", rdma_netns_mode_name(m),
           sysfs_param());
    assert_int_equal(sysfs_param(), m == RDMA_NETNS_SHARED ? 'Y' : 'N');
    if (!strstr(cmdline, "netns_mode"))
        assert_int_equal(m, RDMA_NETNS_SHARED);
}

/* Shared: a second namespace lists the device over nldev and in its own
 * sysfs, without its netdev; moving it is refused (EOPNOTSUPP: shared mode);
 * the mode cannot change while that namespace exists (EBUSY). */
static void test_shared(void **state) {
    RdmaNetnsMode m;
    RdmaDevice d;
    RdmaPort p;
    Link l;

    (void)state;
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_SHARED), 0);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &d));
    assert_int_equal(d.n_ports, 1);
    assert_int_equal(rdma_port_get(F.nl, d.index, 1, &p), 0);
    assert_int_equal(testns_link_get(NDEV, &l), 0);
    assert_string_equal(p.ndev_name, NDEV);
    assert_int_equal(p.ndev_index, l.ifindex);
    assert_true(sysfs_shows_here(RXE));

    other_ns_open();
    assert_int_equal(rdma_netns_mode_get(F.other, &m), 0);
    assert_int_equal(m, RDMA_NETNS_SHARED);
    assert_true(rdmafix_dev_listed(F.other, RXE, NULL));
    /* the port's netdev is in another namespace: not named */
    assert_int_equal(rdma_port_get(F.other, d.index, 1, &p), 0);
    assert_int_equal(p.ndev_index, 0);
    assert_string_equal(p.ndev_name, "");
    assert_true(sysfs_shows_there(F.other_ns, RXE));
    printf("shared: %s listed and in /sys/class/infiniband of a second namespace, its netdev not "
           "named there\n",
           RXE);

    assert_int_equal(rdma_dev_move(F.nl, d.index, F.other_ns), -EOPNOTSUPP);
    assert_int_equal(rdma_netns_mode_set(F.nl, RDMA_NETNS_EXCLUSIVE), -EBUSY);
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    assert_int_equal(m, RDMA_NETNS_SHARED);
    printf("shared: move %s -> EOPNOTSUPP; set exclusive with a second namespace -> EBUSY\n", RXE);
    other_ns_close();
}

static void test_set_exclusive(void **state) {
    RdmaNetnsMode m;

    (void)state;
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_EXCLUSIVE), 0);
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    assert_int_equal(m, RDMA_NETNS_EXCLUSIVE);
    assert_int_equal(sysfs_param(), 'N');
    /* the same mode again: no change, no EBUSY even with another namespace */
    other_ns_open();
    assert_int_equal(rdma_netns_mode_set(F.nl, RDMA_NETNS_EXCLUSIVE), 0);
    assert_int_equal(rdma_netns_mode_set(F.nl, RDMA_NETNS_SHARED), -EBUSY);
    other_ns_close();
    printf("exclusive: set and read back (ib_core netns_mode N)\n");
}

/* Exclusive: the device only where it belongs (init_net); rxe refuses to move. */
static void test_exclusive(void **state) {
    RdmaDevice d;
    RdmaNetnsMode m;

    (void)state;
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    assert_int_equal(m, RDMA_NETNS_EXCLUSIVE);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &d));
    other_ns_open();
    assert_int_equal(rdma_netns_mode_get(F.other, &m), 0);
    assert_int_equal(m, RDMA_NETNS_EXCLUSIVE);
    assert_false(rdmafix_dev_listed(F.other, RXE, NULL));
    assert_true(sysfs_shows_here(RXE));
    assert_false(sysfs_shows_there(F.other_ns, RXE));
    printf("exclusive: %s listed in init_net, not in a second namespace (nldev, sysfs)\n", RXE);

    assert_int_equal(rdma_dev_move(F.nl, d.index, F.other_ns), -EOPNOTSUPP);
    assert_true(rdmafix_dev_listed(F.nl, RXE, NULL));
    assert_false(rdmafix_dev_listed(F.other, RXE, NULL));
    printf("exclusive: move %s -> EOPNOTSUPP (rxe cannot change namespace); still in init_net\n",
           RXE);
    other_ns_close();
}

static bool rxe_gone(void *arg) {
    (void)arg;
    return !rdmafix_dev_listed(F.nl, RXE, NULL);
}

/* The netdev changes namespace: rxe unregisters its device (the kernel does
 * it on a workqueue), in init_net and everywhere. */
static void test_netdev_moves(void **state) {

    (void)state;
    assert_true(rdmafix_dev_listed(F.nl, RXE, NULL));
    other_ns_open();
    assert_int_equal(testns_link_set_netns(NDEV, F.other_ns), 0);
    assert_true(testns_wait_until(rxe_gone, NULL, WAIT_MS));
    assert_false(rdmafix_dev_listed(F.other, RXE, NULL));
    printf("exclusive: %s's netdev moved to a second namespace: %s unregistered\n", RXE, RXE);
    other_ns_close();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_mode_read, test_teardown),
        cmocka_unit_test_teardown(test_shared, test_teardown),
        cmocka_unit_test_teardown(test_set_exclusive, test_teardown),
        cmocka_unit_test_teardown(test_exclusive, test_teardown),
        cmocka_unit_test_teardown(test_netdev_moves, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
