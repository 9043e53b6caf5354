/* kubelet's PodResources API: which railgate units a pod holds. */
#pragma once

#include "error.h"

#define PODRESOURCES_MAX_IDS 1024

/*
 * Device ids the pod (ns/name) holds of any resource in resources (strv),
 * and which resource they are of. Get first; List filtered by name and
 * namespace when Get is disabled or unknown (kubelet < 1.34 without the
 * gate). A kubelet that does not answer within timeout_ms (each call) is
 * CNI error 11 (try again later), the message naming the node config's
 * timeouts.podResourcesSeconds.
 * Ids of two different railgate resources in one pod is an error.
 */
int podresources_pod_units(const char *socket, int timeout_ms, const char *ns, const char *name,
                           char *const *resources, char ***ret_ids, char **ret_resource,
                           RgError *err);
/* STATUS: does kubelet's PodResources socket answer a List? */
int podresources_ping(const char *socket, int timeout_ms, RgError *err);
