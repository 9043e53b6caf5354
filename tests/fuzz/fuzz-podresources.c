/*
 * The CNI's PodResources client: which railgate units a pod holds, from the
 * kubelet's answer. Input: one mode byte, then the response bytes.
 *   mode % 4 == 0: Get answers with the bytes;
 *              1: Get is UNIMPLEMENTED, List answers with the bytes;
 *              2: Get says UNKNOWN (pod unknown to Get), List answers;
 *              3: the kubelet does not answer.
 * The result is compared with a model of what the answer says: the ids of
 * the railgate resource the pod holds, each once, and an error for a pod
 * holding units of two railgate resources.
 */
#include "cni.h"
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
    bool malformed, two_resources, too_many;
    const char *resource;
    char **ids;
} Model;

static void model_pod(Model *m, const V1__PodResources *pod) {
    for (size_t i = 0; i < pod->n_containers; i++)
        for (size_t j = 0; j < pod->containers[i]->n_devices; j++) {
            const V1__ContainerDevices *d = pod->containers[i]->devices[j];
            if (!strv_contains(resources, d->resource_name))
                continue;
            if (m->resource && !streq(m->resource, d->resource_name))
                m->two_resources = true;
            if (!m->resource)
                m->resource = d->resource_name;
            for (size_t k = 0; k < d->n_device_ids; k++)
                if (!strv_contains(m->ids, d->device_ids[k]))
                    FUZZ_CHECK(strv_push(&m->ids, d->device_ids[k]) >= 0);
        }
    m->too_many = strv_length(m->ids) >= PODRESOURCES_MAX_IDS;
}

static void check(const Model *m, int r, char **ids, const char *resource, const RgError *err) {
    if (r < 0) {
        FUZZ_CHECK(err->msg[0]);
        if (mode == 3 || m->malformed)
            FUZZ_CHECK(err->code == CNI_ERR_TRY_AGAIN);
        else if (err->code == CNI_ERR_TENANT)
            FUZZ_CHECK(m->two_resources);
        else
            FUZZ_CHECK(err->code == CNI_ERR_DEVICE && m->too_many);
        return;
    }
    FUZZ_CHECK(mode != 3 && !m->malformed && !m->two_resources);
    FUZZ_CHECK(streq_ptr(resource, m->resource));
    FUZZ_CHECK(strv_length(ids) == strv_length(m->ids));
    for (size_t i = 0; ids && ids[i]; i++)
        FUZZ_CHECK(streq(ids[i], m->ids[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Model m = {0};
    void *msg = NULL;
    char **ids = NULL, *resource = NULL;
    RgError err = {0};
    int r;

    if (size == 0)
        return 0;
    mode = data[0] % 4;
    answer = data + 1;
    answer_len = size - 1;
    fakerpc_set_client(client);
    if (mode == 0) {
        V1__GetPodResourcesResponse *g =
            v1__get_pod_resources_response__unpack(NULL, answer_len, answer);
        m.malformed = !g;
        if (g && g->pod_resources)
            model_pod(&m, g->pod_resources);
        msg = g;
    } else if (mode != 3) {
        V1__ListPodResourcesResponse *l =
            v1__list_pod_resources_response__unpack(NULL, answer_len, answer);
        m.malformed = !l;
        for (size_t i = 0; l && i < l->n_pod_resources; i++)
            if (streq(l->pod_resources[i]->namespace_, NS) &&
                streq(l->pod_resources[i]->name, POD)) {
                model_pod(&m, l->pod_resources[i]);
                break;
            }
        msg = l;
    }
    r = podresources_pod_units("/run/fuzz/kubelet.sock", 5000, NS, POD, resources, &ids, &resource,
                               &err);
    check(&m, r, ids, resource, &err);
    strv_free(ids);
    free(resource);
    strv_free(m.ids);
    if (msg)
        protobuf_c_message_free_unpacked(msg, NULL);

    err = (RgError){0};
    r = podresources_ping("/run/fuzz/kubelet.sock", 5000, &err);
    FUZZ_CHECK(mode == 3 ? r == -EAGAIN && err.code == CNI_ERR_TRY_AGAIN : r == 0);
    fakerpc_set_client(NULL);
    return 0;
}
