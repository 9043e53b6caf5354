/* SPDX-License-Identifier: Apache-2.0 */
/* Attachment records as text: a VF's admin state (what was set, what it was) and an anchor
 * round trip; malformed ones are refused whole. */
#include <errno.h>
#include <jansson.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "attachment.h"

static const uint8_t PINNED[6] = {0x52, 0x2f, 0xa2, 0x39, 0x9f, 0xce};
static const uint8_t ZERO[6];

static Attachment *attachment_new(void) {
    Attachment *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    snprintf(a->boot_id, sizeof(a->boot_id), "11111111-1111-1111-1111-111111111111");
    snprintf(a->container_id, sizeof(a->container_id), "c1");
    snprintf(a->ifname, sizeof(a->ifname), "eth0");
    snprintf(a->netns, sizeof(a->netns), "/run/netns/p1");
    snprintf(a->pod_ns, sizeof(a->pod_ns), "team-a");
    snprintf(a->pod_name, sizeof(a->pod_name), "p1");
    return a;
}

static AttachedNic *nic_new(Attachment *a, const char *unit, const char *pci) {
    AttachedNic *n = attachment_add_nic(a);

    assert_non_null(n);
    snprintf(n->unit, sizeof(n->unit), "%s", unit);
    snprintf(n->host_name, sizeof(n->host_name), "eth1");
    snprintf(n->pod_name, sizeof(n->pod_name), "rail0");
    snprintf(n->pci, sizeof(n->pci), "%s", pci);
    snprintf(n->parent, sizeof(n->parent), "pci/%s", pci);
    return n;
}

static Attachment *round_trip(const Attachment *a) {
    char *text = NULL;
    Attachment *b = NULL;

    assert_int_equal(attachment_to_text(a, &text), 0);
    assert_int_equal(attachment_from_text(text, &b), 0);
    free(text);
    return b;
}

static void assert_vf_state_equal(const VfState *x, const VfState *y) {
    assert_int_equal(x->has_mac, y->has_mac);
    if (x->has_mac)
        assert_memory_equal(x->mac, y->mac, 6);
    assert_int_equal(x->spoofchk, y->spoofchk);
    assert_int_equal(x->trust, y->trust);
    assert_int_equal(x->link_state, y->link_state);
}

/* What was set and what each setting was before, every value and "not
 * known" (-1) alike, come back as written; a NIC that is no VF has none. */
static void test_vf_round_trip(void **state) {
    Attachment *a = attachment_new(), *b;
    AttachedNic *n, *plain;

    nic_new(a, "rail0-vf3", "0000:01:10.6");
    nic_new(a, "rail1", "0000:02:00.0");
    n = &a->nics[0]; /* the array moved as it grew */
    plain = &a->nics[1];

    /* a new entry records no VF, and none of its settings */
    assert_string_equal(n->vf_pf, "");
    assert_false(vf_state_has(&n->vf_set, VF_FIELD_SPOOFCHK));
    assert_false(vf_state_has(&n->vf_saved, VF_FIELD_TRUST));
    snprintf(n->vf_pf, sizeof(n->vf_pf), "0000:01:00.0");
    n->vf_index = 3;
    n->vf_set = (VfState){
        .has_mac = true, .spoofchk = 1, .trust = 0, .link_state = IFLA_VF_LINK_STATE_AUTO};
    memcpy(n->vf_set.mac, PINNED, 6);
    /* the PF had no administrative MAC, spoof checking off, trust on, and
     * did not report its link state */
    n->vf_saved = (VfState){.has_mac = true, .spoofchk = 0, .trust = 1, .link_state = -1};
    memcpy(n->vf_saved.mac, ZERO, 6);
    b = round_trip(a);
    assert_int_equal(b->n_nics, 2);
    assert_string_equal(b->nics[0].vf_pf, "0000:01:00.0");
    assert_int_equal(b->nics[0].vf_index, 3);
    assert_vf_state_equal(&b->nics[0].vf_set, &n->vf_set);
    assert_vf_state_equal(&b->nics[0].vf_saved, &n->vf_saved);
    assert_string_equal(b->nics[1].vf_pf, "");
    assert_vf_state_equal(&b->nics[1].vf_set, &plain->vf_set);
    attachment_free(b);

    /* "keep" settings are absent, and stay so */
    n->vf_set = (VfState)VF_STATE_NONE;
    n->vf_set.trust = 0;
    n->vf_saved = (VfState)VF_STATE_NONE;
    n->vf_saved.trust = 1;
    n->vf_set.link_state = IFLA_VF_LINK_STATE_DISABLE;
    b = round_trip(a);
    assert_vf_state_equal(&b->nics[0].vf_set, &n->vf_set);
    assert_vf_state_equal(&b->nics[0].vf_saved, &n->vf_saved);
    attachment_free(b);
    attachment_free(a);
}

