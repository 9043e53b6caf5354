/* SPDX-License-Identifier: Apache-2.0 */
/* Who holds what: the one question the node agent answers, behind one function. */
#pragma once

#include "config.h"
#include "error.h"

typedef struct Holdings Holdings;

/* The pod a question is about; uid may be "" (PodResources knows pods by
 * namespace and name; prepared DRA claims by uid, which they need). */
typedef struct PodRef {
    const char *ns, *name, *uid;
} PodRef;

/*
 * The node's source of who holds which of the node config's tenant
 * resources: kubelet's PodResources API at pod_resources (its socket), on
 * one warm channel (device-plugin mode).
 */
int holdings_new(const NodeConfig *c, const char *pod_resources, Holdings **ret);
/*
 * DRA mode's source: the claims kubelet prepared (claims.h, in the node
 * config's state dir), by the pod's uid. changed(userdata), when not NULL,
 * is called by holdings_attachments_changed().
 */
int holdings_new_claims(const NodeConfig *c, void (*changed)(void *userdata), void *userdata,
                        Holdings **ret);
/* Ends the lookups in flight at once and refuses new ones. */
void holdings_stop(Holdings *h);
void holdings_free(Holdings *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Holdings *, holdings_free);

/*
 * The ids of the railgate units pod holds and their resource (NULL, and no
 * ids, for none), as the source says now, within timeout_ms; nothing is
 * cached. Thread-safe. On failure err->code is the AgentStatus to answer
 * with and err->msg the reason.
 */
int holdings_pod_units(Holdings *h, const PodRef *pod, int timeout_ms, char ***ret_ids,
                       char **ret_resource, RgError *err);
/* A CNI reported a command that may have moved NICs (ADD, DEL, GC): DRA
 * mode's source passes it on (networkData follows the attachments). Called
 * on the agent's reader thread: it never blocks. */
void holdings_attachments_changed(Holdings *h);
