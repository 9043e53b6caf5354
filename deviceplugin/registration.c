/* Registration with kubelet: one Register call per tenant resource. */
#include "deviceplugin.pb-c.h"
#include "log.h"
#include "pb.h"
#include "plugin.h"

int registration_register(TenantServer *t) {
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    _cleanup_free_ uint8_t *buf = NULL, *resp = NULL;
    size_t len, resp_len;
    RgError err = {0};
    int r;

    o.get_preferred_allocation_available = true;
    req.version = (char *)DP_API_VERSION;
    req.endpoint = t->endpoint; /* kubelet joins it onto its own socket dir */
    req.resource_name = (char *)t->resource;
    req.options = &o;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    r = rpc_channel_new(t->plugin->kubelet_sock, &ch);
    if (r < 0)
        return r;
    /* kubelet calls back into our server before it answers: the tenant's
     * server thread is already serving. */
    r = rpc_call_unary(ch, DP_METHOD_REGISTER, buf, len, DP_REGISTER_TIMEOUT_MS, &resp, &resp_len,
                       &err);
    if (r < 0)
        return log_warn(t->name, NULL, "Register %s with kubelet failed: %s", t->resource, err.msg),
               r;
    log_info(t->name, NULL, "registered %s with kubelet (endpoint %s)", t->resource, t->endpoint);
    return 0;
}