static const char RECORD[] =
    "{\"bootId\": \"b\", \"containerID\": \"c1\", \"ifname\": \"eth0\", \"netns\": \"/n\","
    " \"podNamespace\": \"team-a\", \"podName\": \"p1\", \"ipam\": false, \"nics\": [{"
    "\"unit\": \"rail0-vf0\", \"hostName\": \"eth1\", \"podName\": \"rail0\","
    " \"pci\": \"0000:01:10.0\", \"mac\": \"52:2f:a2:39:9f:ce\", \"mtu\": 1500,"
    " \"wasUp\": false, \"hostAddresses\": [], \"stage\": \"moved\", \"podAddresses\": [],"
    " \"gateway\": \"\", \"table\": 100, \"rulePriority\": 1000, \"podMtu\": 0,"
    " \"kind\": \"\", \"parent\": \"pci/0000:01:10.0\", \"hostIfindex\": 3, \"peerIfindex\": 0,"
    " \"peerNsid\": -1, \"peerName\": \"\", \"permMac\": \"52:2f:a2:39:9f:ce\"%s}]}";

static int load_with(const char *vf, Attachment **ret) {
    char text[4096];

    snprintf(text, sizeof(text), RECORD, vf);
    return attachment_from_text(text, ret);
}

/* Each of bad[0..n) in a record refuses it whole: -EBADMSG, nothing read. */
static void assert_refused(const char *const *bad, size_t n) {
    for (size_t i = 0; i < n; i++) {
        Attachment *a = NULL;
        if (load_with(bad[i], &a) != -EBADMSG)
            fail_msg("accepted: %s", bad[i]);
        assert_null(a);
    }
}

/* A record written before VF admin state was kept loads with none; a "vf"
 * that is not one is refused whole, never half-read. */
