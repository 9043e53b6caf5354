/* SPDX-License-Identifier: Apache-2.0 */
/* macvlan rails on a shared lower link: who else is on the lower, and the refusal naming both. */
#include "lowers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far a link stacked on the lower is followed down (a VLAN on a
 * macvlan on the lower is two). */
#define STACK_DEPTH_MAX 8

typedef struct Facts {
    const RailNic *rails;
    size_t n_rails;
    const Link *links;
    size_t n_links;
    RgError *err;
} Facts;

static const Link *link_by_index(const Facts *f, int ifindex) {
    for (size_t i = 0; ifindex > 0 && i < f->n_links; i++)
        if (f->links[i].ifindex == ifindex)
            return &f->links[i];
    return NULL;
}

static const Link *link_by_name(const Facts *f, const char *name) {
    for (size_t i = 0; name && name[0] && i < f->n_links; i++)
        if (streq(f->links[i].name, name))
            return &f->links[i];
    return NULL;
}

/* The rail whose NIC l is, or NULL. */
static const RailNic *rail_of(const Facts *f, const Link *l) {
    for (size_t i = 0; l && i < f->n_rails; i++)
        if (f->rails[i].netdev && streq(f->rails[i].netdev, l->name))
            return &f->rails[i];
    return NULL;
}

/* Kinds whose changelink takes a mode and a source list from the pod. */
static bool is_macvlan(const Link *l) {
    return streq(l->kind, "macvlan") || streq(l->kind, "macvtap");
}

/* Kinds whose IFLA_LINK is the link they sit on (a veth's is its peer). */
static bool is_stacked(const Link *l) {
    static const char *const kinds[] = {"vlan", "macvlan", "macvtap", "ipvlan", "ipvtap", "macsec"};

    for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
        if (streq(l->kind, kinds[i]))
            return true;
    return false;
}

/* The link l sits on in this namespace, or NULL. */
static const Link *lower_of(const Facts *f, const Link *l) {
    if (!is_stacked(l) || l->link <= 0 || l->link_netnsid != LINK_NETNSID_SELF)
        return NULL;
    return link_by_index(f, l->link);
}

/* A rail whose NIC is not in the node's namespace (in a pod, most likely)
 * is known by the lower it was last seen on there. */
static bool away(const Facts *f, const RailNic *r) {
    return !link_by_name(f, r->netdev);
}

/* The link rail r's NIC sits on as a macvlan, or NULL: live while its NIC
 * is in the node's namespace, else where it was last seen (gone with its
 * lower when that is gone). */
static const Link *rail_lower(const Facts *f, const RailNic *r) {
    const Link *l = link_by_name(f, r->netdev);

    if (!l)
        return link_by_index(f, r->lower_ifindex);
    return is_macvlan(l) ? lower_of(f, l) : NULL;
}

static int refuse(const Facts *f, const RailNic *r, const char *what) {
    return rg_error(f->err, -EADDRINUSE, 0,
                    "%s (%s, tenant %s%s) is a macvlan on %s: a pod holding it can set it to mode "
                    "source and take every frame a leaf sends into that link; give each tenant's "
                    "macvlan rails a lower of their own that the node does not use",
                    r->unit, r->netdev, r->tenant,
                    away(f, r) ? ", not in the node's namespace now" : "", what);
}

/* Another tenant's macvlan rail on lower, or NULL. */
static const RailNic *other_tenant_on(const Facts *f, const RailNic *r, const Link *lower) {
    for (size_t i = 0; i < f->n_rails; i++) {
        const RailNic *o = &f->rails[i];
        if (o != r && rail_lower(f, o) == lower && !streq(o->tenant, r->tenant))
            return o;
    }
    return NULL;
}

/* Is the node's NIC n on lower: lower itself, or stacked on it (not
 * through rail r itself, whose own uppers go where it goes)? A rail's own
 * address is not the node's. */
static bool node_nic_on(const Facts *f, const RailNic *r, const NodeNic *n, const Link *lower,
                        const Link **ret_via) {
    const Link *l = link_by_name(f, n->name);

    if (!l || rail_of(f, l))
        return false;
    for (unsigned depth = 0; l && depth < STACK_DEPTH_MAX; depth++) {
        if (l == lower) {
            *ret_via = link_by_name(f, n->name);
            return true;
        }
        if (r->netdev && streq(l->name, r->netdev))
            return false;
        l = lower_of(f, l);
    }
    return false;
}

