/* Atomic publish, bounded read and mkdir -p for the state dir. */
#include "fileio.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "macro.h"

static int write_all(int fd, const char *s, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        s += w;
        len -= (size_t)w;
    }
    return 0;
}

static int parent_of(const char *path, char *buf, size_t n) {
    const char *slash = strrchr(path, '/');

    if (!slash)
        return snprintf(buf, n, ".") >= (int)n ? -ENAMETOOLONG : 0;
    if ((size_t)(slash - path) + 1 >= n)
        return -ENAMETOOLONG;
    if (slash == path)
        snprintf(buf, n, "/");
    else
        snprintf(buf, n, "%.*s", (int)(slash - path), path);
    return 0;
}

int fileio_sync_parent(const char *path) {
    char dir[4096];
    _cleanup_close_ int fd = -EBADF;
    int r = parent_of(path, dir, sizeof(dir));

    if (r < 0)
        return r;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    return fsync(fd) < 0 ? -errno : 0;
}

int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                        bool exclusive) {
    char dir[4096], tmp[4200];
    _cleanup_close_ int fd = -EBADF;
    int r;

    r = parent_of(path, dir, sizeof(dir));
    if (r < 0)
        return r;
    /* the temp name does not grow with the final name: a name that fits
     * the directory always has a temp file that does */
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", dir) >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    r = fchmod(fd, mode) < 0 ? -errno : 0;
    if (r >= 0)
        r = write_all(fd, data, len);
    if (r >= 0 && fsync(fd) < 0)
        r = -errno;
    if (r >= 0) {
        /* rename() replaces a symlink at path rather than following it;
         * link() fails with EEXIST on anything there */
        if (exclusive)
            r = link(tmp, path) < 0 ? -errno : 0;
        else
            r = rename(tmp, path) < 0 ? -errno : 0;
    }
    if (r < 0 || exclusive)
        (void)unlink(tmp);
    if (r >= 0)
        r = fileio_sync_parent(path);
    return r;
}

int fileio_read_bounded(const char *path, size_t max, char **ret, size_t *ret_len) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    _cleanup_free_ char *buf = NULL;
    struct stat st;
    size_t len = 0;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EBADFD;
    if ((size_t)st.st_size > max)
        return -EFBIG;
    buf = malloc(max + 1);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t k = read(fd, buf + len, max + 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        len += (size_t)k;
        if (len > max)
            return -EFBIG; /* grew while we read it */
    }
    buf[len] = 0;
    *ret = TAKE_PTR(buf);
    if (ret_len)
        *ret_len = len;
    return 0;
}

int fileio_mkdir_p(const char *path, mode_t mode) {
    char buf[4096];

    if (!*path)
        return -EINVAL;
    if (strlen(path) >= sizeof(buf))
        return -ENAMETOOLONG;
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}
