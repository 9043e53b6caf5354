/* SPDX-License-Identifier: Apache-2.0 */
/* The reports the CNI sends after each command: where the node agent takes them in. */
#include <ctype.h>
#include <string.h>

#include "agent.h"
#include "agentmetrics.h"
#include "agentproto.h"
#include "log.h"

/* The runtime's sandbox id as the report gives it, or "?": only 1 to
 * AGENT_MAX_SANDBOX_ID hex digits reach the log (any root process may send
 * a report; containerd's ids are 64 hex digits). */
static const char *sandbox_id(const char *s) {
    size_t n = s ? strnlen(s, AGENT_MAX_SANDBOX_ID + 1) : 0;

    if (n == 0 || n > AGENT_MAX_SANDBOX_ID)
        return "?";
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return "?";
    return s;
}

/* Checked already: command is one of AgentCommand's, tenant a token or "".
 * Counted in railgate_cni_* (the metrics keep their label sets closed: the
 * sandbox id and the phases go to the log only). ADD and DEL are logged at
 * info, one line each: what a pod's start and end cost, joinable with the
 * runtime's log by the sandbox id (tests/k8s/bench.sh reads it). */
void agent_report_received(const AgentReport *r) {
    static const char *const names[] = {"?", "ADD", "DEL", "CHECK", "GC", "STATUS"};
    const char *cmd = (size_t)r->command < ELEMENTSOF(names) ? names[r->command] : "?";
    const char *tenant = r->tenant[0] ? r->tenant : NULL;
    const char *id = sandbox_id(r->sandbox_id);
    const char *s = r->rails == 1 ? "" : "s";

    metrics_cni_report(cmd, (int)r->result_code, (double)r->duration_ns / 1e9, r->rails, r->tenant);

    if (r->command != AGENT_COMMAND__ADD && r->command != AGENT_COMMAND__DEL) {
        log_debug(tenant, NULL, "CNI %s of sandbox %s answered %u in %.3f ms (%u rail%s)", cmd, id,
                  r->result_code, (double)r->duration_ns / 1e6, r->rails, s);
        return;
    }
    log_info(tenant, NULL,
             "CNI %s of sandbox %s answered %u in %.3f ms (%u rail%s: agent %.3f, moves %.3f, "
             "configure %.3f, state %.3f ms)",
             cmd, id, r->result_code, (double)r->duration_ns / 1e6, r->rails, s,
             (double)r->agent_ns / 1e6, (double)r->moves_ns / 1e6, (double)r->configure_ns / 1e6,
             (double)r->state_ns / 1e6);
}
