/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespace fixtures for integration tests: throwaway namespaces and the links in them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "netlink.h"

/* Exit 77 (ctest: skipped) unless the test runs as root; 0 otherwise. */
int testns_require_root(void);

/*
 * Move the test process into a new network namespace with only "lo" (up).
 * Every link a test creates lives there, and the kernel removes it all when
 * the process exits, crash included. unshare() moves only the calling
 * thread, so call it before any thread exists: -EBUSY otherwise.
 */
int testns_enter_private(void);

/*
 * Mount a sysfs at path (a directory, made if missing) as this namespace
 * shows it (/sys/class/net holds its links, not the node's); unmounted by
 * testns_named_remove(path), at exit and on a fatal signal.
 */
int testns_sysfs_mount(const char *path);

/*
 * A new network namespace with "lo" up, bind-mounted at
 * /run/netns/rgtest-<tag>-<pid>-<seq> like `ip netns add` does, for tests
 * that need a namespace path (CNI_NETNS). The caller does not join it.
 * It is unmounted and unlinked at exit and on SIGINT, SIGTERM and SIGABRT;
 * leftovers of a killed run (dead pid in the name) are removed by the next
 * run. tag: 1-16 of [A-Za-z0-9_]. ret_path gets the path.
 */
int testns_named_new(const char *tag, char *ret_path, size_t n);
/* Like testns_enter_private(), into a namespace that also has a path. */
int testns_enter_named(const char *tag, char *ret_path, size_t n);
/* Unmount and unlink a namespace made above; -ENOENT if it is not one. */
int testns_named_remove(const char *path);

/*
 * Links, in the calling thread's network namespace (a fresh netlink socket
 * per call, so netns_run() works). -errno on failure: -EEXIST, -ENODEV, ...
 */
int testns_veth_add(const char *a, const char *b);
/* The link called name (netlink.h's Link). */
int testns_link_get(const char *name, Link *ret);
/*
 * Rail NICs of the kind the harness names in RAILGATE_TEST_RAIL_KIND:
 *   veth     (the default) rail-nic<k> with its peer rail-peer<k>: packets
 *            flow, and the CNI finds a moved rail again by its peer
 *   dummy    rail-nic<k> alone (carrier switched with IFLA_CARRIER)
 *   macvlan  rail-nic<k> on rail-peer<k>, a veth to rail-peer<k>w (carrier:
 *            rail-peer<k>w down or up, as the far end of a cable)
 * The first call checks the kind against this kernel (a link of it made in a
 * namespace of its own): one the kernel cannot make exits 77 saying why, a
 * name that is no kind exits 1; a test never gets a veth instead. It prints
 * "rail kind: <kind>" once per program.
 */
typedef enum RailKind {
    RAIL_KIND_VETH,
    RAIL_KIND_DUMMY,
    RAIL_KIND_MACVLAN,
} RailKind;
RailKind testns_rail_kind(void);
const char *testns_rail_kind_name(RailKind kind);
/* A test whose rails must be veths (it needs packets, or a peer by which the
 * CNI finds a moved rail again) says why, once; its rails are veths then,
 * whatever kind was named. */
void testns_rails_veth(const char *why);
/* The kind testns_rail_add() makes now. */
RailKind testns_rail_kind_used(void);
/* Is the kind available in this kernel? 1 yes, 0 no (the driver is
 * missing), -errno. Checked in a namespace of its own. */
int testns_kind_probe(RailKind kind);
/* Can the CNI anchor a rail of the kind on this kernel (a VLAN 802.1ad on a
 * link of it, as cni/anchor.c makes one)? 1 yes, 0 no (no such driver, no
 * 8021q driver, or a kind that takes no VLANs), -errno. Checked in a
 * namespace of its own. */
int testns_kind_anchorable(RailKind kind);

/* A link name of the kind in use, down, with what it needs beside it, up:
 * veth: its peer `partner`; macvlan: its lower link `partner` (a veth to
 * `partner`w); dummy: nothing (partner may be NULL). */
int testns_kind_link_add(const char *name, const char *partner);
/* The same, of the given kind (a test about kinds themselves). */
int testns_kind_link_add_as(RailKind kind, const char *name, const char *partner);
int testns_kind_link_del_as(RailKind kind, const char *name, const char *partner);
/* Carrier on or off, as the far end of a cable makes it: veth through
 * partner's state, macvlan through partner's peer's, dummy with IFLA_CARRIER
 * (`ip link set ... carrier`). */
int testns_kind_carrier(const char *name, const char *partner, bool on);
/* Delete name and what testns_kind_link_add made beside it. */
int testns_kind_link_del(const char *name, const char *partner);
/* Rail NIC k of a test node: rail-nic<k> of the kind in use (partner
 * rail-peer<k>), up, with carrier. */
int testns_rail_add(unsigned k);
int testns_rail_carrier(unsigned k, bool on);
int testns_rail_del(unsigned k);
int testns_link_set_up(const char *name, bool up);
int testns_link_del(const char *name);
/* Change the link called name in the namespace open at netns_fd (-1: this
 * one) as c says, over a netlink socket opened there. */
int testns_link_change_in(int netns_fd, const char *name, const LinkChange *c);
/* Move a link into the namespace open at netns_fd; it keeps its name. */
int testns_link_set_netns(const char *name, int netns_fd);
/* cidr: "10.0.0.1/24" or "fd00::1/64". */
int testns_addr_add(const char *name, const char *cidr);

/* Poll pred(arg) every few milliseconds until it holds (true) or timeout_ms
 * passes (false). For waiting on an event, never for timing assertions. */
bool testns_wait_until(bool (*pred)(void *arg), void *arg, int timeout_ms);

/*
 * An XDP program that drops every frame, attached to dev in the network
 * namespace at netns_path (NULL: this one) as its holder there would: in
 * the mode of xdp_flags (XDP_FLAGS_SKB_MODE, _DRV_MODE, _HW_MODE) through
 * IFLA_XDP, or (ret_link_fd non-NULL) through a BPF link whose fd is
 * returned: the program stays while that fd is open. Its program id in
 * *ret_prog_id (may be NULL).
 */
int testns_xdp_attach(const char *netns_path, const char *dev, unsigned xdp_flags, int *ret_link_fd,
                      unsigned *ret_prog_id);
/*
 * A tc program that drops every frame on dev's tcx ingress (egress: its
 * egress) hook in the namespace at netns_path (NULL: this one), as its
 * holder there would (6.6+): with BPF_PROG_ATTACH, or (ret_link_fd
 * non-NULL) through a BPF link whose fd is returned. -EINVAL where the
 * kernel has no tcx.
 */
int testns_tcx_attach(const char *netns_path, const char *dev, bool egress, int *ret_link_fd);
/* How many tcx programs dev has in the namespace at netns_path (NULL: this
 * one), both hooks. */
int testns_tcx_count(const char *netns_path, const char *dev);
