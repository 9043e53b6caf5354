/* SPDX-License-Identifier: Apache-2.0 */
/* PodResources v1 client on a warm channel: Get, falling back to List. */
#include "podresources.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agentproto.h"
#include "clock.h"
#include "pb.h"
#include "podresources.pb-c.h"
#include "rpc.h"
#include "strv.h"

#define MAX_CALLS 64 /* calls in flight at once (the agent has fewer workers) */

struct PodResources {
    char *path;
    char **resources;
    RpcChannel *channel;
    pthread_mutex_t lock; /* calls[], stopping */
    RpcUnaryCall *calls[MAX_CALLS];
    bool stopping;
};

typedef struct Lookup {
    PodResources *p;
    const char *ns, *name;
    int timeout_ms;
    uint64_t deadline_ms; /* CLOCK_MONOTONIC */
    char **ids;
    char *resource;
    RgError *err;
} Lookup;

int podresources_new(const char *path, char *const *resources, PodResources **ret) {
    _cleanup_(podresources_freep) PodResources *p = calloc(1, sizeof(*p));
    int r;

    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->path = strdup(path);
    if (!p->path)
        return -ENOMEM;
    for (size_t i = 0; resources && resources[i]; i++)
        if (strv_push(&p->resources, resources[i]) < 0)
            return -ENOMEM;
    r = rpc_channel_new(path, &p->channel);
    if (r < 0)
        return r;
    /* warm before the first question, when kubelet is there: a channel told
     * to connect to a missing socket tries again every second (its
     * reconnect backoff) for as long as kubelet is away, and waiting for
     * kubelet is to cost nothing; a first question connects it then */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        rpc_channel_connect(p->channel);
    *ret = TAKE_PTR(p);
    return 0;
}

void podresources_stop(PodResources *p) {
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    for (size_t i = 0; i < MAX_CALLS; i++)
        rpc_unary_cancel(p->calls[i]);
    pthread_mutex_unlock(&p->lock);
}

