/* SPDX-License-Identifier: Apache-2.0 */
/* RgError formatting. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at p (RFC 3629), 0 if there is none. */
static size_t utf8_len(const unsigned char *p) {
    size_t n = p[0] < 0x80             ? 1
               : (p[0] & 0xe0) == 0xc0 ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    unsigned cp = n == 2 ? (p[0] & 0x1fu) : n == 3 ? (p[0] & 0x0fu) : (p[0] & 0x07u);

    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

/* Messages go into the CNI error JSON and gRPC details, which take UTF-8
 * only: a byte of a sequence that a "%.64s" cut, or that a parser's error
 * text quoted, becomes '?'. */
static void utf8_sanitize(char *s) {
    unsigned char *p = (unsigned char *)s;

    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0)
            *p++ = '?';
        else
            p += n;
    }
}

int rg_error(RgError *err, int r, int code, const char *fmt, ...) {
    va_list ap;

    if (!err)
        return r;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    utf8_sanitize(err->msg);
    return r;
}

/* A long message is cut, by design. */
#ifdef __clang__
#if __has_warning("-Wformat-truncation")
#pragma clang diagnostic ignored "-Wformat-truncation"
#endif
#else
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
int rg_error_wrap(RgError *err, int r, int code, const char *prefix) {
    char old[sizeof(err->msg)];

    if (!err)
        return r;
    snprintf(old, sizeof(old), "%s", err->msg);
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    utf8_sanitize(err->msg);
    err->code = code;
    return r;
}
