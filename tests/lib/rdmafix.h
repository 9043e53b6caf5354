/* SPDX-License-Identifier: Apache-2.0 */
/* Fixtures for the tests on the kernel's RDMA stack (rdma_rxe): rxe devices and the namespace mode.
 */
#pragma once

#include <stdbool.h>

#include "netlink.h"
#include "rdma.h"

/* Exit 77 (ctest: skipped) saying why unless the test runs as root, with
 * rdma_rxe loaded, in the initial network namespace (rxe devices and the
 * RDMA mode live there). */
void rdmafix_require_rxe(void);
/* RDMA netlink in this namespace into *ret_nl and the mode the node has
 * into *ret_mode; a failure fails the test. */
void rdmafix_open(Netlink **ret_nl, RdmaNetnsMode *ret_mode);
/* Does nl's namespace see the RDMA device called name? It into *ret (may be NULL). */
bool rdmafix_dev_listed(Netlink *nl, const char *name, RdmaDevice *ret);
/* `rdma link add name type rxe netdev ndev`; a failure fails the test with the kernel's text. */
void rdmafix_rxe_add(Netlink *nl, const char *name, const char *ndev);
/* The device called name deleted where nl sees it (what a killed run left;
 * nl NULL: nothing to do). */
void rdmafix_dev_remove(Netlink *nl, const char *name);
/* The mode set: the kernel takes it only while init_net is the only
 * namespace, and one just closed goes on a workqueue, so an EBUSY is asked
 * again for 10 s (scaled). 0 or -errno. */
int rdmafix_mode_set(Netlink *nl, RdmaNetnsMode m);
/* The mode set back to original, the outcome printed. */
void rdmafix_mode_restore(Netlink *nl, RdmaNetnsMode original);
