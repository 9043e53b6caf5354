/* SPDX-License-Identifier: Apache-2.0 */
/* One unit's NIC: recorded, moved into the pod, configured, put back, checked (nic.c). */
#pragma once

#include "attachment.h"
#include "error.h"
#include "nicns.h"

/* Record the NIC's host settings into n (the caller saves the state
 * before nic_move_in_many() moves it). */
int nic_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
/* Addresses, VRF, routes and rules inside the pod. */
int nic_configure(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
/* Before the first move: every NIC's pod name is free in the pod, asked in
 * one batch of the pod's (a taken one fails before anything moves, in the
 * common case; the move itself refuses a name taken meanwhile). */
int nic_names_free(NicNs *ns, AttachedNic *nics, size_t n, RgError *err);
/* The same for n NICs, each namespace's requests in one batch: the moves
 * under the pod-side names, with MTU, alias and up in the same request;
 * every address, route and rule (p: the tenant's, VRF mode NIC by NIC). A
 * refused move leaves the others moved, each marked so: the error names the
 * first NIC and request that failed, in request order. */
int nic_move_in_many(NicNs *ns, AttachedNic *nics, size_t n, RgError *err);
/* After the last move: where each of n NICs landed in the pod (its
 * pod_ifindex), a device with a parent asked in one batch of the pod's, a
 * veth through its peer in one batch of the host's; nothing before needs it
 * (a rollback finds each NIC by its identity). */
int nic_landed_many(NicNs *ns, AttachedNic *nics, size_t n, RgError *err);
/* Once every NIC is configured: each still at its pod_ifindex (the
 * configuration went by ifindex); the same look as nic_landed_many. */
int nic_still_landed_many(NicNs *ns, const AttachedNic *nics, size_t n, RgError *err);
int nic_configure_many(NicNs *ns, const NicPlan *p, AttachedNic *nics, size_t n, RgError *err);
/* Before the first nic_record(): the host's links, veth peers and ethtool
 * states of every unit read in batches into pre (n of them; NicPlan.pre),
 * and what is left of them freed after. */
void nic_prefetch(NicNs *ns, const Unit *const *units, size_t n, NicPrefetch *pre);
void nic_prefetch_done(NicPrefetch *pre, size_t n);
/* Put a NIC back in the host namespace under its original name with its
 * original MTU, settings and addresses, down (the move home closed it; one
 * that never left and has no settings to put back keeps its state), and its
 * VF's admin state; *ret_home is its ifindex there when it returns 0 (0
 * otherwise), *ret_moved whether it came out of the pod. An anchored NIC
 * keeps its anchor (anchor_remove() once it is up). ns->pod NULL: the
 * namespace is gone. Returns 0 when restored; NIC_GONE when the search
 * before anything moved found that the NIC no longer exists anywhere (a
 * veth dies with its peer or namespace), or an anchored NIC has no anchor
 * (it never left, or it died and took its anchor along), the only answer
 * that lets its record go; < 0 (err says why) when it is not home,
 * whatever errno a step the pod can disturb gave. */
#define NIC_GONE 1
int nic_restore(NicNs *ns, const AttachedNic *n, int *ret_home, bool *ret_moved, RgError *err);
/* Once every NIC of the attachment is home: those nic_restore() restored
 * (res[i] 0, at home[i]) that were up, up in one batch of the host's; one
 * the kernel refused is logged, gets res[i] < 0 and err says why (the last
 * such). Returns how many failed. */
int nic_up_many(NicNs *ns, const AttachedNic *nics, const int *home, int *res, size_t n,
                RgError *err);
/* Before the NICs of an attachment are restored: where one of them is a
 * macvlan (its siblings on its lower are deleted as uppers), the pod's
 * ifindex of each into ns->spare, so that no NIC's clean-up deletes
 * another; nothing otherwise. Clear ns->spare[i] once NIC i is home. */
int nic_spares(NicNs *ns, const AttachedNic *nics, size_t n);
/* Before the NICs of an attachment are restored: one dump of the pod's
 * links, where each NIC's release looks for the links stacked on it (each
 * read again before it is deleted); best effort. */
void nic_pod_look(NicNs *ns);
/* CHECK one NIC inside the pod. */
int nic_check(NicNs *ns, const AttachedNic *n, RgError *err);
