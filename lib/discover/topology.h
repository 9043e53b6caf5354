/* SPDX-License-Identifier: Apache-2.0 */
/* PCI topology of GPUs and NICs (from hwloc) and their pairing into rails. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

#define TOPO_PCI_LEN 16   /* "0000:17:00.0" + NUL */
#define TOPO_MAX_DEPTH 16 /* PCI bridges between a host bridge and a device */

typedef enum TopoKind {
    TOPO_GPU = 0,
    TOPO_NIC,
} TopoKind;

typedef struct TopoDevice {
    TopoKind kind;
    char pci[TOPO_PCI_LEN];
    uint16_t vendor, device, class_id;
    int numa;        /* NUMA node os index, -1 unknown */
    char netdev[16]; /* first netdev name (NIC), "" if none */
    char rdma[64];   /* first OpenFabrics (RDMA) name, "" if none */
    char uuid[64];   /* GPU UUID if hwloc knows it (NVML), "" */
    /* Ancestry from the host bridge down: path[0] is the host bridge id
     * ("hb:<domain>:<secondary bus>"), then each PCI bridge's busid. */
    char path[TOPO_MAX_DEPTH][24];
    unsigned depth;
    char switch_id[24]; /* PCIe switch upstream port busid, "" if none */
} TopoDevice;

typedef struct Topology {
    TopoDevice *gpus; /* sorted by PCI address */
    size_t n_gpus;
    TopoDevice *nics; /* sorted by PCI address */
    size_t n_nics;
} Topology;

/*
 * Load from an hwloc XML file (xml != NULL) or the live system. GPUs are PCI
 * display/3D class devices of NVIDIA (10de) or AMD (1002); NICs are Ethernet
 * (0200) and InfiniBand (0207) class devices. A topology without PCI objects
 * is rejected: it was exported without I/O and cannot be paired.
 */
int topology_load(const char *xml, Topology **ret, RgError *err);
void topology_free(Topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Topology *, topology_free);

/* Distance class between two devices of one topology. */
PairDistance topology_distance(const TopoDevice *a, const TopoDevice *b);

typedef struct TopoPair {
    size_t gpu;    /* index into Topology.gpus */
    size_t nic;    /* index into Topology.nics */
    unsigned rail; /* k, by GPU PCI order among paired GPUs */
    PairDistance distance;
} TopoPair;

typedef struct Pairing {
    TopoPair *pairs; /* sorted by rail */
    size_t n_pairs;
    size_t *unpaired_gpus; /* indices into Topology.gpus */
    size_t n_unpaired_gpus;
    size_t *unpaired_nics; /* indices into Topology.nics */
    size_t n_unpaired_nics;
} Pairing;

/*
 * Pair each GPU with the NIC of its closest common PCIe ancestor, one to one.
 * Closer pairs win; ties break on GPU PCI address, then NIC PCI address, so
 * the result is deterministic. NICs whose netdev is in exclude (NULL-
 * terminated, may be NULL) are not used. Pairs farther apart than
 * max_distance are not made: those GPUs and NICs are reported unpaired.
 */
int pairing_compute(const Topology *t, PairDistance max_distance, char *const *exclude,
                    Pairing **ret);
void pairing_free(Pairing *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pairing *, pairing_free);

const char *pair_distance_to_string(PairDistance d);
int pair_distance_from_string(const char *s, PairDistance *ret);
