/* setns() on a dedicated thread, so that no other thread changes namespace. */
#include "netns.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>

int netns_open(const char *path, int *ret_fd) {
    struct statfs sfs;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    if (fstatfs(fd, &sfs) < 0 || (sfs.f_type != NSFS_MAGIC && sfs.f_type != PROC_SUPER_MAGIC)) {
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

typedef struct NetnsCall {
    int fd;
    int (*fn)(void *arg);
    void *arg;
    int result;
} NetnsCall;

static void *netns_thread(void *p) {
    NetnsCall *c = p;

    /* CLONE_NEWNET also checks that fd really is a network namespace */
    if (setns(c->fd, CLONE_NEWNET) < 0)
        c->result = errno == EINVAL ? -EINVAL : -errno;
    else
        c->result = c->fn(c->arg);
    return NULL;
}

int netns_run(int netns_fd, int (*fn)(void *arg), void *arg) {
    NetnsCall c = {.fd = netns_fd, .fn = fn, .arg = arg};
    pthread_t t;
    int r;

    r = pthread_create(&t, NULL, netns_thread, &c);
    if (r != 0)
        return -r;
    pthread_join(t, NULL);
    return c.result;
}
