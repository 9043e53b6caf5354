/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A unit's NIC in a pod, found from the host's namespace by the identity the
 * CNI recorded (cni/locate.c's reasoning, read-only): what the pod cannot
 * change. The agent mounts neither /run/netns nor the host's PIDs, and a
 * socket or fd in a pod's namespace would keep it alive past the runtime's
 * delete (the CNI's DEL then waits for a NIC that never comes home): every
 * read here is one request on the host's socket naming the namespace by the
 * id the host has for it.
 */
#include "podnic.h"

#include <string.h>

static const uint8_t zero_mac[6];

/* A link in the namespace the host names nsid: an id that leads nowhere
 * (EINVAL from the kernel) is a namespace being torn down, whose ids go
 * before its links. */
static int read_in(Netlink *host, int ifindex, int nsid, Link *ret) {
    int r;

    if (nsid == LINK_NETNSID_UNASSIGNED)
        return -EINPROGRESS;
    r = link_get_in(host, ifindex, nsid, ret);
    return r == -EINVAL && nsid >= 0 ? -EINPROGRESS : r;
}

static void found(PodNicCache *c, int nsid, const Link *l) {
    if (!c)
        return;
    c->nsid = nsid;
    c->ifindex = l->ifindex;
}

/* A veth is the peer of its peer, which stays where the pod cannot reach
 * (the host, a fabric namespace): the peer names our end's namespace (as
 * the host names it: the kernel answers relative to the asker) and ifindex
 * there. */
static int veth_read(Netlink *host, const AttachedNic *n, PodNicCache *c, Link *ret) {
    Link peer, l;
    int nsid, r;

    r = link_get_in(host, n->peer_ifindex, n->peer_nsid, &peer);
    if (r == -ENODEV || r == -EINVAL ||
        (r >= 0 &&
         (!streq(peer.kind, "veth") || !streq(peer.name, n->peer_name) || peer.link <= 0)))
        return -ENODEV; /* a veth pair lives and dies together */
    if (r < 0)
        return r;
    /* SELF: our end is in the peer's own namespace */
    nsid = peer.link_netnsid == LINK_NETNSID_SELF ? n->peer_nsid : peer.link_netnsid;
    r = read_in(host, peer.link, nsid, &l);
    if (r < 0)
        return r;
    if (!streq(l.kind, "veth") || l.link != n->peer_ifindex)
        return -ESTALE;
    found(c, nsid, &l);
    *ret = l;
    return 0;
}

static bool parent_ours(const AttachedNic *n, const Link *l) {
    return streq(l->parent, n->parent) &&
           (!memcmp(n->perm_mac, zero_mac, 6) || !memcmp(l->perm, n->perm_mac, 6));
}

/* n's device among the links of the namespace nsid with its parent: 1 found,
 * 0 not there (or that namespace just went). */
static int parent_search(Netlink *host, const AttachedNic *n, int nsid, Link *ret) {
    _cleanup_free_ Link *v = NULL;
    size_t k = 0;
    int r = link_dump_in(host, nsid, n->parent, &v, &k);

    if (r == -EINVAL && nsid >= 0)
        return 0;
    if (r < 0)
        return r;
    for (size_t i = 0; i < k; i++)
        if (parent_ours(n, &v[i])) {
            *ret = v[i];
            return 1;
        }
    return 0;
}

/* A device with a parent is in exactly one namespace: where it was last
 * found, else the host's or one the host has an id for (a stale cached id,
 * reused by another namespace, fails the identity check). */
static int parent_read(Netlink *host, const AttachedNic *n, PodNicCache *c, Link *ret) {
    _cleanup_free_ int *ids = NULL;
    size_t k = 0;
    Link l;
    int r;

    if (c && c->ifindex > 0) {
        r = read_in(host, c->ifindex, c->nsid, &l);
        if (r >= 0 && parent_ours(n, &l)) {
            *ret = l;
            return 0;
        }
        if (r < 0 && r != -ENODEV && r != -EINPROGRESS)
            return r;
    }
    r = parent_search(host, n, LINK_NETNSID_SELF, &l);
    if (r > 0) {
        found(c, LINK_NETNSID_SELF, &l);
        *ret = l;
        return 0;
    }
    r = r < 0 ? r : netlink_nsid_list(host, &ids, &k);
    if (r < 0)
        return r;
    for (size_t i = 0; i < k; i++) {
        r = parent_search(host, n, ids[i], &l);
        if (r < 0)
            return r;
        if (r > 0) {
            found(c, ids[i], &l);
            *ret = l;
            return 0;
        }
    }
    /* the kernel drops a dying namespace's ids before it moves its devices
     * home: the one it was last seen in, no longer resolving, is that */
    if (c && c->ifindex > 0 && c->nsid >= 0 && netlink_nsid_alive(host, c->nsid) == 0)
        return -EINPROGRESS;
    return -ESTALE;
}

/* An anchored NIC is its anchor's lower link, wherever it is: the anchor (a
 * VLAN railgate made on it on the host, with a name made at random) names
 * its ifindex and namespace (cni/anchor.c). */
static int anchor_read(Netlink *host, const AttachedNic *n, PodNicCache *c, Link *ret) {
    Link a, l;
    int nsid, r;

    r = link_get_by_name(host, n->anchor, &a);
    if (r < 0)
        return r; /* -ENODEV: gone with its NIC */
    if (!streq(a.kind, "vlan") || a.vlan_id != n->anchor_vid || a.vlan_proto != n->anchor_proto ||
        a.link <= 0 || (n->anchor_ifindex > 0 && a.ifindex != n->anchor_ifindex))
        return -ESTALE; /* a link under its name that is not it */
    nsid = a.link_netnsid;
    r = read_in(host, a.link, nsid, &l);
    if (r < 0)
        return r;
    found(c, nsid, &l);
    *ret = l;
    return 0;
}

int podnic_read(Netlink *host, const AttachedNic *n, PodNicCache *c, Link *ret) {
    if (!host || !n || !ret)
        return -EINVAL;
    if (n->parent[0])
        return parent_read(host, n, c, ret);
    if (n->anchor[0])
        return anchor_read(host, n, c, ret);
    if (streq(n->kind, "veth") && n->peer_ifindex > 0)
        return veth_read(host, n, c, ret);
    return -EOPNOTSUPP;
}