static void test_vf_malformed(void **state) {
    static const char *const bad[] = {
        ", \"vf\": 1",
        ", \"vf\": {\"index\": 0, \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"\", \"index\": 0, \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": -1, \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 65536, \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": \"0\", \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": [], \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0000000\", \"index\": 0, \"set\": {}, \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": {\"mac\": \"02:00\"},"
        " \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": {\"spoofChk\": 1},"
        " \"saved\": {}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": {},"
        " \"saved\": {\"trust\": \"off\"}}",
        ", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": {},"
        " \"saved\": {\"linkState\": \"up\"}}",
    };
    Attachment *a = NULL;

    assert_int_equal(load_with("", &a), 0);
    assert_string_equal(a->nics[0].vf_pf, "");
    assert_false(vf_state_has(&a->nics[0].vf_saved, VF_FIELD_MAC));
    attachment_free(a);
    assert_int_equal(load_with(", \"vf\": {\"pf\": \"0000:01:00.0\", \"index\": 0, \"set\": {},"
                               " \"saved\": {\"linkState\": \"disable\"}}",
                               &a),
                     0);
    assert_int_equal(a->nics[0].vf_saved.link_state, IFLA_VF_LINK_STATE_DISABLE);
    attachment_free(a);
    assert_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* An anchored NIC's anchor (name, VLAN id and protocol, ifindex once made)
 * comes back as written; other NICs have none. */
static void test_anchor_round_trip(void **state) {
    Attachment *a = attachment_new(), *b;
    AttachedNic *n;

    nic_new(a, "rail0", "");
    nic_new(a, "rail1", "0000:02:00.0");
    n = &a->nics[0];
    n->parent[0] = 0;
    snprintf(n->kind, sizeof(n->kind), "dummy");
    snprintf(n->anchor, sizeof(n->anchor), "rgabcdefghijklm");
    n->anchor_vid = 4094;
    n->anchor_proto = ETH_P_8021AD;
    b = round_trip(a); /* planned: not made yet */
    assert_string_equal(b->nics[0].anchor, "rgabcdefghijklm");
    assert_int_equal(b->nics[0].anchor_vid, 4094);
    assert_int_equal(b->nics[0].anchor_proto, ETH_P_8021AD);
    assert_int_equal(b->nics[0].anchor_ifindex, 0);
    assert_string_equal(b->nics[1].anchor, "");
    attachment_free(b);
    n->anchor_ifindex = 77;
    n->anchor_proto = ETH_P_8021Q;
    b = round_trip(a);
    assert_int_equal(b->nics[0].anchor_ifindex, 77);
    assert_int_equal(b->nics[0].anchor_proto, ETH_P_8021Q);
    attachment_free(b);
    attachment_free(a);
}

/* A record without "anchor" loads with none; one that is not whole (a name
 * no link can have, another kind, an id or protocol no VLAN has, a negative
 * ifindex) is refused, never half-read. */
static void test_anchor_malformed(void **state) {
    static const char *const bad[] = {
        ", \"anchor\": \"rgabc\"",
        ", \"anchor\": {\"kind\": \"vlan\", \"protocol\": \"802.1ad\", \"id\": 4094,"
        " \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": 4094, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"../x\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": 4094, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabcdefghijklmn\", \"kind\": \"vlan\","
        " \"protocol\": \"802.1ad\", \"id\": 4094, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"macvlan\", \"protocol\": \"802.1ad\","
        " \"id\": 4094, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\", \"protocol\": \"802.1x\","
        " \"id\": 4094, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": 0, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": 4095, \"ifindex\": 0}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": 4094, \"ifindex\": -1}",
        ", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\", \"protocol\": \"802.1ad\","
        " \"id\": \"4094\", \"ifindex\": 0}",
    };
    Attachment *a = NULL;

    assert_int_equal(load_with("", &a), 0);
    assert_string_equal(a->nics[0].anchor, "");
    attachment_free(a);
    assert_int_equal(load_with(", \"anchor\": {\"name\": \"rgabc\", \"kind\": \"vlan\","
                               " \"protocol\": \"802.1ad\", \"id\": 4094, \"ifindex\": 9}",
                               &a),
                     0);
    assert_string_equal(a->nics[0].anchor, "rgabc");
    assert_int_equal(a->nics[0].anchor_ifindex, 9);
    attachment_free(a);
    assert_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A NIC's RDMA device that moves with it: its name, index, node GUID (all
 * 64 bits) and parent come back as written; a NIC without one has none. */
static void test_rdma_round_trip(void **state) {
    Attachment *a = attachment_new(), *b;
    AttachedNic *n;

    (void)state;
    nic_new(a, "rail0", "0000:3b:00.0");
    nic_new(a, "rail1", "0000:3b:00.1");
    n = &a->nics[0];
    snprintf(n->rdma, sizeof(n->rdma), "mlx5_0");
    n->rdma_index = UINT32_MAX;
    n->rdma_guid = 0xb8cef6030012ab34ULL;
    snprintf(n->rdma_parent, sizeof(n->rdma_parent), "pci/0000:3b:00.0");
    b = round_trip(a);
    assert_string_equal(b->nics[0].rdma, "mlx5_0");
    assert_true(b->nics[0].rdma_index == UINT32_MAX);
    assert_true(b->nics[0].rdma_guid == 0xb8cef6030012ab34ULL);
    assert_string_equal(b->nics[0].rdma_parent, "pci/0000:3b:00.0");
    assert_string_equal(b->nics[1].rdma, "");
    assert_int_equal(b->nics[1].rdma_index, 0);
    attachment_free(b);
    /* no parent, GUID 0 (a driver that says none) */
    n->rdma_parent[0] = 0;
    n->rdma_guid = 0;
    n->rdma_index = 3;
    b = round_trip(a);
    assert_string_equal(b->nics[0].rdma, "mlx5_0");
    assert_int_equal(b->nics[0].rdma_index, 3);
    assert_true(b->nics[0].rdma_guid == 0);
    assert_string_equal(b->nics[0].rdma_parent, "");
    attachment_free(b);
    attachment_free(a);
}

/* A record without "rdma" (written before, or of a NIC whose RDMA device
 * stays) loads with none; one that cannot find the device again (no name,
 * an index no device has, a GUID not of 16 hex digits) is refused whole. */
static void test_rdma_malformed(void **state) {
    static const char *const bad[] = {
        ", \"rdma\": \"mlx5_0\"",
        ", \"rdma\": {\"index\": 3, \"nodeGuid\": \"b8cef6030012ab34\", \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"\", \"index\": 3, \"nodeGuid\": \"b8cef6030012ab34\","
        " \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"nodeGuid\": \"b8cef6030012ab34\", \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": -1, \"nodeGuid\": \"b8cef6030012ab34\","
        " \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 4294967296,"
        " \"nodeGuid\": \"b8cef6030012ab34\", \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3, \"nodeGuid\": 12, \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3, \"nodeGuid\": \"b8cef603\","
        " \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3, \"nodeGuid\": \"0x0cef6030012ab3\","
        " \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3, \"nodeGuid\": \"-0cef6030012ab34\","
        " \"parent\": \"\"}",
        ", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3, \"nodeGuid\": \"b8cef6030012ab34\"}",
    };
    Attachment *a = NULL;

    (void)state;
    assert_int_equal(load_with("", &a), 0);
    assert_string_equal(a->nics[0].rdma, "");
    attachment_free(a);
    assert_int_equal(load_with(", \"rdma\": {\"name\": \"mlx5_0\", \"index\": 3,"
                               " \"nodeGuid\": \"B8CEF6030012AB34\", \"parent\": \"pci/x\"}",
                               &a),
                     0);
    assert_string_equal(a->nics[0].rdma, "mlx5_0");
    assert_int_equal(a->nics[0].rdma_index, 3);
    assert_true(a->nics[0].rdma_guid == 0xb8cef6030012ab34ULL);
    attachment_free(a);
    assert_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A NIC's queue settings ("sysfs") round trip; a record without them loads
 * with none; one naming a file outside the settings, or a value the kernel
 * does not print, is refused whole. */
static void test_sysfs_round_trip(void **state) {
    static const char *const bad[] = {
        ", \"sysfs\": {\"../../../proc/sys/kernel/modprobe\": \"0\"}",
        ", \"sysfs\": {\"queues/rx-0/rps_cpus\": \"0 1\"}",
        ", \"sysfs\": [\"gro_flush_timeout\"]",
    };
    Attachment *a = attachment_new(), *b;
    AttachedNic *n = nic_new(a, "rail0", "0000:02:00.0");
    NetdevSetting v[] = {{"gro_flush_timeout", "0"}, {"queues/rx-0/rps_cpus", "00000000"}};

    n->has_sysfs = true;
    n->sysfs = (NetdevSysfs){.v = v, .n = 2};
    b = round_trip(a);
    assert_true(b->nics[0].has_sysfs);
    assert_int_equal(b->nics[0].sysfs.n, 2);
    assert_string_equal(b->nics[0].sysfs.v[1].key, "queues/rx-0/rps_cpus");
    assert_string_equal(b->nics[0].sysfs.v[1].value, "00000000");
    attachment_free(b);
    n->has_sysfs = false;
    n->sysfs = (NetdevSysfs){0};
    attachment_free(a);

    assert_int_equal(load_with("", &b), 0);
    assert_false(b->nics[0].has_sysfs);
    attachment_free(b);
    assert_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* The netlink layer's comparisons that decide what is set and given back. */
static void test_vf_state_fields(void **state) {
    VfState a = VF_STATE_NONE, b = VF_STATE_NONE;

    for (VfField f = 0; f < _VF_FIELD_MAX; f++) {
        assert_false(vf_state_has(&a, f));
        assert_false(vf_state_same(&a, &b, f)); /* unknown is never "the same" */
    }
    a.has_mac = b.has_mac = true;
    memcpy(a.mac, PINNED, 6);
    assert_false(vf_state_same(&a, &b, VF_FIELD_MAC));
    vf_state_copy(&b, &a, VF_FIELD_MAC);
    assert_true(vf_state_same(&a, &b, VF_FIELD_MAC));
    a.spoofchk = 0;
    b.spoofchk = 1;
    assert_false(vf_state_same(&a, &b, VF_FIELD_SPOOFCHK));
    vf_state_copy(&b, &a, VF_FIELD_SPOOFCHK);
    assert_true(vf_state_same(&a, &b, VF_FIELD_SPOOFCHK));
    a.link_state = IFLA_VF_LINK_STATE_AUTO;
    assert_false(vf_state_same(&a, &b, VF_FIELD_LINK_STATE));
    vf_state_copy(&b, &a, VF_FIELD_LINK_STATE);
    assert_true(vf_state_same(&a, &b, VF_FIELD_LINK_STATE));
    assert_false(vf_state_has(&b, VF_FIELD_TRUST)); /* copying one field leaves the rest */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vf_round_trip),    cmocka_unit_test(test_vf_malformed),
        cmocka_unit_test(test_vf_state_fields),  cmocka_unit_test(test_anchor_round_trip),
        cmocka_unit_test(test_anchor_malformed), cmocka_unit_test(test_sysfs_round_trip),
        cmocka_unit_test(test_rdma_round_trip),  cmocka_unit_test(test_rdma_malformed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
