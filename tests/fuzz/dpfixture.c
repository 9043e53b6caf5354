/* SPDX-License-Identifier: Apache-2.0 */
/* Device-plugin tenants over fixture configs, for fuzz targets: see dpfixture.h. */
#include "dpfixture.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "discover.h"
#include "fakerpc.h"
#include "fuzz.h"
#include "log.h"

#define NVF 4 /* VFs per PF in the sysfs fixture */

static char tmp[64];
static TenantServer *tenants[DPFIXTURE_MAX_TENANTS];
static size_t n_tenants;

static void mkdirs(const char *fmt, ...) _printf_(1, 2);
static void mkdirs(const char *fmt, ...) {
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            (void)mkdir(path, 0755);
            *p = '/';
        }
    FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put_file(const char *text, const char *fmt, ...) _printf_(2, 3);
static void put_file(const char *text, const char *fmt, ...) {
    char path[512];
    va_list ap;
    FILE *f;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    f = fopen(path, "w");
    FUZZ_CHECK(f);
    fputs(text, f);
    FUZZ_CHECK(fclose(f) == 0);
}

static void put_link(const char *target, const char *fmt, ...) _printf_(2, 3);
static void put_link(const char *target, const char *fmt, ...) {
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    FUZZ_CHECK(symlink(target, path) == 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)remove(path);
    return 0;
}

