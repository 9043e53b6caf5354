/* SPDX-License-Identifier: Apache-2.0 */
/* NodePrepareResources and NodeUnprepareResources: claims recorded, CDI specs written and removed.
 */
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "agentmetrics.h"
#include "arena.h"
#include "cdi.h"
#include "dra.h"
#include "dra.pb-c.h"
#include "edits.h"
#include "failpoint.h"
#include "log.h"
#include "pb.h"
#include "state.h"
#include "strv.h"

static const Unit **claim_units(const DraDriver *d, const PreparedClaim *c) {
    const Unit **units = calloc(c->n_devices ? c->n_devices : 1, sizeof(*units));

    for (size_t i = 0; units && i < c->n_devices; i++) {
        units[i] = inventory_find(d->inv, c->devices[i].unit);
        if (!units[i]) {
            free(units);
            return NULL;
        }
    }
    return units;
}

/* The claim's CDI spec: its environment once, each unit's device nodes. */
static int write_spec(const DraDriver *d, const PreparedClaim *c, const Unit **units,
                      ContainerEdits *per, RgError *err) {
    _cleanup_(container_edits_done) ContainerEdits all = {0};
    _cleanup_free_ CdiUnit *cu = calloc(c->n_devices ? c->n_devices : 1, sizeof(*cu));
    int r;

    if (!cu)
        return -ENOMEM;
    r = container_edits_build(d->config, c->tenant, units, c->n_devices, &all);
    for (size_t i = 0; r >= 0 && i < c->n_devices; i++) {
        r = container_edits_build(d->config, c->tenant, &units[i], 1, &per[i]);
        cu[i] = (CdiUnit){.unit = units[i]->id, .e = &per[i]};
    }
    if (r < 0)
        return rg_error(err, r, 0, "out of memory");
    return cdi_spec_write(d->config->cdi_dir, d->driver, d->config->dev_root, c->uid, &all, cu,
                          c->n_devices, err);
}

/* Kubelet's answer for a prepared claim: per unit its request, pool,
 * name and CDI ids (railgate's, and the GPU's under cdiKind). */
static int answer(const DraDriver *d, const PreparedClaim *c, const ContainerEdits *per, Arena *a,
                  Dra__NodePrepareResourceResponse *resp) {
    resp->devices = arena_array(a, Dra__Device *, c->n_devices);
    if (!resp->devices)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_devices; i++) {
        Dra__Device *dev = arena_new(a, Dra__Device);
        size_t n_cdi = 1 + strv_length(per[i].cdi);
        char id[512];
        if (!dev)
            return -ENOMEM;
        dra__device__init(dev);
        dev->request_names = arena_array(a, char *, 1);
        dev->cdi_device_ids = arena_array(a, char *, n_cdi);
        if (!dev->request_names || !dev->cdi_device_ids ||
            cdi_device_id(d->driver, c->uid, c->devices[i].unit, id, sizeof(id)) < 0)
            return -ENOMEM;
        dev->request_names[dev->n_request_names++] = arena_strdup(a, c->devices[i].request);
        dev->pool_name = arena_strdup(a, c->pool);
        dev->device_name = arena_strdup(a, c->devices[i].unit);
        dev->cdi_device_ids[dev->n_cdi_device_ids++] = arena_strdup(a, id);
        for (char **p = per[i].cdi; p && *p; p++)
            dev->cdi_device_ids[dev->n_cdi_device_ids++] = arena_strdup(a, *p);
        resp->devices[resp->n_devices++] = dev;
    }
    return a->failed ? -ENOMEM : 0;
}

/* A claim kubelet asked to prepare that another record already gives a
 * unit of, or whose unit's NIC is still in a pod (of a claim unprepared too
 * early, or of a pod the device plugin served before the node switched
 * mode): its GPU would be handed to two pods. Under the state lock. */
