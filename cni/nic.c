/* One unit's NIC: record it, move it into the pod, configure it, put it back. */
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <strings.h>

#include "cidr.h"
#include "linkconf.h"
#include "linkid.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "ops.h"
#include "strv.h"

#define RULE_PRIORITY_BASE 1000 /* before main (32766), after local (0) */

/* With the kernel's own words where it gave them (extended ack). */
static int nl_error(RgError *err, int r, const char *what, const char *dev) {
    char kernel[256];

    if (linkconf_kernel_message(r, kernel, sizeof(kernel)))
        return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s (kernel: %s)", what, dev, strerror(-r),
                        kernel);
    return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s", what, dev, strerror(-r));
}

/*
 * Identity: what the pod cannot change. A device with a parent (a PCI
 * function, a VF) is the link whose parent device is that one, wherever it
 * is; a veth is the peer of its peer, which stays where the pod cannot reach
 * (the host, or the fabric side). Nothing else can be found again safely:
 * names, MACs, MTUs and ifindexes are the pod's to change or to forge.
 */
static int record_identity(const Unit *u, AttachedNic *n, RgError *err) {
    LinkId l, peer;
    int r;

    r = linkid_get_by_name(u->netdev, &l);
    if (r < 0)
        return nl_error(err, r, "reading", u->netdev);
    /* the link the name gave is the unit's PCI function (a name can change
     * hands between the inventory and now) */
    if (u->nic_pci[0] && strncmp(l.parent, "pci/", 4) == 0 &&
        strcasecmp(l.parent + 4, u->nic_pci) != 0)
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: netdev %s is PCI function %s, not the unit's %s; nothing was "
                        "moved",
                        u->id, u->netdev, l.parent + 4, u->nic_pci);
    snprintf(n->kind, sizeof(n->kind), "%s", l.kind);
    if (strlen(l.parent) >= sizeof(n->parent))
        return rg_error(err, -ENAMETOOLONG, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has a parent device name too long to record", u->id,
                        u->netdev);
    snprintf(n->parent, sizeof(n->parent), "%s", l.parent);
    n->host_ifindex = l.ifindex;
    memcpy(n->perm_mac, l.perm, sizeof(n->perm_mac));
    n->peer_ifindex = 0;
    n->peer_nsid = -1;
    n->peer_name[0] = 0;
    if (l.parent[0])
        return 0;
    if (!streq(l.kind, "veth"))
        return rg_error(err, -EOPNOTSUPP, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has no parent device and is not a veth: railgate could "
                        "not tell it from a pod's look-alike when it brings it home, so it does "
                        "not move it",
                        u->id, u->netdev);
    r = l.link > 0 ? linkid_get(l.link, l.link_netnsid, &peer) : -ENODEV;
    if (r < 0 || !streq(peer.kind, "veth"))
        return rg_error(err, r < 0 ? r : -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: the peer of veth %s cannot be read", u->id, u->netdev);
    n->peer_ifindex = peer.ifindex;
    n->peer_nsid = l.link_netnsid;
    snprintf(n->peer_name, sizeof(n->peer_name), "%s", peer.name);
    return 0;
}

int nic_record(const NicPlan *p, AttachedNic *n, RgError *err) {
    const Unit *u = p->unit;
    LinkInfo l;
    int r;

    if (!u->netdev[0])
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: its NIC has no netdev in the host namespace", u->id);
    r = link_get_by_name(u->netdev, &l);
    if (r == -ENODEV)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is not in the host namespace (in another pod?)", u->id,
                        u->netdev);
    if (r < 0)
        return nl_error(err, r, "reading", u->netdev);
    r = record_identity(u, n, err);
    if (r < 0)
        return r;
    snprintf(n->unit, sizeof(n->unit), "%s", u->id);
    snprintf(n->host_name, sizeof(n->host_name), "%s", l.name);
    snprintf(n->pod_name, sizeof(n->pod_name), "%s", u->pod_ifname);
    snprintf(n->pci, sizeof(n->pci), "%s", u->nic_pci);
    memcpy(n->mac, l.mac, sizeof(n->mac));
    n->mtu = l.mtu;
    n->was_up = l.flags & IFF_UP;
    r = addr_list(l.name, &n->host_addrs);
    if (r < 0)
        return nl_error(err, r, "reading addresses of", l.name);
    for (char **a = p->addrs; a && *a; a++)
        if (strv_push(&n->pod_addrs, *a) < 0)
            return -ENOMEM;
    snprintf(n->gateway, sizeof(n->gateway), "%s", p->gateway ? p->gateway : "");
    /* table mode: a table and a source rule per rail; VRF mode: the
     * tenant's VRF table, and the l3mdev rule instead of ours */
    bool vrf = p->tenant->vrf.mode == ROUTING_MODE_VRF;
    n->table = vrf ? p->tenant->vrf.table : p->tenant->vrf.table + u->rail;
    n->rule_prio = vrf ? 0 : RULE_PRIORITY_BASE + u->rail;
    n->pod_mtu = p->rail ? p->rail->mtu : 0;
    n->stage = NIC_PLANNED;
    return 0;
}

