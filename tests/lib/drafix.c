/* SPDX-License-Identifier: Apache-2.0 */
/* Fixtures for the DRA tests (see drafix.h). */
#include "drafix.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claims.h"
#include "dra.h"
#include "drahealth.pb-c.h"
#include "pb.h"
#include "rpc.h"
#include "strv.h"

Inventory *drafix_inventory(const NodeConfig *c, unsigned n) {
    Inventory *inv = calloc(1, sizeof(*inv));

    if (!inv)
        return NULL;
    inv->config = c;
    inv->units = calloc(n ? n : 1, sizeof(Unit));
    if (!inv->units) {
        free(inv);
        return NULL;
    }
    inv->n_units = n;
    for (unsigned k = 0; k < n; k++) {
        Unit *u = &inv->units[k];
        u->rail = k;
        unit_set_names(u);
        u->tenant = k < n / 2 ? 0 : 1;
        u->has_gpu = true;
        snprintf(u->gpu_id, sizeof(u->gpu_id), "GPU-%u", k);
        if (strv_pushf(&u->gpu_devices, "/dev/railgate/gpu%u", k) < 0) {
            inventory_free(inv);
            return NULL;
        }
        snprintf(u->netdev, sizeof(u->netdev), "rail%u", k);
        snprintf(u->health_netdev, sizeof(u->health_netdev), "rail%u", k);
        u->numa = k < n / 2 ? 0 : 1;
    }
    if (n > 0)
        snprintf(inv->units[0].rdma, sizeof(inv->units[0].rdma), "mlx5_0");
    return inv;
}

const char *drafix_env_of(json_t *env, const char *key) {
    size_t i, n = strlen(key);
    json_t *v;

    json_array_foreach(env, i, v) {
        const char *s = json_string_value(v);
        if (s && strncmp(s, key, n) == 0 && s[n] == '=')
            return s + n + 1;
    }
    return NULL;
}

int drafix_api(const char *dir, FakeApi **ret_api, KubeClient **ret_kube) {
    char kc[4096];
    RgError err = {0};
    int r;

    if ((size_t)snprintf(kc, sizeof(kc), "%s/kubeconfig.json", dir) >= sizeof(kc))
        return -ENAMETOOLONG;
    r = fakeapi_start(ret_api);
    if (r < 0)
        return r;
    r = fakeapi_write_kubeconfig(*ret_api, kc, NULL);
    if (r >= 0)
        r = kube_client_from_kubeconfig(kc, ret_kube, &err);
    if (r < 0) {
        fakeapi_stop(*ret_api);
        *ret_api = NULL;
    }
    return r;
}

int drafix_put_claim(FakeApi *api, const char *node, const char *ns, const char *name,
                     const DrafixResult *res, size_t n, const char *const *pods, size_t n_pods,
                     json_t *config, char *uid) {
    json_t *results = json_array(), *reserved = json_array(), *devices, *claim, *back;
    char path[512];
    const char *got;
    int r;

    for (size_t i = 0; i < n; i++) {
        json_t *o =
            json_pack("{s:s,s:s,s:s,s:s}", "request", res[i].request ? res[i].request : "gpus",
                      "driver", res[i].driver ? res[i].driver : "railgate.io", "pool",
                      res[i].pool ? res[i].pool : node, "device", res[i].device);
        if (res[i].admin)
            json_object_set_new(o, "adminAccess", json_true());
        json_array_append_new(results, o);
    }
    for (size_t i = 0; i < n_pods; i++)
        json_array_append_new(
            reserved, json_pack("{s:s,s:s,s:s}", "resource", "pods", "name", "p", "uid", pods[i]));
    devices = json_pack("{s:o}", "results", results);
    if (devices && config)
        json_object_set_new(devices, "config", config);
    claim = json_pack("{s:{s:s,s:s},s:{s:{s:o},s:o}}", "metadata", "name", name, "namespace", ns,
                      "status", "allocation", "devices", devices, "reservedFor", reserved);
    if (!claim)
        return -ENOMEM;
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns,
             name);
    r = fakeapi_put(api, path, claim);
    json_decref(claim);
    if (r < 0)
        return r;
    back = fakeapi_get(api, path);
    got = json_string_value(json_object_get(json_object_get(back, "metadata"), "uid"));
    r = got ? 0 : -EBADMSG;
    if (got)
        snprintf(uid, CLAIM_UID_MAX, "%s", got);
    json_decref(back);
    return r;
}

uint8_t *drafix_call(const char *sock, const char *method, const ProtobufCMessage *m,
                     size_t *ret_len) {
    RpcChannel *ch = NULL;
    uint8_t *req = NULL, *resp = NULL;
    size_t req_len = 0;
    RgError err = {0};
    int r;

    r = rpc_channel_new(sock, &ch);
    if (r >= 0)
        r = pb_pack(m, &req, &req_len);
    if (r >= 0)
        r = rpc_call_unary(ch, method, req, req_len, 10000, &resp, ret_len, &err);
    free(req);
    rpc_channel_free(ch);
    return r < 0 ? NULL : resp;
}

