/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI and a rail's RDMA device (issue 27), on the kernel's RDMA stack
 * with Soft-RoCE (tests/vm/run.sh --module rdma_rxe): rail 1's RDMA device
 * is an rxe device on its NIC (the node config's "nic": {"rdma"}). In
 * exclusive mode a pod's RDMA device moves into the pod with its NIC, and
 * rxe cannot (the kernel answers EOPNOTSUPP): the ADD of a pod holding
 * rails 0 and 1 is refused with a message naming the device and the mode,
 * rail 0's NIC (moved before) is brought back by the rollback, and the NICs
 * and the rxe device are where they were, the record and claims gone. In
 * shared mode (the kernel's default) nothing of the RDMA device moves: the
 * same ADD succeeds and records none. With failpoints: a record found
 * again by the device's index and node GUID, not its name (renamed, and a
 * decoy under its name). Root, in the initial network namespace
 * (the mode can change only while it is the only one, and rxe devices live
 * there), skipped elsewhere or without rdma_rxe. The mode is set back to
 * what it was at the end, the rails and the device removed.
 */
#include <fcntl.h>
#include <signal.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "attachment.h"
#include "cnienv.h"
#include "fileio.h"
#include "netns.h"
#include "rdma.h"
#include "rdmafix.h"
#include "state.h"
#include "testns.h"
#include "waitscale.h"

#define RES_A "railgate.io/a"
#define RXE "rgcnirxe1" /* rail 1's RDMA device, on rail-nic1 */
#define NDEV "rail-nic1"
#define CHK "rgcnichk0" /* CHECK's device, on rail-nic5 (not in the pod) */
/* the harness's node: tenant a's rails 0-15, tenant b's rail 16 (a tenant
 * lists one at least) */
#define RAILS 17

static CniEnvT env;
static struct {
    Netlink *nl; /* RDMA netlink in the initial namespace */
    RdmaNetnsMode original;
    bool have_original, env_up;
} F;

/* Whatever failed (also at exit, when a setup assertion ended the run):
 * the device, the rails, the node, the mode it had. */
static void cleanup(void) {
    rdmafix_dev_remove(F.nl, RXE);
    if (F.env_up)
        cnienv_teardown(&env);
    F.env_up = false;
    for (unsigned k = 0; k < RAILS; k++)
        (void)testns_rail_del(k);
    if (F.have_original) {
        rdmafix_mode_restore(F.nl, F.original);
        F.have_original = false;
    }
    netlink_close(F.nl);
    F.nl = NULL;
}

/* Rail 1's NIC has RDMA device RXE (the config's override), published. */
static void config_rdma(void) {
    json_error_t jerr;
    json_t *c = json_load_file(env.config, 0, &jerr);
    json_t *rails = json_deep_copy(json_object_get(c, "rails"));
    char *saved = NULL, path[256], *text = NULL;

    assert_non_null(rails);
    json_object_set_new(json_object_get(json_array_get(rails, 1), "nic"), "rdma", json_string(RXE));
    json_decref(c);
    assert_int_equal(cnienv_config_set(&env, "rails", rails, &saved), 0);
    free(saved);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
    assert_int_equal(cnienv_publish(&env), 0);
    /* the inventory the CNI reads names it as rail 1's */
    snprintf(path, sizeof(path), "%s/inventory.json", env.state);
    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    assert_non_null(strstr(text, "\"rdma\": \"" RXE "\""));
    free(text);
}

static int group_setup(void **state) {
    (void)state;
    rdmafix_require_rxe();
    if (atexit(cleanup) != 0)
        return -1;
    rdmafix_open(&F.nl, &F.original);
    F.have_original = true;
    /* what a killed run left */
    rdmafix_dev_remove(F.nl, RXE);
    for (unsigned k = 0; k < RAILS; k++)
        (void)testns_rail_del(k);
    /* the node, in this (the initial) namespace */
    assert_int_equal(cnienv_setup(&env, RAILS), 0);
    F.env_up = true;
    rdmafix_rxe_add(F.nl, RXE, NDEV);
    config_rdma();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    cleanup();
    return 0;
}

static int cni(const char *cmd, CniPod *p, CniRun *r) {
    return cnienv_pod_cmd(&env, p, cmd, NULL, r);
}

static void pod_new(CniPod *p) {
    char *ids[] = {"rail0", "rail1"};

    assert_int_equal(cnienv_pod_new(&env, p, "rdma", "team-a", RES_A, ids, 2), 0);
}

/* Does the pod's namespace see an RDMA device called name? */
static bool pod_sees(const CniPod *p, const char *name) {
    Netlink *nl = NULL;
    int fd = -1;
    bool seen;

    assert_int_equal(netns_open(p->netns, &fd), 0);
    assert_int_equal(rdma_open(fd, &nl), 0);
    seen = rdmafix_dev_listed(nl, name, NULL);
    netlink_close(nl);
    close(fd);
    return seen;
}

/* Exclusive mode: rxe cannot follow its NIC. The ADD is refused naming the
 * device and the mode; rail 0, moved before rail 1's device was refused,
 * is home again; rail 1's NIC never left; the rxe device is in init_net,
 * unchanged (index, name), and the pod does not see it; nothing recorded or
 * claimed. */
static void test_exclusive_refused(void **state) {
    RdmaDevice before, after;
    Link nic0, nic1, l;
    CniPod p;
    CniRun r;
    RdmaNetnsMode m;

    (void)state;
    /* the mode before any pod namespace exists */
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_EXCLUSIVE), 0);
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    assert_int_equal(m, RDMA_NETNS_EXCLUSIVE);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &before));
    assert_int_equal(testns_link_get("rail-nic0", &nic0), 0);
    assert_int_equal(testns_link_get(NDEV, &nic1), 0);
    pod_new(&p);
    assert_false(pod_sees(&p, RXE)); /* exclusive: init_net's devices are not the pod's */

    assert_int_equal(cni("ADD", &p, &r), 0);
    if (r.status != 1)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 1);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 101);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    assert_non_null(msg);
    if (!strstr(msg, "RDMA device " RXE) || !strstr(msg, "exclusive"))
        fail_msg("message \"%s\" does not name the RDMA device " RXE " and the exclusive mode",
                 msg);
    cni_run_done(&r);

    /* both NICs on the host, as they were (rail 0's came back under its
     * name, at its ifindex) */
    assert_true(cnienv_nothing_moved(&env, &p, 0));
    assert_true(cnienv_nothing_moved(&env, &p, 1));
    assert_int_equal(testns_link_get("rail-nic0", &l), 0);
    assert_int_equal(l.ifindex, nic0.ifindex);
    assert_int_equal(l.flags & IFF_UP, nic0.flags & IFF_UP);
    assert_int_equal(testns_link_get(NDEV, &l), 0);
    assert_int_equal(l.ifindex, nic1.ifindex);
    /* the rxe device: still registered (its netdev never moved), in init_net */
    assert_true(rdmafix_dev_listed(F.nl, RXE, &after));
    assert_int_equal(after.index, before.index);
    assert_false(pod_sees(&p, RXE));
    /* a pod namespace that lives keeps the mode: the kernel refuses a change */
    assert_int_equal(rdma_netns_mode_set(F.nl, RDMA_NETNS_SHARED), -EBUSY);
    cnienv_pod_free(&env, &p);
}

