/* SPDX-License-Identifier: Apache-2.0 */
/* What a container gets for a set of units, whichever front-end hands them out. */
#pragma once

#include <stddef.h>

#include "config.h"
#include "inventory.h"

/*
 * One builder for the device plugin's Allocate and the DRA driver's CDI
 * spec, so that a pod gets the same thing either way:
 *   env      "KEY=value", in this order: CUDA_VISIBLE_DEVICES and
 *            NVIDIA_VISIBLE_DEVICES (the GPUs' ids), NCCL_IB_HCA ("=" and the
 *            RDMA devices, exact match; only when there are some),
 *            NCCL_SOCKET_IFNAME ("=" and the pod-side names), UCX_NET_DEVICES
 *            ("<rdma>:1", or the pod-side name), RAILGATE_TENANT,
 *            RAILGATE_RAILS, RAILGATE_UNITS
 *   devices  container paths of the GPU device nodes (unless cdiKind names
 *            the GPUs), their control nodes and the RDMA nodes, each once and
 *            only if it exists under devRoot (its host path is devRoot + it)
 *   cdi      "<cdiKind>=<GPU id>" per GPU when the node config sets cdiKind
 * Units are taken in rail order whatever order they come in.
 */
typedef struct ContainerEdits {
    char **env;
    char **devices;
    char **cdi;
} ContainerEdits;

int container_edits_build(const NodeConfig *c, const char *tenant, const Unit *const *units,
                          size_t n, ContainerEdits *ret);
void container_edits_done(ContainerEdits *e);
