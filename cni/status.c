/* SPDX-License-Identifier: Apache-2.0 */
/* STATUS (CNI 1.1): ready for ADD when the node config loads; it asks no one. */
#include "commands.h"

/* The node agent is not asked: DEL, CHECK and GC never need it, and an ADD
 * that finds it away fails with 11, which the runtime retries. */
int cmd_status(CniContext *c, RgError *err) {
    int r = context_load_node(c, err);

    return r < 0 ? rg_error_wrap(err, r, CNI_ERR_NOT_AVAILABLE, "not ready") : 0;
}
