/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl by its SONAME, its functions looked up by name, never hand-written. */
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dltable.h"
#include "kubecurl.h"
#include "macro.h"

KubeCurl kube_curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_error[256];

static const DlSymbol symbols[] = {
    DL_SYMBOL(KubeCurl, global_init, "curl_global_init"),
    DL_SYMBOL(KubeCurl, easy_init, "curl_easy_init"),
    DL_SYMBOL(KubeCurl, easy_setopt, "curl_easy_setopt"),
    DL_SYMBOL(KubeCurl, easy_perform, "curl_easy_perform"),
    DL_SYMBOL(KubeCurl, easy_getinfo, "curl_easy_getinfo"),
    DL_SYMBOL(KubeCurl, easy_reset, "curl_easy_reset"),
    DL_SYMBOL(KubeCurl, easy_cleanup, "curl_easy_cleanup"),
    DL_SYMBOL(KubeCurl, easy_strerror, "curl_easy_strerror"),
    DL_SYMBOL(KubeCurl, slist_append, "curl_slist_append"),
    DL_SYMBOL(KubeCurl, slist_free_all, "curl_slist_free_all"),
};

static void load(void) {
    KubeCurl c;
    CURLcode cc;

    load_result = dl_table_load(RAILGATE_CURL_SONAME, symbols, ELEMENTSOF(symbols), &c, sizeof(c),
                                load_error, sizeof(load_error));
    if (load_result < 0)
        return;
    cc = c.global_init(CURL_GLOBAL_DEFAULT);
    if (cc != CURLE_OK) {
        snprintf(load_error, sizeof(load_error), "curl_global_init: %s", c.easy_strerror(cc));
        load_result = -EIO;
        return;
    }
    kube_curl = c;
}

int kube_curl_load(RgError *err) {
    pthread_once(&load_once, load);
    if (load_result < 0)
        return rg_error(err, load_result, 0, "the Kubernetes API client's libcurl: %s", load_error);
    return 0;
}
