/* SPDX-License-Identifier: Apache-2.0 */
/* hwloc topology loading and GPU-NIC pairing on XML fixtures of real server shapes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "topology.h"

#define FIXTURE(name) RAILGATE_FIXTURES "/topology/" name

/* One expected rail: the pair k of a Pairing, by rail number. */
typedef struct Want {
    const char *gpu, *nic, *netdev, *switch_id;
    int numa;
    PairDistance distance;
} Want;

static Topology *load(const char *path) {
    RgError err = {0};
    Topology *t = NULL;
    int r = topology_load(path, &t, &err);

    if (r < 0)
        fail_msg("%s: %d %s", path, r, err.msg);
    assert_non_null(t);
    return t;
}

static Pairing *pair(const Topology *t, PairDistance max, char *const *exclude) {
    Pairing *p = NULL;

    assert_int_equal(pairing_compute(t, max, exclude, &p), 0);
    assert_non_null(p);
    return p;
}

static void check_pairs(const Topology *t, const Pairing *p, const Want *want, size_t n) {
    assert_int_equal(p->n_pairs, n);
    for (size_t i = 0; i < n; i++) {
        const TopoPair *tp = &p->pairs[i];
        const TopoDevice *g = &t->gpus[tp->gpu], *k = &t->nics[tp->nic];

        assert_int_equal(tp->rail, i);
        assert_string_equal(g->pci, want[i].gpu);
        assert_string_equal(k->pci, want[i].nic);
        assert_string_equal(k->netdev, want[i].netdev);
        assert_string_equal(g->switch_id, want[i].switch_id);
        assert_string_equal(k->switch_id, want[i].switch_id);
        assert_int_equal(g->numa, want[i].numa);
        assert_int_equal(k->numa, want[i].numa);
        assert_int_equal(tp->distance, want[i].distance);
        assert_int_equal(topology_distance(g, k), want[i].distance);
    }
}

