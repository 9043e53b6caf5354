/* SPDX-License-Identifier: Apache-2.0 */
/* An SR-IOV VF's admin state, through its PF: recorded, set while in a pod, given back. */
#include <stdio.h>
#include <strings.h>

#include "log.h"
#include "netlink.h"
#include "sysfs.h"
#include "vf.h"

/* vfConfig's key for each setting, for messages an operator acts on */
static const char *const FIELD_KEYS[_VF_FIELD_MAX] = {
    [VF_FIELD_MAC] = "mac",
    [VF_FIELD_SPOOFCHK] = "spoofChk",
    [VF_FIELD_TRUST] = "trust",
    [VF_FIELD_LINK_STATE] = "linkState",
};

/* The PF's netdev in the host: the link whose parent device is the PF's
 * PCI function (the PF never leaves the host; its name is root's to
 * change, so it is not what finds it). */
static int pf_find(NicNs *ns, const char *pf_pci, Link *ret) {
    _cleanup_free_ Link *v = NULL;
    char parent[sizeof(ret->parent)];
    size_t k = 0;
    int r;

    snprintf(parent, sizeof(parent), "pci/%s", pf_pci);
    r = link_dump(ns->host, parent, &v, &k);
    if (r < 0)
        return r;
    if (k == 0)
        return -ENODEV;
    *ret = v[0];
    return 0;
}

static int pf_error(RgError *err, NicNs *ns, int r, const AttachedNic *n, const char *what,
                    const char *hint) {
    char kernel[256];
    bool said = netlink_kernel_message(ns->host, r, kernel, sizeof(kernel));

    return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: PF %s: %s of VF %u: %s%s%s%s%s", n->unit,
                    n->vf_pf, what, n->vf_index, strerror(-r), said ? " (kernel: " : "",
                    said ? kernel : "", said ? ")" : "", hint);
}

/* The PF of n's VF in the host, and what it says of the VF now. */
static int pf_read(NicNs *ns, const AttachedNic *n, Link *ret_pf, VfState *ret_now, RgError *err) {
    int r = pf_find(ns, n->vf_pf, ret_pf);

    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: PF %s of VF %u (%s) has no netdev in the host namespace: %s",
                        n->unit, n->vf_pf, n->vf_index, n->host_name, strerror(-r));
    r = vf_state_get(ns->host, ret_pf->ifindex, n->vf_index, ret_now);
    if (r < 0)
        return pf_error(err, ns, r, n, "reading the admin state", "");
    return 0;
}

/* What the rail's vfConfig asks of the VF whose MAC is mac. */
static void wanted(const VfConfig *c, const uint8_t mac[6], VfState *ret) {
    *ret = (VfState)VF_STATE_NONE;
    ret->has_mac = c->pin_mac;
    if (c->pin_mac)
        memcpy(ret->mac, mac, 6);
    ret->spoofchk = c->spoofchk;
    ret->trust = c->trust;
    ret->link_state = c->link_state;
}

/* Which PF and VF number the unit's VF is, from sysfs: its physfn, whose
 * virtfn<j> must be the VF itself (the kernel's links; no pod reaches them). */
static int vf_locate(const NicPlan *p, AttachedNic *n, RgError *err) {
    const Unit *u = p->unit;
    char vf[16];
    int r;

    r = sysfs_vf_physfn(p->sys, u->nic_pci, n->vf_pf, sizeof(n->vf_pf));
    if (r < 0)
        return rg_error(err, r == -ENOENT ? -ENODEV : r, CNI_ERR_DEVICE,
                        "unit %s: %s has no PF in sysfs (%s), and the node config sets its VF "
                        "admin state (vfConfig) through the PF; nothing was moved",
                        u->id, u->nic_pci, strerror(-r));
    r = sysfs_vf_pci(p->sys, n->vf_pf, u->vf, vf, sizeof(vf));
    if (r < 0 || strcasecmp(vf, u->nic_pci) != 0)
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: VF %u of PF %s is %s, not the unit's %s; nothing was moved",
                        u->id, u->vf, n->vf_pf, r < 0 ? "missing" : vf, u->nic_pci);
    n->vf_index = u->vf;
    return 0;
}

