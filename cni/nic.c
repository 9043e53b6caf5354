/* One unit's NIC: record it, move it into the pod, configure it, put it back. */
#include <linux/rtnetlink.h>
#include <stdio.h>

#include "cidr.h"
#include "linkconf.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "ops.h"
#include "strv.h"

#define RULE_PRIORITY_BASE 1000 /* before main (32766), after local (0) */

static int nl_error(RgError *err, int r, const char *what, const char *dev) {
    return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s", what, dev, strerror(-r));
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
    r = link_set_alias(n->pod_name, alias);
    if (r >= 0 && n->pod_mtu)
        r = link_set_mtu(n->pod_name, n->pod_mtu);
    if (r >= 0)
        r = link_set_up(n->pod_name, true);
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

typedef struct MoveOut {
    const AttachedNic *nic;
    int host_netns;
    bool by_mac; /* only the NIC with the recorded MAC is ours */
    bool found;
} MoveOut;

/* Inside the pod: find the NIC (by name, else by MAC) and send it home. */
static int pod_move_out(void *arg) {
    MoveOut *m = arg;
    const AttachedNic *n = m->nic;
    char name[IF_NAMESIZE];
    LinkInfo l;
    int r;

    if (link_get_by_name(n->pod_name, &l) >= 0 && (!m->by_mac || !memcmp(l.mac, n->mac, 6)))
        snprintf(name, sizeof(name), "%s", l.name);
    else if (link_find_by_mac(n->mac, name, sizeof(name)) < 0)
        return 0; /* not in the pod: already home, or gone */
    m->found = true;
    for (char **a = n->pod_addrs; n->rule_prio && a && *a; a++) {
        Cidr c;
        char host[64];
        if (cidr_parse(*a, false, &c) >= 0) {
            cidr_format_host(&c, host, sizeof(host));
            (void)rule_del(host, n->table, n->rule_prio); /* best effort: the pod may go on */
        }
    }
    (void)link_set_up(name, false);
    r = link_move_to_netns_as(name, m->host_netns, n->host_name);
    if (r == -EEXIST) /* the host name is taken: bring it home, sort the name out there */
        r = link_move_to_netns(name, m->host_netns);
    return r;
}

/* On the host: the NIC under its original name, or stranded under its
 * pod-side name (or the kernel's devN) after its namespace died. */
static int host_find(const AttachedNic *n, char *name, size_t len) {
    LinkInfo l;

    if (link_get_by_name(n->host_name, &l) >= 0 && !memcmp(l.mac, n->mac, 6)) {
        snprintf(name, len, "%s", l.name);
        return 0;
    }
    return link_find_by_mac(n->mac, name, len);
}

static int host_restore(const AttachedNic *n, const char *name, RgError *err) {
    int r = 0;

    if (!streq(name, n->host_name)) {
        (void)link_set_up(name, false);
        r = link_rename(name, n->host_name);
        if (r < 0)
            return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: cannot give %s its name %s back: %s",
                            n->unit, name, n->host_name, strerror(-r));
    }
    r = link_set_alias(n->host_name, "");
    if (r >= 0 && n->mtu)
        r = link_set_mtu(n->host_name, n->mtu);
    for (char **a = n->host_addrs; r >= 0 && a && *a; a++) {
        r = addr_add(n->host_name, *a);
        if (r == -EEXIST)
            r = 0;
    }
    if (r >= 0)
        r = link_set_up(n->host_name, n->was_up);
    return r < 0 ? nl_error(err, r, "restoring", n->host_name) : 0;
}

int nic_restore(const AttachedNic *n, int pod_netns, int host_netns, RgError *err) {
    bool planned = n->stage == NIC_PLANNED;
    MoveOut m = {.nic = n, .host_netns = host_netns, .by_mac = planned};
    char name[IF_NAMESIZE];
    int r;

    /* A planned NIC was recorded before its move, and a crash may have come
     * between the move and the record of it: look before deciding that it
     * never left. Then only its MAC identifies it: the pod may hold an
     * interface of its own under the pod-side name. */
    if (pod_netns >= 0) {
        r = netns_run(pod_netns, pod_move_out, &m);
        if (r < 0)
            return nl_error(err, r, "moving out of the pod", n->pod_name);
    }
    r = host_find(n, name, sizeof(name));
    if (planned && !m.found && (r < 0 || streq(name, n->host_name)))
        return 0; /* it never left the host */
    if (r == -ENODEV)
        return -ENODEV;
    if (r < 0)
        return nl_error(err, r, "looking for", n->host_name);
    return host_restore(n, name, err);
}

static int pod_check(void *arg) {
    PodOp *o = arg;
    const AttachedNic *n = o->nic;
    _cleanup_(strv_freep) char **addrs = NULL;
    LinkInfo l;
    int r;

    r = link_get_by_name(n->pod_name, &l);
    if (r < 0)
        return rg_error(o->err, -ENODEV, CNI_ERR_CHECK, "%s is missing from the pod", n->pod_name);
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
    PodOp o = {.nic = (AttachedNic *)n, .err = err};

    return netns_run(pod_netns, pod_check, &o);
}
