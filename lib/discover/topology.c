/* SPDX-License-Identifier: Apache-2.0 */
/* GPU and NIC discovery with hwloc, and their one-to-one pairing into rails. */
#include "topology.h"

#include <hwloc.h>
#include <stdio.h>

#include "strv.h"

/* Bounds on what an XML file (or a machine full of SR-IOV VFs) may make us
 * allocate: pairing looks at every GPU x NIC combination. */
#define TOPO_MAX_GPUS 256
#define TOPO_MAX_NICS 4096

#define PCI_CLASS_VGA 0x0300
#define PCI_CLASS_3D 0x0302
#define PCI_CLASS_ETHERNET 0x0200
#define PCI_CLASS_INFINIBAND 0x0207
#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD 0x1002

DEFINE_TRIVIAL_CLEANUP_FUNC(hwloc_topology_t, hwloc_topology_destroy);

/* hwloc reports failure as -1 with errno; this is the one place that turns
 * that into -errno. */
static int hwloc_result(int r) {
    return r < 0 ? negative_errno() : r;
}

void topology_free(Topology *t) {
    if (!t)
        return;
    free(t->gpus);
    free(t->nics);
    free(t);
}

/* Live discovery only needs what the built-in linux component reads from
 * sysfs: PCI devices and their netdevs (GPU UUIDs come from the NVIDIA
 * driver's procfs, or an XML with NVML info). The compute-runtime components would open CUDA
 * contexts, OpenCL platforms or GL displays inside a long-running daemon,
 * and "pci" (libpciaccess) only adds vendor names and leaks on every load.
 * Components that are not installed are fine. */
static int blacklist_components(hwloc_topology_t h) {
    static const char *const names[] = {"cuda", "opencl", "gl", "levelzero", "pci"};

    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        int r = hwloc_result(
            hwloc_topology_set_components(h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, names[i]));
        if (r < 0 && r != -EINVAL)
            return r;
    }
    return 0;
}

static int hwloc_open(const char *xml, hwloc_topology_t *ret) {
    _cleanup_(hwloc_topology_destroyp) hwloc_topology_t h = NULL;
    int r;

    r = hwloc_result(hwloc_topology_init(&h));
    if (r < 0)
        return r;
    /* I/O objects are dropped by default; bridges are what paths are made of. */
    r = hwloc_result(hwloc_topology_set_io_types_filter(h, HWLOC_TYPE_FILTER_KEEP_ALL));
    if (r < 0)
        return r;
    /* The device plugin may run in a cgroup limited to a few CPUs; NUMA
     * locality is about the node, not about where we are allowed to run. */
    r = hwloc_result(hwloc_topology_set_flags(h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED));
    if (r < 0)
        return r;
    /* libxml2 parses the file here, the minimal parser at load; if this fails
     * and we went on, load would silently describe the live system instead. */
    r = xml ? hwloc_result(hwloc_topology_set_xml(h, xml)) : blacklist_components(h);
    if (r < 0)
        return r;
    r = hwloc_result(hwloc_topology_load(h));
    if (r < 0)
        return r;
    *ret = TAKE_PTR(h);
    return 0;
}

static bool pci_kind(const struct hwloc_pcidev_attr_s *a, TopoKind *ret) {
    if ((a->class_id == PCI_CLASS_VGA || a->class_id == PCI_CLASS_3D) &&
        (a->vendor_id == PCI_VENDOR_NVIDIA || a->vendor_id == PCI_VENDOR_AMD)) {
        *ret = TOPO_GPU;
        return true;
    }
    if (a->class_id == PCI_CLASS_ETHERNET || a->class_id == PCI_CLASS_INFINIBAND) {
        *ret = TOPO_NIC;
        return true;
    }
    return false;
}

/* Fixed-width lowercase hex sorts like the numbers it spells; a longer
 * string can only come from a wider (32-bit) domain, which sorts after. */
static int pci_cmp(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);

    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}

static int device_cmp(const void *a, const void *b) {
    return pci_cmp(((const TopoDevice *)a)->pci, ((const TopoDevice *)b)->pci);
}

static int copy_name(char *dst, size_t n, const char *src) {
    if (strlen(src) >= n)
        return -ENAMETOOLONG;
    strcpy(dst, src);
    return 0;
}

