/* SPDX-License-Identifier: Apache-2.0 */
/* A ResourceClaim from the API server, read as this node's DRA driver may trust it. */
#include <stdio.h>

#include "dra.h"
#include "jsonread.h"

static const char *str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);

    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* "req/sub" (a subrequest of firstAvailable) answers request "req" */
static int request_name(const char *request, char *buf, size_t n) {
    size_t len = strcspn(request, "/");

    if (len == 0 || len >= n)
        return -EINVAL;
    snprintf(buf, n, "%.*s", (int)len, request);
    return 0;
}

static int read_metadata(json_t *claim, const char *ns, const char *name, const char *uid,
                         RgError *err) {
    json_t *m = json_object_get(claim, "metadata");
    const char *got_uid = str(m, "uid"), *got_ns = str(m, "namespace"), *got_name = str(m, "name");

    if (!got_uid || !got_ns || !got_name)
        return rg_error(err, -EINVAL, 0, "the API server's claim has no uid, namespace or name");
    if (!streq(got_ns, ns) || !streq(got_name, name))
        return rg_error(err, -EINVAL, 0, "the API server answered for claim %.64s/%.64s", got_ns,
                        got_name);
    /* the claim kubelet means was deleted and made again under its name */
    if (!streq(got_uid, uid))
        return rg_error(err, -EINVAL, 0,
                        "claim %s/%s is now uid %.64s, not %.64s (replaced): not prepared", ns,
                        name, got_uid, uid);
    return 0;
}

static int read_consumer(json_t *status, PreparedClaim *c, RgError *err) {
    json_t *reserved = json_object_get(status, "reservedFor"), *r0;
    const char *uid, *resource, *group;

    if (!json_is_array(reserved) || json_array_size(reserved) == 0)
        return rg_error(err, -EINVAL, 0, "claim %s/%s is reserved for no pod yet", c->ns, c->name);
    if (json_array_size(reserved) > CLAIM_MAX_PODS)
        return rg_error(err, -EINVAL, 0,
                        "claim %s/%s is reserved for %zu consumers: a unit's NIC moves into one "
                        "pod, so a railgate claim cannot be shared",
                        c->ns, c->name, json_array_size(reserved));
    r0 = json_array_get(reserved, 0);
    uid = str(r0, "uid");
    resource = str(r0, "resource");
    group = str(r0, "apiGroup");
    if (!resource || !streq(resource, "pods") || (group && *group))
        return rg_error(err, -EINVAL, 0, "claim %s/%s is reserved for a %.64s, not a pod", c->ns,
                        c->name, resource ? resource : "(nothing)");
    if (!uid || !claim_uid_valid(uid))
        return rg_error(err, -EINVAL, 0, "claim %s/%s is reserved for a pod without a valid uid",
                        c->ns, c->name);
    snprintf(c->pod_uid, sizeof(c->pod_uid), "%s", uid);
    return 0;
}

/* One result of this driver: a unit of this node's pool, of the claim's tenant, given once. */
static int read_result(const DraDriver *d, json_t *res, size_t tenant, PreparedClaim *c,
                       RgError *err) {
    const char *pool = str(res, "pool"), *device = str(res, "device"),
               *request = str(res, "request");
    ClaimDevice *cd;
    const Unit *u;

    if (!pool || !device || !request)
        return rg_error(err, -EINVAL, 0, "claim %s/%s: a result without pool, device or request",
                        c->ns, c->name);
    if (!streq(pool, d->node))
        return rg_error(err, -EINVAL, 0,
                        "claim %s/%s: device %.64s is of pool %.64s, not this node's (%s)", c->ns,
                        c->name, device, pool, d->node);
    if (json_is_true(json_object_get(res, "adminAccess")))
        return rg_error(err, -EPERM, 0,
                        "claim %s/%s: adminAccess to %.64s refused: a unit's NIC moves into one "
                        "pod, never into two",
                        c->ns, c->name, device);
    u = inventory_find(d->inv, device);
    if (!u)
        return rg_error(err, -EINVAL, 0, "claim %s/%s: %.64s is not a unit of this node", c->ns,
                        c->name, device);
    if (u->tenant != tenant)
        return rg_error(err, -EPERM, 0,
                        "claim %s/%s: %s is a unit of tenant %s, and namespace %s is not one of "
                        "that tenant's; nothing was prepared",
                        c->ns, c->name, u->id, d->config->tenants[u->tenant].name, c->ns);
    for (size_t i = 0; i < c->n_devices; i++)
        if (streq(c->devices[i].unit, u->id))
            return rg_error(err, -EINVAL, 0, "claim %s/%s: %s is allocated twice", c->ns, c->name,
                            u->id);
    if (c->n_devices == CLAIM_MAX_DEVICES)
        return rg_error(err, -EINVAL, 0, "claim %s/%s: more than %d results", c->ns, c->name,
                        CLAIM_MAX_DEVICES);
    cd = &c->devices[c->n_devices];
    if (request_name(request, cd->request, sizeof(cd->request)) < 0)
        return rg_error(err, -EINVAL, 0, "claim %s/%s: request name \"%.64s\" is not one", c->ns,
                        c->name, request);
    snprintf(cd->unit, sizeof(cd->unit), "%s", u->id);
    c->n_devices++;
    return 0;
}

int dra_claim_read(const DraDriver *d, json_t *claim, const char *ns, const char *name,
                   const char *uid, PreparedClaim *ret, RgError *err) {
    PreparedClaim c = {0};
    json_t *status = json_object_get(claim, "status"), *results, *res;
    const TenantConfig *t;
    size_t i, tenant;
    int r;

    r = read_metadata(claim, ns, name, uid, err);
    if (r < 0)
        return r;
    snprintf(c.uid, sizeof(c.uid), "%s", uid);
    snprintf(c.ns, sizeof(c.ns), "%s", ns);
    snprintf(c.name, sizeof(c.name), "%s", name);
    snprintf(c.pool, sizeof(c.pool), "%s", d->node);
    results = json_object_get(json_object_get(json_object_get(status, "allocation"), "devices"),
                              "results");
    if (!json_is_array(results))
        return rg_error(err, -EINVAL, 0, "claim %s/%s is not allocated", ns, name);
    /* the tenant comes from the namespace and the node config, nothing else */
    t = config_namespace_tenant(d->config, ns);
    tenant = t ? (size_t)(t - d->config->tenants) : SIZE_MAX;
    json_array_foreach(results, i, res) {
        const char *driver = str(res, "driver");
        if (!driver || !streq(driver, d->driver))
            continue;
        if (!t)
            return rg_error(err, -EPERM, 0,
                            "claim %s/%s: namespace %s is of no tenant of this node; nothing was "
                            "prepared",
                            ns, name, ns);
        r = read_result(d, res, tenant, &c, err);
        if (r < 0)
            return r;
    }
    if (c.n_devices > 0) {
        snprintf(c.tenant, sizeof(c.tenant), "%s", t->name);
        r = read_consumer(status, &c, err);
        if (r < 0)
            return r;
    }
    *ret = c;
    return 0;
}