/* The lower of r as a checked rail, or NULL (not a macvlan, or away on a
 * lower that is gone); a live one railgate cannot judge is refused. */
static int checked_lower(const Facts *f, const RailNic *r, const Link **ret) {
    const Link *l = link_by_name(f, r->netdev);
    char what[160];

    *ret = rail_lower(f, r);
    if (!l || !is_macvlan(l))
        return 0;
    if (l->link_netnsid != LINK_NETNSID_SELF) {
        snprintf(what, sizeof(what),
                 "a lower link in another network namespace, where railgate cannot see who "
                 "else is on it");
        return refuse(f, r, what);
    }
    if (!*ret) {
        snprintf(what, sizeof(what), "lower link %d, which the node does not list", l->link);
        return refuse(f, r, what);
    }
    return 0;
}

static int check_one(const Facts *f, const RailNic *r, const NodeNic *nics, size_t n_nics) {
    const Link *lower, *via;
    const RailNic *o;
    char what[160];
    int k;

    k = checked_lower(f, r, &lower);
    if (k < 0 || !lower)
        return k;
    o = rail_of(f, lower);
    if (o) {
        snprintf(what, sizeof(what),
                 "%s, which is %s's NIC (tenant %s), the node's as long as no "
                 "pod holds it",
                 lower->name, o->unit, o->tenant);
        return refuse(f, r, what);
    }
    o = other_tenant_on(f, r, lower);
    if (o) {
        snprintf(what, sizeof(what), "%s, and so is %s (%s%s) of tenant %s", lower->name, o->unit,
                 o->netdev, away(f, o) ? ", not in the node's namespace now" : "", o->tenant);
        return refuse(f, r, what);
    }
    for (size_t i = 0; i < n_nics; i++)
        if (node_nic_on(f, r, &nics[i], lower, &via)) {
            if (via == lower)
                snprintf(what, sizeof(what), "%s, which is the node's own NIC (%s)", lower->name,
                         node_nic_use_str(nics[i].uses));
            else
                snprintf(what, sizeof(what), "%s, and so is the node's %s (%s)", lower->name,
                         via->name, node_nic_use_str(nics[i].uses));
            return refuse(f, r, what);
        }
    return 0;
}

int rail_lowers_check(const RailNic *rails, size_t n_rails, const Link *links, size_t n_links,
                      const NodeNic *nics, size_t n_nics, RgError *err) {
    Facts f = {rails, n_rails, links, n_links, err};
    int r;

    for (size_t i = 0; i < n_rails; i++) {
        if (!rails[i].check)
            continue;
        r = check_one(&f, &rails[i], nics, n_nics);
        if (r < 0)
            return r;
    }
    /* a rail not checked that sits on a checked one: the checked rail is
     * its lower (its own conflicts are all found above) */
    for (size_t i = 0; i < n_rails; i++) {
        const RailNic *lower_rail = rails[i].check ? NULL : rail_of(&f, rail_lower(&f, &rails[i]));
        if (lower_rail && lower_rail->check)
            return check_one(&f, &rails[i], nics, n_nics);
    }
    return 0;
}

static bool unit_in(const Unit *u, const Unit *const *only, size_t n_only) {
    if (!only)
        return true;
    for (size_t i = 0; i < n_only; i++)
        if (only[i] == u || streq(only[i]->id, u->id))
            return true;
    return false;
}

/* Is any rail's NIC a macvlan here, or one last seen on a lower? */
static bool any_macvlan(const RailNic *rails, size_t n, const Link *links, size_t n_links) {
    for (size_t i = 0; i < n; i++) {
        if (rails[i].lower_ifindex > 0)
            return true;
        for (size_t k = 0; k < n_links; k++)
            if (streq(links[k].name, rails[i].netdev) && is_macvlan(&links[k]))
                return true;
    }
    return false;
}

/*
 * any_macvlan() without listing the node: each rail's NIC asked by name, in
 * one batch (as many requests as rails, however many pods' links the node
 * has). 1: a rail's NIC is a macvlan (or was on a lower), 0: none is; < 0:
 * not known (a request failed other than for a NIC not here).
 */
