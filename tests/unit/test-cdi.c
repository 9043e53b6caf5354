/* SPDX-License-Identifier: Apache-2.0 */
/* CDI specs of prepared claims: the same environment as Allocate, device nodes per unit. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdi.h"
#include "drafix.h"
#include "edits.h"
#include "fileio.h"
#include "proc.h"
#include "strv.h"

static char dir[64], devroot[128], cdidir[128];

static int setup(void **state) {
    char p[256];

    assert_int_equal(tmpdir_make(dir, sizeof(dir), "rg-cdi"), 0);
    snprintf(devroot, sizeof(devroot), "%s/root", dir);
    snprintf(cdidir, sizeof(cdidir), "%s/cdi", dir);
    snprintf(p, sizeof(p), "%s/dev/infiniband", devroot);
    assert_int_equal(fileio_mkdir_p(p, 0755), 0);
    /* gpu0 and its control node exist, gpu1 does not; one RDMA node */
    const char *files[] = {"dev/nvidia0", "dev/nvidiactl", "dev/infiniband/uverbs0"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", devroot, files[i]);
        assert_int_equal(fileio_write_atomic(p, "", 0, 0600, false), 0);
    }
    return 0;
}

static int teardown(void **state) {
    tmpdir_remove(dir);
    return 0;
}

static Unit units[2];

static void make_units(void) {
    memset(units, 0, sizeof(units));
    for (unsigned k = 0; k < 2; k++) {
        Unit *u = &units[k];
        u->rail = k;
        unit_set_names(u);
        u->has_gpu = true;
        snprintf(u->gpu_id, sizeof(u->gpu_id), "GPU-%u", k);
        assert_int_equal(strv_pushf(&u->gpu_devices, "/dev/nvidia%u", k), 0);
        assert_int_equal(strv_push(&u->gpu_ctl_devices, "/dev/nvidiactl"), 0);
    }
    snprintf(units[0].rdma, sizeof(units[0].rdma), "mlx5_0");
    assert_int_equal(strv_push(&units[0].rdma_devices, "/dev/infiniband/uverbs0"), 0);
}

static void free_units(void) {
    for (unsigned k = 0; k < 2; k++) {
        strv_free(units[k].gpu_devices);
        strv_free(units[k].gpu_ctl_devices);
        strv_free(units[k].rdma_devices);
    }
}

static void test_edits(void **state) {
    NodeConfig c = {.dev_root = devroot};
    const Unit *both[] = {&units[1], &units[0]}; /* any order in, rail order out */
    ContainerEdits e = {0};

    make_units();
    assert_int_equal(container_edits_build(&c, "tenant-a", both, 2, &e), 0);
    _cleanup_free_ char *env = strv_join(e.env, " ");
    assert_string_equal(env, "CUDA_VISIBLE_DEVICES=GPU-0,GPU-1 NVIDIA_VISIBLE_DEVICES=GPU-0,GPU-1 "
                             "NCCL_IB_HCA==mlx5_0 NCCL_SOCKET_IFNAME==rail0,rail1 "
                             "UCX_NET_DEVICES=mlx5_0:1,rail1 RAILGATE_TENANT=tenant-a "
                             "RAILGATE_RAILS=0,1 RAILGATE_UNITS=rail0,rail1");
    /* only nodes that exist under devRoot, each once */
    _cleanup_free_ char *devs = strv_join(e.devices, " ");
    assert_string_equal(devs, "/dev/nvidia0 /dev/nvidiactl /dev/infiniband/uverbs0");
    assert_null(e.cdi);
    container_edits_done(&e);

    /* with cdiKind the GPUs go as CDI names, their nodes stay out */
    c.cdi_kind = "nvidia.com/gpu";
    assert_int_equal(container_edits_build(&c, "tenant-a", both, 2, &e), 0);
    _cleanup_free_ char *cdi = strv_join(e.cdi, " ");
    assert_string_equal(cdi, "nvidia.com/gpu=GPU-0 nvidia.com/gpu=GPU-1");
    _cleanup_free_ char *devs2 = strv_join(e.devices, " ");
    assert_string_equal(devs2, "/dev/infiniband/uverbs0");
    container_edits_done(&e);
    free_units();
}

