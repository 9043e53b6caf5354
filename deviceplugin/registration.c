/* SPDX-License-Identifier: Apache-2.0 */
/* Registration with kubelet: one Register call per tenant resource, off the main thread. */
#include <stdatomic.h>
#include <unistd.h>

#include "deviceplugin.pb-c.h"
#include "pb.h"
#include "plugin.h"

/*
 * The call is started on the main thread (that never blocks) and waited for
 * on a thread of its own, which does nothing else: no setns, no logging, no
 * plugin state. The main thread learns of the end through notify_fd and
 * reaps the thread in registration_finish; a hung kubelet so holds up
 * nothing but this thread, and registration_cancel ends it at once.
 */
struct Registration {
    RpcChannel *channel;
    struct stat st; /* the kubelet.sock it is pinned to */
    RpcUnaryCall *call;
    pthread_t thread;
    bool thread_started;
    int notify_fd;
    atomic_bool done;
    int result;
    RgError err;
};

static void *registration_thread(void *arg) {
    Registration *g = arg;
    _cleanup_free_ uint8_t *resp = NULL;
    size_t len = 0;
    uint64_t one = 1;

    g->result = rpc_unary_wait(g->call, DP_METHOD_REGISTER, &resp, &len, &g->err);
    atomic_store(&g->done, true);
    (void)!write(g->notify_fd, &one, sizeof(one));
    return NULL;
}

void registration_free(Registration *g) {
    if (!g)
        return;
    if (g->thread_started) {
        rpc_unary_cancel(g->call);
        pthread_join(g->thread, NULL);
    }
    rpc_unary_free(g->call);
    rpc_channel_free(g->channel);
    free(g);
}

int registration_start(TenantServer *t, int notify_fd, Registration **ret) {
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
    _cleanup_(registration_freep) Registration *g = NULL;
    _cleanup_free_ uint8_t *buf = NULL;
    size_t len;
    int r;

    o.get_preferred_allocation_available = true;
    req.version = (char *)DP_API_VERSION;
    req.endpoint = t->endpoint; /* kubelet joins it onto its own socket dir */
    req.resource_name = (char *)t->resource;
    req.options = &o;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->notify_fd = notify_fd;
    /* One connection to the kubelet whose socket is there now: the call
     * never reaches a kubelet started after it (one that a dialer waiting
     * for ready would find at the same path), so each Register is for the
     * kubelet it names, and a kubelet start registers each tenant once. */
    r = rpc_channel_new_pinned(t->plugin->kubelet_sock, &g->st, &g->channel);
    if (r < 0)
        return r;
    /* kubelet calls back into our server before it answers: the tenant's
     * server thread is already serving */
    r = rpc_unary_start(g->channel, DP_METHOD_REGISTER, buf, len, DP_REGISTER_TIMEOUT_MS, 0,
                        &g->call);
    if (r < 0)
        return r;
    r = -pthread_create(&g->thread, NULL, registration_thread, g);
    if (r < 0)
        return r;
    (void)pthread_setname_np(g->thread, "rg-register");
    g->thread_started = true;
    *ret = TAKE_PTR(g);
    return 0;
}

const struct stat *registration_socket(const Registration *g) {
    return &g->st;
}

bool registration_done(const Registration *g) {
    return atomic_load(&g->done);
}

void registration_cancel(Registration *g) {
    if (g)
        rpc_unary_cancel(g->call);
}

int registration_finish(Registration *g, RgError *err) {
    int r;

    pthread_join(g->thread, NULL);
    g->thread_started = false;
    r = g->result;
    if (r < 0 && err)
        *err = g->err;
    registration_free(g);
    return r;
}
