/* SPDX-License-Identifier: Apache-2.0 */
/* The DevicePlugin gRPC service of one tenant: handlers and server lifecycle. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "deviceplugin.pb-c.h"
#include "log.h"
#include "sockfile.h"
#include "pb.h"
#include "plugin.h"
#include "preferred.h"

static int on_options(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                      size_t *ret_len, RgError *err) {
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

    o.pre_start_required = false;
    o.get_preferred_allocation_available = true;
    return rpc_reply_pack(&o.base, ret, ret_len, err);
}

static int on_list_and_watch(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                             size_t *ret_len, RgError *err) {
    TenantServer *t = userdata;

    if (listwatch_snapshot(t, ret, ret_len) < 0)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    log_info(t->name, NULL, "ListAndWatch stream opened, %zu units", t->n_units);
    return RPC_OK;
}

static int allocate_reply(TenantServer *t, const uint8_t *req, size_t len, uint8_t **ret,
                          size_t *ret_len, RgError *err) {
    _cleanup_pb_ V1beta1__AllocateRequest *ar = v1beta1__allocate_request__unpack(NULL, len, req);
    V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
    _cleanup_arena_ Arena a = {0};
    int r;

    if (!ar)
        return log_error(
            t->name, NULL,
            rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "malformed AllocateRequest"),
            "Allocate refused: %s", err->msg);
    if (ar->n_container_requests == 0 || ar->n_container_requests > DP_MAX_CONTAINER_REQUESTS)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "AllocateRequest with %zu container requests", ar->n_container_requests);
    resp.container_responses =
        arena_array(&a, V1beta1__ContainerAllocateResponse *, ar->n_container_requests);
    if (!resp.container_responses)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < ar->n_container_requests; i++) {
        V1beta1__ContainerAllocateRequest *cr = ar->container_requests[i];
        r = allocate_container(t, cr->devices_ids, cr->n_devices_ids, &a,
                               &resp.container_responses[i], err);
        if (r == -ENOMEM)
            return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
        if (r < 0) {
            log_warn(t->name, NULL, "Allocate refused: %s", err->msg);
            return RPC_INVALID_ARGUMENT;
        }
        resp.n_container_responses++;
        for (size_t j = 0; j < cr->n_devices_ids; j++)
            log_info(t->name, cr->devices_ids[j], "allocated");
    }
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

typedef int (*reply_fn)(TenantServer *t, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, RgError *err);
typedef void (*observe_fn)(const char *resource, int grpc_code, double seconds);

/* Answer, then count the call by its code and its time. */
static int reply_timed(TenantServer *t, reply_fn reply, observe_fn observe, const uint8_t *req,
                       size_t len, uint8_t **ret, size_t *ret_len, RgError *err) {
    uint64_t start = metrics_clock();
    int code = reply(t, req, len, ret, ret_len, err);

    observe(t->resource, code, metrics_seconds_since(start));
    return code;
}

static int on_allocate(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, RgError *err) {
    return reply_timed(userdata, allocate_reply, metrics_allocate_observe, req, len, ret, ret_len,
                       err);
}

/* Ids from kubelet that are ours; others are ignored, never returned. */
static size_t resolve_known(const TenantServer *t, char **ids, size_t n, const Unit **ret) {
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        const Unit *u = NULL;
        if (tenant_resolve_ids(t, &ids[i], 1, &u, NULL) < 0)
            continue;
        bool dup = false;
        for (size_t j = 0; j < k; j++)
            dup |= ret[j] == u;
        if (!dup)
            ret[k++] = u;
    }
    return k;
}

static V1beta1__ContainerPreferredAllocationResponse *
preferred_one(const TenantServer *t, const V1beta1__ContainerPreferredAllocationRequest *cr,
              Arena *a) {
    V1beta1__ContainerPreferredAllocationResponse *out =
        arena_new(a, V1beta1__ContainerPreferredAllocationResponse);
    const Unit **avail = arena_array(a, const Unit *, t->n_units);
    const Unit **must = arena_array(a, const Unit *, t->n_units);
    const Unit **chosen = arena_array(a, const Unit *, t->n_units);

    if (!out || !avail || !must || !chosen)
        return NULL;
    v1beta1__container_preferred_allocation_response__init(out);
    size_t n_avail = resolve_known(t, cr->available_deviceids, cr->n_available_deviceids, avail);
    size_t n_must =
        resolve_known(t, cr->must_include_deviceids, cr->n_must_include_deviceids, must);
    size_t size = cr->allocation_size > 0 ? (size_t)cr->allocation_size : 0;
    size_t n = preferred_select(avail, n_avail, must, n_must, size, chosen);
    out->deviceids = arena_array(a, char *, n);
    if (!out->deviceids)
        return NULL;
    for (size_t i = 0; i < n; i++)
        out->deviceids[out->n_deviceids++] = (char *)chosen[i]->id;
    return out;
}

