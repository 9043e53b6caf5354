/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI network config on stdin, which a tenant can write: parsed for every
 * command, then used as the plugin uses it (the ADD result built on its
 * prevResult, GC's valid attachments, the VERSION answer, the error JSON).
 */
#include "cni.h"
#include "fuzz.h"
#include "result.h"

static const CniCommand commands[] = {CNI_CMD_ADD,     CNI_CMD_DEL,    CNI_CMD_CHECK,
                                      CNI_CMD_VERSION, CNI_CMD_STATUS, CNI_CMD_GC};

/* The error JSON main() prints: the runtime reads nothing else on failure. */
static void check_error(const CniConf *c, const RgError *err) {
    json_t *j =
        json_pack("{s:s, s:i, s:s}", "cniVersion", c && c->cni_version ? c->cni_version : "1.1.0",
                  "code", err->code, "msg", err->msg);

    FUZZ_CHECK(err->code > 0);
    FUZZ_CHECK(err->msg[0]);
    FUZZ_CHECK(j);
    json_decref(j);
}

static void put(json_t *j) {
    char *s;

    FUZZ_CHECK(j);
    s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    FUZZ_CHECK(s);
    free(s);
    json_decref(j);
}

/* ADD's result on top of prevResult, for two NICs (the second without addresses). */
static void build_result(const CniConf *conf) {
    static char *addrs[] = {"10.100.0.11/24", "fd00:100::11/64", NULL};
    AttachedNic nics[2] = {
        {.unit = "rail0",
         .host_name = "rail-nic0",
         .pod_name = "rail0",
         .pci = "0000:19:00.0",
         .mac = {2, 0, 0, 0, 0, 1},
         .pod_addrs = addrs,
         .gateway = "10.100.0.1",
         .table = 100,
         .pod_mtu = 9000},
        {.unit = "rail1", .host_name = "rail-nic1", .pod_name = "rail1"},
    };
    Attachment a = {.container_id = "c0ffee", .ifname = "net1", .nics = nics, .n_nics = 2};
    CniEnv env = {.command = CNI_CMD_ADD,
                  .container_id = "c0ffee",
                  .netns = "/run/netns/pod",
                  .ifname = "net1"};
    CniContext c = {.env = &env, .conf = conf};

    put(result_build(&c, &a));
    put(result_build(&c, NULL));
}

static void check_conf(CniCommand cmd, const CniConf *c, const uint8_t *data, size_t size) {
    FUZZ_CHECK(c->cni_version && c->root && json_is_object(c->root));
    FUZZ_CHECK(c->raw && c->raw_len == size && memcmp(c->raw, data, size) == 0 && !c->raw[size]);
    if (cmd == CNI_CMD_VERSION) {
        put(cni_version_result(c->cni_version));
        return;
    }
    FUZZ_CHECK(cni_version_supported(c->cni_version));
    FUZZ_CHECK(c->name && c->name[0]);
    FUZZ_CHECK(!c->prev_result || json_is_object(c->prev_result));
    /* ADD and CHECK: stdin never names an IPAM plugin (the node config
     * does), and the keys that could pick a host device or a tenant never
     * get through; DEL, GC and STATUS ignore them, and say so */
    bool refusing = cmd == CNI_CMD_ADD || cmd == CNI_CMD_CHECK;
    bool hostile = json_object_get(c->root, "ipam") || json_object_get(c->root, "IPAM") ||
                   json_object_get(c->root, "device") || json_object_get(c->root, "tenant") ||
                   json_object_get(c->root, "Device");
    FUZZ_CHECK(!hostile || (!refusing && c->ignored[0]));
    FUZZ_CHECK(!c->device_id || (c->device_id[0] && strlen(c->device_id) <= 256));
    FUZZ_CHECK(!c->valid_attachments || (cmd == CNI_CMD_GC && json_is_array(c->valid_attachments)));
    (void)cni_version_at_least(c->cni_version, "1.0.0");
    if (cmd == CNI_CMD_ADD)
        build_result(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > CNI_STDIN_MAX)
        return 0;
    for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
        CniConf c = {0};
        RgError err = {0};
        int r = cni_conf_parse((const char *)data, size, commands[i], &c, &err);

        if (r < 0) {
            FUZZ_CHECK(!c.root && !c.raw);
            check_error(NULL, &err);
            continue;
        }
        check_conf(commands[i], &c, data, size);
        /* what main() prints when the command then fails */
        check_error(&c, &(RgError){.code = CNI_ERR_IO, .msg = "later failure"});
        cni_conf_done(&c);
    }
    return 0;
}
