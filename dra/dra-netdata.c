/* SPDX-License-Identifier: Apache-2.0 */
/* networkData: each prepared claim's rails, as the CNI's records say, in the claim's status. */
#include <stdio.h>
#include <sys/eventfd.h>

#include "dra.h"
#include "state.h"
#include "strv.h"

#define NETDATA_MAX_IPS 16 /* networkData.ips */

/* What was last applied for one claim (NULL: nothing yet). */
typedef struct Written {
    char uid[CLAIM_UID_MAX];
    char ns[64];
    char name[254];
    char *applied; /* the apply body, sorted keys */
    bool has_devices;
    bool seen; /* its record is still there (this sync) */
} Written;

struct NetData {
    DraDriver *d;
    int efd; /* a CNI reported a command: sync soon */
    Written *w;
    size_t n;
    bool first; /* the first sync applies every claim: clears what an earlier agent wrote */
    bool busy;  /* this sync left a claim as it was (a CNI command at work) */
};

int netdata_new(DraDriver *d, NetData **ret) {
    NetData *nd = calloc(1, sizeof(*nd));

    if (!nd)
        return -ENOMEM;
    nd->d = d;
    nd->first = true;
    nd->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (nd->efd < 0) {
        free(nd);
        return -errno;
    }
    *ret = nd;
    return 0;
}

void netdata_free(NetData *nd) {
    if (!nd)
        return;
    for (size_t i = 0; i < nd->n; i++)
        free(nd->w[i].applied);
    free(nd->w);
    close(nd->efd);
    free(nd);
}

int netdata_fd(const NetData *nd) {
    return nd->efd;
}

void netdata_kick(void *userdata) {
    NetData *nd = userdata;
    uint64_t one = 1;

    (void)!write(nd->efd, &one, sizeof(one)); /* never blocks; a full counter is still "soon" */
}

bool netdata_left_busy(const NetData *nd) {
    return nd->busy;
}

bool netdata_kicked(NetData *nd) {
    uint64_t v;

    return read(nd->efd, &v, sizeof(v)) == sizeof(v);
}

static json_t *mac_string(const uint8_t mac[6]) {
    static const uint8_t zero[6];
    char s[18];

    if (!memcmp(mac, zero, 6))
        return NULL;
    snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
             mac[5]);
    return json_string(s);
}

/* The unit's NIC as the CNI moved it into the claim's pod, or NULL: the
 * unit's live marker names the attachment, whose record lists the NIC. A
 * CNI command at work on the attachment (an ADD records its NICs before it
 * moves them) sets *ret_busy: the claim is left as it was written, and the
 * command's report to the agent, or the next second's tick, syncs again. */
static json_t *rail_entry(const DraDriver *d, const PreparedClaim *c, const ClaimDevice *cd,
                          bool *ret_busy) {
    const char *state = d->config->state_dir;
    _cleanup_(attachment_freep) Attachment *a = NULL;
    char owner[STATE_KEY_MAX + 1];

    if (!state_unit_attached(state, cd->unit) ||
        state_unit_holder(state, cd->unit, owner, sizeof(owner)) < 0 ||
        state_record_load_key(state, owner, &a) < 0)
        return NULL;
    /* after the read: a command that began before it still holds the lock
     * (one that begins after it read a record it had not touched yet; one
     * that ended in between, a DEL, kicks another sync with its report). A
     * lock that cannot be tried reads as free: no claim waits on it */
    if (state_attachment_busy(state, owner) > 0) {
        *ret_busy = true;
        return NULL;
    }
    if (!streq(a->pod_ns, c->ns))
        return NULL;
    for (size_t i = 0; i < a->n_nics; i++) {
        const AttachedNic *n = &a->nics[i];
        if (!streq(n->unit, cd->unit))
            continue;
        json_t *ips = json_array(), *mac = mac_string(n->mac);
        for (char **p = n->pod_addrs; ips && p && *p && json_array_size(ips) < NETDATA_MAX_IPS; p++)
            json_array_append_new(ips, json_string(*p));
        json_t *nd = json_pack("{s:s,s:o}", "interfaceName", n->pod_name, "ips", ips);
        if (nd && mac)
            json_object_set_new(nd, "hardwareAddress", mac);
        else
            json_decref(mac);
        return json_pack("{s:s,s:s,s:s,s:o}", "driver", d->driver, "pool", c->pool, "device",
                         cd->unit, "networkData", nd);
    }
    return NULL;
}

/* The server-side apply body: this driver's entries of status.devices, one
 * per unit whose NIC is in the pod (none: the apply removes ours). The uid
 * makes the API server refuse it for a claim made again under the name. */
static char *apply_body(const DraDriver *d, const PreparedClaim *c, bool *ret_has_devices,
                        bool *ret_busy) {
    json_t *devices = json_array(), *o;
    char *text;

    for (size_t i = 0; devices && i < c->n_devices; i++) {
        json_t *e = rail_entry(d, c, &c->devices[i], ret_busy);
        if (e)
            json_array_append_new(devices, e);
    }
    *ret_has_devices = json_array_size(devices) > 0;
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:o}}", "apiVersion", "resource.k8s.io/v1", "kind",
                  "ResourceClaim", "metadata", "name", c->name, "namespace", c->ns, "uid", c->uid,
                  "status", "devices", devices);
    text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

