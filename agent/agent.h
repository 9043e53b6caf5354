/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's socket: the CNI's questions, answered on threads of its own. */
#pragma once

#include "agent.pb-c.h"
#include "config.h"
#include "holdings.h"

#define AGENT_WORKERS 4      /* lookups at once */
#define AGENT_MAX_QUEUED 64  /* questions waiting for a worker; more are answered BUSY */
#define AGENT_MAX_CLIENTS 64 /* connections yet to send their question; more are answered BUSY */
#define AGENT_BACKLOG 128

typedef struct Agent Agent;

/*
 * Serve <stateDir>/agent.sock (AGENT_SOCKET_NAME, agentproto.h): bound under
 * a name of its own, made 0600, listening, then renamed over the path, so
 * that a stale socket is replaced and the CNI never finds none while it is
 * made. The state dir must be the daemon's user's (root's); one more open
 * than 0700 is made 0700. A peer that is not uid 0 is refused. One thread
 * reads the questions (epoll) and drops a connection that sent none within
 * timeouts.agentSeconds; AGENT_WORKERS threads ask h, each question within
 * timeouts.podResourcesSeconds of its arrival, so that a slow kubelet holds
 * up no other client's reading. Neither serves gRPC or enters a namespace.
 * Both stay off the agent's event loop (loop.h) on purpose: a PodResources
 * call blocks its worker until kubelet answers (seconds on a loaded node),
 * and on the loop it would hold up health, registration and every other
 * CNI's question behind one slow kubelet (test_slow_kubelet_holds_up_no_one);
 * the front is started by the program's main (device-plugin mode) or its DRA
 * front, like the others.
 */
int agent_start(const NodeConfig *c, Holdings *h, Agent **ret);
/* agent_start, its outcome logged (the daemon's boundary). */
int agent_serve(const NodeConfig *c, Holdings *h, Agent **ret);
/* Its socket's path. */
const char *agent_socket(const Agent *a);
/* Lookups in flight end (h is stopped), the threads are joined, the
 * connections closed, the socket removed if it is still the one bound.
 * NULL-safe. */
void agent_stop(Agent *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Agent *, agent_stop);

/* report.c: each report a CNI sends after a command, checked
 * (agent_request_parse), arrives here and nowhere else. */
void agent_report_received(const AgentReport *report);
