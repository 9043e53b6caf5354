/* SPDX-License-Identifier: Apache-2.0 */
/* Cleanup attributes, ownership transfer and small helpers used everywhere. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Take a pointer or fd out of a cleanup-managed variable. */
#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        typeof(p) _p_ = (p);                                                                       \
        (p) = NULL;                                                                                \
        _p_;                                                                                       \
    })
#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _fd_ = (fd);                                                                           \
        (fd) = -EBADF;                                                                             \
        _fd_;                                                                                      \
    })

/* One cleanup function per library type, next to the wrapper that owns it. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
    static inline void func##p(type *p) {                                                          \
        if (*p)                                                                                    \
            func(*p);                                                                              \
    }

static inline void freep(void *p) {
    free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}
#define _cleanup_close_ _cleanup_(closep)

static inline int negative_errno(void) {
    return errno > 0 ? -errno : -EIO;
}

static inline int streq_ptr(const char *a, const char *b) {
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)
