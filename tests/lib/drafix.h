/* Fixtures for the DRA tests: an inventory without hardware. */
#pragma once

#include "inventory.h"

/*
 * n units rail0..rail<n-1>: the first half of tenant 0, the rest of tenant 1
 * (c needs two tenants), GPU "GPU-<k>" with node /dev/railgate/gpu<k>,
 * netdev rail<k>, NUMA node 0 for the first half and 1 for the rest; rail 0
 * has RDMA device mlx5_0. Freed with inventory_free.
 */
Inventory *drafix_inventory(const NodeConfig *c, unsigned n);