static int rails_macvlan(const RailNic *rails, size_t n) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    _cleanup_free_ LinkReply *rep = calloc(n ? n : 1, sizeof(*rep));
    _cleanup_free_ int *entry = calloc(n ? n : 1, sizeof(*entry));
    int r = rep && entry ? 0 : -ENOMEM;

    for (size_t i = 0; r >= 0 && i < n; i++)
        if (rails[i].lower_ifindex > 0)
            return 1;
    r = r ?: netlink_open(-1, &nl);
    r = r ?: netlink_batch_new(nl, &b);
    for (size_t i = 0; r >= 0 && i < n; i++) {
        entry[i] = -1; /* no name a link can have: no link of the dump's either */
        if (rails[i].netdev && netlink_ifname_valid(rails[i].netdev))
            r = entry[i] =
                link_get_batch(b, 0, rails[i].netdev, LINK_NETNSID_SELF, &rep[i], "", NULL);
    }
    if (r < 0)
        return r;
    (void)netlink_batch_commit(b);
    for (size_t i = 0; i < n; i++) {
        if (entry[i] < 0)
            continue;
        int k = link_reply_result(netlink_batch_entry(b, (size_t)entry[i]), &rep[i]);
        if (k == -ENODEV)
            continue; /* not here (in a pod): as in a list of the node's links */
        if (k < 0)
            return k;
        /* a name asked finds an alternative name too: the dump matched primary names */
        if (streq(rep[i].link.name, rails[i].netdev) && is_macvlan(&rep[i].link))
            return 1;
    }
    return 0;
}

static int links_read(Link **ret, size_t *ret_n, RgError *err) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int r;

    r = netlink_open(-1, &nl);
    r = r ?: link_dump(nl, NULL, ret, ret_n);
    if (r < 0)
        return rg_error(err, r, 0, "cannot list the node's links: %s", strerror(-r));
    return 0;
}

int rail_lowers_note(Inventory *inv, const Inventory *prev, RgError *err) {
    _cleanup_free_ Link *links = NULL;
    size_t n_links = 0;
    int r;

    r = links_read(&links, &n_links, err);
    if (r < 0)
        return r;
    Facts f = {.links = links, .n_links = n_links, .err = err};
    for (size_t i = 0; i < inv->n_units; i++) {
        Unit *u = &inv->units[i];
        const Link *l = link_by_name(&f, u->netdev), *lower = NULL;
        const Unit *p = !l && prev ? inventory_find(prev, u->id) : NULL;
        if (l && is_macvlan(l))
            lower = lower_of(&f, l);
        u->lower_ifindex = lower ? lower->ifindex : 0;
        snprintf(u->lower, sizeof(u->lower), "%s", lower ? lower->name : "");
        if (p && streq(p->netdev, u->netdev)) {
            u->lower_ifindex = p->lower_ifindex;
            snprintf(u->lower, sizeof(u->lower), "%s", p->lower);
        }
    }
    return 0;
}

int rail_lowers_check_node(const Inventory *inv, const Unit *const *only, size_t n_only,
                           RgError *err) {
    _cleanup_free_ RailNic *rails = calloc(inv->n_units + 1, sizeof(RailNic));
    _cleanup_free_ Link *links = NULL;
    _cleanup_free_ NodeNic *nics = NULL;
    size_t n_links = 0, n_nics = 0;
    int r;

    if (!rails)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    for (size_t i = 0; i < inv->n_units; i++) {
        const Unit *u = &inv->units[i];
        rails[i] = (RailNic){
            .unit = u->id,
            .tenant =
                u->tenant < inv->config->n_tenants ? inv->config->tenants[u->tenant].name : "",
            .netdev = u->netdev,
            .lower_ifindex = u->lower_ifindex,
            .check = unit_in(u, only, n_only),
        };
    }
    /* the common node has no macvlan rail: the rails' own NICs say so */
    if (rails_macvlan(rails, inv->n_units) == 0)
        return 0;
    r = links_read(&links, &n_links, err);
    if (r < 0)
        return r;
    if (!any_macvlan(rails, inv->n_units, links, n_links))
        return 0;
    r = node_nics_list(&nics, &n_nics);
    if (r < 0)
        return rg_error(err, r, 0, "cannot read the node's routes and addresses: %s", strerror(-r));
    return rail_lowers_check(rails, inv->n_units, links, n_links, nics, n_nics, err);
}
