/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocate: the input is an AllocateRequest as kubelet sends it, decoded and
 * answered by the real handler of every fixture tenant. An answer must give a
 * container exactly the units it asked for, all of them the tenant's own, and
 * only device nodes under the node's device root.
 */
#include "deviceplugin.pb-c.h"
#include "dpfixture.h"
#include "fuzz.h"
#include "pb.h"

static const char *env_value(const V1beta1__ContainerAllocateResponse *c, const char *key) {
    const char *v = NULL;

    for (size_t i = 0; i < c->n_envs; i++)
        if (streq(c->envs[i]->key, key)) {
            FUZZ_CHECK(!v); /* a key once */
            v = c->envs[i]->value;
        }
    return v;
}

/* RAILGATE_UNITS lists exactly the requested ids (each once). */
static void check_units(const char *units, const V1beta1__ContainerAllocateRequest *req) {
    char *copy = fuzz_cstring((const uint8_t *)units, strlen(units)), *save = NULL;
    size_t n = 0;

    for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        bool found = false;
        for (size_t j = 0; j < req->n_devices_ids; j++)
            found |= streq(req->devices_ids[j], id);
        FUZZ_CHECK(found);
        n++;
    }
    FUZZ_CHECK(n == req->n_devices_ids);
    free(copy);
}

static void check_container(const TenantServer *t, const V1beta1__ContainerAllocateRequest *req,
                            const V1beta1__ContainerAllocateResponse *resp) {
    const NodeConfig *c = t->plugin->config;
    const char *units = env_value(resp, "RAILGATE_UNITS");

    /* tenant isolation: every id granted is a unit of this tenant, none twice */
    FUZZ_CHECK(req->n_devices_ids > 0);
    for (size_t i = 0; i < req->n_devices_ids; i++) {
        FUZZ_CHECK(dpfixture_owns(t, req->devices_ids[i]));
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(!streq(req->devices_ids[i], req->devices_ids[j]));
    }
    FUZZ_CHECK(streq_ptr(env_value(resp, "RAILGATE_TENANT"), t->name));
    FUZZ_CHECK(units);
    check_units(units, req);
    for (size_t i = 0; i < resp->n_devices; i++) {
        const V1beta1__DeviceSpec *d = resp->devices[i];
        size_t k = strlen(c->dev_root);
        FUZZ_CHECK(strncmp(d->host_path, c->dev_root, k) == 0);
        FUZZ_CHECK(streq(d->host_path + k, d->container_path));
        FUZZ_CHECK(access(d->host_path, F_OK) == 0);
    }
    for (size_t i = 0; i < resp->n_cdi_devices; i++) {
        FUZZ_CHECK(c->cdi_kind);
        FUZZ_CHECK(strncmp(resp->cdi_devices[i]->name, c->cdi_kind, strlen(c->cdi_kind)) == 0);
    }
    FUZZ_CHECK(resp->n_mounts == 0);
}

static void run(TenantServer *t, const uint8_t *data, size_t size, const ProtobufCMessage *msg) {
    const V1beta1__AllocateRequest *req = (const V1beta1__AllocateRequest *)msg;
    uint8_t *out = NULL;
    size_t out_len = 0;

    if (!dpfixture_call_accepted(t, "/v1beta1.DevicePlugin/Allocate", data, size, req, &out,
                                 &out_len))
        return;
    V1beta1__AllocateResponse *resp = v1beta1__allocate_response__unpack(NULL, out_len, out);
    FUZZ_CHECK(resp);
    FUZZ_CHECK(resp->n_container_responses == req->n_container_requests);
    for (size_t i = 0; i < req->n_container_requests; i++)
        check_container(t, req->container_requests[i], resp->container_responses[i]);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dpfixture_each_tenant(&v1beta1__allocate_request__descriptor, data, size, run);
    return 0;
}
