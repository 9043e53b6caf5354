/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd by its SONAME, its functions looked up by name, never hand-written. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "metrics-mhd.h"

MetricsMhd metrics_mhd;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_error[256];

#define SYM(field, name)                                                                           \
    { offsetof(MetricsMhd, field), name }

static const struct {
    size_t offset;
    const char *name;
} symbols[] = {
    SYM(start_daemon, "MHD_start_daemon"),
    SYM(stop_daemon, "MHD_stop_daemon"),
    SYM(create_response_from_buffer, "MHD_create_response_from_buffer"),
    SYM(add_response_header, "MHD_add_response_header"),
    SYM(queue_response, "MHD_queue_response"),
    SYM(destroy_response, "MHD_destroy_response"),
    SYM(get_connection_info, "MHD_get_connection_info"),
};

static void load(void) {
    MetricsMhd m = {0};
    void *so = dlopen(RAILGATE_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);

    if (!so) {
        snprintf(load_error, sizeof(load_error), "%s", dlerror());
        load_result = -ELIBACC;
        return;
    }
    for (size_t i = 0; i < ELEMENTSOF(symbols); i++) {
        void *f = dlsym(so, symbols[i].name);
        if (!f) {
            snprintf(load_error, sizeof(load_error), "%s: no %s", RAILGATE_MHD_SONAME,
                     symbols[i].name);
            load_result = -ELIBACC;
            return; /* never closed: a library's constructors may not be undone */
        }
        memcpy((char *)&m + symbols[i].offset, &f, sizeof(f));
    }
    metrics_mhd = m;
}

int metrics_mhd_load(RgError *err) {
    pthread_once(&load_once, load);
    if (load_result < 0)
        return rg_error(err, load_result, 0, "the metrics server's libmicrohttpd: %s", load_error);
    return 0;
}
