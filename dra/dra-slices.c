/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ResourceSlices as they should be: one device per unit, its attributes and taints. */
#include <stdio.h>

#include "dra-slices.h"
#include "sysfs.h"

#define ATTR_STRING_MAX 64 /* the API's limit on a string attribute */

static int attr_string(json_t *attrs, const char *name, const char *value) {
    if (!value || !*value || strlen(value) > ATTR_STRING_MAX)
        return 0;
    return json_object_set_new(attrs, name, json_pack("{s:s}", "string", value));
}

static int attr_int(json_t *attrs, const char *name, json_int_t value) {
    return json_object_set_new(attrs, name, json_pack("{s:I}", "int", value));
}

static bool is_uuid(const char *gpu_id) {
    return strncmp(gpu_id, "GPU-", 4) == 0 || strncmp(gpu_id, "MIG-", 4) == 0;
}

/* The PCI function standing for the unit: its NIC's (the device that
 * moves), else its GPU's; "" when it has neither (veth rails, simulated GPUs). */
static const char *unit_pci(const Unit *u) {
    return u->nic_pci[0] ? u->nic_pci : u->gpu_pci;
}

/* A taint's value is a label value: the reason as "nic-link-down". */
static void taint_value(const char *reason, char *buf, size_t n) {
    size_t o = 0;

    for (const char *p = reason ? reason : ""; *p && o + 1 < n; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (keep)
            buf[o++] = c;
        else if (o > 0 && buf[o - 1] != '-')
            buf[o++] = '-';
    }
    while (o > 0 && buf[o - 1] == '-')
        o--;
    buf[o] = 0;
    if (o == 0)
        snprintf(buf, n, "unhealthy");
}

static json_t *device_json(const SliceInput *in, size_t i) {
    const Unit *u = &in->inv->units[i];
    const NodeConfig *c = in->inv->config;
    json_t *attrs = json_object(), *dev;
    char name[128], root[32];
    int r = 0;

    if (!attrs)
        return NULL;
    snprintf(name, sizeof(name), "%s/tenant", in->driver);
    r |= attr_string(attrs, name, c->tenants[u->tenant].name);
    snprintf(name, sizeof(name), "%s/rail", in->driver);
    r |= attr_int(attrs, name, u->rail);
    snprintf(name, sizeof(name), "%s/pcieSwitch", in->driver);
    r |= attr_string(attrs, name, u->switch_id);
    snprintf(name, sizeof(name), "%s/nic", in->driver);
    r |= attr_string(attrs, name, u->netdev);
    snprintf(name, sizeof(name), "%s/rdma", in->driver);
    r |= attr_string(attrs, name, u->rdma);
    if (u->has_gpu && is_uuid(u->gpu_id)) {
        snprintf(name, sizeof(name), "%s/gpuUUID", in->driver);
        r |= attr_string(attrs, name, u->gpu_id);
    }
    if (u->is_vf) {
        snprintf(name, sizeof(name), "%s/vf", in->driver);
        r |= attr_int(attrs, name, u->vf);
    }
    if (unit_pci(u)[0]) {
        r |= attr_string(attrs, "resource.kubernetes.io/pciBusID", unit_pci(u));
        if (sysfs_pci_root(c->sysfs_root, unit_pci(u), root, sizeof(root)) >= 0)
            r |= attr_string(attrs, "resource.kubernetes.io/pcieRoot", root);
    }
    if (u->numa >= 0)
        r |= attr_int(attrs, "resource.kubernetes.io/numaNode", u->numa);
    if (r) {
        json_decref(attrs);
        return NULL;
    }
    dev = json_pack("{s:s,s:o}", "name", u->id, "attributes", attrs);
    if (dev && in->healthy && !in->healthy[i]) {
        /* the scheduler places nothing new on it; running pods stay */
        char key[128], value[64];
        snprintf(key, sizeof(key), "%s/unhealthy", in->driver);
        taint_value(in->reasons ? in->reasons[i] : NULL, value, sizeof(value));
        json_t *taint =
            json_pack("{s:s,s:s,s:s}", "key", key, "value", value, "effect", "NoSchedule");
        if (!taint || json_object_set_new(dev, "taints", json_pack("[o]", taint)) < 0) {
            json_decref(dev);
            return NULL;
        }
    }
    return dev;
}

json_t *dra_slice_devices(const SliceInput *in) {
    json_t *all = json_array();

    for (size_t i = 0; all && i < in->inv->n_units; i++) {
        json_t *d = device_json(in, i);
        if (!d || json_array_append_new(all, d) < 0) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}

size_t dra_slice_count(size_t n_devices) {
    return n_devices == 0 ? 1 : (n_devices + DRA_SLICE_MAX_DEVICES - 1) / DRA_SLICE_MAX_DEVICES;
}

json_t *dra_slice_spec(const SliceInput *in, json_t *devices, size_t index, int64_t generation) {
    size_t n = json_array_size(devices), count = dra_slice_count(n);
    json_t *chunk = json_array();

    for (size_t i = index * DRA_SLICE_MAX_DEVICES;
         chunk && i < n && i < (index + 1) * DRA_SLICE_MAX_DEVICES; i++)
        if (json_array_append(chunk, json_array_get(devices, i)) < 0) {
            json_decref(chunk);
            chunk = NULL;
        }
    if (!chunk)
        return NULL;
    return json_pack("{s:s,s:s,s:{s:s,s:I,s:I},s:o}", "driver", in->driver, "nodeName", in->node,
                     "pool", "name", in->node, "generation", (json_int_t)generation,
                     "resourceSliceCount", (json_int_t)count, "devices", chunk);
}

json_t *dra_slice_object(const SliceInput *in, json_t *spec) {
    char prefix[300];
    json_t *meta;

    /* the API server shortens a long prefix itself */
    snprintf(prefix, sizeof(prefix), "%s-%s-", in->node, in->driver);
    meta = json_pack("{s:s}", "generateName", prefix);
    if (meta && in->node_uid && *in->node_uid)
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "v1", "kind", "Node",
                                      "name", in->node, "uid", in->node_uid, "controller", 1));
    return json_pack("{s:s,s:s,s:o,s:O}", "apiVersion", "resource.k8s.io/v1", "kind",
                     "ResourceSlice", "metadata", meta, "spec", spec);
}
