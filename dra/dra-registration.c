/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet plugin registration service of the DRA driver: GetInfo, NotifyRegistrationStatus. */
#include "dra.h"
#include "log.h"
#include "pb.h"
#include "pluginregistration.pb-c.h"

static int on_get_info(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, RgError *err) {
    DraDriver *d = userdata;
    Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
    /* kubelet takes the first DRAPlugin entry it supports (the newest first)
     * and, apart, the newest DRAResourceHealth it knows; it skips the rest */
    char *versions[] = {DRA_VERSION_V1, DRA_VERSION_V1BETA1, DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1};

    info.type = DRA_PLUGIN_TYPE;
    info.name = (char *)d->driver;
    info.endpoint = d->dra_sock;
    info.supported_versions = versions;
    info.n_supported_versions = ELEMENTSOF(versions);
    log_info(NULL, NULL, "kubelet asked for the plugin info: %s at %s", d->driver, d->dra_sock);
    return rpc_reply_pack(&info.base, ret, ret_len, err);
}

static int on_notify(void *userdata, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                     RgError *err) {
    DraDriver *d = userdata;
    _cleanup_pb_ Pluginregistration__RegistrationStatus *st =
        pluginregistration__registration_status__unpack(NULL, len, req);
    Pluginregistration__RegistrationStatusResponse resp =
        PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;

    if (!st)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed RegistrationStatus");
    atomic_store(&d->registered, st->plugin_registered ? 1 : -1);
    if (st->plugin_registered)
        log_info(NULL, NULL, "kubelet registered DRA driver %s", d->driver);
    else
        log_error(NULL, NULL, -EPERM, "kubelet refused DRA driver %s: %.300s", d->driver,
                  st->error ? st->error : "(no reason given)");
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

const RpcMethod dra_registration_methods[] = {
    {DRA_METHOD_GET_INFO, RPC_KIND_UNARY, on_get_info},
    {DRA_METHOD_NOTIFY, RPC_KIND_UNARY, on_notify},
};
const size_t dra_n_registration_methods = ELEMENTSOF(dra_registration_methods);
