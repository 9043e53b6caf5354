/* SPDX-License-Identifier: Apache-2.0 */
/* Unit health: the rail NIC's link state and the presence of the GPU's device nodes. */
#include <stdio.h>

#include "log.h"
#include "netlink.h"
#include "plugin.h"
#include "state.h"

static bool gpu_present(const Plugin *p, const Unit *u, const char **ret_reason) {
    char host[PATH_MAX];

    if (!u->gpu_devices) {
        *ret_reason = "no device node known for the GPU";
        return false;
    }
    for (char **d = u->gpu_devices; *d; d++) {
        snprintf(host, sizeof(host), "%s%s", p->config->dev_root, *d);
        if (access(host, F_OK) < 0) {
            *ret_reason = "GPU device node missing";
            return false;
        }
    }
    return true;
}

bool unit_health_now(const Plugin *p, const Unit *u, const char **ret_reason) {
    _cleanup_(netlink_closep) Netlink *own = NULL;
    Netlink *nl = p->nl;
    Link l;
    int r;

    *ret_reason = "ok";
    if (u->has_gpu && !gpu_present(p, u, ret_reason))
        return false;
    if (!u->health_netdev[0]) {
        *ret_reason = "NIC netdev unknown";
        return false;
    }
    r = nl ? 0 : netlink_open(-1, &own);
    if (r >= 0)
        r = link_get_by_name(nl ?: own, u->health_netdev, &l);
    if (r == -ENODEV && !u->is_vf && state_unit_attached(p->config->state_dir, u->id)) {
        /* railgate moved it into a pod: in use, not broken */
        *ret_reason = "NIC attached to a pod";
        return true;
    }
    /* a VF unit is as healthy as its PF's link: the VF's own is the pod's
     * (and follows the PF's where its link state is "auto") */
    if (r < 0) {
        *ret_reason = r != -ENODEV ? "NIC state unreadable"
                      : u->is_vf   ? "PF missing"
                                   : "NIC missing";
        return false;
    }
    if (!link_healthy(&l)) {
        if (l.flags & IFF_UP)
            *ret_reason = u->is_vf ? "PF has no carrier" : "NIC has no carrier";
        else
            *ret_reason = u->is_vf ? "PF link down" : "NIC link down";
        return false;
    }
    return true;
}

/* Re-evaluate unit i; marks its tenant dirty when its health changed. */
static void refresh_one(Plugin *p, size_t i, bool *dirty) {
    const Unit *u = &p->inv->units[i];
    const char *reason;
    bool now = unit_health_now(p, u, &reason);

    pthread_mutex_lock(&p->lock);
    bool changed = p->healthy[i] != now;
    p->healthy[i] = now;
    if (changed)
        p->health_changes++;
    pthread_mutex_unlock(&p->lock);
    if (!changed)
        return;
    if (p->health_ready)
        metrics_health_transition(p->config->tenants[u->tenant].name, now);
    dirty[u->tenant] = true;
    log_info(p->config->tenants[u->tenant].name, u->id, "%s: %s", now ? "Healthy" : "Unhealthy",
             reason);
}

/* The tenant's units by health, for the metrics. Main thread: it alone writes healthy[]. */
static void publish_units(const Plugin *p, const TenantServer *t) {
    unsigned healthy = 0;

    for (size_t i = 0; i < t->n_units; i++)
        healthy += p->healthy[t->units[i] - p->inv->units];
    metrics_units(t->name, healthy, (unsigned)t->n_units - healthy);
}

/* Tell the tenants whose units changed (every tenant at the first reading). */
static void broadcast_dirty(Plugin *p, const bool *dirty) {
    for (size_t t = 0; t < p->n_tenants; t++) {
        if (!dirty[p->tenants[t].tenant] && p->health_ready)
            continue;
        publish_units(p, &p->tenants[t]);
        if (dirty[p->tenants[t].tenant])
            tenant_server_broadcast(&p->tenants[t]);
    }
}

void plugin_health_refresh(Plugin *p, const char *netdev) {
    bool dirty[CONFIG_MAX_TENANTS] = {false};

    for (size_t i = 0; i < p->inv->n_units; i++) {
        const Unit *u = &p->inv->units[i];
        if (netdev && !streq(u->health_netdev, netdev) && !streq(u->netdev, netdev))
            continue;
        refresh_one(p, i, dirty);
    }
    broadcast_dirty(p, dirty);
    if (!netdev)
        p->health_ready = true;
}

void plugin_health_refresh_units(Plugin *p, const bool *which) {
    bool dirty[CONFIG_MAX_TENANTS] = {false};

    for (size_t i = 0; i < p->inv->n_units; i++)
        if (which[i])
            refresh_one(p, i, dirty);
    broadcast_dirty(p, dirty);
}
