/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's PodResources client: which railgate units a pod holds,
 * from kubelet's answer. Input: one mode byte, then the response bytes.
 *   mode % 4 == 0: Get answers with the bytes;
 *              1: Get is UNIMPLEMENTED, List answers with the bytes;
 *              2: Get says UNKNOWN (pod unknown to Get), List answers;
 *              3: the kubelet does not answer.
 * The result is compared with a model of what the answer says: the ids of
 * the railgate resource the pod holds, each once, or the first thing wrong
 * with them (units of two railgate resources, an id that cannot be a unit's,
 * more ids than a reply carries), each with its agent status.
 */
#include "agentproto.h"
#include "fakerpc.h"
#include "fuzz.h"
#include "podresources.h"
#include "podresources.pb-c.h"
#include "strv.h"

#define NS "team-a"
#define POD "pod-a"

static char *const resources[] = {"railgate.io/a", "railgate.io/b", NULL};

static unsigned mode;
static const uint8_t *answer;
static size_t answer_len;

static int client(const char *method, const uint8_t *req, size_t len, uint8_t **ret_resp,
                  size_t *ret_len, RgError *err) {
    bool get = streq(method, "/v1.PodResourcesLister/Get");

    FUZZ_CHECK(get || streq(method, "/v1.PodResourcesLister/List"));
    if (mode == 3)
        return rg_error(err, -ECONNREFUSED, RPC_UNAVAILABLE, "connection refused");
    if (get) {
        /* the request names the pod */
        V1__GetPodResourcesRequest *r = v1__get_pod_resources_request__unpack(NULL, len, req);
        FUZZ_CHECK(r && streq(r->pod_name, POD) && streq(r->pod_namespace, NS));
        protobuf_c_message_free_unpacked(&r->base, NULL);
        if (mode == 1)
            return rg_error(err, -EPROTO, RPC_UNIMPLEMENTED, "Get is disabled");
        if (mode == 2)
            return rg_error(err, -EPROTO, RPC_UNKNOWN, "pod not found");
    }
    *ret_resp = fuzz_copy(answer, answer_len);
    *ret_len = answer_len;
    return 0;
}

typedef struct Model {
    bool malformed;
    int status; /* the first thing wrong, or AGENT_STATUS__OK */
    const char *resource;
    char **ids;
} Model;

static void model_device(Model *m, const V1__ContainerDevices *d) {
    if (!strv_contains(resources, d->resource_name))
        return;
    if (m->resource && !streq(m->resource, d->resource_name)) {
        m->status = AGENT_STATUS__CONFLICT;
        return;
    }
    m->resource = d->resource_name;
    for (size_t k = 0; k < d->n_device_ids && m->status == AGENT_STATUS__OK; k++) {
        if (!agent_token_valid(d->device_ids[k], AGENT_MAX_ID))
            m->status = AGENT_STATUS__INTERNAL;
        else if (strv_contains(m->ids, d->device_ids[k]))
            continue;
        else if (strv_length(m->ids) >= AGENT_MAX_IDS)
            m->status = AGENT_STATUS__TOO_MANY;
        else
            FUZZ_CHECK(strv_push(&m->ids, d->device_ids[k]) >= 0);
    }
}

static void model_pod(Model *m, const V1__PodResources *pod) {
    for (size_t i = 0; i < pod->n_containers && m->status == AGENT_STATUS__OK; i++)
        for (size_t j = 0; j < pod->containers[i]->n_devices && m->status == AGENT_STATUS__OK; j++)
            model_device(m, pod->containers[i]->devices[j]);
}

static void check(const Model *m, int r, char **ids, const char *resource, const RgError *err) {
    if (r < 0) {
        FUZZ_CHECK(err->msg[0] && fuzz_utf8_valid(err->msg));
        if (mode == 3 || m->malformed)
            FUZZ_CHECK(err->code == AGENT_STATUS__UNAVAILABLE);
        else
            FUZZ_CHECK(err->code == m->status && m->status != AGENT_STATUS__OK);
        return;
    }
    FUZZ_CHECK(mode != 3 && !m->malformed && m->status == AGENT_STATUS__OK);
    FUZZ_CHECK(strv_length(ids) == 0 || streq_ptr(resource, m->resource));
    FUZZ_CHECK(strv_length(ids) == strv_length(m->ids));
    for (size_t i = 0; ids && ids[i]; i++)
        FUZZ_CHECK(streq(ids[i], m->ids[i]) && agent_token_valid(ids[i], AGENT_MAX_ID));
}

static void *model_build(Model *m, const uint8_t *data, size_t len) {
    if (mode == 0) {
        V1__GetPodResourcesResponse *g = v1__get_pod_resources_response__unpack(NULL, len, data);
        m->malformed = !g;
        if (g && g->pod_resources)
            model_pod(m, g->pod_resources);
        return g;
    }
    if (mode == 3)
        return NULL;
    V1__ListPodResourcesResponse *l = v1__list_pod_resources_response__unpack(NULL, len, data);
    m->malformed = !l;
    for (size_t i = 0; l && i < l->n_pod_resources; i++)
        if (streq(l->pod_resources[i]->namespace_, NS) && streq(l->pod_resources[i]->name, POD)) {
            model_pod(m, l->pod_resources[i]);
            break;
        }
    return l;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    PodResources *p = NULL;
    Model m = {.status = AGENT_STATUS__OK};
    char **ids = NULL, *resource = NULL;
    RgError err = {0};
    void *msg;
    int r;

    if (size == 0)
        return 0;
    mode = data[0] % 4;
    answer = data + 1;
    answer_len = size - 1;
    fakerpc_set_client(client);
    FUZZ_CHECK(podresources_new("/run/fuzz/kubelet.sock", resources, &p) >= 0);
    msg = model_build(&m, answer, answer_len);
    r = podresources_pod_units(p, 5000, NS, POD, &ids, &resource, &err);
    check(&m, r, ids, resource, &err);
    strv_free(ids);
    free(resource);
    strv_free(m.ids);
    if (msg)
        protobuf_c_message_free_unpacked(msg, NULL);
    podresources_free(p);
    fakerpc_set_client(NULL);
    return 0;
}