int nic_vf_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err) {
    const VfConfig *c = p->rail ? &p->rail->nic.vf_config : NULL;
    static const uint8_t zero[6];
    VfState now;
    Link pf;
    int r;

    n->vf_pf[0] = 0;
    if (!p->unit->is_vf || !c || config_vf_keeps_all(c))
        return 0;
    if (c->pin_mac && (!memcmp(n->mac, zero, 6) || (n->mac[0] & 1)))
        return rg_error(err, -EADDRNOTAVAIL, CNI_ERR_DEVICE,
                        "unit %s: VF %s has no unicast MAC to pin (vfConfig.mac); nothing was "
                        "moved",
                        p->unit->id, n->host_name);
    r = vf_locate(p, n, err);
    if (r >= 0)
        r = pf_read(ns, n, &pf, &now, err);
    if (r < 0) {
        n->vf_pf[0] = 0;
        return r;
    }
    wanted(c, n->mac, &n->vf_set);
    /* what will be set, as the PF has it now: what DEL gives back */
    n->vf_saved = (VfState)VF_STATE_NONE;
    for (VfField f = 0; f < _VF_FIELD_MAX; f++)
        if (vf_state_has(&n->vf_set, f))
            vf_state_copy(&n->vf_saved, &now, f);
    return 0;
}

static const char *const FIELD_WORDS[_VF_FIELD_MAX] = {
    [VF_FIELD_MAC] = "the administrative MAC",
    [VF_FIELD_SPOOFCHK] = "spoof checking",
    [VF_FIELD_TRUST] = "trust",
    [VF_FIELD_LINK_STATE] = "the link state",
};

/* The PF's settings of n's VF made what want has, one at a time; what want
 * leaves unset, or the PF has already, is not touched. */
static int vf_converge(NicNs *ns, const AttachedNic *n, const VfState *want, bool restoring,
                       RgError *err) {
    static const uint8_t zero[6];
    char what[160], hint[96];
    VfState now;
    Link pf;
    int r;

    r = pf_read(ns, n, &pf, &now, err);
    if (r < 0)
        return r;
    for (VfField f = 0; f < _VF_FIELD_MAX; f++) {
        if (!vf_state_has(want, f) || vf_state_same(want, &now, f))
            continue;
        r = vf_state_set(ns->host, pf.ifindex, n->vf_index, f, want);
        if (r >= 0)
            continue;
        /* "no administrative MAC" is the zero MAC, which some drivers
         * refuse: the VF keeps the one it had in the pod (its own) */
        if (restoring && f == VF_FIELD_MAC && !memcmp(want->mac, zero, 6) && r == -EINVAL) {
            log_warn(NULL, n->unit,
                     "PF %s refuses to clear VF %u's administrative MAC: it stays pinned", pf.name,
                     n->vf_index);
            continue;
        }
        snprintf(what, sizeof(what), "%s %s (vfConfig.%s)", restoring ? "giving back" : "setting",
                 FIELD_WORDS[f], FIELD_KEYS[f]);
        snprintf(hint, sizeof(hint), "; \"%s\": \"keep\" in the rail's vfConfig leaves it as it is",
                 FIELD_KEYS[f]);
        return pf_error(err, ns, r, n, what, !restoring && r == -EOPNOTSUPP ? hint : "");
    }
    return 0;
}

int nic_vf_apply(NicNs *ns, const AttachedNic *n, RgError *err) {
    return n->vf_pf[0] ? vf_converge(ns, n, &n->vf_set, false, err) : 0;
}

int nic_vf_restore(NicNs *ns, const AttachedNic *n, RgError *err) {
    return n->vf_pf[0] ? vf_converge(ns, n, &n->vf_saved, true, err) : 0;
}

int nic_vf_check(NicNs *ns, const AttachedNic *n, RgError *err) {
    VfState now;
    Link pf;
    int r;

    if (!n->vf_pf[0])
        return 0;
    r = pf_read(ns, n, &pf, &now, err);
    if (r < 0) {
        err->code = CNI_ERR_CHECK;
        return r;
    }
    for (VfField f = 0; f < _VF_FIELD_MAX; f++)
        if (vf_state_has(&n->vf_set, f) && !vf_state_same(&n->vf_set, &now, f))
            return rg_error(err, -EIO, CNI_ERR_CHECK,
                            "unit %s: VF %u on PF %s no longer has %s as vfConfig.%s sets it",
                            n->unit, n->vf_index, n->vf_pf, FIELD_WORDS[f], FIELD_KEYS[f]);
    return 0;
}
