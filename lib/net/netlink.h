/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rtnetlink, the one layer: a connection per network namespace (netlink.c), links
 * (netlink-link.c), addresses (netlink-addr.c), routes, rules and VRFs (netlink-route.c).
 *
 * A connection is a NETLINK_ROUTE socket opened inside one namespace; the
 * kernel binds a socket to the namespace it was created in, so every request
 * on it acts there whichever thread sends it, and nothing switches namespace
 * after netlink_open(). Changes name links by ifindex (fixed while a link stays in
 * a namespace; a name is the pod's to change). Every call returns 0 or a
 * -errno: the kernel's own errno where it answered (libnl folds ENETUNREACH,
 * ENETDOWN and friends into one code; this layer does not), and
 * netlink_kernel_message() has the kernel's extended-ack text for the person
 * reading the error. A connection is used from one thread at a time.
 */
#pragma once

#include <net/if.h>
#include <linux/if.h> /* IF_OPER_*, after net/if.h: glibc first, then the UAPI extras */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef struct Netlink Netlink;

/* A connection in the namespace open at netns_fd; netns_fd < 0: the calling
 * thread's. The socket is made with the calling thread in that namespace
 * for the call (netns_run()), and the thread back in its own after. */
int netlink_open(int netns_fd, Netlink **ret);
void netlink_close(Netlink *nl);
DEFINE_TRIVIAL_CLEANUP_FUNC(Netlink *, netlink_close);

/* The kernel's extended-ack text of the last request refused with r on nl,
 * into buf; false when the kernel gave none for that very error. */
bool netlink_kernel_message(Netlink *nl, int r, char *buf, size_t n);

/* libnl's -NLE_* (or NLE_*) as -errno; 0 stays 0. */
int netlink_errno(int nlerr);

/* What the kernel's dev_valid_name() accepts, so that a name it would refuse
 * is refused before anything moves. */
bool netlink_ifname_valid(const char *name);

/* ---- batches (netlink-batch.c) ----
 *
 * Many requests of one connection in one sendmsg. The kernel runs them in
 * order and goes on after a refusal (there is no transaction), so a batch
 * holds only requests that are independent, or where an earlier one's
 * failure makes the later ones fail harmlessly. Each entry's answer (a
 * change's ack; a GET's reply, or its error) is mapped back to it by its
 * sequence number, with the kernel's -errno and its extended-ack text.
 */
typedef struct NetlinkBatch NetlinkBatch;
typedef struct NetlinkBatchEntry {
    const char *what;  /* the caller's words for the request ("moving into the pod") */
    const void *tag;   /* the caller's (the NIC it is for) */
    int err;           /* 0, the kernel's -errno, or -ECONNABORTED: not answered */
    char ext_ack[256]; /* the kernel's words for err, "" when none */
} NetlinkBatchEntry;

int netlink_batch_new(Netlink *nl, NetlinkBatch **ret);
/*
 * Send every entry in order, in as few sendmsg calls as the send buffer and
 * the receive queue allow, and read every answer. 0: every entry was
 * answered (each entry's err says how); < 0: the conversation broke (a
 * queue overrun, a truncated or foreign answer, a timeout), and the entries
 * not answered hold -ECONNABORTED: their outcome is unknown, callers treat
 * it as a failure and look again by identity. Counts one change for
 * netlink_generation() if any entry was one. A batch is committed once.
 */
int netlink_batch_commit(NetlinkBatch *b);
size_t netlink_batch_n(const NetlinkBatch *b);
const NetlinkBatchEntry *netlink_batch_entry(const NetlinkBatch *b, size_t i);
/* The first entry, in request order, that failed; NULL: none did. */
const NetlinkBatchEntry *netlink_batch_first_error(const NetlinkBatch *b);
void netlink_batch_free(NetlinkBatch *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetlinkBatch *, netlink_batch_free);

/* ---- links (netlink-link.c) ---- */

