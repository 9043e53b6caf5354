/* SPDX-License-Identifier: Apache-2.0 */
/* Fixtures for the tests on the kernel's RDMA stack (rdma_rxe): rxe devices and the namespace mode.
 */
#include "rdmafix.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "testns.h"
#include "macro.h"

#define MODE_WAIT_MS 10000

static void skip_test(const char *why) {
    printf("SKIP: %s\n", why);
    fflush(stdout);
    exit(77);
}

static bool in_initial_netns(void) {
    struct stat a, b;

    return stat("/proc/self/ns/net", &a) == 0 && stat("/proc/1/ns/net", &b) == 0 &&
           a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

void rdmafix_require_rxe(void) {
    testns_require_root();
    if (access("/sys/module/rdma_rxe", F_OK) < 0)
        skip_test(
            "no rdma_rxe module loaded (the VM rung loads it: tests/vm/run.sh --module rdma_rxe)");
    if (!in_initial_netns())
        skip_test(
            "not in the initial network namespace (rxe devices and the RDMA mode live there)");
}

void rdmafix_open(Netlink **ret_nl, RdmaNetnsMode *ret_mode) {
    int r = rdma_open(-1, ret_nl);

    if (r < 0)
        fail_msg("rdma_rxe is loaded but RDMA netlink does not open: %s", strerror(-r));
    assert_int_equal(rdma_netns_mode_get(*ret_nl, ret_mode), 0);
}

bool rdmafix_dev_listed(Netlink *nl, const char *name, RdmaDevice *ret) {
    RdmaDevice *v = NULL;
    size_t n = 0;
    bool found = false;

    assert_int_equal(rdma_dev_list(nl, &v, &n), 0);
    for (size_t i = 0; i < n && !found; i++)
        if (streq(v[i].name, name)) {
            found = true;
            if (ret)
                *ret = v[i];
        }
    free(v);
    return found;
}

void rdmafix_rxe_add(Netlink *nl, const char *name, const char *ndev) {
    int r = rdma_link_add(nl, name, "rxe", ndev);

    if (r < 0) {
        char msg[256] = "";
        (void)netlink_kernel_message(nl, r, msg, sizeof(msg));
        fail_msg("rdma link add %s type rxe netdev %s: %s %s", name, ndev, strerror(-r), msg);
    }
}

void rdmafix_dev_remove(Netlink *nl, const char *name) {
    RdmaDevice d;

    if (nl && rdmafix_dev_listed(nl, name, &d))
        (void)rdma_link_delete(nl, d.index);
}

typedef struct ModeSet {
    Netlink *nl;
    RdmaNetnsMode mode;
    int r;
} ModeSet;

static bool mode_taken(void *arg) {
    ModeSet *s = arg;

    s->r = rdma_netns_mode_set(s->nl, s->mode);
    return s->r != -EBUSY;
}

int rdmafix_mode_set(Netlink *nl, RdmaNetnsMode m) {
    ModeSet s = {.nl = nl, .mode = m};

    /* testns_wait_until() scales the wait */
    if (!testns_wait_until(mode_taken, &s, MODE_WAIT_MS))
        return -EBUSY;
    return s.r;
}

void rdmafix_mode_restore(Netlink *nl, RdmaNetnsMode original) {
    int r = rdmafix_mode_set(nl, original);

    if (r < 0)
        printf("ERROR: the RDMA netns mode could not be set back to %s: %s\n",
               rdma_netns_mode_name(original), strerror(-r));
    else
        printf("RDMA netns mode set back to %s\n", rdma_netns_mode_name(original));
}
