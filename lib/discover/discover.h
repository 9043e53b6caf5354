/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building the inventory from the node config and discovery (hwloc's PCIe
 * topology, sysfs, the node's own NICs): the node agent's alone. The CNI
 * reads what the agent published (inventory.h) and never builds one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"
#include "inventory.h"

struct NodeNic;

/* Options that are not in the node config: overrides given on the command line. */
typedef struct InventoryOptions {
    const char *topology_xml; /* overrides config discovery.topologyXml */
    /* The node's own NICs (default route, node address), which discovery
     * never pairs unless the config names them. Unless given, they are read
     * from the kernel (node_nics_list) when discovery is on; tests on
     * topology fixtures give them. */
    bool node_nics_given;
    const struct NodeNic *node_nics;
    size_t n_node_nics;
} InventoryOptions;

int inventory_build(const NodeConfig *c, const InventoryOptions *o, Inventory **ret, RgError *err);
