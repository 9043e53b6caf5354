/* linkconf against real veth pairs in throwaway namespaces, with iproute2 as witness. */
#include <errno.h>
#include <limits.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "linkconf.h"
#include "netlink.h"
#include "netns.h"
#include "strv.h"
#include "testns.h"

#define TABLE 1001 /* above 255: needs RTA_TABLE / FRA_TABLE */

static char other_path[PATH_MAX];
static int other_fd = -EBADF, home_fd = -EBADF;

/* iproute2 as an independent witness: does `ip <args>` print needle? */
_printf_(2, 3) static bool ip_shows(const char *needle, const char *fmt, ...) {
    char args[256], cmd[320], out[16384];
    size_t n = 0;
    va_list ap;
    FILE *f;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "ip %s 2>/dev/null", args);
    f = popen(cmd, "r");
    assert_non_null(f);
    n = fread(out, 1, sizeof(out) - 1, f);
    out[n] = 0;
    pclose(f);
    return strstr(out, needle) != NULL;
}

static LinkInfo get(const char *name) {
    LinkInfo l;

    assert_int_equal(link_get_by_name(name, &l), 0);
    return l;
}

static bool present(const char *name) {
    LinkInfo l;

    return link_get_by_name(name, &l) == 0;
}

static void veth(const char *a, const char *b, bool up) {
    assert_int_equal(testns_veth_add(a, b), 0);
    assert_int_equal(testns_link_set_up(a, up), 0);
    assert_int_equal(testns_link_set_up(b, up), 0);
}

/* ---- run inside the other namespace through netns_run() ---- */

static int there_present(void *name) {
    return present(name) ? 0 : -ENODEV;
}

static int there_move_home(void *name) {
    return link_move_to_netns(name, home_fd);
}

static int there_del(void *name) {
    return testns_link_del(name);
}

static int there_veth(void *names) {
    char *const *n = names;

    return testns_veth_add(n[0], n[1]);
}

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(testns_named_new("linkconf", other_path, sizeof(other_path)), 0);
    assert_int_equal(netns_open(other_path, &other_fd), 0);
    assert_int_equal(netns_open_current(&home_fd), 0);
    return 0;
}

static int group_teardown(void **state) {
    close(other_fd);
    close(home_fd);
    return testns_named_remove(other_path) < 0 ? -1 : 0;
}

static void test_move_and_back(void **state) {
    int ifindex;

    veth("lcm0", "lcm1", true);
    ifindex = get("lcm0").ifindex;
    assert_int_equal(link_move_to_netns("lcm0", other_fd), 0);
    assert_false(present("lcm0"));
    assert_true(present("lcm1"));
    assert_int_equal(netns_run(other_fd, there_present, "lcm0"), 0);

    /* the same call, made from inside the other namespace, brings it home */
    assert_int_equal(netns_run(other_fd, there_move_home, "lcm0"), 0);
    assert_int_equal(netns_run(other_fd, there_present, "lcm0"), -ENODEV);
    assert_int_equal(get("lcm0").ifindex, ifindex);
    /* the kernel takes a link down when it changes namespace */
    assert_false(get("lcm0").flags & IFF_UP);

    assert_int_equal(link_move_to_netns("lcnope", other_fd), -ENODEV);
    assert_int_equal(link_move_to_netns("lcm0", -1), -EBADF);
    assert_int_equal(link_move_to_netns(NULL, other_fd), -EINVAL);
    assert_int_equal(testns_link_del("lcm0"), 0);
}