/* Unpaired devices as "pci pci ..." for one readable comparison. */
static void check_unpaired(const TopoDevice *devs, const size_t *idx, size_t n, const char *want) {
    char got[512] = "";
    size_t len = 0;

    for (size_t i = 0; i < n; i++)
        len +=
            (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", i ? " " : "", devs[idx[i]].pci);
    assert_string_equal(got, want);
}

static void check_none_paired(const Topology *t, PairDistance max, const char *gpus,
                              const char *nics) {
    Pairing *p = pair(t, max, NULL);

    assert_int_equal(p->n_pairs, 0);
    check_unpaired(t->gpus, p->unpaired_gpus, p->n_unpaired_gpus, gpus);
    check_unpaired(t->nics, p->unpaired_nics, p->n_unpaired_nics, nics);
    pairing_free(p);
}

/* DGX-like: GPU, NIC, GPU, NIC on the downstream ports of each switch. */
static const Want dgx_rails[] = {
    {"0000:18:00.0", "0000:19:00.0", "ibp25s0", "0000:16:00.0", 0, PAIR_DISTANCE_SWITCH},
    {"0000:1a:00.0", "0000:1b:00.0", "ibp27s0", "0000:16:00.0", 0, PAIR_DISTANCE_SWITCH},
    {"0000:3b:00.0", "0000:3c:00.0", "ibp60s0", "0000:39:00.0", 0, PAIR_DISTANCE_SWITCH},
    {"0000:3d:00.0", "0000:3e:00.0", "ibp62s0", "0000:39:00.0", 0, PAIR_DISTANCE_SWITCH},
    {"0000:9d:00.0", "0000:9e:00.0", "enp158s0np0", "0000:9b:00.0", 1, PAIR_DISTANCE_SWITCH},
    {"0000:9f:00.0", "0000:a0:00.0", "enp160s0np0", "0000:9b:00.0", 1, PAIR_DISTANCE_SWITCH},
    {"0000:bd:00.0", "0000:be:00.0", "enp190s0np0", "0000:bb:00.0", 1, PAIR_DISTANCE_SWITCH},
    {"0000:bf:00.0", "0000:c0:00.0", "enp192s0np0", "0000:bb:00.0", 1, PAIR_DISTANCE_SWITCH},
};

static void test_dgx_devices(void **state) {
    Topology *t = load(FIXTURE("dgx-8gpu-4sw.xml"));

    /* the BMC's ASPEED VGA, NVSwitches and NVMe are not GPUs or NICs */
    assert_int_equal(t->n_gpus, 8);
    assert_int_equal(t->n_nics, 9);
    for (size_t i = 0; i < t->n_gpus; i++) {
        assert_string_equal(t->gpus[i].pci, dgx_rails[i].gpu);
        assert_int_equal(t->gpus[i].kind, TOPO_GPU);
    }

    const TopoDevice *g = &t->gpus[0];
    assert_int_equal(g->vendor, 0x10de);
    assert_int_equal(g->device, 0x2330);
    assert_int_equal(g->class_id, 0x0302);
    assert_string_equal(g->uuid, "GPU-1b7a0c3e-5d2f-4a61-9e08-3c4d5e6f7081");
    assert_string_equal(g->netdev, "");
    assert_int_equal(g->depth, 4);
    assert_string_equal(g->path[0], "hb:0000:15");
    assert_string_equal(g->path[1], "0000:15:01.0");
    assert_string_equal(g->path[2], "0000:16:00.0");
    assert_string_equal(g->path[3], "0000:17:00.0");
    assert_string_equal(g->switch_id, "0000:16:00.0");

    const TopoDevice *eno1 = &t->nics[0];
    assert_string_equal(eno1->pci, "0000:01:00.0");
    assert_string_equal(eno1->netdev, "eno1");
    assert_string_equal(eno1->rdma, "");
    assert_int_equal(eno1->kind, TOPO_NIC);
    assert_int_equal(eno1->numa, 0);
    assert_int_equal(eno1->depth, 2);
    assert_string_equal(eno1->path[0], "hb:0000:00");
    assert_string_equal(eno1->switch_id, "");

    const TopoDevice *ib = &t->nics[1], *eth = &t->nics[5];
    assert_int_equal(ib->vendor, 0x15b3);
    assert_int_equal(ib->device, 0x1021);
    assert_int_equal(ib->class_id, 0x0207);
    assert_string_equal(ib->rdma, "mlx5_0");
    assert_int_equal(eth->class_id, 0x0200);
    assert_string_equal(eth->netdev, "enp158s0np0");
    assert_string_equal(eth->rdma, "mlx5_4");
    assert_int_equal(eth->numa, 1);
    topology_free(t);
}

static void test_dgx_distances(void **state) {
    Topology *t = load(FIXTURE("dgx-8gpu-4sw.xml"));

    /* GPU0 against NIC1 (its switch), NIC3 (other switch, NUMA 0), NIC5 (NUMA 1), eno1 */
    assert_int_equal(topology_distance(&t->gpus[0], &t->nics[2]), PAIR_DISTANCE_SWITCH);
    assert_int_equal(topology_distance(&t->gpus[0], &t->nics[3]), PAIR_DISTANCE_NUMA);
    assert_int_equal(topology_distance(&t->gpus[0], &t->nics[0]), PAIR_DISTANCE_NUMA);
    assert_int_equal(topology_distance(&t->gpus[0], &t->nics[5]), PAIR_DISTANCE_SYSTEM);
    assert_int_equal(topology_distance(&t->gpus[7], &t->nics[0]), PAIR_DISTANCE_SYSTEM);
    topology_free(t);
}

static void test_dgx_pairing(void **state) {
    Topology *t = load(FIXTURE("dgx-8gpu-4sw.xml"));
    char *exclude[] = {"eno1", NULL};

    /* eno1 is left over by distance, by exclusion, and when anything goes */
    for (PairDistance max = PAIR_DISTANCE_SWITCH; max <= PAIR_DISTANCE_SYSTEM; max++)
        for (int ex = 0; ex < 2; ex++) {
            Pairing *p = pair(t, max, ex ? exclude : NULL);

            check_pairs(t, p, dgx_rails, ELEMENTSOF(dgx_rails));
            assert_int_equal(p->n_unpaired_gpus, 0);
            check_unpaired(t->nics, p->unpaired_nics, p->n_unpaired_nics, "0000:01:00.0");
            pairing_free(p);
        }
    topology_free(t);
}

static void test_dgx_exclude_rail_nic(void **state) {
    Topology *t = load(FIXTURE("dgx-8gpu-4sw.xml"));
    char *exclude[] = {"eno1", "ibp25s0", NULL};
    Want want[7];
    Pairing *p;

    /* NIC0 gone: GPU0 (lower address) takes NIC1, GPU1 has nothing on its
     * switch, and the rails after it shift down by one */
    want[0] = dgx_rails[1];
    want[0].gpu = dgx_rails[0].gpu;
    for (size_t i = 1; i < 7; i++)
        want[i] = dgx_rails[i + 1];
    p = pair(t, PAIR_DISTANCE_SWITCH, exclude);
    check_pairs(t, p, want, 7);
    check_unpaired(t->gpus, p->unpaired_gpus, p->n_unpaired_gpus, "0000:1a:00.0");
    check_unpaired(t->nics, p->unpaired_nics, p->n_unpaired_nics, "0000:01:00.0 0000:19:00.0");
    pairing_free(p);

    /* NUMA distance without excluding eno1 hands the primary NIC to GPU1:
     * the reason the exclude list exists */
    p = pair(t, PAIR_DISTANCE_NUMA, exclude + 1);
    assert_int_equal(p->n_pairs, 8);
    assert_string_equal(t->gpus[p->pairs[1].gpu].pci, "0000:1a:00.0");
    assert_string_equal(t->nics[p->pairs[1].nic].netdev, "eno1");
    assert_int_equal(p->pairs[1].distance, PAIR_DISTANCE_NUMA);
    assert_int_equal(p->n_unpaired_gpus, 0);
    check_unpaired(t->nics, p->unpaired_nics, p->n_unpaired_nics, "0000:19:00.0");
    pairing_free(p);
    topology_free(t);
}

static void test_dgx_deterministic(void **state) {
    Topology *a = load(FIXTURE("dgx-8gpu-4sw.xml")), *b = load(FIXTURE("dgx-8gpu-4sw.xml"));
    Pairing *p = pair(a, PAIR_DISTANCE_SYSTEM, NULL), *q = pair(b, PAIR_DISTANCE_SYSTEM, NULL);

    assert_int_equal(a->n_gpus, b->n_gpus);
    assert_int_equal(a->n_nics, b->n_nics);
    assert_memory_equal(a->gpus, b->gpus, a->n_gpus * sizeof(TopoDevice));
    assert_memory_equal(a->nics, b->nics, a->n_nics * sizeof(TopoDevice));
    assert_int_equal(p->n_pairs, q->n_pairs);
    assert_memory_equal(p->pairs, q->pairs, p->n_pairs * sizeof(TopoPair));
    pairing_free(p);
    pairing_free(q);
    topology_free(a);
    topology_free(b);
}

static void test_remote_nics(void **state) {
    static const Want want[] = {
        {"0000:11:00.0", "0000:91:00.0", "ens145f0np0", "", 0, PAIR_DISTANCE_SYSTEM},
        {"0000:12:00.0", "0000:91:00.1", "ens145f1np1", "", 0, PAIR_DISTANCE_SYSTEM},
        {"0000:31:00.0", "0000:b1:00.0", "ens177f0np0", "", 0, PAIR_DISTANCE_SYSTEM},
        {"0000:32:00.0", "0000:b1:00.1", "ens177f1np1", "", 0, PAIR_DISTANCE_SYSTEM},
    };
    static const char gpus[] = "0000:11:00.0 0000:12:00.0 0000:31:00.0 0000:32:00.0";
    static const char nics[] = "0000:91:00.0 0000:91:00.1 0000:b1:00.0 0000:b1:00.1";
    Topology *t = load(FIXTURE("4gpu-remote-nics.xml"));
    Pairing *p;

    /* AMD display-class GPUs count, their HDMI audio functions do not */
    assert_int_equal(t->n_gpus, 4);
    assert_int_equal(t->n_nics, 4);
    assert_int_equal(t->gpus[0].vendor, 0x1002);
    assert_int_equal(t->gpus[0].class_id, 0x0300);
    assert_string_equal(t->nics[3].rdma, "bnxt_re3");
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(t->gpus[i].numa, 0);
        assert_int_equal(t->nics[i].numa, 1);
        assert_int_equal(t->gpus[i].depth, 2);
    }
    check_none_paired(t, PAIR_DISTANCE_SWITCH, gpus, nics);
    check_none_paired(t, PAIR_DISTANCE_HOSTBRIDGE, gpus, nics);
    check_none_paired(t, PAIR_DISTANCE_NUMA, gpus, nics);

    p = pair(t, PAIR_DISTANCE_SYSTEM, NULL);
    assert_int_equal(p->n_pairs, 4);
    for (size_t i = 0; i < 4; i++) {
        const TopoPair *tp = &p->pairs[i];

        assert_int_equal(tp->rail, i);
        assert_string_equal(t->gpus[tp->gpu].pci, want[i].gpu);
        assert_string_equal(t->nics[tp->nic].pci, want[i].nic);
        assert_string_equal(t->nics[tp->nic].netdev, want[i].netdev);
        assert_int_equal(tp->distance, PAIR_DISTANCE_SYSTEM);
    }
    assert_int_equal(p->n_unpaired_gpus, 0);
    assert_int_equal(p->n_unpaired_nics, 0);
    pairing_free(p);
    topology_free(t);
}

