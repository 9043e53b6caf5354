/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA kubelet plugin over its real sockets, claims from a fake API server: prepare, refuse,
 * unprepare. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agentmetrics.h"
#include "cdi.h"
#include "claims.h"
#include "dpenv.h"
#include "drafix.h"
#include "dra.h"
#include "dra.pb-c.h"
#include "drahealth.pb-c.h"
#include "fakeapi.h"
#include "fileio.h"
#include "proc.h"
#include "scrape.h"
#include "pb.h"
#include "pluginregistration.pb-c.h"
#include "podresources.h"
#include "state.h"
#include "strv.h"

#define NODE "node-1"

static struct {
    char tmp[64], kubelet[128], state[128], cdi[128], dev[128];
    FakeApi *api;
    KubeClient *kube;
    NodeConfig *c;
    Inventory *inv;
    DraDriver *d;
} T;

static int setup(void **state) {
    char text[2048], p[256];
    RgError err = {0};

    memset(&T, 0, sizeof(T));
    assert_int_equal(tmpdir_make(T.tmp, sizeof(T.tmp), "rg-dra"), 0);
    snprintf(T.kubelet, sizeof(T.kubelet), "%s/kubelet", T.tmp);
    snprintf(T.state, sizeof(T.state), "%s/state", T.tmp);
    snprintf(T.cdi, sizeof(T.cdi), "%s/cdi", T.tmp);
    snprintf(T.dev, sizeof(T.dev), "%s/dev", T.tmp);
    for (unsigned k = 0; k < 4; k++) {
        snprintf(p, sizeof(p), "%s/dev/railgate", T.dev);
        assert_int_equal(fileio_mkdir_p(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/dev/railgate/gpu%u", T.dev, k);
        assert_int_equal(fileio_write_atomic(p, "", 0, 0600, false), 0);
    }
    snprintf(text, sizeof(text),
             "{\"mode\": \"dra\", \"kubeletDir\": \"%s\", \"stateDir\": \"%s\", \"cdiDir\": "
             "\"%s\", \"devRoot\": \"%s\", " DRAFIX_RAILS_TENANTS "}",
             T.kubelet, T.state, T.cdi, T.dev);
    assert_int_equal(config_parse(text, "node.json", &T.c, &err), 0);
    /* rails 0 and 1 of tenant-a (team-a), 2 and 3 of tenant-b (team-b) */
    T.inv = drafix_inventory(T.c, 4);
    assert_non_null(T.inv);
    assert_int_equal(drafix_api(T.tmp, &T.api, &T.kube), 0);
    assert_int_equal(dra_driver_new(T.c, T.inv, T.kube, NODE, &T.d), 0);
    assert_int_equal(dra_driver_start(T.d), 0);
    return 0;
}

static int teardown(void **state) {
    unsetenv("RAILGATE_FAILPOINT");
    dra_driver_free(T.d);
    kube_client_free(T.kube);
    fakeapi_stop(T.api);
    inventory_free(T.inv);
    config_free(T.c);
    tmpdir_remove(T.tmp);
    return 0;
}

/* ---- claims in the API server ---- */

typedef DrafixResult Result;
typedef DrafixRef Ref;

/* A ResourceClaim as the scheduler leaves it; its uid (the fake's) into uid. */
static void put_claim(const char *ns, const char *name, const Result *res, size_t n,
                      const char *const *pods, size_t n_pods, json_t *config, char *uid) {
    assert_int_equal(drafix_put_claim(T.api, NODE, ns, name, res, n, pods, n_pods, config, uid), 0);
}

static const char *POD1[] = {"pod-1111"};

/* ---- kubelet's side of the calls ---- */

static uint8_t *call(const char *sock, const char *method, const ProtobufCMessage *m, size_t *len,
                     RgError *err) {
    (void)err;
    return drafix_call(sock, method, m, len);
}

static Dra__NodePrepareResourcesResponse *prepare_via(const char *service, const Ref *refs,
                                                      size_t n) {
    Dra__NodePrepareResourcesResponse *r = drafix_prepare(T.d->dra_sock, service, refs, n);

    assert_non_null(r);
    assert_int_equal(r->n_claims, n); /* every claim is answered */
    return r;
}

static Dra__NodePrepareResourcesResponse *prepare(const Ref *refs, size_t n) {
    return prepare_via(DRA_SERVICE_V1, refs, n);
}

static Dra__NodePrepareResourceResponse *entry(Dra__NodePrepareResourcesResponse *r,
                                               const char *uid) {
    Dra__NodePrepareResourceResponse *e = drafix_prepared(r, uid);

    if (!e)
        fail_msg("no entry for claim %s", uid);
    return e;
}

/* The error kubelet gets for one claim of an unprepare ("" when none). */
static char *unprepare(const Ref *ref) {
    char *e = drafix_unprepare(T.d->dra_sock, ref);

    assert_non_null(e);
    return e;
}

static bool spec_exists(const char *uid) {
    char path[512];
    struct stat st;

    assert_int_equal(cdi_spec_path(T.cdi, "railgate.io", uid, path, sizeof(path)), 0);
    return stat(path, &st) == 0;
}

static bool recorded(const char *uid) {
    PreparedClaim c;

    return claims_load(T.state, uid, &c) == 0;
}

/* A sample of the agent's metrics now, NAN when there is none. */
static double metric_value(const char *series) {
    char *text = NULL;
    size_t len;
    double v = NAN;

    if (metrics_render(&text, &len) < 0 || !scrape_sample(text, series, &v))
        v = NAN;
    free(text);
    return v;
}

/* ---- the tests ---- */

static void test_registration(void **state) {
    Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
    RgError err = {0};
    size_t len = 0;
    char want[256];
    struct stat st;

    assert_int_equal(strlen(T.d->id), 8);
    snprintf(want, sizeof(want), "%s/plugins_registry/railgate.io-%s-reg.sock", T.kubelet, T.d->id);
    assert_string_equal(T.d->reg_sock, want);
    assert_int_equal(stat(want, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    uint8_t *resp = call(T.d->reg_sock, DRA_METHOD_GET_INFO, &req.base, &len, &err);
    assert_non_null(resp);
    Pluginregistration__PluginInfo *info = pluginregistration__plugin_info__unpack(NULL, len, resp);
    free(resp);
    assert_non_null(info);
    assert_string_equal(info->type, "DRAPlugin");
    assert_string_equal(info->name, "railgate.io");
    snprintf(want, sizeof(want), "%s/plugins/railgate.io/dra-%s.sock", T.kubelet, T.d->id);
    assert_string_equal(info->endpoint, want);
    /* the plugin service, then the health service on the same endpoint */
    assert_int_equal(info->n_supported_versions, 4);
    assert_string_equal(info->supported_versions[0], "v1.DRAPlugin");
    assert_string_equal(info->supported_versions[1], "v1beta1.DRAPlugin");
    assert_string_equal(info->supported_versions[2], "v1.DRAResourceHealth");
    assert_string_equal(info->supported_versions[3], "v1alpha1.DRAResourceHealth");
    pluginregistration__plugin_info__free_unpacked(info, NULL);

    Pluginregistration__RegistrationStatus st_msg = PLUGINREGISTRATION__REGISTRATION_STATUS__INIT;
    st_msg.plugin_registered = false;
    st_msg.error = "version not supported";
    resp = call(T.d->reg_sock, DRA_METHOD_NOTIFY, &st_msg.base, &len, &err);
    assert_non_null(resp);
    free(resp);
    assert_int_equal(atomic_load(&T.d->registered), -1);
    st_msg.plugin_registered = true;
    resp = call(T.d->reg_sock, DRA_METHOD_NOTIFY, &st_msg.base, &len, &err);
    free(resp);
    assert_int_equal(atomic_load(&T.d->registered), 1);

    /* the socket removed (kubelet's cleanup, an operator): bound again */
    assert_int_equal(unlink(T.d->reg_sock), 0);
    assert_int_equal(dra_driver_check_sockets(T.d), 1);
    assert_int_equal(atomic_load(&T.d->registered), 0);
    resp = call(T.d->reg_sock, DRA_METHOD_GET_INFO, &req.base, &len, &err);
    assert_non_null(resp);
    free(resp);
    assert_int_equal(dra_driver_check_sockets(T.d), 0);
}

/* A socket file that nobody serves (its process was killed). */
static void dead_socket(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
}

static bool exists(const char *path) {
    struct stat st;

    return lstat(path, &st) == 0;
}

/* Every start names its sockets afresh (kubelet's rolling-update names): a
 * second agent registers next to one that still serves, and its start
 * sweeps only this driver's sockets that nobody serves, the fixed names of
 * earlier versions included; a stopped agent takes its own away. */
static void test_socket_names(void **state) {
    char stale[4][256], other[256];
    DraDriver *d2 = NULL;

    snprintf(stale[0], sizeof(stale[0]), "%s/plugins_registry/railgate.io-deadbeef-reg.sock",
             T.kubelet);
    snprintf(stale[1], sizeof(stale[1]), "%s/plugins_registry/railgate.io-reg.sock", T.kubelet);
    snprintf(stale[2], sizeof(stale[2]), "%s/plugins/railgate.io/dra-deadbeef.sock", T.kubelet);
    snprintf(stale[3], sizeof(stale[3]), "%s/plugins/railgate.io/dra.sock", T.kubelet);
    snprintf(other, sizeof(other), "%s/plugins_registry/example.com-deadbeef-reg.sock", T.kubelet);
    for (size_t i = 0; i < 4; i++)
        dead_socket(stale[i]);
    dead_socket(other);

    assert_int_equal(dra_driver_new(T.c, T.inv, T.kube, NODE, &d2), 0);
    assert_string_not_equal(d2->id, T.d->id);
    assert_string_not_equal(d2->reg_sock, T.d->reg_sock);
    assert_string_not_equal(d2->dra_sock, T.d->dra_sock);
    assert_int_equal(dra_driver_start(d2), 0);
    for (size_t i = 0; i < 4; i++)
        assert_false(exists(stale[i]));
    assert_true(exists(other)); /* another driver's */
    /* both serve */
    Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
    size_t len;
    uint8_t *info = drafix_call(T.d->reg_sock, DRA_METHOD_GET_INFO, &req.base, &len);
    assert_non_null(info);
    free(info);
    info = drafix_call(d2->reg_sock, DRA_METHOD_GET_INFO, &req.base, &len);
    assert_non_null(info);
    free(info);
    char reg[PATH_MAX], dra[PATH_MAX];
    snprintf(reg, sizeof(reg), "%s", d2->reg_sock);
    snprintf(dra, sizeof(dra), "%s", d2->dra_sock);
    dra_driver_free(d2);
    assert_false(exists(reg));
    assert_false(exists(dra));
    assert_true(exists(T.d->reg_sock));
    assert_true(exists(T.d->dra_sock));
    assert_int_equal(unlink(other), 0);
}

static void test_prepare(void **state) {
    char uid[CLAIM_UID_MAX], path[512], id[256];
    Result res[] = {{.device = "rail1", .request = "gpus/pair"}, {.device = "rail0"}};

    assert_int_equal(metrics_init(T.c), 0);
    assert_true(metric_value("railgate_dra_claims_total{operation=\"prepare\",result=\"ok\"}") ==
                0); /* DRA mode's series show from the start */
    /* rail0's fabric nodes as the inventory lists them with "rdma": {"umad":
     * true}; umad1 is missing on the node */
    static const char *const fabric[] = {"infiniband/uverbs0", "infiniband/rdma_cm",
                                         "infiniband/umad0", "infiniband/umad1"};
    snprintf(path, sizeof(path), "%s/dev/infiniband", T.dev);
    assert_int_equal(fileio_mkdir_p(path, 0755), 0);
    for (size_t i = 0; i < ELEMENTSOF(fabric); i++) {
        assert_int_equal(strv_pushf(&T.inv->units[0].rdma_devices, "/dev/%s", fabric[i]), 0);
        snprintf(path, sizeof(path), "%s/dev/%s", T.dev, fabric[i]);
        if (i < 3)
            assert_int_equal(fileio_write_atomic(path, "", 0, 0600, false), 0);
    }
    put_claim("team-a", "a1-gpus", res, 2, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "a1-gpus", uid};
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    assert_true(metric_value("railgate_dra_claims_total{operation=\"prepare\",result=\"ok\"}") ==
                1);
    assert_true(
        metric_value("railgate_dra_request_duration_seconds_count{operation=\"prepare\"}") == 1);
    metrics_free();
    Dra__NodePrepareResourceResponse *e = entry(r, uid);
    assert_null(e->error && *e->error ? e->error : NULL);
    assert_int_equal(e->n_devices, 2);
    assert_string_equal(e->devices[0]->device_name, "rail1");
    assert_string_equal(e->devices[0]->pool_name, NODE);
    assert_int_equal(e->devices[0]->n_request_names, 1);
    assert_string_equal(e->devices[0]->request_names[0], "gpus"); /* the subrequest's parent */
    assert_int_equal(e->devices[0]->n_cdi_device_ids, 1);
    snprintf(id, sizeof(id), "railgate.io/unit=%s-rail1", uid);
    assert_string_equal(e->devices[0]->cdi_device_ids[0], id);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    /* recorded: claim -> pod -> units */
    PreparedClaim c;
    assert_int_equal(claims_load(T.state, uid, &c), 0);
    assert_string_equal(c.pod_uid, "pod-1111");
    assert_string_equal(c.tenant, "tenant-a");
    assert_int_equal(c.n_devices, 2);
    _cleanup_(strv_freep) char **units = NULL;
    char tenant[64];
    assert_int_equal(claims_units_of_pod(T.state, "pod-1111", NULL, &units, tenant, sizeof(tenant)),
                     0);
    assert_int_equal(strv_length(units), 2);
    assert_string_equal(units[0], "rail0");
    assert_string_equal(units[1], "rail1");

    /* the CDI spec: Allocate's environment, each unit's GPU node */
    assert_int_equal(cdi_spec_path(T.cdi, "railgate.io", uid, path, sizeof(path)), 0);
    json_t *spec = json_load_file(path, 0, NULL);
    assert_non_null(spec);
    json_t *env = json_object_get(json_object_get(spec, "containerEdits"), "env");
    assert_string_equal(drafix_env_of(env, "NCCL_SOCKET_IFNAME"), "=rail0,rail1");
    assert_string_equal(drafix_env_of(env, "NCCL_IB_HCA"), "=mlx5_0");
    assert_string_equal(drafix_env_of(env, "CUDA_VISIBLE_DEVICES"), "GPU-0,GPU-1");
    assert_string_equal(drafix_env_of(env, "RAILGATE_TENANT"), "tenant-a");
    json_t *devs = json_object_get(spec, "devices");
    assert_int_equal(json_array_size(devs), 2);
    /* in the claim's order: rail1 first, with its own GPU only */
    json_t *d0 = json_array_get(devs, 0);
    snprintf(id, sizeof(id), "%s-rail1", uid);
    assert_string_equal(json_string_value(json_object_get(d0, "name")), id);
    json_t *nodes = json_object_get(json_object_get(d0, "containerEdits"), "deviceNodes");
    assert_int_equal(json_array_size(nodes), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "path")),
                        "/dev/railgate/gpu1");
    /* rail0: its GPU and the fabric nodes that exist, each with its host path */
    json_t *d1 = json_array_get(devs, 1), *n;
    char **paths = NULL;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(d1, "containerEdits"), "deviceNodes"), i,
                       n) {
        const char *p = json_string_value(json_object_get(n, "path"));
        char host[512];
        snprintf(host, sizeof(host), "%s%s", T.dev, p);
        assert_string_equal(json_string_value(json_object_get(n, "hostPath")), host);
        assert_int_equal(strv_push(&paths, p), 0);
    }
    _cleanup_free_ char *joined = strv_join(paths, " ");
    strv_free(paths);
    assert_string_equal(joined, "/dev/railgate/gpu0 /dev/infiniband/uverbs0 "
                                "/dev/infiniband/rdma_cm /dev/infiniband/umad0");
    json_decref(spec);

    /* kubelet asks again (its restart): the same answer from the record,
     * even with the API server's claim gone meanwhile; v1beta1 too */
    char apath[512];
    snprintf(apath, sizeof(apath), "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/%s",
             "a1-gpus");
    assert_int_equal(fakeapi_delete(T.api, apath), 0);
    unsigned gets = fakeapi_requests(T.api, "GET", apath);
    r = prepare_via(DRA_SERVICE_V1BETA1, &ref, 1);
    e = entry(r, uid);
    assert_true(!e->error || !*e->error);
    assert_int_equal(e->n_devices, 2);
    assert_string_equal(e->devices[1]->device_name, "rail0");
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_int_equal(fakeapi_requests(T.api, "GET", apath), gets);
    /* under another name, the record is not this claim */
    Ref other = {"team-a", "not-a1", uid};
    r = prepare(&other, 1);
    assert_non_null(strstr(entry(r, uid)->error, "is recorded as team-a/a1-gpus"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    /* unprepared: record and spec gone; twice is fine */
    char *err = unprepare(&ref);
    assert_string_equal(err, "");
    free(err);
    assert_false(recorded(uid));
    assert_false(spec_exists(uid));
    err = unprepare(&ref);
    assert_string_equal(err, "");
    free(err);
}

/* What a tenant may write into a claim, and what the scheduler could get
 * wrong, never prepares a unit outside the rules: every claim of the batch
 * is answered, the good one prepared, none of the others recorded. */
static void test_refusals(void **state) {
    struct Case {
        const char *name, *ns;
        Result res[2];
        size_t n_res, n_pods;
        const char *want;
    } cases[] = {
        {"other-tenant", "team-b", {{.device = "rail0"}}, 1, 1, "unit of tenant tenant-a"},
        {"no-tenant", "default", {{.device = "rail2"}}, 1, 1, "of no tenant of this node"},
        {"two-tenants",
         "team-a",
         {{.device = "rail1"}, {.device = "rail2"}},
         2,
         1,
         "rail2 is a unit of tenant tenant-b"},
        {"other-pool", "team-a", {{.device = "rail1", .pool = "node-2"}}, 1, 1, "not this node's"},
        {"unknown", "team-a", {{.device = "rail9"}}, 1, 1, "rail9 is not a unit"},
        {"admin", "team-a", {{.device = "rail1", .admin = true}}, 1, 1, "adminAccess"},
        {"twice", "team-a", {{.device = "rail1"}, {.device = "rail1"}}, 2, 1, "allocated twice"},
        {"unreserved", "team-a", {{.device = "rail1"}}, 1, 0, "reserved for no pod"},
        {"shared", "team-a", {{.device = "rail1"}}, 1, 2, "cannot be shared"},
        {"bad-request", "team-a", {{.device = "rail1", .request = "/x"}}, 1, 1, "is not one"},
    };
    const size_t n = ELEMENTSOF(cases);
    const char *pods[] = {"pod-1", "pod-2"};
    char uids[ELEMENTSOF(cases) + 3][CLAIM_UID_MAX];
    Ref refs[ELEMENTSOF(cases) + 3];

    for (size_t i = 0; i < n; i++) {
        put_claim(cases[i].ns, cases[i].name, cases[i].res, cases[i].n_res, pods, cases[i].n_pods,
                  NULL, uids[i]);
        refs[i] = (Ref){cases[i].ns, cases[i].name, uids[i]};
    }
    /* the claim kubelet means was replaced under its name: another uid */
    Result one = {.device = "rail1"};
    put_claim("team-a", "replaced", &one, 1, POD1, 1, NULL, uids[n]);
    snprintf(uids[n], CLAIM_UID_MAX, "11111111-2222-4333-8444-555555555555");
    refs[n] = (Ref){"team-a", "replaced", uids[n]};
    /* a claim the API server does not have */
    snprintf(uids[n + 1], CLAIM_UID_MAX, "99999999-2222-4333-8444-555555555555");
    refs[n + 1] = (Ref){"team-a", "missing", uids[n + 1]};
    /* and the good one */
    Result good = {.device = "rail0"};
    put_claim("team-a", "good", &good, 1, POD1, 1, NULL, uids[n + 2]);
    refs[n + 2] = (Ref){"team-a", "good", uids[n + 2]};

    Dra__NodePrepareResourcesResponse *r = prepare(refs, n + 3);
    for (size_t i = 0; i < n; i++) {
        Dra__NodePrepareResourceResponse *e = entry(r, uids[i]);
        if (!e->error || !strstr(e->error, cases[i].want))
            fail_msg("%s: error \"%s\", want \"%s\"", cases[i].name, e->error ? e->error : "",
                     cases[i].want);
        assert_int_equal(e->n_devices, 0);
        assert_false(recorded(uids[i]));
        assert_false(spec_exists(uids[i]));
    }
    assert_non_null(strstr(entry(r, uids[n])->error, "(replaced): not prepared"));
    assert_non_null(strstr(entry(r, uids[n + 1])->error, "404 Not Found"));
    assert_false(recorded(uids[n]));
    Dra__NodePrepareResourceResponse *g = entry(r, uids[n + 2]);
    assert_true(!g->error || !*g->error);
    assert_int_equal(g->n_devices, 1);
    assert_true(recorded(uids[n + 2]));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    /* the tenancy refusal is the same on a kubelet retry: never prepared */
    r = prepare(&refs[0], 1);
    assert_non_null(strstr(entry(r, uids[0])->error, "nothing was prepared"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(recorded(uids[0]));

    /* a claim of no railgate device is prepared with nothing, and no record */
    char none_uid[CLAIM_UID_MAX];
    Result foreign = {.device = "gpu-0", .driver = "gpu.nvidia.com"};
    put_claim("team-b", "nvidia", &foreign, 1, POD1, 1, NULL, none_uid);
    Ref none = {"team-b", "nvidia", none_uid};
    r = prepare(&none, 1);
    assert_true(!entry(r, none_uid)->error || !*entry(r, none_uid)->error);
    assert_int_equal(entry(r, none_uid)->n_devices, 0);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(recorded(none_uid));
}

/* Opaque config in the claim is the tenant's to write: it decides nothing. */
static void test_claim_config_ignored(void **state) {
    char uid[CLAIM_UID_MAX];
    Result res = {.device = "rail0"};
    json_t *config =
        json_pack("[{s:s,s:[s],s:{s:s,s:{s:s,s:[s,s],s:s}}}]", "source", "FromClaim", "requests",
                  "gpus", "opaque", "driver", "railgate.io", "parameters", "tenant", "tenant-b",
                  "units", "rail2", "rail3", "namespace", "team-b");

    put_claim("team-a", "sly", &res, 1, POD1, 1, config, uid);
    Ref ref = {"team-a", "sly", uid};
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    Dra__NodePrepareResourceResponse *e = entry(r, uid);
    assert_true(!e->error || !*e->error);
    assert_int_equal(e->n_devices, 1);
    assert_string_equal(e->devices[0]->device_name, "rail0");
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    PreparedClaim c;
    assert_int_equal(claims_load(T.state, uid, &c), 0);
    assert_string_equal(c.tenant, "tenant-a");
    assert_int_equal(c.n_devices, 1);
    assert_string_equal(c.devices[0].unit, "rail0");
}

/* A unit another claim still holds (never unprepared) is not given twice. */
static void test_unit_held(void **state) {
    char first[CLAIM_UID_MAX], second[CLAIM_UID_MAX];
    Result res = {.device = "rail1"};
    const char *pod2[] = {"pod-2222"};

    put_claim("team-a", "first", &res, 1, POD1, 1, NULL, first);
    put_claim("team-a", "second", &res, 1, pod2, 1, NULL, second);
    Ref a = {"team-a", "first", first}, b = {"team-a", "second", second};
    Dra__NodePrepareResourcesResponse *r = prepare(&a, 1);
    assert_int_equal(entry(r, first)->n_devices, 1);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    r = prepare(&b, 1);
    assert_non_null(strstr(entry(r, second)->error, "still prepared for claim"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(recorded(second));

    /* a unit whose NIC is still in a pod that holds no claim here (the
     * device plugin served it before the node switched to DRA mode) */
    char third[CLAIM_UID_MAX];
    Result res0 = {.device = "rail0"};
    put_claim("team-a", "third", &res0, 1, pod2, 1, NULL, third);
    assert_int_equal(state_pod_hold(T.state, "dp-ctr", "rail0"), 0);
    Ref c = {"team-a", "third", third};
    r = prepare(&c, 1);
    assert_non_null(
        strstr(entry(r, third)->error, "rail0 is still in a pod (attachment dp-ctr:eth0)"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(recorded(third));
    assert_false(spec_exists(third));
    assert_int_equal(state_pod_release(T.state, "dp-ctr", "rail0"), 0);
    r = prepare(&c, 1);
    assert_int_equal(entry(r, third)->n_devices, 1);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
}

/* Unprepare waits for the CNI's DEL: a unit in a pod keeps the claim. */
static void test_unprepare_waits_for_del(void **state) {
    char uid[CLAIM_UID_MAX];
    Result res[] = {{.device = "rail0"}, {.device = "rail1"}};

    put_claim("team-a", "busy", res, 2, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "busy", uid};
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    assert_int_equal(entry(r, uid)->n_devices, 2);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    assert_int_equal(state_pod_hold(T.state, "ctr-1", "rail1"), 0);
    char *err = unprepare(&ref);
    assert_non_null(strstr(err, "rail1 is still in a pod"));
    free(err);
    assert_true(recorded(uid));
    assert_true(spec_exists(uid));
    /* DEL brought it home: now it goes */
    assert_int_equal(state_pod_release(T.state, "ctr-1", "rail1"), 0);
    err = unprepare(&ref);
    assert_string_equal(err, "");
    free(err);
    assert_false(recorded(uid));
    assert_false(spec_exists(uid));
}

static void test_api_failures(void **state) {
    char uid[CLAIM_UID_MAX];
    Result res = {.device = "rail0"};

    put_claim("team-a", "flaky", &res, 1, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "flaky", uid};
    fakeapi_fail_next(T.api, "GET", "/apis/resource.k8s.io/v1/namespaces/team-a", 1, 503);
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    assert_non_null(strstr(entry(r, uid)->error, "503 Service Unavailable"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(recorded(uid));
    /* kubelet retries: prepared */
    r = prepare(&ref, 1);
    assert_int_equal(entry(r, uid)->n_devices, 1);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    /* nonsense from kubelet: a gRPC error, not a crash */
    RgError err = {0};
    RpcChannel *ch = NULL;
    uint8_t *resp = NULL;
    size_t len = 0;
    assert_int_equal(rpc_channel_new(T.d->dra_sock, &ch), 0);
    assert_int_equal(rpc_call_unary(ch, DRA_SERVICE_V1 "NodePrepareResources",
                                    (const uint8_t *)"\xff\xff\xff", 3, 5000, &resp, &len, &err),
                     -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    rpc_channel_free(ch);
    /* a claim whose uid is no file name never reaches the disk */
    Ref evil = {"team-a", "flaky", "../../etc"};
    r = prepare(&evil, 1);
    assert_non_null(strstr(entry(r, "../../etc")->error, "valid uid"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
}

#ifdef RAILGATE_FAILPOINTS
/* A first prepare that fails after recording leaves nothing behind: kubelet
 * may never unprepare a claim it was not told is prepared. */
static void test_failed_prepare_rolls_back(void **state) {
    char uid[CLAIM_UID_MAX];
    Result res = {.device = "rail0"};

    put_claim("team-a", "doomed", &res, 1, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "doomed", uid};
    setenv("RAILGATE_FAILPOINT", "dra-prepare-recorded", 1);
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    assert_non_null(entry(r, uid)->error);
    assert_true(*entry(r, uid)->error);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    unsetenv("RAILGATE_FAILPOINT");
    assert_false(recorded(uid));
    assert_false(spec_exists(uid));
    char holder[CLAIM_UID_MAX];
    assert_int_equal(claims_unit_holder(T.state, "rail0", NULL, holder, sizeof(holder)), -ENOENT);
}
#endif

/* ---- networkData ---- */

/* A NIC of unit in pod ns as the CNI leaves it after ADD: its record
 * (interface name, address, MAC) and the unit's marker naming it. */
static void attach(const char *container, const char *unit, const char *ns, const char *ifname,
                   const char *addr, uint8_t mac_last) {
    char key[STATE_KEY_MAX + 1];
    Attachment *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    snprintf(a->container_id, sizeof(a->container_id), "%s", container);
    snprintf(a->ifname, sizeof(a->ifname), "eth0");
    snprintf(a->pod_ns, sizeof(a->pod_ns), "%s", ns);
    snprintf(a->pod_name, sizeof(a->pod_name), "p");
    AttachedNic *n = attachment_add_nic(a);
    assert_non_null(n);
    snprintf(n->unit, sizeof(n->unit), "%s", unit);
    snprintf(n->pod_name, sizeof(n->pod_name), "%s", ifname);
    memcpy(n->mac, (uint8_t[6]){0x02, 0, 0, 0, 0, mac_last}, 6);
    assert_int_equal(strv_push(&n->pod_addrs, addr), 0);
    assert_int_equal(state_key(container, "eth0", key, sizeof(key)), 0);
    assert_int_equal(state_record_save(T.state, a), 0);
    attachment_free(a);
    assert_int_equal(state_unit_mark(T.state, unit, key), 0);
}

static json_t *claim_devices(const char *ns, const char *name) {
    char path[512];

    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns,
             name);
    json_t *c = fakeapi_get(T.api, path);
    json_t *d = json_incref(json_object_get(json_object_get(c, "status"), "devices"));
    json_decref(c);
    return d; /* NULL: none */
}

static json_t *device_entry(json_t *devices, const char *driver, const char *device) {
    size_t i;
    json_t *e;

    json_array_foreach(devices, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "driver")), driver) == 0 &&
            strcmp(json_string_value(json_object_get(e, "device")), device) == 0)
            return e;
    }
    return NULL;
}

static unsigned sync_now(NetData *nd) {
    RgError err = {0};
    unsigned n = 99;

    if (netdata_sync(nd, &n, &err) < 0)
        fail_msg("netdata_sync: %s", err.msg);
    return n;
}

/* After ADD each rail of the claim is in its status.devices with the
 * pod's interface name, address and MAC, by server-side apply as
 * railgate.io; another driver's entry stays; DEL removes the entry, the
 * unprepare the rest; an unchanged claim is not written again; a new agent
 * clears what an earlier one left; a replaced claim is not written. */
static void test_network_data(void **state) {
    char uid[CLAIM_UID_MAX], path[512];
    Result res[] = {{.device = "rail0"},
                    {.device = "rail1"},
                    {.device = "other-0", .driver = "other.example.com"}};
    _cleanup_(netdata_freep) NetData *nd = NULL;

    put_claim("team-a", "nd", res, 3, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "nd", uid};
    dra__node_prepare_resources_response__free_unpacked(prepare(&ref, 1), NULL);
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/nd");
    /* another driver's entry, as its own field manager would have written it */
    json_t *c = fakeapi_get(T.api, path);
    json_object_set_new(json_object_get(c, "status"), "devices",
                        json_pack("[{s:s,s:s,s:s}]", "driver", "other.example.com", "pool", NODE,
                                  "device", "other-0"));
    assert_int_equal(fakeapi_put(T.api, path, c), 0);
    json_decref(c);

    assert_int_equal(netdata_new(T.d, &nd), 0);
    assert_int_equal(sync_now(nd), 1); /* the first sync writes every claim */
    json_t *d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 1);
    json_decref(d);

    attach("c1", "rail0", "team-a", "rail0", "10.100.0.2/24", 0x10);
    attach("c1x", "rail1", "team-a", "rail1", "10.101.0.2/24", 0x11);
    unsigned patches = fakeapi_requests(T.api, "PATCH", "/apis");
    /* an ADD at work (it holds the attachment's lock; its NICs are recorded
     * before they move): the claim is left as it was written */
    char key[STATE_KEY_MAX + 1];
    assert_int_equal(state_key("c1x", "eth0", key, sizeof(key)), 0);
    int lock = state_attachment_lock(T.state, key);
    assert_true(lock >= 0);
    assert_int_equal(sync_now(nd), 0);
    assert_int_equal(fakeapi_requests(T.api, "PATCH", "/apis"), patches);
    d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 1);
    json_decref(d);
    state_attachment_unlock(T.state, key, lock, false);
    assert_int_equal(sync_now(nd), 1);
    assert_int_equal(fakeapi_requests(T.api, "PATCH", "/apis"), patches + 1);
    d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 3);
    json_t *e = device_entry(d, "railgate.io", "rail0");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "pool")), NODE);
    json_t *net = json_object_get(e, "networkData");
    assert_string_equal(json_string_value(json_object_get(net, "interfaceName")), "rail0");
    assert_string_equal(json_string_value(json_array_get(json_object_get(net, "ips"), 0)),
                        "10.100.0.2/24");
    assert_string_equal(json_string_value(json_object_get(net, "hardwareAddress")),
                        "02:00:00:00:00:10");
    assert_non_null(device_entry(d, "railgate.io", "rail1"));
    assert_non_null(device_entry(d, "other.example.com", "other-0"));
    json_decref(d);
    /* nothing changed: nothing written */
    assert_int_equal(sync_now(nd), 0);
    assert_int_equal(fakeapi_requests(T.api, "PATCH", "/apis"), patches + 1);

    /* DEL of rail1's attachment: its entry goes, the others stay */
    assert_int_equal(state_pod_release(T.state, "c1x", "rail1"), 0);
    assert_int_equal(sync_now(nd), 1);
    d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 2);
    assert_null(device_entry(d, "railgate.io", "rail1"));
    json_decref(d);

    /* a new agent (restart) finds the entry it did not write and keeps it
     * while the NIC is in the pod; cleared once it is home */
    netdata_free(TAKE_PTR(nd));
    assert_int_equal(netdata_new(T.d, &nd), 0);
    assert_int_equal(sync_now(nd), 1);
    d = claim_devices("team-a", "nd");
    assert_non_null(device_entry(d, "railgate.io", "rail0"));
    json_decref(d);
    assert_int_equal(state_pod_release(T.state, "c1", "rail0"), 0);
    netdata_free(TAKE_PTR(nd));
    assert_int_equal(netdata_new(T.d, &nd), 0);
    assert_int_equal(sync_now(nd), 1);
    d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 1);
    assert_non_null(device_entry(d, "other.example.com", "other-0"));
    json_decref(d);

    /* attached again, then unprepared (the record goes): ours go */
    attach("c2", "rail0", "team-a", "rail0", "10.100.0.2/24", 0x10);
    assert_int_equal(sync_now(nd), 1);
    assert_int_equal(state_pod_release(T.state, "c2", "rail0"), 0);
    char *err = unprepare(&ref);
    assert_string_equal(err, "");
    free(err);
    assert_int_equal(sync_now(nd), 1);
    d = claim_devices("team-a", "nd");
    assert_int_equal(json_array_size(d), 1);
    json_decref(d);
    assert_int_equal(sync_now(nd), 0);
}

