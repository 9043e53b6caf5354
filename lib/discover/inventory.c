/* SPDX-License-Identifier: Apache-2.0 */
/* Build the node's rail units from the node config, hwloc discovery and sysfs. */
#include "discover.h"

#include <stdio.h>

#include "netlink.h"
#include "strv.h"
#include "sysfs.h"
#include "topology.h"

/* What one rail resolves to before it is split into units. */
typedef struct RailSource {
    unsigned index;
    const RailConfig *cfg;
    const TopoDevice *gpu; /* from the topology, or NULL */
    const TopoDevice *nic; /* from the topology, or NULL */
} RailSource;

typedef struct Builder {
    const NodeConfig *c;
    const Topology *topo;   /* NULL without discovery */
    const Pairing *pairing; /* NULL without discovery */
    Inventory *inv;
    size_t cap;
    char **skipped; /* NICs discovery skipped, and why (also in the notes) */
    RgError *err;
} Builder;

static int copy_str(char *dst, size_t n, const char *src) {
    if (strlen(src) >= n)
        return -ENAMETOOLONG;
    strcpy(dst, src);
    return 0;
}

static const TopoDevice *topo_find(const TopoDevice *devs, size_t n, const char *pci) {
    for (size_t i = 0; pci && i < n; i++)
        if (strcasecmp(devs[i].pci, pci) == 0)
            return &devs[i];
    return NULL;
}

static const TopoPair *pair_for_rail(const Builder *b, unsigned k) {
    for (size_t i = 0; b->pairing && i < b->pairing->n_pairs; i++)
        if (b->pairing->pairs[i].rail == k)
            return &b->pairing->pairs[i];
    return NULL;
}

/* Resolve rail k: explicit config wins, discovery fills what is missing. */
static int rail_resolve(const Builder *b, unsigned k, RailSource *ret) {
    const RailConfig *rc = config_find_rail(b->c, k);
    const TopoPair *p = pair_for_rail(b, k);
    RailSource s = {.index = k, .cfg = rc};

    if (rc && rc->gpu.present)
        s.gpu = b->topo ? topo_find(b->topo->gpus, b->topo->n_gpus, rc->gpu.pci) : NULL;
    else if (p)
        s.gpu = &b->topo->gpus[p->gpu];
    if (rc && rc->nic.present)
        s.nic = b->topo ? topo_find(b->topo->nics, b->topo->n_nics, rc->nic.pci) : NULL;
    else if (p)
        s.nic = &b->topo->nics[p->nic];
    else if (b->skipped) {
        _cleanup_free_ char *why = strv_join(b->skipped, "; ");
        return rg_error(b->err, -EINVAL, 0,
                        "rail %u: no NIC configured and none discovered for it (%s)", k,
                        why ? why : "NICs were skipped");
    } else
        return rg_error(b->err, -EINVAL, 0, "rail %u: no NIC configured and none discovered for it",
                        k);
    *ret = s;
    return 0;
}

static bool dev_exists(const NodeConfig *c, const char *path) {
    char host[4096];

    return (size_t)snprintf(host, sizeof(host), "%s%s", c->dev_root, path) < sizeof(host) &&
           access(host, F_OK) >= 0;
}

static int push_dev_if_exists(const NodeConfig *c, char ***l, const char *path) {
    return dev_exists(c, path) ? strv_push(l, path) : 0;
}

