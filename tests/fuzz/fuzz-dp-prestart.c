/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PreStartContainer: the input is a PreStartContainerRequest, answered by the
 * real handler of every fixture tenant. OK only for ids that are all the
 * tenant's own, each once; the answer is the empty response.
 */
#include "deviceplugin.pb-c.h"
#include "dpfixture.h"
#include "fuzz.h"
#include "pb.h"

static void run(TenantServer *t, const uint8_t *data, size_t size, const ProtobufCMessage *msg) {
    const V1beta1__PreStartContainerRequest *req = (const V1beta1__PreStartContainerRequest *)msg;
    uint8_t *out = NULL;
    size_t out_len = 0;

    if (!dpfixture_call_accepted(t, "/v1beta1.DevicePlugin/PreStartContainer", data, size, req,
                                 &out, &out_len))
        return;
    for (size_t i = 0; i < req->n_devices_ids; i++) {
        FUZZ_CHECK(dpfixture_owns(t, req->devices_ids[i]));
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(!streq(req->devices_ids[i], req->devices_ids[j]));
    }
    FUZZ_CHECK(out && out_len == 0);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dpfixture_each_tenant(&v1beta1__pre_start_container_request__descriptor, data, size, run);
    return 0;
}
