/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd, loaded when the metrics server starts: with metrics off the agent never maps it.
 */
#pragma once

#include <microhttpd.h>

#include "error.h"

/* libmicrohttpd's own functions, typed from its header; set by metrics_mhd_load. */
typedef struct MetricsMhd {
    typeof(MHD_start_daemon) *start_daemon;
    typeof(MHD_stop_daemon) *stop_daemon;
    typeof(MHD_create_response_from_buffer) *create_response_from_buffer;
    typeof(MHD_add_response_header) *add_response_header;
    typeof(MHD_queue_response) *queue_response;
    typeof(MHD_destroy_response) *destroy_response;
    typeof(MHD_get_connection_info) *get_connection_info;
} MetricsMhd;

extern MetricsMhd metrics_mhd;

/* dlopen RAILGATE_MHD_SONAME once (and with it GnuTLS and what that brings).
 * -ELIBACC, with why in err, when the library or one of its functions is missing. */
int metrics_mhd_load(RgError *err);
