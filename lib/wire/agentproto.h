/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's wire protocol: its socket, frames, requests and replies, bounded and checked. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.pb-c.h"
#include "error.h"

/*
 * The CNI asks railgate-device-plugin (the node agent) on <stateDir>/agent.sock,
 * a root-only SOCK_SEQPACKET socket: one frame each way per connection. A
 * frame is AGENT_FRAME_MAGIC, the payload's length (32 bits, big-endian),
 * then the payload, an AgentRequest or AgentReply (proto/agent.proto).
 */
#define AGENT_SOCKET_NAME "agent.sock"
#define AGENT_PROTOCOL_VERSION 1
#define AGENT_FRAME_MAGIC "RGAP"
#define AGENT_FRAME_HEADER 8
#define AGENT_MAX_REQUEST 4096u      /* bytes of a request frame */
#define AGENT_MAX_REPLY (160u << 10) /* bytes of a reply frame (below a socket's send buffer) */
#define AGENT_MAX_IDS 1024           /* unit ids in one reply */
#define AGENT_MAX_ID 128             /* bytes of one unit id */
#define AGENT_MAX_NAME 253           /* a pod's namespace, name and uid; a resource name */
#define AGENT_MAX_TENANT 63
#define AGENT_MAX_TEXT 1024 /* a reply's message */
#define AGENT_MAX_CNI_CODE 999
#define AGENT_MAX_RAILS (1u << 20)
#define AGENT_MAX_SANDBOX_ID 64 /* hex digits of a report's sandbox id the agent logs */

/* <state_dir>/agent.sock; -ENAMETOOLONG when it does not fit a unix socket address. */
int agent_socket_path(const char *state_dir, char *buf, size_t n);

/* 1 to max bytes of printable ASCII without spaces: what Kubernetes names,
 * uids, resource names and unit ids are made of, and safe in a log line. */
bool agent_token_valid(const char *s, size_t max);

/* m framed, in a malloc'd buffer; -EMSGSIZE when the frame exceeds max. */
int agent_frame_pack(const ProtobufCMessage *m, size_t max, uint8_t **ret, size_t *ret_len);

/* Request frames, as the CNI sends them (fields as agent_request_parse
 * checks them: -EINVAL otherwise). */
int agent_request_pod_units(const char *ns, const char *name, const char *uid, uint8_t **ret,
                            size_t *ret_len);
int agent_request_report(const AgentReport *report, uint8_t **ret, size_t *ret_len);

/*
 * The request in a frame the agent received, checked: the frame whole, a
 * version this agent speaks, a question it knows, every field within its
 * bounds. On failure err->code is the AgentStatus to answer with and err->msg
 * says what was wrong; *ret is set only on success.
 */
int agent_request_parse(const uint8_t *frame, size_t len, AgentRequest **ret, RgError *err);

/* A reply frame: status and message (not OK), or OK with the pod's units
 * (resource NULL: none); -EMSGSIZE past AGENT_MAX_REPLY. */
int agent_reply_pack(AgentStatus status, const char *message, const char *resource,
                     char *const *ids, uint8_t **ret, size_t *ret_len);

/*
 * The reply in a frame the CNI received, checked the same way: the frame
 * whole, the version, a known status, a bounded message, and with OK at most
 * AGENT_MAX_IDS ids, each a token, of one resource. -EBADMSG (or
 * -EPROTONOSUPPORT for another version) with err->msg saying why.
 */
int agent_reply_parse(const uint8_t *frame, size_t len, AgentReply **ret, RgError *err);

/* "OK", "UNAVAILABLE", ...; "?" for a value the enum lacks. */
const char *agent_status_name(int status);
