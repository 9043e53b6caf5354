/* SPDX-License-Identifier: Apache-2.0 */
/* The network config on stdin: what a tenant may write, read with suspicion. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cidr.h"
#include "cni.h"

static const char *const versions[] = {"0.4.0", "1.0.0", "1.1.0"};

/* Keys other plugins use to pick a host device, or that would pick a tenant
 * or rails: railgate takes none of them from a network config, which a
 * tenant can write. Matched as Go's encoding/json matches struct fields
 * (case-insensitively, with its Unicode folds), at every depth. */
static const char *const refused_keys[] = {"device",   "hwaddr", "kernelpath",
                                           "netdev",   "tenant", "tenants",
                                           "resource", "rails",  "nodeConfig"};

#define PREV_RESULT_MAX_ENTRIES 1024 /* interfaces, ips, routes of a prevResult */
#define KEY_PATH_MAX 256

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

/* One character of key at *p folded as Go's encoding/json folds field names:
 * ASCII case, and the two non-ASCII runes that fold to ASCII letters
 * (U+017F LATIN SMALL LETTER LONG S to 's', U+212A KELVIN SIGN to 'k'). */
static int fold_next(const unsigned char **p) {
    const unsigned char *s = *p;

    if (s[0] == 0xc5 && s[1] == 0xbf) {
        *p += 2;
        return 's';
    }
    if (s[0] == 0xe2 && s[1] == 0x84 && s[2] == 0xaa) {
        *p += 3;
        return 'k';
    }
    *p += 1;
    return tolower(s[0]);
}

bool cni_key_equal(const char *key, const char *want) {
    const unsigned char *k = (const unsigned char *)key;

    for (; *want; want++)
        if (!*k || fold_next(&k) != tolower((unsigned char)*want))
            return false;
    return *k == 0;
}

static const char *refused_key(const char *key) {
    for (size_t i = 0; i < ELEMENTSOF(refused_keys); i++)
        if (cni_key_equal(key, refused_keys[i]))
            return refused_keys[i];
    return NULL;
}

static void path_append(char *path, size_t n, const char *base, const char *key) {
    int k = snprintf(path, n, "%s%s%.64s", base, base[0] ? "." : "", key);

    if (k < 0 || (size_t)k >= n)
        snprintf(path, n, "%.*s...", (int)(n > 8 ? n - 8 : 0), base);
}

/* Every object member at every depth (arrays included): a refused key
 * anywhere is refused, since we cannot know which part a plugin reads. */
static int scan_refused(json_t *v, const char *path, RgError *err) {
    char sub[KEY_PATH_MAX];
    const char *key;
    json_t *m;
    size_t i;
    int r;

    if (json_is_object(v)) {
        json_object_foreach(v, key, m) {
            const char *refused = refused_key(key);
            path_append(sub, sizeof(sub), path, key);
            if (refused)
                return rg_error(err, -EINVAL, CNI_ERR_UNSUPPORTED_FIELD,
                                "unsupported field \"%s\" (read as \"%s\"): railgate takes host "
                                "devices, tenants and rails only from the node config and "
                                "kubelet's allocation",
                                sub, refused);
            r = scan_refused(m, sub, err);
            if (r < 0)
                return r;
        }
    } else if (json_is_array(v))
        json_array_foreach(v, i, m) {
            r = scan_refused(m, path, err);
            if (r < 0)
                return r;
        }
    return 0;
}

/* "ipam" in any case: the IPAM plugin and its config come from the node
 * config alone, so a network config that names one is refused, not obeyed. */
static int refuse_ipam(json_t *root, RgError *err) {
    const char *key;
    json_t *m;

    json_object_foreach(root, key, m) if (cni_key_equal(key, "ipam")) return rg_error(
        err, -EINVAL, CNI_ERR_INVALID_CONFIG,
        "%.64s: not allowed in railgate's network config: the IPAM plugin and "
        "its config come only from the node config (tenants[].ipam)",
        key);
    return 0;
}

static int prev_fail(RgError *err, const char *what, size_t i, const char *fmt, ...) _printf_(4, 5);
static int prev_fail(RgError *err, const char *what, size_t i, const char *fmt, ...) {
    char reason[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "prevResult.%s[%zu]: %s", what, i,
                    reason);
}

static bool opt_is(json_t *o, const char *key, int (*is)(const json_t *)) {
    json_t *v = json_object_get(o, key);

    return !v || is(v);
}

static int is_string(const json_t *v) {
    return json_is_string(v);
}

static int is_uint(const json_t *v) {
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

static bool ip_text_valid(json_t *v) {
    Cidr c;

    return json_is_string(v) && cidr_parse(json_string_value(v), true, &c) >= 0 &&
           !strchr(json_string_value(v), '/');
}

static bool cidr_text_valid(json_t *v) {
    Cidr c;

    return json_is_string(v) && strchr(json_string_value(v), '/') &&
           cidr_parse(json_string_value(v), false, &c) >= 0;
}

/* A prevResult member: an array of objects, or absent. */
static int prev_array(json_t *pr, const char *key, json_t **ret, RgError *err) {
    json_t *a = json_object_get(pr, key), *v;
    size_t i;

    *ret = a;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > PREV_RESULT_MAX_ENTRIES)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "prevResult.%s: must be an array of at most %d entries", key,
                        PREV_RESULT_MAX_ENTRIES);
    json_array_foreach(a, i, v) if (!json_is_object(v)) return prev_fail(err, key, i,
                                                                         "must be an object");
    return 0;
}