static int gpu_fill_nvidia(const Builder *b, Unit *u, const char *pci) {
    const NodeConfig *c = b->c;
    char uuid[64] = "";
    int minor = -1, r;

    if (procfs_nvidia_gpu(c->proc_root, pci, &minor, uuid, sizeof(uuid)) < 0)
        return 0;
    if (!u->gpu_id[0])
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%s", uuid[0] ? uuid : "");
    if (!u->gpu_id[0])
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%d", minor);
    r = strv_pushf(&u->gpu_devices, "/dev/nvidia%d", minor);
    if (r < 0)
        return r;
    static const char *const ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                      "/dev/nvidia-modeset"};
    for (size_t i = 0; i < ELEMENTSOF(ctl); i++) {
        r = push_dev_if_exists(c, &u->gpu_ctl_devices, ctl[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int gpu_fill_amd(const Builder *b, Unit *u, const char *pci) {
    char render[32];
    int r;

    if (sysfs_drm_render(b->c->sysfs_root, pci, render, sizeof(render)) < 0)
        return 0;
    r = strv_pushf(&u->gpu_devices, "/dev/dri/%s", render);
    if (r < 0)
        return r;
    return push_dev_if_exists(b->c, &u->gpu_ctl_devices, "/dev/kfd");
}

static int unit_fill_gpu(const Builder *b, const RailSource *s, Unit *u) {
    const GpuConfig *g = s->cfg && s->cfg->gpu.present ? &s->cfg->gpu : NULL;
    const char *pci = g ? g->pci : s->gpu ? s->gpu->pci : NULL;
    int r;

    if (!g && !s->gpu)
        return 0;
    u->has_gpu = true;
    if (pci && copy_str(u->gpu_pci, sizeof(u->gpu_pci), pci) < 0)
        return rg_error(b->err, -EINVAL, 0, "rail %u: bad GPU PCI address", s->index);
    if (g && g->uuid)
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%s", g->uuid);
    else if (s->gpu && s->gpu->uuid[0])
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%s", s->gpu->uuid);
    else if (g && g->minor >= 0)
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%d", g->minor);

    if (g && g->n_devices > 0) {
        for (size_t i = 0; i < g->n_devices; i++) {
            r = strv_push(&u->gpu_devices, g->devices[i]);
            if (r < 0)
                return r;
        }
    } else if (pci) {
        bool amd = s->gpu && s->gpu->vendor == 0x1002;
        r = amd ? gpu_fill_amd(b, u, pci) : gpu_fill_nvidia(b, u, pci);
        if (r < 0)
            return r;
    }
    if (!u->gpu_id[0])
        snprintf(u->gpu_id, sizeof(u->gpu_id), "%s", g && g->simulated ? g->simulated : pci);
    return 0;
}

/* The NIC (PF) of the rail: its PCI address and netdev, as far as known. */
static void rail_nic(const Builder *b, const RailSource *s, char *pci, size_t pn, char *netdev,
                     size_t nn) {
    const NicConfig *n = s->cfg && s->cfg->nic.present ? &s->cfg->nic : NULL;

    pci[0] = netdev[0] = 0;
    if (n && n->name) {
        snprintf(netdev, nn, "%s", n->name);
        if (sysfs_netdev_pci(b->c->sysfs_root, n->name, pci, pn) < 0)
            pci[0] = 0;
    } else if (n && n->pci) {
        snprintf(pci, pn, "%s", n->pci);
        if (sysfs_pci_netdev(b->c->sysfs_root, n->pci, netdev, nn) < 0)
            netdev[0] = 0;
    } else if (s->nic) {
        snprintf(pci, pn, "%s", s->nic->pci);
        snprintf(netdev, nn, "%s", s->nic->netdev);
    }
}

/* The RDMA device's nodes: its uverbs (health reads its absence), rdma_cm,
 * its ports' umad where the config asks. */
static int unit_fill_rdma_nodes(const Builder *b, Unit *u) {
    _cleanup_(strv_freep) char **umads = NULL;
    int r;

    if (sysfs_rdma_uverbs(b->c->sysfs_root, u->rdma, u->uverbs, sizeof(u->uverbs)) >= 0) {
        r = strv_pushf(&u->rdma_devices, "/dev/infiniband/%s", u->uverbs);
        if (r < 0)
            return r;
    } else
        u->uverbs[0] = 0;
    r = strv_push(&u->rdma_devices, "/dev/infiniband/rdma_cm");
    if (r < 0 || !b->c->rdma.umad)
        return r;
    r = sysfs_rdma_umads(b->c->sysfs_root, u->rdma, &umads);
    if (r == -ENOMEM)
        return r;
    for (char **m = r >= 0 ? umads : NULL; m && *m; m++) {
        r = strv_pushf(&u->rdma_devices, "/dev/infiniband/%s", *m);
        if (r < 0)
            return r;
    }
    return 0;
}

static int unit_fill_rdma(const Builder *b, const RailSource *s, Unit *u) {
    const NicConfig *n = s->cfg && s->cfg->nic.present ? &s->cfg->nic : NULL;
    int r;

    if (n && n->rdma && !u->is_vf)
        snprintf(u->rdma, sizeof(u->rdma), "%s", n->rdma);
    else if (u->nic_pci[0] &&
             sysfs_pci_rdma(b->c->sysfs_root, u->nic_pci, u->rdma, sizeof(u->rdma)) >= 0)
        ;
    else if (s->nic && !u->is_vf)
        snprintf(u->rdma, sizeof(u->rdma), "%s", s->nic->rdma);
    else
        u->rdma[0] = 0;
    if (u->rdma[0]) {
        r = unit_fill_rdma_nodes(b, u);
        if (r < 0)
            return r;
    }
    /* GDRCopy maps GPU memory for the CPU: a unit with a GPU, RDMA or not */
    if (b->c->rdma.gdrcopy && u->has_gpu)
        return strv_push(&u->rdma_devices, "/dev/gdrdrv");
    return 0;
}

static int unit_fill_nic(const Builder *b, const RailSource *s, Unit *u) {
    char pf_pci[16], pf_netdev[16];

    rail_nic(b, s, pf_pci, sizeof(pf_pci), pf_netdev, sizeof(pf_netdev));
    snprintf(u->health_netdev, sizeof(u->health_netdev), "%s", pf_netdev);
    if (!u->is_vf) {
        snprintf(u->nic_pci, sizeof(u->nic_pci), "%s", pf_pci);
        snprintf(u->netdev, sizeof(u->netdev), "%s", pf_netdev);
    } else {
        if (!pf_pci[0])
            return rg_error(b->err, -ENODEV, 0,
                            "rail %u: VF mode needs the NIC's PCI address, and it is unknown",
                            s->index);
        if (sysfs_vf_pci(b->c->sysfs_root, pf_pci, u->vf, u->nic_pci, sizeof(u->nic_pci)) < 0)
            return rg_error(b->err, -ENODEV, 0,
                            "rail %u: VF %u of %s does not exist (is sriov_numvfs set?)", s->index,
                            u->vf, pf_pci);
        if (sysfs_pci_netdev(b->c->sysfs_root, u->nic_pci, u->netdev, sizeof(u->netdev)) < 0)
            u->netdev[0] = 0; /* in a pod right now, or not bound to a net driver */
    }
    return unit_fill_rdma(b, s, u);
}

static void unit_fill_topology(const RailSource *s, Unit *u) {
    u->numa = -1;
    if (s->cfg && s->cfg->numa >= 0)
        u->numa = s->cfg->numa;
    else if (s->gpu && s->gpu->numa >= 0)
        u->numa = s->gpu->numa;
    else if (s->nic && s->nic->numa >= 0)
        u->numa = s->nic->numa;
    if (s->gpu && s->nic && s->gpu->switch_id[0] && streq(s->gpu->switch_id, s->nic->switch_id))
        snprintf(u->switch_id, sizeof(u->switch_id), "%s", s->gpu->switch_id);
}

static int builder_add_unit(Builder *b, const RailSource *s, size_t tenant, bool is_vf,
                            unsigned vf) {
    Unit *u;
    int r;

    if (b->inv->n_units == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        Unit *m = realloc(b->inv->units, cap * sizeof(Unit));
        if (!m)
            return -ENOMEM;
        b->inv->units = m;
        b->cap = cap;
    }
    u = &b->inv->units[b->inv->n_units++];
    memset(u, 0, sizeof(*u));
    u->rail = s->index;
    u->is_vf = is_vf;
    u->vf = vf;
    u->tenant = tenant;
    u->rail_cfg = s->cfg;
    unit_set_names(u);
    r = unit_fill_gpu(b, s, u);
    if (r < 0)
        return r;
    r = unit_fill_nic(b, s, u);
    if (r < 0)
        return r;
    unit_fill_topology(s, u);
    return 0;
}

static int builder_add_rail(Builder *b, size_t tenant, unsigned k) {
    RailSource s = {0};
    int r;

    r = rail_resolve(b, k, &s);
    if (r < 0)
        return r;
    if (s.cfg && s.cfg->nic.present && s.cfg->nic.vf) {
        for (unsigned j = 0; j < s.cfg->nic.units; j++) {
            r = builder_add_unit(b, &s, tenant, true, j);
            if (r < 0)
                return r;
        }
        return 0;
    }
    return builder_add_unit(b, &s, tenant, false, 0);
}

static int unit_cmp(const void *a, const void *b) {
    const Unit *x = a, *y = b;

    if (x->rail != y->rail)
        return x->rail < y->rail ? -1 : 1;
    return x->vf < y->vf ? -1 : x->vf > y->vf;
}

/* Two units on one NIC would hand one device to two pods. */
static int check_unique_nics(const Builder *b) {
    const Inventory *inv = b->inv;

    for (size_t i = 0; i < inv->n_units; i++)
        for (size_t j = i + 1; j < inv->n_units; j++) {
            const Unit *x = &inv->units[i], *y = &inv->units[j];
            if ((x->nic_pci[0] && streq(x->nic_pci, y->nic_pci)) ||
                (!x->is_vf && !y->is_vf && x->netdev[0] && streq(x->netdev, y->netdev)))
                return rg_error(b->err, -EINVAL, 0, "units %s and %s use the same NIC %s", x->id,
                                y->id, x->nic_pci[0] ? x->nic_pci : x->netdev);
        }
    return 0;
}

static bool rail_assigned(const NodeConfig *c, unsigned k) {
    return config_rail_tenant(c, k) != NULL;
}

/* Is there a skip note for this NIC? */
static bool skipped_note(const Builder *b, const TopoDevice *n) {
    for (char **l = b->skipped; l && *l; l++)
        if (strstr(*l, n->pci))
            return true;
    return false;
}

static bool unit_has_umad(const Unit *u) {
    for (char **d = u->rdma_devices; d && *d; d++)
        if (strncmp(*d, "/dev/infiniband/umad", strlen("/dev/infiniband/umad")) == 0)
            return true;
    return false;
}

static bool any_gpu(const Inventory *inv) {
    for (size_t i = 0; i < inv->n_units; i++)
        if (inv->units[i].has_gpu)
            return true;
    return false;
}

static int builder_notes(Builder *b) {
    const NodeConfig *c = b->c;
    const Topology *t = b->topo;
    const Pairing *p = b->pairing;
    int r = 0;

    for (size_t i = 0; p && i < p->n_unpaired_gpus && r >= 0; i++)
        r = strv_pushf(&b->inv->notes, "unpaired GPU %s: no NIC close enough",
                       t->gpus[p->unpaired_gpus[i]].pci);
    for (size_t i = 0; p && i < p->n_unpaired_nics && r >= 0; i++) {
        const TopoDevice *n = &t->nics[p->unpaired_nics[i]];
        if (n->netdev[0] && strv_contains(b->c->discovery.nic_exclude, n->netdev))
            continue; /* a skip note says why */
        if (!skipped_note(b, n))
            r = strv_pushf(&b->inv->notes, "unpaired NIC %s (%s): no GPU close enough", n->pci,
                           n->netdev[0] ? n->netdev : "no netdev");
    }
    for (size_t i = 0; p && i < p->n_pairs && r >= 0; i++)
        if (!rail_assigned(b->c, p->pairs[i].rail))
            r = strv_pushf(&b->inv->notes, "discovered rail %u (GPU %s, NIC %s) is in no tenant",
                           p->pairs[i].rail, t->gpus[p->pairs[i].gpu].pci,
                           t->nics[p->pairs[i].nic].pci);
    for (size_t i = 0; i < b->inv->n_units && r >= 0; i++) {
        const Unit *u = &b->inv->units[i];
        if (u->has_gpu && !u->gpu_devices)
            r = strv_pushf(&b->inv->notes, "unit %s: no device node found for GPU %s", u->id,
                           u->gpu_id);
        if (r >= 0 && u->rdma[0] && !u->uverbs[0])
            r = strv_pushf(&b->inv->notes,
                           "unit %s: RDMA device %s has no uverbs device node (is ib_uverbs "
                           "loaded?): the unit is unhealthy",
                           u->id, u->rdma);
        if (r >= 0 && u->rdma[0] && c->rdma.umad && !unit_has_umad(u))
            r = strv_pushf(&b->inv->notes,
                           "unit %s: rdma.umad is set and RDMA device %s has no umad device "
                           "(is ib_umad loaded?)",
                           u->id, u->rdma);
    }
    if (r >= 0 && c->rdma.gdrcopy && any_gpu(b->inv) && !dev_exists(c, "/dev/gdrdrv"))
        r = strv_push(&b->inv->notes, "rdma.gdrcopy is set and /dev/gdrdrv does not exist (is "
                                      "gdrdrv loaded?): containers get it once it does");
    return r;
}

static int builder_run(Builder *b) {
    const NodeConfig *c = b->c;
    int r;

    for (size_t t = 0; t < c->n_tenants; t++)
        for (size_t i = 0; i < c->tenants[t].n_rails; i++) {
            r = builder_add_rail(b, t, c->tenants[t].rails[i]);
            if (r < 0)
                return r;
        }
    if (b->inv->n_units > 1)
        qsort(b->inv->units, b->inv->n_units, sizeof(Unit), unit_cmp);
    r = check_unique_nics(b);
    if (r < 0)
        return r;
    return builder_notes(b);
}

/* Does the config name this NIC itself, by netdev name or PCI address? */
static bool config_names_nic(const NodeConfig *c, const TopoDevice *n) {
    for (size_t i = 0; i < c->n_rails; i++) {
        const NicConfig *nc = &c->rails[i].nic;
        if (!nc->present)
            continue;
        if ((nc->name && n->netdev[0] && streq(nc->name, n->netdev)) ||
            (nc->pci && strcasecmp(nc->pci, n->pci) == 0))
            return true;
    }
    return false;
}

static const NodeNic *node_nic_find(const NodeNic *v, size_t n, const char *netdev) {
    for (size_t i = 0; netdev[0] && i < n; i++)
        if (streq(v[i].name, netdev))
            return &v[i];
    return NULL;
}

/*
 * The netdevs discovery must not pair: the config's nicExclude, and the
 * node's own NICs (its uplink would otherwise go into a pod) unless the
 * config names them. Each skipped NIC gets a note saying why.
 */
static int discovery_exclude(Builder *b, const NodeNic *node, size_t n_node, char ***ret) {
    const NodeConfig *c = b->c;
    char **ex = NULL;
    int r = 0;

    for (size_t i = 0; i < c->discovery.n_nic_exclude && r >= 0; i++)
        r = strv_push(&ex, c->discovery.nic_exclude[i]);
    for (size_t i = 0; i < b->topo->n_nics && r >= 0; i++) {
        const TopoDevice *n = &b->topo->nics[i];
        const NodeNic *nn = node_nic_find(node, n_node, n->netdev);
        if (n->netdev[0] && strv_contains(c->discovery.nic_exclude, n->netdev))
            r = strv_pushf(&b->skipped, "NIC %s (%s) skipped: nicExclude names it", n->pci,
                           n->netdev);
        else if (nn && config_names_nic(c, n))
            r = strv_pushf(&b->inv->notes, "NIC %s (%s) is used although %s: the config names it",
                           n->pci, n->netdev, node_nic_use_str(nn->uses));
        else if (nn) {
            r = strv_push(&ex, n->netdev);
            if (r >= 0)
                r = strv_pushf(&b->skipped, "NIC %s (%s) skipped: %s", n->pci, n->netdev,
                               node_nic_use_str(nn->uses));
        }
    }
    for (char **l = b->skipped; l && *l && r >= 0; l++)
        r = strv_push(&b->inv->notes, *l);
    if (r < 0) {
        strv_free(ex);
        return r;
    }
    *ret = ex;
    return 0;
}

static int discovery_pair(Builder *b, const InventoryOptions *o, Pairing **ret) {
    _cleanup_free_ NodeNic *live = NULL;
    const NodeNic *node = NULL;
    size_t n_node = 0;
    char **ex = NULL;
    int r;

    if (o && o->node_nics_given) {
        node = o->node_nics;
        n_node = o->n_node_nics;
    } else {
        r = node_nics_list(&live, &n_node);
        if (r < 0)
            return rg_error(b->err, r, 0, "cannot read the node's routes and addresses: %s",
                            strerror(-r));
        node = live;
    }
    r = discovery_exclude(b, node, n_node, &ex);
    if (r < 0)
        return r;
    r = pairing_compute(b->topo, b->c->discovery.max_distance, ex, ret);
    strv_free(ex);
    if (r < 0)
        return rg_error(b->err, r, 0, "pairing GPUs with NICs failed");
    return 0;
}

int inventory_build(const NodeConfig *c, const InventoryOptions *o, Inventory **ret, RgError *err) {
    _cleanup_(topology_freep) Topology *topo = NULL;
    _cleanup_(pairing_freep) Pairing *pairing = NULL;
    _cleanup_(inventory_freep) Inventory *inv = NULL;
    const char *xml = o && o->topology_xml ? o->topology_xml : c->discovery.topology_xml;
    int r;

    if (c->discovery.enabled || xml) {
        r = topology_load(xml, &topo, err);
        if (r < 0)
            return r;
    }
    inv = calloc(1, sizeof(*inv));
    if (!inv)
        return -ENOMEM;
    inv->config = c;
    Builder b = {.c = c, .topo = topo, .inv = inv, .err = err};
    if (c->discovery.enabled) {
        r = discovery_pair(&b, o, &pairing);
        if (r < 0) {
            strv_free(b.skipped);
            return r == -ENOMEM ? rg_error(err, r, 0, "out of memory") : r;
        }
        b.pairing = pairing;
    }
    r = builder_run(&b);
    strv_free(b.skipped);
    if (r == -ENOMEM)
        return rg_error(err, r, 0, "out of memory");
    if (r < 0)
        return r;
    inv->n_notes = strv_length(inv->notes);
    *ret = TAKE_PTR(inv);
    return 0;
}