void podresources_free(PodResources *p) {
    if (!p)
        return;
    rpc_channel_free(p->channel);
    strv_free(p->resources);
    free(p->path);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* One unary call, cancellable by podresources_stop from another thread. */
static int call(Lookup *l, const char *method, const uint8_t *req, size_t len, uint8_t **ret,
                size_t *ret_len) {
    _cleanup_(rpc_unary_freep) RpcUnaryCall *u = NULL;
    PodResources *p = l->p;
    size_t slot = MAX_CALLS;
    int ms = clock_left_ms(l->deadline_ms), r;

    if (ms == 0)
        return rg_error(l->err, -ETIMEDOUT, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
    /* a restarting kubelet is waited for, within the deadline */
    r = rpc_unary_start(p->channel, method, req, len, ms, RPC_CALL_WAIT_FOR_READY, &u);
    if (r < 0)
        return rg_error(l->err, r, RPC_INTERNAL, "could not start %s", method);
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < MAX_CALLS && slot == MAX_CALLS && !p->stopping; i++)
        if (!p->calls[i])
            p->calls[slot = i] = u;
    pthread_mutex_unlock(&p->lock);
    if (slot == MAX_CALLS)
        return rg_error(l->err, -ECANCELED, RPC_UNAVAILABLE, "the agent is stopping");
    r = rpc_unary_wait(u, method, ret, ret_len, l->err);
    pthread_mutex_lock(&p->lock);
    p->calls[slot] = NULL;
    pthread_mutex_unlock(&p->lock);
    return r;
}

static int unavailable(const Lookup *l, int r) {
    char why[sizeof(l->err->msg)];

    snprintf(why, sizeof(why), "%s", l->err->msg);
    if (r == -ETIMEDOUT)
        return rg_error(l->err, -EAGAIN, AGENT_STATUS__UNAVAILABLE,
                        "kubelet's PodResources API at %s did not answer within %d s "
                        "(timeouts.podResourcesSeconds of the node config)",
                        l->p->path, (l->timeout_ms + 999) / 1000);
    return rg_error(l->err, -EAGAIN, AGENT_STATUS__UNAVAILABLE,
                    "kubelet's PodResources API at %s does not answer (%s)", l->p->path, why);
}

static int collect_pod(Lookup *l, const V1__PodResources *pod) {
    for (size_t i = 0; i < pod->n_containers; i++)
        for (size_t j = 0; j < pod->containers[i]->n_devices; j++) {
            const V1__ContainerDevices *d = pod->containers[i]->devices[j];
            if (!strv_contains(l->p->resources, d->resource_name))
                continue;
            if (l->resource && !streq(l->resource, d->resource_name))
                return rg_error(l->err, -EINVAL, AGENT_STATUS__CONFLICT,
                                "pod %s/%s holds units of both %s and %s", l->ns, l->name,
                                l->resource, d->resource_name);
            if (!l->resource && !(l->resource = strdup(d->resource_name)))
                return -ENOMEM;
            for (size_t k = 0; k < d->n_device_ids; k++) {
                const char *id = d->device_ids[k];
                if (!agent_token_valid(id, AGENT_MAX_ID))
                    return rg_error(l->err, -EINVAL, AGENT_STATUS__INTERNAL,
                                    "kubelet says pod %s/%s holds \"%.64s\" of %s, which cannot "
                                    "be a railgate unit id",
                                    l->ns, l->name, id, d->resource_name);
                if (strv_contains(l->ids, id))
                    continue;
                if (strv_length(l->ids) >= AGENT_MAX_IDS)
                    return rg_error(l->err, -E2BIG, AGENT_STATUS__TOO_MANY,
                                    "pod %s/%s holds more than %d railgate units", l->ns, l->name,
                                    AGENT_MAX_IDS);
                if (strv_push(&l->ids, id) < 0)
                    return -ENOMEM;
            }
        }
    return 0;
}

static int by_list(Lookup *l) {
    _cleanup_free_ uint8_t *resp = NULL;
    _cleanup_pb_ V1__ListPodResourcesResponse *ls = NULL;
    size_t len;
    int r;

    r = call(l, "/v1.PodResourcesLister/List", NULL, 0, &resp, &len);
    if (r < 0)
        return unavailable(l, r);
    ls = v1__list_pod_resources_response__unpack(NULL, len, resp);
    if (!ls)
        return rg_error(l->err, -EBADMSG, AGENT_STATUS__UNAVAILABLE,
                        "kubelet's PodResources API at %s: malformed List response", l->p->path);
    for (size_t i = 0; i < ls->n_pod_resources; i++)
        if (streq(ls->pod_resources[i]->namespace_, l->ns) &&
            streq(ls->pod_resources[i]->name, l->name))
            return collect_pod(l, ls->pod_resources[i]);
    return 0;
}

static int by_get(Lookup *l) {
    V1__GetPodResourcesRequest req = V1__GET_POD_RESOURCES_REQUEST__INIT;
    _cleanup_free_ uint8_t *buf = NULL, *resp = NULL;
    _cleanup_pb_ V1__GetPodResourcesResponse *g = NULL;
    size_t len, resp_len;
    int r;

    req.pod_name = (char *)l->name;
    req.pod_namespace = (char *)l->ns;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    r = call(l, "/v1.PodResourcesLister/Get", buf, len, &resp, &resp_len);
    if (r == -EPROTO && (l->err->code == RPC_UNKNOWN || l->err->code == RPC_UNIMPLEMENTED))
        return by_list(l); /* Get disabled, or pod unknown to Get */
    if (r < 0)
        return unavailable(l, r);
    g = v1__get_pod_resources_response__unpack(NULL, resp_len, resp);
    if (!g)
        return rg_error(l->err, -EBADMSG, AGENT_STATUS__UNAVAILABLE,
                        "kubelet's PodResources API at %s: malformed Get response", l->p->path);
    return g->pod_resources ? collect_pod(l, g->pod_resources) : 0;
}

int podresources_pod_units(PodResources *p, int timeout_ms, const char *ns, const char *name,
                           char ***ret_ids, char **ret_resource, RgError *err) {
    Lookup l = {.p = p,
                .ns = ns,
                .name = name,
                .timeout_ms = timeout_ms,
                .deadline_ms = clock_monotonic_ms() + (uint64_t)timeout_ms,
                .err = err};
    int r;

    r = by_get(&l);
    if (r < 0) {
        strv_free(l.ids);
        free(l.resource);
        return r;
    }
    *ret_ids = l.ids;
    *ret_resource = l.resource;
    return 0;
}

/* Every DRA claim a container of a pod kubelet knows uses: "<ns>/<name>". */
static int collect_claims(const V1__ListPodResourcesResponse *ls, char ***ret) {
    for (size_t i = 0; i < ls->n_pod_resources; i++)
        for (size_t c = 0; c < ls->pod_resources[i]->n_containers; c++) {
            const V1__ContainerResources *cr = ls->pod_resources[i]->containers[c];
            for (size_t k = 0; k < cr->n_dynamic_resources; k++) {
                const V1__DynamicResource *dr = cr->dynamic_resources[k];
                _cleanup_free_ char *key = NULL;
                if (asprintf(&key, "%s/%s", dr->claim_namespace, dr->claim_name) < 0)
                    return -ENOMEM;
                if (!strv_contains(*ret, key) && strv_push(ret, key) < 0)
                    return -ENOMEM;
            }
        }
    return 0;
}

int podresources_claims_in_use(PodResources *p, int timeout_ms, char ***ret_claims, RgError *err) {
    Lookup l = {.p = p,
                .timeout_ms = timeout_ms,
                .deadline_ms = clock_monotonic_ms() + (uint64_t)timeout_ms,
                .err = err};
    _cleanup_free_ uint8_t *resp = NULL;
    _cleanup_pb_ V1__ListPodResourcesResponse *ls = NULL;
    _cleanup_(strv_freep) char **claims = NULL;
    size_t len;
    int r;

    r = call(&l, "/v1.PodResourcesLister/List", NULL, 0, &resp, &len);
    if (r < 0)
        return unavailable(&l, r);
    ls = v1__list_pod_resources_response__unpack(NULL, len, resp);
    if (!ls)
        return rg_error(err, -EBADMSG, AGENT_STATUS__UNAVAILABLE,
                        "kubelet's PodResources API at %s: malformed List response", p->path);
    r = collect_claims(ls, &claims);
    if (r < 0)
        return rg_error(err, r, AGENT_STATUS__INTERNAL, "out of memory");
    if (!claims && !(claims = calloc(1, sizeof(char *))))
        return rg_error(err, -ENOMEM, AGENT_STATUS__INTERNAL, "out of memory");
    *ret_claims = TAKE_PTR(claims);
    return 0;
}
