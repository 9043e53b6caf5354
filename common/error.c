/* RgError formatting. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int rg_error(RgError *err, int r, int code, const char *fmt, ...) {
    va_list ap;

    if (!err)
        return r;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return r;
}

/* A long message is cut, by design. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
int rg_error_wrap(RgError *err, int r, int code, const char *prefix) {
    char old[sizeof(err->msg)];

    if (!err)
        return r;
    snprintf(old, sizeof(old), "%s", err->msg);
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    err->code = code;
    return r;
}