/* Where a link's peer or lower (IFLA_LINK) is, as this namespace names it:
 * an id >= 0; SELF: in this namespace (the kernel sends no IFLA_LINK_NETNSID);
 * UNASSIGNED: in another one this namespace has no id for, which the kernel
 * says with a negative IFLA_LINK_NETNSID while that namespace is being torn
 * down (its ids go first, its links last): never this namespace. */
#define LINK_NETNSID_SELF (-1)
#define LINK_NETNSID_UNASSIGNED (-2)

/*
 * What a holder of CAP_NET_ADMIN over a link's namespace can change on it
 * through RTM_NEWLINK, beyond its name, MAC, MTU, alias, admin state,
 * addresses and master (docs/security.md lists every attribute and what
 * becomes of it). Read with the link; what the kernel did not report is 0
 * or false (has_*): it is never set back.
 */
/* the IFF_* bits dev_change_flags() takes from a request besides IFF_UP */
#define LINK_SETTABLE_FLAGS                                                                        \
    (IFF_DEBUG | IFF_NOTRAILERS | IFF_NOARP | IFF_DYNAMIC | IFF_MULTICAST | IFF_PORTSEL |          \
     IFF_AUTOMEDIA | IFF_PROMISC | IFF_ALLMULTI)
typedef struct LinkSettings {
    unsigned flags; /* the LINK_SETTABLE_FLAGS bits */
    bool has_txqlen, has_group, has_linkmode, has_broadcast;
    uint32_t txqlen, group;
    uint8_t linkmode; /* IF_LINK_MODE_* */
    uint8_t broadcast[6];
    /* GSO/GRO limits; 0: not reported by this kernel (the IPv4 ones: 6.3+) */
    uint32_t gso_max_size, gso_max_segs, gro_max_size, gso_ipv4_max_size, gro_ipv4_max_size;
    int8_t carrier;             /* IFLA_CARRIER: 1, 0, or -1 not reported */
    int8_t proto_down;          /* IFLA_PROTO_DOWN: 1, 0, or -1 not reported */
    uint32_t proto_down_reason; /* its reason bits */
    uint8_t xdp_attached;       /* XDP_ATTACHED_* */
    uint32_t xdp_skb_prog, xdp_drv_prog, xdp_hw_prog; /* program ids per mode, 0: none */
    /* a macvlan's own settings (IFLA_MACVLAN_*); macvlan_mode 0: not a macvlan */
    uint32_t macvlan_mode;  /* MACVLAN_MODE_* */
    uint16_t macvlan_flags; /* MACVLAN_FLAG_* */
    uint32_t macvlan_count; /* source-mode addresses it holds */
    bool has_macvlan_bcqlen, has_macvlan_bc_cutoff;
    uint32_t macvlan_bcqlen;
    int32_t macvlan_bc_cutoff;
} LinkSettings;

typedef struct Link {
    int ifindex;
    char name[IF_NAMESIZE];
    char alias[256];
    char kind[16];     /* IFLA_INFO_KIND, "" for a device with a driver */
    char parent[100];  /* "<bus>/<device>" (IFLA_PARENT_DEV_*), "" if none */
    int link;          /* IFLA_LINK (a veth's peer ifindex), 0 if none */
    int link_netnsid;  /* IFLA_LINK_NETNSID: LINK_NETNSID_SELF, _UNASSIGNED or an id */
    unsigned flags;    /* IFF_* */
    uint8_t operstate; /* IF_OPER_* */
    unsigned mtu;
    uint8_t mac[6];
    bool has_mac;
    uint8_t perm[6];     /* IFLA_PERM_ADDRESS, zero if none */
    uint32_t vrf_table;  /* a VRF's table (IFLA_VRF_TABLE), 0 for other kinds */
    uint16_t vlan_id;    /* a VLAN's id (IFLA_VLAN_ID), 0 for other kinds */
    uint16_t vlan_proto; /* and its protocol, ETH_P_8021Q or ETH_P_8021AD (host order) */
    uint32_t vlan_flags; /* and its VLAN_FLAG_* (IFLA_VLAN_FLAGS) */
    unsigned n_altnames; /* how many alternative names (link_altnames() lists them) */
    LinkSettings settings;
} Link;