/* A claim made again under the name of a prepared one: the apply carries
 * the old uid and the API server refuses it, so nothing is written into
 * the new claim; the sync does not fail on it, nor on a deleted claim. */
static void test_network_data_replaced_claim(void **state) {
    char uid[CLAIM_UID_MAX], uid2[CLAIM_UID_MAX], path[512];
    Result res[] = {{.device = "rail0"}};
    _cleanup_(netdata_freep) NetData *nd = NULL;

    put_claim("team-a", "nd", res, 1, POD1, 1, NULL, uid);
    Ref ref = {"team-a", "nd", uid};
    dra__node_prepare_resources_response__free_unpacked(prepare(&ref, 1), NULL);
    attach("c1", "rail0", "team-a", "rail0", "10.100.0.2/24", 0x10);
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/nd");
    assert_int_equal(fakeapi_delete(T.api, path), 0);
    put_claim("team-a", "nd", res, 1, POD1, 1, NULL, uid2);
    assert_string_not_equal(uid, uid2);
    assert_int_equal(netdata_new(T.d, &nd), 0);
    sync_now(nd);
    json_t *d = claim_devices("team-a", "nd");
    assert_null(d);
    assert_int_equal(fakeapi_delete(T.api, path), 0);
    sync_now(nd);
    assert_int_equal(state_pod_release(T.state, "c1", "rail0"), 0);
}

