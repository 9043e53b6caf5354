/* SPDX-License-Identifier: Apache-2.0 */
/* IPAM delegation to the tenant's plugin (ipam.c). */
#pragma once

#include <jansson.h>

#include "attachment.h"
#include "config.h"
#include "context.h"
#include "error.h"

/* The tenant's IPAM plugin, as the node config names it; stdin never
 * selects a plugin, and railgate never runs itself as one. */
/* The whole config a delegated plugin gets: {"cniVersion": cni_version,
 * "name": "railgate-<tenant>", "ipam": <tenants[].ipam>}. */
int ipam_conf_build(const TenantConfig *t, const char *cni_version, char **ret);
/* The same for an ADD, in the request's cniVersion if the plugin speaks it,
 * else the newest version below it that both speak (asked with VERSION). */
int ipam_conf_negotiate(const CniContext *c, const TenantConfig *t, char **ret);
/* IPAM ADD for a (container id, ifname, netns, pod) with a->ipam_conf; the
 * plugin's result in *ret_result. A plugin that ran and failed is released
 * (IPAM DEL) before this returns. */
int ipam_add(const CniContext *c, const Attachment *a, json_t **ret_result, RgError *err);
/* IPAM DEL of an attachment with what its ADD recorded: a->ipam_conf (its
 * cniVersion included), a's container id, ifname and netns. */
int ipam_release(const CniContext *c, const Attachment *a, RgError *err);
/* IPAM CHECK of an attachment with its recorded config (and no prevResult). */
int ipam_check(const CniContext *c, const Attachment *a, RgError *err);
/* GC (1.1) forwarded to every tenant's IPAM plugin that speaks 1.1.0, with
 * the runtime's valid attachments and every attachment still recorded. */
int ipam_gc(const CniContext *c, RgError *err);
