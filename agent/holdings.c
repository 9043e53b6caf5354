/* SPDX-License-Identifier: Apache-2.0 */
/* Who holds what: the lookup the node agent answers with, and the source behind it. */
#include "holdings.h"

#include <stdio.h>

#include "agentproto.h"
#include "claims.h"
#include "podresources.h"
#include "strv.h"

struct Holdings {
    PodResources *podresources; /* device-plugin mode */
    const NodeConfig *config;   /* DRA mode: prepared claims in its state dir */
    void (*changed)(void *userdata);
    void *userdata;
};

int holdings_new(const NodeConfig *c, const char *pod_resources, Holdings **ret) {
    _cleanup_(holdings_freep) Holdings *h = calloc(1, sizeof(*h));
    _cleanup_(strv_freep) char **resources = NULL;
    int r;

    if (!h)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_tenants; i++)
        if (strv_push(&resources, c->tenants[i].resource) < 0)
            return -ENOMEM;
    r = podresources_new(pod_resources, resources, &h->podresources);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(h);
    return 0;
}

int holdings_new_claims(const NodeConfig *c, void (*changed)(void *userdata), void *userdata,
                        Holdings **ret) {
    Holdings *h = calloc(1, sizeof(*h));

    if (!h)
        return -ENOMEM;
    *h = (Holdings){.config = c, .changed = changed, .userdata = userdata};
    *ret = h;
    return 0;
}

void holdings_stop(Holdings *h) {
    if (h && h->podresources)
        podresources_stop(h->podresources);
}

void holdings_free(Holdings *h) {
    if (!h)
        return;
    podresources_free(h->podresources);
    free(h);
}

void holdings_attachments_changed(Holdings *h) {
    if (h && h->changed)
        h->changed(h->userdata);
}

/* The records kubelet's NodePrepare left, read now (each is written whole);
 * the CNI checks them again under the state lock when it claims the units. */
static int claims_pod_units(const Holdings *h, const PodRef *pod, char ***ret_ids,
                            char **ret_resource, RgError *err) {
    _cleanup_(strv_freep) char **units = NULL;
    _cleanup_free_ char *resource = NULL;
    const TenantConfig *t;
    char tenant[64];
    int r;

    if (!pod->uid || !*pod->uid)
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "pod %s/%s: DRA mode knows pods by uid, and the question has none "
                        "(K8S_POD_UID in CNI_ARGS)",
                        pod->ns, pod->name);
    if (!claim_uid_valid(pod->uid))
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "pod %s/%s: uid \"%.64s\" is not a Kubernetes uid", pod->ns, pod->name,
                        pod->uid);
    r = claims_units_of_pod(h->config->state_dir, pod->uid, pod->ns, &units, tenant,
                            sizeof(tenant));
    if (r == -EXDEV)
        return rg_error(err, r, AGENT_STATUS__CONFLICT,
                        "pod %s/%s (%s): its prepared claims are of another namespace or of two "
                        "tenants",
                        pod->ns, pod->name, pod->uid);
    if (r < 0)
        return rg_error(err, r, AGENT_STATUS__INTERNAL, "cannot read the prepared claims: %s",
                        strerror(-r));
    if (strv_length(units) > AGENT_MAX_IDS)
        return rg_error(err, -E2BIG, AGENT_STATUS__TOO_MANY,
                        "pod %s/%s holds more than %d railgate units", pod->ns, pod->name,
                        AGENT_MAX_IDS);
    if (units[0]) {
        t = config_find_tenant(h->config, tenant);
        if (!t)
            return rg_error(err, -ENOENT, AGENT_STATUS__INTERNAL,
                            "pod %s/%s: its claims were prepared for tenant %s, which the node "
                            "config has no more",
                            pod->ns, pod->name, tenant);
        resource = strdup(t->resource);
        if (!resource)
            return -ENOMEM;
    }
    *ret_ids = TAKE_PTR(units);
    *ret_resource = TAKE_PTR(resource);
    return 0;
}

int holdings_pod_units(Holdings *h, const PodRef *pod, int timeout_ms, char ***ret_ids,
                       char **ret_resource, RgError *err) {
    if (!h->podresources)
        return claims_pod_units(h, pod, ret_ids, ret_resource, err);
    return podresources_pod_units(h->podresources, timeout_ms, pod->ns, pod->name, ret_ids,
                                  ret_resource, err);
}