static void test_h100_vm_real(void **state) {
    Topology *t = load(FIXTURE("h100-vm-real.xml"));
    char *exclude[] = {"eth0", NULL};
    static const Want want[] = {
        {"0000:00:06.0", "0000:00:03.0", "eth0", "", 0, PAIR_DISTANCE_HOSTBRIDGE},
    };
    Pairing *p;

    assert_int_equal(t->n_gpus, 1);
    assert_int_equal(t->n_nics, 1);
    assert_string_equal(t->gpus[0].pci, "0000:00:06.0");
    assert_int_equal(t->gpus[0].device, 0x2330);
    /* no NVML in that VM: the OpenCL device carries no UUID */
    assert_string_equal(t->gpus[0].uuid, "");
    assert_int_equal(t->gpus[0].depth, 1);
    assert_string_equal(t->gpus[0].path[0], "hb:0000:00");
    assert_string_equal(t->nics[0].pci, "0000:00:03.0");
    assert_int_equal(t->nics[0].vendor, 0x1af4);
    assert_string_equal(t->nics[0].rdma, "");

    check_none_paired(t, PAIR_DISTANCE_SWITCH, "0000:00:06.0", "0000:00:03.0");

    p = pair(t, PAIR_DISTANCE_HOSTBRIDGE, NULL);
    check_pairs(t, p, want, 1);
    assert_int_equal(p->n_unpaired_gpus, 0);
    assert_int_equal(p->n_unpaired_nics, 0);
    pairing_free(p);

    p = pair(t, PAIR_DISTANCE_SYSTEM, exclude);
    assert_int_equal(p->n_pairs, 0);
    check_unpaired(t->gpus, p->unpaired_gpus, p->n_unpaired_gpus, "0000:00:06.0");
    check_unpaired(t->nics, p->unpaired_nics, p->n_unpaired_nics, "0000:00:03.0");
    pairing_free(p);
    topology_free(t);
}

