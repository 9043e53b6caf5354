/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GetPreferredAllocation: the input is a PreferredAllocationRequest, answered
 * by the real handler (and the switch/NUMA policy) of every fixture tenant.
 * An answer names only the tenant's units, each once, at most the size asked
 * for, from the available and must-include ids, and every must-include unit
 * that fits.
 */
#include "deviceplugin.pb-c.h"
#include "dpfixture.h"
#include "fuzz.h"
#include "pb.h"

static bool listed(char **ids, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (streq(ids[i], id))
            return true;
    return false;
}

/* The tenant's units among ids, each once. */
static size_t owned_distinct(const TenantServer *t, char **ids, size_t n) {
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += dpfixture_owns(t, ids[i]) && !listed(ids, i, ids[i]);
    return k;
}

static void check_container(const TenantServer *t,
                            const V1beta1__ContainerPreferredAllocationRequest *req,
                            const V1beta1__ContainerPreferredAllocationResponse *resp) {
    size_t size = req->allocation_size > 0 ? (size_t)req->allocation_size : 0;
    size_t must = owned_distinct(t, req->must_include_deviceids, req->n_must_include_deviceids);
    size_t must_in = 0;

    FUZZ_CHECK(resp->n_deviceids <= size);
    for (size_t i = 0; i < resp->n_deviceids; i++) {
        const char *id = resp->deviceids[i];
        FUZZ_CHECK(dpfixture_owns(t, id));
        FUZZ_CHECK(!listed(resp->deviceids, i, id));
        FUZZ_CHECK(listed(req->available_deviceids, req->n_available_deviceids, id) ||
                   listed(req->must_include_deviceids, req->n_must_include_deviceids, id));
        must_in += listed(req->must_include_deviceids, req->n_must_include_deviceids, id);
    }
    FUZZ_CHECK(must_in == (must < size ? must : size));
}

static void run(TenantServer *t, const uint8_t *data, size_t size, const ProtobufCMessage *msg) {
    const V1beta1__PreferredAllocationRequest *req =
        (const V1beta1__PreferredAllocationRequest *)msg;
    uint8_t *out = NULL;
    size_t out_len = 0;

    if (!dpfixture_call_accepted(t, "/v1beta1.DevicePlugin/GetPreferredAllocation", data, size, req,
                                 &out, &out_len))
        return;
    V1beta1__PreferredAllocationResponse *resp =
        v1beta1__preferred_allocation_response__unpack(NULL, out_len, out);
    FUZZ_CHECK(resp);
    FUZZ_CHECK(resp->n_container_responses == req->n_container_requests);
    for (size_t i = 0; i < req->n_container_requests; i++)
        check_container(t, req->container_requests[i], resp->container_responses[i]);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dpfixture_each_tenant(&v1beta1__preferred_allocation_request__descriptor, data, size, run);
    return 0;
}