#ifdef RAILGATE_FAILPOINTS
static int cni_env(const char *cmd, CniPod *p, const char *fp, CniRun *r) {
    char *extra[] = {(char *)fp, NULL};

    return cnienv_pod_cmd(&env, p, cmd, fp ? extra : NULL, r);
}

/* Exclusive mode, an ADD killed once its record is written and before
 * anything moved: the record names rail 1's RDMA device by name, index and
 * node GUID. The device is then renamed, and a device made under its name
 * (an rxe on rail 0's NIC: another index, another GUID), as a tenant does
 * to its own; the DEL finds the device by its index, not the decoy by the
 * name, cannot give it its name back while the decoy holds it, says so and
 * keeps the record; once the decoy is gone the next DEL gives the name back
 * and lets the record go. */
static void test_del_finds_by_index(void **state) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    RdmaDevice dev, decoy, now;
    CniPod p;
    CniRun r;

    (void)state;
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_EXCLUSIVE), 0);
    if (!rdmafix_dev_listed(F.nl, RXE, NULL))
        rdmafix_rxe_add(F.nl, RXE, NDEV);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &dev));
    pod_new(&p);
    assert_int_equal(cni_env("ADD", &p, "RAILGATE_FAILPOINT=add-before-move=kill", &r), 0);
    assert_int_equal(r.status, 128 + SIGKILL);
    cni_run_done(&r);
    assert_int_equal(state_record_load(env.state, p.container, "eth0", &a), 0);
    assert_int_equal(a->n_nics, 2);
    assert_string_equal(a->nics[0].rdma, "");
    assert_string_equal(a->nics[1].rdma, RXE);
    assert_int_equal(a->nics[1].rdma_index, dev.index);
    assert_true(a->nics[1].rdma_guid == dev.node_guid);

    assert_int_equal(rdma_dev_rename(F.nl, dev.index, "rgcnitenant1"), 0);
    assert_int_equal(rdma_link_add(F.nl, RXE, "rxe", "rail-nic0"), 0);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &decoy));
    assert_int_not_equal(decoy.index, dev.index);
    assert_int_equal(cni_env("DEL", &p, NULL, &r), 0);
    assert_int_equal(r.status, 1);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    assert_non_null(msg);
    if (!strstr(msg, "RDMA device " RXE " is home as rgcnitenant1") ||
        !strstr(msg, "another device holds its name"))
        fail_msg("DEL's message \"%s\" does not say that the name is held", msg);
    cni_run_done(&r);
    attachment_free(TAKE_PTR(a));
    assert_int_equal(state_record_load(env.state, p.container, "eth0", &a), 0);
    assert_int_equal(a->n_nics, 1); /* rail 0 home and let go, rail 1 kept */
    assert_string_equal(a->nics[0].rdma, RXE);
    /* the decoy untouched, the device not renamed */
    assert_true(rdmafix_dev_listed(F.nl, RXE, &now));
    assert_int_equal(now.index, decoy.index);
    assert_true(rdmafix_dev_listed(F.nl, "rgcnitenant1", &now));
    assert_int_equal(now.index, dev.index);

    assert_int_equal(rdma_link_delete(F.nl, decoy.index), 0);
    assert_int_equal(cni_env("DEL", &p, NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(rdmafix_dev_listed(F.nl, RXE, &now));
    assert_int_equal(now.index, dev.index);
    assert_false(rdmafix_dev_listed(F.nl, "rgcnitenant1", NULL));
    assert_true(cnienv_nothing_moved(&env, &p, 0));
    assert_true(cnienv_nothing_moved(&env, &p, 1));
    cnienv_pod_free(&env, &p);
}
#endif

/* Shared mode: every namespace sees every RDMA device, and none moves: the
 * same ADD succeeds as it did before issue 27, its record names no RDMA
 * device, and the DEL brings both NICs home. */
static void test_shared_unchanged(void **state) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    CniPod p;
    CniRun r;
    RdmaNetnsMode m;

    (void)state;
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_SHARED), 0);
    assert_int_equal(rdma_netns_mode_get(F.nl, &m), 0);
    assert_int_equal(m, RDMA_NETNS_SHARED);
    if (!rdmafix_dev_listed(F.nl, RXE, NULL))
        rdmafix_rxe_add(F.nl, RXE, NDEV);
    pod_new(&p);
    assert_true(pod_sees(&p, RXE)); /* shared: the pod sees it, in init_net */

    assert_int_equal(cni("ADD", &p, &r), 0);
    if (r.status)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(ip_has(p.nsname, "link show", "rail0"));
    assert_true(ip_has(p.nsname, "link show", "rail1"));
    assert_int_equal(state_record_load(env.state, p.container, "eth0", &a), 0);
    assert_int_equal(a->n_nics, 2);
    for (size_t i = 0; i < a->n_nics; i++)
        assert_string_equal(a->nics[i].rdma, "");

    assert_int_equal(cni("DEL", &p, &r), 0);
    if (r.status)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(cnienv_nothing_moved(&env, &p, 0));
    assert_true(cnienv_nothing_moved(&env, &p, 1));
    cnienv_pod_free(&env, &p);
}