int nic_move_in(const NicPlan *p, AttachedNic *n, int pod_netns, RgError *err) {
    int r = link_move_to_netns_as(n->host_name, pod_netns, n->pod_name);

    if (r == -EEXIST)
        return rg_error(err, r, CNI_ERR_DEVICE, "unit %s: the pod already has an interface %s",
                        n->unit, n->pod_name);
    if (r < 0)
        return nl_error(err, r, "moving into the pod", n->host_name);
    n->stage = NIC_MOVED;
    return 0;
}

typedef struct PodOp {
    const NicPlan *plan;
    AttachedNic *nic;
    RgError *err;
} PodOp;

/* Per-rail table: the connected subnet, the tenant VRF's prefixes and a
 * default via the rail gateway; a rule sends traffic from the rail's address
 * to that table, so each rail answers and sends on its own wire. */
static int pod_routes_for(PodOp *o, const char *addr) {
    const AttachedNic *n = o->nic;
    char net[64], host[64], src[64];
    Cidr c, gw;
    int r;

    if (cidr_parse(addr, false, &c) < 0)
        return rg_error(o->err, -EINVAL, CNI_ERR_INVALID_CONFIG, "bad address %s", addr);
    cidr_format_network(&c, net, sizeof(net));
    cidr_format_host(&c, host, sizeof(host));
    cidr_format_addr(&c, src, sizeof(src));
    RouteSpec connected = {.dst = net, .src = src, .table = n->table, .scope = RT_SCOPE_LINK};
    r = route_add(n->pod_name, &connected);
    if (r < 0 && r != -EEXIST)
        return nl_error(o->err, r, "adding the connected route on", n->pod_name);
    if (n->gateway[0] && cidr_parse(n->gateway, true, &gw) >= 0 && gw.family == c.family) {
        for (char **pfx = o->plan->tenant->vrf.prefixes; pfx && *pfx; pfx++) {
            Cidr pc;
            if (cidr_parse(*pfx, false, &pc) < 0 || pc.family != c.family)
                continue;
            RouteSpec vrf = {.dst = *pfx, .gw = n->gateway, .src = src, .table = n->table};
            r = route_add(n->pod_name, &vrf);
            if (r < 0 && r != -EEXIST)
                return nl_error(o->err, r, "adding a VRF route on", n->pod_name);
        }
        RouteSpec def = {.dst = c.family == AF_INET ? "0.0.0.0/0" : "::/0",
                         .gw = n->gateway,
                         .src = src,
                         .table = n->table};
        r = route_add(n->pod_name, &def);
        if (r < 0 && r != -EEXIST)
            return nl_error(o->err, r, "adding the default route on", n->pod_name);
    }
    if (!n->rule_prio)
        return 0;
    r = rule_add(host, n->table, n->rule_prio);
    if (r < 0 && r != -EEXIST)
        return nl_error(o->err, r, "adding the source rule for", n->pod_name);
    return 0;
}

