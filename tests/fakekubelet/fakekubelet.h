/* SPDX-License-Identifier: Apache-2.0 */
/* Fake kubelet: Registration and PodResources servers, and a device-plugin client. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deviceplugin.pb-c.h"
#include "error.h"

typedef struct FkDevice {
    char id[64];
    bool healthy;
    int numa; /* -1: no topology */
} FkDevice;

typedef struct FakeKubelet FakeKubelet;

/* Serve <kubelet_dir>/device-plugins/kubelet.sock (Registration) and
 * <kubelet_dir>/pod-resources/kubelet.sock (PodResources), as kubelet does. */
int fk_start(const char *kubelet_dir, FakeKubelet **ret);
void fk_stop(FakeKubelet *k);
/* What a kubelet restart does to plugins: every connection drops, the
 * device-plugin dir is emptied (sockets and files, not dirs or the
 * checkpoint) and kubelet.sock comes back as a new socket. */
int fk_restart(FakeKubelet *k);
/* The same, kubelet.sock absent for gap_ms between the cleanup and the new
 * socket (kubelet's own start-up time). */
int fk_restart_gap(FakeKubelet *k, unsigned gap_ms);
/* The two halves of a restart, for a test that acts between them: the
 * kubelet stops (connections drop, the dir is emptied), then starts. */
void fk_down(FakeKubelet *k);
int fk_up(FakeKubelet *k);
/* ListAndWatch streams of resource that ended while they were the current
 * registration's: the plugin closed them, which a real kubelet takes for the
 * plugin gone (its devices turn unhealthy). */
unsigned fk_streams_lost(FakeKubelet *k, const char *resource);

/* Registrations of resource so far: taken in by any kubelet start of k. As
 * kubelet 1.37 does, a Register is refused when the endpoint it names is
 * still connected ("device plugin already connected": counted by
 * fk_refused), and one that a stopping kubelet was still answering is not
 * taken in (the process is gone: nobody answers). */
unsigned fk_registrations(FakeKubelet *k, const char *resource);
/* Registrations of resource taken in by the kubelet running now (since the
 * last fk_start or fk_restart). */
unsigned fk_registered_now(FakeKubelet *k, const char *resource);
unsigned fk_refused(FakeKubelet *k, const char *resource);
/* Wait until the kubelet running now took a registration of resource in
 * and its stream delivered a device list. */
int fk_wait_registered_now(FakeKubelet *k, const char *resource, int timeout_ms);
/* Wait until resource has registered at least count times and the stream of
 * its newest registration delivered a device list. */
int fk_wait_registered(FakeKubelet *k, const char *resource, unsigned count, int timeout_ms);
/* Newest device list of resource (malloc'd) and its update number. */
int fk_devices(FakeKubelet *k, const char *resource, FkDevice **ret, size_t *ret_n,
               uint64_t *ret_seq);
/* Wait for an update numbered above after. */
int fk_wait_update(FakeKubelet *k, const char *resource, uint64_t after, int timeout_ms,
                   uint64_t *ret_seq);
/* Wait until device id of resource reports the given health. */
int fk_wait_health(FakeKubelet *k, const char *resource, const char *id, bool healthy,
                   int timeout_ms);
/* The options the plugin answered at registration. */
int fk_options(FakeKubelet *k, const char *resource, bool *ret_preferred, bool *ret_prestart);

/* Calls to the registered plugin of resource. */
int fk_call(FakeKubelet *k, const char *resource, const char *method, const uint8_t *req,
            size_t len, uint8_t **ret, size_t *ret_len, RgError *err);
int fk_allocate(FakeKubelet *k, const char *resource, char *const *ids, size_t n,
                V1beta1__AllocateResponse **ret, RgError *err);
int fk_preferred(FakeKubelet *k, const char *resource, char *const *avail, size_t n_avail,
                 char *const *must, size_t n_must, int size, char ***ret_ids, RgError *err);
/* Open ListAndWatch streams the plugin has (for leak checks). */
const char *fk_endpoint(FakeKubelet *k, const char *resource);

/* PodResources: the pods kubelet admitted and their devices. */
int fk_pod_set(FakeKubelet *k, const char *ns, const char *name, const char *resource,
               char *const *ids, size_t n);
/* Pod ns/name (made if new, without devices) runs a container that uses DRA
 * claim ns/claim, as PodResources List shows it. */
int fk_pod_claim(FakeKubelet *k, const char *ns, const char *name, const char *claim);
int fk_pod_remove(FakeKubelet *k, const char *ns, const char *name);
/* Make Get answer as a kubelet with the KubeletPodResourcesGet gate off. */
void fk_podresources_get_disabled(FakeKubelet *k, bool disabled);
/* PodResources Get answers ms late (0: at once), as a loaded kubelet does. */
void fk_podresources_stall(FakeKubelet *k, unsigned ms);
/* Resources whose newest registration delivered a device list (strv). */
int fk_resources(FakeKubelet *k, char ***ret);
