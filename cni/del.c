/* SPDX-License-Identifier: Apache-2.0 */
/* DEL: the attachment's record, loaded and torn down (teardown.c). */
#include <stdio.h>

#include "commands.h"
#include "log.h"
#include "state.h"
#include "teardown.h"

static int del_locked(CniContext *c, const char *key, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    int r;

    r = state_record_load_key(c->node->state_dir, key, &a);
    if (r == -ENOENT) {
        /* never attached, already deleted, or an ADD killed between claiming
         * its units and recording them: free its claims. No IPAM plugin runs:
         * only a record names one (an ADD records it before running it) */
        (void)state_unit_release_owner(c->node->state_dir, key);
        return 0;
    }
    if (r == -EBADMSG && state_record_torn(c->node->state_dir, key))
        return attachment_forget_torn(c, key, err);
    if (r == -EXDEV)
        return rg_error(err, r, CNI_ERR_IO,
                        "the record under %s is of another attachment: nothing torn down", key);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "unreadable state for %s/%s: %s", c->env->container_id,
                        c->env->ifname, strerror(-r));
    if (state_record_from_earlier_boot(a))
        return attachment_forget(c, a, err);
    c->tenant = context_namespace_tenant(c, a->pod_ns);
    c->rails = (unsigned)a->n_nics;
    r = attachment_teardown(c, a, err);
    if (r >= 0)
        log_info(NULL, NULL, "pod %s/%s: %s detached", a->pod_ns, a->pod_name,
                 c->env->container_id);
    return r;
}

int cmd_del(CniContext *c, RgError *err) {
    return context_with_attachment(c, del_locked, err);
}
