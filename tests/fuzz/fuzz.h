/* SPDX-License-Identifier: Apache-2.0 */
/* What every fuzz target shares: the libFuzzer entry points and invariant checks. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defined by each target; LLVMFuzzerInitialize only where a target needs set-up. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant of the code under test: a violation is a bug, reported as a crash. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Well-formed UTF-8 (RFC 3629): what jansson and the CNI error JSON accept. */
static inline int fuzz_utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        size_t n = *p < 0x80             ? 0
                   : (*p & 0xe0) == 0xc0 ? 1
                   : (*p & 0xf0) == 0xe0 ? 2
                   : (*p & 0xf8) == 0xf0 ? 3
                                         : 4;
        unsigned cp = n == 0 ? *p : n == 1 ? (*p & 0x1fu) : n == 2 ? (*p & 0x0fu) : (*p & 0x07u);

        if (n == 4 || (n == 1 && cp < 2))
            return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i] & 0x3fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        p += n + 1;
    }
    return 1;
}

/* The input as a malloc'd NUL-terminated string (an embedded NUL ends it early). */
static inline char *fuzz_cstring(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);

    FUZZ_CHECK(s);
    if (size)
        memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* The input in a heap block of exactly its size, as gRPC hands a handler its request. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1);

    FUZZ_CHECK(p);
    if (size)
        memcpy(p, data, size);
    return p;
}