static void test_spec(void **state) {
    NodeConfig c = {.dev_root = devroot};
    const Unit *both[] = {&units[0], &units[1]};
    ContainerEdits claim = {0}, per[2] = {{0}};
    RgError err = {0};
    char path[512], id[256];
    struct stat st;

    make_units();
    assert_int_equal(container_edits_build(&c, "tenant-a", both, 2, &claim), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(container_edits_build(&c, "tenant-a", &both[i], 1, &per[i]), 0);
    CdiUnit cu[] = {{"rail0", &per[0]}, {"rail1", &per[1]}};
    assert_int_equal(cdi_spec_write(cdidir, "railgate.io", devroot, "0a1b-2c", &claim, cu, 2, &err),
                     0);
    assert_int_equal(cdi_spec_path(cdidir, "railgate.io", "0a1b-2c", path, sizeof(path)), 0);
    assert_non_null(strstr(path, "/cdi/railgate.io-unit_0a1b-2c.json"));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);

    json_t *spec = json_load_file(path, 0, NULL);
    assert_non_null(spec);
    assert_string_equal(json_string_value(json_object_get(spec, "cdiVersion")), "0.6.0");
    assert_string_equal(json_string_value(json_object_get(spec, "kind")), "railgate.io/unit");
    json_t *env = json_object_get(json_object_get(spec, "containerEdits"), "env");
    assert_string_equal(drafix_env_of(env, "NCCL_SOCKET_IFNAME"), "=rail0,rail1");
    assert_string_equal(drafix_env_of(env, "RAILGATE_UNITS"), "rail0,rail1");
    json_t *devices = json_object_get(spec, "devices");
    assert_int_equal(json_array_size(devices), 2);
    json_t *d0 = json_array_get(devices, 0), *d1 = json_array_get(devices, 1);
    assert_string_equal(json_string_value(json_object_get(d0, "name")), "0a1b-2c-rail0");
    json_t *e0 = json_object_get(d0, "containerEdits"), *e1 = json_object_get(d1, "containerEdits");
    json_t *n0 = json_object_get(e0, "deviceNodes");
    assert_int_equal(json_array_size(n0), 3);
    json_t *first = json_array_get(n0, 0);
    assert_string_equal(json_string_value(json_object_get(first, "path")), "/dev/nvidia0");
    char host[256];
    snprintf(host, sizeof(host), "%s/dev/nvidia0", devroot);
    assert_string_equal(json_string_value(json_object_get(first, "hostPath")), host);
    assert_string_equal(json_string_value(json_object_get(first, "permissions")), "rw");
    /* rail1's GPU node is missing: its device still has edits (CDI refuses none) */
    assert_int_equal(json_array_size(json_object_get(e1, "deviceNodes")), 1); /* nvidiactl */
    assert_string_equal(drafix_env_of(json_object_get(e1, "env"), "RAILGATE_CLAIM"), "0a1b-2c");
    json_decref(spec);

    assert_int_equal(cdi_device_id("railgate.io", "0a1b-2c", "rail0", id, sizeof(id)), 0);
    assert_string_equal(id, "railgate.io/unit=0a1b-2c-rail0");

    /* only the spec is in the directory (no temp file a runtime could read) */
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l | grep -qx 1", cdidir);
    assert_int_equal(system(cmd), 0);

    /* a claim UID that is no file name writes nothing */
    assert_int_equal(
        cdi_spec_write(cdidir, "railgate.io", devroot, "../../etc/x", &claim, cu, 2, &err),
        -EINVAL);
    assert_int_equal(system(cmd), 0);

    assert_int_equal(cdi_spec_remove(cdidir, "railgate.io", "0a1b-2c"), 0);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(cdi_spec_remove(cdidir, "railgate.io", "0a1b-2c"), 0);
    container_edits_done(&claim);
    container_edits_done(&per[0]);
    container_edits_done(&per[1]);
    free_units();
}

static void touch(const char *rel, bool present) {
    char p[256];

    snprintf(p, sizeof(p), "%s/%s", devroot, rel);
    if (present)
        assert_int_equal(fileio_write_atomic(p, "", 0, 0600, false), 0);
    else
        assert_true(unlink(p) == 0 || errno == ENOENT);
}

/* The paths of a CDI device's deviceNodes, space-separated; hostPath checked. */
static char *spec_nodes(json_t *dev) {
    json_t *nodes = json_object_get(json_object_get(dev, "containerEdits"), "deviceNodes"), *n;
    char **l = NULL, host[512];
    size_t i;

    json_array_foreach(nodes, i, n) {
        const char *path = json_string_value(json_object_get(n, "path"));
        assert_non_null(path);
        snprintf(host, sizeof(host), "%s%s", devroot, path);
        assert_string_equal(json_string_value(json_object_get(n, "hostPath")), host);
        assert_string_equal(json_string_value(json_object_get(n, "permissions")), "rw");
        assert_int_equal(strv_push(&l, path), 0);
    }
    char *j = strv_join(l, " ");
    strv_free(l);
    assert_non_null(j);
    return j;
}

