/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespaces opened, compared and entered for a call, by the calling thread alone. */
#include "netns.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* Only an nsfs inode is opened for reading: O_PATH first, so that a path
 * naming a device or a FIFO is never really opened (no side effects), and
 * a procfs file (/proc/self/stat) is refused before it is read. */
int netns_open(const char *path, int *ret_fd) {
    _cleanup_close_ int p = open(path, O_PATH | O_CLOEXEC);
    char self[64];
    struct statfs sfs;
    int fd;

    if (p < 0)
        return -errno;
    if (fstatfs(p, &sfs) < 0)
        return -errno;
    if (sfs.f_type != NSFS_MAGIC)
        return -EINVAL;
    snprintf(self, sizeof(self), "/proc/self/fd/%d", p);
    fd = open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* a mount, pid or user namespace is on nsfs too */
    if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
        close(fd);
        return -EINVAL;
    }
    *ret_fd = fd;
    return 0;
}

int netns_open_current(int *ret_fd) {
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    *ret_fd = fd;
    return 0;
}

int netns_is_current(int netns_fd) {
    struct stat a, b;

    if (fstat(netns_fd, &a) < 0 || stat("/proc/thread-self/ns/net", &b) < 0)
        return -errno;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int netns_run(int netns_fd, int (*fn)(void *arg), void *arg) {
    _cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int r;

    if (home < 0)
        return -errno;
    /* CLONE_NEWNET also checks that netns_fd really is a network namespace */
    if (setns(netns_fd, CLONE_NEWNET) < 0)
        return errno == EINVAL ? -EINVAL : -errno;
    r = fn(arg);
    /* Back home, or nothing more may run on this thread: every socket it
     * opened after would be the other namespace's. It cannot fail short of
     * the kernel running out of memory: the namespace is this thread's own
     * and the capability the first setns() needed is the same. */
    if (setns(home, CLONE_NEWNET) < 0) {
        fprintf(stderr, "railgate: cannot return to the thread's own network namespace: %m\n");
        abort();
    }
    return r;
}
