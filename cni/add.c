/* SPDX-License-Identifier: Apache-2.0 */
/* ADD: the pod's units from the node agent, the tenant check, then each NIC into the pod. */
#include <net/if.h>
#include <stdio.h>
#include <unistd.h>

#include "agentclient.h"
#include "anchor.h"
#include "cidr.h"
#include "clock.h"
#include "commands.h"
#include "failpoint.h"
#include "ipam.h"
#include "locate.h"
#include "log.h"
#include "lowers.h"
#include "netns.h"
#include "nic.h"
#include "nicns.h"
#include "rdmadev.h"
#include "result.h"
#include "state.h"
#include "strv.h"
#include "teardown.h"
#include "vf.h"

typedef struct AddJob {
    CniContext *c;
    const TenantConfig *tenant;
    Inventory *inv;
    const Unit **units;
    size_t n_units;
    char **ipam_addrs; /* from the IPAM plugin, in unit order */
    Attachment *a;
    RgError *err;
} AddJob;

static void job_done(AddJob *j) {
    inventory_free(j->inv);
    free(j->units);
    strv_free(j->ipam_addrs);
    attachment_free(j->a);
}

/* Pass-through for a pod without units: prevResult as it came. */
static json_t *passthrough(const CniContext *c) {
    json_t *r = c->conf->prev_result ? json_deep_copy(c->conf->prev_result)
                                     : json_pack("{s:[], s:[]}", "interfaces", "ips");

    if (r)
        json_object_set_new(r, "cniVersion", json_string(c->conf->cni_version));
    return r;
}

/* Fail closed: the resource must be a tenant's (by the node config, whatever
 * the agent said), and the namespace one of that tenant's. */
static int check_tenant(AddJob *j, const char *resource, char *const *ids) {
    const CniEnv *e = j->c->env;
    _cleanup_free_ char *list = strv_join(ids, ",");

    j->tenant = config_resource_tenant(j->c->node, resource);
    if (!j->tenant)
        return rg_error(j->err, -EPERM, CNI_ERR_TENANT,
                        "pod %s/%s holds %s of resource %s, which belongs to no tenant of the "
                        "node config; nothing was moved",
                        e->pod_ns, e->pod_name, list ? list : "units", resource);
    j->c->tenant = j->tenant->name;
    if (!strv_contains(j->tenant->namespaces, e->pod_ns))
        return rg_error(j->err, -EPERM, CNI_ERR_TENANT,
                        "pod %s/%s holds %s of tenant %s, and namespace %s is not one of that "
                        "tenant's; nothing was moved",
                        e->pod_ns, e->pod_name, list ? list : "units", j->tenant->name, e->pod_ns);
    return 0;
}

/* rail order, then VF: the order IPAM ranges are given in (whatever order
 * the published file lists units in) */
static int unit_cmp(const void *a, const void *b) {
    const Unit *x = *(const Unit *const *)a, *y = *(const Unit *const *)b;

    if (x->rail != y->rail)
        return x->rail < y->rail ? -1 : 1;
    return x->vf < y->vf ? -1 : x->vf > y->vf;
}

/* Kubelet's ids to units of this tenant; a Multus deviceID narrows them to
 * one, and must be one of them. */
static int resolve_units(AddJob *j, char *const *ids) {
    const char *want = j->c->conf->device_id;
    size_t n = strv_length(ids);
    size_t t = (size_t)(j->tenant - j->c->node->tenants);

    j->units = calloc(n ? n : 1, sizeof(*j->units));
    if (!j->units)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const Unit *u = inventory_find(j->inv, ids[i]);
        if (!u || u->tenant != t)
            return rg_error(j->err, -ENODEV, CNI_ERR_DEVICE,
                            "kubelet allocated \"%s\", which is not a unit of %s on this node",
                            ids[i], j->tenant->resource);
        if (want && !streq(want, u->id) && !streq(want, u->nic_pci))
            continue;
        j->units[j->n_units++] = u;
    }
    if (want && j->n_units == 0) {
        _cleanup_free_ char *list = strv_join(ids, ", ");
        return rg_error(j->err, -EPERM, CNI_ERR_DEVICE,
                        "deviceID \"%s\" is not one of the pod's units (%s); nothing was moved",
                        want, list ? list : "");
    }
    qsort(j->units, j->n_units, sizeof(*j->units), unit_cmp);
    return 0;
}

