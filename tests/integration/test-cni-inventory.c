/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI on the device plugin's published inventory, on a node made of an
 * hwloc XML (dgx-8gpu-4sw: discovery pairs each GPU with the NIC on its
 * switch) and a sysfs fixture that gives each discovered NIC (a link of the
 * harness's rail kind under the XML's netdev name) its PCI function, plus an
 * SR-IOV rail in VF mode. The PCI address is a NIC's identity: a NIC renamed
 * since the inventory is followed, a name now another function's is
 * refused, a function gone from the bus or out of the host (a VF in a pod)
 * is refused, and nothing moves. Without a published inventory (the daemon
 * never ran), a pod with units gets "try again later" and a pod without
 * passes through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cnienv.h"
#include "fileio.h"
#include "macro.h"
#include "proc.h"
#include "testns.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define PF_PCI "0000:9e:00.0"   /* enp158s0np0 in the XML: rail 4, in VF mode */
#define GPU3_PCI "0000:3d:00.0" /* rail 3's GPU */

static CniEnvT env;
static char sys[192];

/* The discovered rails 0-3 of the XML: NIC function and netdev. */
static const struct {
    const char *pci, *netdev;
} nics[] = {
    {"0000:19:00.0", "ibp25s0"},    {"0000:1b:00.0", "ibp27s0"},    {"0000:3c:00.0", "ibp60s0"},
    {"0000:3e:00.0", "ibp62s0"},    {"0000:9e:00.2", "enp158s0v0"}, /* VF 0 of PF_PCI */
    {"0000:9e:00.3", "enp158s0v1"},                                 /* VF 1 */
};

__attribute__((format(printf, 1, 2))) static void mkdirs(const char *fmt, ...) {
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    assert_int_equal(fileio_mkdir_p(path, 0755), 0);
}

static void sh(const char *cmd) {
    assert_int_equal(system(cmd), 0);
}

/* sysfs as the kernel shows netdev on PCI function pci (both directions). */
static void sysfs_bind(const char *pci, const char *netdev) {
    char link[512], target[128];

    mkdirs("%s/bus/pci/devices/%s/net/%s", sys, pci, netdev);
    mkdirs("%s/class/net/%s", sys, netdev);
    snprintf(link, sizeof(link), "%s/class/net/%s/device", sys, netdev);
    snprintf(target, sizeof(target), "../../../bus/pci/devices/%s", pci);
    (void)unlink(link);
    assert_int_equal(symlink(target, link), 0);
}

/* ... and as it shows the netdev gone from the host (in a pod, renamed). */
static void sysfs_unbind(const char *pci, const char *netdev) {
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf %s/bus/pci/devices/%s/net/%s %s/class/net/%s", sys, pci,
             netdev, sys, netdev);
    sh(cmd);
}

static void write_config(void) {
    char text[4096];

    snprintf(text, sizeof(text),
             "{\"kubeletDir\": \"%s\", \"stateDir\": \"%s\", \"logFile\": \"%s\",\n"
             " \"sysfsRoot\": \"%s\", \"procRoot\": \"%s/proc\", \"devRoot\": \"%s\",\n"
             " \"discovery\": {\"enabled\": true, \"topologyXml\": \"%s\","
             " \"maxDistance\": \"hostbridge\"},\n"
             " \"rails\": [\n"
             "  {\"index\": 0, \"addresses\": [\"10.100.0.2/24\"], \"gateway\": \"10.100.0.1\"},\n"
             "  {\"index\": 1, \"addresses\": [\"10.101.0.2/24\"], \"gateway\": \"10.101.0.1\"},\n"
             "  {\"index\": 2, \"addresses\": [\"10.102.0.2/24\"], \"gateway\": \"10.102.0.1\"},\n"
             "  {\"index\": 3, \"addresses\": [\"10.103.0.2/24\"], \"gateway\": \"10.103.0.1\"},\n"
             "  {\"index\": 4, \"nic\": {\"pci\": \"" PF_PCI "\", \"vf\": true, \"units\": 2,\n"
             /* the fixture's VFs are plain links: no PF to set their admin state on
              * (integration/test-sriov does that on real VFs) */
             "   \"vfConfig\": {\"mac\": \"keep\", \"spoofChk\": \"keep\", \"trust\": \"keep\","
             " \"linkState\": \"keep\"}},\n"
             "   \"addresses\": [\"10.104.0.11/24\", \"10.104.0.12/24\"], \"gateway\": "
             "\"10.104.0.1\"}],\n"
             " \"tenants\": [\n"
             "  {\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0, 1, 2, 3],\n"
             "   \"vrf\": {\"table\": 100, \"prefixes\": [\"10.100.0.0/14\"]}},\n"
             "  {\"name\": \"b\", \"namespaces\": [\"team-b\"], \"rails\": [4],\n"
             "   \"vrf\": {\"table\": 200, \"prefixes\": [\"10.104.0.0/16\"]}}]}\n",
             env.kubelet, env.state, env.log, sys, env.tmp, env.tmp,
             RAILGATE_FIXTURES "/topology/dgx-8gpu-4sw.xml");
    assert_int_equal(fileio_write_atomic(env.config, text, strlen(text), 0644, false), 0);
}

