/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA kubelet plugin: registration, NodePrepare/NodeUnprepare, the node's slices. */
#pragma once

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "claims.h"
#include "config.h"
#include "health.h"
#include "inventory.h"
#include "kube.h"
#include "loop.h"
#include "rpc.h"

#define DRA_PLUGIN_TYPE "DRAPlugin"
#define DRA_VERSION_V1 "v1.DRAPlugin"
#define DRA_VERSION_V1BETA1 "v1beta1.DRAPlugin"
#define DRA_METHOD_GET_INFO "/pluginregistration.Registration/GetInfo"
#define DRA_METHOD_NOTIFY "/pluginregistration.Registration/NotifyRegistrationStatus"
#define DRA_SERVICE_V1 "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
#define DRA_SERVICE_V1BETA1 "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"
/* The resource health service (KEP-4680), on the DRAPlugin's socket: GetInfo
 * lists it, kubelet takes the newest it knows (v1alpha1 until kubelet 1.40) */
#define DRA_HEALTH_V1 "v1.DRAResourceHealth"
#define DRA_HEALTH_V1ALPHA1 "v1alpha1.DRAResourceHealth"
#define DRA_METHOD_WATCH_V1 "/v1.DRAResourceHealth/NodeWatchResources"
#define DRA_METHOD_WATCH_V1ALPHA1 "/v1alpha1.DRAResourceHealth/NodeWatchResources"
/* Kubelet reads a device it was not told about within its lease as Unknown
 * (health_check_timeout_seconds, sent with each device)... */
#define DRA_HEALTH_TIMEOUT_S 60
/* ...so the full list goes again this often, well inside it (and at once on a change) */
#define DRA_HEALTH_RESEND_S 20
#define DRA_HEALTH_MESSAGE_MAX 1024         /* kubelet's limit for a device's message */
#define DRA_REGISTRY_DIR "plugins_registry" /* under kubeletDir */
#define DRA_PLUGINS_DIR "plugins"
#define DRA_REG_SUFFIX "-reg.sock" /* plugins_registry/<driver>-<id>-reg.sock */
#define DRA_SOCK_PREFIX "dra-"     /* plugins/<driver>/dra-<id>.sock */
#define DRA_MAX_CLAIMS 256         /* claims in one request */
/* Kubelet gives a call 45 s; GETs of a batch stop here, the rest get an error to retry */
#define DRA_PREPARE_BUDGET_MS 30000
#define DRA_NODE_NAME_ENV "NODE_NAME"
/* A unit's health turned (health.c, on a link event or inotify): the slices'
 * taints follow after this window (what turns within it goes in one write)... */
#define DRA_HEALTH_COALESCE_MS 10
/* ...and no sooner than this after the last health republished: a flapping
 * link costs the API server one write of the pool per gap at most */
#define DRA_HEALTH_MIN_GAP_MS 200
#define DRA_NETDATA_EVERY_S 10 /* networkData reconciled without a report too */
#define DRA_SWEEP_EVERY_S 30   /* prepared claims checked for being stale */

typedef struct PodResources PodResources;

typedef struct DraDriver {
    const NodeConfig *config;
    const Inventory *inv;
    KubeClient *kube;           /* borrowed */
    PodResources *podresources; /* borrowed: kubelet's view of the claims in use */
    Health *health;             /* borrowed: what NodeWatchResources sends; NULL: refused */
    const char *driver;         /* the config's domain */
    char node[254];             /* this node: the pool's name */
    char id[16];                /* this start's: in both socket names */
    char reg_sock[PATH_MAX];
    char dra_sock[PATH_MAX];
    RpcServer *reg, *dra;
    RpcMethod *service; /* the DRA socket's: DRAPlugin's and DRAResourceHealth's methods */
    size_t n_service;
    ino_t reg_ino, dra_ino;
    atomic_int registered;                       /* -1 refused, 0 not yet, 1 kubelet accepted */
    unsigned long prepared, unprepared, refused; /* claims, for logs and tests */
    unsigned long freed;                         /* claims dropped as stale */
    atomic_bool sweep_soon;                      /* a prepare found a unit held */
} DraDriver;

int dra_driver_new(const NodeConfig *c, const Inventory *inv, KubeClient *kube, const char *node,
                   DraDriver **ret);
/* Remove this driver's sockets nobody serves, bind the DRA service socket,
 * then the registration socket (kubelet's plugin watcher dials it when it
 * appears). Both are named afresh by dra_driver_new. */
int dra_driver_start(DraDriver *d);
/* Rebind a socket that is gone or replaced (not ours any more); the count rebound. */
int dra_driver_check_sockets(DraDriver *d);
void dra_driver_stop(DraDriver *d);
void dra_driver_free(DraDriver *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DraDriver *, dra_driver_free);

