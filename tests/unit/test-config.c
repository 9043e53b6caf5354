/* SPDX-License-Identifier: Apache-2.0 */
/* Node config parsing: every field, every default, every error path with its JSON path. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/if_link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"

#define FIXTURE(name) RAILGATE_FIXTURES "/config/" name

/* A pointer no parse may write on failure. */
#define UNTOUCHED ((NodeConfig *)(uintptr_t)0x5a5a)

/*
 * The base of the error cases: valid, small, with a simulated and a PCI GPU,
 * a NIC by name, a VF NIC by PCI address and a NIC-only rail. Single quotes
 * stand for double quotes so that cases read as JSON.
 */
static const char BASE[] =
    "{'rails': ["
    " {'index': 0, 'gpu': {'simulated': 'gpu0'}, 'nic': {'name': 'rail-nic0'},"
    "  'addresses': ['10.0.0.2/24'], 'gateway': '10.0.0.1'},"
    " {'index': 1, 'gpu': {'pci': '0000:17:00.0'},"
    "  'nic': {'pci': '0000:18:00.0', 'vf': true, 'units': 2},"
    "  'addresses': ['10.1.0.2/24', '10.1.0.3/24']},"
    " {'index': 2, 'nic': {'name': 'rail-nic2'}}],"
    " 'tenants': ["
    " {'name': 'a', 'namespaces': ['team-a'], 'rails': [0, 1],"
    "  'vrf': {'table': 100, 'prefixes': ['10.0.0.0/16']}},"
    " {'name': 'b', 'namespaces': ['team-b'], 'rails': [2], 'vrf': {'table': 200}}]}";

static char *quotes(const char *s) {
    char *d = strdup(s);

    assert_non_null(d);
    for (char *p = d; *p; p++)
        if (*p == '\'')
            *p = '"';
    return d;
}

static json_t *load_json(const char *text, size_t flags) {
    char *t = quotes(text);
    json_error_t je;
    json_t *j = json_loads(t, flags, &je);

    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, t);
    free(t);
    return j;
}

/* Replace (or, value NULL, delete) the member at "rails.0.nic"; index == size appends. */
static void edit(json_t *doc, const char *at, json_t *value) {
    char *path = strdup(at), *save = NULL, *key = strtok_r(path, ".", &save), *next;
    json_t *parent = doc;

    for (; (next = strtok_r(NULL, ".", &save)); key = next) {
        parent = json_is_array(parent) ? json_array_get(parent, strtoul(key, NULL, 10))
                                       : json_object_get(parent, key);
        if (!parent)
            fail_msg("edit: no %s in %s", key, at);
    }
    if (json_is_array(parent)) {
        size_t i = strtoul(key, NULL, 10);
        if (!value)
            json_array_remove(parent, i);
        else if (i == json_array_size(parent))
            json_array_append_new(parent, value);
        else
            json_array_set_new(parent, i, value);
    } else if (!value)
        json_object_del(parent, key);
    else
        json_object_set_new(parent, key, value);
    free(path);
}

static void edit_text(json_t *doc, const char *at, const char *value) {
    edit(doc, at, value ? load_json(value, JSON_DECODE_ANY) : NULL);
}

static char *dump(json_t *doc) {
    char *s = json_dumps(doc, JSON_COMPACT);

    assert_non_null(s);
    return s;
}

static NodeConfig *parse_ok(const char *text) {
    NodeConfig *c = NULL;
    RgError err = {0};
    int r = config_parse(text, "test.json", &c, &err);

    if (r < 0)
        fail_msg("config_parse: %d: %s\n%s", r, err.msg, text);
    assert_non_null(c);
    return c;
}

static NodeConfig *parse_doc_ok(json_t *doc) {
    char *s = dump(doc);
    NodeConfig *c = parse_ok(s);

    free(s);
    json_decref(doc);
    return c;
}

/* Expect -EINVAL and "test.json: <path>: <...reason...>"; ret must stay untouched. */
static void expect_error(const char *text, const char *path, const char *reason) {
    NodeConfig *c = UNTOUCHED;
    RgError err = {0};
    char *want_path = quotes(path), *want_reason = quotes(reason), prefix[256];
    int r = config_parse(text, "test.json", &c, &err);

    snprintf(prefix, sizeof(prefix), "test.json: %s: ", want_path);
    if (r != -EINVAL || strncmp(err.msg, prefix, strlen(prefix)) != 0 ||
        !strstr(err.msg + strlen(prefix), want_reason))
        fail_msg("r=%d msg=\"%s\"\nwant \"%s...%s\"", r, err.msg, prefix, want_reason);
    assert_ptr_equal(c, UNTOUCHED);
    free(want_path);
    free(want_reason);
}

static void expect_doc_error(json_t *doc, const char *path, const char *reason) {
    char *s = dump(doc);

    expect_error(s, path, reason);
    free(s);
    json_decref(doc);
}

/* ---- valid configs ------------------------------------------------------ */

static void test_base_is_valid(void **state) {
    NodeConfig *c = parse_doc_ok(load_json(BASE, 0));

    assert_int_equal(c->n_rails, 3);
    assert_int_equal(c->n_tenants, 2);
    assert_string_equal(c->path, "test.json");
    config_free(c);
}

static void check_example_rail(const RailConfig *r, unsigned k) {
    char s[64];

    assert_int_equal(r->index, k);
    assert_true(r->gpu.present);
    assert_null(r->gpu.pci);
    snprintf(s, sizeof(s), "gpu%u", k);
    assert_string_equal(r->gpu.simulated, s);
    assert_null(r->gpu.uuid);
    assert_int_equal(r->gpu.minor, (int)k);
    assert_int_equal(r->gpu.n_devices, 1);
    snprintf(s, sizeof(s), "/dev/railgate/gpu%u", k);
    assert_string_equal(r->gpu.devices[0], s);
    assert_null(r->gpu.devices[1]);
    assert_true(r->nic.present);
    snprintf(s, sizeof(s), "rail-nic%u", k);
    assert_string_equal(r->nic.name, s);
    assert_null(r->nic.pci);
    assert_null(r->nic.rdma);
    assert_false(r->nic.vf);
    assert_int_equal(r->nic.units, 1);
    assert_int_equal(r->mtu, 9000);
    assert_int_equal(r->address_mode, ADDRESS_MODE_STATIC);
    assert_int_equal(r->n_addresses, 1);
    snprintf(s, sizeof(s), "10.%u.0.11/24", 100 + k);
    assert_string_equal(r->addresses[0], s);
    assert_null(r->addresses[1]);
    snprintf(s, sizeof(s), "10.%u.0.1", 100 + k);
    assert_string_equal(r->gateway, s);
    assert_int_equal(r->numa, k < 4 ? 0 : 1);
}

static void check_example_tenant(const TenantConfig *t, const char *name, unsigned first,
                                 uint32_t table, const char *prefix) {
    char s[64];

    assert_string_equal(t->name, name);
    snprintf(s, sizeof(s), "railgate.io/%s", name);
    assert_string_equal(t->resource, s);
    assert_int_equal(t->n_namespaces, 1);
    snprintf(s, sizeof(s), "team-%s", name);
    assert_string_equal(t->namespaces[0], s);
    assert_null(t->namespaces[1]);
    assert_int_equal(t->n_rails, 4);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(t->rails[i], first + i);
    snprintf(s, sizeof(s), "vrf-%s", name);
    assert_string_equal(t->vrf.name, s);
    assert_int_equal(t->vrf.table, table);
    assert_int_equal(t->vrf.n_prefixes, 1);
    assert_string_equal(t->vrf.prefixes[0], prefix);
    assert_null(t->vrf.prefixes[1]);
    assert_int_equal(t->vrf.mode, ROUTING_MODE_TABLE);
}

static void test_example_fixture(void **state) {
    NodeConfig *c = NULL;
    RgError err = {0};

    if (config_load(FIXTURE("node-example.json"), &c, &err) < 0)
        fail_msg("%s", err.msg);
    assert_string_equal(c->path, FIXTURE("node-example.json"));
    assert_string_equal(c->domain, "railgate.io");
    assert_string_equal(c->kubelet_dir, "/var/lib/kubelet");
    assert_string_equal(c->state_dir, "/var/lib/railgate");
    assert_string_equal(c->log_file, "/var/log/railgate-cni.log");
    assert_string_equal(c->sysfs_root, "/sys");
    assert_string_equal(c->proc_root, "/proc");
    assert_string_equal(c->dev_root, "");
    assert_null(c->cdi_kind);
    assert_string_equal(c->cdi_dir, "/var/run/cdi");
    assert_int_equal(c->mode, AGENT_MODE_DEVICE_PLUGIN);
    assert_false(c->discovery.enabled);
    assert_null(c->discovery.topology_xml);
    assert_int_equal(c->discovery.max_distance, PAIR_DISTANCE_SWITCH);
    assert_null(c->discovery.nic_exclude);
    assert_int_equal(c->discovery.n_nic_exclude, 0);
    assert_int_equal(c->n_rails, 8);
    for (unsigned k = 0; k < 8; k++)
        check_example_rail(&c->rails[k], k);
    assert_int_equal(c->n_tenants, 2);
    check_example_tenant(&c->tenants[0], "a", 0, 100, "10.100.0.0/14");
    check_example_tenant(&c->tenants[1], "b", 4, 200, "10.104.0.0/14");
    config_free(c);
}

static void check_discovery_rails(const NodeConfig *c) {
    const RailConfig *r = c->rails;

    assert_int_equal(c->n_rails, 5);
    assert_int_equal(r[0].index, 0);
    assert_false(r[0].gpu.present);
    assert_false(r[0].nic.present);
    assert_int_equal(r[0].nic.units, 1);
    assert_int_equal(r[0].gpu.minor, -1);
    assert_string_equal(r[0].addresses[0], "10.100.0.11/24");
    assert_int_equal(r[1].index, 1);
    assert_string_equal(r[1].gpu.pci, "0000:1b:00.0");
    assert_string_equal(r[1].nic.name, "ens1f0np0");
    assert_string_equal(r[1].nic.rdma, "mlx5_1");
    assert_int_equal(r[1].n_addresses, 1);
    assert_string_equal(r[1].addresses[0], "10.101.0.11/24");
    assert_int_equal(r[2].index, 4);
    assert_false(r[2].gpu.present);
    assert_string_equal(r[2].nic.pci, "0000:9a:00.0");
    assert_true(r[2].nic.vf);
    assert_int_equal(r[2].nic.units, 2);
    assert_int_equal(r[2].n_addresses, 2);
    assert_string_equal(r[2].addresses[1], "10.104.0.12/24");
    assert_int_equal(r[3].index, 6);
    assert_int_equal(r[3].address_mode, ADDRESS_MODE_IPAM);
    assert_null(r[3].addresses);
    assert_string_equal(r[3].gateway, "10.106.0.1");
    assert_int_equal(r[4].index, 7);
    assert_int_equal(r[4].address_mode, ADDRESS_MODE_KEEP);
    assert_null(r[4].gateway);
    assert_int_equal(r[4].mtu, 0);
}

