/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec files for prepared claims (see cdi.h). */
#include "cdi.h"

#include <jansson.h>
#include <stdio.h>

#include "claims.h"
#include "fileio.h"
#include "strv.h"

int cdi_spec_path(const char *cdi_dir, const char *vendor, const char *claim_uid, char *buf,
                  size_t n) {
    if (!claim_uid_valid(claim_uid) || strchr(vendor, '/'))
        return -EINVAL;
    if ((size_t)snprintf(buf, n, "%s/%s-" CDI_CLASS "_%s.json", cdi_dir, vendor, claim_uid) >= n)
        return -ENAMETOOLONG;
    return 0;
}

int cdi_device_id(const char *vendor, const char *claim_uid, const char *unit, char *buf,
                  size_t n) {
    if ((size_t)snprintf(buf, n, "%s/" CDI_CLASS "=%s-%s", vendor, claim_uid, unit) >= n)
        return -ENAMETOOLONG;
    return 0;
}

static json_t *strv_json(char *const *l) {
    json_t *a = json_array();

    for (size_t i = 0; a && l && l[i]; i++)
        if (json_array_append_new(a, json_string(l[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *device_json(const char *dev_root, const char *claim_uid, const CdiUnit *u) {
    json_t *nodes = json_array(), *env = NULL;
    char name[256];

    if (!nodes)
        return NULL;
    for (size_t i = 0; u->e && u->e->devices && u->e->devices[i]; i++) {
        char host[4096];
        snprintf(host, sizeof(host), "%s%s", dev_root, u->e->devices[i]);
        json_array_append_new(nodes, json_pack("{s:s,s:s,s:s}", "path", u->e->devices[i],
                                               "hostPath", host, "permissions", "rw"));
    }
    env = json_pack("[s+]", "RAILGATE_CLAIM=", claim_uid);
    snprintf(name, sizeof(name), "%s-%s", claim_uid, u->unit);
    return json_pack("{s:s,s:{s:o,s:o}}", "name", name, "containerEdits", "env", env, "deviceNodes",
                     nodes);
}

int cdi_spec_write(const char *cdi_dir, const char *vendor, const char *dev_root,
                   const char *claim_uid, const ContainerEdits *claim, const CdiUnit *units,
                   size_t n, RgError *err) {
    char path[4096], kind[128];
    json_t *devices = json_array(), *spec;
    _cleanup_free_ char *text = NULL;
    int r;

    r = cdi_spec_path(cdi_dir, vendor, claim_uid, path, sizeof(path));
    if (r < 0) {
        json_decref(devices);
        return rg_error(err, r, 0, "no CDI spec file name for claim %.64s", claim_uid);
    }
    snprintf(kind, sizeof(kind), "%s/" CDI_CLASS, vendor);
    for (size_t i = 0; devices && i < n; i++) {
        json_t *d = device_json(dev_root, claim_uid, &units[i]);
        if (!d || json_array_append_new(devices, d) < 0) {
            json_decref(devices);
            devices = NULL;
        }
    }
    json_t *env = strv_json(claim->env);
    spec = devices && env ? json_pack("{s:s,s:s,s:{s:o},s:o}", "cdiVersion", CDI_VERSION, "kind",
                                      kind, "containerEdits", "env", env, "devices", devices)
                          : NULL;
    if (!spec) {
        json_decref(devices);
        json_decref(env);
    }
    text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
    json_decref(spec);
    if (!text)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    r = fileio_mkdir_p(cdi_dir, 0755);
    if (r < 0)
        return rg_error(err, r, 0, "%s: %s", cdi_dir, strerror(-r));
    /* the runtime (root) reads it; nothing in it is secret */
    r = fileio_write_atomic(path, text, strlen(text), 0644, false);
    if (r < 0)
        return rg_error(err, r, 0, "%s: %s", path, strerror(-r));
    return 0;
}

int cdi_spec_remove(const char *cdi_dir, const char *vendor, const char *claim_uid) {
    char path[4096];
    int r = cdi_spec_path(cdi_dir, vendor, claim_uid, path, sizeof(path));

    if (r < 0)
        return r;
    if (unlink(path) < 0)
        return errno == ENOENT ? 0 : -errno;
    return fileio_sync_parent(path);
}
