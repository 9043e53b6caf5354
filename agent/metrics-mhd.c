/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd by its SONAME, its functions looked up by name, never hand-written. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dltable.h"
#include "macro.h"
#include "metrics-mhd.h"

MetricsMhd metrics_mhd;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_error[256];

static const DlSymbol symbols[] = {
    DL_SYMBOL(MetricsMhd, start_daemon, "MHD_start_daemon"),
    DL_SYMBOL(MetricsMhd, stop_daemon, "MHD_stop_daemon"),
    DL_SYMBOL(MetricsMhd, create_response_from_buffer, "MHD_create_response_from_buffer"),
    DL_SYMBOL(MetricsMhd, add_response_header, "MHD_add_response_header"),
    DL_SYMBOL(MetricsMhd, queue_response, "MHD_queue_response"),
    DL_SYMBOL(MetricsMhd, destroy_response, "MHD_destroy_response"),
    DL_SYMBOL(MetricsMhd, get_connection_info, "MHD_get_connection_info"),
};

static void load(void) {
    load_result = dl_table_load(RAILGATE_MHD_SONAME, symbols, ELEMENTSOF(symbols), &metrics_mhd,
                                sizeof(metrics_mhd), load_error, sizeof(load_error));
}

int metrics_mhd_load(RgError *err) {
    pthread_once(&load_once, load);
    if (load_result < 0)
        return rg_error(err, load_result, 0, "the metrics server's libmicrohttpd: %s", load_error);
    return 0;
}
