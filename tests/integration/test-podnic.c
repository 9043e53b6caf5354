/* SPDX-License-Identifier: Apache-2.0 */
/* podnic_read against real veth rails moved into namespaces of the test's: where a unit's NIC is
 * in its pod, read from the host by the record's identity, holding nothing there. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "netns.h"
#include "podnic.h"
#include "proc.h"
#include "testns.h"
#include "waitscale.h"

#define WAIT_MS 10000

static Netlink *host; /* the test's private namespace: the node's */

static int group_setup(void **state) {
    (void)state;
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(netlink_open(-1, &host), 0);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    netlink_close(TAKE_PTR(host));
    return 0;
}

/* The identity the CNI records for veth nic (cni/locate.c), its peer read
 * here in the namespace the host names peer_nsid. */
static AttachedNic veth_record(const char *nic, int peer_nsid) {
    AttachedNic n = {.peer_nsid = peer_nsid};
    Link l, peer;

    assert_int_equal(link_get_by_name(host, nic, &l), 0);
    assert_string_equal(l.kind, "veth");
    assert_int_equal(link_get_in(host, l.link, l.link_netnsid, &peer), 0);
    snprintf(n.unit, sizeof(n.unit), "rail0");
    snprintf(n.kind, sizeof(n.kind), "veth");
    n.host_ifindex = l.ifindex;
    n.peer_ifindex = peer.ifindex;
    snprintf(n.peer_name, sizeof(n.peer_name), "%s", peer.name);
    return n;
}

static int ifindex_in(int fd, const char *name) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    Link l;

    assert_int_equal(netlink_open(fd, &nl), 0);
    return link_get_by_name(nl, name, &l) < 0 ? -1 : l.ifindex;
}

typedef struct Gone {
    const AttachedNic *n;
    int r;
} Gone;

static bool read_gone(void *arg) {
    Gone *g = arg;
    Link l;

    g->r = podnic_read(host, g->n, NULL, &l);
    return g->r == -ENODEV;
}

/*
 * A veth rail with its peer on the host, moved into a pod's namespace: found
 * there at its ifindex there, by the id the host has for that namespace;
 * renamed and set down by the pod, still it (down as the pod set it); moved
 * by the pod into a namespace of its own, found there (reading the peer
 * gives that one an id); no fd is left by any read, so the namespace dies
 * once its holder lets go: the pair goes with it, -ENODEV.
 */
static void test_veth(void **state) {
    char pod[128], nest[128];
    int pod_fd = -EBADF, nest_fd = -EBADF, nsid = -1, before;
    PodNicCache c = {0};
    AttachedNic n;
    Link l;

    (void)state;
    assert_int_equal(veth_add(host, "pn-a", "pn-b"), 0);
    assert_int_equal(testns_link_set_up("pn-b", true), 0);
    n = veth_record("pn-a", -1);
    assert_int_equal(testns_named_new("pod", pod, sizeof(pod)), 0);
    assert_int_equal(netns_open(pod, &pod_fd), 0);
    assert_int_equal(testns_link_set_netns("pn-a", pod_fd), 0);
    LinkChange up = LINK_CHANGE_INIT;
    up.state = LINK_SET_UP;
    assert_int_equal(testns_link_change_in(pod_fd, "pn-a", &up), 0);
    assert_int_equal(netlink_nsid(host, pod_fd, &nsid), 0);
    assert_true(nsid >= 0);

    before = proc_fd_count(getpid());
    assert_int_equal(podnic_read(host, &n, &c, &l), 0);
    assert_string_equal(l.name, "pn-a");
    assert_int_equal(l.ifindex, ifindex_in(pod_fd, "pn-a"));
    assert_int_equal(c.nsid, nsid);
    assert_int_equal(c.ifindex, l.ifindex);
    assert_true(link_healthy(&l));

    /* the pod's doing: renamed, down */
    LinkChange down = LINK_CHANGE_INIT;
    down.state = LINK_SET_DOWN;
    assert_int_equal(testns_link_change_in(pod_fd, "pn-a", &down), 0);
    LinkChange rename = LINK_CHANGE_INIT;
    rename.name = "eth9";
    assert_int_equal(testns_link_change_in(pod_fd, "pn-a", &rename), 0);
    assert_int_equal(podnic_read(host, &n, &c, &l), 0);
    assert_string_equal(l.name, "eth9");
    assert_false(l.flags & IFF_UP);
    assert_false(link_healthy(&l));
    assert_int_equal(testns_link_change_in(pod_fd, "eth9", &up), 0);
    /* its peer down on the host: up, no carrier */
    assert_int_equal(testns_link_set_up("pn-b", false), 0);
    assert_int_equal(podnic_read(host, &n, &c, &l), 0);
    assert_true(l.flags & IFF_UP);
    assert_false(link_healthy(&l));
    assert_int_equal(testns_link_set_up("pn-b", true), 0);
    assert_int_equal(proc_fd_count(getpid()), before); /* no read left one */

    /* moved on by the pod into a namespace of its own */
    assert_int_equal(testns_named_new("nest", nest, sizeof(nest)), 0);
    assert_int_equal(netns_open(nest, &nest_fd), 0);
    LinkChange move = LINK_CHANGE_INIT;
    move.netns_fd = nest_fd;
    assert_int_equal(testns_link_change_in(pod_fd, "eth9", &move), 0);
    assert_int_equal(podnic_read(host, &n, &c, &l), 0);
    assert_string_equal(l.name, "eth9");
    assert_int_equal(l.ifindex, ifindex_in(nest_fd, "eth9"));
    assert_int_equal(netlink_nsid(host, nest_fd, &nsid), 0);
    assert_int_equal(c.nsid, nsid);

    /* its namespace gone (the pod's holds nothing of it now): the pair
     * dies with it */
    assert_int_equal(testns_named_remove(nest), 0);
    close(nest_fd);
    Gone g = {&n, 0};
    if (!testns_wait_until(read_gone, &g, wait_scaled_ms(WAIT_MS)))
        fail_msg("the veth still read (%d) after its namespace went", g.r);
    assert_int_equal(link_get_by_name(host, "pn-b", &l), -ENODEV);
    assert_int_equal(testns_named_remove(pod), 0);
    close(pod_fd);
}

