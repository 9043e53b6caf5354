/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespaces: run a function with its netlink sockets inside one. */
#pragma once

#include "macro.h"

/* Open a netns file (/run/netns/x, /proc/<pid>/ns/net) O_RDONLY|O_CLOEXEC.
 * -ENOENT when it is gone, -EINVAL when it is not a network namespace. */
int netns_open(const char *path, int *ret_fd);
/* The caller's own network namespace. */
int netns_open_current(int *ret_fd);
/* 1 if netns_fd is the calling thread's network namespace, 0 if not, -errno. */
int netns_is_current(int netns_fd);
/*
 * Run fn(arg) on a short-lived thread that has joined netns_fd, and return
 * its result. setns() moves only that thread, so nothing else in the process
 * (gRPC's threads, the caller) ever changes namespace; fn must open its
 * netlink sockets itself, so they live in the target namespace.
 */
int netns_run(int netns_fd, int (*fn)(void *arg), void *arg);
