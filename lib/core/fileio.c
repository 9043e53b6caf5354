/* SPDX-License-Identifier: Apache-2.0 */
/* Atomic publish, bounded read and mkdir -p. */
#include "fileio.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "macro.h"

/* A file read grows its buffer from what fstat() says, up to max. */
#define READ_CHUNK 16384

int fileio_write_all(int fd, const void *data, size_t len) {
    const char *s = data;

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

int fileio_temp_open(const char *path, FileioTemp *t) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char dir[4096];
    int r;

    t->fd = -EBADF;
    t->path[0] = 0;
    if (!*base)
        return -EISDIR;
    r = parent_of(path, dir, sizeof(dir));
    if (r < 0)
        return r;
    /* a long final name is cut in the temp name: a name that fits the
     * directory always has a temp file that does */
    if ((size_t)snprintf(t->path, sizeof(t->path), "%s/.%.32s.tmp-XXXXXX", dir, base) >=
        sizeof(t->path))
        return -ENAMETOOLONG;
    t->fd = mkostemp(t->path, O_CLOEXEC);
    if (t->fd < 0) {
        t->path[0] = 0;
        return -errno;
    }
    return 0;
}

void fileio_temp_discard(FileioTemp *t) {
    if (t->fd >= 0)
        close(t->fd);
    if (t->path[0])
        (void)unlink(t->path);
    t->fd = -EBADF;
    t->path[0] = 0;
}

int fileio_temp_commit(FileioTemp *t, const char *path, const FileioWrite *w) {
    int r = 0;

    if (w->chown && fchown(t->fd, w->uid, w->gid) < 0)
        r = -errno;
    if (r >= 0 && fchmod(t->fd, w->mode) < 0)
        r = -errno;
    if (r >= 0 && !w->boot_scoped && fsync(t->fd) < 0)
        r = -errno;
    if (r >= 0) {
        int fd = TAKE_FD(t->fd);
        r = close(fd) < 0 ? -errno : 0;
    }
    /* rename() replaces a symlink at path rather than following it; link()
     * fails with EEXIST on anything there */
    if (r >= 0)
        r = (w->exclusive ? link(t->path, path) : rename(t->path, path)) < 0 ? -errno : 0;
    if (r >= 0 && !w->exclusive)
        t->path[0] = 0; /* renamed: nothing left to unlink */
    fileio_temp_discard(t);
    return r < 0 || w->boot_scoped ? r : fileio_sync_parent(path);
}

int fileio_write_atomic_with(const char *path, const void *data, size_t len, const FileioWrite *w) {
    FileioTemp t;
    int r = fileio_temp_open(path, &t);

    if (r >= 0)
        r = fileio_write_all(t.fd, data, len);
    if (r < 0) {
        fileio_temp_discard(&t);
        return r;
    }
    return fileio_temp_commit(&t, path, w);
}

int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                        bool exclusive) {
    return fileio_write_atomic_with(path, data, len,
                                    &(FileioWrite){.mode = mode, .exclusive = exclusive});
}

ssize_t fileio_read_some(int fd, void *buf, size_t n) {
    for (;;) {
        ssize_t k = read(fd, buf, n);
        if (k >= 0 || errno != EINTR)
            return k < 0 ? -errno : k;
    }
}

static int read_fd(int fd, size_t max, char **ret, size_t *ret_len) {
    _cleanup_free_ char *buf = NULL;
    struct stat st;
    size_t len = 0, alloc;

    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (!S_ISREG(st.st_mode))
        return -EBADFD;
    if ((size_t)st.st_size > max)
        return -EFBIG;
    /* room for what fstat() says and one byte more, to see the end */
    alloc = (size_t)st.st_size + 1;
    for (;;) {
        if (len == alloc || !buf) {
            size_t want = buf ? alloc * 2 : alloc;
            char *m;
            if (want < READ_CHUNK)
                want = READ_CHUNK;
            alloc = want < max + 1 ? want : max + 1;
            m = realloc(buf, alloc + 1);
            if (!m)
                return -ENOMEM;
            buf = m;
        }
        ssize_t k = fileio_read_some(fd, buf + len, alloc - len);
        if (k < 0)
            return (int)k;
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

static int read_path(const char *path, size_t max, bool follow, char **ret, size_t *ret_len) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    _cleanup_close_ int fd =
        open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW));

    if (fd < 0)
        return -errno;
    return read_fd(fd, max, ret, ret_len);
}

int fileio_read_bounded(const char *path, size_t max, char **ret, size_t *ret_len) {
    return read_path(path, max, false, ret, ret_len);
}

int fileio_read_file(const char *path, size_t max, char **ret, size_t *ret_len) {
    return read_path(path, max, true, ret, ret_len);
}

int fileio_mkdir_p(const char *path, mode_t mode) {
    char buf[4096];
    struct stat st;

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
    if (stat(path, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
