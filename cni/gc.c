/* SPDX-License-Identifier: Apache-2.0 */
/* GC (CNI 1.1): tear down every attachment the runtime no longer lists. */
#include "commands.h"
#include "failpoint.h"
#include "ipam.h"
#include "log.h"
#include "state.h"
#include "strv.h"
#include "teardown.h"

static bool listed(json_t *valid, const char *key) {
    json_t *v;
    size_t i;
    char buf[STATE_KEY_MAX + 1];

    json_array_foreach(valid, i, v) {
        const char *cid = json_string_value(json_object_get(v, "containerID"));
        const char *ifn = json_string_value(json_object_get(v, "ifname"));
        if (cid && ifn && state_key(cid, ifn, buf, sizeof(buf)) >= 0 && streq(buf, key))
            return true;
    }
    return false;
}

/* One attachment, under the state lock. Its own lock is only tried: an ADD
 * or DEL of it is running when it is held (and that ADD may be waiting for
 * the state lock we hold), so it is alive and GC leaves it. */
static int gc_one(CniContext *c, const char *key, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    int lock, r;

    lock = state_attachment_trylock(c->node->state_dir, key);
    if (lock == -EWOULDBLOCK) {
        log_info(NULL, NULL, "GC: attachment %s is busy (an ADD or DEL runs): left", key);
        return 0;
    }
    if (lock < 0)
        return rg_error(err, lock, CNI_ERR_IO, "GC: cannot lock attachment %s: %s", key,
                        strerror(-lock));
    r = state_record_load_key(c->node->state_dir, key, &a);
    if (r == -ENOENT)
        r = 0;
    else if (r == -EBADMSG && state_record_torn(c->node->state_dir, key))
        r = attachment_forget_torn(c, key, err);
    else if (r < 0)
        rg_error(err, r, CNI_ERR_IO, "GC: unreadable record %s: %s", key, strerror(-r));
    else if (state_record_from_earlier_boot(a))
        r = attachment_forget(c, a, err);
    else {
        c->rails += (unsigned)a->n_nics;
        r = attachment_teardown(c, a, err);
        if (r >= 0)
            log_info(NULL, NULL, "GC: attachment %s of pod %s/%s torn down", key, a->pod_ns,
                     a->pod_name);
    }
    {
        _cleanup_(attachment_freep) Attachment *left = NULL;
        state_attachment_unlock(c->node->state_dir, key, lock,
                                state_record_load_key(c->node->state_dir, key, &left) == -ENOENT);
    }
    return r;
}

int cmd_gc(CniContext *c, RgError *err) {
    _cleanup_(strv_freep) char **keys = NULL;
    _cleanup_close_ int lock = -EBADF;
    int r, failed = 0;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    /* the spec makes the list the runtime's duty; without it GC would tear
     * down every attachment on the node */
    if (!json_is_array(c->conf->valid_attachments))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "cni.dev/valid-attachments: GC needs the list of attachments to keep; "
                        "railgate refuses a GC without it (it would detach every pod)");
    lock = state_lock(c->node->state_dir);
    if (lock < 0)
        return rg_error(err, lock, CNI_ERR_IO, "cannot lock the state dir %s: %s",
                        c->node->state_dir, strerror(-lock));
    r = state_record_list(c->node->state_dir, &keys);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot list attachments");
    r = state_units_sweep(c->node->state_dir);
    if (r > 0)
        log_info(NULL, NULL, "GC: %d stale unit claims released", r);
    for (char **k = keys; *k; k++) {
        if (listed(c->conf->valid_attachments, *k))
            continue;
        RgError e = {0};
        r = gc_one(c, *k, &e);
        if (r < 0) { /* keep going: GC is best effort per attachment */
            log_error(NULL, NULL, r, "GC of %s failed: %s", *k, e.msg);
            *err = e;
            failed = r;
        }
        r = failpoint("gc-after-attachment");
        if (r < 0)
            return rg_error(err, r, CNI_ERR_IO, "failpoint %s", failpoint_name());
    }
    (void)state_locks_sweep(c->node->state_dir);
    r = state_temps_sweep(c->node->state_dir);
    if (r > 0)
        log_info(NULL, NULL, "GC: %d temp file(s) of writes cut short before this boot removed", r);
    /* then the IPAM plugins' own GC, with what is still recorded, under the
     * state lock: an ADD records its IPAM config and runs IPAM ADD under it
     * too, so GC never sees an allocation whose record is not yet written */
    RgError e = {0};
    r = ipam_gc(c, &e);
    if (r < 0 && failed == 0) {
        *err = e;
        failed = r;
    }
    close(TAKE_FD(lock));
    return failed;
}