static int device_numa(hwloc_topology_t h, hwloc_obj_t o) {
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(h, o);

    if (!a || !a->nodeset || hwloc_bitmap_weight(a->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(a->nodeset);
}

static int osdev_take(hwloc_obj_t c, TopoDevice *d) {
    const char *uuid = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");
    int r;

    if (c->name && c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !d->netdev[0]) {
        r = copy_name(d->netdev, sizeof(d->netdev), c->name);
        if (r < 0)
            return r;
    }
    if (c->name && c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !d->rdma[0]) {
        r = copy_name(d->rdma, sizeof(d->rdma), c->name);
        if (r < 0)
            return r;
    }
    if (uuid && !d->uuid[0])
        return copy_name(d->uuid, sizeof(d->uuid), uuid);
    return 0;
}

/* netdev, RDMA device and GPU UUID come from the OS devices below the PCI
 * function; the first of each kind wins. */
static int device_osdevs(hwloc_obj_t o, TopoDevice *d) {
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        int r = osdev_take(c, d);
        if (r < 0)
            return r;
    }
    return 0;
}

static void busid_format(const struct hwloc_pcidev_attr_s *a, char *buf, size_t n) {
    snprintf(buf, n, "%04x:%02x:%02x.%01x", (unsigned)a->domain, (unsigned)a->bus, (unsigned)a->dev,
             (unsigned)a->func);
}

/* A PCI-to-PCI bridge keeps its own PCI identity in its upstream side. */
static const struct hwloc_pcidev_attr_s *pci_attr(hwloc_obj_t o) {
    return o->type == HWLOC_OBJ_BRIDGE ? &o->attr->bridge.upstream.pci : &o->attr->pcidev;
}

/* path[0] names the root complex; where an XML file has no host bridge
 * above the device, the bus the topmost PCI object sits on stands in. */
static void path_root(hwloc_obj_t top, hwloc_obj_t hostbridge, char *buf, size_t n) {
    if (hostbridge)
        snprintf(buf, n, "hb:%04x:%02x", (unsigned)hostbridge->attr->bridge.downstream.pci.domain,
                 (unsigned)hostbridge->attr->bridge.downstream.pci.secondary_bus);
    else
        snprintf(buf, n, "hb:%04x:%02x", (unsigned)pci_attr(top)->domain,
                 (unsigned)pci_attr(top)->bus);
}

static int device_path(hwloc_obj_t o, TopoDevice *d) {
    hwloc_obj_t bridges[TOPO_MAX_DEPTH], hostbridge = NULL, top = o;
    unsigned n = 0;

    for (hwloc_obj_t p = o->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
        if (p->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) {
            hostbridge = p;
            break;
        }
        if (n == TOPO_MAX_DEPTH - 1)
            return -E2BIG;
        bridges[n++] = top = p;
    }
    path_root(top, hostbridge, d->path[0], sizeof(d->path[0]));
    for (unsigned i = 0; i < n; i++)
        busid_format(pci_attr(bridges[n - 1 - i]), d->path[i + 1], sizeof(d->path[i + 1]));
    d->depth = n + 1;
    /* below a root port (path[1]) the next bridge is a switch upstream port */
    if (d->depth >= 3)
        snprintf(d->switch_id, sizeof(d->switch_id), "%s", d->path[2]);
    return 0;
}

static int device_fill(hwloc_topology_t h, hwloc_obj_t o, TopoKind kind, TopoDevice *d,
                       const char *src, RgError *err) {
    const struct hwloc_pcidev_attr_s *a = &o->attr->pcidev;
    int r;

    *d = (TopoDevice){.kind = kind,
                      .vendor = a->vendor_id,
                      .device = a->device_id,
                      .class_id = a->class_id,
                      .numa = device_numa(h, o)};
    busid_format(a, d->pci, sizeof(d->pci));
    r = device_osdevs(o, d);
    if (r < 0)
        return rg_error(err, r, 0, "%s: PCI device %s: OS device name or GPU UUID too long", src,
                        d->pci);
    r = device_path(o, d);
    if (r < 0)
        return rg_error(err, r, 0, "%s: PCI device %s: more than %d bridges above it", src, d->pci,
                        TOPO_MAX_DEPTH - 1);
    return 0;
}

static void count_devices(hwloc_topology_t h, size_t *ret_gpus, size_t *ret_nics) {
    size_t n[2] = {0, 0};
    TopoKind k;

    for (hwloc_obj_t o = hwloc_get_next_pcidev(h, NULL); o; o = hwloc_get_next_pcidev(h, o))
        if (pci_kind(&o->attr->pcidev, &k))
            n[k]++;
    *ret_gpus = n[TOPO_GPU];
    *ret_nics = n[TOPO_NIC];
}

static int collect_devices(hwloc_topology_t h, Topology *t, const char *src, RgError *err) {
    size_t n_gpus, n_nics;
    TopoKind k;
    int r;

    count_devices(h, &n_gpus, &n_nics);
    if (n_gpus > TOPO_MAX_GPUS || n_nics > TOPO_MAX_NICS)
        return rg_error(err, -E2BIG, 0,
                        "%s: %zu GPUs and %zu NICs, more than the %d and %d supported", src, n_gpus,
                        n_nics, TOPO_MAX_GPUS, TOPO_MAX_NICS);
    /* +1: an empty list is an allocation too, so NULL only ever means ENOMEM */
    t->gpus = calloc(n_gpus + 1, sizeof(TopoDevice));
    t->nics = calloc(n_nics + 1, sizeof(TopoDevice));
    if (!t->gpus || !t->nics)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", src);
    for (hwloc_obj_t o = hwloc_get_next_pcidev(h, NULL); o; o = hwloc_get_next_pcidev(h, o)) {
        if (!pci_kind(&o->attr->pcidev, &k))
            continue;
        TopoDevice *d = k == TOPO_GPU ? &t->gpus[t->n_gpus++] : &t->nics[t->n_nics++];
        r = device_fill(h, o, k, d, src, err);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Sorted, and each PCI address once: pairing's tie-breaks depend on it. */
static int sort_devices(TopoDevice *devs, size_t n, const char *src, RgError *err) {
    qsort(devs, n, sizeof(TopoDevice), device_cmp);
    for (size_t i = 1; i < n; i++)
        if (streq(devs[i - 1].pci, devs[i].pci))
            return rg_error(err, -EINVAL, 0, "%s: PCI device %s appears twice", src, devs[i].pci);
    return 0;
}

int topology_load(const char *xml, Topology **ret, RgError *err) {
    _cleanup_(hwloc_topology_destroyp) hwloc_topology_t h = NULL;
    _cleanup_(topology_freep) Topology *t = NULL;
    const char *src = xml ? xml : "live system";
    int r;

    r = hwloc_open(xml, &h);
    if (r < 0)
        return rg_error(err, r, 0, "%s: hwloc cannot load the topology: %s%s", src, strerror(-r),
                        xml ? " (HWLOC_XML_VERBOSE=1 shows the parser's complaint)" : "");
    if (!hwloc_get_next_pcidev(h, NULL))
        return rg_error(err, -EINVAL, 0,
                        xml ? "%s: no PCI devices: the topology was exported without I/O "
                              "(lstopo --no-io?), GPUs and NICs cannot be paired"
                            : "%s: hwloc found no PCI devices (is sysfs mounted?)",
                        src);
    t = calloc(1, sizeof(*t));
    if (!t)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", src);
    r = collect_devices(h, t, src, err);
    if (r < 0)
        return r;
    r = sort_devices(t->gpus, t->n_gpus, src, err);
    if (r < 0)
        return r;
    r = sort_devices(t->nics, t->n_nics, src, err);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(t);
    return 0;
}

PairDistance topology_distance(const TopoDevice *a, const TopoDevice *b) {
    if (a->switch_id[0] && streq(a->switch_id, b->switch_id))
        return PAIR_DISTANCE_SWITCH;
    if (a->depth > 0 && b->depth > 0 && a->path[0][0] && streq(a->path[0], b->path[0]))
        return PAIR_DISTANCE_HOSTBRIDGE;
    if (a->numa >= 0 && a->numa == b->numa)
        return PAIR_DISTANCE_NUMA;
    return PAIR_DISTANCE_SYSTEM;
}

/* One GPU x NIC combination that pairing may choose. */
typedef struct Candidate {
    uint32_t gpu, nic;
    uint8_t distance;
    uint8_t common; /* depth of the lowest common ancestor: deeper is closer */
} Candidate;

static unsigned common_depth(const TopoDevice *a, const TopoDevice *b) {
    unsigned n = a->depth < b->depth ? a->depth : b->depth, i = 0;

    if (n > TOPO_MAX_DEPTH)
        n = TOPO_MAX_DEPTH;
    while (i < n && streq(a->path[i], b->path[i]))
        i++;
    return i;
}

/* Devices are sorted by PCI address (a Topology invariant), so index order
 * is address order. */
static int candidate_cmp(const void *x, const void *y) {
    const Candidate *a = x, *b = y;

    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    if (a->common != b->common)
        return a->common > b->common ? -1 : 1;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    if (a->nic != b->nic)
        return a->nic < b->nic ? -1 : 1;
    return 0;
}

static bool nic_excluded(const TopoDevice *nic, char *const *exclude) {
    return nic->netdev[0] && strv_contains(exclude, nic->netdev);
}

static int candidates_build(const Topology *t, PairDistance max_distance, char *const *exclude,
                            Candidate **ret, size_t *ret_n) {
    _cleanup_free_ Candidate *c = calloc(t->n_gpus * t->n_nics + 1, sizeof(Candidate));
    size_t n = 0;

    if (!c)
        return -ENOMEM;
    for (size_t g = 0; g < t->n_gpus; g++)
        for (size_t k = 0; k < t->n_nics; k++) {
            PairDistance d = topology_distance(&t->gpus[g], &t->nics[k]);

            if (d > max_distance || nic_excluded(&t->nics[k], exclude))
                continue;
            c[n++] = (Candidate){.gpu = (uint32_t)g,
                                 .nic = (uint32_t)k,
                                 .distance = (uint8_t)d,
                                 .common = (uint8_t)common_depth(&t->gpus[g], &t->nics[k])};
        }
    qsort(c, n, sizeof(Candidate), candidate_cmp);
    *ret = TAKE_PTR(c);
    *ret_n = n;
    return 0;
}

/* Closest pair first, each GPU and NIC used once. gpu_nic[g] is the NIC of
 * GPU g, or SIZE_MAX. */
static void match_greedy(const Candidate *c, size_t n, size_t *gpu_nic, bool *nic_used) {
    for (size_t i = 0; i < n; i++) {
        if (gpu_nic[c[i].gpu] != SIZE_MAX || nic_used[c[i].nic])
            continue;
        gpu_nic[c[i].gpu] = c[i].nic;
        nic_used[c[i].nic] = true;
    }
}

void pairing_free(Pairing *p) {
    if (!p)
        return;
    free(p->pairs);
    free(p->unpaired_gpus);
    free(p->unpaired_nics);
    free(p);
}

static int pairing_new(const Topology *t, const size_t *gpu_nic, const bool *nic_used,
                       Pairing **ret) {
    _cleanup_(pairing_freep) Pairing *p = calloc(1, sizeof(Pairing));

    if (!p)
        return -ENOMEM;
    p->pairs = calloc(t->n_gpus + 1, sizeof(TopoPair));
    p->unpaired_gpus = calloc(t->n_gpus + 1, sizeof(size_t));
    p->unpaired_nics = calloc(t->n_nics + 1, sizeof(size_t));
    if (!p->pairs || !p->unpaired_gpus || !p->unpaired_nics)
        return -ENOMEM;
    /* rails follow GPU address order among the GPUs that got a NIC */
    for (size_t g = 0; g < t->n_gpus; g++) {
        if (gpu_nic[g] == SIZE_MAX) {
            p->unpaired_gpus[p->n_unpaired_gpus++] = g;
            continue;
        }
        p->pairs[p->n_pairs] = (TopoPair){
            .gpu = g,
            .nic = gpu_nic[g],
            .rail = (unsigned)p->n_pairs,
            .distance = topology_distance(&t->gpus[g], &t->nics[gpu_nic[g]]),
        };
        p->n_pairs++;
    }
    for (size_t k = 0; k < t->n_nics; k++)
        if (!nic_used[k])
            p->unpaired_nics[p->n_unpaired_nics++] = k;
    *ret = TAKE_PTR(p);
    return 0;
}

int pairing_compute(const Topology *t, PairDistance max_distance, char *const *exclude,
                    Pairing **ret) {
    _cleanup_free_ Candidate *c = NULL;
    _cleanup_free_ size_t *gpu_nic = NULL;
    _cleanup_free_ bool *nic_used = NULL;
    size_t n;
    int r;

    if (!t || !pair_distance_to_string(max_distance))
        return -EINVAL;
    if (t->n_gpus > TOPO_MAX_GPUS || t->n_nics > TOPO_MAX_NICS)
        return -E2BIG;
    r = candidates_build(t, max_distance, exclude, &c, &n);
    if (r < 0)
        return r;
    gpu_nic = malloc((t->n_gpus + 1) * sizeof(size_t));
    nic_used = calloc(t->n_nics + 1, sizeof(bool));
    if (!gpu_nic || !nic_used)
        return -ENOMEM;
    for (size_t g = 0; g < t->n_gpus; g++)
        gpu_nic[g] = SIZE_MAX;
    match_greedy(c, n, gpu_nic, nic_used);
    return pairing_new(t, gpu_nic, nic_used, ret);
}

static const char *const distance_names[] = {
    [PAIR_DISTANCE_SWITCH] = "switch",
    [PAIR_DISTANCE_HOSTBRIDGE] = "hostbridge",
    [PAIR_DISTANCE_NUMA] = "numa",
    [PAIR_DISTANCE_SYSTEM] = "system",
};

const char *pair_distance_to_string(PairDistance d) {
    if ((unsigned)d >= ELEMENTSOF(distance_names))
        return NULL;
    return distance_names[d];
}

int pair_distance_from_string(const char *s, PairDistance *ret) {
    if (!s)
        return -EINVAL;
    for (unsigned d = PAIR_DISTANCE_SWITCH; d < ELEMENTSOF(distance_names); d++)
        if (streq(s, distance_names[d])) {
            *ret = (PairDistance)d;
            return 0;
        }
    return -EINVAL;
}
