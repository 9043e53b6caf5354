/* Allocate: device nodes, CDI names and the fabric environment for a container. */
#include <stdio.h>

#include "arena.h"
#include "deviceplugin.pb-c.h"
#include "plugin.h"
#include "strv.h"

int tenant_resolve_ids(const TenantServer *t, char **ids, size_t n_ids, const Unit **ret,
                       RgError *err) {
    for (size_t i = 0; i < n_ids; i++) {
        const Unit *u = NULL;
        for (size_t j = 0; j < t->n_units && !u; j++)
            if (streq(t->units[j]->id, ids[i]))
                u = t->units[j];
        if (!u)
            return rg_error(err, -EINVAL, RPC_INVALID_ARGUMENT,
                            "device \"%.64s\" is not a unit of %s", ids[i], t->resource);
        for (size_t j = 0; j < i; j++)
            if (ret[j] == u)
                return rg_error(err, -EINVAL, RPC_INVALID_ARGUMENT, "device \"%s\" requested twice",
                                u->id);
        ret[i] = u;
    }
    return 0;
}

static int unit_rail_cmp(const void *a, const void *b) {
    const Unit *x = *(const Unit *const *)a, *y = *(const Unit *const *)b;

    return x < y ? -1 : x > y;
}

typedef struct Env {
    char **gpus, **hcas, **ifnames, **ucx, **rails, **ids;
} Env;

static void env_done(Env *e) {
    strv_free(e->gpus);
    strv_free(e->hcas);
    strv_free(e->ifnames);
    strv_free(e->ucx);
    strv_free(e->rails);
    strv_free(e->ids);
}

static int env_collect(Env *e, const Unit *const *units, size_t n) {
    int r = 0;

    for (size_t i = 0; i < n && r >= 0; i++) {
        const Unit *u = units[i];
        if (u->has_gpu && !strv_contains(e->gpus, u->gpu_id))
            r = strv_push(&e->gpus, u->gpu_id);
        if (r >= 0 && u->rdma[0])
            r = strv_push(&e->hcas, u->rdma);
        if (r >= 0)
            r = strv_push(&e->ifnames, u->pod_ifname);
        if (r >= 0)
            r = u->rdma[0] ? strv_pushf(&e->ucx, "%s:1", u->rdma)
                           : strv_push(&e->ucx, u->pod_ifname);
        if (r >= 0)
            r = strv_pushf(&e->rails, "%u", u->rail);
        if (r >= 0)
            r = strv_push(&e->ids, u->id);
    }
    return r;
}

typedef struct Builder {
    Arena *a;
    V1beta1__ContainerAllocateResponse *resp;
    size_t envs_cap, devs_cap, cdi_cap;
} Builder;

static void add_env(Builder *b, const char *key, const char *value) {
    V1beta1__ContainerAllocateResponse__EnvsEntry *e;

    if (b->resp->n_envs == b->envs_cap)
        return;
    e = arena_new(b->a, V1beta1__ContainerAllocateResponse__EnvsEntry);
    if (!e)
        return;
    v1beta1__container_allocate_response__envs_entry__init(e);
    e->key = arena_strdup(b->a, key);
    e->value = arena_strdup(b->a, value);
    b->resp->envs[b->resp->n_envs++] = e;
}

static void add_env_list(Builder *b, const char *key, char *const *l, const char *prefix) {
    _cleanup_free_ char *j = NULL;

    if (!l)
        return;
    j = strv_join(l, ",");
    if (!j) {
        b->a->failed = 1;
        return;
    }
    char *v = arena_printf(b->a, "%s%s", prefix, j);
    if (v)
        add_env(b, key, v);
}

/* A device node goes in only if it exists on the host. */
static void add_device(Builder *b, const NodeConfig *c, const char *path) {
    char host[PATH_MAX];
    V1beta1__DeviceSpec *d;

    for (size_t i = 0; i < b->resp->n_devices; i++)
        if (streq(b->resp->devices[i]->container_path, path))
            return;
    snprintf(host, sizeof(host), "%s%s", c->dev_root, path);
    if (access(host, F_OK) < 0 || b->resp->n_devices == b->devs_cap)
        return;
    d = arena_new(b->a, V1beta1__DeviceSpec);
    if (!d)
        return;
    v1beta1__device_spec__init(d);
    d->container_path = arena_strdup(b->a, path);
    d->host_path = arena_strdup(b->a, host);
    d->permissions = arena_strdup(b->a, "rw");
    b->resp->devices[b->resp->n_devices++] = d;
}

