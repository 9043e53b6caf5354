/* SPDX-License-Identifier: Apache-2.0 */
/* Rail units: what the node config and discovery say this node can hand out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

#define UNIT_ID_MAX 64 /* kubelet limits device ids to 63 characters */

/*
 * A unit is what kubelet allocates: rail k's GPU with rail k's NIC (or VF j
 * of that NIC in VF mode). Its id is "rail<k>" or "rail<k>-vf<j>"; in the pod
 * its NIC is named "rail<k>" (VF j > 0: "rail<k>v<j>").
 */
typedef struct Unit {
    char id[UNIT_ID_MAX];
    unsigned rail;
    bool is_vf;
    unsigned vf;
    size_t tenant;              /* index into NodeConfig.tenants */
    const RailConfig *rail_cfg; /* NULL for a discovered rail the config does not list */
    char pod_ifname[16];

    bool has_gpu;
    char gpu_pci[16];       /* "" for a simulated GPU */
    char gpu_id[64];        /* what CUDA/NVIDIA_VISIBLE_DEVICES name: UUID, else minor, else name */
    char **gpu_devices;     /* host paths of the GPU's own device nodes, NULL-terminated */
    char **gpu_ctl_devices; /* host paths of shared control nodes (nvidiactl, uvm, kfd) */

    char nic_pci[16];       /* the unit's NIC or VF, "" if unknown (veth) */
    char netdev[16];        /* host netdev of the NIC or VF, "" if not in the host now */
    char health_netdev[16]; /* netdev whose link state is the unit's NIC health (PF in VF mode) */
    char rdma[64];          /* RDMA device, "" if none */
    /* a macvlan NIC's lower link in the node's namespace, as last seen
     * there (kept while the NIC is in a pod; lowers.h): its ifindex, and
     * its name then for messages; 0 and "" when not a macvlan or unknown */
    int lower_ifindex;
    char lower[16];
    char uverbs[16]; /* uverbs char device of rdma ("uverbs3"), "" if none was found */
    /* container paths (devRoot + path on the host) of the unit's fabric
     * nodes, NULL-terminated: its uverbs, rdma_cm, with the node config's
     * "rdma" its ports' umad and (a unit with a GPU) /dev/gdrdrv. Listed
     * whether they exist now or not: a container gets those that exist */
    char **rdma_devices;

    int numa;           /* -1 unknown */
    char switch_id[24]; /* PCIe switch shared by GPU and NIC, "" if none */
} Unit;

typedef struct Inventory {
    const NodeConfig *config; /* borrowed; outlives the inventory */
    Unit *units;              /* sorted by rail, then VF */
    size_t n_units;
    char **notes; /* discovery report: unpaired GPUs/NICs, unassigned rails */
    size_t n_notes;
    uint64_t generation; /* of the published inventory; 0 if never published */
} Inventory;

/* id and pod_ifname of a unit from its rail, is_vf and vf. */
void unit_set_names(Unit *u);

/*
 * The device plugin is the one source of the resolved inventory: it
 * publishes what it built, and the CNI loads that instead of probing the
 * node again. INVENTORY_FILE in the state dir, written atomically, with a
 * generation one above the file it replaces.
 */
#define INVENTORY_FILE "inventory.json"
int inventory_publish(Inventory *inv, const char *state_dir, RgError *err);
/*
 * The published inventory, read against the node config c: a unit's tenant
 * and rail config are c's (tenancy is never read from the file), and a unit
 * whose rail c no longer gives a tenant, or whose VF shape c does not have,
 * is left out. Only what the CNI needs is loaded: ids, rail, VF, NIC (PCI
 * address, netdev, RDMA device). -ENOENT (with err) if none is published.
 */
int inventory_load_published(const NodeConfig *c, const char *state_dir, Inventory **ret,
                             RgError *err);
void inventory_free(Inventory *inv);
DEFINE_TRIVIAL_CLEANUP_FUNC(Inventory *, inventory_free);

const Unit *inventory_find(const Inventory *inv, const char *id);
/* Units of one tenant, in inventory order: fills ret (capacity n), returns count. */
size_t inventory_tenant_units(const Inventory *inv, size_t tenant, const Unit **ret, size_t n);
