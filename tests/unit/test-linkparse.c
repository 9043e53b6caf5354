/* SPDX-License-Identifier: Apache-2.0 */
/* The netlink layer reads a link message as the kernel sends it: where a
 * link's peer or lower is (IFLA_LINK_NETNSID), and what is refused. */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "netlink.h"

/* An RTM_NEWLINK for ifindex 7 "rail0" with IFLA_LINK 3 and, if
 * with_nsid, IFLA_LINK_NETNSID nsid. */
static struct nl_msg *link_msg(bool with_nsid, int32_t nsid) {
    struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = 7};

    assert_non_null(m);
    assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
    assert_int_equal(nla_put_string(m, IFLA_IFNAME, "rail0"), 0);
    assert_int_equal(nla_put_u32(m, IFLA_LINK, 3), 0);
    if (with_nsid)
        assert_int_equal(nla_put_s32(m, IFLA_LINK_NETNSID, nsid), 0);
    return m;
}

static int parse(bool with_nsid, int32_t nsid, Link *l) {
    struct nl_msg *m = link_msg(with_nsid, nsid);
    int r = link_parse(nlmsg_hdr(m), l);

    nlmsg_free(m);
    return r;
}

/* No IFLA_LINK_NETNSID: the peer is in the asker's namespace. An id: that
 * one. A negative one (the kernel's NETNSA_NSID_NOT_ASSIGNED while the
 * peer's namespace is torn down, or an error of its id allocation): another
 * namespace, never the asker's. */
static void test_link_netnsid(void **state) {
    Link l;

    (void)state;
    assert_int_equal(parse(false, 0, &l), 0);
    assert_int_equal(l.ifindex, 7);
    assert_string_equal(l.name, "rail0");
    assert_int_equal(l.link, 3);
    assert_int_equal(l.link_netnsid, LINK_NETNSID_SELF);
    assert_int_equal(parse(true, 0, &l), 0);
    assert_int_equal(l.link_netnsid, 0);
    assert_int_equal(parse(true, 5, &l), 0);
    assert_int_equal(l.link_netnsid, 5);
    assert_int_equal(parse(true, -1, &l), 0);
    assert_int_equal(l.link_netnsid, LINK_NETNSID_UNASSIGNED);
    assert_int_equal(parse(true, -ENOSPC, &l), 0);
    assert_int_equal(l.link_netnsid, LINK_NETNSID_UNASSIGNED);
}

/* A namespace without an id cannot be asked about, and is never the
 * asker's own: refused before any request. */
static void test_get_in_unassigned(void **state) {
    Link l;

    (void)state;
    assert_int_equal(link_get_in(NULL, 7, LINK_NETNSID_UNASSIGNED, &l), -EINVAL);
}

/* What is not a link message is refused whole. */
static void test_not_a_link(void **state) {
    struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWADDR, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = 7};
    Link l;

    (void)state;
    assert_non_null(m);
    assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
    assert_int_equal(nla_put_string(m, IFLA_IFNAME, "rail0"), 0);
    assert_int_equal(link_parse(nlmsg_hdr(m), &l), -EBADMSG);
    nlmsg_free(m);
    m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
    ifi.ifi_family = AF_BRIDGE;
    assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
    assert_int_equal(nla_put_string(m, IFLA_IFNAME, "rail0"), 0);
    assert_int_equal(link_parse(nlmsg_hdr(m), &l), -EBADMSG);
    nlmsg_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_netnsid),
        cmocka_unit_test(test_get_in_unassigned),
        cmocka_unit_test(test_not_a_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