/*
 * The e2e's shape: the rail on the node, its peer in a fabric namespace
 * (the record's peer_nsid is that one's id as the node names it). Moved
 * into a pod: found there through the fabric's side.
 */
static void test_veth_fabric_peer(void **state) {
    char fab[128], pod[128];
    int fab_fd = -EBADF, pod_fd = -EBADF, fab_nsid = -1, pod_nsid = -1;
    PodNicCache c = {0};
    AttachedNic n;
    Link l;

    (void)state;
    assert_int_equal(testns_named_new("fab", fab, sizeof(fab)), 0);
    assert_int_equal(netns_open(fab, &fab_fd), 0);
    assert_int_equal(veth_add(host, "pf-a", "pf-b"), 0);
    assert_int_equal(testns_link_set_netns("pf-b", fab_fd), 0);
    assert_int_equal(netlink_nsid(host, fab_fd, &fab_nsid), 0);
    assert_true(fab_nsid >= 0);
    n = veth_record("pf-a", fab_nsid);
    assert_string_equal(n.peer_name, "pf-b");
    assert_int_equal(testns_named_new("pod", pod, sizeof(pod)), 0);
    assert_int_equal(netns_open(pod, &pod_fd), 0);
    assert_int_equal(testns_link_set_netns("pf-a", pod_fd), 0);
    assert_int_equal(netlink_nsid(host, pod_fd, &pod_nsid), 0);
    assert_int_equal(podnic_read(host, &n, &c, &l), 0);
    assert_int_equal(l.ifindex, ifindex_in(pod_fd, "pf-a"));
    assert_int_equal(c.nsid, pod_nsid);
    /* the record naming another peer: not it */
    AttachedNic other = n;
    snprintf(other.peer_name, sizeof(other.peer_name), "pf-x");
    assert_int_equal(podnic_read(host, &other, NULL, &l), -ENODEV);
    assert_int_equal(testns_named_remove(pod), 0);
    close(pod_fd);
    assert_int_equal(testns_named_remove(fab), 0);
    close(fab_fd);
}

/* A record without an identity to follow, and calls without their
 * arguments. */
static void test_no_identity(void **state) {
    AttachedNic n = {.peer_nsid = -1};
    Link l;

    (void)state;
    assert_int_equal(podnic_read(host, &n, NULL, &l), -EOPNOTSUPP);
    snprintf(n.kind, sizeof(n.kind), "veth");
    assert_int_equal(podnic_read(host, &n, NULL, &l), -EOPNOTSUPP); /* no peer recorded */
    assert_int_equal(podnic_read(NULL, &n, NULL, &l), -EINVAL);
    assert_int_equal(podnic_read(host, NULL, NULL, &l), -EINVAL);
    assert_int_equal(podnic_read(host, &n, NULL, NULL), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_veth),
        cmocka_unit_test(test_veth_fabric_peer),
        cmocka_unit_test(test_no_identity),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
