/* Fixtures for the DRA tests: an inventory without hardware. */
#pragma once

#include <jansson.h>

#include "fakeapi.h"
#include "inventory.h"
#include "kube.h"

/*
 * n units rail0..rail<n-1>: the first half of tenant 0, the rest of tenant 1
 * (c needs two tenants), GPU "GPU-<k>" with node /dev/railgate/gpu<k>,
 * netdev rail<k>, NUMA node 0 for the first half and 1 for the rest; rail 0
 * has RDMA device mlx5_0. Freed with inventory_free.
 */
Inventory *drafix_inventory(const NodeConfig *c, unsigned n);

/* The value of key in a CDI env list ("KEY=value" strings), or NULL. */
const char *drafix_env_of(json_t *env, const char *key);

/* A fake API server and a client of it (its kubeconfig written in dir). */
int drafix_api(const char *dir, FakeApi **ret_api, KubeClient **ret_kube);
