/* SPDX-License-Identifier: Apache-2.0 */
/* macvlan rails on a shared lower: the rule on links and node NICs given by hand, no netlink. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lowers.h"

/* The node: eth0 (the uplink), low0 and low1 (a lower each, veths with the
 * far ends low0w and low1w), nic5 (a NIC of its own), and what each case
 * stacks on them. */
enum { ETH0 = 1, LOW0, LOW0W, LOW1, LOW1W, NIC5, FIRST_FREE };

typedef struct Node {
    Link links[32];
    size_t n_links;
    NodeNic nics[8];
    size_t n_nics;
    RailNic rails[8];
    size_t n_rails;
    RgError err;
} Node;

static Link *link_new(Node *n, int ifindex, const char *name, const char *kind, int lower) {
    Link *l = &n->links[n->n_links++];

    memset(l, 0, sizeof(*l));
    l->ifindex = ifindex;
    snprintf(l->name, sizeof(l->name), "%s", name);
    snprintf(l->kind, sizeof(l->kind), "%s", kind);
    l->link = lower;
    l->link_netnsid = LINK_NETNSID_SELF;
    return l;
}

static void node_nic(Node *n, const char *name, unsigned uses) {
    NodeNic *v = &n->nics[n->n_nics++];

    snprintf(v->name, sizeof(v->name), "%s", name);
    v->uses = uses;
}

static void rail(Node *n, const char *unit, const char *tenant, const char *netdev, bool check) {
    n->rails[n->n_rails++] =
        (RailNic){.unit = unit, .tenant = tenant, .netdev = netdev, .check = check};
}

static void node_init(Node *n) {
    memset(n, 0, sizeof(*n));
    link_new(n, ETH0, "eth0", "", 0);
    link_new(n, LOW0, "low0", "veth", LOW0W);
    link_new(n, LOW0W, "low0w", "veth", LOW0);
    link_new(n, LOW1, "low1", "veth", LOW1W);
    link_new(n, LOW1W, "low1w", "veth", LOW1);
    link_new(n, NIC5, "nic5", "", 0);
    node_nic(n, "eth0", NODE_NIC_DEFAULT_ROUTE | NODE_NIC_ADDRESS);
}

static int check(Node *n) {
    n->err.msg[0] = 0;
    return rail_lowers_check(n->rails, n->n_rails, n->links, n->n_links, n->nics, n->n_nics,
                             &n->err);
}

/* Refused, and the message names every one of want (NULL-terminated). */
static void refused(Node *n, const char *const *want) {
    assert_int_equal(check(n), -EADDRINUSE);
    for (size_t i = 0; want[i]; i++)
        if (!strstr(n->err.msg, want[i]))
            fail_msg("\"%s\" not in: %s", want[i], n->err.msg);
}

static void allowed(Node *n) {
    int r = check(n);

    if (r != 0)
        fail_msg("refused (%d): %s", r, n->err.msg);
}

static void test_two_tenants(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 1, "mv18", "macvlan", LOW0);
    rail(&n, "rail3", "a", "mv3", true);
    rail(&n, "rail18", "b", "mv18", true);
    refused(&n, (const char *const[]){"rail3", "mv3", "tenant a", "rail18", "mv18", "tenant b",
                                      "low0", NULL});
    /* either one alone being checked (the ADD of one of them) */
    n.rails[0].check = false;
    refused(&n, (const char *const[]){"rail18", "tenant b", "rail3", "tenant a", NULL});
    n.rails[0].check = true;
    n.rails[1].check = false;
    refused(&n, (const char *const[]){"rail3", "tenant a", "rail18", "tenant b", NULL});
    /* a macvtap takes a mode and a source list the same way */
    snprintf(n.links[n.n_links - 1].kind, sizeof(n.links[0].kind), "macvtap");
    refused(&n, (const char *const[]){"rail3", "rail18", NULL});
    /* on lowers of their own, nothing is shared */
    n.links[n.n_links - 1].link = LOW1;
    n.rails[1].check = true;
    allowed(&n);
}

static void test_one_tenant_allowed(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 1, "mv4", "macvlan", LOW0);
    rail(&n, "rail3", "a", "mv3", true);
    rail(&n, "rail4", "a", "mv4", true);
    /* each rail's own host address is the rail's, not the node's; the
     * far end of the lower's veth is no link on the lower */
    node_nic(&n, "mv3", NODE_NIC_ADDRESS);
    node_nic(&n, "low0w", NODE_NIC_ADDRESS);
    allowed(&n);
    /* a link on the lower that carries no node address is no one's frames
     * to lose (the rail's anchor is on the rail, not the lower) */
    link_new(&n, FIRST_FREE + 2, "spare", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 3, "rganchor", "vlan", FIRST_FREE);
    allowed(&n);
    /* a rail that is not in the node's namespace (in a pod) is not seen */
    rail(&n, "rail18", "b", "gone18", true);
    allowed(&n);
}

