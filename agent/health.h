/* SPDX-License-Identifier: Apache-2.0 */
/* Unit health, one module for every front: fed by link events (netlink, the host's and those of
 * the namespaces of pods holding a NIC) and inotify (the units' markers, the GPUs' device nodes) on
 * the agent's loop, read by the device-plugin front (ListAndWatch) and the DRA front (the slices'
 * taints). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "inventory.h"
#include "loop.h"

typedef struct Health Health;

/* Units changed: dirty[t] for each tenant t with a unit that turned (every
 * tenant with one at the first reading). On the loop's thread, right after
 * the event that changed them. */
typedef void (*health_changed_fn)(void *userdata, const bool *dirty_tenants);

int health_new(const NodeConfig *c, const Inventory *inv, Health **ret);
void health_free(Health *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Health *, health_free);

/* The one front told of changes (NULL: none). */
void health_subscribe(Health *h, health_changed_fn fn, void *userdata);
/* Follow link events and the markers' and GPU and uverbs nodes' dirs on l, and read
 * every unit once (the first reading: no transitions counted). */
int health_start(Health *h, EvLoop *l);

/* Unit i's health as it is now (GPU device nodes, the RDMA device's uverbs
 * node, NIC link on the host or in the pod that holds it), and why; loop
 * thread. */
bool health_unit_now(Health *h, size_t i, const char **ret_reason);
/* Re-read the units whose NIC is netdev (every unit when NULL); loop thread. */
void health_refresh(Health *h, const char *netdev);
/* Re-read the units i with which[i] set; loop thread. */
void health_refresh_units(Health *h, const bool *which);

/* Any thread: every unit's health and reason (static text) as last read;
 * either array may be NULL. */
void health_read(Health *h, bool *healthy, const char **reasons);
bool health_healthy(Health *h, size_t unit);
/* Units read so far (each unit of a full reading counts). */
uint64_t health_reads(Health *h);
/* Transitions so far (the first reading's included). */
uint64_t health_changes(Health *h);
/* Set a unit's health as if read (fixtures, fuzzers). */
void health_set(Health *h, size_t unit, bool healthy, const char *reason);
