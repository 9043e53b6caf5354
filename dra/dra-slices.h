/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ResourceSlices: what they should say (dra-slices.c), and keeping them so
 * (dra-publish.c). */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "inventory.h"
#include "kube.h"

/*
 * One pool per node, named after the node, all its slices with one
 * generation (bumped on every change) and resourceSliceCount. At most 64
 * devices per slice: the API allows 128, but 64 once any device carries a
 * taint, and health taints come and go.
 */
#define DRA_SLICE_MAX_DEVICES 64
#define DRA_SLICES_PATH "/apis/resource.k8s.io/v1/resourceslices"

typedef struct SliceInput {
    const Inventory *inv;
    const char *driver;         /* "railgate.io": also the attribute domain */
    const char *node;           /* nodeName and the pool's name */
    const char *node_uid;       /* for the owner reference (NULL: none) */
    const bool *healthy;        /* per inventory unit; NULL: all healthy */
    const char *const *reasons; /* per unit, why it is not (the taint's value) */
} SliceInput;

/*
 * Every unit as a device, in inventory order: name <unit id>; attributes
 * <driver>/tenant, /rail, /pcieSwitch, /nic, /rdma, /gpuUUID, /vf (those
 * known), resource.kubernetes.io/pciBusID and /pcieRoot (of the unit's NIC,
 * else its GPU) and /numaNode; an unhealthy unit gets the taint
 * <driver>/unhealthy=<reason as a label value>:NoSchedule.
 */
json_t *dra_slice_devices(const SliceInput *in);
size_t dra_slice_count(size_t n_devices);
/* The spec of slice index (0-based) of the pool at generation. */
json_t *dra_slice_spec(const SliceInput *in, json_t *devices, size_t index, int64_t generation);
/* A new slice object for spec (generateName, owner reference to the node). */
json_t *dra_slice_object(const SliceInput *in, json_t *spec);

/*
 * Keeps the node's slices as they should be: watches the slices of this
 * driver and node (kubelet deletes every slice of its node when it starts,
 * and a driver's 30 s after losing it) and creates, updates or deletes
 * until they say what the inventory and health say. One thread of its own.
 */
typedef struct SlicePublisher SlicePublisher;

int slice_publisher_start(KubeClient *kube, const Inventory *inv, const char *driver,
                          const char *node, SlicePublisher **ret);
/* New health (copied); republished with the next generation when it changed. */
void slice_publisher_set_health(SlicePublisher *p, const bool *healthy, const char *const *reasons);
/* Reconcile now if something is pending (the DRA front calls it right after
 * new health, and every second for the retries). */
void slice_publisher_tick(SlicePublisher *p);
void slice_publisher_stop(SlicePublisher *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlicePublisher *, slice_publisher_stop);

typedef struct SliceStats {
    unsigned long creates, updates, deletes, failures, lists;
    int64_t generation;
    bool in_sync; /* the last reconcile found nothing to do */
} SliceStats;
void slice_publisher_stats(SlicePublisher *p, SliceStats *ret);