/* A verbs unit's nodes as the inventory lists them with "rdma": {"umad":
 * true, "gdrcopy": true}: the container gets those that exist, in both
 * modes (Allocate's list, the CDI spec's device). */
static void test_rdma_nodes(void **state) {
    static const char *const list[] = {"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm",
                                       "/dev/infiniband/umad0", "/dev/infiniband/umad1",
                                       "/dev/gdrdrv"};
    NodeConfig c = {.dev_root = devroot};
    ContainerEdits e = {0};
    RgError err = {0};
    char path[512];

    make_units();
    strv_free(units[0].rdma_devices);
    units[0].rdma_devices = NULL;
    for (size_t i = 0; i < ELEMENTSOF(list); i++)
        assert_int_equal(strv_push(&units[0].rdma_devices, list[i]), 0);
    const Unit *one[] = {&units[0]};
    touch("dev/infiniband/rdma_cm", true);
    touch("dev/infiniband/umad0", true);
    touch("dev/infiniband/umad1", true);

    /* gdrdrv asked, the node has none: not given */
    assert_int_equal(container_edits_build(&c, "tenant-a", one, 1, &e), 0);
    _cleanup_free_ char *devs = strv_join(e.devices, " ");
    assert_string_equal(devs, "/dev/nvidia0 /dev/nvidiactl /dev/infiniband/uverbs0 "
                              "/dev/infiniband/rdma_cm /dev/infiniband/umad0 "
                              "/dev/infiniband/umad1");
    container_edits_done(&e);

    /* the node has it: given; rdma_cm gone (rdma_ucm not loaded): not given */
    touch("dev/gdrdrv", true);
    touch("dev/infiniband/rdma_cm", false);
    assert_int_equal(container_edits_build(&c, "tenant-a", one, 1, &e), 0);
    _cleanup_free_ char *devs2 = strv_join(e.devices, " ");
    assert_string_equal(devs2, "/dev/nvidia0 /dev/nvidiactl /dev/infiniband/uverbs0 "
                               "/dev/infiniband/umad0 /dev/infiniband/umad1 /dev/gdrdrv");
    container_edits_done(&e);

    /* cdiKind names the GPU: the fabric nodes still go as device nodes */
    c.cdi_kind = "nvidia.com/gpu";
    touch("dev/infiniband/rdma_cm", true);
    assert_int_equal(container_edits_build(&c, "tenant-a", one, 1, &e), 0);
    _cleanup_free_ char *devs3 = strv_join(e.devices, " ");
    assert_string_equal(devs3, "/dev/infiniband/uverbs0 /dev/infiniband/rdma_cm "
                               "/dev/infiniband/umad0 /dev/infiniband/umad1 /dev/gdrdrv");
    container_edits_done(&e);
    c.cdi_kind = NULL;

    /* DRA mode: the unit's device in the claim's CDI spec carries the same */
    ContainerEdits claim = {0}, per = {0};
    assert_int_equal(container_edits_build(&c, "tenant-a", one, 1, &claim), 0);
    assert_int_equal(container_edits_build(&c, "tenant-a", one, 1, &per), 0);
    CdiUnit cu[] = {{"rail0", &per}};
    assert_int_equal(cdi_spec_write(cdidir, "railgate.io", devroot, "77aa", &claim, cu, 1, &err),
                     0);
    assert_int_equal(cdi_spec_path(cdidir, "railgate.io", "77aa", path, sizeof(path)), 0);
    json_t *spec = json_load_file(path, 0, NULL);
    assert_non_null(spec);
    _cleanup_free_ char *nodes = spec_nodes(json_array_get(json_object_get(spec, "devices"), 0));
    assert_string_equal(nodes, "/dev/nvidia0 /dev/nvidiactl /dev/infiniband/uverbs0 "
                               "/dev/infiniband/rdma_cm /dev/infiniband/umad0 "
                               "/dev/infiniband/umad1 /dev/gdrdrv");
    json_decref(spec);
    container_edits_done(&claim);
    container_edits_done(&per);
    free_units();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_edits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rdma_nodes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
