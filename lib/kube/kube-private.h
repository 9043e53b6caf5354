/* SPDX-License-Identifier: Apache-2.0 */
/* What kubeconfig.c, kube.c and kubewatch.c share about a client. */
#pragma once

#include <pthread.h>
#include <time.h>

#include "kube.h"

/* A credential given as a file or as its bytes (kubeconfig's *-data). */
typedef struct KubeBlob {
    char *file;
    char *data;
    size_t len;
} KubeBlob;

struct KubeClient {
    char *server; /* "https://host:port", no trailing slash */
    KubeBlob ca, cert, key;
    char *static_token; /* kubeconfig "token" */
    char *token_file;   /* service account or kubeconfig "tokenFile" */
    long timeout_ms;
    size_t max_body;

    pthread_mutex_t lock; /* the token below */
    char *token;          /* the current bearer token, NULL if none */
    time_t token_read_at; /* CLOCK_MONOTONIC seconds */
    struct timespec token_mtime;
    /* a CURL * that kube_request reuses (it keeps the connection); a
     * request while it is busy takes a handle of its own */
    pthread_mutex_t curl_lock;
    void *curl;
};

/* A client with the defaults; loads libcurl the first time (kubecurl.h). */
int kube_client_alloc(KubeClient **ret, RgError *err);
/* The bearer token to send now (a copy, NULL when there is none): from
 * token_file, read again when force, when it changed, or after
 * KUBE_TOKEN_REREAD_S. Takes the lock. */
int kube_token(KubeClient *k, bool force, char **ret, RgError *err);
/* Set the TLS, proxy and auth options shared by every request on handle
 * (a CURL *); headers is appended to (a struct curl_slist **). */
int kube_setup_handle(KubeClient *k, void *handle, const char *token, void **headers);
/* -errno and err for an HTTP status and its body (a Status, or anything). */
int kube_status_error(const char *method, const char *path, long status, const char *body,
                      size_t len, RgError *err);
/* -errno and err for a libcurl result code. */
int kube_curl_error(const char *method, const char *path, int code, const char *detail,
                    RgError *err);
