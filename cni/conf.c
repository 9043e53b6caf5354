/* The network config on stdin: what a tenant may write, read with suspicion. */
#include <stdio.h>
#include <stdlib.h>

#include "cni.h"

static const char *const versions[] = {"0.4.0", "1.0.0", "1.1.0"};

/* Keys other plugins use to pick a host device or that would pick a tenant:
 * railgate takes neither from a network config, which a tenant can write. */
static const char *const refused_keys[] = {"device",   "hwaddr", "kernelpath", "tenant",
                                           "resource", "rails",  "nodeConfig", "netdev"};

bool cni_version_supported(const char *v) {
    for (size_t i = 0; i < ELEMENTSOF(versions); i++)
        if (streq(versions[i], v))
            return true;
    return false;
}

static void version_parse(const char *v, unsigned out[3]) {
    out[0] = out[1] = out[2] = 0;
    sscanf(v, "%u.%u.%u", &out[0], &out[1], &out[2]);
}

bool cni_version_at_least(const char *a, const char *b) {
    unsigned x[3], y[3];

    version_parse(a, x);
    version_parse(b, y);
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i])
            return x[i] > y[i];
    return true;
}

json_t *cni_version_result(const char *requested) {
    json_t *l = json_array();

    for (size_t i = 0; l && i < ELEMENTSOF(versions); i++)
        json_array_append_new(l, json_string(versions[i]));
    return json_pack("{s:s, s:o}", "cniVersion", requested ? requested : "1.1.0",
                     "supportedVersions", l);
}

static int opt_string(json_t *root, const char *key, char **ret, RgError *err) {
    json_t *v = json_object_get(root, key);

    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 256)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "%s: must be a non-empty string of at most 256 characters", key);
    *ret = strdup(json_string_value(v));
    return *ret ? 0 : -ENOMEM;
}

/* Multus passes the chosen device as runtimeConfig.deviceID (capability),
 * or as top-level deviceID / pciBusID. */
static int device_id(CniConf *c, RgError *err) {
    json_t *rc = json_object_get(c->root, "runtimeConfig");
    int r;

    if (rc && !json_is_object(rc))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "runtimeConfig: must be an object");
    if (rc && json_object_get(rc, "deviceID")) {
        json_t *v = json_object_get(rc, "deviceID");
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 256)
            return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                            "runtimeConfig.deviceID: must be a non-empty string");
        c->device_id = strdup(json_string_value(v));
        return c->device_id ? 0 : -ENOMEM;
    }
    r = opt_string(c->root, "deviceID", &c->device_id, err);
    if (r < 0 || c->device_id)
        return r;
    return opt_string(c->root, "pciBusID", &c->device_id, err);
}

static int check_keys(json_t *root, CniCommand cmd, CniConf *c, RgError *err) {
    for (size_t i = 0; i < ELEMENTSOF(refused_keys); i++)
        if (json_object_get(root, refused_keys[i]))
            return rg_error(err, -EINVAL, CNI_ERR_UNSUPPORTED_FIELD,
                            "unsupported field \"%s\": railgate takes host devices and tenants "
                            "only from the node config and kubelet's allocation",
                            refused_keys[i]);
    c->prev_result = json_object_get(root, "prevResult");
    if (c->prev_result && !json_is_object(c->prev_result))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "prevResult: must be an object");
    c->ipam = json_object_get(root, "ipam");
    if (c->ipam && (!json_is_object(c->ipam) || !json_is_string(json_object_get(c->ipam, "type"))))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "ipam: must be an object with a string \"type\"");
    if (cmd == CNI_CMD_GC) {
        c->valid_attachments = json_object_get(root, "cni.dev/valid-attachments");
        if (!c->valid_attachments)
            c->valid_attachments = json_object_get(root, "cni.dev/attachments");
        if (c->valid_attachments && !json_is_array(c->valid_attachments))
            return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                            "cni.dev/valid-attachments: must be an array");
    }
    return device_id(c, err);
}

int cni_conf_parse(const char *raw, size_t len, CniCommand cmd, CniConf *ret, RgError *err) {
    CniConf c = {0};
    json_error_t je;
    int r;

    c.root = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je);
    if (!c.root)
        return rg_error(err, -EINVAL, CNI_ERR_DECODE, "stdin:%d:%d: %s", je.line, je.column,
                        je.text);
    if (!json_is_object(c.root)) {
        json_decref(c.root);
        return rg_error(err, -EINVAL, CNI_ERR_DECODE, "stdin: the network config is not an object");
    }
    r = opt_string(c.root, "cniVersion", &c.cni_version, err);
    if (r >= 0 && !c.cni_version)
        r = rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "cniVersion: required");
    if (r >= 0 && cmd != CNI_CMD_VERSION && !cni_version_supported(c.cni_version))
        r = rg_error(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION,
                     "cniVersion \"%s\" is not supported (0.4.0, 1.0.0, 1.1.0)", c.cni_version);
    if (r >= 0 && cmd != CNI_CMD_VERSION)
        r = opt_string(c.root, "name", &c.name, err);
    if (r >= 0 && cmd != CNI_CMD_VERSION && !c.name)
        r = rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "name: required");
    if (r >= 0 && cmd != CNI_CMD_VERSION)
        r = check_keys(c.root, cmd, &c, err);
    if (r >= 0 && !(c.raw = malloc(len + 1)))
        r = -ENOMEM;
    if (r < 0) {
        cni_conf_done(&c);
        return r;
    }
    memcpy(c.raw, raw, len);
    c.raw[len] = 0;
    c.raw_len = len;
    *ret = c;
    return 0;
}

void cni_conf_done(CniConf *c) {
    free(c->cni_version);
    free(c->name);
    free(c->device_id);
    free(c->raw);
    json_decref(c->root);
    memset(c, 0, sizeof(*c));
}
