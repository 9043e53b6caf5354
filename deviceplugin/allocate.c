/* SPDX-License-Identifier: Apache-2.0 */
/* Allocate: device nodes, CDI names and the fabric environment for a container. */
#include <stdio.h>

#include "arena.h"
#include "deviceplugin.pb-c.h"
#include "edits.h"
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

/* The shared builder's result as kubelet's ContainerAllocateResponse. */
static int response_from(const NodeConfig *c, const ContainerEdits *e, Arena *a,
                         V1beta1__ContainerAllocateResponse **ret) {
    V1beta1__ContainerAllocateResponse *resp = arena_new(a, V1beta1__ContainerAllocateResponse);
    size_t n_env = strv_length(e->env), n_dev = strv_length(e->devices),
           n_cdi = strv_length(e->cdi);

    if (!resp)
        return -ENOMEM;
    v1beta1__container_allocate_response__init(resp);
    resp->envs = arena_array(a, V1beta1__ContainerAllocateResponse__EnvsEntry *, n_env);
    resp->devices = arena_array(a, V1beta1__DeviceSpec *, n_dev);
    resp->cdi_devices = arena_array(a, V1beta1__CDIDevice *, n_cdi);
    if (a->failed)
        return -ENOMEM;
    for (size_t i = 0; i < n_env; i++) {
        V1beta1__ContainerAllocateResponse__EnvsEntry *en =
            arena_new(a, V1beta1__ContainerAllocateResponse__EnvsEntry);
        const char *eq = strchr(e->env[i], '=');
        if (!en || !eq)
            return -ENOMEM;
        v1beta1__container_allocate_response__envs_entry__init(en);
        en->key = arena_printf(a, "%.*s", (int)(eq - e->env[i]), e->env[i]);
        en->value = arena_strdup(a, eq + 1);
        resp->envs[resp->n_envs++] = en;
    }
    for (size_t i = 0; i < n_dev; i++) {
        V1beta1__DeviceSpec *d = arena_new(a, V1beta1__DeviceSpec);
        if (!d)
            return -ENOMEM;
        v1beta1__device_spec__init(d);
        d->container_path = arena_strdup(a, e->devices[i]);
        d->host_path = arena_printf(a, "%s%s", c->dev_root, e->devices[i]);
        d->permissions = arena_strdup(a, "rw");
        resp->devices[resp->n_devices++] = d;
    }
    for (size_t i = 0; i < n_cdi; i++) {
        V1beta1__CDIDevice *d = arena_new(a, V1beta1__CDIDevice);
        if (!d)
            return -ENOMEM;
        v1beta1__cdidevice__init(d);
        d->name = arena_strdup(a, e->cdi[i]);
        resp->cdi_devices[resp->n_cdi_devices++] = d;
    }
    if (a->failed)
        return -ENOMEM;
    *ret = resp;
    return 0;
}

int allocate_container(const TenantServer *t, char **ids, size_t n_ids, Arena *a,
                       V1beta1__ContainerAllocateResponse **ret, RgError *err) {
    const NodeConfig *c = t->plugin->config;
    _cleanup_free_ const Unit **units = NULL;
    _cleanup_(container_edits_done) ContainerEdits e = {0};
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
    /* kubelet sends ids in no particular order; the builder takes rails in rail order */
    r = container_edits_build(c, c->tenants[t->tenant].name, units, n_ids, &e);
    if (r < 0)
        return r;
    return response_from(c, &e, a, ret);
}