static int group_setup(void **state) {
    char link[512];

    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(cnienv_setup(&env, 17), 0);
    snprintf(sys, sizeof(sys), "%s/fixture-sys", env.tmp); /* <tmp>/sys: the env's own */
    for (size_t i = 0; i < ELEMENTSOF(nics); i++) {
        char peer[32];
        snprintf(peer, sizeof(peer), "fab%zu", i);
        assert_int_equal(testns_kind_link_add(nics[i].netdev, peer), 0);
        assert_int_equal(testns_link_set_up(nics[i].netdev, true), 0);
        sysfs_bind(nics[i].pci, nics[i].netdev);
    }
    mkdirs("%s/bus/pci/devices/" PF_PCI, sys);
    for (unsigned j = 0; j < 2; j++) {
        snprintf(link, sizeof(link), "%s/bus/pci/devices/" PF_PCI "/virtfn%u", sys, j);
        assert_int_equal(symlink(j ? "../0000:9e:00.3" : "../0000:9e:00.2", link), 0);
    }
    mkdirs("%s/bus/pci/devices/" GPU3_PCI, sys); /* rail 3's GPU */
    write_config();
    assert_int_equal(cnienv_publish(&env), 0);
    return 0;
}

static int group_teardown(void **state) {
    cnienv_teardown(&env);
    return 0;
}

static int cni(const char *cmd, CniPod *p, CniRun *r) {
    return cnienv_pod_cmd(&env, p, cmd, NULL, r);
}

static void pod_new(CniPod *p, const char *ns, const char *res, const char *id) {
    char *ids[] = {(char *)id};

    assert_int_equal(cnienv_pod_new(&env, p, "inv", ns, res, ids, id ? 1 : 0), 0);
}

