/* SPDX-License-Identifier: Apache-2.0 */
/* The node's own NICs as the kernel shows them, in a throwaway namespace: default routes,
 * addresses. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "discover.h"
#include "netlink.h"
#include "proc.h"
#include "testns.h"

#define FIXTURE(name) RAILGATE_FIXTURES "/topology/" name
#define WAIT_MS 10000

static char root[64];

/* ip route add default via gw dev dev [table main] (family from gw). */
static int route_default_add(const char *dev, const char *gw) {
    struct nl_sock *sk = nl_socket_alloc();
    struct rtnl_route *rt = rtnl_route_alloc();
    struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
    struct nl_addr *dst = NULL, *via = NULL;
    int family = strchr(gw, ':') ? AF_INET6 : AF_INET;
    int r = -ENOMEM;

    if (!sk || !rt || !nh)
        goto out;
    r = nl_connect(sk, NETLINK_ROUTE);
    r = r ?: nl_addr_parse(family == AF_INET ? "0.0.0.0/0" : "::/0", family, &dst);
    r = r ?: nl_addr_parse(gw, family, &via);
    if (r < 0)
        goto out;
    rtnl_route_set_family(rt, (uint8_t)family);
    rtnl_route_set_table(rt, RT_TABLE_MAIN);
    rtnl_route_set_dst(rt, dst);
    rtnl_route_nh_set_ifindex(nh, (int)if_nametoindex(dev));
    rtnl_route_nh_set_gateway(nh, via);
    rtnl_route_add_nexthop(rt, nh);
    nh = NULL; /* the route owns it */
    r = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL);
out:
    nl_addr_put(dst);
    nl_addr_put(via);
    if (nh)
        rtnl_route_nh_free(nh);
    rtnl_route_put(rt);
    nl_socket_free(sk);
    return r < 0 ? netlink_errno(r) : 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

/*
 * A node in a private namespace: eth0 (the uplink: 192.0.2.10/24, default
 * route via 192.0.2.1, as on the H100 VM), mgmt0 (a node address, no
 * route), rail-nic0 (nothing: a rail, of the kind the harness names,
 * testns.h); eth0 and mgmt0 are veths. The namespace and its links go when
 * the test process exits.
 */
static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(testns_veth_add("eth0", "eth0-peer"), 0);
    assert_int_equal(testns_veth_add("mgmt0", "mgmt0-peer"), 0);
    assert_int_equal(testns_rail_add(0), 0);
    assert_int_equal(testns_link_set_up("eth0", true), 0);
    assert_int_equal(testns_link_set_up("eth0-peer", true), 0);
    assert_int_equal(testns_link_set_up("mgmt0", true), 0);
    assert_int_equal(testns_addr_add("eth0", "192.0.2.10/24"), 0);
    assert_int_equal(testns_addr_add("mgmt0", "198.51.100.7/24"), 0);
    assert_int_equal(route_default_add("eth0", "192.0.2.1"), 0);
    snprintf(root, sizeof(root), "/tmp/rg-nodenics-XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int group_teardown(void **state) {
    if (root[0])
        nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static const NodeNic *find(const NodeNic *v, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static void test_node_nics_from_kernel(void **state) {
    NodeNic *v = NULL;
    size_t n = 0;

    assert_int_equal(node_nics_list(&v, &n), 0);
    const NodeNic *eth0 = find(v, n, "eth0"), *mgmt0 = find(v, n, "mgmt0");
    assert_non_null(eth0);
    assert_int_equal(eth0->uses, NODE_NIC_DEFAULT_ROUTE | NODE_NIC_ADDRESS);
    assert_non_null(mgmt0);
    assert_int_equal(mgmt0->uses, NODE_NIC_ADDRESS);
    assert_null(find(v, n, "rail-nic0"));
    assert_null(find(v, n, "eth0-peer"));
    assert_null(find(v, n, "lo")); /* 127.0.0.1 and ::1 are host scope */
    free(v);
}

/* An IPv6 default route alone marks its device too. */
static void test_ipv6_default_route(void **state) {
    NodeNic *v = NULL;
    size_t n = 0;

    assert_int_equal(testns_link_set_up("rail-nic0", true), 0);
    assert_int_equal(route_default_add("rail-nic0", "fe80::1"), 0);
    assert_int_equal(node_nics_list(&v, &n), 0);
    const NodeNic *r = find(v, n, "rail-nic0");
    assert_non_null(r);
    assert_int_equal(r->uses, NODE_NIC_DEFAULT_ROUTE);
    free(v);
    /* the link goes, and the route with it */
    assert_int_equal(testns_rail_del(0), 0);
    assert_int_equal(testns_rail_add(0), 0);
    assert_int_equal(node_nics_list(&v, &n), 0);
    assert_null(find(v, n, "rail-nic0"));
    free(v);
}

static void write_config(const char *path) {
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    fprintf(f,
            "{\"sysfsRoot\": \"%s\", \"procRoot\": \"%s\", \"devRoot\": \"%s\",\n"
            " \"kubeletDir\": \"%s/kubelet\", \"stateDir\": \"%s/state\",\n"
            " \"discovery\": {\"enabled\": true, \"maxDistance\": \"system\"},\n"
            " \"rails\": [{\"index\": 0}],\n"
            " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],\n"
            "   \"vrf\": {\"table\": 100}}]}\n",
            root, root, root, root, root);
    assert_int_equal(fclose(f), 0);
}

typedef struct LogWait {
    const char *path, *needle;
} LogWait;

static bool log_has(void *arg) {
    const LogWait *w = arg;

    return file_contains(w->path, w->needle);
}

/*
 * The H100 VM's topology, in a namespace where eth0 is the uplink: the
 * inventory read from the kernel refuses eth0, and the plugin's
 * --print-inventory says why and exits 1 rather than pair it.
 */
static void test_uplink_refused_live(void **state) {
    char config[128], log[128];
    Inventory *inv = NULL;
    NodeConfig *c = NULL;
    RgError err = {0};
    InventoryOptions o = {.topology_xml = FIXTURE("h100-vm-real.xml")};

    snprintf(config, sizeof(config), "%s/node.json", root);
    snprintf(log, sizeof(log), "%s/plugin.log", root);
    write_config(config);
    assert_int_equal(config_load(config, &c, &err), 0);
    assert_int_equal(inventory_build(c, &o, &inv, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "NIC 0000:00:03.0 (eth0) skipped: it carries the node's "
                                    "default route and a node address"));
    config_free(c);

    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"),
                    "--config",
                    config,
                    "--topology-xml",
                    FIXTURE("h100-vm-real.xml"),
                    "--print-inventory",
                    NULL};
    pid_t pid = proc_spawn(argv, log);
    assert_true(pid > 0);
    LogWait w = {log, "(eth0) skipped: it carries the node's default route"};
    assert_true(testns_wait_until(log_has, &w, WAIT_MS));
    /* SIGTERM is blocked from the start: the exit status is its own */
    assert_int_equal(proc_stop(pid, WAIT_MS), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_nics_from_kernel),
        cmocka_unit_test(test_ipv6_default_route),
        cmocka_unit_test(test_uplink_refused_live),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