/* Healthy rail link: administratively up and the lower layer is up
 * (IFF_RUNNING, or operstate UP/UNKNOWN). */
bool link_healthy(const Link *l);

/* -ENODEV if absent. */
int link_get(Netlink *nl, int ifindex, Link *ret);
int link_get_by_name(Netlink *nl, const char *name, Link *ret);
/* A link of the namespace with id target_nsid as seen from nl's
 * (IFLA_TARGET_NETNSID); LINK_NETNSID_SELF: nl's own; -EINVAL for
 * LINK_NETNSID_UNASSIGNED. */
int link_get_in(Netlink *nl, int ifindex, int target_nsid, Link *ret);
/* One RTM_NEWLINK or RTM_DELLINK (AF_UNSPEC) into ret; a kernel message is
 * input like any other: sizes are checked, -EBADMSG for what is not one. */
struct nlmsghdr;
int link_parse(struct nlmsghdr *h, Link *ret);
/* Every link (want_parent NULL), or only those whose parent is want_parent,
 * however many others there are; *ret malloc'd. */
int link_dump(Netlink *nl, const char *want_parent, Link **ret, size_t *ret_n);
/* The same of the namespace with id target_nsid as nl's names it
 * (IFLA_TARGET_NETNSID, one dump, nothing opened there); LINK_NETNSID_SELF:
 * nl's own. The kernel answers -EINVAL for an id that leads nowhere (none
 * has it, or its namespace is being torn down). The links' IFLA_LINK_NETNSID
 * are as nl's namespace names them. */
int link_dump_in(Netlink *nl, int target_nsid, const char *want_parent, Link **ret, size_t *ret_n);
/* The id the namespace open at netns_fd has as seen from nl's; -1: none. */
int netlink_nsid(Netlink *nl, int netns_fd, int *ret);
/* Does id nsid, as nl's namespace names it, still lead to a live namespace?
 * 1: yes; 0: no (none has it, or the one that has it is being torn down:
 * its last user went and the kernel's worker has not yet dropped its ids,
 * RTM_GETNSID by NETNSA_NSID answers ENOENT); < 0: the kernel did not say. */
int netlink_nsid_alive(Netlink *nl, int nsid);
/* Every id nl's namespace has for another one (an RTM_GETNSID dump), in the
 * kernel's order, *ret malloc'd (NULL with none). */
int netlink_nsid_list(Netlink *nl, int **ret, size_t *ret_n);

/*
 * One RTM_NEWLINK on ifindex. The kernel (do_setlink) makes the move first,
 * then MAC, MTU, name (inside the target, after a move), alias, up/down and
 * master. A request refused part-way leaves what came before it applied: a
 * move stays made; a refused MTU changes nothing after it.
 */
enum {
    LINK_KEEP_STATE = 0,
    LINK_SET_UP,
    LINK_SET_DOWN,
};
typedef struct LinkChange {
    int netns_fd;       /* move there; < 0: stay (0 is a valid fd: set -1) */
    const char *name;   /* NULL: keep */
    unsigned mtu;       /* 0: keep */
    const char *alias;  /* NULL: keep; "": clear */
    const uint8_t *mac; /* 6 bytes; NULL: keep */
    int master;         /* ifindex; 0: release; -1: keep */
    int state;          /* LINK_* */
    /* NULL: keep; else flags, txqlen, group, link mode, broadcast and the
     * GSO/GRO limits as these (each that was reported) in the same request */
    const LinkSettings *settings;
} LinkChange;
#define LINK_CHANGE_INIT                                                                           \
    { .netns_fd = -1, .master = -1 }
int link_change(Netlink *nl, int ifindex, const LinkChange *c);
/* link_change() as an entry of b (index, or -errno: nothing added). */
int link_change_batch(NetlinkBatch *b, int ifindex, const LinkChange *c, const char *what,
                      const void *tag);
/* link_get_in() (ifindex > 0) or link_get_by_name() (name) as an entry of b:
 * the answer lands in *ret, read with link_reply_result() after the commit. */
