/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin daemon: one gRPC server and registration per tenant. */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "agentmetrics.h"
#include "config.h"
#include "health.h"
#include "inventory.h"
#include "loop.h"
#include "rpc.h"

#define DP_API_VERSION "v1beta1"
#define DP_METHOD_REGISTER "/v1beta1.Registration/Register"
#define DP_METHOD_OPTIONS "/v1beta1.DevicePlugin/GetDevicePluginOptions"
#define DP_METHOD_LIST_AND_WATCH "/v1beta1.DevicePlugin/ListAndWatch"
#define DP_METHOD_PREFERRED "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define DP_METHOD_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define DP_METHOD_PRESTART "/v1beta1.DevicePlugin/PreStartContainer"

#define DP_REGISTER_TIMEOUT_MS 10000
#define DP_BACKOFF_MIN_MS 250
#define DP_BACKOFF_MAX_MS 30000
#define DP_MAX_CONTAINER_REQUESTS 64

struct Plugin;
typedef struct Loop Loop;                 /* daemon.c: the front's state on the agent's loop */
typedef struct Registration Registration; /* registration.c */

#define DP_SOCKET_PREFIX "railgate-"

typedef struct TenantServer {
    struct Plugin *plugin;
    size_t tenant;    /* index into NodeConfig.tenants */
    const char *name; /* tenant name */
    const char *resource;
    /* socket file name, relative to the device-plugin dir: DP_SOCKET_PREFIX,
     * the tenant, '-', 8 random hex digits, ".sock"; new at every start */
    char endpoint[128];
    char socket_path[PATH_MAX];
    RpcServer *server;
    ino_t socket_ino;     /* of the socket we bound; 0 when not serving */
    uint64_t reg_gen;     /* kubelet start (Plugin.kubelet_gen) registered with; 0: none */
    Registration *reg;    /* Register in flight, or NULL */
    uint64_t reg_for_gen; /* kubelet start the call in flight is for */
    bool reg_stale;       /* the server was rebound while it was in flight */
    struct stat reg_st;   /* the kubelet.sock the last Register reached (or is reaching) */
    struct stat done_st;  /* the kubelet.sock of the last Register kubelet accepted */
    uint64_t retry_at_ms; /* next Register or bind attempt (monotonic), 0: now */
    unsigned backoff_ms;
    /* why it registers next (for the metrics); NONE once it did */
    RegisterReason reg_why;
    bool registered;    /* kubelet accepted a Register of it in this process */
    const Unit **units; /* this tenant's units, inventory order */
    size_t n_units;
} TenantServer;

typedef struct Plugin {
    const NodeConfig *config;
    const Inventory *inv;
    char dp_dir[PATH_MAX]; /* <kubeletDir>/device-plugins */
    char kubelet_sock[PATH_MAX];
    uint64_t kubelet_gen; /* kubelet starts seen, the current one's number; 0: none yet */

    Health *health; /* borrowed: the agent's one health module (health.h) */
    Loop *loop;     /* on the agent's loop once attached */

    TenantServer *tenants;
    size_t n_tenants;
} Plugin;

int plugin_new(const NodeConfig *c, const Inventory *inv, Health *health, Plugin **ret);
void plugin_free(Plugin *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plugin *, plugin_free);

/* The device-plugin front on the agent's loop: kubelet's dir watched, each
 * tenant served and registered, health changes pushed to ListAndWatch. */
int plugin_attach(Plugin *p, EvLoop *l);
/* SIGHUP: every tenant rebound and registered again. */
void plugin_hup(Plugin *p);
/* Registrations in flight cancelled, the servers stopped (once the loop
 * ended). plugin_free does it too. */
void plugin_stop(Plugin *p);

/* server.c: the DevicePlugin service of one tenant. */
int tenant_server_start(TenantServer *t);
void tenant_server_stop(TenantServer *t);
/* Push the tenant's full device list to its open ListAndWatch streams. */
void tenant_server_broadcast(TenantServer *t);

/* registration.c: start Register of the tenant's resource with kubelet and
 * return; notify_fd (an eventfd) gets a write when the call has ended. */
int registration_start(TenantServer *t, int notify_fd, Registration **ret);
/* The kubelet.sock the call is pinned to (rpc_channel_new_pinned). */
const struct stat *registration_socket(const Registration *g);
bool registration_done(const Registration *g);
void registration_cancel(Registration *g);
/* Reap an ended (or cancelled) call: its result, err filled on failure. */
int registration_finish(Registration *g, RgError *err);
/* Cancel, reap and free. NULL-safe. */
void registration_free(Registration *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(Registration *, registration_free);

/* listwatch.c */
int listwatch_snapshot(TenantServer *t, uint8_t **ret, size_t *ret_len);

/* allocate.c */
struct V1beta1__ContainerAllocateResponse;
struct Arena;
int allocate_container(const TenantServer *t, char **ids, size_t n_ids, struct Arena *a,
                       struct V1beta1__ContainerAllocateResponse **ret, RgError *err);
/* Resolve device ids to this tenant's units; INVALID_ARGUMENT on any id that
 * is unknown, another tenant's, or repeated. ret has room for n_ids. */
int tenant_resolve_ids(const TenantServer *t, char **ids, size_t n_ids, const Unit **ret,
                       RgError *err);
