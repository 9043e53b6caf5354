/* SPDX-License-Identifier: Apache-2.0 */
/* The inventory as data (units, names, lookups), and published: the device
 * plugin writes it, the CNI reads it. Building it (hwloc, sysfs, pairing) is
 * inventory.c, which the CNI does not link. */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>

#include "fileio.h"
#include "inventory.h"
#include "strv.h"

#define INVENTORY_MAX (4u << 20) /* thousands of VF units fit many times over */

void unit_set_names(Unit *u) {
    if (u->is_vf)
        snprintf(u->id, sizeof(u->id), "rail%u-vf%u", u->rail, u->vf);
    else
        snprintf(u->id, sizeof(u->id), "rail%u", u->rail);
    if (u->is_vf && u->vf > 0)
        /* config limits: rail < 1024, vf < 256; fits IFNAMSIZ */
        snprintf(u->pod_ifname, sizeof(u->pod_ifname), "rail%uv%u", u->rail % 1024, u->vf % 256);
    else
        snprintf(u->pod_ifname, sizeof(u->pod_ifname), "rail%u", u->rail % 1024);
}

static void unit_done(Unit *u) {
    strv_free(u->gpu_devices);
    strv_free(u->gpu_ctl_devices);
    strv_free(u->rdma_devices);
}

void inventory_free(Inventory *inv) {
    if (!inv)
        return;
    for (size_t i = 0; i < inv->n_units; i++)
        unit_done(&inv->units[i]);
    free(inv->units);
    strv_free(inv->notes);
    free(inv);
}

const Unit *inventory_find(const Inventory *inv, const char *id) {
    for (size_t i = 0; i < inv->n_units; i++)
        if (streq(inv->units[i].id, id))
            return &inv->units[i];
    return NULL;
}

size_t inventory_tenant_units(const Inventory *inv, size_t tenant, const Unit **ret, size_t n) {
    size_t k = 0;

    for (size_t i = 0; i < inv->n_units; i++)
        if (inv->units[i].tenant == tenant) {
            if (k < n)
                ret[k] = &inv->units[i];
            k++;
        }
    return k;
}

static int path_of(const char *state_dir, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s/" INVENTORY_FILE, state_dir);
    return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

static json_t *opt_str(const char *s) {
    return s && s[0] ? json_string(s) : json_null();
}

static json_t *unit_json(const Inventory *inv, const Unit *u) {
    const NodeConfig *c = inv->config;
    json_t *gpu =
        u->has_gpu ? json_pack("{s:o, s:o}", "pci", opt_str(u->gpu_pci), "id", opt_str(u->gpu_id))
                   : json_null();

    return json_pack(
        "{s:s, s:I, s:o, s:s, s:o, s:{s:o, s:o, s:o, s:o, s:o}, s:i, s:o}", "id", u->id, "rail",
        (json_int_t)u->rail, "vf", u->is_vf ? json_integer(u->vf) : json_null(), "tenant",
        u->tenant < c->n_tenants ? c->tenants[u->tenant].name : "", "gpu", gpu ? gpu : json_null(),
        "nic", "pci", opt_str(u->nic_pci), "netdev", opt_str(u->netdev), "rdma", opt_str(u->rdma),
        "lower", opt_str(u->lower), "lowerIfindex",
        u->lower_ifindex > 0 ? json_integer(u->lower_ifindex) : json_null(), "numa", u->numa,
        "switch", opt_str(u->switch_id));
}

/* The generation of the file there now, 0 if none or unreadable. */
static uint64_t current_generation(const char *path) {
    _cleanup_free_ char *text = NULL;
    json_auto_t *j = NULL;

    if (fileio_read_bounded(path, INVENTORY_MAX, &text, NULL) < 0)
        return 0;
    j = json_loads(text, 0, NULL);
    json_int_t g = json_integer_value(json_object_get(j, "generation"));
    return g > 0 ? (uint64_t)g : 0;
}

int inventory_publish(Inventory *inv, const char *state_dir, RgError *err) {
    char path[4096];
    json_auto_t *units = json_array(), *doc = NULL;
    _cleanup_free_ char *text = NULL;
    int r;

    r = path_of(state_dir, path, sizeof(path));
    if (r < 0)
        return rg_error(err, r, 0, "state dir %s: path too long", state_dir);
    for (size_t i = 0; units && i < inv->n_units; i++)
        if (json_array_append_new(units, unit_json(inv, &inv->units[i])) < 0)
            return rg_error(err, -ENOMEM, 0, "out of memory");
    uint64_t gen = current_generation(path) + 1;
    doc = units ? json_pack("{s:I, s:s, s:O}", "generation", (json_int_t)gen, "config",
                            inv->config->path ? inv->config->path : "", "units", units)
                : NULL;
    text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
    if (!text)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    r = fileio_write_atomic(path, text, strlen(text), 0600, false);
    if (r < 0)
        return rg_error(err, r, 0, "cannot publish the inventory in %s: %s", path, strerror(-r));
    inv->generation = gen;
    return 0;
}

static int copy_field(char *dst, size_t n, json_t *v) {
    const char *s = json_string_value(v);

    if (!s)
        return json_is_null(v) || !v ? (dst[0] = 0, 0) : -EBADMSG;
    if (strlen(s) >= n || strchr(s, '/'))
        return -EBADMSG;
    strcpy(dst, s);
    return 0;
}

/* A published lower's ifindex: absent or null (none), or 1 to INT_MAX. */
static int lower_ifindex_load(json_t *v, int *ret) {
    json_int_t i = json_integer_value(v);

    *ret = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || i <= 0 || i > INT_MAX)
        return -EBADMSG;
    *ret = (int)i;
    return 0;
}

