/* SPDX-License-Identifier: Apache-2.0 */
/* sysfs/procfs lookups against a fixture tree built in a temporary directory. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
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

#include "strv.h"
#include "sysfs.h"

#define PF "0000:3b:00.0"
#define GPU "0000:18:00.0"
#define UUID "GPU-8c4d2f9e-51aa-3c1b-9d7e-0a2b4c6d8e10"
#define SENTINEL "untouched"

static char root[256], sys_root[512], proc_root[512];

/* root/rel, which always fits: the fixture's paths are short */
static void fixture_path(char *buf, size_t n, const char *rel) {
    int k = snprintf(buf, n, "%s/%s", root, rel);

    assert_true(k > 0 && (size_t)k < n);
}

/* mkdir -p root/rel */
static void mkdirs(const char *rel) {
    char path[PATH_MAX];

    fixture_path(path, sizeof(path), rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
            *p = '/';
        }
    assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put_file(const char *rel, const char *text) {
    char path[PATH_MAX];
    FILE *f;

    fixture_path(path, sizeof(path), rel);
    f = fopen(path, "we");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void put_link(const char *rel, const char *target) {
    char path[PATH_MAX];

    fixture_path(path, sizeof(path), rel);
    assert_int_equal(symlink(target, path), 0);
}

/* A ConnectX PF with 4 VFs in the states a node shows: netdev in the host,
 * netdev moved into a pod (empty net/), no net driver, two netdevs. */
static void fixture_nic(void) {
    static const char *const vfs[] = {"0000:3b:00.2", "0000:3b:00.3", "0000:3b:00.4",
                                      "0000:3b:00.5"};
    char rel[256], target[64];

    mkdirs("sys/bus/pci/devices/" PF "/net/ens1f0np0");
    mkdirs("sys/bus/pci/devices/" PF "/infiniband/mlx5_0");
    put_file("sys/bus/pci/devices/" PF "/sriov_numvfs", "4\n");
    for (unsigned i = 0; i < 4; i++) {
        snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", vfs[i]);
        mkdirs(rel);
        snprintf(rel, sizeof(rel), "sys/bus/pci/devices/" PF "/virtfn%u", i);
        snprintf(target, sizeof(target), "../%s", vfs[i]);
        put_link(rel, target);
        /* and the way back, as the kernel links a VF to its PF */
        if (i < 3) {
            snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/physfn", vfs[i]);
            put_link(rel, "../" PF);
        }
    }
    put_link("sys/bus/pci/devices/" PF "/virtfn7", "../not-a-pci-address");
    put_link("sys/bus/pci/devices/0000:3b:00.5/physfn", "../not-a-pci-address");
    mkdirs("sys/bus/pci/devices/0000:3b:00.2/net/ens1f0v0");
    mkdirs("sys/bus/pci/devices/0000:3b:00.2/infiniband/mlx5_2");
    mkdirs("sys/bus/pci/devices/0000:3b:00.3/net");
    mkdirs("sys/bus/pci/devices/0000:3b:00.5/net/eth10");
    mkdirs("sys/bus/pci/devices/0000:3b:00.5/net/eth9");
    mkdirs("sys/bus/pci/devices/0000:5e:00.0");
    put_file("sys/bus/pci/devices/0000:5e:00.0/sriov_numvfs", "four\n");
    mkdirs("sys/bus/pci/devices/0000:5f:00.0");
    put_file("sys/bus/pci/devices/0000:5f:00.0/sriov_numvfs", "70000\n");
}

static void fixture_class(void) {
    mkdirs("sys/class/net/ens1f0np0");
    put_link("sys/class/net/ens1f0np0/device", "../../../bus/pci/devices/" PF);
    mkdirs("sys/class/net/veth0");
    mkdirs("sys/class/net/virtio-eth");
    put_link("sys/class/net/virtio-eth/device", "../../../virtio0");
    mkdirs("sys/class/infiniband_verbs/uverbs0");
    mkdirs("sys/class/infiniband_verbs/uverbs1");
    mkdirs("sys/class/infiniband_verbs/uverbs2");
    put_file("sys/class/infiniband_verbs/abi_version", "6\n");
    put_file("sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
    put_file("sys/class/infiniband_verbs/uverbs1/ibdev", "mlx5_2\n");
}

/* ib_umad's class: a node per port (and an issm node per port, never
 * handed out). mlx5_0 has two ports, mlx5_2 one; mlx5_4's ports are
 * numbered against the names' order; mlx5_6's port file is garbage. */
static void umad(const char *name, const char *ibdev, const char *port) {
    char rel[128];

    snprintf(rel, sizeof(rel), "sys/class/infiniband_mad/%s", name);
    mkdirs(rel);
    snprintf(rel, sizeof(rel), "sys/class/infiniband_mad/%s/ibdev", name);
    put_file(rel, ibdev);
    snprintf(rel, sizeof(rel), "sys/class/infiniband_mad/%s/port", name);
    put_file(rel, port);
}

static void fixture_mad(void) {
    umad("umad1", "mlx5_0\n", "2\n");
    put_file("sys/class/infiniband_mad/abi_version", "5\n");
    umad("umad0", "mlx5_0\n", "1\n");
    umad("issm0", "mlx5_0\n", "1\n");
    umad("issm1", "mlx5_0\n", "2\n");
    umad("umad2", "mlx5_2\n", "1\n");
    umad("umad9", "mlx5_4\n", "2\n");
    umad("umad10", "mlx5_4\n", "1\n");
    umad("umad11", "mlx5_6\n", "one\n");
    mkdirs("sys/class/infiniband_mad/umad12"); /* no ibdev: skipped */
}

/* What NVIDIA's driver writes (tabs and spaces after the colons), and
 * broken variants of it. */
static void fixture_gpu(void) {
    mkdirs("proc/driver/nvidia/gpus/" GPU);
    put_file("proc/driver/nvidia/gpus/" GPU "/information", "Model: \t\t NVIDIA H100 80GB HBM3\n"
                                                            "IRQ:   \t\t 220\n"
                                                            "GPU UUID: \t " UUID "\n"
                                                            "Video BIOS: \t 96.00.99.00.01\n"
                                                            "Bus Type: \t PCIe\n"
                                                            "Bus Location: \t " GPU "\n"
                                                            "Device Minor: \t 3\n"
                                                            "GPU Excluded:\t No\n");
    mkdirs("proc/driver/nvidia/gpus/0000:19:00.0");
    put_file("proc/driver/nvidia/gpus/0000:19:00.0/information", "GPU UUID: \t " UUID "\n");
    mkdirs("proc/driver/nvidia/gpus/0000:1a:00.0");
    put_file("proc/driver/nvidia/gpus/0000:1a:00.0/information", "Device Minor: 7\n");
    mkdirs("proc/driver/nvidia/gpus/0000:1b:00.0");
    put_file("proc/driver/nvidia/gpus/0000:1b:00.0/information", "Device Minor: -1\n");
    mkdirs("proc/driver/nvidia/gpus/0000:1c:00.0");
    put_file("proc/driver/nvidia/gpus/0000:1c:00.0/information",
             "Device Minor: 4\nGPU UUID: GPU-$(reboot)\n");
    mkdirs("sys/bus/pci/devices/" GPU "/drm/card0");
    mkdirs("sys/bus/pci/devices/" GPU "/drm/renderD128");
    mkdirs("sys/bus/pci/devices/0000:19:00.0/drm/card1");
}

static int group_setup(void **state) {
    const char *tmp = getenv("TMPDIR");
    int k = snprintf(root, sizeof(root), "%s/railgate-sysfs-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");

    if (k < 0 || (size_t)k >= sizeof(root) || !mkdtemp(root))
        return -1;
    fixture_path(sys_root, sizeof(sys_root), "sys");
    fixture_path(proc_root, sizeof(proc_root), "proc");
    fixture_nic();
    fixture_class();
    fixture_mad();
    fixture_gpu();
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static int group_teardown(void **state) {
    if (root[0])
        return nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static void test_pci_netdev(void **state) {
    char name[IFNAMSIZ] = "";

    assert_int_equal(sysfs_pci_netdev(sys_root, PF, name, sizeof(name)), 0);
    assert_string_equal(name, "ens1f0np0");
    assert_int_equal(sysfs_pci_netdev(sys_root, "0000:3b:00.2", name, sizeof(name)), 0);
    assert_string_equal(name, "ens1f0v0");
    /* two netdevs: the first in version order, not in readdir order */
    assert_int_equal(sysfs_pci_netdev(sys_root, "0000:3b:00.5", name, sizeof(name)), 0);
    assert_string_equal(name, "eth9");
}

static void test_pci_netdev_missing(void **state) {
    char name[32] = SENTINEL;

    /* net/ empty: the VF's netdev is in a pod */
    assert_int_equal(sysfs_pci_netdev(sys_root, "0000:3b:00.3", name, sizeof(name)), -ENOENT);
    /* no net/: not bound to a network driver */
    assert_int_equal(sysfs_pci_netdev(sys_root, "0000:3b:00.4", name, sizeof(name)), -ENOENT);
    assert_int_equal(sysfs_pci_netdev(sys_root, "0000:99:00.0", name, sizeof(name)), -ENOENT);
    assert_string_equal(name, SENTINEL);
}

static void test_netdev_pci(void **state) {
    char pci[16] = SENTINEL;

    assert_int_equal(sysfs_netdev_pci(sys_root, "ens1f0np0", pci, sizeof(pci)), 0);
    assert_string_equal(pci, PF);
    strcpy(pci, SENTINEL);
    /* virtual netdev: no device link */
    assert_int_equal(sysfs_netdev_pci(sys_root, "veth0", pci, sizeof(pci)), -ENOENT);
    /* a device, but not a PCI function */
    assert_int_equal(sysfs_netdev_pci(sys_root, "virtio-eth", pci, sizeof(pci)), -ENOENT);
    assert_int_equal(sysfs_netdev_pci(sys_root, "nope0", pci, sizeof(pci)), -ENOENT);
    assert_string_equal(pci, SENTINEL);
}

static void test_pci_rdma(void **state) {
    char rdma[32] = SENTINEL;

    assert_int_equal(sysfs_pci_rdma(sys_root, PF, rdma, sizeof(rdma)), 0);
    assert_string_equal(rdma, "mlx5_0");
    assert_int_equal(sysfs_pci_rdma(sys_root, "0000:3b:00.2", rdma, sizeof(rdma)), 0);
    assert_string_equal(rdma, "mlx5_2");
    strcpy(rdma, SENTINEL);
    assert_int_equal(sysfs_pci_rdma(sys_root, "0000:3b:00.3", rdma, sizeof(rdma)), -ENOENT);
    assert_string_equal(rdma, SENTINEL);
}

static void test_vf_pci(void **state) {
    static const char *const want[] = {"0000:3b:00.2", "0000:3b:00.3", "0000:3b:00.4",
                                       "0000:3b:00.5"};
    char pci[16] = SENTINEL;

    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(sysfs_vf_pci(sys_root, PF, i, pci, sizeof(pci)), 0);
        assert_string_equal(pci, want[i]);
    }
    strcpy(pci, SENTINEL);
    assert_int_equal(sysfs_vf_pci(sys_root, PF, 4, pci, sizeof(pci)), -ENOENT);
    assert_int_equal(sysfs_vf_pci(sys_root, "0000:3b:00.2", 0, pci, sizeof(pci)), -ENOENT);
    /* a link that does not end in a PCI address is refused, not passed on */
    assert_int_equal(sysfs_vf_pci(sys_root, PF, 7, pci, sizeof(pci)), -EBADMSG);
    assert_string_equal(pci, SENTINEL);
    /* and back: a VF's PF from its physfn link; a PF, or a function
     * without the link, has none */
    assert_int_equal(sysfs_vf_physfn(sys_root, "0000:3b:00.3", pci, sizeof(pci)), 0);
    assert_string_equal(pci, PF);
    strcpy(pci, SENTINEL);
    assert_int_equal(sysfs_vf_physfn(sys_root, PF, pci, sizeof(pci)), -ENOENT);
    assert_int_equal(sysfs_vf_physfn(sys_root, "0000:5e:00.0", pci, sizeof(pci)), -ENOENT);
    assert_int_equal(sysfs_vf_physfn(sys_root, "0000:3b:00.5", pci, sizeof(pci)), -EBADMSG);
    assert_int_equal(sysfs_vf_physfn(sys_root, "../" PF, pci, sizeof(pci)), -EINVAL);
    assert_int_equal(sysfs_vf_physfn(sys_root, "0000:3b:00.2", pci, 8), -ENAMETOOLONG);
    assert_string_equal(pci, SENTINEL);
}

static void test_pf_numvfs(void **state) {
    unsigned n = 12345;

    assert_int_equal(sysfs_pf_numvfs(sys_root, PF, &n), 0);
    assert_int_equal(n, 4);
    n = 12345;
    assert_int_equal(sysfs_pf_numvfs(sys_root, "0000:3b:00.2", &n), -ENOENT);
    assert_int_equal(sysfs_pf_numvfs(sys_root, "0000:5e:00.0", &n), -EBADMSG);
    assert_int_equal(sysfs_pf_numvfs(sys_root, "0000:5f:00.0", &n), -ERANGE);
    assert_int_equal(n, 12345);
    assert_int_equal(sysfs_pf_numvfs(sys_root, PF, NULL), -EINVAL);
}

static void test_rdma_uverbs(void **state) {
    char uverbs[32] = SENTINEL;

    assert_int_equal(sysfs_rdma_uverbs(sys_root, "mlx5_0", uverbs, sizeof(uverbs)), 0);
    assert_string_equal(uverbs, "uverbs0");
    assert_int_equal(sysfs_rdma_uverbs(sys_root, "mlx5_2", uverbs, sizeof(uverbs)), 0);
    assert_string_equal(uverbs, "uverbs1");
    strcpy(uverbs, SENTINEL);
    assert_int_equal(sysfs_rdma_uverbs(sys_root, "mlx5_9", uverbs, sizeof(uverbs)), -ENOENT);
    /* prefix match on the file's content would be wrong */
    assert_int_equal(sysfs_rdma_uverbs(sys_root, "mlx5_", uverbs, sizeof(uverbs)), -ENOENT);
    /* no infiniband_verbs class at all */
    assert_int_equal(sysfs_rdma_uverbs(proc_root, "mlx5_0", uverbs, sizeof(uverbs)), -ENOENT);
    assert_string_equal(uverbs, SENTINEL);
}

static char *umads_of(const char *sys, const char *rdma, int *ret) {
    char **l = NULL;
    char *j;

    *ret = sysfs_rdma_umads(sys, rdma, &l);
    if (*ret < 0) {
        assert_null(l);
        return NULL;
    }
    j = strv_join(l, " ");
    strv_free(l);
    assert_non_null(j);
    return j;
}

static void test_rdma_umads(void **state) {
    char *l;
    int r;

    /* every port's, in port order; no issm */
    l = umads_of(sys_root, "mlx5_0", &r);
    assert_int_equal(r, 0);
    assert_string_equal(l, "umad0 umad1");
    free(l);
    l = umads_of(sys_root, "mlx5_2", &r);
    assert_int_equal(r, 0);
    assert_string_equal(l, "umad2");
    free(l);
    /* the port decides the order, not the name */
    l = umads_of(sys_root, "mlx5_4", &r);
    assert_int_equal(r, 0);
    assert_string_equal(l, "umad10 umad9");
    free(l);
    assert_null(umads_of(sys_root, "mlx5_6", &r));
    assert_int_equal(r, -EBADMSG);
    assert_null(umads_of(sys_root, "mlx5_9", &r));
    assert_int_equal(r, -ENOENT);
    assert_null(umads_of(sys_root, "mlx5_", &r));
    assert_int_equal(r, -ENOENT);
    /* no infiniband_mad class at all: ib_umad not loaded */
    assert_null(umads_of(proc_root, "mlx5_0", &r));
    assert_int_equal(r, -ENOENT);
}

static void test_nvidia_gpu(void **state) {
    char uuid[64] = SENTINEL;
    int minor = -1;

    assert_int_equal(procfs_nvidia_gpu(proc_root, GPU, &minor, uuid, sizeof(uuid)), 0);
    assert_int_equal(minor, 3);
    assert_string_equal(uuid, UUID);
    minor = -1;
    assert_int_equal(procfs_nvidia_gpu(proc_root, GPU, &minor, NULL, 0), 0);
    assert_int_equal(minor, 3);
    /* no UUID line: the minor alone, and an empty UUID */
    assert_int_equal(procfs_nvidia_gpu(proc_root, "0000:1a:00.0", &minor, uuid, sizeof(uuid)), 0);
    assert_int_equal(minor, 7);
    assert_string_equal(uuid, "");
}

static void test_nvidia_gpu_broken(void **state) {
    char uuid[64] = SENTINEL;
    int minor = -5;

    assert_int_equal(procfs_nvidia_gpu(proc_root, "0000:19:00.0", &minor, uuid, sizeof(uuid)),
                     -EBADMSG);
    assert_int_equal(procfs_nvidia_gpu(proc_root, "0000:1b:00.0", &minor, uuid, sizeof(uuid)),
                     -EBADMSG);
    assert_int_equal(procfs_nvidia_gpu(proc_root, "0000:1c:00.0", &minor, uuid, sizeof(uuid)),
                     -EBADMSG);
    assert_int_equal(procfs_nvidia_gpu(proc_root, "0000:99:00.0", &minor, uuid, sizeof(uuid)),
                     -ENOENT);
    assert_int_equal(procfs_nvidia_gpu(proc_root, GPU, NULL, uuid, sizeof(uuid)), -EINVAL);
    assert_int_equal(procfs_nvidia_gpu(proc_root, GPU, &minor, uuid, 0), -EINVAL);
    assert_int_equal(minor, -5);
    assert_string_equal(uuid, SENTINEL);
}

static void test_pci_root(void **state) {
    char r[32] = SENTINEL;

    /* as the kernel links them: under the root complex, behind bridges */
    mkdirs("sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0");
    mkdirs("sys/devices/pci10000:00/10000:00:02.0/10000:01:00.0");
    put_link("sys/bus/pci/devices/0000:18:00.1",
             "../../../devices/pci0000:17/0000:17:01.0/0000:18:00.0");
    put_link("sys/bus/pci/devices/10000:01:00.0",
             "../../../devices/pci10000:00/10000:00:02.0/10000:01:00.0");
    put_link("sys/bus/pci/devices/0000:77:00.0", "../../../devices/platform/foo");
    assert_int_equal(sysfs_pci_root(sys_root, "0000:18:00.1", r, sizeof(r)), 0);
    assert_string_equal(r, "pci0000:17");
    assert_int_equal(sysfs_pci_root(sys_root, "10000:01:00.0", r, sizeof(r)), 0);
    assert_string_equal(r, "pci10000:00");
    strcpy(r, SENTINEL);
    assert_int_equal(sysfs_pci_root(sys_root, "0000:77:00.0", r, sizeof(r)), -EBADMSG);
    /* the fixture's PF is a directory, not a link */
    assert_int_equal(sysfs_pci_root(sys_root, PF, r, sizeof(r)), -EBADMSG);
    assert_int_equal(sysfs_pci_root(sys_root, "0000:99:00.0", r, sizeof(r)), -ENOENT);
    assert_int_equal(sysfs_pci_root(sys_root, "../x", r, sizeof(r)), -EINVAL);
    assert_string_equal(r, SENTINEL);
}

static void test_drm_render(void **state) {
    char node[32] = SENTINEL;

    assert_int_equal(sysfs_drm_render(sys_root, GPU, node, sizeof(node)), 0);
    assert_string_equal(node, "renderD128");
    strcpy(node, SENTINEL);
    /* a card node but no render node */
    assert_int_equal(sysfs_drm_render(sys_root, "0000:19:00.0", node, sizeof(node)), -ENOENT);
    assert_int_equal(sysfs_drm_render(sys_root, PF, node, sizeof(node)), -ENOENT);
    assert_string_equal(node, SENTINEL);
}

/* Every name a caller passes is one path component: no way up or across. */
static void test_names_validated(void **state) {
    static const char *const bad[] = {"", ".", "..", "../" PF, PF "/..", "a/b", "/etc", NULL};
    char out[64] = SENTINEL;
    unsigned n = 99;
    int minor = -5;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *b = bad[i];

        assert_int_equal(sysfs_pci_netdev(sys_root, b, out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_netdev_pci(sys_root, b, out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_pci_rdma(sys_root, b, out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_vf_pci(sys_root, b, 0, out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_pf_numvfs(sys_root, b, &n), -EINVAL);
        assert_int_equal(sysfs_rdma_uverbs(sys_root, b, out, sizeof(out)), -EINVAL);
        char **l = NULL;
        assert_int_equal(sysfs_rdma_umads(sys_root, b, &l), -EINVAL);
        assert_null(l);
        assert_int_equal(procfs_nvidia_gpu(proc_root, b, &minor, out, sizeof(out)), -EINVAL);
        assert_int_equal(sysfs_drm_render(sys_root, b, out, sizeof(out)), -EINVAL);
    }
    /* and a root is required */
    assert_int_equal(sysfs_pci_netdev(NULL, PF, out, sizeof(out)), -EINVAL);
    assert_int_equal(sysfs_pci_netdev("", PF, out, sizeof(out)), -EINVAL);
    assert_int_equal(procfs_nvidia_gpu(NULL, GPU, &minor, out, sizeof(out)), -EINVAL);
    assert_string_equal(out, SENTINEL);
    assert_int_equal(n, 99);
    assert_int_equal(minor, -5);
}

/* A result that does not fit is an error, never a truncated name. */
static void test_small_buffer(void **state) {
    char out[64] = SENTINEL;
    int minor = -5;

    assert_int_equal(sysfs_pci_netdev(sys_root, PF, out, strlen("ens1f0np0")), -ENAMETOOLONG);
    assert_int_equal(sysfs_netdev_pci(sys_root, "ens1f0np0", out, strlen(PF)), -ENAMETOOLONG);
    assert_int_equal(sysfs_pci_rdma(sys_root, PF, out, 3), -ENAMETOOLONG);
    assert_int_equal(sysfs_vf_pci(sys_root, PF, 0, out, 8), -ENAMETOOLONG);
    assert_int_equal(sysfs_rdma_uverbs(sys_root, "mlx5_0", out, strlen("uverbs0")), -ENAMETOOLONG);
    assert_int_equal(sysfs_drm_render(sys_root, GPU, out, 1), -ENAMETOOLONG);
    assert_int_equal(procfs_nvidia_gpu(proc_root, GPU, &minor, out, strlen(UUID)), -ENAMETOOLONG);
    assert_int_equal(sysfs_pci_netdev(sys_root, PF, out, 0), -EINVAL);
    assert_int_equal(sysfs_pci_netdev(sys_root, PF, NULL, 16), -EINVAL);
    assert_string_equal(out, SENTINEL);
    assert_int_equal(minor, -5);
    /* exactly enough room */
    assert_int_equal(sysfs_pci_netdev(sys_root, PF, out, strlen("ens1f0np0") + 1), 0);
    assert_string_equal(out, "ens1f0np0");
}

static void test_long_root(void **state) {
    char *longroot = malloc(PATH_MAX + 16), out[64] = SENTINEL;

    assert_non_null(longroot);
    memset(longroot, 'a', PATH_MAX + 15);
    longroot[0] = '/';
    longroot[PATH_MAX + 15] = 0;
    assert_int_equal(sysfs_pci_netdev(longroot, PF, out, sizeof(out)), -ENAMETOOLONG);
    assert_int_equal(sysfs_rdma_uverbs(longroot, "mlx5_0", out, sizeof(out)), -ENAMETOOLONG);
    assert_string_equal(out, SENTINEL);
    free(longroot);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pci_netdev),      cmocka_unit_test(test_pci_netdev_missing),
        cmocka_unit_test(test_netdev_pci),      cmocka_unit_test(test_pci_rdma),
        cmocka_unit_test(test_vf_pci),          cmocka_unit_test(test_pf_numvfs),
        cmocka_unit_test(test_rdma_uverbs),     cmocka_unit_test(test_rdma_umads),
        cmocka_unit_test(test_nvidia_gpu),      cmocka_unit_test(test_nvidia_gpu_broken),
        cmocka_unit_test(test_pci_root),        cmocka_unit_test(test_drm_render),
        cmocka_unit_test(test_names_validated), cmocka_unit_test(test_small_buffer),
        cmocka_unit_test(test_long_root),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
