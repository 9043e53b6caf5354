/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI network config as a tenant writes it: refused keys, IPAM, prevResult, versions. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cni.h"

static int parse(CniCommand cmd, const char *text, CniConf *c, RgError *err) {
    memset(c, 0, sizeof(*c));
    memset(err, 0, sizeof(*err));
    return cni_conf_parse(text, strlen(text), cmd, c, err);
}

/* ADD of text must fail with code and a message containing want. */
static void refused(const char *text, int code, const char *want) {
    CniConf c;
    RgError err;

    if (parse(CNI_CMD_ADD, text, &c, &err) >= 0)
        fail_msg("accepted: %s", text);
    if (err.code != code || !strstr(err.msg, want))
        fail_msg("want %d \"%s\", got %d \"%s\" for %s", code, want, err.code, err.msg, text);
}

static void accepted(CniCommand cmd, const char *text) {
    CniConf c;
    RgError err;

    if (parse(cmd, text, &c, &err) < 0)
        fail_msg("refused (%d %s): %s", err.code, err.msg, text);
    cni_conf_done(&c);
}

static void test_key_folding(void **state) {
    assert_true(cni_key_equal("device", "device"));
    assert_true(cni_key_equal("Device", "device"));
    assert_true(cni_key_equal("DEVICE", "device"));
    assert_true(cni_key_equal("dEvIcE", "device"));
    assert_true(cni_key_equal("NODECONFIG", "nodeConfig"));
    /* encoding/json's non-ASCII folds: long s and the Kelvin sign */
    assert_true(cni_key_equal("re\xc5\xbfource", "resource"));
    assert_true(cni_key_equal("\xe2\x84\xaa"
                              "ernelpath",
                              "kernelpath"));
    assert_false(cni_key_equal("devices", "device"));
    assert_false(cni_key_equal("devic", "device"));
    assert_false(cni_key_equal("", "device"));
    assert_false(cni_key_equal("DEVI\xc5\xbf", "device"));
    assert_false(cni_key_equal("deviceID", "device"));
}

#define CONF(members)                                                                              \
    "{\"cniVersion\": \"1.1.0\", \"name\": \"n\", \"type\": \"railgate\"" members "}"

static void test_refused_keys(void **state) {
    refused(CONF(", \"device\": \"eth1\""), 2, "unsupported field \"device\"");
    refused(CONF(", \"HWADDR\": \"x\""), 2, "\"HWADDR\" (read as \"hwaddr\")");
    refused(CONF(", \"args\": {\"cni\": {\"Tenant\": \"b\"}}"), 2, "\"args.cni.Tenant\"");
    refused(CONF(", \"runtimeConfig\": {\"rails\": [1]}"), 2, "\"runtimeConfig.rails\"");
    refused(CONF(", \"x\": [1, {\"y\": [{\"netDev\": \"e\"}]}]"), 2, "\"x.y.netDev\"");
    refused(CONF(", \"ipam\": {\"type\": \"host-device\", \"Device\": \"e\"}"), 2,
            "\"ipam.Device\"");
    /* a Multus device id is no refused key: it narrows the pod's own units */
    accepted(CNI_CMD_ADD, CONF(", \"runtimeConfig\": {\"deviceID\": \"0000:17:00.0\"}"));
}

static void test_ipam_refused(void **state) {
    refused(CONF(", \"ipam\": {\"type\": \"host-local\"}"), 7, "ipam: not allowed");
    refused(CONF(", \"IPAM\": {}"), 7, "IPAM: not allowed");
    refused(CONF(", \"Ipam\": \"x\""), 7, "node config");
}

/* DEL, GC and STATUS must not fail on what ADD refuses: they say so instead. */
static void test_del_ignores(void **state) {
    static const CniCommand cmds[] = {CNI_CMD_DEL, CNI_CMD_GC, CNI_CMD_STATUS};
    CniConf c;
    RgError err;

    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(
            parse(cmds[i], CONF(", \"ipam\": {\"type\": \"x\"}, \"Device\": \"e\""), &c, &err), 0);
        assert_non_null(strstr(c.ignored, "ignored: "));
        assert_int_equal(err.code, 0);
        cni_conf_done(&c);
        assert_int_equal(parse(cmds[i], CONF(""), &c, &err), 0);
        assert_string_equal(c.ignored, "");
        cni_conf_done(&c);
    }
    /* and a malformed prevResult does not block a DEL */
    accepted(CNI_CMD_DEL, CONF(", \"prevResult\": {\"ips\": 7}"));
}

