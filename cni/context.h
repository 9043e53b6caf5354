/* SPDX-License-Identifier: Apache-2.0 */
/* One CNI invocation's context, which every command reads (context.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cni.h"
#include "config.h"
#include "error.h"

/* The phases of a command the report names (proto/agent.proto AgentReport). */
typedef struct CniPhases {
    uint64_t agent_ns;     /* the wait for the agent's answer */
    uint64_t moves_ns;     /* NICs into the pod or home */
    uint64_t configure_ns; /* addresses, routes, rules in the pod */
    uint64_t state_ns;     /* unit claims, the attachment's record */
} CniPhases;

typedef struct CniContext {
    const CniEnv *env;
    const CniConf *conf;
    const char *config_path; /* node config file */
    NodeConfig *node;        /* loaded lazily by commands that need it */
    /* for the report to the node agent, set by the command: the tenant
     * (NULL: not known) and the NICs it moved, checked or brought home */
    const char *tenant;
    unsigned rails;
    /* the end of this command's wait for NICs in namespaces being torn
     * down (CLOCK_MONOTONIC ms; 0: not started), one for all of a GC */
    uint64_t dying_deadline_ms;
    /* for the report too: where the command's time went (ns, summed) */
    CniPhases phases;
} CniContext;

/* Adds the time since started_ns (clock_monotonic_ns) to *phase_ns. */
void context_phase_add(uint64_t *phase_ns, uint64_t started_ns);

/* Load the node config into c->node; CNI error 7 names the file and path. */
int context_load_node(CniContext *c, RgError *err);
/* This invocation's attachment key (state.h); CNI error 4 if it has none. */
int context_key(const CniContext *c, char *buf, size_t n, RgError *err);
/* Lock this invocation's attachment (container id, ifname) against other
 * commands on it: the lock fd, or a negative errno with err set (code 4 for
 * a key too long, 5 naming the lock file otherwise). */
int context_lock_attachment(const CniContext *c, RgError *err);
/* Unlock; the lock file goes when the attachment has no record left. */
void context_unlock_attachment(const CniContext *c, int fd);
/*
 * DEL's and CHECK's frame: the node config, this invocation's key, its
 * attachment locked around fn(c, key, err). A key too long for any record
 * (no ADD could have made one) is success without calling fn.
 */
int context_with_attachment(CniContext *c, int (*fn)(CniContext *c, const char *key, RgError *err),
                            RgError *err);
/* The node agent's socket, <stateDir>/agent.sock; CNI error 7 when the path
 * is too long for a unix socket. */
int context_agent_socket(const CniContext *c, char *buf, size_t n, RgError *err);
/* The tenant a namespace belongs to, by the node config (for reports), or NULL. */
const char *context_namespace_tenant(const CniContext *c, const char *ns);
