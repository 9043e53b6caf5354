/* SPDX-License-Identifier: Apache-2.0 */
/* The teardown that DEL, GC and a failed ADD's rollback share: every NIC home, then the record. */
#include <stdio.h>

#include "anchor.h"
#include "clock.h"
#include "failpoint.h"
#include "ipam.h"
#include "log.h"
#include "netns.h"
#include "nic.h"
#include "nicns.h"
#include "rdmadev.h"
#include "state.h"
#include "strv.h"
#include "teardown.h"

static void nic_drop(Attachment *a, size_t i) {
    attached_nic_done(&a->nics[i]);
    memmove(&a->nics[i], &a->nics[i + 1], (a->n_nics - i - 1) * sizeof(a->nics[0]));
    a->n_nics--;
}

/* A NIC that could not be put back as it left: logged, its error the DEL's;
 * returns r. */
static int restore_failed(const AttachedNic *n, int r, const RgError *e, RgError *err) {
    log_error(NULL, n->unit, r, "cannot restore NIC %s: %s", n->host_name, e->msg);
    *err = *e;
    return r;
}

/*
 * Restore NICs in reverse order, each left down, then bring up in one batch
 * those that were up (a NIC that comes up at home between the moves of the
 * others makes the kernel's next move dearer: README, "CNI, ms"), then
 * remove the anchors of those restored (what finds them until then), then
 * write the record once without those that came home, then release their
 * units: a crash before the write leaves
 * the record as it was (the next DEL restores them again, which is
 * idempotent), a crash after it a stale claim, never a free unit whose NIC
 * is still recorded as ours. The ones that could not be restored stay in
 * the record, and their units claimed, so that the runtime's retry can
 * finish the job. When every NIC came home there is no write: the caller
 * removes the record and then releases every unit, the same order.
 */
static int restore_nics(CniContext *c, Attachment *a, const char *owner, NicNs *ns, RgError *err) {
    const char *state = c->node->state_dir;
    _cleanup_(strv_freep) char **home = NULL;
    _cleanup_free_ int *res = calloc(a->n_nics + 1, sizeof(int));
    _cleanup_free_ int *home_at = calloc(a->n_nics + 1, sizeof(int));
    _cleanup_free_ bool *moved = calloc(a->n_nics + 1, sizeof(bool));
    int failed = 0, r;

    if (!res || !home_at || !moved)
        return rg_error(err, -ENOMEM, CNI_ERR_IO, "out of memory");
    r = nic_spares(ns, a->nics, a->n_nics);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK,
                        "cannot tell the pod's rails from what it stacked on them: %s",
                        strerror(-r));
    nic_pod_look(ns);
    uint64_t t = clock_monotonic_ns();
    /* every NIC home and restored, down; then those that were up, up; then
     * their anchors removed */
    for (size_t i = a->n_nics; i-- > 0;) {
        AttachedNic *n = &a->nics[i];
        RgError e = {0};

        r = nic_restore(ns, n, &home_at[i], &moved[i], &e);
        /* its RDMA device after it: an RDMA device the pod made on the NIC
         * (rxe) went when the NIC left the pod, and holds no name of ours */
        if (r >= 0) {
            int q = rdmadev_restore(ns, n, &e);
            r = q < 0 ? q : r;
        }
        if (r >= 0 && i < ns->n_spare)
            ns->spare[i] = 0; /* home: its ifindex in the pod is nothing of ours now */
        if (r < 0)
            failed = restore_failed(n, r, &e, err);
        res[i] = r;
    }
    r = failpoint("teardown-before-ups"); /* home and restored, down, still anchored */
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "failpoint %s", failpoint_name());
    if (nic_up_many(ns, a->nics, home_at, res, a->n_nics, err) > 0)
        for (size_t i = 0; i < a->n_nics; i++)
            failed = res[i] < 0 ? res[i] : failed;
    for (size_t i = a->n_nics; i-- > 0;) {
        AttachedNic *n = &a->nics[i];
        RgError e = {0};

        if (res[i] != 0 || !n->anchor[0])
            continue;
        r = anchor_remove(ns, n, home_at[i], &e);
        if (r < 0)
            failed = res[i] = restore_failed(n, r, &e, err);
    }
    context_phase_add(&c->phases.moves_ns, t);
    for (size_t i = a->n_nics; i-- > 0;) {
        AttachedNic *n = &a->nics[i];

        if (res[i] < 0)
            continue;
        if (res[i] == NIC_GONE && n->anchor[0])
            anchor_log_gone(n);
        else if (res[i] == NIC_GONE)
            log_warn(NULL, n->unit,
                     "NIC %s is gone: a virtual NIC dies with its namespace or its peer; dropping "
                     "its state",
                     n->host_name);
        else if (moved[i])
            log_info(NULL, n->unit, "NIC %s back in the host namespace", n->host_name);
        if (strv_push(&home, n->unit) < 0)
            return -ENOMEM;
        nic_drop(a, i);
        r = failpoint("teardown-after-nic"); /* home, still recorded */
        if (r < 0)
            return rg_error(err, r, CNI_ERR_IO, "failpoint %s", failpoint_name());
    }
    if (!home || !failed)
        return failed; /* none home, or all: the record stays as it is */
    t = clock_monotonic_ns();
    r = state_record_save(state, a);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot write state: %s", strerror(-r));
    for (char **u = home; *u; u++)
        (void)state_unit_release(state, *u, owner);
    context_phase_add(&c->phases.state_ns, t);
    return failed;
}