/* The agent refused such a node at its start; links may have changed
 * since (a macvlan made on another's lower): checked again, on the node's
 * links now, before anything is claimed or moved. */
static int check_lowers(AddJob *j) {
    int r = rail_lowers_check_node(j->inv, j->units, j->n_units, j->err);
    char why[sizeof(j->err->msg)];

    if (r >= 0)
        return 0;
    snprintf(why, sizeof(why), "%s", j->err->msg);
    if (r == -EADDRINUSE)
        return rg_error(j->err, r, CNI_ERR_INVALID_CONFIG, "node config %s: %s; nothing was moved",
                        j->c->node->path, why);
    return rg_error(j->err, r, CNI_ERR_IO, "%s; nothing was moved", why);
}

static AddressMode unit_addressing(const Unit *u) {
    return u->rail_cfg ? u->rail_cfg->address_mode : ADDRESS_MODE_STATIC;
}

/* The addresses of an IPAM result, in order; fewer than need is a failure. */
static int ipam_addresses(AddJob *j, json_t *res, size_t need) {
    json_t *ip;
    size_t i;

    json_array_foreach(json_object_get(res, "ips"), i, ip) {
        const char *addr = json_string_value(json_object_get(ip, "address"));
        if (addr && strv_push(&j->ipam_addrs, addr) < 0)
            return -ENOMEM;
    }
    if (strv_length(j->ipam_addrs) < need)
        return rg_error(j->err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "ipam: plugin %s gave %zu addresses for %zu rails", j->tenant->ipam_type,
                        strv_length(j->ipam_addrs), need);
    return 0;
}

/* One address per IPAM-addressed unit, in rail order (host-local with one
 * range set per rail gives exactly that), from the tenant's plugin in the
 * node config. Its config is recorded before it runs, so a crash from here
 * on leaves DEL and GC what they need to release it. */
static int run_ipam(AddJob *j) {
    RgError undo = {0};
    json_auto_t *res = NULL;
    size_t need = 0;
    int r;

    for (size_t i = 0; i < j->n_units; i++)
        need += unit_addressing(j->units[i]) == ADDRESS_MODE_IPAM;
    if (need == 0)
        return 0;
    if (!j->tenant->ipam) /* the node config refuses this; a stale inventory could not */
        return rg_error(j->err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "tenant %s has rails on \"addressing\": \"ipam\" and no \"ipam\" in the "
                        "node config",
                        j->tenant->name);
    r = ipam_conf_negotiate(j->c, j->tenant, &j->a->ipam_conf);
    if (r < 0)
        return r;
    j->a->ipam = true;
    /* under the state lock, as GC forwards to IPAM under it (see gc.c) */
    _cleanup_close_ int lock = state_lock(j->c->node->state_dir);
    if (lock < 0)
        return rg_error(j->err, lock, CNI_ERR_IO, "cannot lock the state dir: %s", strerror(-lock));
    r = state_record_save(j->c->node->state_dir, j->a);
    if (r < 0)
        return rg_error(j->err, r, CNI_ERR_IO, "cannot write state: %s", strerror(-r));
    r = failpoint("add-before-ipam"); /* recorded, the plugin not run yet */
    if (r >= 0)
        r = ipam_add(j->c, j->a, &res, j->err);
    close(TAKE_FD(lock));
    if (r < 0 && r != -EFAULT) {
        j->a->ipam = false; /* ipam_add released what the plugin may have taken */
        return r;
    }
    if (r >= 0)
        r = failpoint("add-after-ipam"); /* allocated, no NIC moved yet */
    if (r < 0)
        return r; /* the rollback releases it */
    r = ipam_addresses(j, res, need);
    if (r < 0 && ipam_release(j->c, j->a, &undo) >= 0)
        j->a->ipam = false;
    return r;
}