static int pod_configure(void *arg) {
    PodOp *o = arg;
    AttachedNic *n = o->nic;
    char alias[128];
    int r;

    snprintf(alias, sizeof(alias), "railgate:%s:%s", n->unit, n->host_name);
    r = link_setup(n->pod_name, n->pod_mtu, alias);
    if (r < 0)
        return nl_error(o->err, r, "setting up", n->pod_name);
    for (char **a = n->pod_addrs; a && *a; a++) {
        r = addr_add(n->pod_name, *a);
        if (r < 0 && r != -EEXIST)
            return nl_error(o->err, r, "adding an address to", n->pod_name);
    }
    if (o->plan->tenant->vrf.mode == ROUTING_MODE_VRF) {
        r = vrf_supported();
        if (r < 0)
            return rg_error(o->err, r, CNI_ERR_VRF,
                            "tenant %s asks for VRF-device routing, and this kernel has no vrf "
                            "(l3mdev) driver; use \"mode\": \"table\"",
                            o->plan->tenant->name);
        r = vrf_add(o->plan->tenant->vrf.name, o->plan->tenant->vrf.table);
        if (r >= 0 || r == -EEXIST)
            r = link_set_master(n->pod_name, o->plan->tenant->vrf.name);
        if (r < 0)
            return nl_error(o->err, r, "enslaving to the VRF", n->pod_name);
        /* then the routes below go to the VRF's table; with several rails the
         * first rail's default and prefix routes stand, the others' exist */
    }
    for (char **a = n->pod_addrs; a && *a; a++) {
        r = pod_routes_for(o, *a);
        if (r < 0)
            return r;
    }
    return 0;
}

int nic_configure(const NicPlan *p, AttachedNic *n, int pod_netns, RgError *err) {
    PodOp o = {.plan = p, .nic = n, .err = err};

    return netns_run(pod_netns, pod_configure, &o);
}

typedef enum Where {
    WHERE_HOST,
    WHERE_POD,
    WHERE_ELSEWHERE, /* alive, in a namespace railgate did not make */
} Where;

typedef struct ParentSearch {
    const AttachedNic *nic;
    int ifindex; /* 0: not here */
    char name[IF_NAMESIZE];
} ParentSearch;

static int parent_search_here(void *arg) {
    ParentSearch *s = arg;
    _cleanup_free_ LinkId *v = NULL;
    size_t n = 0;
    static const uint8_t zero[6];
    int r = linkid_find_parent(s->nic->parent, &v, &n);

    s->ifindex = 0;
    for (size_t i = 0; r >= 0 && i < n; i++) {
        /* the permanent address, where there is one, must agree too */
        if (memcmp(s->nic->perm_mac, zero, 6) && memcmp(v[i].perm, s->nic->perm_mac, 6))
            continue;
        s->ifindex = v[i].ifindex;
        snprintf(s->name, sizeof(s->name), "%s", v[i].name);
        break;
    }
    return r;
}

/* Where n's own device is, and its ifindex there. -ENODEV: a veth that no
 * longer exists (its peer went with it). Runs in the host namespace. */
static int nic_locate(const AttachedNic *n, int pod_netns, int host_netns, Where *ret_where,
                      int *ret_ifindex) {
    LinkId peer;
    int id, r;

    if (n->parent[0]) {
        ParentSearch s = {.nic = n};
        if (pod_netns >= 0) {
            r = netns_run(pod_netns, parent_search_here, &s);
            if (r < 0)
                return r;
            if (s.ifindex > 0) {
                *ret_where = WHERE_POD;
                *ret_ifindex = s.ifindex;
                return 0;
            }
        }
        r = parent_search_here(&s);
        if (r < 0)
            return r;
        *ret_where = s.ifindex > 0 ? WHERE_HOST : WHERE_ELSEWHERE;
        *ret_ifindex = s.ifindex;
        return 0;
    }
    if (!streq(n->kind, "veth"))
        return -EOPNOTSUPP;
    r = linkid_get(n->peer_ifindex, n->peer_nsid, &peer);
    if (r == -ENODEV || (r >= 0 && (!streq(peer.kind, "veth") || !streq(peer.name, n->peer_name))))
        return -ENODEV; /* a veth pair lives and dies together */
    if (r < 0)
        return r;
    *ret_ifindex = peer.link;
    /* the peer names the namespace our veth is in, by the id that namespace
     * has here (the kernel answers relative to the asker); -1: the peer's
     * own namespace */
    if (peer.link_netnsid < 0) {
        *ret_where = n->peer_nsid < 0 ? WHERE_HOST : WHERE_ELSEWHERE;
        return 0;
    }
    r = linkid_nsid(host_netns, -1, &id);
    if (r < 0)
        return r;
    if (id >= 0 && peer.link_netnsid == id) {
        *ret_where = WHERE_HOST;
        return 0;
    }
    if (pod_netns >= 0) {
        r = linkid_nsid(pod_netns, -1, &id);
        if (r < 0)
            return r;
        if (id >= 0 && peer.link_netnsid == id) {
            *ret_where = WHERE_POD;
            return 0;
        }
    }
    *ret_where = WHERE_ELSEWHERE;
    return 0;
}