/* ---- stale prepared claims ---- */

static char *path_of(const char *ns, const char *name) {
    static char path[512];

    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns,
             name);
    return path;
}

static void prepared(const char *ns, const char *name, const char *unit, const char *const *pods,
                     char *uid) {
    Result res[] = {{.device = unit}};

    put_claim(ns, name, res, 1, pods, 1, NULL, uid);
    Ref ref = {ns, name, uid};
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    Dra__NodePrepareResourceResponse *e = entry(r, uid);
    if (e->error && *e->error)
        fail_msg("%s not prepared: %s", name, e->error);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
}

static unsigned sweep_now(int want_r) {
    RgError err = {0};
    unsigned n = 99;
    int r = dra_claims_sweep(T.d, &n, &err);

    if (r != want_r)
        fail_msg("dra_claims_sweep: %d (%s), expected %d", r, err.msg, want_r);
    return r < 0 ? 0 : n;
}

/* A claim kubelet never unprepared (deleted, made again, or no longer
 * reserved for its pod) frees its units once the API server and kubelet
 * both are done with it and none of its NICs is in a pod; a prepare that
 * finds a unit held asks for the check; an API server or kubelet that
 * cannot answer keeps every record. */
static void test_stale_claims(void **state) {
    const char *other[] = {"pod-2222"};
    char gone[CLAIM_UID_MAX], nic[CLAIM_UID_MAX], moved[CLAIM_UID_MAX], kept[CLAIM_UID_MAX],
        again[CLAIM_UID_MAX], fresh[CLAIM_UID_MAX], pr_sock[256];
    FakeKubelet *fk = NULL;
    PodResources *pr = NULL;

    assert_int_equal(fk_start(T.kubelet, &fk), 0);
    snprintf(pr_sock, sizeof(pr_sock), "%s/pod-resources/kubelet.sock", T.kubelet);
    assert_int_equal(podresources_new(pr_sock, NULL, &pr), 0);
    T.d->podresources = pr;
    prepared("team-a", "gone", "rail0", POD1, gone);
    prepared("team-a", "nic", "rail1", POD1, nic);
    prepared("team-b", "kept", "rail2", other, kept);
    assert_int_equal(sweep_now(0), 0); /* all in use */

    /* deleted, but kubelet still runs a container with it */
    assert_int_equal(fakeapi_delete(T.api, path_of("team-a", "gone")), 0);
    assert_int_equal(fk_pod_claim(fk, "team-a", "p", "gone"), 0);
    assert_int_equal(sweep_now(0), 0);
    assert_true(recorded(gone));
    /* a kubelet that cannot say keeps it */
    fk_stop(fk);
    fk = NULL;
    sweep_now(-EAGAIN);
    assert_true(recorded(gone));
    assert_int_equal(fk_start(T.kubelet, &fk), 0);
    /* an API server that cannot say keeps it */
    fakeapi_fail_next(T.api, "GET", "/apis", 1, 500);
    assert_int_equal(sweep_now(0), 0);
    assert_true(recorded(gone));
    /* kubelet is done too: freed */
    assert_int_equal(sweep_now(0), 1);
    assert_false(recorded(gone));
    assert_false(spec_exists(gone));

    /* deleted with its NIC still in a pod: kept until the DEL */
    attach("c1", "rail1", "team-a", "rail1", "10.101.0.2/24", 1);
    assert_int_equal(fakeapi_delete(T.api, path_of("team-a", "nic")), 0);
    assert_int_equal(sweep_now(0), 0);
    assert_true(recorded(nic));
    assert_int_equal(state_pod_release(T.state, "c1", "rail1"), 0);
    assert_int_equal(sweep_now(0), 1);
    assert_false(recorded(nic));

    /* reserved for another pod now (kubelet missed the unprepare), and made
     * again under its name: both freed; a claim still reserved is kept */
    prepared("team-a", "moved", "rail0", POD1, moved);
    json_t *c = fakeapi_get(T.api, path_of("team-a", "moved"));
    json_object_set_new(
        json_object_get(c, "status"), "reservedFor",
        json_pack("[{s:s,s:s,s:s}]", "resource", "pods", "name", "q", "uid", "pod-3333"));
    assert_int_equal(fakeapi_put(T.api, path_of("team-a", "moved"), c), 0);
    json_decref(c);
    assert_int_equal(sweep_now(0), 1);
    assert_false(recorded(moved));
    prepared("team-a", "again", "rail1", POD1, again);
    assert_int_equal(fakeapi_delete(T.api, path_of("team-a", "again")), 0);
    Result res1[] = {{.device = "rail1"}};
    put_claim("team-a", "again", res1, 1, POD1, 1, NULL, fresh);
    assert_int_equal(sweep_now(0), 1);
    assert_false(recorded(again));
    assert_true(recorded(kept));

    /* a prepare that finds a unit held by a stale record: refused, the
     * check asked for; after it, the prepare works */
    prepared("team-a", "gone2", "rail0", POD1, gone);
    assert_int_equal(fakeapi_delete(T.api, path_of("team-a", "gone2")), 0);
    put_claim("team-a", "next", (Result[]){{.device = "rail0"}}, 1, other, 1, NULL, fresh);
    Ref ref = {"team-a", "next", fresh};
    Dra__NodePrepareResourcesResponse *r = prepare(&ref, 1);
    assert_non_null(strstr(entry(r, fresh)->error, "checking whether"));
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_true(atomic_exchange(&T.d->sweep_soon, false));
    assert_int_equal(sweep_now(0), 1);
    r = prepare(&ref, 1);
    assert_true(!entry(r, fresh)->error || !*entry(r, fresh)->error);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);

    T.d->podresources = NULL;
    podresources_free(pr);
    fk_stop(fk);
}

