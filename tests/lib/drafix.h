/* SPDX-License-Identifier: Apache-2.0 */
/* Fixtures for the DRA tests: an inventory without hardware. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "dra.pb-c.h"
#include "pluginregistration.pb-c.h"

#include "fakeapi.h"
#include "inventory.h"
#include "kube.h"

/* The node config's rails and tenants for drafix_inventory(c, 4), members
 * of its top-level object: rails 0 to 3 (NICs rail0..rail3), tenant-a with
 * rails 0 and 1 (namespace team-a, VRF table 100), tenant-b with 2 and 3
 * (team-b, table 200). */
#define DRAFIX_RAILS_TENANTS                                                                       \
    "\"rails\": [{\"index\": 0, \"nic\": {\"name\": \"rail0\"}}, {\"index\": 1, \"nic\": "         \
    "{\"name\": \"rail1\"}}, {\"index\": 2, \"nic\": {\"name\": \"rail2\"}}, {\"index\": 3, "      \
    "\"nic\": {\"name\": \"rail3\"}}], \"tenants\": [{\"name\": \"tenant-a\", \"namespaces\": "    \
    "[\"team-a\"], \"rails\": [0, 1], \"vrf\": {\"table\": 100}}, {\"name\": \"tenant-b\", "       \
    "\"namespaces\": [\"team-b\"], \"rails\": [2, 3], \"vrf\": {\"table\": 200}}]"

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

/* One allocation result of a claim (NULL fields: driver railgate.io, the
 * node's pool, request "gpus"). */
typedef struct DrafixResult {
    const char *device, *driver, *pool, *request;
    bool admin;
} DrafixResult;

/* A ResourceClaim ns/name as the scheduler leaves it in api: allocated
 * res[0..n) of node's pool, reserved for pods[0..n_pods) (uids), with
 * config (taken; NULL: none) as status.allocation.devices.config; its uid
 * (the fake's, CLAIM_UID_MAX bytes) into uid. */
int drafix_put_claim(FakeApi *api, const char *node, const char *ns, const char *name,
                     const DrafixResult *res, size_t n, const char *const *pods, size_t n_pods,
                     json_t *config, char *uid);

/* kubelet's side: one claim as NodePrepare/NodeUnprepare name it. */
typedef struct DrafixRef {
    const char *ns, *name, *uid;
} DrafixRef;

/* A unary call on a unix socket (10 s); the reply, NULL on a gRPC failure. */
uint8_t *drafix_call(const char *sock, const char *method, const ProtobufCMessage *m,
                     size_t *ret_len);
/* As kubelet finds the DRA socket: GetInfo on the one registration socket
 * (kubelet/plugins_registry/railgate.io*-reg.sock). Its answer where it
 * names an endpoint that exists (free it with
 * pluginregistration__plugin_info__free_unpacked), NULL otherwise. */
Pluginregistration__PluginInfo *drafix_registration_info(const char *kubelet);
/* NodePrepareResources of refs[0..n) on the DRA socket sock, through
 * service (DRA_SERVICE_V1 or _V1BETA1); NULL on a gRPC failure. */
Dra__NodePrepareResourcesResponse *drafix_prepare(const char *sock, const char *service,
                                                  const DrafixRef *refs, size_t n);
/* The answer for claim uid in r, NULL when r has none. */
Dra__NodePrepareResourceResponse *drafix_prepared(Dra__NodePrepareResourcesResponse *r,
                                                  const char *uid);
/* NodeUnprepareResources of one claim: the error kubelet gets ("" for
 * none; free it), NULL on a gRPC failure or an answer without the claim. */
char *drafix_unprepare(const char *sock, const DrafixRef *ref);

/*
 * A NodeWatchResourcesResponse as text: "<device>=<HEALTH>" per device, in
 * the order sent, with "(<message>)" after it where there is one, joined by
 * " " (e.g. "rail0=HEALTHY rail1=UNHEALTHY(NIC link down)"). NULL (and why
 * on stderr) when it does not decode, or a device is not of pool or has a
 * lease other than DRA_HEALTH_TIMEOUT_S. The first device's
 * last_updated_time into *ret_updated (may be NULL). Free it.
 */
char *drafix_health_text(const uint8_t *buf, size_t len, const char *pool, int64_t *ret_updated);