/* Does c hand out a unit of this shape (VF or not, VF index) on rail k? */
static bool shape_in_config(const NodeConfig *c, const Unit *u) {
    const RailConfig *rc = config_find_rail(c, u->rail);
    bool vf_mode = rc && rc->nic.present && rc->nic.vf;

    return vf_mode ? u->is_vf && u->vf < rc->nic.units : !u->is_vf;
}

/* One unit of the file; 1 if it is a unit of c, 0 if c does not have it. */
static int unit_load(const NodeConfig *c, json_t *j, Unit *u) {
    json_t *nic = json_object_get(j, "nic"), *vf = json_object_get(j, "vf");
    const char *id = json_string_value(json_object_get(j, "id"));
    json_int_t rail = json_integer_value(json_object_get(j, "rail"));
    int r;

    if (!id || !json_is_integer(json_object_get(j, "rail")) || rail < 0 || rail > 65535 ||
        !(!vf || json_is_null(vf) || json_is_integer(vf)) || !json_is_object(nic))
        return -EBADMSG;
    memset(u, 0, sizeof(*u));
    u->rail = (unsigned)rail;
    u->is_vf = json_is_integer(vf);
    if (u->is_vf && (json_integer_value(vf) < 0 || json_integer_value(vf) > 65535))
        return -EBADMSG;
    u->vf = u->is_vf ? (unsigned)json_integer_value(vf) : 0;
    u->numa = -1;
    unit_set_names(u);
    if (!streq(u->id, id)) /* an id names its rail and VF, nothing else */
        return -EBADMSG;
    r = copy_field(u->nic_pci, sizeof(u->nic_pci), json_object_get(nic, "pci"));
    r = r ?: copy_field(u->netdev, sizeof(u->netdev), json_object_get(nic, "netdev"));
    r = r ?: copy_field(u->rdma, sizeof(u->rdma), json_object_get(nic, "rdma"));
    r = r ?: copy_field(u->lower, sizeof(u->lower), json_object_get(nic, "lower"));
    r = r ?: lower_ifindex_load(json_object_get(nic, "lowerIfindex"), &u->lower_ifindex);
    if (r < 0)
        return r;
    const TenantConfig *t = config_rail_tenant(c, u->rail);
    if (!t || !shape_in_config(c, u))
        return 0;
    u->tenant = (size_t)(t - c->tenants);
    u->rail_cfg = config_find_rail(c, u->rail);
    return 1;
}

int inventory_load_published(const NodeConfig *c, const char *state_dir, Inventory **ret,
                             RgError *err) {
    _cleanup_(inventory_freep) Inventory *inv = NULL;
    _cleanup_free_ char *text = NULL;
    json_auto_t *doc = NULL;
    json_error_t jerr;
    char path[4096];
    json_t *u;
    size_t i;
    int r;

    r = path_of(state_dir, path, sizeof(path));
    if (r < 0)
        return rg_error(err, r, 0, "state dir %s: path too long", state_dir);
    r = fileio_read_bounded(path, INVENTORY_MAX, &text, NULL);
    if (r == -ENOENT)
        return rg_error(err, r, 0,
                        "no inventory published in %s: is railgate-device-plugin running on this "
                        "node?",
                        path);
    if (r < 0)
        return rg_error(err, r, 0, "cannot read %s: %s", path, strerror(-r));
    doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        return rg_error(err, -EBADMSG, 0, "%s: %s (line %d)", path, jerr.text, jerr.line);
    json_t *units = json_object_get(doc, "units");
    json_int_t gen = json_integer_value(json_object_get(doc, "generation"));
    if (!json_is_array(units) || gen <= 0)
        return rg_error(err, -EBADMSG, 0, "%s: no \"generation\" or \"units\"", path);
    inv = calloc(1, sizeof(*inv));
    if (!inv || !(inv->units = calloc(json_array_size(units) + 1, sizeof(Unit))))
        return rg_error(err, -ENOMEM, 0, "out of memory");
    inv->config = c;
    inv->generation = (uint64_t)gen;
    json_array_foreach(units, i, u) {
        r = unit_load(c, u, &inv->units[inv->n_units]);
        if (r < 0)
            return rg_error(err, r, 0, "%s: unit %zu is malformed", path, i);
        if (r > 0 && inventory_find(inv, inv->units[inv->n_units].id))
            return rg_error(err, -EBADMSG, 0, "%s: unit %s is listed twice", path,
                            inv->units[inv->n_units].id);
        inv->n_units += (size_t)r;
    }
    *ret = TAKE_PTR(inv);
    return 0;
}
