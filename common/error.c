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
