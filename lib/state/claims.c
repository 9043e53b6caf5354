/* SPDX-License-Identifier: Apache-2.0 */
/* Prepared DRA claims on disk (see claims.h). */
#include "claims.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>

#include "fileio.h"
#include "jsonread.h"
#include "strv.h"

#define CLAIM_FILE_MAX (64u << 10)

bool claim_uid_valid(const char *uid) {
    size_t n = strlen(uid);

    return n > 0 && n < CLAIM_UID_MAX && all_chars(uid, n, "-", true);
}

static int claim_path(const char *state_dir, const char *uid, char *buf, size_t n) {
    if (!claim_uid_valid(uid))
        return -EINVAL;
    if ((size_t)snprintf(buf, n, "%s/" CLAIMS_DIR "/%s.json", state_dir, uid) >= n)
        return -ENAMETOOLONG;
    return 0;
}

int claims_save(const char *state_dir, const PreparedClaim *c) {
    char path[4096], dir[4096];
    json_t *devs = json_array(), *o;
    _cleanup_free_ char *text = NULL;
    int r;

    r = claim_path(state_dir, c->uid, path, sizeof(path));
    if (r < 0) {
        json_decref(devs);
        return r;
    }
    for (size_t i = 0; devs && i < c->n_devices; i++)
        json_array_append_new(devs, json_pack("{s:s,s:s}", "request", c->devices[i].request, "unit",
                                              c->devices[i].unit));
    o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "uid", c->uid, "namespace", c->ns, "name",
                  c->name, "tenant", c->tenant, "pool", c->pool, "pod", c->pod_uid, "devices",
                  devs);
    text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text)
        return -ENOMEM;
    snprintf(dir, sizeof(dir), "%s/" CLAIMS_DIR, state_dir);
    r = fileio_mkdir_p(dir, 0700);
    if (r < 0)
        return r;
    return fileio_write_atomic(path, text, strlen(text), 0600, false);
}

static int copy_field(json_t *o, const char *key, char *buf, size_t n) {
    json_t *v = json_object_get(o, key);

    if (!json_is_string(v) || json_string_length(v) >= n)
        return -EBADMSG;
    snprintf(buf, n, "%s", json_string_value(v));
    return 0;
}

int claims_load(const char *state_dir, const char *uid, PreparedClaim *ret) {
    char path[4096];
    _cleanup_free_ char *text = NULL;
    PreparedClaim c = {0};
    json_t *o, *devs, *d;
    size_t i;
    int r;

    r = claim_path(state_dir, uid, path, sizeof(path));
    if (r < 0)
        return r;
    r = fileio_read_bounded(path, CLAIM_FILE_MAX, &text, NULL);
    if (r < 0)
        return r;
    o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    devs = json_object_get(o, "devices");
    r = o ? 0 : -EBADMSG;
    r = r ?: copy_field(o, "uid", c.uid, sizeof(c.uid));
    r = r ?: copy_field(o, "namespace", c.ns, sizeof(c.ns));
    r = r ?: copy_field(o, "name", c.name, sizeof(c.name));
    r = r ?: copy_field(o, "tenant", c.tenant, sizeof(c.tenant));
    r = r ?: copy_field(o, "pool", c.pool, sizeof(c.pool));
    r = r ?: copy_field(o, "pod", c.pod_uid, sizeof(c.pod_uid));
    if (r >= 0 && (!json_is_array(devs) || json_array_size(devs) > CLAIM_MAX_DEVICES))
        r = -EBADMSG;
    json_array_foreach(devs, i, d) {
        if (r < 0)
            break;
        r = copy_field(d, "request", c.devices[i].request, sizeof(c.devices[i].request));
        r = r ?: copy_field(d, "unit", c.devices[i].unit, sizeof(c.devices[i].unit));
        c.n_devices++;
    }
    json_decref(o);
    if (r < 0)
        return r;
    if (!streq(c.uid, uid))
        return -EBADMSG;
    *ret = c;
    return 0;
}

int claims_remove(const char *state_dir, const char *uid) {
    char path[4096];
    int r = claim_path(state_dir, uid, path, sizeof(path));

    if (r < 0)
        return r;
    if (unlink(path) < 0)
        return errno == ENOENT ? 0 : -errno;
    return fileio_sync_parent(path);
}

