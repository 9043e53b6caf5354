/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin binary against the fake kubelet, over real unix sockets, on rails of the
 * kind the harness names (testns.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

#include "dpenv.h"
#include "pb.h"
#include "proc.h"
#include "rpc.h"
#include "state.h"
#include "strv.h"
#include "testns.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define WAIT_MS 10000

static DpEnv env;

static void gpu_node(unsigned i, bool present) {
    dpenv_gpu_node(&env, i, present);
}

static void plugin_start(const char *extra) {
    assert_int_equal(dpenv_plugin_start(&env, extra), 0);
}

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(dpenv_setup(&env, 4, 0), 0);
    /* tenant b's rails have RDMA devices, and the config asks for umad and gdrdrv */
    assert_int_equal(dpenv_rdma(&env, 2, "{\"umad\": true, \"gdrcopy\": true}"), 0);
    plugin_start(NULL);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 1, WAIT_MS), 0);
    return 0;
}

static int group_teardown(void **state) {
    dpenv_teardown(&env);
    return 0;
}

static FkDevice *devices(const char *res, size_t *n) {
    FkDevice *d = NULL;

    assert_int_equal(fk_devices(env.k, res, &d, n, NULL), 0);
    return d;
}

static const char *env_value(const V1beta1__ContainerAllocateResponse *c, const char *key) {
    for (size_t i = 0; i < c->n_envs; i++)
        if (streq(c->envs[i]->key, key))
            return c->envs[i]->value;
    return NULL;
}

static void test_register_and_list(void **state) {
    bool pref = false, prestart = true;
    size_t n;

    assert_int_equal(fk_options(env.k, RES_A, &pref, &prestart), 0);
    assert_true(pref);
    assert_false(prestart);
    /* railgate-<tenant>-<8 hex>.sock: a name new at every start */
    const char *ep = fk_endpoint(env.k, RES_A);
    assert_non_null(ep);
    assert_int_equal(strncmp(ep, "railgate-a-", 11), 0);
    assert_int_equal(strlen(ep), 11 + 8 + 5);
    assert_string_equal(ep + 19, ".sock");
    FkDevice *d = devices(RES_A, &n);
    assert_int_equal(n, 2);
    assert_string_equal(d[0].id, "rail0");
    assert_string_equal(d[1].id, "rail1");
    assert_true(d[0].healthy && d[1].healthy);
    assert_int_equal(d[0].numa, 0);
    free(d);
    d = devices(RES_B, &n);
    assert_int_equal(n, 2);
    assert_string_equal(d[0].id, "rail2");
    assert_string_equal(d[1].id, "rail3");
    assert_int_equal(d[1].numa, 1);
    free(d);
    /* device-plugin mode, metrics off: neither the API client's libcurl nor the metrics
     * server's libmicrohttpd is loaded, nor the TLS stacks they bring (OpenSSL not
     * named: the shared libgrpc of -DRAILGATE_STATIC_GRPC=OFF links it) */
    static const char *const not_here[] = {"libcurl.so.", "libmicrohttpd.so.", "libgnutls.so.",
                                           "libgssapi_krb5.so.", "libldap"};
    for (size_t i = 0; i < ELEMENTSOF(not_here); i++)
        if (proc_maps_library(env.plugin, not_here[i]) != 0)
            fail_msg("the agent in device-plugin mode maps %s", not_here[i]);
}