/* cmd (ADD, DEL) on p succeeds. */
static void cni_ok(const char *cmd, CniPod *p) {
    CniRun r;

    assert_int_equal(cni(cmd, p, &r), 0);
    if (r.status)
        fprintf(stderr, "%s: %s\n", cmd, r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
}
#define add_ok(p) cni_ok("ADD", p)
#define del_ok(p) cni_ok("DEL", p)

/* ADD fails with code and a message holding each needle; nothing moved,
 * no record or claim more than before. */
static void add_refused(CniPod *p, int code, const char *needle, const char *needle2) {
    size_t records = cnienv_state_count(&env, "attachments");
    size_t claims = cnienv_state_count(&env, "units");
    CniRun r;

    assert_int_equal(cni("ADD", p, &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), code);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    assert_non_null(msg);
    if (!strstr(msg, needle) || (needle2 && !strstr(msg, needle2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", msg, needle, needle2 ? needle2 : "");
    cni_run_done(&r);
    assert_false(ip_has(p->nsname, "link show", "rail"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), records);
    assert_int_equal(cnienv_state_count(&env, "units"), claims);
}

/* The daemon's view: what --publish-inventory wrote for rail 0 and the VFs. */
static void test_published(void **state) {
    char path[256], *text = NULL;

    snprintf(path, sizeof(path), "%s/inventory.json", env.state);
    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    json_t *doc = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(doc);
    assert_true(json_integer_value(json_object_get(doc, "generation")) >= 1);
    json_t *units = json_object_get(doc, "units"), *u;
    size_t i, seen = 0;
    json_array_foreach(units, i, u) {
        const char *id = json_string_value(json_object_get(u, "id"));
        json_t *nic = json_object_get(u, "nic");
        const char *pci = json_string_value(json_object_get(nic, "pci"));
        const char *dev = json_string_value(json_object_get(nic, "netdev"));
        if (streq(id, "rail0")) {
            assert_string_equal(pci, "0000:19:00.0");
            assert_string_equal(dev, "ibp25s0");
            /* paired with the GPU on its switch */
            assert_string_equal(
                json_string_value(json_object_get(json_object_get(u, "gpu"), "pci")),
                "0000:18:00.0");
            seen++;
        } else if (streq(id, "rail3")) {
            json_t *gpu = json_object_get(u, "gpu");
            assert_string_equal(json_string_value(json_object_get(gpu, "pci")), GPU3_PCI);
            /* its UUID, from the XML's NVML info */
            assert_memory_equal(json_string_value(json_object_get(gpu, "id")), "GPU-", 4);
            seen++;
        } else if (streq(id, "rail4-vf1")) {
            assert_string_equal(pci, "0000:9e:00.3");
            assert_string_equal(dev, "enp158s0v1");
            assert_string_equal(json_string_value(json_object_get(u, "tenant")), "b");
            seen++;
        }
    }
    assert_int_equal(seen, 3);
    json_decref(doc);
}

/* Discovery mode: rail 0's NIC moves in as rail0 with its address, and home. */
static void test_discovered_rail(void **state) {
    CniPod p;

    pod_new(&p, "team-a", RES_A, "rail0");
    add_ok(&p);
    assert_true(ip_has(p.nsname, "addr show dev rail0", "10.100.0.2/24"));
    assert_false(ip_has(NULL, "link show", "ibp25s0"));
    del_ok(&p);
    assert_true(ip_has(NULL, "link show dev ibp25s0", ",UP"));
    cnienv_pod_free(&env, &p);
}

/* Renamed on the host since the inventory: the PCI function is followed. */
static void test_renamed_nic_followed(void **state) {
    CniPod p;

    sh("ip link set dev ibp27s0 down && ip link set dev ibp27s0 name ren27 && "
       "ip link set dev ren27 up");
    sysfs_unbind("0000:1b:00.0", "ibp27s0");
    sysfs_bind("0000:1b:00.0", "ren27");
    pod_new(&p, "team-a", RES_A, "rail1");
    add_ok(&p);
    assert_true(ip_has(p.nsname, "addr show dev rail1", "10.101.0.2/24"));
    assert_false(ip_has(NULL, "link show", "ren27"));
    assert_true(file_contains(env.log, "is ren27 now, not ibp27s0 as published"));
    del_ok(&p);
    assert_true(ip_has(NULL, "link show dev ren27", ",UP"));
    cnienv_pod_free(&env, &p);
}

/*
 * The published name is now another function's, and the unit's function
 * has no netdev in the host: refused with both named, nothing moved (the
 * name's holder is another NIC, and no stand-in goes in its place).
 */
static void test_name_of_another_function_refused(void **state) {
    CniPod p;

    sysfs_unbind("0000:3c:00.0", "ibp60s0");
    sysfs_bind("0000:d2:00.0", "ibp60s0");
    pod_new(&p, "team-a", RES_A, "rail2");
    add_refused(&p, 101, "PCI function 0000:3c:00.0 (ibp60s0 when the device plugin",
                "no netdev in the host namespace");
    assert_true(ip_has(NULL, "link show dev ibp60s0", ",UP"));
    sysfs_unbind("0000:d2:00.0", "ibp60s0");
    sysfs_bind("0000:3c:00.0", "ibp60s0");
    add_ok(&p);
    del_ok(&p);
    cnienv_pod_free(&env, &p);
}

/*
 * The NIC's function left the bus: refused, and said so. Its GPU leaving
 * the bus is the device plugin's to report (health), not a reason for the
 * CNI to probe the node: with the NIC back, rail 3 moves on the published
 * inventory.
 */
static void test_gone_from_bus(void **state) {
    char cmd[1024];
    CniPod p;

    /* as the kernel shows a removed function: no device, no netdev */
    sysfs_unbind("0000:3e:00.0", "ibp62s0");
    snprintf(cmd, sizeof(cmd), "mv %s/bus/pci/devices/0000:3e:00.0 %s/gone", sys, env.tmp);
    sh(cmd);
    pod_new(&p, "team-a", RES_A, "rail3");
    add_refused(&p, 101, "PCI function 0000:3e:00.0", "gone from the PCI bus");
    snprintf(cmd, sizeof(cmd), "mv %s/gone %s/bus/pci/devices/0000:3e:00.0", env.tmp, sys);
    sh(cmd);
    sysfs_bind("0000:3e:00.0", "ibp62s0");
    snprintf(cmd, sizeof(cmd), "rm -r %s/bus/pci/devices/%s", sys, GPU3_PCI);
    sh(cmd);
    add_ok(&p);
    assert_true(ip_has(p.nsname, "addr show dev rail3", "10.103.0.2/24"));
    del_ok(&p);
    cnienv_pod_free(&env, &p);
}

/*
 * VF mode: each VF unit moves as its own NIC (VF 1 as rail4v1). The daemon
 * republishes while VF 0 is in a pod: its netdev is then absent from the
 * host's sysfs (the PCI function is not), and the inventory says so. A
 * second ADD for it is refused without a move; once home, the next pod gets
 * it by its PCI address although the inventory has no name for it.
 */
static void test_vf_mode(void **state) {
    CniPod a, b, c;

    pod_new(&a, "team-b", RES_B, "rail4-vf0");
    pod_new(&b, "team-b", RES_B, "rail4-vf1");
    add_ok(&a);
    add_ok(&b);
    assert_true(ip_has(a.nsname, "addr show dev rail4", "10.104.0.11/24"));
    assert_true(ip_has(b.nsname, "addr show dev rail4v1", "10.104.0.12/24"));
    del_ok(&b);
    cnienv_pod_free(&env, &b);

    sysfs_unbind("0000:9e:00.2", "enp158s0v0"); /* as the kernel shows it in a pod */
    assert_int_equal(cnienv_publish(&env), 0);
    pod_new(&c, "team-b", RES_B, "rail4-vf0");
    add_refused(&c, 101, "PCI function 0000:9e:00.2", "in a pod already");
    cnienv_pod_free(&env, &c);
    del_ok(&a);
    cnienv_pod_free(&env, &a);
    sysfs_bind("0000:9e:00.2", "enp158s0v0");
    pod_new(&c, "team-b", RES_B, "rail4-vf0");
    add_ok(&c);
    assert_true(ip_has(c.nsname, "addr show dev rail4", "10.104.0.11/24"));
    del_ok(&c);
    cnienv_pod_free(&env, &c);
    assert_int_equal(cnienv_publish(&env), 0);
}

/*
 * A whole NIC whose function has SR-IOV VFs enabled: its holder would set
 * their MAC, VLAN, rate and trust (IFLA_VFINFO_LIST), and the VFs may be
 * other tenants'. Its ADD is refused (101) naming the count, nothing moved;
 * with the VFs off it is lent.
 */
static void test_pf_with_vfs_refused(void **state) {
    char path[512];
    CniPod p;

    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/sriov_numvfs", sys, nics[0].pci);
    assert_int_equal(fileio_write_atomic(path, "2\n", 2, 0644, false), 0);
    pod_new(&p, "team-a", RES_A, "rail0");
    add_refused(&p, 101, "is an SR-IOV PF with 2 VFs enabled", "nothing was moved");
    assert_true(ip_has(NULL, "link show dev ibp25s0", ",UP"));
    assert_int_equal(fileio_write_atomic(path, "0\n", 2, 0644, false), 0);
    add_ok(&p);
    assert_true(ip_has(p.nsname, "addr show dev rail0", "10.100.0.2/24"));
    del_ok(&p);
    assert_int_equal(unlink(path), 0);
    cnienv_pod_free(&env, &p);
}

/* No inventory (the daemon never ran): units wait, pods without pass. */
static void test_no_inventory(void **state) {
    char path[256], saved[256];
    CniPod p, q;
    CniRun r;

    snprintf(path, sizeof(path), "%s/inventory.json", env.state);
    snprintf(saved, sizeof(saved), "%s/inventory.saved", env.tmp);
    assert_int_equal(rename(path, saved), 0);
    pod_new(&p, "team-a", RES_A, "rail0");
    add_refused(&p, 11, "no inventory published", "railgate-device-plugin");
    pod_new(&q, "team-a", RES_A, NULL);
    assert_int_equal(cni("ADD", &q, &r), 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(json_array_size(json_object_get(r.out, "interfaces")), 0);
    cni_run_done(&r);
    del_ok(&q);
    assert_int_equal(rename(saved, path), 0);
    add_ok(&p);
    del_ok(&p);
    cnienv_pod_free(&env, &p);
    cnienv_pod_free(&env, &q);
}

/* Tenancy is the node config's, never the file's: a unit of tenant a that
 * the file says is b's stays a's. */
static void test_file_never_decides_tenancy(void **state) {
    char path[256], *text = NULL;
    CniPod p;

    snprintf(path, sizeof(path), "%s/inventory.json", env.state);
    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    for (char *t = text; (t = strstr(t, "\"tenant\": \"a\""));)
        t[strlen("\"tenant\": \"")] = 'b';
    assert_int_equal(fileio_write_atomic(path, text, strlen(text), 0644, false), 0);
    free(text);
    pod_new(&p, "team-b", RES_B, "rail0");
    add_refused(&p, 101, "not a unit of railgate.io/b", NULL);
    cnienv_pod_free(&env, &p);
    pod_new(&p, "team-a", RES_A, "rail0");
    add_ok(&p);
    del_ok(&p);
    cnienv_pod_free(&env, &p);
    assert_int_equal(cnienv_publish(&env), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published),
        cmocka_unit_test(test_discovered_rail),
        cmocka_unit_test(test_renamed_nic_followed),
        cmocka_unit_test(test_name_of_another_function_refused),
        cmocka_unit_test(test_gone_from_bus),
        cmocka_unit_test(test_vf_mode),
        cmocka_unit_test(test_pf_with_vfs_refused),
        cmocka_unit_test(test_no_inventory),
        cmocka_unit_test(test_file_never_decides_tenancy),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