static int preferred_reply(TenantServer *t, const uint8_t *req, size_t len, uint8_t **ret,
                           size_t *ret_len, RgError *err) {
    _cleanup_pb_ V1beta1__PreferredAllocationRequest *pr =
        v1beta1__preferred_allocation_request__unpack(NULL, len, req);
    V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    _cleanup_arena_ Arena a = {0};

    if (!pr)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed PreferredAllocationRequest");
    if (pr->n_container_requests > DP_MAX_CONTAINER_REQUESTS)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "PreferredAllocationRequest with %zu container requests",
                        pr->n_container_requests);
    resp.container_responses =
        arena_array(&a, V1beta1__ContainerPreferredAllocationResponse *, pr->n_container_requests);
    for (size_t i = 0; resp.container_responses && i < pr->n_container_requests; i++) {
        V1beta1__ContainerPreferredAllocationResponse *o =
            preferred_one(t, pr->container_requests[i], &a);
        if (!o)
            break;
        resp.container_responses[resp.n_container_responses++] = o;
    }
    if (a.failed)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

static int on_preferred(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, RgError *err) {
    return reply_timed(userdata, preferred_reply, metrics_preferred_observe, req, len, ret, ret_len,
                       err);
}

static int on_prestart(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, RgError *err) {
    TenantServer *t = userdata;
    _cleanup_pb_ V1beta1__PreStartContainerRequest *pr =
        v1beta1__pre_start_container_request__unpack(NULL, len, req);
    V1beta1__PreStartContainerResponse resp = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
    _cleanup_free_ const Unit **units = NULL;

    if (!pr)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed PreStartContainerRequest");
    if (pr->n_devices_ids > t->n_units)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "too many devices");
    units = calloc(pr->n_devices_ids + 1, sizeof(*units));
    if (!units)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    if (tenant_resolve_ids(t, pr->devices_ids, pr->n_devices_ids, units, err) < 0)
        return RPC_INVALID_ARGUMENT;
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

static const RpcMethod methods[] = {
    {DP_METHOD_OPTIONS, RPC_KIND_UNARY, on_options},
    {DP_METHOD_LIST_AND_WATCH, RPC_KIND_SERVER_STREAM, on_list_and_watch},
    {DP_METHOD_PREFERRED, RPC_KIND_UNARY, on_preferred},
    {DP_METHOD_ALLOCATE, RPC_KIND_UNARY, on_allocate},
    {DP_METHOD_PRESTART, RPC_KIND_UNARY, on_prestart},
};

static void swept(const char *path, void *userdata) {
    const TenantServer *t = userdata;

    log_info(t->name, NULL, "removed %s: nobody serves it", path);
}

/* Remove this tenant's sockets that nobody serves (left by a process that
 * was killed): kubelet would dial them in vain after its next start. */
static void sweep_stale_sockets(const TenantServer *t) {
    char prefix[96];

    snprintf(prefix, sizeof(prefix), DP_SOCKET_PREFIX "%s-", t->name);
    (void)sockfile_sweep(t->plugin->dp_dir, prefix, ".sock", NULL, swept, (void *)t);
}

/*
 * A fresh socket name at every start. Kubelet keys a plugin's client by its
 * socket path, and a Register that reaches it before it has seen the old
 * server's stream end at the same path is refused ("device plugin already
 * connected"); worse, the old client is then dropped from its table without
 * its endpoint, and every later Register of that path is refused until
 * kubelet restarts (kubelet 1.37, seen on the local cluster under load). A
 * path never used before cannot collide.
 */
static int tenant_socket_name(TenantServer *t) {
    char prefix[96];
    int r;

    snprintf(prefix, sizeof(prefix), DP_SOCKET_PREFIX "%s-", t->name);
    r = sockfile_name(prefix, ".sock", t->endpoint, sizeof(t->endpoint));
    if (r < 0)
        return r;
    if ((size_t)snprintf(t->socket_path, sizeof(t->socket_path), "%s/%s", t->plugin->dp_dir,
                         t->endpoint) >= sizeof(t->socket_path))
        return -ENAMETOOLONG;
    return 0;
}

int tenant_server_start(TenantServer *t) {
    struct stat st;
    int r;

    tenant_server_stop(t);
    sweep_stale_sockets(t);
    r = tenant_socket_name(t);
    if (r < 0)
        return log_error(t->name, NULL, r, "cannot name a socket in %s", t->plugin->dp_dir);
    r = rpc_server_start(t->socket_path, methods, ELEMENTSOF(methods), t, &t->server);
    if (r < 0)
        return log_error(t->name, NULL, r, "cannot serve on %s", t->socket_path);
    t->socket_ino = stat(t->socket_path, &st) == 0 ? st.st_ino : 0;
    log_info(t->name, NULL, "serving %s on %s", t->resource, t->socket_path);
    return 0;
}

void tenant_server_stop(TenantServer *t) {
    if (!t->server)
        return;
    rpc_server_stop(t->server);
    t->server = NULL;
    t->socket_ino = 0;
    /* kubelet's streams went with the server: register again, and a
     * Register in flight was for the server just stopped */
    t->reg_gen = 0;
    t->reg_stale = t->reg != NULL;
}

void tenant_server_broadcast(TenantServer *t) {
    _cleanup_free_ uint8_t *buf = NULL;
    size_t len;

    if (!t->server || listwatch_snapshot(t, &buf, &len) < 0)
        return;
    rpc_server_broadcast(t->server, DP_METHOD_LIST_AND_WATCH, buf, len);
}