static void test_node_address(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", LOW0);
    rail(&n, "rail3", "a", "mv3", true);
    allowed(&n);
    /* the lower itself */
    node_nic(&n, "low0", NODE_NIC_ADDRESS);
    refused(&n, (const char *const[]){"rail3", "mv3", "tenant a", "low0",
                                      "the node's own NIC (it carries a node address)", NULL});
    /* the uplink as the lower */
    n.n_nics--;
    n.links[n.n_links - 1].link = ETH0;
    refused(&n, (const char *const[]){"rail3", "eth0", "default route", NULL});
}

static void test_node_upper(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", LOW0);
    rail(&n, "rail3", "a", "mv3", true);
    /* a VLAN on the lower with a node address */
    link_new(&n, FIRST_FREE + 1, "low0.7", "vlan", LOW0);
    node_nic(&n, "low0.7", NODE_NIC_ADDRESS);
    refused(&n, (const char *const[]){"rail3", "low0", "the node's low0.7",
                                      "it carries a node address", NULL});
    /* two links up: a VLAN on a macvlan on the lower */
    n.n_links--;
    link_new(&n, FIRST_FREE + 2, "mvnode", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 3, "low0.7", "vlan", FIRST_FREE + 2);
    refused(&n, (const char *const[]){"rail3", "the node's low0.7", NULL});
    /* the same address on an upper of the rail itself goes where the rail
     * goes: not the lower's */
    n.links[n.n_links - 1].link = FIRST_FREE;
    allowed(&n);
}

static void test_lower_is_a_rail(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", NIC5);
    rail(&n, "rail3", "a", "mv3", true);
    rail(&n, "rail5", "a", "nic5", false);
    /* of the same tenant too: while rail5 is home it is the node's */
    refused(&n, (const char *const[]){"rail3", "mv3", "nic5", "rail5's NIC", NULL});
    /* the ADD of rail5 alone: rail3 sits on it */
    n.rails[0].check = false;
    n.rails[1].check = true;
    refused(&n, (const char *const[]){"rail3", "nic5", "rail5", NULL});
}

/* A rail a pod holds now counts as on the lower it was last seen on. */
static void test_away(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv18", "macvlan", LOW0);
    rail(&n, "rail3", "a", "mv3", false);
    n.rails[0].lower_ifindex = LOW0;
    rail(&n, "rail18", "b", "mv18", true);
    refused(&n, (const char *const[]){"rail18 (mv18, tenant b)", "low0",
                                      "rail3 (mv3, not in the node's namespace now) of tenant a",
                                      NULL});
    /* the agent: the rail away is checked too */
    n.rails[0].check = true;
    n.rails[1].check = false;
    refused(&n, (const char *const[]){"rail3 (mv3, tenant a, not in the node's namespace now)",
                                      "rail18 (mv18) of tenant b", NULL});
    /* a node address on the lower it was seen on */
    n.n_rails = 1;
    allowed(&n);
    node_nic(&n, "low0", NODE_NIC_ADDRESS);
    refused(&n, (const char *const[]){"rail3", "the node's own NIC", NULL});
    /* that lower gone (its macvlans with it): nothing to share */
    n.rails[0].lower_ifindex = 999;
    allowed(&n);
    /* a NIC back home is judged by where it is, not where it was */
    link_new(&n, FIRST_FREE + 1, "mv3", "macvlan", LOW1);
    n.rails[0].lower_ifindex = LOW0;
    allowed(&n);
}

static void test_only_checked(void **state) {
    Node n;

    node_init(&n);
    link_new(&n, FIRST_FREE, "mv3", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 1, "mv18", "macvlan", LOW0);
    link_new(&n, FIRST_FREE + 2, "mv4", "macvlan", LOW1);
    rail(&n, "rail3", "a", "mv3", false);
    rail(&n, "rail18", "b", "mv18", false);
    rail(&n, "rail4", "a", "mv4", true);
    /* the ADD of rail4 is not refused for a sharing it has no part in */
    allowed(&n);
}

static void test_lower_elsewhere(void **state) {
    Node n;

    node_init(&n);
    Link *l = link_new(&n, FIRST_FREE, "mv3", "macvlan", 2);
    l->link_netnsid = 4;
    rail(&n, "rail3", "a", "mv3", true);
    refused(&n, (const char *const[]){"rail3", "another network namespace", NULL});
    l->link_netnsid = LINK_NETNSID_SELF;
    l->link = 999;
    refused(&n, (const char *const[]){"rail3", "lower link 999", NULL});
}

static void test_other_kinds_untouched(void **state) {
    Node n;

    /* veth, dummy and VF rails take no mode from the pod */
    node_init(&n);
    rail(&n, "rail0", "a", "low0", true);
    rail(&n, "rail1", "b", "low0w", true);
    rail(&n, "rail2", "b", "eth0", true);
    link_new(&n, FIRST_FREE, "vl", "vlan", LOW0);
    node_nic(&n, "vl", NODE_NIC_ADDRESS);
    allowed(&n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_tenants),           cmocka_unit_test(test_one_tenant_allowed),
        cmocka_unit_test(test_node_address),          cmocka_unit_test(test_node_upper),
        cmocka_unit_test(test_lower_is_a_rail),       cmocka_unit_test(test_away),
        cmocka_unit_test(test_only_checked),          cmocka_unit_test(test_lower_elsewhere),
        cmocka_unit_test(test_other_kinds_untouched),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