typedef struct LinkReply {
    Link link;
    bool got;
    int err; /* a reply that was no link */
} LinkReply;
int link_get_batch(NetlinkBatch *b, int ifindex, const char *name, int target_nsid, LinkReply *ret,
                   const char *what, const void *tag);
/* What link_get() would have returned for that entry: 0, -ENODEV, ... */
int link_reply_result(const NetlinkBatchEntry *e, const LinkReply *r);
/* Move ifindex into netns_fd renamed newname there (NULL: keep), with more
 * of c applied in the same request, after checking on to_nl (a connection
 * in that namespace) that newname is free: -EEXIST, nothing moved. A window
 * remains (newname taken between the check and the move): the kernel moves
 * the link under its old name, then refuses the rename. */
int link_move(Netlink *nl, int ifindex, Netlink *to_nl, int netns_fd, const char *newname,
              const LinkChange *more);
int link_delete(Netlink *nl, int ifindex);
/* The alternative names of ifindex (IFLA_PROP_LIST), NULL-terminated, empty
 * (not NULL) when it has none. */
int link_altnames(Netlink *nl, int ifindex, char ***ret);
/* Add (RTM_NEWLINKPROP) or delete (RTM_DELLINKPROP) names as alternative
 * names of ifindex, in one request. */
int link_altnames_change(Netlink *nl, int ifindex, char *const *names, bool add);
/*
 * The rest of want on the link now is (read just before): every XDP program
 * detached, mode by mode (-EBUSY: a program held by a BPF link, which only
 * its holder can let go); a macvlan's mode, flags, broadcast queue and
 * source list (flushed; want's list must be empty); protocol down and its
 * reasons; carrier. Each is one request, sent only where now differs, and
 * *ret_step names the one that failed. A carrier or protocol-down change the
 * device does not take (-EOPNOTSUPP) is not an error: no holder could have
 * made it either.
 */
int link_settings_restore(Netlink *nl, const Link *now, const LinkSettings *want,
                          const char **ret_step);
/* Which of the settings a link_change() with c->settings and
 * link_settings_restore() set back differ between a and b: a
 * human-readable list ("txqueuelen 1 (was 1000), promisc on, ...") into buf;
 * false when none does. */
bool link_settings_differ(const LinkSettings *was, const LinkSettings *now, char *buf, size_t n);
/* Delete every link of nl's namespace stacked on ifindex there: whose
 * IFLA_LINK is it (a VLAN, macvlan, ipvlan, tunnel...), and, ifindex a
 * macvlan, the macvlans and ipvlans beside it on its lower (the kernel puts
 * a macvlan made on a macvlan on the lower), but none of the n_spare
 * ifindexes of spare (0s ignored: the other rails of the pod). How many in
 * *ret_n. */
int link_delete_uppers(Netlink *nl, int ifindex, const int *spare, size_t n_spare, unsigned *ret_n);
/* The same from seen (k links), one dump of nl's namespace taken earlier for
 * many rails: a link it shows stacked on ifindex is read again, with the
 * rail, and deleted only if it still is; none is asked for when it shows
 * none. One stacked since the look is link_delete_uppers_from()'s (the
 * caller's sweep once the rail left). -ENOENT: seen does not show ifindex
 * (the caller looks itself). */
int link_delete_uppers_seen(Netlink *nl, int ifindex, const Link *seen, size_t k, const int *spare,
                            size_t n_spare, unsigned *ret_n);
/* The same once the rail has left nl's namespace for the one open at
 * rail_netns_fd (rail: as that namespace reads it): the links left in nl's
 * whose lower is the rail there, or its lower (a macvlan's siblings), by the
 * id nl's namespace has for that one. A pod may stack a link on its rail
 * after link_delete_uppers() looked and before the rail left. */
int link_delete_uppers_from(Netlink *nl, int rail_netns_fd, const Link *rail, const int *spare,
                            size_t n_spare, unsigned *ret_n);