static void test_prev_result(void **state) {
    accepted(CNI_CMD_ADD,
             CONF(", \"prevResult\": {\"cniVersion\": \"1.1.0\", \"interfaces\": [{\"name\": "
                  "\"eth0\", \"mac\": \"0a:58:0a:f4:00:05\", \"sandbox\": \"/run/netns/x\", "
                  "\"mtu\": 1500}], \"ips\": [{\"address\": \"10.1.1.5/24\", \"gateway\": "
                  "\"10.1.1.1\", \"interface\": 0}, {\"address\": \"fd00::5/64\"}], \"routes\": "
                  "[{\"dst\": \"0.0.0.0/0\", \"gw\": \"10.1.1.1\", \"table\": 100}], \"dns\": "
                  "{\"nameservers\": [\"10.96.0.10\"]}}"));
    accepted(CNI_CMD_ADD, CONF(", \"prevResult\": {}"));
    refused(CONF(", \"prevResult\": []"), 7, "prevResult: must be an object");
    refused(CONF(", \"prevResult\": {\"interfaces\": [{\"name\": \"\"}]}"), 7,
            "prevResult.interfaces[0]");
    refused(CONF(", \"prevResult\": {\"interfaces\": [{\"name\": \"e\", \"mtu\": -1}]}"), 7,
            "prevResult.interfaces[0]");
    refused(CONF(", \"prevResult\": {\"interfaces\": [{\"name\": \"e\"}], \"ips\": [{\"address\": "
                 "\"10.1.1.5/24\", \"interface\": 1}]}"),
            7,
            "prevResult.ips[0]: \"interface\" must be an index into prevResult.interfaces (1 "
            "entries)");
    refused(CONF(", \"prevResult\": {\"ips\": [{\"address\": \"10.1.1.5/33\"}]}"), 7,
            "prevResult.ips[0]: \"address\"");
    refused(CONF(", \"prevResult\": {\"routes\": [{\"dst\": \"10.0.0.0\"}]}"), 7,
            "prevResult.routes[0]: \"dst\"");
    refused(CONF(", \"prevResult\": {\"routes\": [{\"dst\": \"10.0.0.0/8\", \"gw\": \"x\"}]}"), 7,
            "prevResult.routes[0]: \"gw\"");
    refused(CONF(", \"prevResult\": {\"cniVersion\": 1}"), 7, "prevResult.cniVersion");
    /* CHECK reads prevResult too */
    CniConf c;
    RgError err;
    assert_true(parse(CNI_CMD_CHECK, CONF(", \"prevResult\": {\"ips\": 7}"), &c, &err) < 0);
    assert_int_equal(err.code, 7);
}

static void test_peek_version(void **state) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"cniVersion\": \"1.0.0\", \"name\": ", NULL}, /* unparseable: nothing */
        {"{\"cniVersion\": \"0.4.0\", \"device\": \"x\"}", "0.4.0"},
        {"{\"cniVersion\": \"9.9.9\"}", "9.9.9"},
        {"{\"cniVersion\": \"1.0.0\\\"; x\"}", NULL},
        {"{\"cniVersion\": 1}", NULL},
        {"[]", NULL},
        {"", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *v = cni_conf_peek_version(cases[i].text, strlen(cases[i].text));
        if (cases[i].want)
            assert_string_equal(v, cases[i].want);
        else
            assert_null(v);
        free(v);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_folding),  cmocka_unit_test(test_refused_keys),
        cmocka_unit_test(test_ipam_refused), cmocka_unit_test(test_del_ignores),
        cmocka_unit_test(test_prev_result),  cmocka_unit_test(test_peek_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
