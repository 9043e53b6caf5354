/* SPDX-License-Identifier: Apache-2.0 */
/* The reports the CNI sends after each command: where the node agent takes them in. */
#include "agent.h"
#include "agentmetrics.h"
#include "log.h"

/* Checked already: command is one of AgentCommand's, tenant a token or "".
 * Counted in railgate_cni_* (the metrics keep their label sets closed). */
void agent_report_received(const AgentReport *r) {
    static const char *const names[] = {"?", "ADD", "DEL", "CHECK", "GC", "STATUS"};
    const char *cmd = (size_t)r->command < ELEMENTSOF(names) ? names[r->command] : "?";

    metrics_cni_report(cmd, (int)r->result_code, (double)r->duration_ns / 1e9, r->rails, r->tenant);

    log_debug(r->tenant[0] ? r->tenant : NULL, NULL, "CNI %s answered %u in %.3f ms (%u rail%s)",
              cmd, r->result_code, (double)r->duration_ns / 1e6, r->rails,
              r->rails == 1 ? "" : "s");
}