static void cleanup(void) {
    if (tmp[0])
        nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Device nodes under <tmp>/dev (GPU 3 missing; of mlx5_0's, umad1 and
 * /dev/gdrdrv missing), a sysfs with two PFs (VFs, one with RDMA: mlx5_0,
 * two ports), and an empty proc. */
static void make_roots(void) {
    const char *base = getenv("TMPDIR");

    snprintf(tmp, sizeof(tmp), "%.40s/railgate-fuzz-XXXXXX", base && *base ? base : "/tmp");
    FUZZ_CHECK(mkdtemp(tmp));
    atexit(cleanup);
    mkdirs("%s/dev/railgate", tmp);
    mkdirs("%s/dev/infiniband", tmp);
    mkdirs("%s/proc", tmp);
    for (unsigned k = 0; k < 8; k++)
        if (k != 3)
            put_file("", "%s/dev/railgate/gpu%u", tmp, k);
    put_file("", "%s/dev/infiniband/rdma_cm", tmp);
    put_file("", "%s/dev/infiniband/uverbs0", tmp);
    put_file("", "%s/dev/infiniband/umad0", tmp);
    mkdirs("%s/sys/class/net", tmp);
    mkdirs("%s/sys/class/infiniband_verbs/uverbs0", tmp);
    put_file("mlx5_0\n", "%s/sys/class/infiniband_verbs/uverbs0/ibdev", tmp);
    for (unsigned port = 1; port <= 2; port++) {
        char num[16];
        mkdirs("%s/sys/class/infiniband_mad/umad%u", tmp, port - 1);
        put_file("mlx5_0\n", "%s/sys/class/infiniband_mad/umad%u/ibdev", tmp, port - 1);
        snprintf(num, sizeof(num), "%u\n", port);
        put_file(num, "%s/sys/class/infiniband_mad/umad%u/port", tmp, port - 1);
    }
    /* PF 0000:21:00.0 (rail-nic1) and 0000:22:00.0 (named by PCI) with NVF VFs each */
    for (unsigned pf = 0x21; pf <= 0x22; pf++) {
        mkdirs("%s/sys/bus/pci/devices/0000:%02x:00.0", tmp, pf);
        for (unsigned j = 0; j < NVF; j++) {
            char target[32];
            mkdirs("%s/sys/bus/pci/devices/0000:%02x:01.%u/net/vf%u-%u", tmp, pf, j, pf, j);
            snprintf(target, sizeof(target), "../0000:%02x:01.%u", pf, j);
            put_link(target, "%s/sys/bus/pci/devices/0000:%02x:00.0/virtfn%u", tmp, pf, j);
        }
    }
    mkdirs("%s/sys/bus/pci/devices/0000:20:00.0/infiniband/mlx5_0", tmp);
    mkdirs("%s/sys/class/net/rail-nic0", tmp);
    put_link("../../../bus/pci/devices/0000:20:00.0", "%s/sys/class/net/rail-nic0/device", tmp);
    mkdirs("%s/sys/class/net/rail-nic1", tmp);
    put_link("../../../bus/pci/devices/0000:21:00.0", "%s/sys/class/net/rail-nic1/device", tmp);
}

static void set_root(char **field, const char *sub) {
    free(*field);
    FUZZ_CHECK(asprintf(field, "%s%s", tmp, sub) > 0);
}

/* Point every root of c into the temp dir. */
static void use_roots(NodeConfig *c) {
    set_root(&c->dev_root, "");
    set_root(&c->sysfs_root, "/sys");
    set_root(&c->proc_root, "/proc");
}

static const char VF_CONFIG[] =
    "{\"discovery\": {\"enabled\": false}, \"rdma\": {\"umad\": true, \"gdrcopy\": true},\n"
    " \"rails\": [\n"
    "  {\"index\": 0, \"numa\": 0, \"gpu\": {\"pci\": \"0000:17:00.0\", \"uuid\": \"GPU-0\"},\n"
    "   \"nic\": {\"name\": \"rail-nic0\", \"rdma\": \"mlx5_0\"}},\n"
    "  {\"index\": 1, \"numa\": 1, \"nic\": {\"name\": \"rail-nic1\", \"vf\": true, \"units\": "
    "4},\n"
    "   \"addresses\": [\"10.1.0.1/24\", \"10.1.0.2/24\", \"10.1.0.3/24\", \"10.1.0.4/24\"]},\n"
    "  {\"index\": 2, \"gpu\": {\"simulated\": \"gpu2\", \"minor\": 2,\n"
    "   \"devices\": [\"/dev/railgate/gpu2\", \"/dev/railgate/gpu3\"]},\n"
    "   \"nic\": {\"pci\": \"0000:22:00.0\", \"vf\": true, \"units\": 2}, \"addressing\": "
    "\"ipam\"},\n"
    "  {\"index\": 1023, \"nic\": {\"name\": \"rail-nic1023\"}, \"addressing\": \"keep\"}\n"
    " ],\n"
    " \"tenants\": [\n"
    "  {\"name\": \"x\", \"namespaces\": [\"team-x\"], \"rails\": [0, 1, 2],\n"
    "   \"vrf\": {\"table\": 1000}, \"ipam\": {\"type\": \"host-local\"}},\n"
    "  {\"name\": \"y\", \"resource\": \"example.com/y.rails\", \"namespaces\": [\"team-y\"],\n"
    "   \"rails\": [1023], \"vrf\": {\"table\": 2000, \"mode\": \"vrf\"}}\n"
    " ]}\n";

static const char DISCOVERY_CONFIG[] =
    "{\"cdiKind\": \"nvidia.com/gpu\",\n"
    " \"discovery\": {\"enabled\": true, \"maxDistance\": \"switch\"},\n"
    " \"tenants\": [\n"
    "  {\"name\": \"p\", \"namespaces\": [\"team-p\"], \"rails\": [0, 1, 2, 3, 4, 5],\n"
    "   \"vrf\": {\"table\": 100}},\n"
    "  {\"name\": \"q\", \"namespaces\": [\"team-q\"], \"rails\": [6, 7],\n"
    "   \"vrf\": {\"table\": 200}}\n"
    " ]}\n";

static void add_plugin(NodeConfig *c, const char *topology_xml) {
    InventoryOptions o = {.topology_xml = topology_xml};
    Inventory *inv = NULL;
    Plugin *p = NULL;
    Health *h = NULL;
    RgError err = {0};

    use_roots(c);
    if (inventory_build(c, &o, &inv, &err) < 0) {
        fprintf(stderr, "dpfixture: inventory: %s\n", err.msg);
        abort();
    }
    FUZZ_CHECK(health_new(c, inv, &h) == 0);
    FUZZ_CHECK(plugin_new(c, inv, h, &p) == 0);
    for (size_t i = 0; i < inv->n_units; i++)
        health_set(h, i, i % 3 != 2, i % 3 != 2 ? "ok" : "fixture");
    for (size_t i = 0; i < p->n_tenants; i++) {
        FUZZ_CHECK(n_tenants < DPFIXTURE_MAX_TENANTS);
        FUZZ_CHECK(p->tenants[i].n_units > 0);
        FUZZ_CHECK(tenant_server_start(&p->tenants[i]) == 0);
        tenants[n_tenants++] = &p->tenants[i];
    }
    /* config, inventory, health and plugin live until exit, reachable from tenants[] */
}

static NodeConfig *parse(const char *text, const char *name) {
    NodeConfig *c = NULL;
    RgError err = {0};

    if (config_parse(text, name, &c, &err) < 0) {
        fprintf(stderr, "dpfixture: %s\n", err.msg);
        abort();
    }
    return c;
}

static void setup(void) {
    NodeConfig *c = NULL;
    RgError err = {0};

    /* errors only: the handlers log every allocation at info */
    log_setup(LOG_FORMAT_TEXT, LOG_LVL_ERROR, "fuzz");
    make_roots();
    if (config_load(RAILGATE_FIXTURES "/config/node-example.json", &c, &err) < 0) {
        fprintf(stderr, "dpfixture: %s\n", err.msg);
        abort();
    }
    add_plugin(c, NULL);
    add_plugin(parse(VF_CONFIG, "vf.json"), NULL);
    add_plugin(parse(DISCOVERY_CONFIG, "discovery.json"),
               RAILGATE_FIXTURES "/topology/dgx-8gpu-4sw.xml");
}

size_t dpfixture_tenants(TenantServer **ret, size_t n) {
    if (n_tenants == 0)
        setup();
    for (size_t i = 0; i < n_tenants && i < n; i++)
        ret[i] = tenants[i];
    return n_tenants < n ? n_tenants : n;
}

/*
 * Allocate logs each refusal at error level, the quietest the log has: at
 * thousands of inputs a second that is gigabytes an hour. Its lines go to
 * /dev/null while a handler runs (glibc lets stderr be assigned); sanitizer
 * reports write to fd 2 and libFuzzer to its own copy of the old stderr.
 */
void dpfixture_each_tenant(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
                           DpFixtureRun *run) {
    TenantServer *t[DPFIXTURE_MAX_TENANTS];
    size_t n = dpfixture_tenants(t, ELEMENTSOF(t));
    ProtobufCMessage *req = protobuf_c_message_unpack(desc, NULL, size, data);

    for (size_t i = 0; i < n; i++)
        run(t[i], data, size, req);
    if (req)
        protobuf_c_message_free_unpacked(req, NULL);
}

int dpfixture_call(TenantServer *t, const char *method, const uint8_t *req, size_t len,
                   uint8_t **ret_resp, size_t *ret_len, RgError *err) {
    static FILE *devnull;
    FILE *saved = stderr;
    int status;

    if (!devnull)
        devnull = fopen("/dev/null", "we");
    FUZZ_CHECK(devnull);
    stderr = devnull;
    status = fakerpc_server_call(t->server, method, req, len, ret_resp, ret_len, err);
    stderr = saved;
    return status;
}

bool dpfixture_call_accepted(TenantServer *t, const char *method, const uint8_t *req, size_t len,
                             const void *decoded, uint8_t **ret_resp, size_t *ret_len) {
    RgError err = {0};
    int status = dpfixture_call(t, method, req, len, ret_resp, ret_len, &err);

    if (status != RPC_OK) {
        FUZZ_CHECK(status == RPC_INVALID_ARGUMENT || status == RPC_RESOURCE_EXHAUSTED);
        FUZZ_CHECK(err.msg[0]);
        free(*ret_resp);
        *ret_resp = NULL;
        return false;
    }
    FUZZ_CHECK(decoded);
    return true;
}

bool dpfixture_owns(const TenantServer *t, const char *id) {
    for (size_t i = 0; i < t->n_units; i++)
        if (streq(t->units[i]->id, id))
            return true;
    return false;
}
