/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent as the CNI asks it: a pod's units at ADD, a report after every command. */
#pragma once

#include <stdint.h>

#include "agentproto.h"

/*
 * The railgate units pod ns/name (uid may be NULL) holds, as the node agent
 * at path found out from kubelet just now: their ids (strv; empty when the
 * pod holds none) and their resource (NULL with none). Fails closed, with
 * err->code the CNI error code: 11 when the agent is away (no socket,
 * refused, gone before it answered), did not answer within timeout_ms, or
 * could not ask kubelet (its reason in the message); 100 for a pod holding
 * units of two railgate resources; 101 for more units than a reply holds; 4
 * for a pod namespace, name or uid the agent would refuse. An agent not
 * running as root is not believed (11).
 */
int agentclient_pod_units(const char *path, int timeout_ms, const char *ns, const char *name,
                          const char *uid, char ***ret_ids, char **ret_resource, RgError *err);

/*
 * The same question in two halves, so that the CNI does what it needs to
 * whatever the answer while the agent asks kubelet: agentclient_ask()
 * connects and sends, agentclient_answer() waits for the reply within the
 * same deadline and closes the connection. The errors are those above, each
 * from the half that meets it. A question not answered is closed by
 * agentclient_question_done() (idempotent).
 */
typedef struct AgentQuestion {
    int fd;
    const char *socket;
    int timeout_ms;
    uint64_t deadline_ms; /* CLOCK_MONOTONIC */
} AgentQuestion;
int agentclient_ask(const char *path, int timeout_ms, const char *ns, const char *name,
                    const char *uid, AgentQuestion *ret, RgError *err);
int agentclient_answer(AgentQuestion *q, char ***ret_ids, char **ret_resource, RgError *err);
void agentclient_question_done(AgentQuestion *q);

/* Send report to the agent at path and return at once: a connect and a
 * send that never wait (the agent's acknowledgement is not read), any
 * failure ignored. */
void agentclient_report(const char *path, const AgentReport *report);