static void test_discovery_fixture(void **state) {
    NodeConfig *c = NULL;
    RgError err = {0};

    if (config_load(FIXTURE("node-discovery.json"), &c, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(c->discovery.enabled);
    assert_string_equal(c->discovery.topology_xml, "/etc/railgate/dgx-8gpu-4sw.xml");
    assert_int_equal(c->discovery.max_distance, PAIR_DISTANCE_HOSTBRIDGE);
    assert_int_equal(c->discovery.n_nic_exclude, 2);
    assert_string_equal(c->discovery.nic_exclude[1], "eno2");
    assert_string_equal(c->cdi_kind, "nvidia.com/gpu");
    check_discovery_rails(c);
    /* rails 2, 3 and 5 come from discovery alone */
    assert_int_equal(c->tenants[0].n_rails, 4);
    assert_int_equal(c->tenants[0].rails[3], 3);
    assert_null(config_find_rail(c, 3));
    assert_ptr_equal(config_rail_tenant(c, 3), &c->tenants[0]);
    assert_string_equal(c->tenants[0].namespaces[1], "team-a-ci");
    assert_string_equal(c->tenants[1].vrf.name, "vrf-b");
    assert_int_equal(c->tenants[1].vrf.mode, ROUTING_MODE_VRF);
    assert_string_equal(c->tenants[1].vrf.prefixes[1], "fd00:104::/48");
    assert_null(c->tenants[0].ipam);
    assert_string_equal(c->tenants[1].ipam_type, "host-local");
    config_free(c);
}

/* Every key set, none to its default. */
static const char EVERYTHING[] =
    "{'domain': 'gpu.example.com', 'kubeletDir': '/k', 'stateDir': '/s', 'logFile': '/l/cni.log',"
    " 'sysfsRoot': '/fix/sys', 'procRoot': '/fix/proc', 'devRoot': '/fix/dev',"
    " 'cdiKind': 'amd.com/gpu', 'cdiDir': '/c', 'mode': 'dra',"
    " 'discovery': {'enabled': true, 'topologyXml': '/t.xml', 'maxDistance': 'system',"
    "  'nicExclude': ['eno1']},"
    " 'timeouts': {'podResourcesSeconds': 600, 'agentSeconds': 660, 'ipamSeconds': 1,"
    "  'netnsTeardownSeconds': 600},"
    " 'metrics': {'listen': 'unix:/run/railgate/metrics.sock', 'socketMode': '0660',"
    "  'socketGroup': 2147483646, 'maxConnections': 1024, 'maxConnectionsPerClient': 1024,"
    "  'timeoutSeconds': 600, 'deadlineSeconds': 600},"
    " 'rdma': {'umad': true, 'gdrcopy': true},"
    " 'rails': [{'index': 1023, 'numa': 1023, 'mtu': 68,"
    "  'gpu': {'pci': '0000:ff:1f.7', 'uuid': 'GPU-8b3d1f2a-0c4e', 'minor': 1048575,"
    "   'devices': ['/dev/nvidia7', '/dev/nvidia-caps/nvidia-cap7']},"
    "  'nic': {'pci': '0000:18:00.1', 'vf': true, 'units': 256, 'rdma': 'mlx5_7'},"
    "  'addressing': 'ipam', 'gateway': 'fd00::1'}],"
    " 'tenants': [{'name': 'tenant-with-a-long-name', 'resource': 'example.com/Rail.GPU_x-1',"
    "  'namespaces': ['ns1', 'ns2'], 'rails': [1023, 7],"
    "  'vrf': {'name': 'red', 'table': 4294966272, 'prefixes': ['fd00::/8', '0.0.0.0/0'],"
    "   'mode': 'vrf'},"
    "  'ipam': {'type': 'host-local', 'ranges': [[{'subnet': 'fd00:1::/64'}]]}}]}";

static void check_everything_rail(const RailConfig *r) {
    assert_int_equal(r->index, 1023);
    assert_int_equal(r->numa, 1023);
    assert_int_equal(r->mtu, 68);
    assert_true(r->gpu.present);
    assert_string_equal(r->gpu.pci, "0000:ff:1f.7");
    assert_null(r->gpu.simulated);
    assert_string_equal(r->gpu.uuid, "GPU-8b3d1f2a-0c4e");
    assert_int_equal(r->gpu.minor, 1048575);
    assert_int_equal(r->gpu.n_devices, 2);
    assert_string_equal(r->gpu.devices[1], "/dev/nvidia-caps/nvidia-cap7");
    assert_true(r->nic.present);
    assert_null(r->nic.name);
    assert_string_equal(r->nic.pci, "0000:18:00.1");
    assert_true(r->nic.vf);
    assert_int_equal(r->nic.units, 256);
    assert_string_equal(r->nic.rdma, "mlx5_7");
    assert_int_equal(r->address_mode, ADDRESS_MODE_IPAM);
    assert_null(r->addresses);
    assert_int_equal(r->n_addresses, 0);
    assert_string_equal(r->gateway, "fd00::1");
}

static void test_everything(void **state) {
    char *text = quotes(EVERYTHING);
    NodeConfig *c = parse_ok(text);
    const TenantConfig *t = &c->tenants[0];

    assert_string_equal(c->domain, "gpu.example.com");
    assert_string_equal(c->kubelet_dir, "/k");
    assert_string_equal(c->state_dir, "/s");
    assert_string_equal(c->log_file, "/l/cni.log");
    assert_string_equal(c->sysfs_root, "/fix/sys");
    assert_string_equal(c->proc_root, "/fix/proc");
    assert_string_equal(c->dev_root, "/fix/dev");
    assert_string_equal(c->cdi_kind, "amd.com/gpu");
    assert_string_equal(c->cdi_dir, "/c");
    assert_int_equal(c->mode, AGENT_MODE_DRA);
    assert_true(c->discovery.enabled);
    assert_string_equal(c->discovery.topology_xml, "/t.xml");
    assert_int_equal(c->discovery.max_distance, PAIR_DISTANCE_SYSTEM);
    assert_string_equal(c->discovery.nic_exclude[0], "eno1");
    assert_int_equal(c->timeouts.pod_resources_s, 600);
    assert_int_equal(c->timeouts.agent_s, 660);
    assert_int_equal(c->timeouts.ipam_s, 1);
    assert_int_equal(c->timeouts.netns_teardown_s, 600);
    assert_string_equal(c->metrics.listen, "unix:/run/railgate/metrics.sock");
    assert_int_equal(c->metrics.socket_mode, 0660);
    assert_int_equal(c->metrics.socket_group, 2147483646);
    assert_int_equal(c->metrics.max_connections, 1024);
    assert_int_equal(c->metrics.max_per_client, 1024);
    assert_int_equal(c->metrics.timeout_s, 600);
    assert_int_equal(c->metrics.deadline_s, 600);
    assert_true(c->rdma.umad);
    assert_true(c->rdma.gdrcopy);
    assert_int_equal(c->n_rails, 1);
    check_everything_rail(&c->rails[0]);
    assert_string_equal(t->name, "tenant-with-a-long-name");
    assert_string_equal(t->resource, "example.com/Rail.GPU_x-1");
    assert_int_equal(t->n_namespaces, 2);
    assert_int_equal(t->n_rails, 2);
    assert_int_equal(t->rails[0], 1023);
    assert_int_equal(t->rails[1], 7);
    /* the plugin's own keys pass as they are, compact and sorted */
    assert_string_equal(t->ipam_type, "host-local");
    assert_string_equal(t->ipam,
                        "{\"ranges\":[[{\"subnet\":\"fd00:1::/64\"}]],\"type\":\"host-local\"}");
    assert_string_equal(t->vrf.name, "red");
    assert_int_equal(t->vrf.table, 4294966272u);
    assert_int_equal(t->vrf.n_prefixes, 2);
    assert_int_equal(t->vrf.mode, ROUTING_MODE_VRF);
    config_free(c);
    free(text);
}

/* The CNI's wait on the node agent follows the agent's wait on kubelet. */
static void test_agent_timeout_follows(void **state) {
    char *text = quotes("{'timeouts': {'podResourcesSeconds': 40},"
                        " 'rails': [{'index': 0, 'nic': {'name': 'eth1'}}],"
                        " 'tenants': [{'name': 'a', 'namespaces': ['n'], 'rails': [0],"
                        "  'vrf': {'table': 10}}]}");
    NodeConfig *c = parse_ok(text);

    assert_int_equal(c->timeouts.pod_resources_s, 40);
    assert_int_equal(c->timeouts.agent_s, 45);
    config_free(c);
    free(text);
}

/* The per-client default never exceeds a smaller maxConnections. */
static void test_metrics_per_client_default(void **state) {
    char *text = quotes("{'metrics': {'listen': '0.0.0.0:9402', 'maxConnections': 2},"
                        " 'rails': [{'index': 0, 'nic': {'name': 'eth1'}}],"
                        " 'tenants': [{'name': 'a', 'namespaces': ['n'], 'rails': [0],"
                        "  'vrf': {'table': 10}}]}");
    NodeConfig *c = parse_ok(text);

    assert_int_equal(c->metrics.max_connections, 2);
    assert_int_equal(c->metrics.max_per_client, 2);
    assert_int_equal(c->metrics.deadline_s, 10);
    config_free(c);
    free(text);
}

static void test_defaults(void **state) {
    char *text = quotes("{'rails': [{'index': 0, 'nic': {'name': 'eth1'}}],"
                        " 'tenants': [{'name': 'a', 'namespaces': ['n'], 'rails': [0],"
                        "  'vrf': {'table': 10}}]}");
    NodeConfig *c = parse_ok(text);
    const RailConfig *r = &c->rails[0];
    const TenantConfig *t = &c->tenants[0];

    assert_string_equal(c->domain, "railgate.io");
    assert_string_equal(c->kubelet_dir, "/var/lib/kubelet");
    assert_string_equal(c->state_dir, "/var/lib/railgate");
    assert_string_equal(c->log_file, "/var/log/railgate-cni.log");
    assert_string_equal(c->sysfs_root, "/sys");
    assert_string_equal(c->proc_root, "/proc");
    assert_string_equal(c->dev_root, "");
    assert_null(c->cdi_kind);
    assert_false(c->discovery.enabled);
    assert_null(c->discovery.topology_xml);
    assert_int_equal(c->discovery.max_distance, PAIR_DISTANCE_SWITCH);
    assert_null(c->discovery.nic_exclude);
    assert_int_equal(c->timeouts.pod_resources_s, 15);
    assert_int_equal(c->timeouts.agent_s, 20);
    assert_int_equal(c->timeouts.ipam_s, 30);
    assert_int_equal(c->timeouts.netns_teardown_s, 10);
    assert_null(c->metrics.listen); /* metrics off */
    assert_int_equal(c->metrics.socket_mode, 0600);
    assert_int_equal(c->metrics.socket_group, -1);
    assert_int_equal(c->metrics.max_connections, 16);
    assert_int_equal(c->metrics.max_per_client, 4);
    assert_int_equal(c->metrics.timeout_s, 10);
    assert_int_equal(c->metrics.deadline_s, 10);
    assert_false(c->rdma.umad); /* opt-in: MAD access to the fabric */
    assert_false(c->rdma.gdrcopy);
    assert_false(r->gpu.present);
    assert_null(r->gpu.pci);
    assert_null(r->gpu.simulated);
    assert_null(r->gpu.devices);
    assert_int_equal(r->gpu.n_devices, 0);
    assert_int_equal(r->gpu.minor, -1);
    assert_true(r->nic.present);
    assert_false(r->nic.vf);
    assert_int_equal(r->nic.units, 1);
    assert_null(r->nic.rdma);
    assert_int_equal(r->mtu, 0);
    assert_int_equal(r->address_mode, ADDRESS_MODE_STATIC);
    assert_null(r->addresses);
    assert_int_equal(r->n_addresses, 0);
    assert_null(r->gateway);
    assert_int_equal(r->numa, -1);
    assert_string_equal(t->resource, "railgate.io/a");
    assert_string_equal(t->vrf.name, "vrf-a");
    assert_null(t->vrf.prefixes);
    assert_int_equal(t->vrf.n_prefixes, 0);
    assert_int_equal(t->vrf.mode, ROUTING_MODE_TABLE);
    config_free(c);
    free(text);
}

static void test_default_resource_uses_domain(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit_text(doc, "domain", "'gpu.example.com'");
    c = parse_doc_ok(doc);
    assert_string_equal(c->tenants[0].resource, "gpu.example.com/a");
    assert_string_equal(c->tenants[1].resource, "gpu.example.com/b");
    config_free(c);
}

static void check_vrf_name(const char *tenant, const char *want) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit(doc, "tenants.0.name", json_string(tenant));
    c = parse_doc_ok(doc);
    assert_string_equal(c->tenants[0].vrf.name, want);
    assert_true(strlen(c->tenants[0].vrf.name) <= 15);
    config_free(c);
}

static void test_default_vrf_name_is_cut(void **state) {
    check_vrf_name("a-very-long-tenant-name", "vrf-a-very-long");
    /* a cut that ends in '-' loses it */
    check_vrf_name("abcdefghij-klmn", "vrf-abcdefghij");
    check_vrf_name("abcdefghi--klmn", "vrf-abcdefghi");
    check_vrf_name("abcdefghijk", "vrf-abcdefghijk");
}

static void test_address_shorthand(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit_text(doc, "rails.0.addresses", NULL);
    edit_text(doc, "rails.0.address", "'fd00:1::2/64'");
    edit_text(doc, "rails.0.gateway", "'fd00:1::1'");
    c = parse_doc_ok(doc);
    assert_int_equal(c->rails[0].n_addresses, 1);
    assert_string_equal(c->rails[0].addresses[0], "fd00:1::2/64");
    assert_null(c->rails[0].addresses[1]);
    assert_string_equal(c->rails[0].gateway, "fd00:1::1");
    config_free(c);
}

static void check_enum_rail(const char *value, int want) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit(doc, "rails.2.addressing", json_string(value));
    edit(doc, "tenants.1.ipam", json_pack("{s:s}", "type", "host-local"));
    c = parse_doc_ok(doc);
    assert_int_equal(c->rails[2].address_mode, want);
    config_free(c);
}

