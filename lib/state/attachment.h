/* SPDX-License-Identifier: Apache-2.0 */
/* Per-attachment CNI state: what was moved, from where, and how it was set. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ethtool-rxnfc.h"
#include "ethtool.h"
#include "macro.h"
#include "netdev-sysfs.h"
#include "netlink.h"

typedef struct AttachedNic {
    char unit[64];
    char host_name[16]; /* original name on the host */
    char pod_name[16];  /* rail<k> */
    char pci[16];       /* "" for virtual NICs */
    /* identity: what a pod cannot change (see nic.c) */
    char kind[16];       /* rtnetlink link kind ("veth"), "" for a device with a driver */
    char parent[100];    /* parent device, "<bus>/<name>", "" if none */
    int host_ifindex;    /* ifindex on the host when recorded */
    int peer_ifindex;    /* veth: the peer's ifindex, 0 if none */
    int peer_nsid;       /* veth: the peer's namespace as the host names it, -1: the host */
    char peer_name[16];  /* veth: the peer's name */
    uint8_t perm_mac[6]; /* permanent address, all zero if the device has none */
    /* A NIC with no parent device and no veth peer (a dummy, a macvlan) is
     * found again through its anchor (cni/anchor.c): a VLAN railgate makes
     * on it in the host namespace before it moves. Its name is recorded
     * before it is made, its ifindex once it is (0 until then); "" for any
     * other NIC. */
    char anchor[16];
    int anchor_ifindex;
    uint16_t anchor_vid;   /* its VLAN id */
    uint16_t anchor_proto; /* its VLAN protocol: ETH_P_8021AD or ETH_P_8021Q */
    /* Its RDMA device, where it moves with the NIC (the node's RDMA netns
     * mode exclusive: cni/rdmadev.c), recorded before it moves: its name on
     * the host, and what finds it again, which a pod cannot change (its
     * name it can, and it can make a device of that name): its index
     * (unique while it is registered) and its node GUID (its driver's).
     * Its parent device as sysfs showed it ("<bus>/<device>", "" if none),
     * for messages. rdma "" for a NIC whose RDMA device does not move
     * (none, shared mode), and in records written before. */
    char rdma[64];
    uint32_t rdma_index;
    uint64_t rdma_guid;
    char rdma_parent[100];
    uint8_t mac[6];
    unsigned mtu; /* original MTU */
    /* the rest of what its holder can change (flags, queue length, group,
     * GSO/GRO limits, link mode, broadcast, carrier, protocol down, a
     * macvlan's mode): set back on DEL, rollback and GC; has_settings false
     * in a record written before they were kept */
    bool has_settings;
    LinkSettings settings;
    /* its ethtool state (features, channels, rings, coalescing, ...), as
     * the host had it; has_ethtool false where the kernel has no ethtool
     * netlink family, and in records written before it was kept */
    bool has_ethtool;
    EthtoolState ethtool;
    /* its NAPI and queue settings that only sysfs holds (RPS, XPS, BQL,
     * GRO flush timeout, ...), as the host had them; has_sysfs false where
     * the CNI's sysfs does not show the host's namespace, and in records
     * written before they were kept */
    bool has_sysfs;
    NetdevSysfs sysfs;
    /* its n-tuple rules and RSS flow hash fields (ethtool's ioctl), as the
     * host had them; has_rxnfc false where the driver has neither */
    bool has_rxnfc;
    RxnfcState rxnfc;
    bool was_up;       /* original admin state */
    char **host_addrs; /* original global addresses, CIDR */
    char **altnames;   /* original alternative names (udev's), given back on restore */
    /* what the pod side got, for CHECK */
    char **pod_addrs;   /* CIDR */
    char gateway[64];   /* "" if none */
    uint32_t table;     /* per-rail routing table, 0 if none */
    uint32_t rule_prio; /* priority of "from <addr> lookup <table>" */
    unsigned pod_mtu;   /* 0: left as it was */
    /* An SR-IOV VF whose admin state railgate sets through its PF while the
     * pod holds it; vf_pf "" for any other NIC. vf_set is what was asked
     * for, vf_saved each of those settings as the PF had it before (read
     * and recorded before anything is set; -1 / no MAC: not known), given
     * back on DEL. */
    char vf_pf[16];    /* the PF's PCI address */
    unsigned vf_index; /* the VF's number on the PF (virtfn<index>) */
    VfState vf_set;
    VfState vf_saved;
    int pod_ifindex; /* in the pod, found by identity while a command runs; not recorded */
} AttachedNic;

typedef struct Attachment {
    char boot_id[40]; /* boot the record was written in (state.c sets it) */
    char container_id[257];
    char ifname[16];
    char netns[4096];
    char pod_ns[254];
    char pod_name[254];
    bool ipam;       /* the IPAM plugin was called: DEL must release */
    char *ipam_conf; /* the exact JSON config given to the delegated IPAM plugin at ADD
                      * (type included), NULL if none; owned, freed by attachment_free */
    AttachedNic *nics;
    size_t n_nics;
} Attachment;

void attachment_free(Attachment *a);
/* Free what n owns (its address and name lists), not n itself. */
void attached_nic_done(AttachedNic *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Attachment *, attachment_free);
AttachedNic *attachment_add_nic(Attachment *a);

/* The record as JSON text (state.c stores it), and back; -EBADMSG for a
 * record that is not one. */
int attachment_to_text(const Attachment *a, char **ret);
int attachment_from_text(const char *text, Attachment **ret);
