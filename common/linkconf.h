/* rtnetlink changes the CNI makes: move, rename, MTU, state, addresses, routes, rules. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

/*
 * Every function works in the calling thread's network namespace with a
 * fresh netlink socket opened for the call (see netns_run()), waits for the
 * kernel's ack and returns -errno; the kernel's extended-ack message, where
 * there is one, is in the debug log and in linkconf_kernel_message(). Addresses are CIDR strings,
 * IPv4 or IPv6
 * ("10.0.0.2/24", "fd00::2/64"); gateways plain addresses.
 */

/* The kernel's extended-ack text ("Error: ...") of the last refused request,
 * into buf, if that request failed with r (a -errno); cleared by the call.
 * How the CNI's errors say more than "Invalid argument". */
bool linkconf_kernel_message(int r, char *buf, size_t n);

/* Move a link into the namespace netns_fd (IFLA_NET_NS_FD); it keeps its name. */
int link_move_to_netns(const char *name, int netns_fd);
/* Move and rename in one request, so the name never clashes in the target
 * and udev on the host never sees a temporary name; -EEXIST when newname is
 * taken in the target namespace (nothing moves). Names the kernel would
 * refuse are -EINVAL before anything moves. One window remains: newname
 * taken over there between the check and the move (the kernel moves under
 * the old name, then refuses the rename). The link is then left there under
 * its old name, and not moved back by name: a look-alike could answer to it.
 * The CNI records a NIC's identity before the move and its rollback finds it
 * by that. */
int link_move_to_netns_as(const char *name, int netns_fd, const char *newname);
/* Rename; -EEXIST when newname is taken, -EBUSY from kernels that rename
 * only a link that is down. */
int link_rename(const char *name, const char *newname);
int link_set_mtu(const char *name, unsigned mtu);
int link_set_up(const char *name, bool up);
/* IFLA_IFALIAS: railgate keeps "railgate:<unit>:<original name>" there so
 * that a NIC stranded under its pod-side name can be recognised. "" clears
 * it; 256 bytes or more is -EINVAL. */
int link_set_alias(const char *name, const char *alias);
/* Alias, MTU (0: leave it) and up in one request, as a NIC is set up in the
 * pod: the kernel applies the MTU first, so a refused MTU changes nothing. */
int link_setup(const char *name, unsigned mtu, const char *alias);
/* The link whose permanent or current MAC is mac (a current match wins);
 * -ENODEV if none, -ENOSPC when the name does not fit in n bytes. */
int link_find_by_mac(const uint8_t mac[6], char *ret_name, size_t n);

/* -EEXIST when the address is already there. */
int addr_add(const char *ifname, const char *cidr);
/* Global-scope addresses of a link as "addr/prefix", NULL-terminated, in
 * kernel order; an empty vector (not NULL) when there are none. Free with
 * strv_free(). */
int addr_list(const char *ifname, char ***ret);

typedef struct RouteSpec {
    const char *dst; /* CIDR; "0.0.0.0/0" or "::/0" for default */
    const char *gw;  /* or NULL for an on-link route */
    const char *src; /* preferred source (an address; a /prefix is ignored), or NULL */
    uint32_t table;  /* RT_TABLE_MAIN when 0 */
    uint8_t scope;   /* RT_SCOPE_UNIVERSE (0) or RT_SCOPE_LINK (253) */
} RouteSpec;

/* -EEXIST when the route is already there; the kernel's own errno
 * otherwise (-ENETDOWN: link down, -ENETUNREACH: gateway not reachable). */
int route_add(const char *ifname, const RouteSpec *r);
/* Does table hold a route to dst (via gw, when given) out of ifname?
 * 0 if it does, -ENOENT if not, other -errno on failure. */
int route_exists(const char *ifname, const RouteSpec *r);

/* "from <src> lookup <table>" at priority prio; table 0 is -EINVAL.
 * rule_add: -EEXIST when that rule is there. rule_exists: 0 if present,
 * -ENOENT if not. rule_del: -ENOENT if absent. */
int rule_add(const char *src_cidr, uint32_t table, uint32_t prio);
int rule_exists(const char *src_cidr, uint32_t table, uint32_t prio);
int rule_del(const char *src_cidr, uint32_t table, uint32_t prio);

/* VRF device support in this kernel (l3mdev): 0, or -EOPNOTSUPP; another
 * -errno when the probe itself failed (-EPERM). Creates and deletes a
 * throwaway VRF "rgvrfp<tid>"; the kernel keeps the l3mdev FIB rules that
 * the first VRF of a namespace installs. */
int vrf_supported(void);
/* Create VRF name bound to table, up; -EOPNOTSUPP without the vrf driver.
 * Enslave links to it with link_set_master(). */
int vrf_add(const char *name, uint32_t table);
/* IFLA_MASTER; master NULL or "" releases ifname from its master. */
int link_set_master(const char *ifname, const char *master);