Pluginregistration__PluginInfo *drafix_registration_info(const char *kubelet) {
    Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
    Pluginregistration__PluginInfo *info = NULL;
    char pattern[256];
    glob_t g = {0};
    size_t len = 0;

    snprintf(pattern, sizeof(pattern), "%s/plugins_registry/railgate.io*-reg.sock", kubelet);
    if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 1) {
        uint8_t *resp = drafix_call(g.gl_pathv[0], DRA_METHOD_GET_INFO, &req.base, &len);

        info = resp ? pluginregistration__plugin_info__unpack(NULL, len, resp) : NULL;
        free(resp);
    }
    globfree(&g);
    if (info && !(info->endpoint && access(info->endpoint, F_OK) == 0)) {
        pluginregistration__plugin_info__free_unpacked(info, NULL);
        info = NULL;
    }
    return info;
}

Dra__NodePrepareResourcesResponse *drafix_prepare(const char *sock, const char *service,
                                                  const DrafixRef *refs, size_t n) {
    Dra__NodePrepareResourcesRequest req = DRA__NODE_PREPARE_RESOURCES_REQUEST__INIT;
    Dra__Claim *claims = calloc(n ? n : 1, sizeof(*claims));
    Dra__Claim **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    Dra__NodePrepareResourcesResponse *r = NULL;
    uint8_t *resp = NULL;
    char method[256];
    size_t len = 0;

    for (size_t i = 0; claims && ptrs && i < n; i++) {
        dra__claim__init(&claims[i]);
        claims[i].namespace_ = (char *)refs[i].ns;
        claims[i].name = (char *)refs[i].name;
        claims[i].uid = (char *)refs[i].uid;
        ptrs[i] = &claims[i];
    }
    req.claims = ptrs;
    req.n_claims = n;
    snprintf(method, sizeof(method), "%sNodePrepareResources", service);
    if (claims && ptrs)
        resp = drafix_call(sock, method, &req.base, &len);
    if (resp)
        r = dra__node_prepare_resources_response__unpack(NULL, len, resp);
    free(resp);
    free(claims);
    free(ptrs);
    return r;
}

Dra__NodePrepareResourceResponse *drafix_prepared(Dra__NodePrepareResourcesResponse *r,
                                                  const char *uid) {
    for (size_t i = 0; r && i < r->n_claims; i++)
        if (strcmp(r->claims[i]->key, uid) == 0)
            return r->claims[i]->value;
    return NULL;
}

char *drafix_unprepare(const char *sock, const DrafixRef *ref) {
    Dra__NodeUnprepareResourcesRequest req = DRA__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
    Dra__Claim claim = DRA__CLAIM__INIT, *ptr = &claim;
    Dra__NodeUnprepareResourcesResponse *r = NULL;
    char *e = NULL;
    size_t len = 0;

    claim.namespace_ = (char *)ref->ns;
    claim.name = (char *)ref->name;
    claim.uid = (char *)ref->uid;
    req.claims = &ptr;
    req.n_claims = 1;
    uint8_t *resp = drafix_call(sock, DRA_SERVICE_V1 "NodeUnprepareResources", &req.base, &len);
    if (resp)
        r = dra__node_unprepare_resources_response__unpack(NULL, len, resp);
    free(resp);
    if (r && r->n_claims == 1 && strcmp(r->claims[0]->key, ref->uid) == 0)
        e = strdup(r->claims[0]->value && r->claims[0]->value->error ? r->claims[0]->value->error
                                                                     : "");
    if (r)
        dra__node_unprepare_resources_response__free_unpacked(r, NULL);
    return e;
}

static const char *health_name(Drahealth__HealthStatus h) {
    switch (h) {
    case DRAHEALTH__HEALTH_STATUS__HEALTHY:
        return "HEALTHY";
    case DRAHEALTH__HEALTH_STATUS__UNHEALTHY:
        return "UNHEALTHY";
    default:
        return "UNKNOWN";
    }
}

char *drafix_health_text(const uint8_t *buf, size_t len, const char *pool, int64_t *ret_updated) {
    _cleanup_pb_ Drahealth__NodeWatchResourcesResponse *r =
        drahealth__node_watch_resources_response__unpack(NULL, len, buf);
    char *text = NULL;
    size_t n = 0;
    FILE *f;

    if (!r) {
        fprintf(stderr, "not a NodeWatchResourcesResponse (%zu bytes)\n", len);
        return NULL;
    }
    f = open_memstream(&text, &n);
    if (!f)
        return NULL;
    for (size_t i = 0; i < r->n_devices; i++) {
        Drahealth__DeviceHealth *d = r->devices[i];
        const char *name = d->device ? d->device->device_name : "(none)";
        if (!d->device || strcmp(d->device->pool_name, pool) != 0 ||
            d->health_check_timeout_seconds != DRA_HEALTH_TIMEOUT_S) {
            fprintf(stderr, "device %s: pool \"%s\", lease %lld s\n", name,
                    d->device ? d->device->pool_name : "(none)",
                    (long long)d->health_check_timeout_seconds);
            fclose(f);
            free(text);
            return NULL;
        }
        fprintf(f, "%s%s=%s", i ? " " : "", name, health_name(d->health));
        if (d->message && *d->message)
            fprintf(f, "(%s)", d->message);
        if (i == 0 && ret_updated)
            *ret_updated = d->last_updated_time;
    }
    fclose(f);
    return text;
}
