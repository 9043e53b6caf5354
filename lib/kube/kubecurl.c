/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl by its SONAME, its functions looked up by name, never hand-written. */
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kubecurl.h"
#include "macro.h"

KubeCurl kube_curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_error[256];

#define SYM(field, name)                                                                           \
    { offsetof(KubeCurl, field), name }

static const struct {
    size_t offset;
    const char *name;
} symbols[] = {
    SYM(global_init, "curl_global_init"),   SYM(easy_init, "curl_easy_init"),
    SYM(easy_setopt, "curl_easy_setopt"),   SYM(easy_perform, "curl_easy_perform"),
    SYM(easy_getinfo, "curl_easy_getinfo"), SYM(easy_reset, "curl_easy_reset"),
    SYM(easy_cleanup, "curl_easy_cleanup"), SYM(easy_strerror, "curl_easy_strerror"),
    SYM(slist_append, "curl_slist_append"), SYM(slist_free_all, "curl_slist_free_all"),
};

static void load(void) {
    KubeCurl c = {0};
    void *so = dlopen(RAILGATE_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    CURLcode cc;

    if (!so) {
        snprintf(load_error, sizeof(load_error), "%s", dlerror());
        load_result = -ELIBACC;
        return;
    }
    for (size_t i = 0; i < ELEMENTSOF(symbols); i++) {
        void *f = dlsym(so, symbols[i].name);
        if (!f) {
            snprintf(load_error, sizeof(load_error), "%s: no %s", RAILGATE_CURL_SONAME,
                     symbols[i].name);
            load_result = -ELIBACC;
            return; /* never closed: a library's constructors may not be undone */
        }
        memcpy((char *)&c + symbols[i].offset, &f, sizeof(f));
    }
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
