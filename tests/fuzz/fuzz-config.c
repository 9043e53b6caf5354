/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node config (node.json): config_parse() on the input, config_load() on
 * it as a file where the two can differ (a NUL byte), and for a config that
 * passes without discovery, the inventory the daemon and the CNI build from
 * it, with every root pointing at a directory that does not exist.
 *
 * What passes must hold what validation promises: rails sorted and unique,
 * tenants disjoint in rails, namespaces and resources, and a unit for every
 * tenant rail, in its tenant.
 */
#include <sys/mman.h>

#include "config.h"
#include "discover.h"
#include "fuzz.h"
#include "log.h"
#include "strv.h"

#define NOWHERE "/nonexistent/railgate-fuzz"

static void check_config(const NodeConfig *c) {
    FUZZ_CHECK(c->domain && c->kubelet_dir && c->state_dir && c->log_file && c->sysfs_root &&
               c->dev_root && c->proc_root);
    FUZZ_CHECK(c->n_tenants > 0 && c->n_tenants <= CONFIG_MAX_TENANTS);
    for (size_t i = 0; i < c->n_rails; i++) {
        const RailConfig *r = &c->rails[i];
        FUZZ_CHECK(r->index < CONFIG_MAX_RAILS);
        FUZZ_CHECK(i == 0 || c->rails[i - 1].index < r->index);
        FUZZ_CHECK(config_find_rail(c, r->index) == r);
        FUZZ_CHECK(r->nic.units >= 1 && r->nic.units <= CONFIG_MAX_UNITS_PER_RAIL);
        FUZZ_CHECK(r->n_addresses == 0 || r->n_addresses == r->nic.units);
        FUZZ_CHECK(strv_length(r->addresses) == r->n_addresses);
        FUZZ_CHECK(r->nic.present || c->discovery.enabled);
    }
    for (size_t i = 0; i < c->n_tenants; i++) {
        const TenantConfig *t = &c->tenants[i];
        FUZZ_CHECK(t->name && t->resource && t->vrf.name);
        FUZZ_CHECK(config_find_tenant(c, t->name) == t);
        FUZZ_CHECK(config_resource_tenant(c, t->resource) == t);
        FUZZ_CHECK(t->n_namespaces > 0 && strv_length(t->namespaces) == t->n_namespaces);
        for (size_t j = 0; j < t->n_namespaces; j++)
            FUZZ_CHECK(config_namespace_tenant(c, t->namespaces[j]) == t);
        FUZZ_CHECK(t->n_rails > 0);
        for (size_t j = 0; j < t->n_rails; j++) {
            FUZZ_CHECK(config_rail_tenant(c, t->rails[j]) == t);
            FUZZ_CHECK(c->discovery.enabled || config_find_rail(c, t->rails[j]));
            uint64_t table = (uint64_t)t->vrf.table + t->rails[j];
            FUZZ_CHECK(table <= UINT32_MAX && (table < 253 || table > 255));
        }
        FUZZ_CHECK(strlen(t->vrf.name) <= 15);
    }
}

static void set(char **field, const char *v) {
    free(*field);
    *field = strdup(v);
    FUZZ_CHECK(*field);
}

/* Units from the config alone: no host device, sysfs or proc is looked at. */
static void check_inventory(NodeConfig *c) {
    Inventory *inv = NULL;
    RgError err = {0};
    size_t total = 0;

    if (c->discovery.enabled || c->discovery.topology_xml)
        return;
    set(&c->sysfs_root, NOWHERE "/sys");
    set(&c->proc_root, NOWHERE "/proc");
    set(&c->dev_root, NOWHERE);
    if (inventory_build(c, NULL, &inv, &err) < 0) {
        FUZZ_CHECK(err.msg[0]);
        return;
    }
    for (size_t i = 0; i < inv->n_units; i++) {
        const Unit *u = &inv->units[i];
        const TenantConfig *t = config_rail_tenant(c, u->rail);
        FUZZ_CHECK(t && t == &c->tenants[u->tenant]);
        FUZZ_CHECK(inventory_find(inv, u->id) == u);
        FUZZ_CHECK(u->pod_ifname[0] && strlen(u->pod_ifname) < sizeof(u->pod_ifname));
        FUZZ_CHECK(i == 0 || inv->units[i - 1].rail <= u->rail);
    }
    for (size_t t = 0; t < c->n_tenants; t++) {
        size_t n = inventory_tenant_units(inv, t, NULL, 0);
        FUZZ_CHECK(n >= c->tenants[t].n_rails);
        total += n;
    }
    FUZZ_CHECK(total == inv->n_units);
    inventory_free(inv);
}

/* config_load() on the same bytes through a memfd: it reads length, not strlen. */
static void load_as_file(const uint8_t *data, size_t size) {
    char path[64];
    NodeConfig *c = NULL;
    RgError err = {0};
    int fd = memfd_create("node.json", MFD_CLOEXEC);

    if (fd < 0)
        return;
    if (write(fd, data, size) == (ssize_t)size) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (config_load(path, &c, &err) >= 0) {
            check_config(c);
            config_free(c);
        } else
            FUZZ_CHECK(err.msg[0] && fuzz_utf8_valid(err.msg));
    }
    close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    log_setup(LOG_FORMAT_TEXT, LOG_LVL_ERROR, "fuzz");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text;
    NodeConfig *c = NULL;
    RgError err = {0};
    int r;

    if (size > CONFIG_MAX_FILE_SIZE + 1)
        return 0;
    text = fuzz_cstring(data, size);
    r = config_parse(text, "fuzz.json", &c, &err);
    if (r < 0) {
        FUZZ_CHECK(!c && err.msg[0] && (r == -EINVAL || r == -ENOMEM));
        /* the CNI answers a bad node config with this message in its error JSON */
        FUZZ_CHECK(fuzz_utf8_valid(err.msg));
    } else {
        FUZZ_CHECK(c);
        check_config(c);
        check_inventory(c);
        config_free(c);
    }
    if (memchr(data, 0, size))
        load_as_file(data, size);
    free(text);
    return 0;
}