/*
 * The node agent's DRA front, on the agent's loop ev: the CNI's socket
 * (answered from the claims prepared here), the DRA and registration
 * sockets, the node's slices, their taints following health's changes
 * (health_subscribe) within DRA_HEALTH_COALESCE_MS, kubelet's health
 * stream at once on each change and every DRA_HEALTH_RESEND_S (a timer of
 * its own), and once a second what
 * no event tells (stale claims, networkData, the slices' retries, the
 * sockets). Reads NODE_NAME and KUBECONFIG (or the in-cluster service
 * account); kubelet's PodResources socket at pod_resources (for
 * dra_claims_sweep). Errors are logged.
 */
typedef struct DraFront DraFront;
int dra_front_start(const NodeConfig *c, const Inventory *inv, const char *pod_resources,
                    EvLoop *ev, Health *health, DraFront **ret);
/* SIGHUP: both sockets bound anew (at the next tick). */
void dra_front_hup(DraFront *f);
void dra_front_free(DraFront *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(DraFront *, dra_front_free);

/*
 * dra-netdata.c: each prepared claim's rails in its status.devices[]
 * (driver, pool, device; networkData: the pod's interface name, its
 * addresses as CIDR, its MAC), by server-side apply as field manager
 * <driver>, from the CNI's attachment records: an entry per unit whose NIC
 * is in the pod, none once DEL brought it home or the claim was unprepared.
 * Only what changed since the last sync is applied; the first sync applies
 * every prepared claim (an earlier agent may have written them).
 */
typedef struct NetData NetData;
int netdata_new(DraDriver *d, NetData **ret);
void netdata_free(NetData *nd);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetData *, netdata_free);
/* Readable after netdata_kick(): poll it, then netdata_kicked() clears it. */
int netdata_fd(const NetData *nd);
/* Sync soon (the CNI reported a command). Never blocks: the agent's reader
 * thread calls it. userdata: the NetData. */
void netdata_kick(void *userdata);
bool netdata_kicked(NetData *nd);
/* Did the last sync leave a claim as it was (a CNI command at work on one
 * of its attachments)? Then it is tried again at the next tick. */
bool netdata_left_busy(const NetData *nd);
/* Apply what changed; the number applied in *ret_applied. The first failure
 * (the others are still tried) with err saying why; it is tried again at
 * the next sync. */
int netdata_sync(NetData *nd, unsigned *ret_applied, RgError *err);

/*
 * dra-stale.c: free the units of prepared claims that kubelet will never
 * unprepare (the claim deleted, or its pod gone, while kubelet or the agent
 * was away). A record goes only when the API server says its claim is gone,
 * made again under its name, or no longer reserved for its pod; kubelet's
 * PodResources lists no container using it; and, under the state lock,
 * none of its NICs is in a pod. An API server or kubelet that cannot say
 * keeps every record. The number freed in *ret_freed.
 */
int dra_claims_sweep(DraDriver *d, unsigned *ret_freed, RgError *err);

/* dra-registration.c: the Registration service's methods. */
extern const RpcMethod dra_registration_methods[];
extern const size_t dra_n_registration_methods;

/* dra-prepare.c: the DRAPlugin service's methods (v1 and v1beta1). */
extern const RpcMethod dra_plugin_methods[];
extern const size_t dra_n_plugin_methods;

/*
 * dra-health.c: the DRAResourceHealth service's NodeWatchResources (v1 and
 * v1alpha1), a server stream of d->health's every unit: pool d->node,
 * device the unit's id, HEALTHY or UNHEALTHY with the reason as message.
 */
extern const RpcMethod dra_health_methods[];
extern const size_t dra_n_health_methods;
/* One NodeWatchResourcesResponse: every unit of inv (kubelet takes each
 * message as the complete list), healthy[i] and (when unhealthy)
 * reasons[i] cut to DRA_HEALTH_MESSAGE_MAX bytes; the lease
 * DRA_HEALTH_TIMEOUT_S; last_updated_time now_s. */
int dra_health_pack(const Inventory *inv, const char *pool, const bool *healthy,
                    const char *const *reasons, int64_t now_s, uint8_t **ret, size_t *ret_len);
/* The health now to every open watch of both versions: the number reached. */
int dra_health_broadcast(DraDriver *d);

/*
 * One claim from the API server (claim, a ResourceClaim) read for this
 * driver and node: its metadata must be the claim kubelet named (ns, name,
 * uid); its results for this driver must be units of this node's pool,
 * each once, none with adminAccess, all of the one tenant whose namespace
 * the claim is in (the node config decides); it must be reserved for
 * exactly one pod. status.allocation.devices.config is never read: a
 * tenant writes FromClaim config. A claim with no result for this driver
 * gives n_devices 0. -EINVAL or -EPERM (tenancy) with err saying why.
 */
int dra_claim_read(const DraDriver *d, json_t *claim, const char *ns, const char *name,
                   const char *uid, PreparedClaim *ret, RgError *err);