/*
 * CHECK of a unit's RDMA device: no driver here can move one, so the record
 * of a shared-mode ADD is given an rxe device on a rail that stays on the
 * host (rail 0's and 1's would go with their netdevs), which every namespace
 * sees in shared mode, the pod's too, as if it had moved: CHECK finds it in
 * the pod by index and node GUID and passes; renamed, CHECK names the rename
 * (103); deleted, CHECK says it is not in the pod; the record is put back
 * before the DEL.
 */
static void test_check_rdma(void **state) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    RdmaDevice dev;
    CniPod p;
    CniRun r;

    (void)state;
    assert_int_equal(rdmafix_mode_set(F.nl, RDMA_NETNS_SHARED), 0);
    assert_int_equal(rdma_link_add(F.nl, CHK, "rxe", "rail-nic5"), 0);
    assert_true(rdmafix_dev_listed(F.nl, CHK, &dev));
    pod_new(&p);
    assert_int_equal(cni("ADD", &p, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);

    assert_int_equal(state_record_load(env.state, p.container, "eth0", &a), 0);
    assert_int_equal(a->n_nics, 2);
    snprintf(a->nics[1].rdma, sizeof(a->nics[1].rdma), "%s", CHK);
    a->nics[1].rdma_index = dev.index;
    a->nics[1].rdma_guid = dev.node_guid;
    assert_int_equal(state_record_save(env.state, a), 0);
    assert_int_equal(cni("CHECK", &p, &r), 0);
    if (r.status)
        fprintf(stderr, "CHECK: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);

    assert_int_equal(rdma_dev_rename(F.nl, dev.index, "rgcnichk1"), 0);
    assert_int_equal(cni("CHECK", &p, &r), 0);
    assert_int_not_equal(r.status, 0);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 103);
    assert_non_null(strstr(json_string_value(json_object_get(r.out, "msg")),
                           "RDMA device " CHK " is called rgcnichk1 in the pod"));
    cni_run_done(&r);
    assert_int_equal(rdma_link_delete(F.nl, dev.index), 0);
    assert_int_equal(cni("CHECK", &p, &r), 0);
    assert_int_not_equal(r.status, 0);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 103);
    assert_non_null(
        strstr(json_string_value(json_object_get(r.out, "msg")), "RDMA device " CHK " (index"));
    assert_non_null(strstr(json_string_value(json_object_get(r.out, "msg")), "is not in the pod"));
    cni_run_done(&r);

    a->nics[1].rdma[0] = 0;
    a->nics[1].rdma_index = 0;
    a->nics[1].rdma_guid = 0;
    assert_int_equal(state_record_save(env.state, a), 0);
    assert_int_equal(cni("DEL", &p, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(cnienv_nothing_moved(&env, &p, 0));
    assert_true(cnienv_nothing_moved(&env, &p, 1));
    cnienv_pod_free(&env, &p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusive_refused),
#ifdef RAILGATE_FAILPOINTS
        cmocka_unit_test(test_del_finds_by_index),
#endif
        cmocka_unit_test(test_shared_unchanged),
        cmocka_unit_test(test_check_rdma),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
