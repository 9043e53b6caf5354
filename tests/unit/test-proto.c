/* SPDX-License-Identifier: Apache-2.0 */
/* Wire format of the hand-written protos: field numbers checked against known bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "deviceplugin.pb-c.h"
#include "drahealth.pb-c.h"
#include "pb.h"
#include "podresources.pb-c.h"

static void expect_bytes(const ProtobufCMessage *m, const char *hex) {
    uint8_t *buf = NULL;
    size_t len = 0;
    char got[512] = "";

    assert_int_equal(pb_pack(m, &buf, &len), 0);
    for (size_t i = 0; i < len && 2 * i + 2 < sizeof(got); i++)
        sprintf(got + 2 * i, "%02x", buf[i]);
    free(buf);
    assert_string_equal(got, hex);
}

static void test_register_request(void **state) {
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    V1beta1__RegisterRequest r = V1BETA1__REGISTER_REQUEST__INIT;

    o.get_preferred_allocation_available = 1;
    r.version = "v1";
    r.endpoint = "e";
    r.resource_name = "a/b";
    r.options = &o;
    /* 1:"v1" 2:"e" 3:"a/b" 4:{2:true} */
    expect_bytes(&r.base, "0a027631120165"
                          "1a03612f62"
                          "22021001");
}

static void test_list_and_watch(void **state) {
    V1beta1__NUMANode n = V1BETA1__NUMANODE__INIT;
    V1beta1__NUMANode *nodes[] = {&n};
    V1beta1__TopologyInfo t = V1BETA1__TOPOLOGY_INFO__INIT;
    V1beta1__Device d = V1BETA1__DEVICE__INIT;
    V1beta1__Device *devs[] = {&d};
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;

    n.id = 1;
    t.nodes = nodes;
    t.n_nodes = 1;
    d.id = "r0";
    d.health = "H";
    d.topology = &t;
    r.devices = devs;
    r.n_devices = 1;
    /* 1:{1:"r0" 2:"H" 3:{1:{1:1}}} */
    expect_bytes(&r.base, "0a0d0a0272301201481a040a020801");
}

static void test_allocate_response_map_and_cdi(void **state) {
    V1beta1__ContainerAllocateResponse__EnvsEntry e =
        V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
    V1beta1__ContainerAllocateResponse__EnvsEntry *envs[] = {&e};
    V1beta1__DeviceSpec ds = V1BETA1__DEVICE_SPEC__INIT;
    V1beta1__DeviceSpec *devs[] = {&ds};
    V1beta1__CDIDevice cdi = V1BETA1__CDIDEVICE__INIT;
    V1beta1__CDIDevice *cdis[] = {&cdi};
    V1beta1__ContainerAllocateResponse c = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;

    e.key = "K";
    e.value = "V";
    ds.container_path = "/c";
    ds.host_path = "/h";
    ds.permissions = "rw";
    cdi.name = "x";
    c.envs = envs;
    c.n_envs = 1;
    c.devices = devs;
    c.n_devices = 1;
    c.cdi_devices = cdis;
    c.n_cdi_devices = 1;
    /* 1:{1:"K" 2:"V"} 3:{1:"/c" 2:"/h" 3:"rw"} 5:{1:"x"} */
    expect_bytes(&c.base, "0a060a014b120156"
                          "1a0c0a022f6312022f681a027277"
                          "2a030a0178");
}

static void test_preferred_request_decodes(void **state) {
    /* 1:{1:"a" 1:"b" 2:"a" 3:2} as kubelet sends it */
    static const uint8_t wire[] = {0x0a, 0x0b, 0x0a, 0x01, 'a',  0x0a, 0x01,
                                   'b',  0x12, 0x01, 'a',  0x18, 0x02};
    V1beta1__PreferredAllocationRequest *r =
        v1beta1__preferred_allocation_request__unpack(NULL, sizeof(wire), wire);

    assert_non_null(r);
    assert_int_equal(r->n_container_requests, 1);
    assert_int_equal(r->container_requests[0]->n_available_deviceids, 2);
    assert_string_equal(r->container_requests[0]->must_include_deviceids[0], "a");
    assert_int_equal(r->container_requests[0]->allocation_size, 2);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    /* truncated input is rejected, not read past */
    assert_null(v1beta1__preferred_allocation_request__unpack(NULL, sizeof(wire) - 3, wire));
}

static void test_podresources(void **state) {
    V1__GetPodResourcesRequest g = V1__GET_POD_RESOURCES_REQUEST__INIT;
    V1__ContainerDevices d = V1__CONTAINER_DEVICES__INIT;
    char *ids[] = {"rail0"};

    g.pod_name = "p";
    g.pod_namespace = "n";
    expect_bytes(&g.base, "0a01701201"
                          "6e");
    d.resource_name = "r";
    d.device_ids = ids;
    d.n_device_ids = 1;
    expect_bytes(&d.base, "0a0172120572"
                          "61696c30");
}

/* DRAResourceHealth (v1 and v1alpha1 alike): the response's field numbers
 * and the enum's values, and the request that kubelet sends empty. */
static void test_dra_health(void **state) {
    Drahealth__DeviceIdentifier id = DRAHEALTH__DEVICE_IDENTIFIER__INIT;
    Drahealth__DeviceHealth d = DRAHEALTH__DEVICE_HEALTH__INIT;
    Drahealth__DeviceHealth *devs[] = {&d};
    Drahealth__NodeWatchResourcesResponse r = DRAHEALTH__NODE_WATCH_RESOURCES_RESPONSE__INIT;
    Drahealth__NodeWatchResourcesRequest w = DRAHEALTH__NODE_WATCH_RESOURCES_REQUEST__INIT;
    uint8_t *buf = NULL;
    size_t len = 1;

    id.pool_name = "p";
    id.device_name = "d";
    d.device = &id;
    d.health = DRAHEALTH__HEALTH_STATUS__UNHEALTHY;
    d.last_updated_time = 1;
    d.health_check_timeout_seconds = 60;
    d.message = "m";
    r.devices = devs;
    r.n_devices = 1;
    /* 1:{1:{1:"p" 2:"d"} 2:2 3:1 4:60 5:"m"} */
    expect_bytes(&r.base, "0a110a060a0170120164"
                          "10021801203c2a016d");
    assert_int_equal(DRAHEALTH__HEALTH_STATUS__UNKNOWN, 0);
    assert_int_equal(DRAHEALTH__HEALTH_STATUS__HEALTHY, 1);
    assert_int_equal(pb_pack(&w.base, &buf, &len), 0);
    assert_int_equal(len, 0);
    free(buf);
    Drahealth__NodeWatchResourcesRequest *got =
        drahealth__node_watch_resources_request__unpack(NULL, 0, (const uint8_t *)"");
    assert_non_null(got);
    drahealth__node_watch_resources_request__free_unpacked(got, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_request),
        cmocka_unit_test(test_list_and_watch),
        cmocka_unit_test(test_allocate_response_map_and_cdi),
        cmocka_unit_test(test_preferred_request_decodes),
        cmocka_unit_test(test_podresources),
        cmocka_unit_test(test_dra_health),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