int attachment_teardown(CniContext *c, Attachment *a, RgError *err) {
    _cleanup_(nicns_close) NicNs ns = NICNS_INIT;
    int pod_netns = -EBADF;
    char key[STATE_KEY_MAX + 1];
    int r;

    r = state_key(a->container_id, a->ifname, key, sizeof(key));
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "attachment %s/%s has no key", a->container_id,
                        a->ifname);
    if (a->netns[0] && netns_open(a->netns, &pod_netns) < 0)
        pod_netns = -EBADF; /* the pod's namespace is gone: NICs came home by themselves */
    r = nicns_open(&ns, pod_netns, err);
    if (r < 0)
        return r;
    ns.pod_path = a->netns;
    ns.sys = c->node->sysfs_root;
    ns.dying_wait_s = c->node->timeouts.netns_teardown_s;
    ns.dying_deadline_ms = c->dying_deadline_ms;
    r = restore_nics(c, a, key, &ns, err);
    c->dying_deadline_ms = ns.dying_deadline_ms; /* GC: one wait for all */
    if (r < 0)
        return r;
    if (a->ipam) {
        r = ipam_release(c, a, err);
        if (r < 0)
            return r;
    }
    r = failpoint("teardown-before-remove");
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "failpoint %s", failpoint_name());
    uint64_t t = clock_monotonic_ns();
    r = state_record_remove(c->node->state_dir, key);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot remove the record of %s: %s", key,
                        strerror(-r));
    /* the units of the NICs that came home (restore_nics() released none
     * when all did), and claims an ADD killed half-way never recorded */
    (void)state_unit_release_owner(c->node->state_dir, key);
    context_phase_add(&c->phases.state_ns, t);
    return 0;
}

/* A record a node crash tore (state_record_torn()) is of an earlier boot:
 * no IPAM to release (a record with IPAM is durable), nothing to touch. */
int attachment_forget_torn(CniContext *c, const char *key, RgError *err) {
    int r = state_record_remove(c->node->state_dir, key);

    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot remove the record of %s: %s", key,
                        strerror(-r));
    (void)state_unit_release_owner(c->node->state_dir, key);
    log_warn(NULL, NULL,
             "attachment %s: its record, torn and written before this boot, dropped; nothing "
             "touched",
             key);
    return 0;
}

/* A record from an earlier boot holds nothing: its NICs came home (or
 * died) with that boot and may be another pod's now. Drop it untouched. */
int attachment_forget(CniContext *c, const Attachment *a, RgError *err) {
    char key[STATE_KEY_MAX + 1];
    RgError e = {0};
    int r = state_key(a->container_id, a->ifname, key, sizeof(key));

    /* an IPAM store can outlive the boot (host-local's is on disk): what the
     * attachment took is released with its record, as DEL would have */
    if (r >= 0 && a->ipam && ipam_release(c, a, &e) < 0)
        log_warn(NULL, NULL, "attachment %s: releasing its IPAM allocation: %s", key, e.msg);
    if (r >= 0)
        r = state_record_remove(c->node->state_dir, key);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot remove the record of %s/%s", a->container_id,
                        a->ifname);
    (void)state_unit_release_owner(c->node->state_dir, key);
    log_info(NULL, NULL, "attachment %s: record of an earlier boot dropped, nothing touched", key);
    return 0;
}
