/* SPDX-License-Identifier: Apache-2.0 */
/* Prepared claims kubelet will never unprepare: found by the API server and kubelet, then freed. */
#include <stdio.h>

#include "cdi.h"
#include "dra.h"
#include "log.h"
#include "podresources.h"
#include "state.h"
#include "strv.h"

#define STALE_KUBELET_TIMEOUT_MS 3000 /* the DRA loop waits: keep it short */

/* Does the API server say the record's claim serves its pod no more?
 * 1: deleted, made again under its name, or no longer reserved for the
 * pod; 0: it still does; < 0: cannot tell. */
static int api_says_done(DraDriver *d, const PreparedClaim *c, RgError *err) {
    _cleanup_free_ char *path = NULL, *ns = kube_escape(c->ns), *name = kube_escape(c->name);
    json_t *claim = NULL, *reserved, *r0;
    const char *uid;
    size_t i;
    int r;

    if (!ns || !name ||
        asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns, name) < 0)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    r = kube_get(d->kube, path, &claim, err);
    if (r == -ENOENT)
        return 1;
    if (r < 0)
        return r;
    uid = json_string_value(json_object_get(json_object_get(claim, "metadata"), "uid"));
    r = !uid || !streq(uid, c->uid);
    reserved = json_object_get(json_object_get(claim, "status"), "reservedFor");
    json_array_foreach(reserved, i, r0) {
        const char *pod = json_string_value(json_object_get(r0, "uid"));
        if (pod && streq(pod, c->pod_uid))
            goto out;
    }
    r = 1;
out:
    json_decref(claim);
    return r;
}

/* Under the state lock: the record is still the one judged, and none of
 * its NICs is in a pod (its DEL has run, or it never had an ADD); then
 * its spec and record go, as an unprepare would take them. */
static int drop(DraDriver *d, const PreparedClaim *judged) {
    const char *state = d->config->state_dir;
    _cleanup_close_ int lock = state_lock(state);
    PreparedClaim c;
    int r;

    if (lock < 0)
        return lock;
    r = claims_load(state, judged->uid, &c);
    if (r < 0)
        return r == -ENOENT ? 0 : r; /* kubelet unprepared it meanwhile */
    if (!streq(c.pod_uid, judged->pod_uid))
        return 0;
    for (size_t i = 0; i < c.n_devices; i++)
        if (state_unit_attached(state, c.devices[i].unit))
            return -EBUSY;
    r = cdi_spec_remove(d->config->cdi_dir, d->driver, c.uid);
    if (r >= 0)
        r = claims_remove(state, c.uid);
    return r < 0 ? r : 1;
}

int dra_claims_sweep(DraDriver *d, unsigned *ret_freed, RgError *err) {
    _cleanup_(strv_freep) char **uids = NULL, **in_use = NULL;
    PreparedClaim *done = NULL;
    size_t n_done = 0;
    unsigned freed = 0;
    int r;

    r = claims_list(d->config->state_dir, &uids);
    if (r < 0)
        return rg_error(err, r, 0, "cannot list the prepared claims: %s", strerror(-r));
    for (char **u = uids; *u; u++) {
        PreparedClaim c;
        RgError one = {0};
        if (claims_load(d->config->state_dir, *u, &c) < 0 || api_says_done(d, &c, &one) != 1)
            continue; /* an API server that cannot say keeps the record */
        PreparedClaim *more = realloc(done, (n_done + 1) * sizeof(*done));
        if (!more) {
            free(done);
            return rg_error(err, -ENOMEM, 0, "out of memory");
        }
        done = more;
        done[n_done++] = c;
    }
    /* kubelet's view as well: a claim a container still uses stays */
    if (n_done > 0 && !d->podresources)
        r = rg_error(err, -ENOTCONN, 0, "kubelet's PodResources API is not known: nothing freed");
    else if (n_done > 0)
        r = podresources_claims_in_use(d->podresources, STALE_KUBELET_TIMEOUT_MS, &in_use, err);
    for (size_t i = 0; r >= 0 && i < n_done; i++) {
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", done[i].ns, done[i].name);
        if (in_use && strv_contains(in_use, key))
            continue;
        int k = drop(d, &done[i]);
        if (k > 0) {
            freed++;
            d->freed++;
            log_warn(done[i].tenant, NULL,
                     "claim %s/%s (%s) of pod %s was not unprepared, and the API server and "
                     "kubelet are done with it: its units are free again",
                     done[i].ns, done[i].name, done[i].uid, done[i].pod_uid);
        } else if (k < 0 && k != -EBUSY)
            r = rg_error(err, k, 0, "claim %s/%s: %s", done[i].ns, done[i].name, strerror(-k));
    }
    free(done);
    if (ret_freed)
        *ret_freed = freed;
    return r < 0 ? r : 0;
}