static int plan_addrs(AddJob *j, size_t i, size_t *ipam_next, char ***ret) {
    const Unit *u = j->units[i];
    const RailConfig *rc = u->rail_cfg;
    unsigned k = u->is_vf ? u->vf : 0;

    switch (unit_addressing(u)) {
    case ADDRESS_MODE_IPAM:
        return strv_push(ret, j->ipam_addrs[(*ipam_next)++]);
    case ADDRESS_MODE_KEEP:
        return 0; /* filled from the host addresses once recorded */
    case ADDRESS_MODE_STATIC:
        if (rc && k < rc->n_addresses)
            return strv_push(ret, rc->addresses[k]);
        return 0;
    }
    return 0;
}

static int claim_units(AddJob *j, const char *owner) {
    const char *state = j->c->node->state_dir;
    char holder[STATE_KEY_MAX + 1] = "";
    _cleanup_free_ char **ids = calloc(j->n_units + 1, sizeof(char *));
    size_t bad = 0;
    int r;

    if (!ids)
        return -ENOMEM;
    for (size_t i = 0; i < j->n_units; i++)
        ids[i] = (char *)j->units[i]->id;
    /* all or none; stale claims (an ADD killed before recording, an earlier
     * boot) are taken over; in DRA mode only while kubelet's prepared claim
     * still gives the pod every unit (the agent's answer was read unlocked) */
    const char *pod_uid = j->c->env->pod_uid ? j->c->env->pod_uid : ""; /* "" holds nothing */
    r = state_units_claim_prepared(state, ids, j->n_units, owner,
                                   j->c->node->mode == AGENT_MODE_DRA ? pod_uid : NULL, &bad,
                                   holder, sizeof(holder));
    if (r == -ESTALE)
        return rg_error(j->err, r, CNI_ERR_DEVICE,
                        "unit %s is no longer prepared for pod %s/%s (kubelet unprepared its "
                        "claim); nothing was moved",
                        ids[bad], j->c->env->pod_ns, j->c->env->pod_name);
    if (r == -EBUSY)
        return rg_error(j->err, r, CNI_ERR_DEVICE, "unit %s is attached to %s", ids[bad], holder);
    if (r < 0)
        return rg_error(j->err, r, CNI_ERR_IO, "cannot claim unit %s in %s: %s",
                        bad < j->n_units ? ids[bad] : "?", state, strerror(-r));
    return 0;
}

/* After a rollback: free the claims of units the record on disk does not
 * list (never recorded, or brought home and written out); those it still
 * lists could not be restored, or their NIC's way home is not on disk yet,
 * and stay claimed. */
static void release_unrecorded(AddJob *j, const char *owner) {
    _cleanup_(attachment_freep) Attachment *disk = NULL;
    const char *state = j->c->node->state_dir;

    if (state_record_load_key(state, owner, &disk) < 0)
        disk = NULL;
    for (size_t i = 0; i < j->n_units; i++) {
        bool recorded = false;
        for (size_t k = 0; disk && k < disk->n_nics; k++)
            recorded = recorded || streq(disk->nics[k].unit, j->units[i]->id);
        if (!recorded)
            (void)state_unit_release(state, j->units[i]->id, owner);
    }
}

/* NicPlan of the unit whose NIC is j->a->nics[k] (planned in unit order) */
static NicPlan unit_plan(const AddJob *j, size_t k) {
    const Unit *u = j->units[k];

    return (NicPlan){.unit = u,
                     .rail = u->rail_cfg,
                     .tenant = j->tenant,
                     .gateway = u->rail_cfg ? u->rail_cfg->gateway : NULL,
                     .sys = j->c->node->sysfs_root};
}

