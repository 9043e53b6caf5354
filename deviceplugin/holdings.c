/* Who holds what: the lookup the node agent answers with, and the source behind it. */
#include "holdings.h"

#include <stdio.h>

#include "podresources.h"
#include "strv.h"

struct Holdings {
    PodResources *podresources;
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

void holdings_stop(Holdings *h) {
    if (h)
        podresources_stop(h->podresources);
}

void holdings_free(Holdings *h) {
    if (!h)
        return;
    podresources_free(h->podresources);
    free(h);
}

int holdings_pod_units(Holdings *h, const PodRef *pod, int timeout_ms, char ***ret_ids,
                       char **ret_resource, RgError *err) {
    return podresources_pod_units(h->podresources, timeout_ms, pod->ns, pod->name, ret_ids,
                                  ret_resource, err);
}