static void check_load_fails(const char *path, int want_r, const char *want_msg) {
    RgError err = {0};
    Topology *t = (Topology *)0x1;

    assert_int_equal(topology_load(path, &t, &err), want_r);
    assert_ptr_equal(t, (Topology *)0x1); /* not written on failure */
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, want_msg));
}

static void test_no_io_rejected(void **state) {
    check_load_fails(FIXTURE("no-io.xml"), -EINVAL, "exported without I/O");
}

static void test_bad_xml_rejected(void **state) {
    char path[] = "/tmp/railgate-topology-XXXXXX";
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    assert_true(write(fd, "<topology version=\"2.0\"><object type=", 37) == 37);
    close(fd);
    check_load_fails(path, -EINVAL, "Invalid argument");
    unlink(path);
    check_load_fails("/nonexistent/railgate/topology.xml", -ENOENT, "No such file");
}

/* Hand-built: GPU A and NIC X are first by address, but GPU B shares a
 * second-level switch with NIC X, so the deeper common ancestor wins. */
static void test_pairing_prefers_deeper_ancestor(void **state) {
    TopoDevice gpus[2] = {0}, nics[2] = {0};
    static const char *const base[] = {"hb:0000:10", "0000:10:01.0", "0000:11:00.0"};
    Topology t = {.gpus = gpus, .n_gpus = 2, .nics = nics, .n_nics = 2};
    Pairing *p;

    for (size_t i = 0; i < 2; i++) {
        TopoDevice *d[] = {&gpus[i], &nics[i]};
        for (size_t j = 0; j < 2; j++) {
            for (size_t k = 0; k < 3; k++)
                strcpy(d[j]->path[k], base[k]);
            strcpy(d[j]->switch_id, base[2]);
            d[j]->numa = 0;
        }
    }
    strcpy(gpus[0].pci, "0000:13:00.0"); /* A */
    strcpy(gpus[0].path[3], "0000:12:00.0");
    gpus[0].depth = 4;
    strcpy(nics[0].pci, "0000:16:00.0"); /* X */
    strcpy(nics[0].path[3], "0000:12:01.0");
    strcpy(nics[0].path[4], "0000:14:00.0");
    strcpy(nics[0].path[5], "0000:15:00.0");
    nics[0].depth = 6;
    strcpy(gpus[1].pci, "0000:17:00.0"); /* B, beside X */
    memcpy(gpus[1].path, nics[0].path, sizeof(gpus[1].path));
    strcpy(gpus[1].path[5], "0000:15:01.0");
    gpus[1].depth = 6;
    strcpy(nics[1].pci, "0000:19:00.0"); /* Y */
    strcpy(nics[1].path[3], "0000:12:02.0");
    nics[1].depth = 4;

    p = pair(&t, PAIR_DISTANCE_SWITCH, NULL);
    assert_int_equal(p->n_pairs, 2);
    assert_int_equal(p->pairs[0].gpu, 0);
    assert_int_equal(p->pairs[0].nic, 1);
    assert_int_equal(p->pairs[1].gpu, 1);
    assert_int_equal(p->pairs[1].nic, 0);
    pairing_free(p);
}

