/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ListAndWatch and GetDevicePluginOptions: the input is their request (Empty
 * to a well-behaved kubelet, any bytes to us). Both handlers must answer OK
 * whatever it holds; ListAndWatch lists exactly the tenant's units, each
 * once, with their health and NUMA node.
 */
#include "deviceplugin.pb-c.h"
#include "dpfixture.h"
#include "fuzz.h"
#include "pb.h"

static void check_devices(const TenantServer *t, const V1beta1__ListAndWatchResponse *l) {
    const Plugin *p = t->plugin;

    FUZZ_CHECK(l->n_devices == t->n_units);
    for (size_t i = 0; i < l->n_devices; i++) {
        const V1beta1__Device *d = l->devices[i];
        const Unit *u = t->units[i];
        bool healthy = health_healthy(p->health, (size_t)(u - p->inv->units));

        FUZZ_CHECK(streq(d->id, u->id));
        FUZZ_CHECK(streq(d->health, healthy ? "Healthy" : "Unhealthy"));
        if (u->numa < 0)
            FUZZ_CHECK(!d->topology);
        else
            FUZZ_CHECK(d->topology && d->topology->n_nodes == 1 &&
                       d->topology->nodes[0]->id == u->numa);
    }
}

static void run(TenantServer *t, const uint8_t *data, size_t size, const ProtobufCMessage *req) {
    uint8_t *out = NULL;
    size_t out_len = 0;
    RgError err = {0};
    int status =
        dpfixture_call(t, "/v1beta1.DevicePlugin/ListAndWatch", data, size, &out, &out_len, &err);

    FUZZ_CHECK(status == RPC_OK);
    V1beta1__ListAndWatchResponse *l = v1beta1__list_and_watch_response__unpack(NULL, out_len, out);
    FUZZ_CHECK(l);
    check_devices(t, l);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(out);

    status = dpfixture_call(t, "/v1beta1.DevicePlugin/GetDevicePluginOptions", data, size, &out,
                            &out_len, &err);
    FUZZ_CHECK(status == RPC_OK);
    V1beta1__DevicePluginOptions *o = v1beta1__device_plugin_options__unpack(NULL, out_len, out);
    FUZZ_CHECK(o && o->get_preferred_allocation_available && !o->pre_start_required);
    protobuf_c_message_free_unpacked(&o->base, NULL);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dpfixture_each_tenant(&v1beta1__empty__descriptor, data, size, run);
    return 0;
}