/* Read what unit i's NIC is now (identity, name, MAC, MTU, addresses) into
 * a new planned entry of the record; nothing is touched yet. */
static int plan_one(AddJob *j, NicNs *ns, size_t i, size_t *ipam_next, NicPrefetch *pre) {
    const Unit *u = j->units[i];
    NicPlan p = unit_plan(j, i);
    AttachedNic *n = attachment_add_nic(j->a);
    int r;

    if (!n)
        return -ENOMEM;
    p.pre = pre;
    r = plan_addrs(j, i, ipam_next, &p.addrs);
    if (r >= 0)
        r = nic_record(ns, &p, n, j->err);
    if (r >= 0)
        r = rdmadev_record(ns, &p, n, j->err);
    if (r >= 0 && unit_addressing(u) == ADDRESS_MODE_KEEP)
        for (char **h = n->host_addrs; h && *h && r >= 0; h++)
            r = strv_push(&n->pod_addrs, *h);
    strv_free(p.addrs);
    if (r < 0) {
        j->a->n_nics--; /* nothing of it was touched */
        attached_nic_done(n);
    }
    return r;
}

/* NIC k's steps before its move that are not netlink requests of the move
 * batch, each followed by its failpoint. */
static int prepare_one(AddJob *j, NicNs *ns, size_t k) {
    AttachedNic *n = &j->a->nics[k];
    int r;

    r = failpoint("add-before-move");
    /* its RDMA device first (exclusive mode): a driver that cannot move
     * refuses before the NIC leaves (an rxe device would vanish with it) */
    if (r >= 0)
        r = rdmadev_move_in(ns, n, j->err);
    if (r >= 0)
        r = failpoint("add-rdma-moved"); /* the RDMA device in the pod, its NIC not */
    /* a VF's admin state before it moves: the pod never holds it unpinned;
     * what it was is on disk already (the plan), so DEL gives it back */
    if (r >= 0)
        r = nic_vf_apply(ns, n, j->err);
    if (r >= 0)
        r = failpoint("add-vf-set"); /* VF admin state set, not moved */
    /* a NIC without a parent device or a veth peer gets its anchor, which
     * the record names already: from here on that is how it is found */
    if (r >= 0)
        r = anchor_make(ns, n, j->err);
    if (r >= 0)
        r = failpoint("add-anchored"); /* anchored, not moved */
    return r;
}

/* NICs [lo, hi): each prepared, then moved in one batch per namespace. */
static int move_group(AddJob *j, NicNs *ns, size_t lo, size_t hi) {
    int r = 0;

    for (size_t k = lo; r >= 0 && k < hi; k++)
        r = prepare_one(j, ns, k);
    if (r >= 0)
        r = nic_move_in_many(ns, &j->a->nics[lo], hi - lo, j->err);
    /* moved, not configured; an anchor's ifindex not on disk yet */
    for (size_t k = lo; r >= 0 && k < hi; k++)
        r = failpoint("add-moved-unrecorded");
    return r;
}

static int configure_group(AddJob *j, NicNs *ns, size_t lo, size_t hi) {
    NicPlan p = unit_plan(j, lo);
    int r;

    r = nic_configure_many(ns, &p, &j->a->nics[lo], hi - lo, j->err);
    for (size_t k = lo; r >= 0 && k < hi; k++) {
        AttachedNic *n = &j->a->nics[k];

        r = failpoint("add-after-configure");
        if (r >= 0)
            log_info(j->tenant->name, j->units[k]->id, "%s moved into pod %s/%s as %s",
                     n->host_name, j->c->env->pod_ns, j->c->env->pod_name, j->units[k]->pod_ifname);
    }
    return r;
}