static int apply(NetData *nd, const Written *w, const char *body, RgError *err) {
    _cleanup_free_ char *path = NULL, *ns = kube_escape(w->ns), *name = kube_escape(w->name),
                        *fm = kube_escape(nd->d->driver);
    json_t *j = json_loads(body, 0, NULL);
    int r;

    if (!j || !ns || !name || !fm ||
        asprintf(&path,
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status"
                 "?fieldManager=%s&force=true",
                 ns, name, fm) < 0) {
        json_decref(j);
        return rg_error(err, -ENOMEM, 0, "out of memory");
    }
    r = kube_request(nd->d->kube, "PATCH", path, KUBE_PATCH_APPLY, j, NULL, err);
    json_decref(j);
    /* gone, or made again under its name (the uid differs): nothing to write */
    return r == -ENOENT || r == -EEXIST ? 0 : r;
}

static Written *written(NetData *nd, const PreparedClaim *c) {
    Written *w;

    for (size_t i = 0; i < nd->n; i++)
        if (streq(nd->w[i].uid, c->uid))
            return &nd->w[i];
    w = realloc(nd->w, (nd->n + 1) * sizeof(*w));
    if (!w)
        return NULL;
    nd->w = w;
    w = &nd->w[nd->n++];
    *w = (Written){0};
    snprintf(w->uid, sizeof(w->uid), "%s", c->uid);
    snprintf(w->ns, sizeof(w->ns), "%s", c->ns);
    snprintf(w->name, sizeof(w->name), "%s", c->name);
    return w;
}

/* One prepared claim: applied when what it should say changed. */
static int sync_claim(NetData *nd, const PreparedClaim *c, unsigned *n_applied, RgError *err) {
    Written *w = written(nd, c);
    bool has = false, busy = false;
    char *body;
    int r;

    if (!w)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    w->seen = true;
    body = apply_body(nd->d, c, &has, &busy);
    if (!body)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    if (busy) { /* as written, until the CNI's report */
        nd->busy = true;
        free(body);
        return 0;
    }
    /* a claim never written needs nothing while nothing is attached, but on
     * the first sync an earlier agent may have written it */
    if ((w->applied && streq(w->applied, body)) || (!w->applied && !has && !nd->first)) {
        free(body);
        return 0;
    }
    r = apply(nd, w, body, err);
    if (r < 0) {
        free(body);
        return r;
    }
    free(w->applied);
    w->applied = body;
    w->has_devices = has;
    (*n_applied)++;
    return 0;
}

/* A claim whose record went (unprepared, or dropped as stale): what we
 * wrote goes too. Its entry stays until that worked. */
static int sync_gone(NetData *nd, Written *w, unsigned *n_applied, RgError *err) {
    PreparedClaim c = {0};
    bool has, busy = false;
    int r;

    if (!w->has_devices)
        return 0;
    snprintf(c.uid, sizeof(c.uid), "%s", w->uid);
    snprintf(c.ns, sizeof(c.ns), "%s", w->ns);
    snprintf(c.name, sizeof(c.name), "%s", w->name);
    _cleanup_free_ char *body = apply_body(nd->d, &c, &has, &busy);
    if (!body)
        return rg_error(err, -ENOMEM, 0, "out of memory");
    r = apply(nd, w, body, err);
    if (r < 0)
        return r;
    (*n_applied)++;
    w->has_devices = false;
    return 0;
}

int netdata_sync(NetData *nd, unsigned *ret_applied, RgError *err) {
    _cleanup_(strv_freep) char **uids = NULL;
    unsigned applied = 0;
    int r, first_err = 0;
    size_t k = 0;

    r = claims_list(nd->d->config->state_dir, &uids);
    if (r < 0)
        return rg_error(err, r, 0, "cannot list the prepared claims: %s", strerror(-r));
    for (size_t i = 0; i < nd->n; i++)
        nd->w[i].seen = false;
    nd->busy = false;
    for (char **u = uids; *u; u++) {
        PreparedClaim c;
        RgError one = {0};
        if (claims_load(nd->d->config->state_dir, *u, &c) < 0)
            continue;
        r = sync_claim(nd, &c, &applied, &one);
        if (r < 0 && first_err == 0) {
            first_err = r;
            *err = one;
        }
    }
    for (size_t i = 0; i < nd->n; i++) {
        Written *w = &nd->w[i];
        RgError one = {0};
        r = w->seen ? 0 : sync_gone(nd, w, &applied, &one);
        if (r < 0 && first_err == 0) {
            first_err = r;
            *err = one;
        }
        if (w->seen || r < 0 || w->has_devices)
            nd->w[k++] = *w;
        else
            free(w->applied);
    }
    nd->n = k;
    if (first_err == 0 && !nd->busy) /* a claim left as it was is not cleared yet */
        nd->first = false;
    if (ret_applied)
        *ret_applied = applied;
    return first_err;
}
