/* PodResources v1 client: Get, falling back to List. */
#include "podresources.h"

#include <stdio.h>

#include "cni.h"
#include "pb.h"
#include "podresources.pb-c.h"
#include "rpc.h"
#include "strv.h"

typedef struct Collect {
    char *const *resources;
    char **ids;
    char *resource;
    int timeout_ms; /* each call's */
    RgError *err;
} Collect;

static int collect_pod(Collect *c, const V1__PodResources *pod) {
    for (size_t i = 0; i < pod->n_containers; i++)
        for (size_t j = 0; j < pod->containers[i]->n_devices; j++) {
            const V1__ContainerDevices *d = pod->containers[i]->devices[j];
            if (!strv_contains(c->resources, d->resource_name))
                continue;
            if (c->resource && !streq(c->resource, d->resource_name))
                return rg_error(c->err, -EINVAL, CNI_ERR_TENANT,
                                "the pod holds units of both %s and %s", c->resource,
                                d->resource_name);
            if (!c->resource && !(c->resource = strdup(d->resource_name)))
                return -ENOMEM;
            for (size_t k = 0; k < d->n_device_ids; k++) {
                if (strv_length(c->ids) >= PODRESOURCES_MAX_IDS)
                    return rg_error(c->err, -E2BIG, CNI_ERR_DEVICE, "too many devices");
                if (!strv_contains(c->ids, d->device_ids[k]) &&
                    strv_push(&c->ids, d->device_ids[k]) < 0)
                    return -ENOMEM;
            }
        }
    return 0;
}

static int unavailable(const char *socket, int r, int timeout_ms, RgError *err) {
    char why[sizeof(err->msg)];

    snprintf(why, sizeof(why), "%s", err->msg);
    if (r == -ETIMEDOUT)
        return rg_error(err, -EAGAIN, CNI_ERR_TRY_AGAIN,
                        "kubelet PodResources API at %s did not answer within %d s "
                        "(timeouts.podResourcesSeconds of the node config); try again later",
                        socket, timeout_ms / 1000);
    return rg_error(err, -EAGAIN, CNI_ERR_TRY_AGAIN,
                    "kubelet PodResources API at %s does not answer (%s); try again later", socket,
                    why);
}

static int by_list(RpcChannel *ch, const char *socket, const char *ns, const char *name,
                   Collect *c) {
    _cleanup_free_ uint8_t *resp = NULL;
    _cleanup_pb_ V1__ListPodResourcesResponse *l = NULL;
    size_t len;
    int r;

    r = rpc_call_unary(ch, "/v1.PodResourcesLister/List", NULL, 0, c->timeout_ms, &resp, &len,
                       c->err);
    if (r < 0)
        return unavailable(socket, r, c->timeout_ms, c->err);
    l = v1__list_pod_resources_response__unpack(NULL, len, resp);
    if (!l)
        return rg_error(c->err, -EBADMSG, CNI_ERR_TRY_AGAIN, "malformed List response");
    for (size_t i = 0; i < l->n_pod_resources; i++)
        if (streq(l->pod_resources[i]->namespace_, ns) && streq(l->pod_resources[i]->name, name))
            return collect_pod(c, l->pod_resources[i]);
    return 0;
}

static int by_get(RpcChannel *ch, const char *socket, const char *ns, const char *name,
                  Collect *c) {
    V1__GetPodResourcesRequest req = V1__GET_POD_RESOURCES_REQUEST__INIT;
    _cleanup_free_ uint8_t *buf = NULL, *resp = NULL;
    _cleanup_pb_ V1__GetPodResourcesResponse *g = NULL;
    size_t len, resp_len;
    int r;

    req.pod_name = (char *)name;
    req.pod_namespace = (char *)ns;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    r = rpc_call_unary(ch, "/v1.PodResourcesLister/Get", buf, len, c->timeout_ms, &resp, &resp_len,
                       c->err);
    if (r == -EPROTO && (c->err->code == RPC_UNKNOWN || c->err->code == RPC_UNIMPLEMENTED))
        return by_list(ch, socket, ns, name, c); /* Get disabled, or pod unknown to Get */
    if (r < 0)
        return unavailable(socket, r, c->timeout_ms, c->err);
    g = v1__get_pod_resources_response__unpack(NULL, resp_len, resp);
    if (!g)
        return rg_error(c->err, -EBADMSG, CNI_ERR_TRY_AGAIN, "malformed Get response");
    return g->pod_resources ? collect_pod(c, g->pod_resources) : 0;
}

int podresources_pod_units(const char *socket, int timeout_ms, const char *ns, const char *name,
                           char *const *resources, char ***ret_ids, char **ret_resource,
                           RgError *err) {
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    Collect c = {.resources = resources, .timeout_ms = timeout_ms, .err = err};
    int r;

    r = rpc_channel_new(socket, &ch);
    if (r < 0)
        return r;
    r = by_get(ch, socket, ns, name, &c);
    if (r < 0) {
        strv_free(c.ids);
        free(c.resource);
        return r;
    }
    *ret_ids = c.ids;
    *ret_resource = c.resource;
    return 0;
}

int podresources_ping(const char *socket, int timeout_ms, RgError *err) {
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    _cleanup_free_ uint8_t *resp = NULL;
    size_t len;
    int r;

    r = rpc_channel_new(socket, &ch);
    if (r < 0)
        return r;
    r = rpc_call_unary(ch, "/v1.PodResourcesLister/List", NULL, 0, timeout_ms, &resp, &len, err);
    return r < 0 ? unavailable(socket, r, timeout_ms, err) : 0;
}