static int prev_interfaces(json_t *pr, size_t *ret_n, RgError *err) {
    json_t *a, *v;
    size_t i;
    int r = prev_array(pr, "interfaces", &a, err);

    if (r < 0)
        return r;
    json_array_foreach(a, i, v) {
        json_t *name = json_object_get(v, "name");
        if (!json_is_string(name) || json_string_length(name) == 0)
            return prev_fail(err, "interfaces", i, "\"name\" must be a non-empty string");
        if (!opt_is(v, "mac", is_string) || !opt_is(v, "sandbox", is_string) ||
            !opt_is(v, "mtu", is_uint) || !opt_is(v, "pciID", is_string) ||
            !opt_is(v, "socketPath", is_string))
            return prev_fail(err, "interfaces", i,
                             "\"mac\", \"sandbox\", \"pciID\" and \"socketPath\" must be strings, "
                             "\"mtu\" a non-negative integer");
    }
    *ret_n = json_array_size(a);
    return 0;
}

static int prev_ips(json_t *pr, size_t n_interfaces, RgError *err) {
    json_t *a, *v;
    size_t i;
    int r = prev_array(pr, "ips", &a, err);

    if (r < 0)
        return r;
    json_array_foreach(a, i, v) {
        json_t *idx = json_object_get(v, "interface");
        if (!cidr_text_valid(json_object_get(v, "address")))
            return prev_fail(err, "ips", i, "\"address\" must be an address with prefix length");
        if (json_object_get(v, "gateway") && !ip_text_valid(json_object_get(v, "gateway")))
            return prev_fail(err, "ips", i, "\"gateway\" must be an IP address");
        if (idx && (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
                    (size_t)json_integer_value(idx) >= n_interfaces))
            return prev_fail(err, "ips", i,
                             "\"interface\" must be an index into prevResult.interfaces "
                             "(%zu entries)",
                             n_interfaces);
    }
    return 0;
}

static int prev_routes(json_t *pr, RgError *err) {
    static const char *const ints[] = {"mtu", "advmss", "priority", "table", "scope"};
    json_t *a, *v;
    size_t i;
    int r = prev_array(pr, "routes", &a, err);

    if (r < 0)
        return r;
    json_array_foreach(a, i, v) {
        if (!cidr_text_valid(json_object_get(v, "dst")))
            return prev_fail(err, "routes", i, "\"dst\" must be a prefix (address/length)");
        if (json_object_get(v, "gw") && !ip_text_valid(json_object_get(v, "gw")))
            return prev_fail(err, "routes", i, "\"gw\" must be an IP address");
        for (size_t k = 0; k < ELEMENTSOF(ints); k++)
            if (!opt_is(v, ints[k], is_uint))
                return prev_fail(err, "routes", i, "\"%s\" must be a non-negative integer",
                                 ints[k]);
    }
    return 0;
}

/* The previous plugin's result, checked against the spec's shape before we
 * append to it: an invalid one is refused, never passed on. */
static int prev_result_check(json_t *pr, RgError *err) {
    json_t *dns = json_object_get(pr, "dns");
    size_t n_interfaces = 0;
    int r;

    if (!json_is_object(pr))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "prevResult: must be an object");
    if (!opt_is(pr, "cniVersion", is_string))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG,
                        "prevResult.cniVersion: must be a string");
    r = prev_interfaces(pr, &n_interfaces, err);
    if (r >= 0)
        r = prev_ips(pr, n_interfaces, err);
    if (r >= 0)
        r = prev_routes(pr, err);
    if (r >= 0 && dns && !json_is_object(dns))
        r = rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "prevResult.dns: must be an object");
    return r;
}

static int check_keys(json_t *root, CniCommand cmd, CniConf *c, RgError *err) {
    int r;

    r = scan_refused(root, "", err);
    if (r >= 0)
        r = refuse_ipam(root, err);
    /* DEL, GC and STATUS read none of these keys (DEL works from the record
     * alone) and must not fail on them: the runtime DELs after a refused
     * ADD, and a DEL that fails leaves the pod undeletable */
    if (r < 0 && cmd != CNI_CMD_ADD && cmd != CNI_CMD_CHECK) {
        snprintf(c->ignored, sizeof(c->ignored), "ignored: %.480s", err->msg);
        *err = (RgError){0};
        r = 0;
    }
    if (r < 0)
        return r;
    c->prev_result = json_object_get(root, "prevResult");
    /* DEL does not read it, and must not fail on it: a pod must always be deletable */
    if (c->prev_result && (cmd == CNI_CMD_ADD || cmd == CNI_CMD_CHECK)) {
        r = prev_result_check(c->prev_result, err);
        if (r < 0)
            return r;
    } else if (c->prev_result && !json_is_object(c->prev_result))
        c->prev_result = NULL;
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

char *cni_conf_peek_version(const char *raw, size_t len) {
    json_auto_t *root = raw ? json_loadb(raw, len, 0, NULL) : NULL;
    const char *v = json_string_value(json_object_get(root, "cniVersion"));

    /* only something shaped like a version goes back into our answer */
    if (!v || strlen(v) > 16 || strspn(v, "0123456789.") != strlen(v) || !strchr(v, '.'))
        return NULL;
    return strdup(v);
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
