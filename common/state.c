/* Unit attachment markers in the state dir. */
#include "state.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "macro.h"
#include "strv.h"

static int unit_path(const char *state_dir, const char *unit_id, char *buf, size_t n) {
    if (strchr(unit_id, '/') || streq(unit_id, ".") || streq(unit_id, ".."))
        return -EINVAL;
    if ((size_t)snprintf(buf, n, "%s/units/%s", state_dir, unit_id) >= n)
        return -ENAMETOOLONG;
    return 0;
}

bool state_unit_attached(const char *state_dir, const char *unit_id) {
    char path[4096];

    if (unit_path(state_dir, unit_id, path, sizeof(path)) < 0)
        return false;
    return access(path, F_OK) == 0;
}

int state_unit_mark(const char *state_dir, const char *unit_id, const char *owner) {
    char path[4096], dir[4096];
    _cleanup_close_ int fd = -EBADF;
    int r;

    r = unit_path(state_dir, unit_id, path, sizeof(path));
    if (r < 0)
        return r;
    if ((size_t)snprintf(dir, sizeof(dir), "%s/units", state_dir) >= sizeof(dir))
        return -ENAMETOOLONG;
    if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    size_t len = strlen(owner);
    if (write(fd, owner, len) != (ssize_t)len)
        return -EIO;
    return 0;
}

int state_unit_unmark(const char *state_dir, const char *unit_id) {
    char path[4096];
    int r = unit_path(state_dir, unit_id, path, sizeof(path));

    if (r < 0)
        return r;
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static int mkdir_p(const char *path, mode_t mode) {
    char buf[4096];

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

int state_dir_ensure(const char *state_dir) {
    char dir[4096];
    int r = mkdir_p(state_dir, 0700);

    if (r < 0)
        return r;
    if ((size_t)snprintf(dir, sizeof(dir), "%s/units", state_dir) >= sizeof(dir))
        return -ENAMETOOLONG;
    return mkdir_p(dir, 0700);
}

int state_unit_claim(const char *state_dir, const char *unit_id, const char *owner,
                     char *ret_holder, size_t n) {
    char path[4096];
    _cleanup_close_ int fd = -EBADF;
    int r;

    r = state_dir_ensure(state_dir);
    if (r >= 0)
        r = unit_path(state_dir, unit_id, path, sizeof(path));
    if (r < 0)
        return r;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        size_t len = strlen(owner);
        return write(fd, owner, len) == (ssize_t)len ? 0 : -EIO;
    }
    if (errno != EEXIST)
        return -errno;
    r = state_unit_holder(state_dir, unit_id, ret_holder, n);
    if (r < 0)
        return r;
    return streq(ret_holder, owner) ? 0 : -EBUSY;
}

int state_unit_holder(const char *state_dir, const char *unit_id, char *buf, size_t n) {
    char path[4096];
    _cleanup_close_ int fd = -EBADF;
    int r = unit_path(state_dir, unit_id, path, sizeof(path));

    if (r < 0)
        return r;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t k = read(fd, buf, n - 1);
    if (k < 0)
        return -errno;
    buf[k] = 0;
    return 0;
}

int state_unit_list(const char *state_dir, char ***ret) {
    char dir[4096];
    char **l = NULL;
    DIR *d;
    int r = 0;

    if ((size_t)snprintf(dir, sizeof(dir), "%s/units", state_dir) >= sizeof(dir))
        return -ENAMETOOLONG;
    d = opendir(dir);
    if (!d && errno != ENOENT)
        return -errno;
    for (struct dirent *de; d && r >= 0 && (de = readdir(d));)
        if (de->d_name[0] != '.')
            r = strv_push(&l, de->d_name);
    if (d)
        closedir(d);
    if (r >= 0 && !l && !(l = calloc(1, sizeof(char *))))
        r = -ENOMEM;
    if (r < 0) {
        strv_free(l);
        return r;
    }
    *ret = l;
    return 0;
}

int state_unit_release_owner(const char *state_dir, const char *owner) {
    char **ids = NULL, holder[300];
    int r = state_unit_list(state_dir, &ids);

    if (r < 0)
        return r;
    for (char **id = ids; *id; id++)
        if (state_unit_holder(state_dir, *id, holder, sizeof(holder)) >= 0 && streq(holder, owner))
            (void)state_unit_unmark(state_dir, *id);
    strv_free(ids);
    return 0;
}