typedef struct MoveOut {
    const AttachedNic *nic;
    int ifindex;
    int host_netns;
} MoveOut;

/* Inside the pod: send the NIC at ifindex home, under its host name if free. */
static int pod_move_out(void *arg) {
    MoveOut *m = arg;
    const AttachedNic *n = m->nic;
    int r;

    for (char **a = n->pod_addrs; n->rule_prio && a && *a; a++) {
        Cidr c;
        char host[64];
        if (cidr_parse(*a, false, &c) >= 0) {
            cidr_format_host(&c, host, sizeof(host));
            (void)rule_del(host, n->table, n->rule_prio); /* best effort: the pod may go on */
        }
    }
    (void)linkid_set_up(m->ifindex, false);
    r = linkid_move(m->ifindex, m->host_netns, n->host_name);
    if (r == -EEXIST) /* the host name is taken: bring it home, sort the name out there */
        r = linkid_move(m->ifindex, m->host_netns, NULL);
    return r;
}

static int host_restore(const AttachedNic *n, int ifindex, RgError *err) {
    LinkId l;
    int r;

    r = linkid_get(ifindex, -1, &l);
    if (r < 0)
        return nl_error(err, r, "reading", n->host_name);
    if (!streq(l.name, n->host_name)) {
        (void)linkid_set_up(ifindex, false);
        r = linkid_rename(ifindex, n->host_name);
        if (r < 0)
            return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: cannot give %s its name %s back: %s",
                            n->unit, l.name, n->host_name, strerror(-r));
    }
    r = link_set_alias(n->host_name, "");
    if (r >= 0 && memcmp(l.mac, n->mac, 6))
        r = linkid_set_mac(ifindex, n->mac);
    if (r >= 0 && n->mtu)
        r = link_set_mtu(n->host_name, n->mtu);
    /* addresses the pod added do not come to the host with it */
    if (r >= 0)
        r = linkid_addrs_prune(ifindex, n->host_addrs);
    for (char **a = n->host_addrs; r >= 0 && a && *a; a++) {
        r = addr_add(n->host_name, *a);
        if (r == -EEXIST)
            r = 0;
    }
    if (r >= 0)
        r = link_set_up(n->host_name, n->was_up);
    return r < 0 ? nl_error(err, r, "restoring", n->host_name) : 0;
}

static int not_found(const AttachedNic *n, RgError *err) {
    return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                    "unit %s: NIC %s (%s%s) is neither in the pod nor on the host (the pod moved "
                    "it elsewhere?); railgate brings home nothing else: the record and the unit's "
                    "claim stay until it is back",
                    n->unit, n->host_name, n->parent[0] ? "parent device " : "veth, peer ",
                    n->parent[0] ? n->parent : n->peer_name);
}

int nic_restore(const AttachedNic *n, int pod_netns, int host_netns, RgError *err) {
    Where where;
    int ifindex = 0, r;

    /* A planned NIC was recorded before its move, and a crash may have come
     * between the move and the record of it: look before deciding that it
     * never left. Only its identity says which link is ours: the pod may
     * hold look-alikes under any name, with any MAC. */
    r = nic_locate(n, pod_netns, host_netns, &where, &ifindex);
    if (r == -ENODEV)
        return r;
    if (r == -EOPNOTSUPP)
        return rg_error(err, r, CNI_ERR_DEVICE, "unit %s: the record of NIC %s cannot identify it",
                        n->unit, n->host_name);
    if (r < 0)
        return nl_error(err, r, "looking for", n->host_name);
    if (where == WHERE_ELSEWHERE)
        return not_found(n, err);
    if (where == WHERE_POD) {
        MoveOut m = {.nic = n, .ifindex = ifindex, .host_netns = host_netns};
        r = netns_run(pod_netns, pod_move_out, &m);
        if (r < 0)
            return nl_error(err, r, "moving out of the pod", n->host_name);
        /* the move names no link by a name the pod chose; still, what
         * arrived must be ours */
        r = nic_locate(n, pod_netns, host_netns, &where, &ifindex);
        if (r < 0 && r != -ENODEV)
            return nl_error(err, r, "looking for", n->host_name);
        if (r == -ENODEV || where != WHERE_HOST)
            return not_found(n, err);
        return host_restore(n, ifindex, err);
    }
    /* home, moved or not: a planned entry may have been set up in the pod
     * (MTU, alias) before it came back; restoring is idempotent */
    return host_restore(n, ifindex, err);
}