/* A veth pair a / b (tests and benchmarks make their rails with it). */
int veth_add(Netlink *nl, const char *a, const char *b);
/* A link name of kind (dummy, macvlan, ...), down; lower_ifindex: the link
 * a stacked kind sits on, 0 for none. -EOPNOTSUPP: the kernel has no such
 * driver. */
int link_add(Netlink *nl, const char *name, const char *kind, int lower_ifindex);
/* A VLAN name on lower_ifindex, down: id, protocol proto (ETH_P_8021Q or
 * ETH_P_8021AD), and the VLAN_FLAG_* bits of flags set (the others as the
 * kernel makes them). -EOPNOTSUPP: no 8021q driver ("Unknown device type"),
 * or a lower link that takes no VLANs ("VLANs not supported on device");
 * -EEXIST: the name, or that id and protocol on that lower, is taken. */
int vlan_add(Netlink *nl, const char *name, int lower_ifindex, uint16_t proto, uint16_t id,
             uint32_t flags);

/* The link event monitor: a non-blocking socket in the calling thread's
 * namespace subscribed to RTNLGRP_LINK; poll its fd, then dispatch. */
typedef enum LinkEventType {
    LINK_EVENT_NEW = 0, /* created or changed */
    LINK_EVENT_DEL,     /* deleted, or moved to another namespace */
} LinkEventType;
typedef struct LinkEvent {
    LinkEventType type;
    Link link;
} LinkEvent;
typedef void (*link_event_fn)(void *userdata, const LinkEvent *ev);
typedef struct LinkMonitor LinkMonitor;
int link_monitor_new(LinkMonitor **ret);
/* Also the link events of every namespace this one has an id for
 * (NETLINK_LISTEN_ALL_NSID, CAP_NET_BROADCAST), delivered as if they were
 * this namespace's: for a caller that only wants to be woken when a link
 * changes anywhere it can see, and looks again itself. */
int link_monitor_listen_all_nsid(LinkMonitor *m);
int link_monitor_fd(const LinkMonitor *m);
/* Read every pending message and call fn for each link event. -ENOBUFS when
 * the kernel dropped events: the caller re-reads every link it follows. */
