/* SPDX-License-Identifier: Apache-2.0 */
/* The wait for a NIC that a namespace being torn down still holds (nswait.c). */
#pragma once

#include "attachment.h"
#include "error.h"
#include "netlink.h"
#include "nicns.h"

/*
 * A NIC the kernel still holds in a network namespace it is
 * tearing down (the pod's, a moment after the runtime deleted it) is on its
 * way: a veth, dummy or macvlan dies with that namespace, a device with a
 * parent is moved to the host. DEL, GC and a rollback wait for that, woken
 * by link events, until ns->dying_deadline_ms (started at the first wait,
 * ns->dying_wait_s on).
 */
/* A link monitor on the host and every namespace it has an id for (a veth's
 * peer may be in one: it dies there), opened before the look that it must
 * not miss an event after. */
int nswait_open(LinkMonitor **ret);
/* 1 when a link changed (look again), 0 when the wait is over. */
int nswait_next(NicNs *ns, LinkMonitor *m);
/* CNI error 11 for n, still in such a namespace when the wait is over,
 * naming the namespace; the record and the claim stay. */
int nswait_error(const NicNs *ns, const AttachedNic *n, RgError *err);
