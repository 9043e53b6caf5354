/* SPDX-License-Identifier: Apache-2.0 */
/* ListAndWatch: the tenant's full device list with health and NUMA topology. */
#include "arena.h"
#include "deviceplugin.pb-c.h"
#include "pb.h"
#include "plugin.h"

static V1beta1__Device *device_new(Arena *a, const Unit *u, bool healthy) {
    V1beta1__Device *d = arena_new(a, V1beta1__Device);

    if (!d)
        return NULL;
    v1beta1__device__init(d);
    d->id = (char *)u->id;
    d->health = (char *)(healthy ? "Healthy" : "Unhealthy");
    if (u->numa < 0)
        return d;
    V1beta1__TopologyInfo *topo = arena_new(a, V1beta1__TopologyInfo);
    V1beta1__NUMANode *node = arena_new(a, V1beta1__NUMANode);
    V1beta1__NUMANode **nodes = arena_array(a, V1beta1__NUMANode *, 1);
    if (!topo || !node || !nodes)
        return NULL;
    v1beta1__topology_info__init(topo);
    v1beta1__numanode__init(node);
    node->id = u->numa;
    nodes[0] = node;
    topo->n_nodes = 1;
    topo->nodes = nodes;
    d->topology = topo;
    return d;
}

int listwatch_snapshot(TenantServer *t, uint8_t **ret, size_t *ret_len) {
    Plugin *p = t->plugin;
    _cleanup_arena_ Arena a = {0};
    V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    int r;

    resp.devices = arena_array(&a, V1beta1__Device *, t->n_units);
    bool *healthy = arena_array(&a, bool, p->inv->n_units ? p->inv->n_units : 1);
    if (!resp.devices || !healthy)
        return -ENOMEM;
    health_read(p->health, healthy, NULL); /* one reading for the whole list */
    for (size_t i = 0; i < t->n_units; i++) {
        size_t idx = (size_t)(t->units[i] - p->inv->units);
        V1beta1__Device *d = device_new(&a, t->units[i], healthy[idx]);
        if (!d)
            break;
        resp.devices[resp.n_devices++] = d;
    }
    if (a.failed)
        return -ENOMEM;
    r = pb_pack(&resp.base, ret, ret_len);
    return r;
}