typedef struct CheckOp {
    const AttachedNic *nic;
    int ifindex;
    RgError *err;
} CheckOp;

static int pod_check(void *arg) {
    CheckOp *o = arg;
    const AttachedNic *n = o->nic;
    _cleanup_(strv_freep) char **addrs = NULL;
    LinkInfo l;
    int r;

    r = link_get_by_index(o->ifindex, &l);
    if (r < 0)
        return rg_error(o->err, -ENODEV, CNI_ERR_CHECK, "%s is missing from the pod", n->pod_name);
    if (!streq(l.name, n->pod_name))
        return rg_error(o->err, -EIO, CNI_ERR_CHECK,
                        "the NIC of unit %s is called %s in the pod, not %s", n->unit, l.name,
                        n->pod_name);
    if (!(l.flags & IFF_UP))
        return rg_error(o->err, -EIO, CNI_ERR_CHECK, "%s is down", n->pod_name);
    if (n->pod_mtu && l.mtu != n->pod_mtu)
        return rg_error(o->err, -EIO, CNI_ERR_CHECK, "%s has MTU %u, want %u", n->pod_name, l.mtu,
                        n->pod_mtu);
    if (addr_list(n->pod_name, &addrs) < 0)
        return rg_error(o->err, -EIO, CNI_ERR_CHECK, "cannot read addresses of %s", n->pod_name);
    for (char **a = n->pod_addrs; a && *a; a++) {
        Cidr c;
        char host[64], src[64], net[64];
        if (!strv_contains(addrs, *a))
            return rg_error(o->err, -EIO, CNI_ERR_CHECK, "%s lacks address %s", n->pod_name, *a);
        if (cidr_parse(*a, false, &c) < 0)
            continue;
        cidr_format_host(&c, host, sizeof(host));
        cidr_format_addr(&c, src, sizeof(src));
        cidr_format_network(&c, net, sizeof(net));
        if (n->rule_prio && rule_exists(host, n->table, n->rule_prio) < 0)
            return rg_error(o->err, -EIO, CNI_ERR_CHECK, "rule from %s lookup %u is missing", host,
                            n->table);
        RouteSpec conn = {.dst = net, .table = n->table, .scope = RT_SCOPE_LINK};
        if (route_exists(n->pod_name, &conn) < 0)
            return rg_error(o->err, -EIO, CNI_ERR_CHECK, "route %s dev %s table %u is missing", net,
                            n->pod_name, n->table);
        if (!n->gateway[0] || !n->rule_prio) /* VRF mode: one default for all rails */
            continue;
        RouteSpec def = {
            .dst = c.family == AF_INET ? "0.0.0.0/0" : "::/0", .gw = n->gateway, .table = n->table};
        if (route_exists(n->pod_name, &def) < 0)
            return rg_error(o->err, -EIO, CNI_ERR_CHECK, "default route via %s table %u is missing",
                            n->gateway, n->table);
    }
    return 0;
}

int nic_check(const AttachedNic *n, int pod_netns, RgError *err) {
    _cleanup_close_ int host_netns = -EBADF;
    CheckOp o = {.nic = n, .err = err};
    Where where;
    int r;

    r = netns_open_current(&host_netns);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot open the host network namespace");
    r = nic_locate(n, pod_netns, host_netns, &where, &o.ifindex);
    if (r == -ENODEV || (r >= 0 && where != WHERE_POD))
        return rg_error(err, -ENODEV, CNI_ERR_CHECK, "the NIC of unit %s (%s) is not in the pod",
                        n->unit, n->host_name);
    if (r < 0)
        return nl_error(err, r, "looking for", n->host_name);
    return netns_run(pod_netns, pod_check, &o);
}
