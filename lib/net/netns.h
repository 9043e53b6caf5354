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
 * Run fn(arg) with the calling thread in netns_fd's network namespace, then
 * back in its own, and return fn's result. setns(CLONE_NEWNET) moves only
 * the calling thread, so no other thread of the process (gRPC's) ever
 * changes namespace; fn must open its netlink sockets itself, so they live
 * in the target namespace. (A thread of its own for the setns() cost a new
 * thread's scheduling each time: 0.15 ms in a fresh process on a quiet
 * 2-core VM, 0.5 to 1.5 ms in the CNI with the machine busy, against 0.015
 * ms for the two setns() calls.) The thread not getting back home aborts
 * the process.
 */
int netns_run(int netns_fd, int (*fn)(void *arg), void *arg);
