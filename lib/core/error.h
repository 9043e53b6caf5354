/* SPDX-License-Identifier: Apache-2.0 */
/* A small error carrier for the boundaries that must explain a failure. */
#pragma once

#include "macro.h"

/*
 * Library code returns -errno; where a human needs to know what was wrong
 * (config validation, CNI error JSON, gRPC status details) it also fills one
 * of these. code is boundary-specific: a CNI error code, a gRPC status, or 0.
 */
typedef struct RgError {
    int code;
    char msg[512];
} RgError;

/* Format into err (if non-NULL) and return r, so callers can
 * "return rg_error(err, -EINVAL, 0, "...")". */
int rg_error(RgError *err, int r, int code, const char *fmt, ...) _printf_(4, 5);
/* Put prefix in front of err->msg and set its code; returns r. */
int rg_error_wrap(RgError *err, int r, int code, const char *prefix);