int link_monitor_dispatch(LinkMonitor *m, link_event_fn fn, void *userdata);
void link_monitor_free(LinkMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(LinkMonitor *, link_monitor_free);

/* ---- SR-IOV VF admin state, through the PF (netlink-vf.c) ---- */

/*
 * What a PF says of one of its VFs (IFLA_VF_INFO), or what to set there. A
 * VF's driver cannot change these from inside: only a request on the PF
 * can. Read: a field the driver does not report is -1 (has_mac false). Set:
 * a field < 0 (has_mac false) is left as it is.
 */
typedef struct VfState {
    bool has_mac;
    uint8_t mac[6]; /* the administrative MAC; all zero: none set */
    int spoofchk;   /* 1 on, 0 off */
    int trust;      /* 1 trusted, 0 not */
    int link_state; /* IFLA_VF_LINK_STATE_AUTO, _ENABLE or _DISABLE */
} VfState;
#define VF_STATE_NONE                                                                              \
    { .spoofchk = -1, .trust = -1, .link_state = -1 }
/* The settings of VF vf of the PF at pf_ifindex (RTM_GETLINK with
 * RTEXT_FILTER_VF); -ENOENT when the PF lists no such VF. */
int vf_state_get(Netlink *nl, int pf_ifindex, unsigned vf, VfState *ret);
/* One setting of VF vf through its PF: an RTM_SETLINK with that one
 * IFLA_VF_* in IFLA_VFINFO_LIST / IFLA_VF_INFO, so that a refusal (a
 * driver without it: -EOPNOTSUPP) is that setting's. */
typedef enum VfField {
    VF_FIELD_MAC = 0,
    VF_FIELD_SPOOFCHK,
    VF_FIELD_TRUST,
    VF_FIELD_LINK_STATE,
    _VF_FIELD_MAX,
} VfField;
int vf_state_set(Netlink *nl, int pf_ifindex, unsigned vf, VfField field, const VfState *value);
/* Is field set in s (has_mac, or >= 0)? */
bool vf_state_has(const VfState *s, VfField field);
/* Do a and b agree on field (both set, same value)? */
bool vf_state_same(const VfState *a, const VfState *b, VfField field);
/* field of dst as src has it (set or not). */
void vf_state_copy(VfState *dst, const VfState *src, VfField field);

/* ---- addresses (netlink-addr.c) ---- */

/* cidr "10.0.0.2/24" or "fd00::2/64"; -EEXIST when it is there. */
int addr_add(Netlink *nl, int ifindex, const char *cidr);
int addr_add_batch(NetlinkBatch *b, int ifindex, const char *cidr, const char *what,
                   const void *tag);
/* Global-scope addresses of ifindex as "addr/prefix", NULL-terminated, in
 * kernel order; empty (not NULL) when none. From one dump of the namespace
 * per connection, taken again after any change this process made through
 * this layer: the many NICs of one ADD cost one dump. Free with strv_free. */
int addr_list(Netlink *nl, int ifindex, char ***ret);
/* Delete every global address of ifindex not in keep (CIDR strv). */
int addr_prune(Netlink *nl, int ifindex, char *const *keep);
/* Addresses of any scope the last read above took in from the kernel: one
 * link's (a dump filtered by the kernel), or every link's where the kernel
 * cannot filter (before 4.20). Tests count with it what a read costs. */
int addr_read_count(const Netlink *nl);

/* ---- routes, rules, VRF (netlink-route.c) ---- */

typedef struct RouteSpec {
    const char *dst; /* CIDR; "0.0.0.0/0" or "::/0" for default */
    const char *gw;  /* or NULL for an on-link route */
    const char *src; /* preferred source (an address; a /prefix is ignored), or NULL */
    uint32_t table;  /* RT_TABLE_MAIN when 0 */
    uint8_t scope;   /* RT_SCOPE_UNIVERSE (0) or RT_SCOPE_LINK (253) */
} RouteSpec;

/* -EEXIST when the route is there; -ENETDOWN: link down, -ENETUNREACH:
 * gateway not reachable. */
int route_add(Netlink *nl, int ifindex, const RouteSpec *r);
int route_add_batch(NetlinkBatch *b, int ifindex, const RouteSpec *r, const char *what,
                    const void *tag);
/* 0 if table holds a route to dst (via gw, when given) out of ifindex,
 * -ENOENT if not. */
int route_exists(Netlink *nl, int ifindex, const RouteSpec *r);

/* "from <src> lookup <table>" at priority prio; table 0 is -EINVAL.
 * add: -EEXIST when there; exists: 0 or -ENOENT; del: -ENOENT if absent. */
int rule_add(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio);
int rule_exists(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio);
int rule_del(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio);
int rule_add_batch(NetlinkBatch *b, const char *src_cidr, uint32_t table, uint32_t prio,
                   const char *what, const void *tag);

/* VRF (l3mdev) support: 0, -EOPNOTSUPP, or another -errno when the probe
 * failed. Creates and deletes a throwaway VRF "rgvrfp<tid>". */
int vrf_supported(Netlink *nl);
/* VRF name bound to table, up; its ifindex in *ret_ifindex (may be NULL).
 * -EEXIST when a link has that name; -EOPNOTSUPP without the driver. */
int vrf_add(Netlink *nl, const char *name, uint32_t table, int *ret_ifindex);

/*
 * The node's own NICs, in the calling thread's namespace: the output devices
 * of the main table's default routes (IPv4 and IPv6, every nexthop), and the
 * links with a global-scope address. Never to be handed to a pod.
 */
enum {
    NODE_NIC_DEFAULT_ROUTE = 1 << 0,
    NODE_NIC_ADDRESS = 1 << 1,
};
typedef struct NodeNic {
    char name[IF_NAMESIZE];
    unsigned uses; /* NODE_NIC_* */
} NodeNic;
int node_nics_list(NodeNic **ret, size_t *ret_n);
/* Why a node NIC is not a rail: "it carries the node's default route", ... */
const char *node_nic_use_str(unsigned uses);