static void test_pairing_invalid(void **state) {
    Topology t = {0};
    Pairing *p = (Pairing *)0x1;

    assert_int_equal(pairing_compute(&t, 0, NULL, &p), -EINVAL);
    assert_int_equal(pairing_compute(&t, PAIR_DISTANCE_SYSTEM + 1, NULL, &p), -EINVAL);
    assert_int_equal(pairing_compute(NULL, PAIR_DISTANCE_SYSTEM, NULL, &p), -EINVAL);
    assert_ptr_equal(p, (Pairing *)0x1);

    /* nothing to pair is not an error */
    p = pair(&t, PAIR_DISTANCE_SYSTEM, NULL);
    assert_int_equal(p->n_pairs + p->n_unpaired_gpus + p->n_unpaired_nics, 0);
    pairing_free(p);
}

static void test_distance_strings(void **state) {
    static const char *const names[] = {"switch", "hostbridge", "numa", "system"};
    PairDistance d = PAIR_DISTANCE_NUMA;

    for (PairDistance i = PAIR_DISTANCE_SWITCH; i <= PAIR_DISTANCE_SYSTEM; i++) {
        assert_string_equal(pair_distance_to_string(i), names[i - PAIR_DISTANCE_SWITCH]);
        assert_int_equal(pair_distance_from_string(names[i - PAIR_DISTANCE_SWITCH], &d), 0);
        assert_int_equal(d, i);
    }
    assert_null(pair_distance_to_string(0));
    assert_null(pair_distance_to_string(PAIR_DISTANCE_SYSTEM + 1));
    d = PAIR_DISTANCE_NUMA;
    assert_int_equal(pair_distance_from_string("Switch", &d), -EINVAL);
    assert_int_equal(pair_distance_from_string("", &d), -EINVAL);
    assert_int_equal(pair_distance_from_string(NULL, &d), -EINVAL);
    assert_int_equal(d, PAIR_DISTANCE_NUMA);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx_devices),
        cmocka_unit_test(test_dgx_distances),
        cmocka_unit_test(test_dgx_pairing),
        cmocka_unit_test(test_dgx_exclude_rail_nic),
        cmocka_unit_test(test_dgx_deterministic),
        cmocka_unit_test(test_remote_nics),
        cmocka_unit_test(test_h100_vm_real),
        cmocka_unit_test(test_no_io_rejected),
        cmocka_unit_test(test_bad_xml_rejected),
        cmocka_unit_test(test_pairing_prefers_deeper_ancestor),
        cmocka_unit_test(test_pairing_invalid),
        cmocka_unit_test(test_distance_strings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