/* ---- the resource health service (KEP-4680) ---- */

/* Every unit, in the inventory's order, of the node's pool, with the lease
 * and the time given; a message only where a unit is unhealthy, cut to
 * kubelet's limit without splitting a UTF-8 character. */
static void test_health_pack(void **state) {
    const bool healthy[] = {true, false, true, true};
    const char *reasons[] = {"ok", "NIC has no carrier", "ok", "ok"};
    char long_reason[2001], utf8[1100];
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(dra_health_pack(T.inv, NODE, healthy, reasons, 1700000000, &buf, &len), 0);
    Drahealth__NodeWatchResourcesResponse *r =
        drahealth__node_watch_resources_response__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(r);
    assert_int_equal(r->n_devices, 4);
    for (size_t i = 0; i < 4; i++) {
        Drahealth__DeviceHealth *d = r->devices[i];
        char want[16];
        snprintf(want, sizeof(want), "rail%zu", i);
        assert_non_null(d->device);
        assert_string_equal(d->device->pool_name, NODE);
        assert_string_equal(d->device->device_name, want);
        assert_int_equal(d->health, i == 1 ? DRAHEALTH__HEALTH_STATUS__UNHEALTHY
                                           : DRAHEALTH__HEALTH_STATUS__HEALTHY);
        assert_string_equal(d->message, i == 1 ? "NIC has no carrier" : "");
        assert_int_equal(d->health_check_timeout_seconds, 60);
        assert_int_equal(d->last_updated_time, 1700000000);
    }
    drahealth__node_watch_resources_response__free_unpacked(r, NULL);

    /* a reason past kubelet's limit: cut to 1024 bytes... */
    memset(long_reason, 'x', sizeof(long_reason) - 1);
    long_reason[sizeof(long_reason) - 1] = '\0';
    reasons[1] = long_reason;
    assert_int_equal(dra_health_pack(T.inv, NODE, healthy, reasons, 1, &buf, &len), 0);
    r = drahealth__node_watch_resources_response__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(r);
    assert_int_equal(strlen(r->devices[1]->message), 1024);
    drahealth__node_watch_resources_response__free_unpacked(r, NULL);
    /* ...before a character that would not fit whole (\xc3\xa9 at 1023) */
    memset(utf8, 'y', 1023);
    snprintf(utf8 + 1023, sizeof(utf8) - 1023, "\xc3\xa9zz");
    reasons[1] = utf8;
    assert_int_equal(dra_health_pack(T.inv, NODE, healthy, reasons, 1, &buf, &len), 0);
    r = drahealth__node_watch_resources_response__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(r);
    assert_int_equal(strlen(r->devices[1]->message), 1023);
    drahealth__node_watch_resources_response__free_unpacked(r, NULL);
}