static void test_health_link(void **state) {
    assert_int_equal(testns_link_set_up("rail-nic1", false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", false, WAIT_MS), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", true, 0), 0);
    assert_int_equal(testns_link_set_up("rail-nic1", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail1", true, WAIT_MS), 0);
    /* lost carrier: the leaf side of the cable went down */
    assert_int_equal(testns_rail_carrier(0, false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", false, WAIT_MS), 0);
    assert_int_equal(testns_rail_carrier(0, true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", true, WAIT_MS), 0);
}

static void test_health_gpu_node(void **state) {
    gpu_node(2, false);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", false, WAIT_MS), 0);
    gpu_node(2, true);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", true, WAIT_MS), 0);
}

static void test_health_attached_nic_is_in_use(void **state) {
    char path[128];
    int fd = -EBADF;

    /* a NIC the CNI moved into a pod leaves the host: read there, healthy
     * while its link is */
    assert_int_equal(dpenv_pod_take_or_skip(&env, "test-pod", 3, path, sizeof(path), &fd), 0);
    assert_int_equal(testns_link_set_up("rail-nic2", false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", false, WAIT_MS), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, WAIT_MS), 0);
    assert_int_equal(testns_link_set_up("rail-nic2", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", true, WAIT_MS), 0);
    /* without the claim, a NIC gone from the host is unhealthy */
    assert_int_equal(dpenv_pod_release(&env, "test-pod", "rail3"), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", false, WAIT_MS), 0);
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
    assert_int_equal(dpenv_rail_remake(3), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, WAIT_MS), 0);
}

static void test_allocate(void **state) {
    char *ids[] = {"rail1", "rail0"};
    V1beta1__AllocateResponse *r = NULL;
    RgError err = {0};

    assert_int_equal(fk_allocate(env.k, RES_A, ids, 2, &r, &err), 0);
    assert_int_equal(r->n_container_responses, 1);
    V1beta1__ContainerAllocateResponse *c = r->container_responses[0];
    assert_string_equal(env_value(c, "RAILGATE_TENANT"), "a");
    assert_string_equal(env_value(c, "RAILGATE_RAILS"), "0,1");
    assert_string_equal(env_value(c, "RAILGATE_UNITS"), "rail0,rail1");
    assert_string_equal(env_value(c, "NCCL_SOCKET_IFNAME"), "=rail0,rail1");
    assert_string_equal(env_value(c, "CUDA_VISIBLE_DEVICES"), "0,1");
    assert_string_equal(env_value(c, "NVIDIA_VISIBLE_DEVICES"), "0,1");
    assert_string_equal(env_value(c, "UCX_NET_DEVICES"), "rail0,rail1");
    assert_null(env_value(c, "NCCL_IB_HCA")); /* veth rails have no RDMA device */
    assert_int_equal(c->n_devices, 2);
    assert_string_equal(c->devices[0]->container_path, "/dev/railgate/gpu0");
    char host[256];
    snprintf(host, sizeof(host), "%s/dev/railgate/gpu0", env.devroot);
    assert_string_equal(c->devices[0]->host_path, host);
    assert_string_equal(c->devices[0]->permissions, "rw");
    assert_string_equal(c->devices[1]->container_path, "/dev/railgate/gpu1");
    assert_int_equal(c->n_cdi_devices, 0);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* The device paths of a container's answer, space-separated; host paths checked. */
static char *device_paths(const V1beta1__ContainerAllocateResponse *c) {
    char **l = NULL, host[256];

    for (size_t i = 0; i < c->n_devices; i++) {
        snprintf(host, sizeof(host), "%s%s", env.devroot, c->devices[i]->container_path);
        assert_string_equal(c->devices[i]->host_path, host);
        assert_string_equal(c->devices[i]->permissions, "rw");
        assert_int_equal(strv_push(&l, c->devices[i]->container_path), 0);
    }
    char *j = strv_join(l, " ");
    strv_free(l);
    assert_non_null(j);
    return j;
}

/* A verbs job's nodes: each unit's uverbs and its ports' umad (the config
 * asks), rdma_cm once; /dev/gdrdrv from when the node has it. */
static void test_allocate_rdma(void **state) {
    char *ids[] = {"rail3", "rail2"};
    V1beta1__AllocateResponse *r = NULL;
    RgError err = {0};

    /* asked and missing: a warning at start, not an error */
    assert_true(file_contains(env.log, "level=warn"));
    assert_true(file_contains(env.log, "rdma.gdrcopy is set and /dev/gdrdrv does not exist"));
    assert_int_equal(fk_allocate(env.k, RES_B, ids, 2, &r, &err), 0);
    V1beta1__ContainerAllocateResponse *c = r->container_responses[0];
    assert_string_equal(env_value(c, "NCCL_IB_HCA"), "=mlx5_2,mlx5_3");
    assert_string_equal(env_value(c, "UCX_NET_DEVICES"), "mlx5_2:1,mlx5_3:1");
    char *devs = device_paths(c);
    assert_string_equal(devs, "/dev/railgate/gpu2 /dev/infiniband/uverbs2 /dev/infiniband/rdma_cm "
                              "/dev/infiniband/umad4 /dev/infiniband/umad5 /dev/railgate/gpu3 "
                              "/dev/infiniband/uverbs3 /dev/infiniband/umad6 "
                              "/dev/infiniband/umad7");
    free(devs);
    protobuf_c_message_free_unpacked(&r->base, NULL);

    /* gdrdrv loaded since: the next container gets it, no restart */
    assert_int_equal(dpenv_dev_node(&env, "/dev/gdrdrv", true), 0);
    assert_int_equal(fk_allocate(env.k, RES_B, ids, 1, &r, &err), 0);
    devs = device_paths(r->container_responses[0]);
    dpenv_dev_node(&env, "/dev/gdrdrv", false);
    assert_string_equal(devs, "/dev/railgate/gpu3 /dev/infiniband/uverbs3 /dev/infiniband/rdma_cm "
                              "/dev/infiniband/umad6 /dev/infiniband/umad7 /dev/gdrdrv");
    free(devs);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* A unit whose uverbs node is gone is unhealthy, and says why; healthy
 * again when it comes back (inotify on /dev/infiniband, no timer). */
static void test_health_uverbs_node(void **state) {
    assert_int_equal(dpenv_dev_node(&env, "/dev/infiniband/uverbs2", false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", false, WAIT_MS), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail3", true, 0), 0);
    assert_true(file_contains(env.log, "Unhealthy: RDMA device mlx5_2 has no uverbs device node"));
    assert_int_equal(dpenv_dev_node(&env, "/dev/infiniband/uverbs2", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_B, "rail2", true, WAIT_MS), 0);
}

static void expect_invalid(char *const *ids, size_t n, const char *msg) {
    V1beta1__AllocateResponse *r = NULL;
    RgError err = {0};

    assert_int_equal(fk_allocate(env.k, RES_A, ids, n, &r, &err), -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, msg));
}

static void test_allocate_invalid(void **state) {
    char *other[] = {"rail0", "rail2"}, *unknown[] = {"nope"}, *dup[] = {"rail0", "rail0"};
    static const uint8_t garbage[] = {0x0a, 0x7f, 0x01};
    uint8_t *resp = NULL;
    size_t len;
    RgError err = {0};

    expect_invalid(other, 2, "\"rail2\" is not a unit of railgate.io/a");
    expect_invalid(unknown, 1, "\"nope\" is not a unit");
    expect_invalid(dup, 2, "twice");
    expect_invalid(NULL, 0, "no devices");
    assert_int_equal(fk_call(env.k, RES_A, "/v1beta1.DevicePlugin/Allocate", garbage,
                             sizeof(garbage), &resp, &len, &err),
                     -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    /* an AllocateRequest with no container requests */
    assert_int_equal(
        fk_call(env.k, RES_A, "/v1beta1.DevicePlugin/Allocate", NULL, 0, &resp, &len, &err),
        -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    /* still serving */
    test_allocate(state);
}

static void test_preferred(void **state) {
    char *avail[] = {"rail0", "rail3", "rail2"}, **got = NULL;
    RgError err = {0};

    /* tenant a's unit in b's available list is never handed back */
    assert_int_equal(fk_preferred(env.k, RES_B, avail, 3, NULL, 0, 2, &got, &err), 0);
    assert_int_equal(strv_length(got), 2);
    assert_string_equal(got[0], "rail2");
    assert_string_equal(got[1], "rail3");
    strv_free(got);
    char *must[] = {"rail3"};
    assert_int_equal(fk_preferred(env.k, RES_B, avail + 1, 2, must, 1, 1, &got, &err), 0);
    assert_int_equal(strv_length(got), 1);
    assert_string_equal(got[0], "rail3");
    strv_free(got);
}

static void test_kubelet_restart(void **state) {
    unsigned a = fk_registrations(env.k, RES_A), b = fk_registrations(env.k, RES_B);
    char sock[256];
    size_t n;

    assert_int_equal(fk_restart(env.k), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, b + 1, WAIT_MS), 0);
    assert_int_equal(dpenv_tenant_socket(&env, "a", sock, sizeof(sock)), 0);
    assert_int_equal(access(sock, F_OK), 0);
    FkDevice *d = devices(RES_A, &n);
    assert_int_equal(n, 2);
    assert_true(d[0].healthy && d[1].healthy);
    free(d);
    /* health still flows on the new stream */
    assert_int_equal(testns_link_set_up("rail-nic0", false), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", false, WAIT_MS), 0);
    assert_int_equal(testns_link_set_up("rail-nic0", true), 0);
    assert_int_equal(fk_wait_health(env.k, RES_A, "rail0", true, WAIT_MS), 0);
}

static void test_plugin_restart(void **state) {
    unsigned a = fk_registrations(env.k, RES_A);
    char sock[256];

    assert_int_equal(proc_stop(env.plugin, 5000), 0);
    env.plugin = 0;
    /* SIGTERM removed our sockets */
    assert_int_equal(dpenv_tenant_socket(&env, "a", sock, sizeof(sock)), -ENOENT);
    plugin_start(NULL);
    assert_int_equal(fk_wait_registered(env.k, RES_A, a + 1, WAIT_MS), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 1, WAIT_MS), 0);
}

static bool log_says_waiting(void *arg) {
    return file_contains(env.log, "kubelet not there");
}

static void test_kubelet_absent_at_start(void **state) {
    assert_int_equal(proc_stop(env.plugin, 5000), 0);
    fk_stop(env.k);
    env.k = NULL;
    plugin_start(NULL);
    assert_true(testns_wait_until(log_says_waiting, NULL, WAIT_MS));
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 1, 40000), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 1, 40000), 0);
}

static void test_json_logs(void **state) {
    assert_int_equal(proc_stop(env.plugin, 5000), 0);
    unlink(env.log);
    plugin_start("--log-format=json");
    assert_int_equal(fk_wait_registered(env.k, RES_A, 2, WAIT_MS), 0);
    assert_true(file_contains(env.log, "\"level\":\"info\""));
    assert_true(file_contains(env.log, "\"tenant\":\"a\""));
    assert_true(file_contains(env.log, "\"unit\":\"rail0\""));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_and_list),
        cmocka_unit_test(test_health_link),
        cmocka_unit_test(test_health_gpu_node),
        cmocka_unit_test(test_health_attached_nic_is_in_use),
        cmocka_unit_test(test_allocate),
        cmocka_unit_test(test_allocate_rdma),
        cmocka_unit_test(test_health_uverbs_node),
        cmocka_unit_test(test_allocate_invalid),
        cmocka_unit_test(test_preferred),
        cmocka_unit_test(test_kubelet_restart),
        cmocka_unit_test(test_plugin_restart),
        cmocka_unit_test(test_kubelet_absent_at_start),
        cmocka_unit_test(test_json_logs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