static void check_enum_mode(const char *value, int want) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit(doc, "tenants.1.vrf.mode", json_string(value));
    c = parse_doc_ok(doc);
    assert_int_equal(c->tenants[1].vrf.mode, want);
    config_free(c);
}

static void test_enum_values(void **state) {
    static const struct {
        const char *name;
        PairDistance want;
    } d[] = {{"switch", PAIR_DISTANCE_SWITCH},
             {"hostbridge", PAIR_DISTANCE_HOSTBRIDGE},
             {"numa", PAIR_DISTANCE_NUMA},
             {"system", PAIR_DISTANCE_SYSTEM}};

    for (size_t i = 0; i < 4; i++) {
        json_t *doc = load_json(BASE, 0);
        NodeConfig *c;

        edit(doc, "discovery", json_pack("{s:s}", "maxDistance", d[i].name));
        c = parse_doc_ok(doc);
        assert_int_equal(c->discovery.max_distance, d[i].want);
        config_free(c);
    }
    check_enum_rail("static", ADDRESS_MODE_STATIC);
    check_enum_rail("ipam", ADDRESS_MODE_IPAM);
    check_enum_rail("keep", ADDRESS_MODE_KEEP);
    check_enum_mode("table", ROUTING_MODE_TABLE);
    check_enum_mode("vrf", ROUTING_MODE_VRF);
}

/* vfConfig on a VF rail: the defaults (pin, on, off, auto), each key's
 * values, and "keep" everywhere. */
static void check_vf_config(const char *vf_config, bool pin, int spoofchk, int trust, int link) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    if (vf_config)
        edit_text(doc, "rails.1.nic.vfConfig", vf_config);
    c = parse_doc_ok(doc);
    const VfConfig *v = &c->rails[1].nic.vf_config;
    if (v->pin_mac != pin || v->spoofchk != spoofchk || v->trust != trust || v->link_state != link)
        fail_msg("vfConfig %s: pin %d spoofchk %d trust %d link %d", vf_config ?: "(none)",
                 v->pin_mac, v->spoofchk, v->trust, v->link_state);
    assert_int_equal(config_vf_keeps_all(v), !pin && spoofchk < 0 && trust < 0 && link < 0);
    config_free(c);
}

static void test_vf_config(void **state) {
    const int AUTO = IFLA_VF_LINK_STATE_AUTO, KEEP = CONFIG_VF_KEEP;

    check_vf_config(NULL, true, 1, 0, AUTO);
    check_vf_config("{}", true, 1, 0, AUTO);
    check_vf_config("{'mac': 'keep'}", false, 1, 0, AUTO);
    check_vf_config("{'mac': 'pin'}", true, 1, 0, AUTO);
    check_vf_config("{'spoofChk': false}", true, 0, 0, AUTO);
    check_vf_config("{'spoofChk': 'keep'}", true, KEEP, 0, AUTO);
    check_vf_config("{'trust': true}", true, 1, 1, AUTO);
    check_vf_config("{'trust': 'keep'}", true, 1, KEEP, AUTO);
    check_vf_config("{'linkState': 'enable'}", true, 1, 0, IFLA_VF_LINK_STATE_ENABLE);
    check_vf_config("{'linkState': 'disable'}", true, 1, 0, IFLA_VF_LINK_STATE_DISABLE);
    check_vf_config("{'linkState': 'keep'}", true, 1, 0, KEEP);
    check_vf_config("{'mac': 'keep', 'spoofChk': 'keep', 'trust': 'keep', 'linkState': 'keep'}",
                    false, KEEP, KEEP, KEEP);
}

static void test_rails_sorted(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit_text(doc, "rails.0.index", "9");
    edit_text(doc, "rails.2.index", "5");
    edit_text(doc, "tenants.0.rails", "[9, 1]");
    edit_text(doc, "tenants.1.rails", "[5]");
    c = parse_doc_ok(doc);
    assert_int_equal(c->rails[0].index, 1);
    assert_int_equal(c->rails[1].index, 5);
    assert_int_equal(c->rails[2].index, 9);
    assert_string_equal(c->rails[2].nic.name, "rail-nic0");
    assert_string_equal(c->rails[1].nic.name, "rail-nic2");
    assert_ptr_equal(config_find_rail(c, 9), &c->rails[2]);
    /* tenant rails keep the order the file gives */
    assert_int_equal(c->tenants[0].rails[0], 9);
    config_free(c);
}

static void test_discovery_rails_optional(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit_text(doc, "discovery", "{'enabled': true}");
    edit_text(doc, "rails.2", "{'index': 2}");
    edit_text(doc, "rails.3", "{'index': 3, 'gpu': {'simulated': 'gpu3'}}");
    edit_text(doc, "tenants.1.rails", "[2, 3, 700, 1023]");
    c = parse_doc_ok(doc);
    assert_false(c->rails[2].nic.present);
    assert_false(c->rails[2].gpu.present);
    assert_false(c->rails[3].nic.present);
    assert_true(c->rails[3].gpu.present);
    assert_int_equal(c->tenants[1].n_rails, 4);
    assert_ptr_equal(config_rail_tenant(c, 700), &c->tenants[1]);
    config_free(c);

    /* with discovery, rails[] may be left out entirely */
    doc = load_json(BASE, 0);
    edit_text(doc, "discovery", "{'enabled': true}");
    edit_text(doc, "rails", NULL);
    c = parse_doc_ok(doc);
    assert_int_equal(c->n_rails, 0);
    assert_null(c->rails);
    assert_null(config_find_rail(c, 0));
    config_free(c);
}

static void test_unassigned_rail_and_table_edges(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    /* rail 2 belongs to nobody; 252 + 0 and 256 + 0 avoid 253..255 */
    edit_text(doc, "tenants.1", NULL);
    edit_text(doc, "tenants.0.vrf.table", "252");
    edit_text(doc, "tenants.0.rails", "[0]");
    c = parse_doc_ok(doc);
    assert_null(config_rail_tenant(c, 2));
    assert_int_equal(c->tenants[0].vrf.table, 252);
    config_free(c);

    doc = load_json(BASE, 0);
    edit_text(doc, "tenants.0.vrf.table", "256");
    edit_text(doc, "tenants.1.vrf.table", "4294967293");
    c = parse_doc_ok(doc);
    assert_int_equal(c->tenants[1].vrf.table, 4294967293u);
    config_free(c);
}

