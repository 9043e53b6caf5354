/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Link identity as the CNI reads it (lib/net/netlink-link.c), checked against
 * iproute2: parent devices of the node's own links (read only), a veth's
 * peer and the namespace ids that say where each end is (veths: that is what
 * it is about), and ifindex-addressed changes on links of the kind the
 * harness names (testns.h). Root.
 */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cnienv.h"
#include "netlink.h"
#include "macro.h"
#include "netns.h"
#include "strv.h"
#include "testns.h"

/* Runs first, in the namespace the test started in: every link with a
 * parent device has it reported as "<bus>/<device>", as iproute2 shows. */
static void test_parent_matches_iproute2(void **state) {
    json_t *l = ip_json(NULL, "-d link show"), *o;
    _cleanup_free_ Link *v = NULL;
    size_t n = 0, i, checked = 0;

    _cleanup_(netlink_closep) Netlink *nl = NULL;

    assert_non_null(l);
    assert_int_equal(netlink_open(-1, &nl), 0);
    assert_int_equal(link_dump(nl, NULL, &v, &n), 0);
    assert_true(n >= 1);
    json_array_foreach(l, i, o) {
        const char *name = json_string_value(json_object_get(o, "ifname"));
        const char *bus = json_string_value(json_object_get(o, "parentbus"));
        const char *dev = json_string_value(json_object_get(o, "parentdev"));
        char want[128] = "";
        if (bus && dev)
            snprintf(want, sizeof(want), "%s/%s", bus, dev);
        for (size_t k = 0; k < n; k++)
            if (streq(v[k].name, name)) {
                assert_string_equal(v[k].parent, want);
                assert_int_equal(v[k].ifindex,
                                 (int)json_integer_value(json_object_get(o, "ifindex")));
                checked++;
            }
    }
    printf("parent devices: %zu links compared with iproute2\n", checked);
    /* other processes may add or remove links meanwhile: those in both */
    assert_true(checked >= 1);
    json_decref(l);
}

/* A veth with one end in a pod: the host end names the pod by the id the
 * pod has on the host; the pod's end is found by ifindex even when
 * renamed, and a look-alike with the same name is not it. Veths whatever
 * the rail kind: a veth's peer is the subject. */
static void test_veth_peer_and_nsid(void **state) {
    char pod[128];
    _cleanup_close_ int pod_fd = -EBADF, host_fd = -EBADF;
    _cleanup_(netlink_closep) Netlink *host = NULL, *in_pod = NULL;
    Link host_end, pod_end, again, look;
    int id;

    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(testns_named_new("linkid", pod, sizeof(pod)), 0);
    assert_int_equal(netns_open(pod, &pod_fd), 0);
    assert_int_equal(netns_open_current(&host_fd), 0);
    assert_int_equal(netlink_open(-1, &host), 0);
    assert_int_equal(netlink_open(pod_fd, &in_pod), 0);
    assert_int_equal(testns_veth_add("x-host", "x-pod"), 0);
    assert_int_equal(link_get_by_name(host, "x-host", &host_end), 0);
    assert_string_equal(host_end.kind, "veth");
    assert_string_equal(host_end.parent, "");
    assert_int_equal(host_end.link_netnsid, -1); /* both ends here */
    assert_int_equal(testns_link_set_netns("x-pod", pod_fd), 0);
    assert_int_equal(link_get(host, host_end.ifindex, &host_end), 0);
    assert_true(host_end.link_netnsid >= 0);
    assert_int_equal(netlink_nsid(host, pod_fd, &id), 0);
    assert_int_equal(id, host_end.link_netnsid);
    assert_int_equal(link_get_by_name(in_pod, "x-pod", &pod_end), 0);
    assert_int_equal(pod_end.ifindex, host_end.link);
    /* the pod renames it and puts a look-alike under its name */
    const char *ns = strrchr(pod, '/') + 1;
    assert_int_equal(ip_cmd(ns, "link set x-pod name renamed"), 0);
    assert_int_equal(ip_cmd(ns, "link add x-pod type veth peer name decoy-peer"), 0);
    assert_int_equal(link_get(host, host_end.ifindex, &again), 0);
    assert_int_equal(again.link, pod_end.ifindex);
    assert_int_equal(link_get_by_name(in_pod, "x-pod", &look), 0);
    assert_int_not_equal(look.ifindex, again.link);
    assert_int_equal(look.link_netnsid, -1); /* its peer is in the pod */
    /* home by ifindex, under its name; the look-alike stays */
    assert_int_equal(link_move(in_pod, pod_end.ifindex, host, host_fd, "x-back", NULL), 0);
    assert_int_equal(link_get(host, host_end.ifindex, &again), 0);
    assert_int_equal(again.link_netnsid, -1);
    assert_true(ip_has(NULL, "-d link show dev x-back", "veth"));
    assert_int_equal(testns_link_del("x-host"), 0);
    assert_int_equal(link_get(host, host_end.ifindex, &again), -ENODEV);
    assert_int_equal(testns_named_remove(pod), 0);
}

