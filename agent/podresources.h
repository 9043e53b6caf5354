/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet's PodResources API over one warm channel: which railgate units a pod holds. */
#pragma once

#include "error.h"

typedef struct PodResources PodResources;

/*
 * A client of the PodResources socket at path, on one channel kept for the
 * daemon's life: connected on first use, and again after kubelet restarts
 * (the socket is dialed by path). resources (strv, copied): the railgate
 * resources to look for.
 */
int podresources_new(const char *path, char *const *resources, PodResources **ret);
/* Cancel every call in flight (they end with UNAVAILABLE), refuse new ones. */
void podresources_stop(PodResources *p);
void podresources_free(PodResources *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(PodResources *, podresources_free);

/*
 * Device ids the pod ns/name holds of any of the railgate resources, and
 * which resource they are of (NULL with none), as kubelet answers now: Get,
 * then List filtered by name and namespace when Get is disabled or does not
 * know the pod (kubelet < 1.34 without the gate). Waits for a kubelet that is
 * restarting; everything within timeout_ms. Thread-safe. On failure
 * err->code is the agent status to answer with: UNAVAILABLE (kubelet did not
 * answer in time, or said something unreadable; the message names
 * timeouts.podResourcesSeconds), CONFLICT (units of two railgate resources),
 * TOO_MANY (more than AGENT_MAX_IDS ids), INTERNAL (an id that cannot be a
 * unit's).
 */
int podresources_pod_units(PodResources *p, int timeout_ms, const char *ns, const char *name,
                           char ***ret_ids, char **ret_resource, RgError *err);
/*
 * DRA mode: the claims ("<namespace>/<name>", strv) that containers of the
 * pods kubelet runs use, as its List answers now (kubelet 1.34+ lists
 * them): kubelet's view of which prepared claims are still in use.
 */
int podresources_claims_in_use(PodResources *p, int timeout_ms, char ***ret_claims, RgError *err);