static void test_move_as(void **state) {
    char *names[] = {"lca8", "lca9"};

    veth("lca0", "lca1", false);
    assert_int_equal(link_move_to_netns_as("lca0", other_fd, "rail0"), 0);
    assert_false(present("lca0"));
    assert_false(present("rail0"));
    assert_int_equal(netns_run(other_fd, there_present, "rail0"), 0);
    assert_int_equal(netns_run(other_fd, there_present, "lca0"), -ENODEV);

    /* the name is taken over there: nothing moves, nothing is renamed */
    assert_int_equal(link_move_to_netns_as("lca1", other_fd, "rail0"), -EEXIST);
    assert_true(present("lca1"));
    /* a plain move keeps the name, so a clash there fails the same way */
    assert_int_equal(netns_run(other_fd, there_veth, names), 0);
    veth("lca8", "lcb8", false);
    assert_int_equal(link_move_to_netns("lca8", other_fd), -EEXIST);
    assert_true(present("lca8"));

    /* names the kernel refuses are refused before anything moves */
    static const char *const bad[] = {"bad:name", "bad/name", "bad name", ".", ".."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(link_move_to_netns_as("lca1", other_fd, bad[i]), -EINVAL);
    assert_true(present("lca1"));
    assert_int_equal(netns_run(other_fd, there_present, "lca1"), -ENODEV);
    assert_int_equal(link_move_to_netns_as("lca1", other_fd, "rail0-too-long-name"), -EINVAL);
    assert_int_equal(netns_run(other_fd, there_del, "rail0"), 0);
    assert_int_equal(netns_run(other_fd, there_del, "lca8"), 0);
    assert_int_equal(testns_link_del("lca8"), 0);
}

static void test_rename(void **state) {
    int ifindex, r;

    veth("lcr0", "lcr1", true);
    ifindex = get("lcr0").ifindex;
    /* kernels before 6.x rename only a link that is down */
    r = link_rename("lcr0", "rail3");
    printf("rename while up: %s\n", r == 0 ? "allowed" : strerror(-r));
    assert_true(r == 0 || r == -EBUSY);
    if (r == 0)
        assert_int_equal(link_rename("rail3", "lcr0"), 0);
    assert_int_equal(link_set_up("lcr0", false), 0);
    assert_int_equal(link_rename("lcr0", "rail3"), 0);
    assert_false(present("lcr0"));
    assert_int_equal(get("rail3").ifindex, ifindex);
    assert_true(ip_shows("rail3", "-o link show dev rail3"));

    assert_int_equal(link_rename("rail3", "lcr1"), -EEXIST);
    assert_true(present("rail3"));
    assert_int_equal(link_rename("lcnope", "rail4"), -ENODEV);
    assert_int_equal(link_rename("rail3", "0123456789abcdef"), -EINVAL);
    assert_int_equal(link_rename("rail3", ""), -EINVAL);
    assert_int_equal(testns_link_del("rail3"), 0);
}

static void test_mtu_state_alias(void **state) {
    veth("lcu0", "lcu1", false);
    assert_int_equal(link_set_mtu("lcu0", 9000), 0);
    assert_int_equal(get("lcu0").mtu, 9000);
    assert_true(ip_shows("mtu 9000", "-o link show dev lcu0"));
    assert_int_equal(link_set_mtu("lcu0", 0), -EINVAL);
    /* above veth's maximum: the kernel's own answer comes through, and its
     * words (extended ack) with it, once, and only for that error */
    char kernel[256] = "";
    assert_int_equal(link_set_mtu("lcu0", 70000), -EINVAL);
    assert_false(linkconf_kernel_message(-ENODEV, kernel, sizeof(kernel)));
    assert_int_equal(link_set_mtu("lcu0", 70000), -EINVAL);
    assert_true(linkconf_kernel_message(-EINVAL, kernel, sizeof(kernel)));
    assert_non_null(strstr(kernel, "mtu"));
    assert_false(linkconf_kernel_message(-EINVAL, kernel, sizeof(kernel)));
    assert_int_equal(get("lcu0").mtu, 9000);
    assert_int_equal(link_set_mtu("lcnope", 1500), -ENODEV);

    assert_int_equal(link_set_up("lcu0", true), 0);
    assert_true(get("lcu0").flags & IFF_UP);
    assert_int_equal(link_set_up("lcu0", false), 0);
    assert_false(get("lcu0").flags & IFF_UP);
    assert_int_equal(link_set_up("lcnope", true), -ENODEV);

    assert_int_equal(link_set_alias("lcu0", "railgate:unit0:ens1f0v3"), 0);
    assert_string_equal(get("lcu0").alias, "railgate:unit0:ens1f0v3");
    assert_true(ip_shows("alias railgate:unit0:ens1f0v3", "-o link show dev lcu0"));
    assert_int_equal(link_set_alias("lcu0", ""), 0);
    assert_string_equal(get("lcu0").alias, "");

    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_int_equal(link_set_alias("lcu0", big), -EINVAL);
    assert_int_equal(link_set_alias("lcu0", NULL), -EINVAL);
    assert_int_equal(link_set_alias("lcnope", "x"), -ENODEV);

    /* all three in one request; a refused MTU changes nothing */
    assert_int_equal(link_setup("lcu0", 70000, "railgate:unit1:x"), -EINVAL);
    assert_string_equal(get("lcu0").alias, "");
    assert_false(get("lcu0").flags & IFF_UP);
    assert_int_equal(link_setup("lcu0", 4000, "railgate:unit1:x"), 0);
    assert_int_equal(get("lcu0").mtu, 4000);
    assert_string_equal(get("lcu0").alias, "railgate:unit1:x");
    assert_true(get("lcu0").flags & IFF_UP);
    assert_int_equal(link_setup("lcu0", 0, "railgate:unit2:x"), 0);
    assert_int_equal(get("lcu0").mtu, 4000);
    assert_int_equal(link_setup("lcu0", 1500, big), -EINVAL);
    assert_int_equal(link_setup("lcnope", 1500, "x"), -ENODEV);
    assert_int_equal(testns_link_del("lcu0"), 0);
}

static void test_find_by_mac(void **state) {
    const uint8_t nobody[6] = {0x02, 0x52, 0x47, 0xfe, 0xed, 0x01};
    char name[IF_NAMESIZE] = "", tiny[3] = "xy";
    LinkInfo l;

    veth("lcf0", "lcf1", false);
    l = get("lcf1");
    assert_true(l.has_mac);
    assert_int_equal(link_find_by_mac(l.mac, name, sizeof(name)), 0);
    assert_string_equal(name, "lcf1");
    assert_int_equal(link_find_by_mac(l.mac, tiny, sizeof(tiny)), -ENOSPC);
    assert_string_equal(tiny, "xy");
    assert_int_equal(link_find_by_mac(nobody, name, sizeof(name)), -ENODEV);
    assert_string_equal(name, "lcf1");
    assert_int_equal(testns_link_del("lcf0"), 0);
}

static void test_addresses(void **state) {
    _cleanup_(strv_freep) char **l = NULL;

    veth("lcd0", "lcd1", true);
    assert_int_equal(addr_add("lcd0", "10.20.0.2/24"), 0);
    assert_int_equal(addr_add("lcd0", "10.20.1.5/32"), 0);
    assert_int_equal(addr_add("lcd0", "fd20::2/64"), 0);
    assert_true(ip_shows("inet 10.20.0.2/24", "-o -4 addr show dev lcd0"));
    assert_true(ip_shows("inet6 fd20::2/64", "-o -6 addr show dev lcd0"));

    /* the link-local fe80:: address the kernel adds is not listed */
    assert_int_equal(addr_list("lcd0", &l), 0);
    assert_int_equal(strv_length(l), 3);
    assert_string_equal(l[0], "10.20.0.2/24");
    assert_string_equal(l[1], "10.20.1.5/32");
    assert_string_equal(l[2], "fd20::2/64");
    strv_free(TAKE_PTR(l));

    assert_int_equal(addr_list("lcd1", &l), 0);
    assert_non_null(l);
    assert_null(l[0]);

    assert_int_equal(addr_add("lcd0", "10.20.0.2/24"), -EEXIST);
    assert_int_equal(addr_add("lcd0", "10.20.0.3"), -EINVAL);
    assert_int_equal(addr_add("lcd0", "default"), -EINVAL);
    assert_int_equal(addr_add("lcd0", "10.20.0.3/33"), -EINVAL);
    assert_int_equal(addr_add("lcnope", "10.20.0.3/24"), -ENODEV);
    assert_int_equal(addr_list("lcnope", &l), -ENODEV);
    assert_int_equal(testns_link_del("lcd0"), 0);
}

static void test_routes(void **state) {
    const RouteSpec onlink = {"10.30.0.0/24", NULL, "10.30.0.2", TABLE, RT_SCOPE_LINK};
    const RouteSpec def4 = {"0.0.0.0/0", "10.30.0.1", NULL, TABLE, RT_SCOPE_UNIVERSE};
    const RouteSpec def6 = {"::/0", "fd30::1", NULL, TABLE, RT_SCOPE_UNIVERSE};
    const RouteSpec main4 = {"10.33.0.0/16", "10.30.0.1", NULL, 0, RT_SCOPE_UNIVERSE};

    veth("lct0", "lct1", true);
    assert_int_equal(addr_add("lct0", "10.30.0.2/24"), 0);
    assert_int_equal(addr_add("lct0", "fd30::2/64"), 0);

    assert_int_equal(route_exists("lct0", &onlink), -ENOENT);
    assert_int_equal(route_add("lct0", &onlink), 0);
    assert_int_equal(route_add("lct0", &def4), 0);
    assert_int_equal(route_add("lct0", &def6), 0);
    assert_int_equal(route_add("lct0", &main4), 0);
    assert_true(ip_shows("10.30.0.0/24 dev lct0 proto static scope link src 10.30.0.2",
                         "-4 route show table %d", TABLE));
    assert_true(ip_shows("default via 10.30.0.1 dev lct0", "-4 route show table %d", TABLE));
    assert_true(ip_shows("default via fd30::1 dev lct0", "-6 route show table %d", TABLE));
    assert_true(ip_shows("10.33.0.0/16 via 10.30.0.1 dev lct0", "-4 route show table main"));

    assert_int_equal(route_exists("lct0", &onlink), 0);
    assert_int_equal(route_exists("lct0", &def4), 0);
    assert_int_equal(route_exists("lct0", &def6), 0);
    assert_int_equal(route_exists("lct0", &main4), 0);
    /* same route, other gateway, other table, other link, no gateway asked */
    RouteSpec q = def4;
    q.gw = "10.30.0.9";
    assert_int_equal(route_exists("lct0", &q), -ENOENT);
    q = def4;
    q.table = TABLE + 1;
    assert_int_equal(route_exists("lct0", &q), -ENOENT);
    assert_int_equal(route_exists("lct1", &def4), -ENOENT);
    q = def4;
    q.gw = NULL;
    assert_int_equal(route_exists("lct0", &q), 0);
    q = onlink;
    q.dst = "10.30.0.0/25";
    assert_int_equal(route_exists("lct0", &q), -ENOENT);

    assert_int_equal(route_add("lct0", &def4), -EEXIST);
    assert_int_equal(route_add("lcnope", &def4), -ENODEV);
    assert_int_equal(route_exists("lcnope", &def4), -ENODEV);
    assert_int_equal(testns_link_del("lct0"), 0);
}

static void test_route_errors(void **state) {
    const RouteSpec unreach = {"10.32.0.0/24", "10.99.0.1", NULL, TABLE, RT_SCOPE_UNIVERSE};
    const RouteSpec onlink = {"10.31.0.0/24", NULL, NULL, TABLE, RT_SCOPE_LINK};
    RouteSpec bad = onlink;

    veth("lcn0", "lcn1", false);
    /* the kernel's errno, not libnl's catch-all NLE_FAILURE (-EIO) */
    assert_int_equal(route_add("lcn0", &onlink), -ENETDOWN);
    assert_int_equal(link_set_up("lcn0", true), 0);
    assert_int_equal(route_add("lcn0", &unreach), -ENETUNREACH);
    assert_int_equal(route_add("lcn0", &onlink), 0);

    bad.gw = "fd31::1";
    assert_int_equal(route_add("lcn0", &bad), -EINVAL);
    bad = onlink;
    bad.gw = "10.31.0.1/24";
    assert_int_equal(route_add("lcn0", &bad), -EINVAL);
    bad = onlink;
    bad.scope = RT_SCOPE_HOST;
    assert_int_equal(route_add("lcn0", &bad), -EINVAL);
    bad = onlink;
    bad.dst = "10.31.0.0";
    assert_int_equal(route_add("lcn0", &bad), -EINVAL);
    bad = onlink;
    bad.src = "fd31::2";
    assert_int_equal(route_exists("lcn0", &bad), -EINVAL);
    assert_int_equal(route_add("lcn0", NULL), -EINVAL);
    assert_int_equal(testns_link_del("lcn0"), 0);
}

static void test_rules(void **state) {
    assert_int_equal(rule_exists("10.40.0.2/32", TABLE, 1001), -ENOENT);
    assert_int_equal(rule_add("10.40.0.2/32", TABLE, 1001), 0);
    assert_int_equal(rule_add("fd40::2/128", TABLE, 1001), 0);
    assert_true(ip_shows("1001:\tfrom 10.40.0.2 lookup 1001", "-4 rule show"));
    assert_true(ip_shows("1001:\tfrom fd40::2 lookup 1001", "-6 rule show"));

    assert_int_equal(rule_exists("10.40.0.2/32", TABLE, 1001), 0);
    assert_int_equal(rule_exists("fd40::2/128", TABLE, 1001), 0);
    assert_int_equal(rule_exists("10.40.0.2/32", TABLE, 1002), -ENOENT);
    assert_int_equal(rule_exists("10.40.0.2/32", TABLE + 1, 1001), -ENOENT);
    assert_int_equal(rule_exists("10.40.0.3/32", TABLE, 1001), -ENOENT);
    assert_int_equal(rule_exists("10.40.0.0/24", TABLE, 1001), -ENOENT);
    assert_int_equal(rule_add("10.40.0.2/32", TABLE, 1001), -EEXIST);

    assert_int_equal(rule_del("10.40.0.2/32", TABLE, 1001), 0);
    assert_int_equal(rule_exists("10.40.0.2/32", TABLE, 1001), -ENOENT);
    assert_false(ip_shows("from 10.40.0.2 lookup 1001", "-4 rule show"));
    assert_int_equal(rule_del("10.40.0.2/32", TABLE, 1001), -ENOENT);
    assert_int_equal(rule_del("fd40::2/128", TABLE, 1001), 0);

    assert_int_equal(rule_add("10.40.0.2/32", 0, 1001), -EINVAL);
    assert_int_equal(rule_add("10.40.0.2", TABLE, 1001), -EINVAL);
    assert_int_equal(rule_add(NULL, TABLE, 1001), -EINVAL);
}

static void test_master(void **state) {
    veth("lcs0", "lcs1", false);
    if (system("ip link add lcbr0 type bridge >/dev/null 2>&1") != 0) {
        printf("no bridge driver: link_set_master checked only for errors\n");
        assert_int_equal(link_set_master("lcs0", "lcnope"), -ENODEV);
        return;
    }
    assert_int_equal(link_set_master("lcs0", "lcbr0"), 0);
    assert_true(ip_shows("master lcbr0", "-o link show dev lcs0"));
    assert_int_equal(link_set_master("lcs0", NULL), 0);
    assert_false(ip_shows("master", "-o link show dev lcs0"));
    assert_int_equal(link_set_master("lcs0", "lcnope"), -ENODEV);
    assert_int_equal(link_set_master("lcnope", "lcbr0"), -ENODEV);
    assert_int_equal(testns_link_del("lcbr0"), 0);
    assert_int_equal(testns_link_del("lcs0"), 0);
}

static void test_vrf(void **state) {
    char probe[IF_NAMESIZE];
    int r = vrf_supported();

    printf("vrf_supported: %s\n", r == 0 ? "0 (supported)" : strerror(-r));
    assert_true(r == 0 || r == -EOPNOTSUPP);
    /* the probe is gone either way */
    snprintf(probe, sizeof(probe), "rgvrfp%d", (int)gettid());
    assert_false(present(probe));
    if (r == -EOPNOTSUPP) {
        assert_int_equal(vrf_add("lcvrf0", TABLE), -EOPNOTSUPP);
        assert_false(present("lcvrf0"));
        return;
    }
    veth("lcv0", "lcv1", false);
    assert_int_equal(vrf_add("lcvrf0", TABLE), 0);
    assert_true(get("lcvrf0").flags & IFF_UP);
    assert_int_equal(vrf_add("lcvrf0", TABLE), -EEXIST);
    assert_int_equal(link_set_master("lcv0", "lcvrf0"), 0);
    assert_true(ip_shows("master lcvrf0", "-o link show dev lcv0"));
    assert_int_equal(testns_link_del("lcvrf0"), 0);
    assert_int_equal(testns_link_del("lcv0"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_move_and_back), cmocka_unit_test(test_move_as),
        cmocka_unit_test(test_rename),        cmocka_unit_test(test_mtu_state_alias),
        cmocka_unit_test(test_find_by_mac),   cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_routes),        cmocka_unit_test(test_route_errors),
        cmocka_unit_test(test_rules),         cmocka_unit_test(test_master),
        cmocka_unit_test(test_vrf),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