int claims_list(const char *state_dir, char ***ret) {
    char dir[4096];
    _cleanup_(strv_freep) char **l = NULL;
    DIR *d;
    struct dirent *e;
    int r = 0;

    snprintf(dir, sizeof(dir), "%s/" CLAIMS_DIR, state_dir);
    d = opendir(dir);
    if (!d && errno != ENOENT)
        return -errno;
    while (d && (e = readdir(d)) && r >= 0) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || !streq(e->d_name + n - 5, ".json") || e->d_name[0] == '.')
            continue;
        e->d_name[n - 5] = 0;
        if (claim_uid_valid(e->d_name))
            r = strv_push(&l, e->d_name);
    }
    if (d)
        closedir(d);
    if (r < 0)
        return r;
    if (!l && !(l = calloc(1, sizeof(char *))))
        return -ENOMEM;
    strv_sort(l);
    *ret = TAKE_PTR(l);
    return 0;
}

/* fn on every record that can be read (one that cannot is nobody's);
 * stops at fn's first value that is not 0 and returns it. */
static int claims_each(const char *state_dir, int (*fn)(const PreparedClaim *c, void *userdata),
                       void *userdata) {
    _cleanup_(strv_freep) char **uids = NULL;
    int r;

    r = claims_list(state_dir, &uids);
    for (char **u = uids; r >= 0 && *u; u++) {
        PreparedClaim c;
        if (claims_load(state_dir, *u, &c) >= 0 && (r = fn(&c, userdata)) != 0)
            return r;
    }
    return r < 0 ? r : 0;
}

typedef struct PodUnits {
    const char *pod_uid, *ns;
    char **units;
    char tenant[64];
} PodUnits;

static int add_pod_units(const PreparedClaim *c, void *userdata) {
    PodUnits *p = userdata;

    if (!streq(c->pod_uid, p->pod_uid))
        return 0;
    /* a pod references claims of its own namespace only: a record that says
     * otherwise is not believed, nor are the others of that pod */
    if ((p->tenant[0] && !streq(p->tenant, c->tenant)) || (p->ns && !streq(p->ns, c->ns)))
        return -EXDEV;
    snprintf(p->tenant, sizeof(p->tenant), "%s", c->tenant);
    for (size_t i = 0; i < c->n_devices; i++)
        if (!strv_contains(p->units, c->devices[i].unit) &&
            strv_push(&p->units, c->devices[i].unit) < 0)
            return -ENOMEM;
    return 0;
}

int claims_units_of_pod(const char *state_dir, const char *pod_uid, const char *ns,
                        char ***ret_units, char *ret_tenant, size_t tenant_len) {
    PodUnits p = {.pod_uid = pod_uid, .ns = ns};
    _cleanup_(strv_freep) char **units = NULL;
    int r;

    r = claims_each(state_dir, add_pod_units, &p);
    units = TAKE_PTR(p.units);
    if (r < 0)
        return r;
    if (!units && !(units = calloc(1, sizeof(char *))))
        return -ENOMEM;
    strv_sort(units);
    if (ret_tenant)
        snprintf(ret_tenant, tenant_len, "%s", p.tenant);
    *ret_units = TAKE_PTR(units);
    return 0;
}

typedef struct Holder {
    const char *unit, *except;
    char *buf;
    size_t n;
} Holder;

static int find_holder(const PreparedClaim *c, void *userdata) {
    Holder *h = userdata;

    if (h->except && streq(c->uid, h->except))
        return 0;
    for (size_t i = 0; i < c->n_devices; i++)
        if (streq(c->devices[i].unit, h->unit)) {
            snprintf(h->buf, h->n, "%s", c->uid);
            return 1;
        }
    return 0;
}

int claims_unit_holder(const char *state_dir, const char *unit, const char *except, char *buf,
                       size_t n) {
    Holder h = {.unit = unit, .except = except, .buf = buf, .n = n};
    int r = claims_each(state_dir, find_holder, &h);

    return r < 0 ? r : r > 0 ? 0 : -ENOENT;
}