static int check_free(DraDriver *d, const PreparedClaim *c, RgError *err) {
    char holder[STATE_KEY_MAX + 1];

    for (size_t i = 0; i < c->n_devices; i++)
        if (state_unit_attached(d->config->state_dir, c->devices[i].unit)) {
            if (state_unit_holder(d->config->state_dir, c->devices[i].unit, holder,
                                  sizeof(holder)) < 0)
                snprintf(holder, sizeof(holder), "?");
            return rg_error(err, -EBUSY, 0,
                            "claim %s/%s: %s is still in a pod (attachment %s): not prepared "
                            "until the CNI's DEL brings it home",
                            c->ns, c->name, c->devices[i].unit, holder);
        }
    for (size_t i = 0; i < c->n_devices; i++)
        if (claims_unit_holder(d->config->state_dir, c->devices[i].unit, c->uid, holder,
                               sizeof(holder)) >= 0) {
            /* kubelet retries; meanwhile the agent checks whether that claim is stale */
            atomic_store(&d->sweep_soon, true);
            return rg_error(err, -EBUSY, 0,
                            "claim %s/%s: %s is still prepared for claim %s (not unprepared yet; "
                            "checking whether the API server and kubelet are done with it)",
                            c->ns, c->name, c->devices[i].unit, holder);
        }
    return 0;
}

static int fetch(DraDriver *d, const Dra__Claim *k, PreparedClaim *c, RgError *err) {
    _cleanup_free_ char *path = NULL, *ns = kube_escape(k->namespace_),
                        *name = kube_escape(k->name);
    json_t *claim = NULL;
    int r;

    if (!ns || !name ||
        asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns, name) < 0)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    r = kube_get(d->kube, path, &claim, err);
    if (r < 0)
        return r;
    r = dra_claim_read(d, claim, k->namespace_, k->name, k->uid, c, err);
    json_decref(claim);
    return r;
}

/* One claim, under the state lock: from its record when it has one
 * (kubelet repeats a prepare after its restart), else from the API
 * server, recorded before it is answered. */
static int prepare_one(DraDriver *d, const Dra__Claim *k, uint64_t deadline, Arena *a,
                       Dra__NodePrepareResourceResponse *resp, RgError *err) {
    const char *state = d->config->state_dir;
    _cleanup_close_ int lock = -EBADF;
    _cleanup_free_ const Unit **units = NULL;
    _cleanup_free_ ContainerEdits *per = NULL;
    PreparedClaim c;
    bool fresh = false;
    int r;

    if (!k->uid || !claim_uid_valid(k->uid) || !k->namespace_ || !*k->namespace_ || !k->name ||
        !*k->name)
        return rg_error(err, -EINVAL, 0, "a claim without a valid uid, namespace or name");
    lock = state_lock(state);
    if (lock < 0)
        return rg_error(err, lock, 0, "cannot lock %s: %s", state, strerror(-lock));
    r = claims_load(state, k->uid, &c);
    if (r >= 0 && (!streq(c.ns, k->namespace_) || !streq(c.name, k->name)))
        return rg_error(err, -EINVAL, 0, "claim %s is recorded as %s/%s, not %s/%s", k->uid, c.ns,
                        c.name, k->namespace_, k->name);
    if (r == -ENOENT) {
        if (clock_monotonic_ms() >= deadline)
            return rg_error(err, -ETIMEDOUT, 0,
                            "claim %s/%s not read: this batch took too long, try again",
                            k->namespace_, k->name);
        r = fetch(d, k, &c, err);
        if (r < 0)
            return r;
        r = check_free(d, &c, err);
        if (r < 0)
            return r;
        fresh = true;
    } else if (r < 0)
        return rg_error(err, r, 0, "claim %s: its record is unreadable: %s", k->uid, strerror(-r));

    units = claim_units(d, &c);
    per = calloc(c.n_devices ? c.n_devices : 1, sizeof(*per));
    if (!units || !per)
        return rg_error(err, -ENOMEM, 0, "claim %s: a recorded unit is gone or out of memory",
                        k->uid);
    if (fresh && c.n_devices > 0) {
        r = claims_save(state, &c);
        if (r < 0)
            return rg_error(err, r, 0, "claim %s/%s: cannot record it: %s", c.ns, c.name,
                            strerror(-r));
    }
    r = failpoint("dra-prepare-recorded");
    if (r >= 0 && c.n_devices > 0)
        r = write_spec(d, &c, units, per, err);
    if (r >= 0)
        r = answer(d, &c, per, a, resp);
    for (size_t i = 0; i < c.n_devices; i++)
        container_edits_done(&per[i]);
    if (r < 0 && fresh) {
        /* nothing of a failed first prepare stays: kubelet may never unprepare it */
        (void)cdi_spec_remove(d->config->cdi_dir, d->driver, c.uid);
        (void)claims_remove(state, c.uid);
    }
    if (r < 0 && !err->msg[0])
        rg_error(err, r, 0, "claim %s/%s: %s", c.ns, c.name, strerror(-r));
    return r;
}

