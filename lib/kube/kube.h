/* SPDX-License-Identifier: Apache-2.0 */
/* A small Kubernetes REST client: libcurl over HTTPS, JSON through jansson. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* In-cluster credentials, as a pod's service account has them. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* A projected service-account token rotates: it is read again at least
 * this often, whenever its file changed, and after a 401. */
#define KUBE_TOKEN_REREAD_S 60
#define KUBE_DEFAULT_TIMEOUT_MS 10000
#define KUBE_DEFAULT_MAX_BODY (16u << 20) /* bytes of one response read at most */
#define KUBE_MAX_CONFIG (1u << 20)        /* bytes of a kubeconfig or token file */

typedef struct KubeClient KubeClient;

/*
 * Where the API server is and who we are:
 *   - in-cluster: KUBERNETES_SERVICE_HOST and _PORT, sa_dir's (KUBE_SA_DIR
 *     when NULL) "token" (re-read as it rotates) and "ca.crt";
 *   - a kubeconfig in JSON (`kubectl config view --raw -o json` writes one):
 *     its current context's cluster (server, certificate-authority[-data])
 *     and user (client-certificate[-data] and client-key[-data], or token,
 *     or tokenFile). Relative file names are the kubeconfig's directory's.
 * Errors name the variable, file or JSON path.
 */
int kube_client_in_cluster(const char *sa_dir, KubeClient **ret, RgError *err);
int kube_client_from_kubeconfig(const char *path, KubeClient **ret, RgError *err);
/* KUBECONFIG when set, else in-cluster. */
int kube_client_from_env(KubeClient **ret, RgError *err);
void kube_client_free(KubeClient *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeClient *, kube_client_free);

/* Per-request limits (defaults above). */
void kube_client_set_timeout(KubeClient *k, long timeout_ms);
void kube_client_set_max_body(KubeClient *k, size_t max_body);
const char *kube_client_server(const KubeClient *k);

/* Content types of PATCH */
#define KUBE_PATCH_MERGE "application/merge-patch+json"
#define KUBE_PATCH_APPLY "application/apply-patch+yaml" /* JSON is YAML */

/*
 * One request: method ("GET", "POST", "PUT", "PATCH", "DELETE") on path
 * ("/apis/resource.k8s.io/v1/..."; query included), body sent as JSON (or
 * with content_type, for PATCH), the answer's JSON in *ret (may be NULL).
 * 0 on 2xx. Otherwise err->code is the HTTP status (0: no answer) and
 * err->msg "<METHOD> <path>: <status> <reason>: <Status message>", and the
 * return is -ENOENT (404), -EEXIST (409), -ESTALE (410 Gone), -EACCES
 * (401, 403), -EINVAL (400, 422), -EAGAIN (429), -EIO (5xx and other
 * statuses), -EFBIG (answer over max_body), -ETIMEDOUT, -ECONNREFUSED (no
 * connection), -EBADMSG (an answer that is not JSON).
 */
int kube_request(KubeClient *k, const char *method, const char *path, const char *content_type,
                 json_t *body, json_t **ret, RgError *err);
static inline int kube_get(KubeClient *k, const char *path, json_t **ret, RgError *err) {
    return kube_request(k, "GET", path, NULL, NULL, ret, err);
}

/*
 * A watch: GET path (with "watch=1" in its query) and call fn for every
 * event as it arrives ({"type": ..., "object": ...}, one JSON per line).
 * Returns when the server ends the stream (0), fn returns < 0 (that), *stop
 * turns true (-ECANCELED, within about a second), or on an error as
 * kube_request. No overall timeout: give the server timeoutSeconds.
 */
typedef int (*kube_watch_fn)(void *userdata, const char *type, json_t *object);
int kube_watch(KubeClient *k, const char *path, kube_watch_fn fn, void *userdata,
               const atomic_bool *stop, RgError *err);

/* Percent-encode s for a query value or path segment; NULL on ENOMEM. */
char *kube_escape(const char *s);