static void test_lookups(void **state) {
    NodeConfig *c = parse_doc_ok(load_json(BASE, 0));

    assert_ptr_equal(config_find_rail(c, 0), &c->rails[0]);
    assert_ptr_equal(config_find_rail(c, 2), &c->rails[2]);
    assert_null(config_find_rail(c, 3));
    assert_null(config_find_rail(NULL, 0));
    assert_ptr_equal(config_find_tenant(c, "b"), &c->tenants[1]);
    assert_null(config_find_tenant(c, "c"));
    assert_null(config_find_tenant(c, NULL));
    assert_null(config_find_tenant(NULL, "a"));
    assert_ptr_equal(config_rail_tenant(c, 1), &c->tenants[0]);
    assert_ptr_equal(config_rail_tenant(c, 2), &c->tenants[1]);
    assert_null(config_rail_tenant(c, 3));
    assert_null(config_rail_tenant(NULL, 1));
    assert_ptr_equal(config_namespace_tenant(c, "team-a"), &c->tenants[0]);
    assert_ptr_equal(config_namespace_tenant(c, "team-b"), &c->tenants[1]);
    assert_null(config_namespace_tenant(c, "team-c"));
    assert_null(config_namespace_tenant(c, NULL));
    assert_null(config_namespace_tenant(NULL, "team-a"));
    assert_ptr_equal(config_resource_tenant(c, "railgate.io/b"), &c->tenants[1]);
    assert_null(config_resource_tenant(c, "railgate.io/c"));
    assert_null(config_resource_tenant(c, "b"));
    assert_null(config_resource_tenant(c, NULL));
    assert_null(config_resource_tenant(NULL, "railgate.io/a"));
    config_free(c);
    config_free(NULL);
}

/* n strings "<pre><i><post>" */
static json_t *strings(const char *pre, const char *post, unsigned n) {
    json_t *a = json_array();

    for (unsigned i = 0; i < n; i++)
        json_array_append_new(a, json_sprintf("%s%u%s", pre, i, post));
    return a;
}

static json_t *max_rails(void) {
    json_t *rails = json_array();
    char gpu[16], nic[16];

    for (unsigned k = 0; k < CONFIG_MAX_RAILS; k++) {
        snprintf(gpu, sizeof(gpu), "g%u", k);
        snprintf(nic, sizeof(nic), "n%u", k);
        json_array_append_new(rails, json_pack("{s:i, s:{s:s}, s:{s:s}}", "index", k, "gpu",
                                               "simulated", gpu, "nic", "name", nic));
    }
    return rails;
}

/* 64 tenants of 16 rails each; the first has 256 namespaces. */
static json_t *max_tenants(void) {
    json_t *tenants = json_array();
    char name[16];

    for (unsigned t = 0; t < CONFIG_MAX_TENANTS; t++) {
        json_t *rails = json_array();

        for (unsigned k = t * 16; k < t * 16 + 16; k++)
            json_array_append_new(rails, json_integer(k));
        snprintf(name, sizeof(name), "t%u", t);
        json_array_append_new(
            tenants, json_pack("{s:s, s:o, s:o, s:{s:i}}", "name", name, "namespaces",
                               t ? json_pack("[s]", name) : strings("ns", "", CONFIG_MAX_LIST),
                               "rails", rails, "vrf", "table", 1000));
    }
    return tenants;
}

/* The largest config the limits allow parses. */
static void test_at_the_limits(void **state) {
    json_t *doc = load_json(BASE, 0);
    NodeConfig *c;

    edit(doc, "rails", max_rails());
    edit(doc, "tenants", max_tenants());
    c = parse_doc_ok(doc);
    assert_int_equal(c->n_rails, CONFIG_MAX_RAILS);
    assert_int_equal(c->n_tenants, CONFIG_MAX_TENANTS);
    assert_int_equal(c->tenants[0].n_namespaces, CONFIG_MAX_LIST);
    assert_ptr_equal(config_rail_tenant(c, 1023), &c->tenants[63]);
    assert_ptr_equal(config_namespace_tenant(c, "ns255"), &c->tenants[0]);
    config_free(c);
}

/* ---- JSON syntax and the file ------------------------------------------- */

static void expect_raw(const char *text, const char *want_prefix, const char *want_text) {
    NodeConfig *c = UNTOUCHED;
    RgError err = {0};
    int r = config_parse(text, "test.json", &c, &err);

    assert_int_equal(r, -EINVAL);
    assert_ptr_equal(c, UNTOUCHED);
    if (strncmp(err.msg, want_prefix, strlen(want_prefix)) != 0 || !strstr(err.msg, want_text))
        fail_msg("msg \"%s\", want \"%s...%s\"", err.msg, want_prefix, want_text);
}

static void test_syntax_errors(void **state) {
    expect_raw("{\n  \"domain\": \"x\",\n}\n", "test.json:3:1: ", "string or '}' expected");
    expect_raw("{\"domain\": \"a.io\", \"domain\": \"b.io\"}",
               "test.json:1:", "duplicate object key");
    expect_raw("{} x", "test.json:1:", "end of file expected");
    expect_raw("", "test.json:1:0: ", "'[' or '{' expected");
    expect_raw("\"railgate\"", "test.json:1:", "'[' or '{' expected");
    expect_raw("{\"rails\": [1, 2,]}", "test.json:1:", "unexpected token");
    expect_raw("[]", "test.json: $: ", "must be an object");
    expect_raw("[{\"tenants\": []}]", "test.json: $: ", "must be an object");
}

static void test_parse_arguments(void **state) {
    NodeConfig *c = UNTOUCHED;
    RgError err = {0};

    assert_int_equal(config_parse(NULL, "x.json", &c, &err), -EINVAL);
    assert_string_equal(err.msg, "x.json: no text");
    assert_int_equal(config_parse("[]", NULL, &c, &err), -EINVAL);
    assert_string_equal(err.msg, "config: $: must be an object");
    assert_int_equal(config_load(NULL, &c, &err), -EINVAL);
    assert_string_equal(err.msg, "no config path");
    /* err is optional */
    assert_int_equal(config_parse("[]", "x.json", &c, NULL), -EINVAL);
    assert_ptr_equal(c, UNTOUCHED);
}

/* The exact message the documentation promises. */
static void test_message_format(void **state) {
    json_t *doc = load_json(BASE, 0);
    char *s;
    NodeConfig *c = NULL;
    RgError err = {0};

    edit_text(doc, "tenants.1.rails", "[0]");
    s = dump(doc);
    assert_int_equal(config_parse(s, "node.json", &c, &err), -EINVAL);
    assert_string_equal(err.msg,
                        "node.json: $.tenants[1].rails[0]: rail 0 already belongs to tenant \"a\"");
    assert_null(c);
    free(s);
    json_decref(doc);
}

static void test_text_too_large(void **state) {
    size_t n = CONFIG_MAX_FILE_SIZE + 1;
    char *s = malloc(n + 1);
    NodeConfig *c = UNTOUCHED;
    RgError err = {0};

    assert_non_null(s);
    memset(s, ' ', n);
    s[0] = '{';
    s[n - 1] = '}';
    s[n] = 0;
    assert_int_equal(config_parse(s, "big.json", &c, &err), -EINVAL);
    assert_string_equal(err.msg, "big.json: larger than 4194304 bytes");
    assert_ptr_equal(c, UNTOUCHED);
    free(s);
}

static char tmpdir[] = "/tmp/railgate-test-config-XXXXXX";