static int on_prepare(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                      size_t *ret_len, RgError *err) {
    DraDriver *d = userdata;
    _cleanup_pb_ Dra__NodePrepareResourcesRequest *pr =
        dra__node_prepare_resources_request__unpack(NULL, len, req);
    Dra__NodePrepareResourcesResponse resp = DRA__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
    _cleanup_arena_ Arena a = {0};
    uint64_t deadline = clock_monotonic_ms() + DRA_PREPARE_BUDGET_MS, start = metrics_clock();
    unsigned ok = 0, failed = 0;

    if (!pr)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed NodePrepareResourcesRequest");
    if (pr->n_claims > DRA_MAX_CLAIMS)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "%zu claims in one request, at most %d", pr->n_claims, DRA_MAX_CLAIMS);
    resp.claims = arena_array(&a, Dra__NodePrepareResourcesResponse__ClaimsEntry *, pr->n_claims);
    if (!resp.claims)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    /* every claim gets an entry: one kubelet does not find is prepared again */
    for (size_t i = 0; i < pr->n_claims; i++) {
        const Dra__Claim *k = pr->claims[i];
        Dra__NodePrepareResourcesResponse__ClaimsEntry *e =
            arena_new(&a, Dra__NodePrepareResourcesResponse__ClaimsEntry);
        Dra__NodePrepareResourceResponse *one = arena_new(&a, Dra__NodePrepareResourceResponse);
        RgError cerr = {0};
        uint64_t claim_start = clock_monotonic_ns();
        if (!e || !one)
            return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
        dra__node_prepare_resources_response__claims_entry__init(e);
        dra__node_prepare_resource_response__init(one);
        e->key = arena_strdup(&a, k->uid ? k->uid : "");
        e->value = one;
        if (prepare_one(d, k, deadline, &a, one, &cerr) < 0) {
            one->n_devices = 0;
            one->error = arena_strdup(&a, cerr.msg);
            d->refused++;
            failed++;
            log_warn(NULL, NULL, "NodePrepareResources: %s", cerr.msg);
        } else {
            d->prepared++;
            ok++;
            /* its own time in the call (kubelet sends a pod's claims in one) */
            log_info(NULL, NULL, "claim %s/%s (%s) prepared: %zu units in %.3f ms", k->namespace_,
                     k->name, k->uid, one->n_devices,
                     (double)(clock_monotonic_ns() - claim_start) / 1e6);
        }
        resp.claims[resp.n_claims++] = e;
    }
    metrics_dra_observe(true, ok, failed, metrics_seconds_since(start));
    if (a.failed)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

/* Unprepare once no NIC of the claim is in a pod any more: the CNI's DEL
 * runs before kubelet unprepares; until it has brought every NIC home the
 * claim stays (and kubelet retries). Under the state lock, which every
 * claim of a unit by the CNI takes too. */