static void add_cdi(Builder *b, const char *kind, const char *id) {
    V1beta1__CDIDevice *d;
    char *name = arena_printf(b->a, "%s=%s", kind, id);

    for (size_t i = 0; name && i < b->resp->n_cdi_devices; i++)
        if (streq(b->resp->cdi_devices[i]->name, name))
            return;
    if (!name || b->resp->n_cdi_devices == b->cdi_cap)
        return;
    d = arena_new(b->a, V1beta1__CDIDevice);
    if (!d)
        return;
    v1beta1__cdidevice__init(d);
    d->name = name;
    b->resp->cdi_devices[b->resp->n_cdi_devices++] = d;
}

static void add_unit_devices(Builder *b, const NodeConfig *c, const Unit *u) {
    if (u->has_gpu) {
        if (c->cdi_kind)
            add_cdi(b, c->cdi_kind, u->gpu_id);
        else {
            for (char **p = u->gpu_devices; p && *p; p++)
                add_device(b, c, *p);
            for (char **p = u->gpu_ctl_devices; p && *p; p++)
                add_device(b, c, *p);
        }
    }
    for (char **p = u->rdma_devices; p && *p; p++)
        add_device(b, c, *p);
}

static size_t count_devices(const Unit *const *units, size_t n) {
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += strv_length(units[i]->gpu_devices) + strv_length(units[i]->gpu_ctl_devices) +
             strv_length(units[i]->rdma_devices);
    return k;
}

int allocate_container(const TenantServer *t, char **ids, size_t n_ids, Arena *a,
                       V1beta1__ContainerAllocateResponse **ret, RgError *err) {
    const NodeConfig *c = t->plugin->config;
    _cleanup_free_ const Unit **units = NULL;
    _cleanup_(env_done) Env env = {0};
    int r;

    if (n_ids == 0)
        return rg_error(err, -EINVAL, RPC_INVALID_ARGUMENT, "no devices in container request");
    if (n_ids > t->n_units)
        return rg_error(err, -EINVAL, RPC_INVALID_ARGUMENT, "%zu devices requested, %s has %zu",
                        n_ids, t->resource, t->n_units);
    units = calloc(n_ids, sizeof(*units));
    if (!units)
        return -ENOMEM;
    r = tenant_resolve_ids(t, ids, n_ids, units, err);
    if (r < 0)
        return r;
    /* kubelet sends ids in no particular order; rails go out in rail order */
    qsort(units, n_ids, sizeof(*units), unit_rail_cmp);
    if (env_collect(&env, units, n_ids) < 0)
        return -ENOMEM;

    Builder b = {.a = a, .envs_cap = 10, .cdi_cap = n_ids};
    b.devs_cap = count_devices(units, n_ids);
    b.resp = arena_new(a, V1beta1__ContainerAllocateResponse);
    if (!b.resp)
        return -ENOMEM;
    v1beta1__container_allocate_response__init(b.resp);
    b.resp->envs = arena_array(a, V1beta1__ContainerAllocateResponse__EnvsEntry *, b.envs_cap);
    b.resp->devices = arena_array(a, V1beta1__DeviceSpec *, b.devs_cap);
    b.resp->cdi_devices = arena_array(a, V1beta1__CDIDevice *, b.cdi_cap);
    if (a->failed)
        return -ENOMEM;

    add_env_list(&b, "CUDA_VISIBLE_DEVICES", env.gpus, "");
    add_env_list(&b, "NVIDIA_VISIBLE_DEVICES", env.gpus, "");
    add_env_list(&b, "NCCL_IB_HCA", env.hcas, "=");
    add_env_list(&b, "NCCL_SOCKET_IFNAME", env.ifnames, "=");
    add_env_list(&b, "UCX_NET_DEVICES", env.ucx, "");
    add_env(&b, "RAILGATE_TENANT", c->tenants[t->tenant].name);
    add_env_list(&b, "RAILGATE_RAILS", env.rails, "");
    add_env_list(&b, "RAILGATE_UNITS", env.ids, "");
    for (size_t i = 0; i < n_ids; i++)
        add_unit_devices(&b, c, units[i]);
    if (a->failed)
        return -ENOMEM;
    *ret = b.resp;
    return 0;
}