static int tmp_setup(void **state) {
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int tmp_teardown(void **state) {
    static const char *const names[] = {"big.json", "fifo",    "bad.json",
                                        "nul.json", "ok.json", "secret.json"};
    char p[256];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    return rmdir(tmpdir);
}

static void write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void expect_load(const char *path, int want_r, const char *want_msg) {
    NodeConfig *c = UNTOUCHED;
    RgError err = {0};
    int r = config_load(path, &c, &err);

    if (r != want_r || !strstr(err.msg, want_msg) || strncmp(err.msg, path, strlen(path)) != 0)
        fail_msg("%s: r=%d msg=\"%s\", want %d \"%s\"", path, r, err.msg, want_r, want_msg);
    assert_ptr_equal(c, UNTOUCHED);
}

static void test_load_errors(void **state) {
    char p[256];

    snprintf(p, sizeof(p), "%s/missing.json", tmpdir);
    expect_load(p, -ENOENT, ": No such file or directory");
    expect_load(tmpdir, -EISDIR, ": Is a directory");
    snprintf(p, sizeof(p), "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(p, 0600), 0);
    expect_load(p, -EINVAL, ": not a regular file");
    snprintf(p, sizeof(p), "%s/bad.json", tmpdir);
    write_file(p, "{\n\"rails\": 5\n}\n", 15);
    expect_load(p, -EINVAL, "bad.json: $.rails: must be an array");
    write_file(p, "{\n\n  nope\n}\n", 12);
    expect_load(p, -EINVAL, "bad.json:3:");
    /* a NUL byte ends nothing early: the whole file is JSON or it is an error */
    snprintf(p, sizeof(p), "%s/nul.json", tmpdir);
    write_file(p, "{}\0{}", 5);
    expect_load(p, -EINVAL, "nul.json:1:");
}

static void test_load_too_large(void **state) {
    size_t n = CONFIG_MAX_FILE_SIZE + 1;
    char *s = malloc(n), p[256];

    assert_non_null(s);
    memset(s, ' ', n);
    snprintf(p, sizeof(p), "%s/big.json", tmpdir);
    write_file(p, s, n);
    expect_load(p, -EINVAL, "big.json: larger than 4194304 bytes");
    /* exactly at the cap is read, and then judged as JSON */
    write_file(p, s, n - 1);
    expect_load(p, -EINVAL, "big.json:");
    free(s);
}

static void test_load_unreadable(void **state) {
    char p[256];

    if (geteuid() == 0)
        skip(); /* root reads anything */
    snprintf(p, sizeof(p), "%s/secret.json", tmpdir);
    write_file(p, "{}", 2);
    assert_int_equal(chmod(p, 0), 0);
    expect_load(p, -EACCES, ": Permission denied");
}

static void test_load_valid_file(void **state) {
    char p[256], *text = quotes(BASE);
    NodeConfig *c = NULL;
    RgError err = {0};

    snprintf(p, sizeof(p), "%s/ok.json", tmpdir);
    write_file(p, text, strlen(text));
    assert_int_equal(config_load(p, &c, &err), 0);
    assert_string_equal(c->path, p);
    assert_int_equal(c->n_rails, 3);
    config_free(c);
    free(text);
}

/* ---- limits --------------------------------------------------------------- */

static void expect_limit(const char *at, json_t *value, const char *path, const char *reason) {
    json_t *doc = load_json(BASE, 0);

    edit(doc, "discovery", json_pack("{s:b}", "enabled", 1));
    edit(doc, at, value);
    expect_doc_error(doc, path, reason);
}

static void test_limits(void **state) {
    json_t *rails = json_array(), *tenants = json_array(), *ints = json_array();

    for (unsigned k = 0; k <= CONFIG_MAX_RAILS; k++)
        json_array_append_new(rails, json_pack("{s:i}", "index", k % CONFIG_MAX_RAILS));
    expect_limit("rails", rails, "$.rails", "has 1025 entries, at most 1024 are allowed");
    for (unsigned t = 0; t <= CONFIG_MAX_TENANTS; t++)
        json_array_append_new(tenants, json_pack("{s:s}", "name", "x"));
    expect_limit("tenants", tenants, "$.tenants", "has 65 entries, at most 64 are allowed");
    for (unsigned k = 0; k <= CONFIG_MAX_RAILS; k++)
        json_array_append_new(ints, json_integer(k));
    expect_limit("tenants.0.rails", ints, "$.tenants[0].rails", "has 1025 entries");
    expect_limit("tenants.0.namespaces", strings("ns", "", 257), "$.tenants[0].namespaces",
                 "has 257 entries, at most 256 are allowed");
    expect_limit("tenants.0.vrf.prefixes", strings("10.", ".0.0/16", 257),
                 "$.tenants[0].vrf.prefixes", "has 257 entries");
    expect_limit("rails.0.gpu.devices", strings("/dev/g", "", 257), "$.rails[0].gpu.devices",
                 "has 257 entries");
    expect_limit("discovery.nicExclude", strings("eth", "", 257), "$.discovery.nicExclude",
                 "has 257 entries");
    expect_limit("rails.1.addresses", strings("10.1.", ".2/24", 257), "$.rails[1].addresses",
                 "has 257 entries");
}

/* ---- error table ---------------------------------------------------------- */

typedef struct Edit {
    const char *at;
    const char *json; /* NULL: delete */
} Edit;

typedef struct ErrorCase {
    const char *name;
    const char *path;   /* JSON path the message must name */
    const char *reason; /* part of the reason */
    Edit edits[3];
} ErrorCase;

#define E(name_, path_, reason_, ...)                                                              \
    {                                                                                              \
        .name = name_, .path = path_, .reason = reason_, .edits = { __VA_ARGS__ }                  \
    }
#define DISCOVERY                                                                                  \
    { "discovery", "{'enabled': true}" }
#define LONG63 "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc"

static const ErrorCase ERRORS[] = {
    /* top level */
    E("root unknown key", "$", "unknown key 'domian' (known keys: domain, kubeletDir",
      {"domian", "'railgate.io'"}),
    E("domain not string", "$.domain", "must be a string", {"domain", "5"}),
    E("domain empty", "$.domain", "must be a DNS subdomain", {"domain", "''"}),
    E("domain upper case", "$.domain", "must be a DNS subdomain", {"domain", "'Railgate.io'"}),
    E("domain underscore", "$.domain", "must be a DNS subdomain", {"domain", "'rail_gate.io'"}),
    E("domain dot at end", "$.domain", "must be a DNS subdomain", {"domain", "'railgate.io.'"}),
    E("domain empty label", "$.domain", "must be a DNS subdomain", {"domain", "'railgate..io'"}),
    E("domain dash at label end", "$.domain", "DNS subdomain", {"domain", "'railgate-.io'"}),
    E("domain label too long", "$.domain", "DNS subdomain", {"domain", "'" LONG63 "x.io'"}),
    E("domain kubernetes.io", "$.domain", "neither ending in kubernetes.io",
      {"domain", "'kubernetes.io'"}),
    E("domain under kubernetes.io", "$.domain", "kubernetes.io", {"domain", "'x.kubernetes.io'"}),
    E("domain requests.", "$.domain", "nor starting with 'requests.'",
      {"domain", "'requests.example.com'"}),
    E("kubeletDir relative", "$.kubeletDir", "must be an absolute path",
      {"kubeletDir", "'var/lib/kubelet'"}),
    E("kubeletDir empty", "$.kubeletDir", "must be an absolute path", {"kubeletDir", "''"}),
    E("kubeletDir not string", "$.kubeletDir", "must be a string", {"kubeletDir", "null"}),
    E("stateDir relative", "$.stateDir", "must be an absolute path", {"stateDir", "'state'"}),
    E("logFile relative", "$.logFile", "must be an absolute path", {"logFile", "'cni.log'"}),
    E("sysfsRoot relative", "$.sysfsRoot", "must be an absolute path", {"sysfsRoot", "'sys'"}),
    E("procRoot relative", "$.procRoot", "must be an absolute path", {"procRoot", "'./proc'"}),
    E("devRoot relative", "$.devRoot", "must be '' (the real /dev) or an absolute path",
      {"devRoot", "'dev'"}),
    E("cdiKind no class", "$.cdiKind", "must be a CDI kind", {"cdiKind", "'nvidia.com'"}),
    E("cdiDir relative", "$.cdiDir", "must be an absolute path", {"cdiDir", "'var/run/cdi'"}),
    E("mode unknown", "$.mode", "must be one of \"devicePlugin\", \"dra\"", {"mode", "'both'"}),
    E("mode not string", "$.mode", "must be a string", {"mode", "1"}),
    E("cdiKind empty class", "$.cdiKind", "must be a CDI kind", {"cdiKind", "'nvidia.com/'"}),
    E("cdiKind empty vendor", "$.cdiKind", "must be a CDI kind", {"cdiKind", "'/gpu'"}),
    E("cdiKind digit first", "$.cdiKind", "must be a CDI kind", {"cdiKind", "'1a.com/gpu'"}),
    E("cdiKind two slashes", "$.cdiKind", "must be a CDI kind", {"cdiKind", "'a.com/gpu/x'"}),
    E("cdiKind not string", "$.cdiKind", "must be a string", {"cdiKind", "true"}),

    /* rdma */
    E("rdma not object", "$.rdma", "must be an object", {"rdma", "true"}),
    E("rdma unknown key", "$.rdma", "unknown key 'gdrdrv' (known keys: umad, gdrcopy)",
      {"rdma", "{'gdrdrv': true}"}),
    E("rdma umad string", "$.rdma.umad", "must be true or false", {"rdma", "{'umad': 'yes'}"}),
    E("rdma umad number", "$.rdma.umad", "must be true or false", {"rdma", "{'umad': 1}"}),
    E("rdma gdrcopy null", "$.rdma.gdrcopy", "must be true or false",
      {"rdma", "{'umad': false, 'gdrcopy': null}"}),

    /* timeouts */
    E("timeouts not object", "$.timeouts", "must be an object", {"timeouts", "15"}),
    E("timeouts unknown key", "$.timeouts", "unknown key 'podResources'",
      {"timeouts", "{'podResources': 15}"}),
    E("podResourcesSeconds 0", "$.timeouts.podResourcesSeconds", "integer from 1 to 600",
      {"timeouts", "{'podResourcesSeconds': 0}"}),
    E("podResourcesSeconds fraction", "$.timeouts.podResourcesSeconds", "integer from 1 to 600",
      {"timeouts", "{'podResourcesSeconds': 1.5}"}),
    E("ipamSeconds too long", "$.timeouts.ipamSeconds", "integer from 1 to 600",
      {"timeouts", "{'ipamSeconds': 601}"}),
    E("ipamSeconds string", "$.timeouts.ipamSeconds", "integer from 1 to 600",
      {"timeouts", "{'ipamSeconds': '30s'}"}),
    E("netnsTeardownSeconds zero", "$.timeouts.netnsTeardownSeconds", "integer from 1 to 600",
      {"timeouts", "{'netnsTeardownSeconds': 0}"}),
    E("agentSeconds too long", "$.timeouts.agentSeconds", "integer from 1 to 660",
      {"timeouts", "{'agentSeconds': 661}"}),
    E("agentSeconds within kubelet's", "$.timeouts.agentSeconds",
      "15 s is no longer than podResourcesSeconds (15 s)", {"timeouts", "{'agentSeconds': 15}"}),
    E("agentSeconds within a longer kubelet's", "$.timeouts.agentSeconds",
      "30 s is no longer than podResourcesSeconds (40 s)",
      {"timeouts", "{'agentSeconds': 30, 'podResourcesSeconds': 40}"}),

    /* metrics */
    E("metrics not object", "$.metrics", "must be an object", {"metrics", "'0.0.0.0:9402'"}),
    E("metrics unknown key", "$.metrics", "unknown key 'port' (known keys: listen, socketMode",
      {"metrics", "{'listen': '0.0.0.0:9402', 'port': 9402}"}),
    E("metrics listen missing", "$.metrics.listen", "is required",
      {"metrics", "{'timeoutSeconds': 5}"}),
    E("metrics listen not string", "$.metrics.listen", "must be a string",
      {"metrics", "{'listen': 9402}"}),
    E("metrics listen port only", "$.metrics.listen", "must be 'unix:' and an absolute path",
      {"metrics", "{'listen': ':9402'}"}),
    E("metrics listen host name", "$.metrics.listen", "IPv6 address in brackets",
      {"metrics", "{'listen': 'localhost:9402'}"}),
    E("metrics listen port 0", "$.metrics.listen", "a port from 1 to 65535",
      {"metrics", "{'listen': '127.0.0.1:0'}"}),
    E("metrics listen IPv6 bare", "$.metrics.listen", "'[::]:9402'",
      {"metrics", "{'listen': ':::9402'}"}),
    E("metrics listen unix relative", "$.metrics.listen", "absolute path",
      {"metrics", "{'listen': 'unix:metrics.sock'}"}),
    E("metrics socketMode 0666", "$.metrics.socketMode", "must be one of '0600', '0660'",
      {"metrics", "{'listen': 'unix:/m.sock', 'socketMode': '0666'}"}),
    E("metrics socketMode number", "$.metrics.socketMode", "must be a string",
      {"metrics", "{'listen': 'unix:/m.sock', 'socketMode': 432}"}),
    E("metrics socketMode on TCP", "$.metrics.socketMode", "only for a 'unix:' listen address",
      {"metrics", "{'listen': '127.0.0.1:9402', 'socketMode': '0600'}"}),
    E("metrics socketGroup on TCP", "$.metrics.socketGroup", "only for a 'unix:' listen address",
      {"metrics", "{'listen': '[::]:9402', 'socketGroup': 10}"}),
    E("metrics socketGroup negative", "$.metrics.socketGroup", "integer from 0 to 2147483646",
      {"metrics", "{'listen': 'unix:/m.sock', 'socketGroup': -1}"}),
    E("metrics socketGroup name", "$.metrics.socketGroup", "integer from 0",
      {"metrics", "{'listen': 'unix:/m.sock', 'socketGroup': 'prometheus'}"}),
    E("metrics maxConnections 0", "$.metrics.maxConnections", "integer from 1 to 1024",
      {"metrics", "{'listen': '0.0.0.0:9402', 'maxConnections': 0}"}),
    E("metrics maxConnections 1025", "$.metrics.maxConnections", "integer from 1 to 1024",
      {"metrics", "{'listen': '0.0.0.0:9402', 'maxConnections': 1025}"}),
    E("metrics timeoutSeconds 0", "$.metrics.timeoutSeconds", "integer from 1 to 600",
      {"metrics", "{'listen': '0.0.0.0:9402', 'timeoutSeconds': 0}"}),
    E("metrics timeoutSeconds 601", "$.metrics.timeoutSeconds", "integer from 1 to 600",
      {"metrics", "{'listen': '0.0.0.0:9402', 'timeoutSeconds': 601}"}),
    E("metrics maxConnectionsPerClient 0", "$.metrics.maxConnectionsPerClient",
      "integer from 1 to 1024",
      {"metrics", "{'listen': '0.0.0.0:9402', 'maxConnectionsPerClient': 0}"}),
    E("metrics maxConnectionsPerClient past the default maxConnections",
      "$.metrics.maxConnectionsPerClient", "must be at most maxConnections (16)",
      {"metrics", "{'listen': '0.0.0.0:9402', 'maxConnectionsPerClient': 17}"}),
    E("metrics maxConnectionsPerClient past maxConnections", "$.metrics.maxConnectionsPerClient",
      "must be at most maxConnections (4)",
      {"metrics", "{'listen': '0.0.0.0:9402', 'maxConnections': 4, 'maxConnectionsPerClient': 5}"}),
    E("metrics deadlineSeconds 0", "$.metrics.deadlineSeconds", "integer from 1 to 600",
      {"metrics", "{'listen': '0.0.0.0:9402', 'deadlineSeconds': 0}"}),
    E("metrics deadlineSeconds 601", "$.metrics.deadlineSeconds", "integer from 1 to 600",
      {"metrics", "{'listen': '0.0.0.0:9402', 'deadlineSeconds': 601}"}),
    E("metrics deadlineSeconds string", "$.metrics.deadlineSeconds", "integer from 1 to 600",
      {"metrics", "{'listen': '0.0.0.0:9402', 'deadlineSeconds': '10s'}"}),

    /* discovery */
    E("discovery not object", "$.discovery", "must be an object", {"discovery", "true"}),
    E("discovery unknown key", "$.discovery", "unknown key 'maxDistanse'",
      {"discovery", "{'maxDistanse': 'numa'}"}),
    E("discovery enabled not bool", "$.discovery.enabled", "must be true or false",
      {"discovery", "{'enabled': 'yes'}"}),
    E("discovery enabled number", "$.discovery.enabled", "must be true or false",
      {"discovery", "{'enabled': 1}"}),
    E("topologyXml relative", "$.discovery.topologyXml", "must be an absolute path",
      {"discovery", "{'topologyXml': 'dgx.xml'}"}),
    E("maxDistance unknown", "$.discovery.maxDistance",
      "must be one of 'switch', 'hostbridge', 'numa', 'system'",
      {"discovery", "{'maxDistance': 'rack'}"}),
    E("maxDistance number", "$.discovery.maxDistance", "must be a string",
      {"discovery", "{'maxDistance': 1}"}),
    E("nicExclude not array", "$.discovery.nicExclude", "must be an array",
      {"discovery", "{'nicExclude': 'eth0'}"}),
    E("nicExclude not string", "$.discovery.nicExclude[1]", "must be a string",
      {"discovery", "{'nicExclude': ['eth0', 0]}"}),
    E("nicExclude bad name", "$.discovery.nicExclude[0]", "must be a network interface name",
      {"discovery", "{'nicExclude': ['eth/0']}"}),
    E("nicExclude twice", "$.discovery.nicExclude[2]", "'eth0' is listed twice",
      {"discovery", "{'nicExclude': ['eth0', 'eth1', 'eth0']}"}),
    E("nic named and excluded", "$.rails[2].nic.name", "'rail-nic2' is in $.discovery.nicExclude",
      {"discovery", "{'nicExclude': ['rail-nic2']}"}),

    /* rails */
    E("rails not array", "$.rails", "must be an array", {"rails", "{}"}),
    E("rail not object", "$.rails[2]", "must be an object", {"rails.2", "2"}),
    E("rail unknown key", "$.rails[0]", "unknown key 'mut' (known keys: index, gpu, nic",
      {"rails.0.mut", "9000"}),
    E("rail index missing", "$.rails[1].index", "is required", {"rails.1.index", NULL}),
    E("rail index negative", "$.rails[1].index", "must be an integer from 0 to 1023",
      {"rails.1.index", "-1"}),
    E("rail index too big", "$.rails[1].index", "must be an integer from 0 to 1023",
      {"rails.1.index", "1024"}),
    E("rail index string", "$.rails[1].index", "must be an integer", {"rails.1.index", "'1'"}),
    E("rail index real", "$.rails[1].index", "must be an integer", {"rails.1.index", "1.0"}),
    E("rail index twice", "$.rails[2].index", "rail 0 is listed twice (also $.rails[0])",
      {"rails.2.index", "0"}),

    /* rails: gpu */
    E("gpu not object", "$.rails[0].gpu", "must be an object", {"rails.0.gpu", "'gpu0'"}),
    E("gpu unknown key", "$.rails[0].gpu", "unknown key 'uid' (known keys: pci, simulated",
      {"rails.0.gpu.uid", "'GPU-1'"}),
    E("gpu pci and simulated", "$.rails[0].gpu", "exactly one of 'pci' and 'simulated'",
      {"rails.0.gpu.pci", "'0000:19:00.0'"}),
    E("gpu neither", "$.rails[0].gpu", "exactly one of 'pci' and 'simulated'",
      {"rails.0.gpu", "{'uuid': 'GPU-1'}"}),
    E("gpu pci short", "$.rails[1].gpu.pci", "must be a PCI address like '0000:17:00.0'",
      {"rails.1.gpu.pci", "'17:00.0'"}),
    E("gpu pci upper case", "$.rails[1].gpu.pci", "(lowercase hex)",
      {"rails.1.gpu.pci", "'0000:1B:00.0'"}),
    E("gpu pci device 0x20", "$.rails[1].gpu.pci", "PCI address",
      {"rails.1.gpu.pci", "'0000:17:20.0'"}),
    E("gpu pci function 8", "$.rails[1].gpu.pci", "PCI address",
      {"rails.1.gpu.pci", "'0000:17:00.8'"}),
    E("gpu pci separators", "$.rails[1].gpu.pci", "PCI address",
      {"rails.1.gpu.pci", "'0000.17:00:0'"}),
    E("gpu pci not hex", "$.rails[1].gpu.pci", "PCI address",
      {"rails.1.gpu.pci", "'0000:1g:00.0'"}),
    E("gpu pci not string", "$.rails[1].gpu.pci", "must be a string", {"rails.1.gpu.pci", "17"}),
    E("gpu simulated space", "$.rails[0].gpu.simulated", "must be 1 to 63 characters",
      {"rails.0.gpu.simulated", "'gpu 0'"}),
    E("gpu simulated slash", "$.rails[0].gpu.simulated", "must be 1 to 63 characters",
      {"rails.0.gpu.simulated", "'../gpu0'"}),
    E("gpu simulated too long", "$.rails[0].gpu.simulated", "1 to 63",
      {"rails.0.gpu.simulated", "'" LONG63 "d'"}),
    E("gpu uuid empty", "$.rails[0].gpu.uuid", "must be 1 to 63 characters",
      {"rails.0.gpu.uuid", "''"}),
    E("gpu minor negative", "$.rails[0].gpu.minor", "must be an integer from 0 to 1048575",
      {"rails.0.gpu.minor", "-1"}),
    E("gpu minor too big", "$.rails[0].gpu.minor", "from 0 to 1048575",
      {"rails.0.gpu.minor", "1048576"}),
    E("gpu minor string", "$.rails[0].gpu.minor", "must be an integer",
      {"rails.0.gpu.minor", "'0'"}),
    E("gpu devices not array", "$.rails[0].gpu.devices", "must be an array",
      {"rails.0.gpu.devices", "'/dev/nvidia0'"}),
    E("gpu device relative", "$.rails[0].gpu.devices[1]", "must be an absolute path",
      {"rails.0.gpu.devices", "['/dev/nvidia0', 'nvidia0']"}),
    E("gpu device twice", "$.rails[0].gpu.devices[1]", "'/dev/nvidia0' is listed twice",
      {"rails.0.gpu.devices", "['/dev/nvidia0', '/dev/nvidia0']"}),
    E("gpu simulated twice", "$.rails[2].gpu", "GPU 'gpu0' is already rail 0",
      {"rails.2.gpu", "{'simulated': 'gpu0'}"}),
    E("gpu pci twice", "$.rails[2].gpu", "GPU '0000:17:00.0' is already rail 1",
      {"rails.2.gpu", "{'pci': '0000:17:00.0'}"}),

    /* rails: nic */
    E("nic missing", "$.rails[2].nic", "is required when discovery is disabled",
      {"rails.2.nic", NULL}),
    E("nic not object", "$.rails[2].nic", "must be an object", {"rails.2.nic", "'rail-nic2'"}),
    E("nic unknown key", "$.rails[2].nic", "unknown key 'nmae' (known keys: name, pci, vf",
      {"rails.2.nic.nmae", "'x'"}),
    E("nic name and pci", "$.rails[2].nic", "exactly one of 'name' and 'pci'",
      {"rails.2.nic.pci", "'0000:19:00.0'"}),
    E("nic neither", "$.rails[2].nic", "exactly one of 'name' and 'pci'",
      {"rails.2.nic", "{'rdma': 'mlx5_2'}"}),
    E("nic neither with discovery", "$.rails[2].nic", "exactly one of 'name' and 'pci'",
      {"rails.2.nic", "{}"}, DISCOVERY),
    E("nic name empty", "$.rails[2].nic.name", "must be a network interface name",
      {"rails.2.nic.name", "''"}),
    E("nic name 16 chars", "$.rails[2].nic.name", "1 to 15 characters",
      {"rails.2.nic.name", "'abcdefghijklmnop'"}),
    E("nic name colon", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'eth0:1'"}),
    E("nic name slash", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'eth/1'"}),
    E("nic name space", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'eth 1'"}),
    E("nic name tab", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'eth\\t1'"}),
    E("nic name newline", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'eth1\\n'"}),
    E("nic name dot", "$.rails[2].nic.name", "network interface name", {"rails.2.nic.name", "'.'"}),
    E("nic name dotdot", "$.rails[2].nic.name", "network interface name",
      {"rails.2.nic.name", "'..'"}),
    E("nic pci bad", "$.rails[1].nic.pci", "PCI address", {"rails.1.nic.pci", "'0000:18:00'"}),
    E("nic vf not bool", "$.rails[1].nic.vf", "must be true or false", {"rails.1.nic.vf", "'yes'"}),
    E("nic units zero", "$.rails[1].nic.units", "must be an integer from 1 to 256",
      {"rails.1.nic.units", "0"}),
    E("nic units 257", "$.rails[1].nic.units", "must be an integer from 1 to 256",
      {"rails.1.nic.units", "257"}),
    E("nic units string", "$.rails[1].nic.units", "must be an integer",
      {"rails.1.nic.units", "'2'"}),
    E("nic units without vf", "$.rails[1].nic.units", "more than one unit needs 'vf': true",
      {"rails.1.nic.vf", "false"}),
    E("nic units without vf key", "$.rails[2].nic.units", "more than one unit needs 'vf': true",
      {"rails.2.nic.units", "2"}),
    E("vfConfig not object", "$.rails[1].nic.vfConfig", "must be an object",
      {"rails.1.nic.vfConfig", "true"}),
    E("vfConfig without vf", "$.rails[2].nic.vfConfig", "only with 'vf': true",
      {"rails.2.nic.vfConfig", "{'trust': false}"}),
    E("vfConfig with vf false", "$.rails[2].nic.vfConfig", "only with 'vf': true",
      {"rails.2.nic.vf", "false"}, {"rails.2.nic.vfConfig", "{}"}),
    E("vfConfig unknown key", "$.rails[1].nic.vfConfig",
      "unknown key 'spoofchk' (known keys: mac, spoofChk, trust, linkState)",
      {"rails.1.nic.vfConfig", "{'spoofchk': true}"}),
    E("vfConfig vlan", "$.rails[1].nic.vfConfig", "unknown key 'vlan'",
      {"rails.1.nic.vfConfig", "{'vlan': 100}"}),
    E("vfConfig mac bool", "$.rails[1].nic.vfConfig.mac", "must be a string",
      {"rails.1.nic.vfConfig", "{'mac': true}"}),
    E("vfConfig mac address", "$.rails[1].nic.vfConfig.mac", "must be one of 'pin', 'keep'",
      {"rails.1.nic.vfConfig", "{'mac': '02:00:00:00:00:01'}"}),
    E("vfConfig spoofChk string", "$.rails[1].nic.vfConfig.spoofChk",
      "must be true, false or 'keep'", {"rails.1.nic.vfConfig", "{'spoofChk': 'on'}"}),
    E("vfConfig spoofChk number", "$.rails[1].nic.vfConfig.spoofChk",
      "must be true, false or 'keep'", {"rails.1.nic.vfConfig", "{'spoofChk': 1}"}),
    E("vfConfig trust null", "$.rails[1].nic.vfConfig.trust", "must be true, false or 'keep'",
      {"rails.1.nic.vfConfig", "{'trust': null}"}),
    E("vfConfig trust Keep", "$.rails[1].nic.vfConfig.trust", "must be true, false or 'keep'",
      {"rails.1.nic.vfConfig", "{'trust': 'Keep'}"}),
    E("vfConfig linkState unknown", "$.rails[1].nic.vfConfig.linkState",
      "must be one of 'auto', 'enable', 'disable', 'keep'",
      {"rails.1.nic.vfConfig", "{'linkState': 'up'}"}),
    E("vfConfig linkState bool", "$.rails[1].nic.vfConfig.linkState", "must be a string",
      {"rails.1.nic.vfConfig", "{'linkState': true}"}),
    E("nic rdma slash", "$.rails[2].nic.rdma", "must be 1 to 63 characters",
      {"rails.2.nic.rdma", "'mlx5/0'"}),
    E("nic rdma empty", "$.rails[2].nic.rdma", "1 to 63", {"rails.2.nic.rdma", "''"}),
    E("nic name twice", "$.rails[2].nic", "NIC 'rail-nic0' is already rail 0",
      {"rails.2.nic.name", "'rail-nic0'"}),
    E("nic pci twice", "$.rails[2].nic", "NIC '0000:18:00.0' is already rail 1",
      {"rails.2.nic", "{'pci': '0000:18:00.0'}"}),

    /* rails: numbers and addressing */
    E("numa negative", "$.rails[0].numa", "must be an integer from 0 to 1023",
      {"rails.0.numa", "-1"}),
    E("numa too big", "$.rails[0].numa", "from 0 to 1023", {"rails.0.numa", "1024"}),
    E("mtu below 68", "$.rails[0].mtu", "must be 0 (leave as is) or from 68 to 65535",
      {"rails.0.mtu", "67"}),
    E("mtu one", "$.rails[0].mtu", "must be 0 (leave as is)", {"rails.0.mtu", "1"}),
    E("mtu too big", "$.rails[0].mtu", "must be an integer from 0 to 65535",
      {"rails.0.mtu", "65536"}),
    E("mtu negative", "$.rails[0].mtu", "must be an integer", {"rails.0.mtu", "-9000"}),
    E("mtu string", "$.rails[0].mtu", "must be an integer", {"rails.0.mtu", "'9000'"}),
    E("addressing unknown", "$.rails[0].addressing", "must be one of 'static', 'ipam', 'keep'",
      {"rails.0.addressing", "'dhcp'"}),
    E("addressing not string", "$.rails[0].addressing", "must be a string",
      {"rails.0.addressing", "0"}),
    E("address and addresses", "$.rails[0]", "only one of 'address' and 'addresses'",
      {"rails.0.address", "'10.0.0.2/24'"}),
    E("addresses with ipam", "$.rails[0].addresses", "only allowed with 'addressing': 'static'",
      {"rails.0.addressing", "'ipam'"}),
    E("address with keep", "$.rails[2].address", "only allowed with 'addressing': 'static'",
      {"rails.2.addressing", "'keep'"}, {"rails.2.address", "'10.2.0.2/24'"}),
    E("addresses not array", "$.rails[0].addresses", "must be an array",
      {"rails.0.addresses", "'10.0.0.2/24'"}),
    E("addresses not string", "$.rails[0].addresses[0]", "must be a string",
      {"rails.0.addresses", "[10]"}),
    E("address not string", "$.rails[2].address", "must be a string", {"rails.2.address", "[]"}),
    E("address no prefix", "$.rails[0].addresses[0]",
      "must be an IPv4 or IPv6 address with prefix length", {"rails.0.addresses", "['10.0.0.2']"}),
    E("address bad octet", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['10.0.0.300/24']"}),
    E("address prefix 33", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['10.0.0.2/33']"}),
    E("address v6 prefix 129", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['fd00::2/129']"}),
    E("address prefix junk", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['10.0.0.2/24x']"}),
    E("address empty prefix", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['10.0.0.2/']"}),
    E("address hostname", "$.rails[0].addresses[0]", "with prefix length",
      {"rails.0.addresses", "['leaf0/24']"}),
    E("address shorthand bad", "$.rails[2].address", "with prefix length",
      {"rails.2.address", "'10.2.0.2'"}),
    E("addresses fewer than units", "$.rails[1].addresses",
      "1 address(es) for 2 unit(s): give exactly one per unit",
      {"rails.1.addresses", "['10.1.0.2/24']"}),
    E("addresses more than units", "$.rails[0].addresses", "2 address(es) for 1 unit(s)",
      {"rails.0.addresses", "['10.0.0.2/24', '10.0.0.3/24']"}),
    E("addresses empty", "$.rails[0].addresses", "0 address(es) for 1 unit(s)",
      {"rails.0.addresses", "[]"}),
    E("address for two units", "$.rails[1].address", "1 address(es) for 2 unit(s)",
      {"rails.1.addresses", NULL}, {"rails.1.address", "'10.1.0.2/24'"}),
    E("addresses twice", "$.rails[1].addresses[1]", "'10.1.0.2/24' is listed twice",
      {"rails.1.addresses", "['10.1.0.2/24', '10.1.0.2/24']"}),
    E("gateway with prefix", "$.rails[0].gateway",
      "must be an IPv4 or IPv6 address without prefix length",
      {"rails.0.gateway", "'10.0.0.1/24'"}),
    E("gateway name", "$.rails[0].gateway", "without prefix length", {"rails.0.gateway", "'gw'"}),
    E("gateway not string", "$.rails[0].gateway", "must be a string", {"rails.0.gateway", "1"}),
    E("gateway v6 for v4", "$.rails[0].gateway",
      "must be of the same address family as '10.0.0.2/24'", {"rails.0.gateway", "'fd00::1'"}),
    E("gateway v4 for v6", "$.rails[1].gateway", "same address family as 'fd00::3/64'",
      {"rails.1.addresses", "['10.1.0.2/24', 'fd00::3/64']"}, {"rails.1.gateway", "'10.1.0.1'"}),

    /* tenants */
    E("tenants missing", "$.tenants", "at least one tenant is required", {"tenants", NULL}),
    E("tenants empty", "$.tenants", "at least one tenant is required", {"tenants", "[]"}),
    E("tenants not array", "$.tenants", "must be an array", {"tenants", "{}"}),
    E("tenant not object", "$.tenants[1]", "must be an object", {"tenants.1", "'b'"}),
    E("tenant unknown key", "$.tenants[0]", "unknown key 'namespace' (known keys: name, resource",
      {"tenants.0.namespace", "'team-a'"}),
    E("tenant name missing", "$.tenants[0].name", "is required", {"tenants.0.name", NULL}),
    E("tenant name upper", "$.tenants[0].name", "must be a DNS label", {"tenants.0.name", "'A'"}),
    E("tenant name dash first", "$.tenants[0].name", "DNS label", {"tenants.0.name", "'-a'"}),
    E("tenant name dash last", "$.tenants[0].name", "DNS label", {"tenants.0.name", "'a-'"}),
    E("tenant name dot", "$.tenants[0].name", "DNS label", {"tenants.0.name", "'a.b'"}),
    E("tenant name empty", "$.tenants[0].name", "DNS label", {"tenants.0.name", "''"}),
    E("tenant name 64", "$.tenants[0].name", "DNS label", {"tenants.0.name", "'" LONG63 "d'"}),
    E("tenant name twice", "$.tenants[1].name", "tenant 'a' is listed twice",
      {"tenants.1.name", "'a'"}),
    E("resource no slash", "$.tenants[0].resource", "must be an extended resource name",
      {"tenants.0.resource", "'railgate.io'"}),
    E("resource kubernetes.io", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'kubernetes.io/a'"}),
    E("resource under kubernetes.io", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'gpu.kubernetes.io/a'"}),
    E("resource requests.", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'requests.railgate.io/a'"}),
    E("resource empty name", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'railgate.io/'"}),
    E("resource empty domain", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'/a'"}),
    E("resource name dash first", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'railgate.io/-a'"}),
    E("resource name bad char", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'railgate.io/a+b'"}),
    E("resource two slashes", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'railgate.io/a/b'"}),
    E("resource upper domain", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'Railgate.io/a'"}),
    E("resource name 64", "$.tenants[0].resource", "extended resource name",
      {"tenants.0.resource", "'railgate.io/" LONG63 "d'"}),
    E("resource not string", "$.tenants[0].resource", "must be a string",
      {"tenants.0.resource", "{}"}),
    E("resource twice", "$.tenants[1].resource",
      "resource 'railgate.io/a' already belongs to tenant 'a'",
      {"tenants.1.resource", "'railgate.io/a'"}),
    E("resource twice by default", "$.tenants[1].resource",
      "resource 'railgate.io/b' already belongs to tenant 'a'",
      {"tenants.0.resource", "'railgate.io/b'"}),
    E("namespaces missing", "$.tenants[0].namespaces", "is required",
      {"tenants.0.namespaces", NULL}),
    E("namespaces empty", "$.tenants[0].namespaces", "must list at least one namespace",
      {"tenants.0.namespaces", "[]"}),
    E("namespaces not array", "$.tenants[0].namespaces", "must be an array",
      {"tenants.0.namespaces", "'team-a'"}),
    E("namespace bad", "$.tenants[0].namespaces[1]", "must be a DNS label",
      {"tenants.0.namespaces", "['team-a', 'Team-A']"}),
    E("namespace not string", "$.tenants[0].namespaces[0]", "must be a string",
      {"tenants.0.namespaces", "[null]"}),
    E("namespace twice", "$.tenants[0].namespaces[1]", "'team-a' is listed twice",
      {"tenants.0.namespaces", "['team-a', 'team-a']"}),
    E("namespace in two tenants", "$.tenants[1].namespaces[1]",
      "namespace 'team-a' already belongs to tenant 'a'",
      {"tenants.1.namespaces", "['team-b', 'team-a']"}),
    E("tenant rails missing", "$.tenants[0].rails", "is required", {"tenants.0.rails", NULL}),
    E("tenant rails empty", "$.tenants[0].rails", "must list at least one rail",
      {"tenants.0.rails", "[]"}),
    E("tenant rails not array", "$.tenants[0].rails", "must be an array", {"tenants.0.rails", "0"}),
    E("tenant rail string", "$.tenants[0].rails[1]", "must be a rail index from 0 to 1023",
      {"tenants.0.rails", "[0, '1']"}),
    E("tenant rail negative", "$.tenants[0].rails[0]", "must be a rail index from 0 to 1023",
      {"tenants.0.rails", "[-1]"}),
    E("tenant rail 1024", "$.tenants[0].rails[0]", "must be a rail index",
      {"tenants.0.rails", "[1024]"}, DISCOVERY),
    E("tenant rail real", "$.tenants[0].rails[0]", "must be a rail index",
      {"tenants.0.rails", "[0.5]"}),
    E("tenant rail twice", "$.tenants[0].rails[2]", "rail 0 is listed twice",
      {"tenants.0.rails", "[0, 1, 0]"}),
    E("tenant rail in two tenants", "$.tenants[1].rails[1]", "rail 1 already belongs to tenant 'a'",
      {"tenants.1.rails", "[2, 1]"}),
    E("tenant rail in two tenants with discovery", "$.tenants[1].rails[0]",
      "rail 9 already belongs to tenant 'a'", {"tenants.0.rails", "[0, 1, 9]"},
      {"tenants.1.rails", "[9]"}, DISCOVERY),
    E("tenant rail unknown", "$.tenants[1].rails[1]",
      "rail 9 is not in $.rails (and discovery is disabled)", {"tenants.1.rails", "[2, 9]"}),
    /* tenants: ipam, the only place an IPAM plugin is named */
    E("ipam not object", "$.tenants[1].ipam", "must be an object",
      {"tenants.1.ipam", "'host-local'"}),
    E("ipam type missing", "$.tenants[1].ipam.type", "is required",
      {"tenants.1.ipam", "{'ranges': []}"}),
    E("ipam type not string", "$.tenants[1].ipam.type", "must be a string",
      {"tenants.1.ipam", "{'type': 1}"}),
    E("ipam type path", "$.tenants[1].ipam.type", "must be a plugin file name",
      {"tenants.1.ipam", "{'type': '../../usr/bin/x'}"}),
    E("ipam type absolute", "$.tenants[1].ipam.type", "must be a plugin file name",
      {"tenants.1.ipam", "{'type': '/opt/cni/bin/host-local'}"}),
    E("ipam type dot", "$.tenants[1].ipam.type", "must be a plugin file name",
      {"tenants.1.ipam", "{'type': '.hidden'}"}),
    E("ipam type empty", "$.tenants[1].ipam.type", "must be a plugin file name",
      {"tenants.1.ipam", "{'type': ''}"}),
    E("ipam type railgate", "$.tenants[1].ipam.type", "railgate never runs itself as IPAM",
      {"tenants.1.ipam", "{'type': 'railgate'}"}),
    E("ipam type railgate upper", "$.tenants[1].ipam.type", "is not an IPAM plugin",
      {"tenants.1.ipam", "{'type': 'RailGate'}"}),
    E("ipam type host-device", "$.tenants[1].ipam.type", "'host-device' is not an IPAM plugin",
      {"tenants.1.ipam", "{'type': 'host-device'}"}),
    E("ipam type sriov", "$.tenants[1].ipam.type", "is not an IPAM plugin",
      {"tenants.1.ipam", "{'type': 'sriov'}"}),
    E("ipam rail without tenant ipam", "$.tenants[1].rails[0]",
      "rail 2 has 'addressing': 'ipam', and the tenant has no 'ipam'",
      {"rails.2.addressing", "'ipam'"}),
    E("vrf missing", "$.tenants[1].vrf", "is required", {"tenants.1.vrf", NULL}),
    E("vrf not object", "$.tenants[1].vrf", "must be an object", {"tenants.1.vrf", "200"}),
    E("vrf unknown key", "$.tenants[1].vrf", "unknown key 'tabel' (known keys: name, table",
      {"tenants.1.vrf.tabel", "201"}),
    E("vrf name too long", "$.tenants[1].vrf.name", "must be a network interface name",
      {"tenants.1.vrf.name", "'vrf-tenant-b-long'"}),
    E("vrf name empty", "$.tenants[1].vrf.name", "network interface name",
      {"tenants.1.vrf.name", "''"}),
    E("vrf table missing", "$.tenants[1].vrf.table", "is required", {"tenants.1.vrf.table", NULL}),
    E("vrf table zero", "$.tenants[1].vrf.table", "must be an integer from 1 to 4294967295",
      {"tenants.1.vrf.table", "0"}),
    E("vrf table 2^32", "$.tenants[1].vrf.table", "from 1 to 4294967295",
      {"tenants.1.vrf.table", "4294967296"}),
    E("vrf table string", "$.tenants[1].vrf.table", "must be an integer",
      {"tenants.1.vrf.table", "'200'"}),
    E("vrf table 253", "$.tenants[0].vrf.table",
      "table 253 + rail 0 is 253, a table the kernel reserves (253 default, 254 main, 255 local)",
      {"tenants.0.vrf.table", "253"}),
    E("vrf table 254", "$.tenants[0].vrf.table", "table 254 + rail 0 is 254, a table the kernel",
      {"tenants.0.vrf.table", "254"}),
    E("vrf table + rail hits 253", "$.tenants[0].vrf.table", "table 252 + rail 1 is 253",
      {"tenants.0.vrf.table", "252"}),
    E("vrf table + rail hits 255", "$.tenants[1].vrf.table", "table 253 + rail 2 is 255",
      {"tenants.1.vrf.table", "253"}),
    E("vrf table overflows", "$.tenants[0].vrf.table",
      "table 4294967295 + rail 1 does not fit in 32 bits", {"tenants.0.vrf.table", "4294967295"}),
    E("vrf prefixes not array", "$.tenants[0].vrf.prefixes", "must be an array",
      {"tenants.0.vrf.prefixes", "'10.0.0.0/16'"}),
    E("vrf prefix host bits", "$.tenants[0].vrf.prefixes[0]",
      "must be an IPv4 or IPv6 prefix without host bits",
      {"tenants.0.vrf.prefixes", "['10.0.0.1/16']"}),
    E("vrf prefix v6 host bits", "$.tenants[0].vrf.prefixes[1]", "without host bits",
      {"tenants.0.vrf.prefixes", "['10.0.0.0/16', 'fd00::1/64']"}),
    E("vrf prefix no length", "$.tenants[0].vrf.prefixes[0]", "without host bits",
      {"tenants.0.vrf.prefixes", "['10.0.0.0']"}),
    E("vrf prefix not string", "$.tenants[0].vrf.prefixes[0]", "must be a string",
      {"tenants.0.vrf.prefixes", "[16]"}),
    E("vrf prefix twice", "$.tenants[0].vrf.prefixes[1]", "'10.0.0.0/16' is listed twice",
      {"tenants.0.vrf.prefixes", "['10.0.0.0/16', '10.0.0.0/16']"}),
    E("vrf mode unknown", "$.tenants[0].vrf.mode", "must be one of 'table', 'vrf'",
      {"tenants.0.vrf.mode", "'l3mdev'"}),
    E("vrf mode not string", "$.tenants[0].vrf.mode", "must be a string",
      {"tenants.0.vrf.mode", "1"}),
};

static void run_error_case(void **state) {
    const ErrorCase *e = *state;
    json_t *doc = load_json(BASE, 0);

    for (size_t i = 0; i < ELEMENTSOF(e->edits) && e->edits[i].at; i++)
        edit_text(doc, e->edits[i].at, e->edits[i].json);
    expect_doc_error(doc, e->path, e->reason);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_is_valid),
        cmocka_unit_test(test_example_fixture),
        cmocka_unit_test(test_discovery_fixture),
        cmocka_unit_test(test_everything),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_agent_timeout_follows),
        cmocka_unit_test(test_metrics_per_client_default),
        cmocka_unit_test(test_default_resource_uses_domain),
        cmocka_unit_test(test_default_vrf_name_is_cut),
        cmocka_unit_test(test_address_shorthand),
        cmocka_unit_test(test_enum_values),
        cmocka_unit_test(test_vf_config),
        cmocka_unit_test(test_rails_sorted),
        cmocka_unit_test(test_discovery_rails_optional),
        cmocka_unit_test(test_unassigned_rail_and_table_edges),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_at_the_limits),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_parse_arguments),
        cmocka_unit_test(test_message_format),
        cmocka_unit_test(test_text_too_large),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_too_large),
        cmocka_unit_test(test_load_unreadable),
        cmocka_unit_test(test_load_valid_file),
        cmocka_unit_test(test_limits),
    };
    struct CMUnitTest errors[ELEMENTSOF(ERRORS)];
    int failed;

    for (size_t i = 0; i < ELEMENTSOF(ERRORS); i++)
        errors[i] = (struct CMUnitTest){.name = ERRORS[i].name,
                                        .test_func = run_error_case,
                                        .initial_state = (void *)&ERRORS[i]};
    failed = cmocka_run_group_tests_name("config", tests, tmp_setup, tmp_teardown);
    failed += _cmocka_run_group_tests("config-errors", errors, ELEMENTSOF(errors), NULL, NULL);
    return failed ? 1 : 0;
}