/* NICs per batch of moves and of addresses, routes and rules: one. All of
 * them in one batch measured 3-5% slower for 8 rails (bench-cni, 4 runs of
 * 20-40 cycles, every run the same way): the kernel's work after each move
 * into the pod (link watch, IPv6 DAD, on a kworker under RTNL) waits behind
 * a batch that retakes RTNL message after message, and then falls on the
 * configure batch; a NIC at a time it runs on the other CPU while this one
 * reads its answers. The reads before the moves stay batched across NICs. */
static size_t group_size(const AddJob *j) {
    (void)j;
    return 1;
}

/* Every unit's plan, its host link, peer and ethtool state read in batches first. */
static int plan_all(AddJob *j, NicNs *ns) {
    _cleanup_free_ NicPrefetch *pre = calloc(j->n_units ? j->n_units : 1, sizeof(*pre));
    size_t ipam_next = 0;
    int r = 0;

    if (!pre)
        return -ENOMEM;
    nic_prefetch(ns, j->units, j->n_units, pre);
    for (size_t i = 0; r >= 0 && i < j->n_units; i++)
        r = plan_one(j, ns, i, &ipam_next, &pre[i]);
    nic_prefetch_done(pre, j->n_units);
    return r;
}

/* Does a NIC of a have an anchor (made after the first write)? */
static bool any_anchor(const Attachment *a) {
    for (size_t i = 0; i < a->n_nics; i++)
        if (a->nics[i].anchor[0])
            return true;
    return false;
}

/*
 * Every NIC is planned (and checked to be there, with its identity) before
 * the first moves, and the record of all of them is on disk before then: a
 * crash from there on leaves DEL and GC what they need to bring each back,
 * moved or not (each is looked for by its identity, on the host and in the
 * pod). A veth's peer and a device's parent are known before anything
 * moves: one write of the record per ADD, however many rails. An anchor's
 * ifindex is known once it is made, right before its NIC's move: with an
 * anchored NIC (a dummy, a macvlan) the record is written again at the
 * end, so that from then on only the link at that ifindex is taken for
 * the anchor (a look-alike VLAN under its name elsewhere is refused).
 */
static int attach_all(AddJob *j) {
    _cleanup_(nicns_close) NicNs ns = NICNS_INIT;
    int pod_netns = -EBADF;
    const char *state = j->c->node->state_dir;
    CniPhases *ph = &j->c->phases;
    uint64_t t;
    int r;

    r = netns_open(j->c->env->netns, &pod_netns);
    if (r < 0)
        return rg_error(j->err, r, CNI_ERR_INVALID_ENV, "CNI_NETNS %s: %s", j->c->env->netns,
                        strerror(-r));
    r = netns_is_current(pod_netns);
    if (r != 0) {
        close(pod_netns);
        return rg_error(j->err, r < 0 ? r : -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_NETNS %s is the node's own network namespace, not a pod's",
                        j->c->env->netns);
    }
    r = nicns_open(&ns, pod_netns, j->err);
    if (r < 0)
        return r;
    r = rdmadev_mode(&ns, j->units, j->n_units, j->err);
    if (r >= 0)
        r = run_ipam(j);
    if (r >= 0)
        r = plan_all(j, &ns);
    t = clock_monotonic_ns();
    if (r >= 0 && (r = state_record_save(state, j->a)) < 0)
        return rg_error(j->err, r, CNI_ERR_IO, "cannot write state: %s", strerror(-r));
    context_phase_add(&ph->state_ns, t);
    t = clock_monotonic_ns();
    /* every pod name checked free at once, then every move, then
     * addresses, routes and rules (the pod's side set up in one stretch; in
     * time the order made no difference that bench-cni could tell from its
     * noise); a NIC's requests of a phase in one batch (group_size()) */
    size_t g = group_size(j);
    if (r >= 0)
        r = nic_names_free(&ns, j->a->nics, j->a->n_nics, j->err);
    for (size_t lo = 0; r >= 0 && lo < j->a->n_nics; lo += g)
        r = move_group(j, &ns, lo, lo + g < j->a->n_nics ? lo + g : j->a->n_nics);
    if (r >= 0)
        r = nic_landed_many(&ns, j->a->nics, j->a->n_nics, j->err);
    if (r >= 0)
        r = failpoint("add-landed"); /* found where each landed, none configured */
    context_phase_add(&ph->moves_ns, t);
    t = clock_monotonic_ns();
    for (size_t lo = 0; r >= 0 && lo < j->a->n_nics; lo += g)
        r = configure_group(j, &ns, lo, lo + g < j->a->n_nics ? lo + g : j->a->n_nics);
    if (r >= 0)
        r = nic_still_landed_many(&ns, j->a->nics, j->a->n_nics, j->err);
    context_phase_add(&ph->configure_ns, t);
    t = clock_monotonic_ns();
    if (r >= 0 && any_anchor(j->a) && (r = state_record_save(state, j->a)) < 0)
        return rg_error(j->err, r, CNI_ERR_IO, "cannot write state: %s", strerror(-r));
    context_phase_add(&ph->state_ns, t);
    if (r >= 0)
        r = failpoint("add-after-record");
    if (r == -EFAULT && j->err->msg[0] == 0) /* a failpoint */
        rg_error(j->err, r, CNI_ERR_NETLINK, "failpoint %s", failpoint_name());
    return r;
}

