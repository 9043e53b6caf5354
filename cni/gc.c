/* GC (CNI 1.1): tear down every attachment the runtime no longer lists. */
#include "log.h"
#include "ops.h"
#include "state.h"
#include "strv.h"

static bool listed(json_t *valid, const char *key) {
    json_t *v;
    size_t i;
    char buf[300];

    json_array_foreach(valid, i, v) {
        const char *cid = json_string_value(json_object_get(v, "containerID"));
        const char *ifn = json_string_value(json_object_get(v, "ifname"));
        if (cid && ifn && attachment_key(cid, ifn, buf, sizeof(buf)) >= 0 && streq(buf, key))
            return true;
    }
    return false;
}

static int gc_one(CniContext *c, const char *key, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    int r;

    r = attachment_load_key(c->node->state_dir, key, &a);
    if (r < 0)
        return r == -ENOENT ? 0 : r;
    _cleanup_close_ int lock = attachment_lock(c->node->state_dir, a->container_id, a->ifname);
    if (lock < 0)
        return lock;
    r = attachment_teardown(c, a, err);
    if (r >= 0) {
        (void)state_unit_release_owner(c->node->state_dir, key);
        log_info(NULL, NULL, "GC: attachment %s of pod %s/%s torn down", key, a->pod_ns,
                 a->pod_name);
    }
    return r;
}

/* Unit claims left by an ADD killed before it recorded them. */
static void sweep_claims(CniContext *c) {
    const char *state = c->node->state_dir;
    char **ids = NULL, holder[300];

    if (state_unit_list(state, &ids) < 0)
        return;
    for (char **id = ids; *id; id++)
        if (state_unit_holder(state, *id, holder, sizeof(holder)) >= 0 &&
            !listed(c->conf->valid_attachments, holder) &&
            attachment_claim_stale(state, holder, *id)) {
            log_info(NULL, *id, "GC: stale claim by %s released", holder);
            (void)state_unit_unmark(state, *id);
        }
    strv_free(ids);
}

int cmd_gc(CniContext *c, RgError *err) {
    _cleanup_(strv_freep) char **keys = NULL;
    int r, failed = 0;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    r = attachment_list(c->node->state_dir, &keys);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot list attachments");
    sweep_claims(c);
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
    }
    return failed;
}
