/* Network namespace fixtures for integration tests: throwaway namespaces and the links in them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "netlink.h"

/* Exit 77 (ctest: skipped) unless the test runs as root; 0 otherwise. */
int testns_require_root(void);

/*
 * Move the test process into a new network namespace with only "lo" (up).
 * Every link a test creates lives there, and the kernel removes it all when
 * the process exits, crash included. unshare() moves only the calling
 * thread, so call it before any thread exists: -EBUSY otherwise.
 */
int testns_enter_private(void);

/*
 * A new network namespace with "lo" up, bind-mounted at
 * /run/netns/rgtest-<tag>-<pid>-<seq> like `ip netns add` does, for tests
 * that need a namespace path (CNI_NETNS). The caller does not join it.
 * It is unmounted and unlinked at exit and on SIGINT, SIGTERM and SIGABRT;
 * leftovers of a killed run (dead pid in the name) are removed by the next
 * run. tag: 1-16 of [A-Za-z0-9_]. ret_path gets the path.
 */
int testns_named_new(const char *tag, char *ret_path, size_t n);
/* Like testns_enter_private(), into a namespace that also has a path. */
int testns_enter_named(const char *tag, char *ret_path, size_t n);
/* Unmount and unlink a namespace made above; -ENOENT if it is not one. */
int testns_named_remove(const char *path);

/*
 * Links, in the calling thread's network namespace (a fresh netlink socket
 * per call, so netns_run() works). -errno on failure: -EEXIST, -ENODEV, ...
 */
int testns_veth_add(const char *a, const char *b);
/* The link called name (netlink.h's Link). */
int testns_link_get(const char *name, Link *ret);
/* Rail NIC k of a test node: the veth pair rail-nic<k> / rail-peer<k>, both up. */
int testns_rail_add(unsigned k);
int testns_link_set_up(const char *name, bool up);
int testns_link_del(const char *name);
/* Move a link into the namespace open at netns_fd; it keeps its name. */
int testns_link_set_netns(const char *name, int netns_fd);
/* cidr: "10.0.0.1/24" or "fd00::1/64". */
int testns_addr_add(const char *name, const char *cidr);

/* Poll pred(arg) every few milliseconds until it holds (true) or timeout_ms
 * passes (false). For waiting on an event, never for timing assertions. */
bool testns_wait_until(bool (*pred)(void *arg), void *arg, int timeout_ms);