static int unprepare_one(DraDriver *d, const Dra__Claim *k, RgError *err) {
    const char *state = d->config->state_dir;
    _cleanup_close_ int lock = -EBADF;
    PreparedClaim c;
    int r;

    if (!k->uid || !claim_uid_valid(k->uid))
        return rg_error(err, -EINVAL, 0, "a claim without a valid uid");
    lock = state_lock(state);
    if (lock < 0)
        return rg_error(err, lock, 0, "cannot lock %s: %s", state, strerror(-lock));
    r = claims_load(state, k->uid, &c);
    if (r == -ENOENT) {
        /* never prepared here, or already unprepared: its spec goes if left */
        r = cdi_spec_remove(d->config->cdi_dir, d->driver, k->uid);
        return r < 0 ? rg_error(err, r, 0, "claim %s: %s", k->uid, strerror(-r)) : 0;
    }
    if (r < 0)
        return rg_error(err, r, 0, "claim %s: its record is unreadable: %s", k->uid, strerror(-r));
    for (size_t i = 0; i < c.n_devices; i++)
        if (state_unit_attached(state, c.devices[i].unit))
            return rg_error(err, -EBUSY, 0,
                            "claim %s/%s: %s is still in a pod (the CNI's DEL has not brought it "
                            "home): not unprepared yet",
                            c.ns, c.name, c.devices[i].unit);
    r = failpoint("dra-unprepare-checked");
    if (r >= 0)
        r = cdi_spec_remove(d->config->cdi_dir, d->driver, c.uid);
    if (r >= 0)
        r = claims_remove(state, c.uid);
    if (r < 0)
        return rg_error(err, r, 0, "claim %s/%s: %s", c.ns, c.name, strerror(-r));
    return 0;
}

static int on_unprepare(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, RgError *err) {
    DraDriver *d = userdata;
    _cleanup_pb_ Dra__NodeUnprepareResourcesRequest *ur =
        dra__node_unprepare_resources_request__unpack(NULL, len, req);
    Dra__NodeUnprepareResourcesResponse resp = DRA__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
    _cleanup_arena_ Arena a = {0};
    uint64_t start = metrics_clock();
    unsigned ok = 0, failed = 0;

    if (!ur)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed NodeUnprepareResourcesRequest");
    if (ur->n_claims > DRA_MAX_CLAIMS)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "%zu claims in one request, at most %d", ur->n_claims, DRA_MAX_CLAIMS);
    resp.claims = arena_array(&a, Dra__NodeUnprepareResourcesResponse__ClaimsEntry *, ur->n_claims);
    if (!resp.claims)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < ur->n_claims; i++) {
        const Dra__Claim *k = ur->claims[i];
        Dra__NodeUnprepareResourcesResponse__ClaimsEntry *e =
            arena_new(&a, Dra__NodeUnprepareResourcesResponse__ClaimsEntry);
        Dra__NodeUnprepareResourceResponse *one = arena_new(&a, Dra__NodeUnprepareResourceResponse);
        RgError cerr = {0};
        if (!e || !one)
            return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
        dra__node_unprepare_resources_response__claims_entry__init(e);
        dra__node_unprepare_resource_response__init(one);
        e->key = arena_strdup(&a, k->uid ? k->uid : "");
        e->value = one;
        if (unprepare_one(d, k, &cerr) < 0) {
            one->error = arena_strdup(&a, cerr.msg);
            failed++;
            log_warn(NULL, NULL, "NodeUnprepareResources: %s", cerr.msg);
        } else {
            d->unprepared++;
            ok++;
            log_info(NULL, NULL, "claim %s/%s (%s) unprepared", k->namespace_, k->name, k->uid);
        }
        resp.claims[resp.n_claims++] = e;
    }
    metrics_dra_observe(false, ok, failed, metrics_seconds_since(start));
    if (a.failed)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    return rpc_reply_pack(&resp.base, ret, ret_len, err);
}

/* kubelet uses the first version GetInfo lists that it speaks: both serve the same. */
const RpcMethod dra_plugin_methods[] = {
    {DRA_SERVICE_V1 "NodePrepareResources", RPC_KIND_UNARY, on_prepare},
    {DRA_SERVICE_V1 "NodeUnprepareResources", RPC_KIND_UNARY, on_unprepare},
    {DRA_SERVICE_V1BETA1 "NodePrepareResources", RPC_KIND_UNARY, on_prepare},
    {DRA_SERVICE_V1BETA1 "NodeUnprepareResources", RPC_KIND_UNARY, on_unprepare},
};
const size_t dra_n_plugin_methods = ELEMENTSOF(dra_plugin_methods);