/* The next message of a watch as drafix_health_text has it. */
static char *watch_next(RpcClientStream *s, int64_t *ret_updated) {
    uint8_t *m = NULL;
    size_t len = 0;
    RgError err = {0};
    int r = rpc_client_stream_recv(s, 10000, &m, &len, &err);

    if (r < 0)
        fail_msg("no message on the watch: %s (%d) %s", strerror(-r), err.code, err.msg);
    char *text = drafix_health_text(m, len, NODE, ret_updated);
    free(m);
    assert_non_null(text);
    return text;
}

/* NodeWatchResources on the DRA socket (both versions): the snapshot at
 * the open, the list again at each broadcast; refused while the driver has
 * no health to send. */
static void test_health_watch(void **state) {
    RpcClientStream *v1 = NULL, *v1alpha1 = NULL, *early = NULL;
    RpcChannel *ch = NULL;
    Health *h = NULL;
    uint8_t *m = NULL;
    size_t len = 0;
    RgError err = {0};
    int64_t updated = 0, before;
    char *text;

    assert_int_equal(rpc_channel_new(T.d->dra_sock, &ch), 0);
    /* no health yet: UNAVAILABLE (kubelet dials again), not UNIMPLEMENTED
     * (kubelet would never again) */
    assert_int_equal(rpc_client_stream_open(ch, DRA_METHOD_WATCH_V1, NULL, 0, &early), 0);
    assert_int_equal(rpc_client_stream_recv(early, 10000, &m, &len, &err), -ECONNREFUSED);
    assert_int_equal(err.code, RPC_UNAVAILABLE);
    rpc_client_stream_free(early);
    assert_int_equal(dra_health_broadcast(T.d), 0);

    assert_int_equal(health_new(T.c, T.inv, &h), 0);
    for (size_t i = 0; i < 4; i++)
        health_set(h, i, true, "ok");
    T.d->health = h;
    before = (int64_t)time(NULL);
    assert_int_equal(rpc_client_stream_open(ch, DRA_METHOD_WATCH_V1, NULL, 0, &v1), 0);
    text = watch_next(v1, &updated);
    assert_string_equal(text, "rail0=HEALTHY rail1=HEALTHY rail2=HEALTHY rail3=HEALTHY");
    free(text);
    assert_true(updated >= before && updated <= (int64_t)time(NULL));
    assert_int_equal(rpc_client_stream_open(ch, DRA_METHOD_WATCH_V1ALPHA1, NULL, 0, &v1alpha1), 0);
    text = watch_next(v1alpha1, NULL);
    assert_string_equal(text, "rail0=HEALTHY rail1=HEALTHY rail2=HEALTHY rail3=HEALTHY");
    free(text);

    /* a change: both watches get the whole list again */
    health_set(h, 2, false, "GPU device node missing");
    assert_int_equal(dra_health_broadcast(T.d), 2);
    text = watch_next(v1, NULL);
    assert_string_equal(
        text, "rail0=HEALTHY rail1=HEALTHY rail2=UNHEALTHY(GPU device node missing) rail3=HEALTHY");
    free(text);
    text = watch_next(v1alpha1, NULL);
    assert_string_equal(
        text, "rail0=HEALTHY rail1=HEALTHY rail2=UNHEALTHY(GPU device node missing) rail3=HEALTHY");
    free(text);
    /* the same list again (the lease renewed): sent again, not skipped */
    assert_int_equal(dra_health_broadcast(T.d), 2);
    text = watch_next(v1, NULL);
    assert_string_equal(
        text, "rail0=HEALTHY rail1=HEALTHY rail2=UNHEALTHY(GPU device node missing) rail3=HEALTHY");
    free(text);

    /* a request that is not one is refused */
    assert_int_equal(
        rpc_client_stream_open(ch, DRA_METHOD_WATCH_V1, (const uint8_t *)"\x0a\x05", 2, &early), 0);
    assert_int_equal(rpc_client_stream_recv(early, 10000, &m, &len, &err), -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    rpc_client_stream_free(early);

    rpc_client_stream_free(v1);
    rpc_client_stream_free(v1alpha1);
    rpc_channel_free(ch);
    T.d->health = NULL;
    health_free(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_registration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_config_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unit_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unprepare_waits_for_del, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_network_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_network_data_replaced_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_health_pack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_health_watch, setup, teardown),
#ifdef RAILGATE_FAILPOINTS
        cmocka_unit_test_setup_teardown(test_failed_prepare_rolls_back, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
