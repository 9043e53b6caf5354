/* SPDX-License-Identifier: Apache-2.0 */
/* List+watch of one collection, as client-go's reflector does it. */
#pragma once

#include "kube.h"

/*
 * kube_informer_run lists path (with query, e.g. a fieldSelector), hands the
 * items to relisted, then watches from the list's resourceVersion and hands
 * every ADDED, MODIFIED and DELETED object to event; bookmarks move the
 * resourceVersion on. When the server ends a watch it watches again from
 * the last resourceVersion; 410 Gone (as a status or an ERROR event) lists
 * again; any other failure goes to failed, then it waits (exponential
 * backoff with jitter, backoff_min_ms to backoff_max_ms) and lists again.
 * A callback that returns < 0 counts as a failure. Runs until *stop.
 */
typedef struct KubeInformer {
    KubeClient *client;
    const char *path;  /* "/apis/resource.k8s.io/v1/resourceslices" */
    const char *query; /* "fieldSelector=..." (escaped), or NULL */
    int (*relisted)(void *userdata, json_t *items);
    int (*event)(void *userdata, const char *type, json_t *object);
    void (*failed)(void *userdata, int r, const RgError *err);
    void *userdata;
    const atomic_bool *stop;
    unsigned watch_timeout_s; /* timeoutSeconds of each watch; default 300 */
    unsigned backoff_min_ms;  /* default 500 */
    unsigned backoff_max_ms;  /* default 30000 */
    RgError *err;             /* where failures are explained */
    unsigned long lists, watches;
} KubeInformer;

int kube_informer_run(KubeInformer *inf);

/* The next wait of an exponential backoff with jitter: a value in
 * [b/2, b] where b doubles from min_ms at every call up to max_ms. */
unsigned kube_backoff_next(unsigned *backoff_ms, unsigned min_ms, unsigned max_ms);
