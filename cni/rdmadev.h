/* SPDX-License-Identifier: Apache-2.0 */
/* A unit's RDMA device, moved with its NIC where the node's RDMA netns mode is exclusive
 * (rdmadev.c). */
#pragma once

#include <stddef.h>

#include "attachment.h"
#include "error.h"
#include "inventory.h"
#include "nicns.h"

/*
 * In exclusive mode an RDMA device is seen, and used, only in the network
 * namespace it belongs to: a pod's RDMA device goes into the pod with its
 * NIC, and comes home with it. In shared mode (the kernel's default) every
 * namespace sees every device and none moves: nothing here does anything.
 */

/* ADD: the node's mode into ns->rdma_exclusive, read (in the host
 * namespace) only when one of units[0..n) has an RDMA device; a node
 * without the RDMA core (no ib_core) is left alone. */
int rdmadev_mode(NicNs *ns, const Unit *const *units, size_t n, RgError *err);
/* ADD, exclusive mode: the unit's RDMA device, as the host has it, into n
 * (name, index, node GUID, parent) before anything moves; CNI error 101
 * when it is not there, or is another NIC's. */
int rdmadev_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
/* ADD: n's recorded RDMA device into the pod, before its NIC; a device the
 * kernel cannot move (EOPNOTSUPP: a driver without that support, such as
 * the software RoCE driver rxe) refuses the ADD, naming it and the mode. */
int rdmadev_move_in(NicNs *ns, const AttachedNic *n, RgError *err);
/* DEL, GC, rollback: n's recorded RDMA device found again by its index and
 * node GUID (never by its name: the pod may rename it, or make another of
 * that name) in the pod or already home (the kernel returns a dying
 * namespace's devices to the host), moved home, and its name given back; 0
 * when it is home as recorded (or n has none); < 0 (err says why) when it
 * is not: the record and the unit's claim stay. */
int rdmadev_restore(NicNs *ns, const AttachedNic *n, RgError *err);
/* CHECK: n's recorded RDMA device (if any) is in the pod under its recorded
 * name, found there by its index and node GUID; CNI error 103 when not. */
int rdmadev_check(NicNs *ns, const AttachedNic *n, RgError *err);