static int add_attach(AddJob *j, json_t **ret) {
    const CniEnv *e = j->c->env;
    char owner[STATE_KEY_MAX + 1];
    Attachment *old = NULL;
    int r;

    j->a = calloc(1, sizeof(*j->a));
    if (!j->a)
        return -ENOMEM;
    snprintf(j->a->container_id, sizeof(j->a->container_id), "%s", e->container_id);
    snprintf(j->a->ifname, sizeof(j->a->ifname), "%s", e->ifname);
    snprintf(j->a->netns, sizeof(j->a->netns), "%s", e->netns);
    snprintf(j->a->pod_ns, sizeof(j->a->pod_ns), "%s", e->pod_ns);
    snprintf(j->a->pod_name, sizeof(j->a->pod_name), "%s", e->pod_name);
    r = context_key(j->c, owner, sizeof(owner), j->err);
    if (r < 0)
        return r;
    r = state_record_load(j->c->node->state_dir, e->container_id, e->ifname, &old);
    if (r == -EBADMSG && state_record_torn(j->c->node->state_dir, owner)) {
        /* torn by a node crash, so of an earlier boot too: it holds nothing */
        r = attachment_forget_torn(j->c, owner, j->err);
        if (r < 0)
            return r;
        r = -ENOENT;
    } else if (r >= 0 && state_record_from_earlier_boot(old)) {
        /* it holds nothing since the reboot: forget it */
        log_warn(NULL, NULL, "attachment %s: dropping its record from an earlier boot", owner);
        attachment_free(old);
        r = state_record_remove(j->c->node->state_dir, owner);
        if (r < 0)
            return rg_error(j->err, r, CNI_ERR_IO, "cannot remove the record of %s", owner);
        r = -ENOENT;
    } else if (r >= 0) {
        attachment_free(old);
        return rg_error(j->err, -EEXIST, CNI_ERR_INVALID_CONFIG,
                        "container %s already has a railgate attachment on %s; DEL it first",
                        e->container_id, e->ifname);
    }
    if (r != -ENOENT)
        return rg_error(j->err, r, CNI_ERR_IO, "unreadable state of %s: %s", owner, strerror(-r));
    uint64_t t = clock_monotonic_ns();
    r = claim_units(j, owner);
    context_phase_add(&j->c->phases.state_ns, t);
    if (r < 0)
        return r;
    r = failpoint("add-after-claim");
    if (r < 0) {
        release_unrecorded(j, owner);
        return rg_error(j->err, r, CNI_ERR_NETLINK, "failpoint %s", failpoint_name());
    }
    r = attach_all(j);
    if (r < 0) {
        RgError undo = {0};
        /* roll back everything before answering: NICs home, units and IPAM released */
        if (attachment_teardown(j->c, j->a, &undo) < 0)
            log_error(j->tenant->name, NULL, -EIO, "rollback incomplete: %s", undo.msg);
        release_unrecorded(j, owner);
        return r;
    }
    *ret = result_build(j->c, j->a);
    return *ret ? 0 : -ENOMEM;
}

