/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device-plugin tenants for fuzz targets, served through fakerpc: the real
 * handlers of deviceplugin/server.c over inventories built from node configs.
 *
 *  - tests/fixtures/config/node-example.json: 8 static rails, simulated GPUs
 *    with device nodes (some missing), tenants "a" and "b";
 *  - VF rails and RDMA devices from a sysfs fixture (tenants "x", "y"),
 *    umad and gdrdrv asked for (some of their nodes missing);
 *  - discovery on tests/fixtures/topology/dgx-8gpu-4sw.xml with CDI names
 *    (tenants "p", "q"): PCIe switches and NUMA nodes for the policies.
 *
 * Device, sysfs and proc roots point into a temp dir removed at exit, so
 * nothing depends on the host.
 */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#include "plugin.h"

#define DPFIXTURE_MAX_TENANTS 8

/* Build everything once (aborts on failure); returns the tenants, serving. */
size_t dpfixture_tenants(TenantServer **ret, size_t n);
/* What a target does with one tenant: data is the raw input, req the input
 * decoded as the method's request message, or NULL where protobuf-c refused it. */
typedef void DpFixtureRun(TenantServer *t, const uint8_t *data, size_t size,
                          const ProtobufCMessage *req);
/* Decode the input as a desc message once, run() it against every fixture
 * tenant, free it: the body of a device-plugin target's LLVMFuzzerTestOneInput. */
void dpfixture_each_tenant(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
                           DpFixtureRun *run);
/* Call a DevicePlugin method of tenant t: see fakerpc_server_call(). */
int dpfixture_call(TenantServer *t, const char *method, const uint8_t *req, size_t len,
                   uint8_t **ret_resp, size_t *ret_len, RgError *err);
/* Call a request/response method with the fuzz input and check the refusal
 * contract: a refused request gets INVALID_ARGUMENT or RESOURCE_EXHAUSTED
 * with a message, and true only when the handler accepted it, which it may
 * do only for bytes protobuf-c decodes (decoded: the target's own unpack of
 * the input, NULL where it failed). The caller frees *ret_resp. */
bool dpfixture_call_accepted(TenantServer *t, const char *method, const uint8_t *req, size_t len,
                             const void *decoded, uint8_t **ret_resp, size_t *ret_len);
/* Is id one of tenant t's units? */
bool dpfixture_owns(const TenantServer *t, const char *id);