typedef struct RenameUp {
    bool allowed; /* the kernel renames a link that is up (6.2 and later) */
    int taken;    /* renaming an up link to a taken name */
} RenameUp;

/* Renaming the up link at ifindex: to a free name and back, then to the
 * taken name. */
static RenameUp rename_while_up(Netlink *nl, int ifindex, const char *name, const char *taken) {
    LinkChange c = LINK_CHANGE_INIT;
    RenameUp u;
    int r;

    c.name = "y-free";
    r = link_change(nl, ifindex, &c);
    assert_true(r == 0 || r == -EBUSY);
    u.allowed = r == 0;
    if (u.allowed) {
        c.name = name;
        assert_int_equal(link_change(nl, ifindex, &c), 0);
    }
    c.name = taken;
    u.taken = link_change(nl, ifindex, &c);
    return u;
}

/* ifindex-addressed changes on links of the rail kind: rename, MAC, up,
 * address pruning. A taken name is refused with EEXIST while the link is
 * down, on every kernel. While it is up, kernels before 6.2 refuse any
 * rename (EBUSY, Debian's 6.1) and later ones check the name (EEXIST,
 * 6.12): the product renames only links that are down (a move closes the
 * link; a NIC home under another name is taken down first, cni/nic.c). */
static void test_changes_by_ifindex(void **state) {
    static const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    char *keep[] = {"10.9.0.1/24", NULL};
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    LinkChange c = LINK_CHANGE_INIT;
    Link l;

    assert_int_equal(netlink_open(-1, &nl), 0);
    assert_int_equal(testns_kind_link_add("y-a", "y-ap"), 0);
    assert_int_equal(testns_kind_link_add("y-b", "y-bp"), 0); /* holds the name y-b */
    assert_int_equal(link_get_by_name(nl, "y-a", &l), 0);
    /* rename, MAC and up in one request: the kernel renames before it
     * brings the link up */
    c.name = "y-renamed";
    c.mac = mac;
    c.state = LINK_SET_UP;
    assert_int_equal(link_change(nl, l.ifindex, &c), 0);
    assert_int_equal(testns_addr_add("y-renamed", "10.9.0.1/24"), 0);
    assert_int_equal(testns_addr_add("y-renamed", "192.0.2.9/24"), 0);
    assert_int_equal(testns_addr_add("y-renamed", "fd00::9/64"), 0);
    assert_int_equal(addr_prune(nl, l.ifindex, keep), 0);
    assert_true(ip_has(NULL, "link show dev y-renamed", "02:11:22:33:44:55"));
    assert_true(ip_has(NULL, "link show dev y-renamed", "UP"));
    assert_true(ip_has(NULL, "addr show dev y-renamed", "10.9.0.1/24"));
    assert_false(ip_has(NULL, "addr show dev y-renamed", "192.0.2.9"));
    assert_false(ip_has(NULL, "addr show dev y-renamed", "fd00::9"));

    RenameUp up = rename_while_up(nl, l.ifindex, "y-renamed", "y-b");
    printf("renaming an up link: %s; to a taken name: %s\n", up.allowed ? "allowed" : "EBUSY",
           strerror(-up.taken));
    assert_int_equal(up.taken, up.allowed ? -EEXIST : -EBUSY);
    assert_true(ip_has(NULL, "link show dev y-renamed", "UP"));
    c = (LinkChange)LINK_CHANGE_INIT;
    c.state = LINK_SET_DOWN;
    assert_int_equal(link_change(nl, l.ifindex, &c), 0);
    c = (LinkChange)LINK_CHANGE_INIT;
    c.name = "y-b";
    assert_int_equal(link_change(nl, l.ifindex, &c), -EEXIST);
    assert_true(ip_has(NULL, "link show dev y-renamed", "y-renamed"));
    c.name = NULL;
    c.state = LINK_SET_UP;
    assert_int_equal(link_change(nl, 999999, &c), -ENODEV);
    assert_int_equal(testns_kind_link_del("y-renamed", "y-ap"), 0);
    assert_int_equal(testns_kind_link_del("y-b", "y-bp"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parent_matches_iproute2),
        cmocka_unit_test(test_veth_peer_and_nsid),
        cmocka_unit_test(test_changes_by_ifindex),
    };
    testns_require_root();
    (void)testns_rail_kind(); /* 77 when this kernel lacks it */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
