/* STATUS (CNI 1.1): ready for ADD when the node config loads and kubelet answers. */
#include <stdio.h>

#include "ops.h"
#include "podresources.h"

int cmd_status(CniContext *c, RgError *err) {
    char sock[4096];
    int r;

    r = context_load_node(c, err);
    if (r < 0)
        return rg_error_wrap(err, r, CNI_ERR_NOT_AVAILABLE, "not ready");
    context_podresources_socket(c, sock, sizeof(sock));
    r = podresources_ping(sock, (int)c->node->timeouts.pod_resources_s * 1000, err);
    if (r < 0)
        err->code = CNI_ERR_NOT_AVAILABLE;
    return r;
}
