/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI commands and what they share. */
#pragma once

#include <jansson.h>

#include "anchor.h"
#include "attachment.h"
#include "cni.h"
#include "config.h"
#include "context.h"
#include "inventory.h"
#include "locate.h"
#include "netlink.h"
#include "nicns.h"
#include "nswait.h"

/* Each returns 0 with *ret (the JSON to print, or NULL for none), or a
 * negative errno with err->code and err->msg set for the error JSON. */
int cmd_add(CniContext *c, json_t **ret, RgError *err);
int cmd_del(CniContext *c, RgError *err);
int cmd_check(CniContext *c, RgError *err);
int cmd_gc(CniContext *c, RgError *err);
int cmd_status(CniContext *c, RgError *err);

/* nic.c: one unit's NIC into the pod and back. */
/* Record the NIC's host settings into n, then move it into the pod netns
 * under its pod-side name, with its MTU, alias and up in the same request;
 * the caller saves the state between the two. */
int nic_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
int nic_move_in(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
/* Addresses, VRF, routes and rules inside the pod. */
int nic_configure(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
/* Put a NIC back in the host namespace under its original name with its
 * original MTU, state and addresses. ns->pod NULL: the namespace is gone.
 * Returns 0 when restored; NIC_GONE when the search before anything moved
 * found that the NIC no longer exists anywhere (a veth dies with its peer
 * or namespace), or an anchored NIC has no anchor (it never left, or it
 * died and took its anchor along), the only answer that lets its record go;
 * < 0 (err says why) when it is not home, whatever errno a step the pod can
 * disturb gave. */
#define NIC_GONE 1
int nic_restore(NicNs *ns, const AttachedNic *n, RgError *err);
/* Before the NICs of an attachment are restored: where one of them is a
 * macvlan (its siblings on its lower are deleted as uppers), the pod's
 * ifindex of each into ns->spare, so that no NIC's clean-up deletes
 * another; nothing otherwise. Clear ns->spare[i] once NIC i is home. */
int nic_spares(NicNs *ns, const AttachedNic *nics, size_t n);
/* CHECK one NIC inside the pod. */
int nic_check(NicNs *ns, const AttachedNic *n, RgError *err);

/* vf.c: an SR-IOV VF's admin state through its PF, as the rail's vfConfig
 * asks. Record: the PF (from sysfs) and VF number, what will be set, and
 * each of those settings as the PF has it now, into n (nothing changes; a
 * NIC that is no VF, or whose rail keeps everything, records none). Apply:
 * set what was recorded to set. Restore: give back what was saved. Check:
 * the PF still has what was set. Each acts only on a recorded VF. */
int nic_vf_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
int nic_vf_apply(NicNs *ns, const AttachedNic *n, RgError *err);
int nic_vf_restore(NicNs *ns, const AttachedNic *n, RgError *err);
int nic_vf_check(NicNs *ns, const AttachedNic *n, RgError *err);

/* teardown.c: undo an attachment: every moved NIC back, units released,
 * IPAM released, state removed. Used by DEL, GC and a failed ADD. */
int attachment_teardown(CniContext *c, Attachment *a, RgError *err);
/* Drop a record of an earlier boot and its claims, touching no NIC. */
int attachment_forget(CniContext *c, const Attachment *a, RgError *err);

/* ipam.c: the tenant's IPAM plugin, as the node config names it; stdin never
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

/* result.c */
json_t *result_build(const CniContext *c, const Attachment *a);
