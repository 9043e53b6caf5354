/* SPDX-License-Identifier: Apache-2.0 */
/* Discovery never hands out the node's own NIC: hwloc XML + sysfs/procfs fixtures, node NICs given.
 * The published inventory: what the device plugin writes is what the CNI reads, and no more.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "discover.h"
#include "netlink.h"
#include "strv.h"

#define FIXTURE(name) RAILGATE_FIXTURES "/topology/" name
/* The real single-GPU H100 VM: GPU 0000:00:06.0 and its only NIC, eth0 at
 * 0000:00:03.0, the node's uplink, under the same host bridge. */
#define H100_GPU "0000:00:06.0"
#define H100_NIC "0000:00:03.0"
#define H100_UUID "GPU-5b6b4ad0-8c8e-3f2a-9a41-1f0e2d3c4b5a"

static char root[64];

static void write_at(const char *rel, const char *text) {
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
            *p = '/';
        }
    if (!text) {
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        return;
    }
    f = fopen(path, "we");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* What the H100 VM's driver shows: /proc/driver/nvidia, /dev/nvidia0 and
 * the control nodes. sysfs is empty: no RDMA, nothing else to find. */
static int group_setup(void **state) {
    snprintf(root, sizeof(root), "/tmp/rg-inv-XXXXXX");
    assert_non_null(mkdtemp(root));
    write_at("sys/class/net", NULL);
    write_at("proc/driver/nvidia/gpus/" H100_GPU "/information",
             "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 40\nGPU UUID: \t " H100_UUID
             "\nDevice Minor: \t 0\n");
    write_at("dev/nvidia0", "");
    write_at("dev/nvidiactl", "");
    write_at("dev/nvidia-uvm", "");
    write_at("dev/nvidia-uvm-tools", "");
    return 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

static int group_teardown(void **state) {
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* A discovery config on the H100 VM; nic: the "nic" object of rail 0, or NULL. */
static NodeConfig *h100_config(const char *nic) {
    char text[2048];
    NodeConfig *c = NULL;
    RgError err = {0};

    snprintf(text, sizeof(text),
             "{\"sysfsRoot\": \"%s/sys\", \"procRoot\": \"%s/proc\", \"devRoot\": \"%s\",\n"
             " \"discovery\": {\"enabled\": true, \"maxDistance\": \"system\"},\n"
             " \"rails\": [{\"index\": 0%s%s}],\n"
             " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],\n"
             "   \"vrf\": {\"table\": 100}}]}\n",
             root, root, root, nic ? ", \"nic\": " : "", nic ? nic : "");
    assert_int_equal(config_parse(text, "h100.json", &c, &err), 0);
    return c;
}

static int build(const NodeConfig *c, const NodeNic *node, size_t n_node, Inventory **ret,
                 RgError *err) {
    InventoryOptions o = {.topology_xml = FIXTURE("h100-vm-real.xml"),
                          .node_nics_given = true,
                          .node_nics = node,
                          .n_node_nics = n_node};

    return inventory_build(c, &o, ret, err);
}

static bool has_note(const Inventory *inv, const char *needle) {
    for (size_t i = 0; i < inv->n_notes; i++)
        if (strstr(inv->notes[i], needle))
            return true;
    return false;
}

/* The uplink is the only NIC near the GPU: discovery refuses to pair it,
 * and the error names it and says why. */
static void test_uplink_never_discovered(void **state) {
    static const NodeNic uses[] = {
        {"eth0", NODE_NIC_DEFAULT_ROUTE},
        {"eth0", NODE_NIC_ADDRESS},
        {"eth0", NODE_NIC_DEFAULT_ROUTE | NODE_NIC_ADDRESS},
    };
    static const char *const why[] = {
        "it carries the node's default route",
        "it carries a node address",
        "it carries the node's default route and a node address",
    };
    NodeConfig *c = h100_config(NULL);

    for (size_t i = 0; i < ELEMENTSOF(uses); i++) {
        Inventory *inv = (Inventory *)0x1;
        RgError err = {0};
        assert_int_equal(build(c, &uses[i], 1, &inv, &err), -EINVAL);
        assert_ptr_equal(inv, (Inventory *)0x1);
        assert_non_null(strstr(err.msg, "rail 0: no NIC configured and none discovered"));
        assert_non_null(strstr(err.msg, "NIC " H100_NIC " (eth0) skipped"));
        assert_non_null(strstr(err.msg, why[i]));
    }
    config_free(c);
}

/* Not a node NIC (another machine, or the uplink is elsewhere): paired as
 * before, so the refusal above is the node NIC rule and nothing else. */
static void test_other_nic_discovered(void **state) {
    static const NodeNic other = {"eth1", NODE_NIC_DEFAULT_ROUTE | NODE_NIC_ADDRESS};
    NodeConfig *c = h100_config(NULL);
    Inventory *inv = NULL;
    RgError err = {0};

    assert_int_equal(build(c, &other, 1, &inv, &err), 0);
    assert_int_equal(inv->n_units, 1);
    const Unit *u = &inv->units[0];
    assert_string_equal(u->id, "rail0");
    assert_string_equal(u->gpu_pci, H100_GPU);
    assert_string_equal(u->gpu_id, H100_UUID);
    assert_string_equal(u->gpu_devices[0], "/dev/nvidia0");
    assert_null(u->gpu_devices[1]);
    assert_true(strv_contains(u->gpu_ctl_devices, "/dev/nvidiactl"));
    assert_true(strv_contains(u->gpu_ctl_devices, "/dev/nvidia-uvm"));
    assert_true(strv_contains(u->gpu_ctl_devices, "/dev/nvidia-uvm-tools"));
    assert_string_equal(u->nic_pci, H100_NIC);
    assert_string_equal(u->netdev, "eth0");
    assert_false(has_note(inv, "skipped"));
    inventory_free(inv);
    config_free(c);
}

/* Named by the config, by netdev or by PCI address: the admin's choice
 * stands, and a note says what the NIC carries. */
static void test_uplink_named_explicitly(void **state) {
    static const NodeNic uplink = {"eth0", NODE_NIC_DEFAULT_ROUTE};
    static const char *const nics[] = {"{\"name\": \"eth0\"}", "{\"pci\": \"" H100_NIC "\"}"};

    for (size_t i = 0; i < ELEMENTSOF(nics); i++) {
        NodeConfig *c = h100_config(nics[i]);
        Inventory *inv = NULL;
        RgError err = {0};
        assert_int_equal(build(c, &uplink, 1, &inv, &err), 0);
        assert_int_equal(inv->n_units, 1);
        assert_string_equal(inv->units[0].gpu_pci, H100_GPU);
        if (i == 0)
            assert_string_equal(inv->units[0].netdev, "eth0");
        else
            assert_string_equal(inv->units[0].nic_pci, H100_NIC);
        assert_true(has_note(inv, "NIC " H100_NIC " (eth0) is used although it carries the "
                                  "node's default route: the config names it"));
        inventory_free(inv);
        config_free(c);
    }
}

/* nicExclude says why too, and the NIC is no "unpaired NIC" then. */
static void test_nic_exclude_noted(void **state) {
    char text[2048];
    NodeConfig *c = NULL;
    Inventory *inv = NULL;
    RgError err = {0};

    snprintf(text, sizeof(text),
             "{\"sysfsRoot\": \"%s/sys\", \"procRoot\": \"%s/proc\", \"devRoot\": \"%s\",\n"
             " \"discovery\": {\"enabled\": true, \"maxDistance\": \"system\","
             " \"nicExclude\": [\"eth0\"]},\n"
             " \"rails\": [{\"index\": 0}],\n"
             " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],\n"
             "   \"vrf\": {\"table\": 100}}]}\n",
             root, root, root);
    assert_int_equal(config_parse(text, "h100.json", &c, &err), 0);
    assert_int_equal(build(c, NULL, 0, &inv, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "NIC " H100_NIC " (eth0) skipped: nicExclude names it"));
    config_free(c);
}

/* ---- RDMA device nodes ---- */

/* Under <root>/rdma: mlx5_0 with uverbs0 and two ports (umad0, umad1),
 * mlx5_1 with no uverbs and one port (umad2); rail 0 has a GPU and mlx5_0,
 * rail 1 no GPU and mlx5_1, rail 2 a GPU and no RDMA device. */
static NodeConfig *rdma_config(const char *rdma) {
    char text[2048];
    NodeConfig *c = NULL;
    RgError err = {0};

    write_at("rdma/sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
    write_at("rdma/sys/class/infiniband_mad/umad1/ibdev", "mlx5_0\n");
    write_at("rdma/sys/class/infiniband_mad/umad1/port", "2\n");
    write_at("rdma/sys/class/infiniband_mad/umad0/ibdev", "mlx5_0\n");
    write_at("rdma/sys/class/infiniband_mad/umad0/port", "1\n");
    write_at("rdma/sys/class/infiniband_mad/umad2/ibdev", "mlx5_1\n");
    write_at("rdma/sys/class/infiniband_mad/umad2/port", "1\n");
    snprintf(
        text, sizeof(text),
        "{\"sysfsRoot\": \"%s/rdma/sys\", \"procRoot\": \"%s/rdma/proc\",\n"
        " \"devRoot\": \"%s/rdma\"%s%s,\n"
        " \"rails\": [{\"index\": 0, \"gpu\": {\"simulated\": \"gpu0\", \"devices\": "
        "[\"/dev/railgate/gpu0\"]},\n"
        "             \"nic\": {\"name\": \"r0\", \"rdma\": \"mlx5_0\"}},\n"
        "            {\"index\": 1, \"nic\": {\"name\": \"r1\", \"rdma\": \"mlx5_1\"}},\n"
        "            {\"index\": 2, \"gpu\": {\"simulated\": \"gpu2\", \"devices\": "
        "[\"/dev/railgate/gpu2\"]},\n"
        "             \"nic\": {\"name\": \"r2\"}}],\n"
        " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0, 1, 2],\n"
        "   \"vrf\": {\"table\": 100}}]}\n",
        root, root, root, rdma ? ", \"rdma\": " : "", rdma ? rdma : "");
    assert_int_equal(config_parse(text, "rdma.json", &c, &err), 0);
    return c;
}

static char *nodes_of(const Inventory *inv, size_t i) {
    char *j = strv_join(inv->units[i].rdma_devices, " ");

    assert_non_null(j);
    return j;
}

/* Every unit's list: uverbs and rdma_cm always (a container gets those
 * that exist), umad and gdrdrv only when the config asks. */
static void test_rdma_nodes(void **state) {
    NodeConfig *c = rdma_config(NULL);
    Inventory *inv = NULL;
    RgError err = {0};
    char *l;

    assert_int_equal(inventory_build(c, NULL, &inv, &err), 0);
    assert_int_equal(inv->n_units, 3);
    assert_string_equal(inv->units[0].uverbs, "uverbs0");
    l = nodes_of(inv, 0);
    assert_string_equal(l, "/dev/infiniband/uverbs0 /dev/infiniband/rdma_cm");
    free(l);
    /* no uverbs for mlx5_1: said at start, and health reads it */
    assert_string_equal(inv->units[1].uverbs, "");
    l = nodes_of(inv, 1);
    assert_string_equal(l, "/dev/infiniband/rdma_cm");
    free(l);
    assert_null(inv->units[2].rdma_devices);
    assert_true(has_note(inv, "unit rail1: RDMA device mlx5_1 has no uverbs device node"));
    assert_false(has_note(inv, "umad"));
    assert_false(has_note(inv, "gdrdrv"));
    inventory_free(inv);
    config_free(c);

    /* asked: every port's umad, gdrdrv for the units with a GPU */
    c = rdma_config("{\"umad\": true, \"gdrcopy\": true}");
    assert_int_equal(inventory_build(c, NULL, &inv, &err), 0);
    l = nodes_of(inv, 0);
    assert_string_equal(l, "/dev/infiniband/uverbs0 /dev/infiniband/rdma_cm "
                           "/dev/infiniband/umad0 /dev/infiniband/umad1 /dev/gdrdrv");
    free(l);
    l = nodes_of(inv, 1);
    assert_string_equal(l, "/dev/infiniband/rdma_cm /dev/infiniband/umad2");
    free(l);
    l = nodes_of(inv, 2);
    assert_string_equal(l, "/dev/gdrdrv");
    free(l);
    /* gdrdrv asked and missing: a warning at start, not an error */
    assert_true(has_note(inv, "rdma.gdrcopy is set and /dev/gdrdrv does not exist"));
    inventory_free(inv);
    write_at("rdma/dev/gdrdrv", "");
    assert_int_equal(inventory_build(c, NULL, &inv, &err), 0);
    assert_false(has_note(inv, "gdrdrv"));
    inventory_free(inv);
    config_free(c);

    /* umad asked, ib_umad not loaded: said at start */
    c = rdma_config("{\"umad\": true}");
    write_at("rdma/sys/class/infiniband_mad/umad2/ibdev", "mlx5_9\n");
    assert_int_equal(inventory_build(c, NULL, &inv, &err), 0);
    l = nodes_of(inv, 1);
    assert_string_equal(l, "/dev/infiniband/rdma_cm");
    free(l);
    assert_true(has_note(inv, "unit rail1: rdma.umad is set and RDMA device mlx5_1 has no umad"));
    assert_false(has_note(inv, "unit rail0: rdma.umad"));
    inventory_free(inv);
    config_free(c);
}

/* ---- the published inventory ---- */

/* Rails 0 (tenant a) and 1 (tenant b), NICs by name. */
static NodeConfig *pub_config(void) {
    char text[2048];
    NodeConfig *c = NULL;
    RgError err = {0};

    snprintf(text, sizeof(text),
             "{\"sysfsRoot\": \"%s/sys\", \"stateDir\": \"%s/state\",\n"
             " \"rails\": [{\"index\": 0, \"nic\": {\"name\": \"r0\"}},\n"
             "            {\"index\": 1, \"nic\": {\"name\": \"r1\"}}],\n"
             " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],\n"
             "   \"vrf\": {\"table\": 100}},\n"
             "  {\"name\": \"b\", \"namespaces\": [\"team-b\"], \"rails\": [1],\n"
             "   \"vrf\": {\"table\": 200}}]}\n",
             root, root);
    assert_int_equal(config_parse(text, "pub.json", &c, &err), 0);
    return c;
}

static int load(const NodeConfig *c, const char *file_text, Inventory **ret, RgError *err) {
    if (file_text)
        write_at("state/" INVENTORY_FILE, file_text);
    return inventory_load_published(c, c->state_dir, ret, err);
}

/* What the daemon publishes, the CNI loads; each publish is one generation up. */
static void test_publish_load(void **state) {
    NodeConfig *c = pub_config();
    Inventory *inv = NULL, *got = NULL;
    InventoryOptions o = {.node_nics_given = true};
    RgError err = {0};

    write_at("state", NULL);
    assert_int_equal(inventory_build(c, &o, &inv, &err), 0);
    /* a macvlan NIC's lower (lowers.h), as the agent noted it */
    Unit *w = (Unit *)inventory_find(inv, "rail0");
    w->lower_ifindex = 42;
    snprintf(w->lower, sizeof(w->lower), "low0");
    assert_int_equal(inventory_publish(inv, c->state_dir, &err), 0);
    assert_int_equal(inv->generation, 1);
    assert_int_equal(inventory_publish(inv, c->state_dir, &err), 0);
    assert_int_equal(inv->generation, 2);
    assert_int_equal(load(c, NULL, &got, &err), 0);
    assert_int_equal(got->generation, 2);
    assert_int_equal(got->n_units, 2);
    const Unit *u = inventory_find(got, "rail1");
    assert_non_null(u);
    assert_int_equal(u->tenant, 1);
    assert_string_equal(u->netdev, "r1");
    assert_string_equal(u->pod_ifname, "rail1");
    assert_ptr_equal(u->rail_cfg, config_find_rail(c, 1));
    assert_int_equal(u->lower_ifindex, 0);
    assert_string_equal(u->lower, "");
    u = inventory_find(got, "rail0");
    assert_int_equal(u->lower_ifindex, 42);
    assert_string_equal(u->lower, "low0");
    inventory_free(got);
    inventory_free(inv);
    config_free(c);
}

/* A file that is not what the daemon writes is refused, not half-read. */
static void test_load_refuses_malformed(void **state) {
    static const char *const bad[] = {
        /* an id that is not its rail's */
        "{\"generation\": 1, \"units\": [{\"id\": \"rail1\", \"rail\": 0, \"vf\": null,"
        " \"nic\": {}}]}",
        /* listed twice */
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0, \"nic\": {}},"
        " {\"id\": \"rail0\", \"rail\": 0, \"nic\": {}}]}",
        /* a netdev that is a path */
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0,"
        " \"nic\": {\"netdev\": \"../r1\"}}]}",
        /* a netdev too long for a name */
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0,"
        " \"nic\": {\"netdev\": \"r0123456789abcdef\"}}]}",
        /* a lower that is no ifindex, or no name */
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0,"
        " \"nic\": {\"lowerIfindex\": 0}}]}",
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0,"
        " \"nic\": {\"lowerIfindex\": \"7\"}}]}",
        "{\"generation\": 1, \"units\": [{\"id\": \"rail0\", \"rail\": 0,"
        " \"nic\": {\"lower\": \"a/b\", \"lowerIfindex\": 7}}]}",
        /* no generation */
        "{\"units\": []}",
        "not json",
    };
    NodeConfig *c = pub_config();
    Inventory *got = NULL;

    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        RgError err = {0};
        assert_int_equal(load(c, bad[i], &got, &err), -EBADMSG);
        assert_null(got);
        assert_non_null(strstr(err.msg, INVENTORY_FILE));
    }
    char path[PATH_MAX];
    RgError err = {0};
    snprintf(path, sizeof(path), "%s/" INVENTORY_FILE, c->state_dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(load(c, NULL, &got, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "is railgate-device-plugin running"));
    config_free(c);
}

/* Tenancy and shape are the node config's: the file's tenant is ignored, a
 * unit of a rail no tenant has, or of a VF shape the config does not hand
 * out, is left out. */
static void test_load_follows_config(void **state) {
    NodeConfig *c = pub_config();
    Inventory *got = NULL;
    RgError err = {0};

    assert_int_equal(
        load(c,
             "{\"generation\": 9, \"units\": ["
             "{\"id\": \"rail0\", \"rail\": 0, \"tenant\": \"b\", \"nic\": {\"netdev\": \"r0\"}},"
             "{\"id\": \"rail1-vf0\", \"rail\": 1, \"vf\": 0, \"nic\": {\"netdev\": \"r1\"}},"
             "{\"id\": \"rail7\", \"rail\": 7, \"nic\": {\"netdev\": \"r7\"}}]}",
             &got, &err),
        0);
    assert_int_equal(got->n_units, 1);
    assert_string_equal(got->units[0].id, "rail0");
    assert_int_equal(got->units[0].tenant, 0);
    inventory_free(got);
    config_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uplink_never_discovered),
        cmocka_unit_test(test_publish_load),
        cmocka_unit_test(test_load_refuses_malformed),
        cmocka_unit_test(test_load_follows_config),
        cmocka_unit_test(test_other_nic_discovered),
        cmocka_unit_test(test_uplink_named_explicitly),
        cmocka_unit_test(test_nic_exclude_noted),
        cmocka_unit_test(test_rdma_nodes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
