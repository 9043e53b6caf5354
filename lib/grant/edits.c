/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric environment and device nodes of a set of units (see edits.h). */
#include "edits.h"

#include <limits.h>
#include <stdio.h>

#include "strv.h"

static int unit_rail_cmp(const void *a, const void *b) {
    const Unit *x = *(const Unit *const *)a, *y = *(const Unit *const *)b;

    /* the inventory is sorted by rail, then VF */
    return x < y ? -1 : x > y;
}

typedef struct Lists {
    char **gpus, **hcas, **ifnames, **ucx, **rails, **ids;
} Lists;

static void lists_done(Lists *l) {
    strv_free(l->gpus);
    strv_free(l->hcas);
    strv_free(l->ifnames);
    strv_free(l->ucx);
    strv_free(l->rails);
    strv_free(l->ids);
}

static int lists_collect(Lists *l, const Unit *const *units, size_t n) {
    int r = 0;

    for (size_t i = 0; i < n && r >= 0; i++) {
        const Unit *u = units[i];
        if (u->has_gpu && !strv_contains(l->gpus, u->gpu_id))
            r = strv_push(&l->gpus, u->gpu_id);
        if (r >= 0 && u->rdma[0])
            r = strv_push(&l->hcas, u->rdma);
        if (r >= 0)
            r = strv_push(&l->ifnames, u->pod_ifname);
        if (r >= 0)
            r = u->rdma[0] ? strv_pushf(&l->ucx, "%s:1", u->rdma)
                           : strv_push(&l->ucx, u->pod_ifname);
        if (r >= 0)
            r = strv_pushf(&l->rails, "%u", u->rail);
        if (r >= 0)
            r = strv_push(&l->ids, u->id);
    }
    return r;
}

static int push_env_list(char ***env, const char *key, char *const *l, const char *prefix) {
    _cleanup_free_ char *j = NULL;

    if (!l)
        return 0;
    j = strv_join(l, ",");
    if (!j)
        return -ENOMEM;
    return strv_pushf(env, "%s=%s%s", key, prefix, j);
}

/* A device node goes in once, and only if it exists on the host. */
static int push_device(char ***devices, const NodeConfig *c, const char *path) {
    char host[PATH_MAX];

    if (strv_contains(*devices, path))
        return 0;
    if ((size_t)snprintf(host, sizeof(host), "%s%s", c->dev_root, path) >= sizeof(host) ||
        access(host, F_OK) < 0)
        return 0;
    return strv_push(devices, path);
}

static int push_unit_devices(ContainerEdits *e, const NodeConfig *c, const Unit *u) {
    int r = 0;

    if (u->has_gpu && c->cdi_kind) {
        _cleanup_free_ char *name = NULL;
        if (asprintf(&name, "%s=%s", c->cdi_kind, u->gpu_id) < 0) {
            name = NULL;
            return -ENOMEM;
        }
        if (!strv_contains(e->cdi, name))
            r = strv_push(&e->cdi, name);
    } else if (u->has_gpu) {
        for (char **p = u->gpu_devices; r >= 0 && p && *p; p++)
            r = push_device(&e->devices, c, *p);
        for (char **p = u->gpu_ctl_devices; r >= 0 && p && *p; p++)
            r = push_device(&e->devices, c, *p);
    }
    for (char **p = u->rdma_devices; r >= 0 && p && *p; p++)
        r = push_device(&e->devices, c, *p);
    return r;
}

void container_edits_done(ContainerEdits *e) {
    strv_free(e->env);
    strv_free(e->devices);
    strv_free(e->cdi);
    *e = (ContainerEdits){0};
}

int container_edits_build(const NodeConfig *c, const char *tenant, const Unit *const *units,
                          size_t n, ContainerEdits *ret) {
    _cleanup_free_ const Unit **sorted = NULL;
    _cleanup_(lists_done) Lists l = {0};
    ContainerEdits e = {0};
    int r;

    sorted = calloc(n ? n : 1, sizeof(*sorted));
    if (!sorted)
        return -ENOMEM;
    memcpy(sorted, units, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), unit_rail_cmp);
    r = lists_collect(&l, sorted, n);
    r = r ?: push_env_list(&e.env, "CUDA_VISIBLE_DEVICES", l.gpus, "");
    r = r ?: push_env_list(&e.env, "NVIDIA_VISIBLE_DEVICES", l.gpus, "");
    r = r ?: push_env_list(&e.env, "NCCL_IB_HCA", l.hcas, "=");
    r = r ?: push_env_list(&e.env, "NCCL_SOCKET_IFNAME", l.ifnames, "=");
    r = r ?: push_env_list(&e.env, "UCX_NET_DEVICES", l.ucx, "");
    r = r ?: strv_pushf(&e.env, "RAILGATE_TENANT=%s", tenant);
    r = r ?: push_env_list(&e.env, "RAILGATE_RAILS", l.rails, "");
    r = r ?: push_env_list(&e.env, "RAILGATE_UNITS", l.ids, "");
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = push_unit_devices(&e, c, sorted[i]);
    if (r < 0) {
        container_edits_done(&e);
        return r;
    }
    *ret = e;
    return 0;
}