int cmd_add(CniContext *c, json_t **ret, RgError *err) {
    _cleanup_(job_done) AddJob j = {.c = c, .err = err};
    _cleanup_(strv_freep) char **ids = NULL;
    _cleanup_free_ char *resource = NULL;
    char sock[4096];
    int r;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    if (!c->env->pod_ns || !c->env->pod_name)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_ARGS: K8S_POD_NAMESPACE and K8S_POD_NAME are required");
    /* no retry brings a uid the runtime did not send: not "try again" */
    if (c->node->mode == AGENT_MODE_DRA && (!c->env->pod_uid || !*c->env->pod_uid))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_ARGS: K8S_POD_UID is required on a node in DRA mode (the node agent "
                        "knows a pod's units by its uid); nothing was moved");
    r = context_agent_socket(c, sock, sizeof(sock), err);
    if (r < 0)
        return r;
    /* every pod: only the agent (from kubelet) can say that one holds no units */
    _cleanup_(agentclient_question_done) AgentQuestion q = {.fd = -EBADF};
    uint64_t t = clock_monotonic_ns();
    r = agentclient_ask(sock, (int)c->node->timeouts.agent_s * 1000, c->env->pod_ns,
                        c->env->pod_name, c->env->pod_uid, &q, err);
    context_phase_add(&c->phases.agent_ns, t);
    if (r < 0)
        return r;
    /* while the agent asks kubelet: the device plugin's inventory, which
     * any units will be looked up in (its error matters only then) */
    RgError inv_err = {0};
    int inv_r = inventory_load_published(c->node, c->node->state_dir, &j.inv, &inv_err);
    t = clock_monotonic_ns();
    r = agentclient_answer(&q, &ids, &resource, err);
    context_phase_add(&c->phases.agent_ns, t);
    if (r >= 0)
        r = failpoint("add-agent-answered"); /* a test unprepares the claim here */
    if (r < 0)
        return r;
    strv_sort(ids); /* messages and logs name units in rail order */
    if (strv_length(ids) == 0) {
        log_info(NULL, NULL, "pod %s/%s holds no railgate units: passing through", c->env->pod_ns,
                 c->env->pod_name);
        *ret = passthrough(c);
        return *ret ? 0 : -ENOMEM;
    }
    r = check_tenant(&j, resource, ids);
    if (r < 0)
        return r;
    /* the device plugin's inventory: what kubelet's ids name on this node */
    if (inv_r < 0) {
        *err = inv_err;
        err->code = inv_r == -ENOENT ? CNI_ERR_TRY_AGAIN : CNI_ERR_IO;
        return inv_r;
    }
    r = resolve_units(&j, ids);
    if (r < 0)
        return r;
    c->rails = (unsigned)j.n_units;
    for (size_t i = 0; i < j.n_units; i++) {
        r = locate_unit_nic(c->node->sysfs_root, (Unit *)j.units[i], err);
        if (r < 0)
            return r;
    }
    r = check_lowers(&j);
    if (r < 0)
        return r;
    int lock = context_lock_attachment(c, err);
    if (lock < 0)
        return lock;
    r = add_attach(&j, ret);
    context_unlock_attachment(c, lock);
    return r;
}
