/* SPDX-License-Identifier: Apache-2.0 */
/* Attachment records as JSON files in the state dir (jansson). */
#include "attachment.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <linux/if_ether.h>
#include <stdio.h>

#include "strv.h"

#define ATTACHMENT_MAX_NICS 1024

void attached_nic_done(AttachedNic *n) {
    strv_free(n->host_addrs);
    strv_free(n->altnames);
    strv_free(n->pod_addrs);
    n->host_addrs = n->altnames = n->pod_addrs = NULL;
    ethtool_state_done(&n->ethtool);
    n->has_ethtool = false;
    netdev_sysfs_done(&n->sysfs);
    n->has_sysfs = false;
    rxnfc_done(&n->rxnfc);
    n->has_rxnfc = false;
}

void attachment_free(Attachment *a) {
    if (!a)
        return;
    for (size_t i = 0; i < a->n_nics; i++)
        attached_nic_done(&a->nics[i]);
    free(a->nics);
    free(a->ipam_conf);
    free(a);
}

AttachedNic *attachment_add_nic(Attachment *a) {
    AttachedNic *m;

    if (a->n_nics >= ATTACHMENT_MAX_NICS)
        return NULL;
    m = realloc(a->nics, (a->n_nics + 1) * sizeof(*m));
    if (!m)
        return NULL;
    a->nics = m;
    memset(&m[a->n_nics], 0, sizeof(*m));
    m[a->n_nics].vf_set = m[a->n_nics].vf_saved = (VfState)VF_STATE_NONE;
    return &m[a->n_nics++];
}

static json_t *strv_to_json(char *const *l) {
    json_t *a = json_array();

    for (size_t i = 0; a && l && l[i]; i++)
        json_array_append_new(a, json_string(l[i]));
    return a;
}

static void mac_format(const uint8_t *m, char *buf, size_t n) {
    snprintf(buf, n, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int mac_parse(const char *s, uint8_t *m) {
    if (!s ||
        sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
        return -EBADMSG;
    return 0;
}

static const char *const LINK_STATES[] = {"auto", "enable", "disable"};

/* A VfState as {"mac", "spoofChk", "trust", "linkState"}, each only when set. */
static json_t *vf_state_to_json(const VfState *v) {
    json_t *o = json_object();
    char mac[18];
    int r = 0;

    if (!o)
        return NULL;
    mac_format(v->mac, mac, sizeof(mac));
    if (v->has_mac)
        r = r ?: json_object_set_new(o, "mac", json_string(mac));
    if (v->spoofchk >= 0)
        r = r ?: json_object_set_new(o, "spoofChk", json_boolean(v->spoofchk));
    if (v->trust >= 0)
        r = r ?: json_object_set_new(o, "trust", json_boolean(v->trust));
    if (v->link_state >= 0 && (size_t)v->link_state < ELEMENTSOF(LINK_STATES))
        r = r ?: json_object_set_new(o, "linkState", json_string(LINK_STATES[v->link_state]));
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int vf_to_json(const AttachedNic *n, json_t *o) {
    if (!n->vf_pf[0])
        return 0;
    return json_object_set_new(
        o, "vf",
        json_pack("{s:s, s:I, s:o, s:o}", "pf", n->vf_pf, "index", (json_int_t)n->vf_index, "set",
                  vf_state_to_json(&n->vf_set), "saved", vf_state_to_json(&n->vf_saved)));
}

/* "anchor": {"name", "kind": "vlan", "protocol", "id", "ifindex"}, only on
 * an anchored NIC */
static int anchor_to_json(const AttachedNic *n, json_t *o) {
    if (!n->anchor[0])
        return 0;
    return json_object_set_new(o, "anchor",
                               json_pack("{s:s, s:s, s:s, s:i, s:i}", "name", n->anchor, "kind",
                                         "vlan", "protocol",
                                         n->anchor_proto == ETH_P_8021Q ? "802.1Q" : "802.1ad",
                                         "id", (int)n->anchor_vid, "ifindex", n->anchor_ifindex));
}

/* "rdma": {"name", "index", "nodeGuid" (16 hex digits: a JSON number
 * holds no u64), "parent"}, only on a NIC whose RDMA device moves with it */
static int rdma_to_json(const AttachedNic *n, json_t *o) {
    char guid[17];

    if (!n->rdma[0])
        return 0;
    snprintf(guid, sizeof(guid), "%016" PRIx64, n->rdma_guid);
    return json_object_set_new(o, "rdma",
                               json_pack("{s:s, s:I, s:s, s:s}", "name", n->rdma, "index",
                                         (json_int_t)n->rdma_index, "nodeGuid", guid, "parent",
                                         n->rdma_parent));
}

/* "linkSettings": what the NIC's holder can change, as it was on the host
 * (each only where the kernel reported it) */
static int settings_to_json(const AttachedNic *n, json_t *o) {
    const LinkSettings *s = &n->settings;
    json_t *j;
    char bc[18];
    int r = 0;

    if (!n->has_settings)
        return 0;
    j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "flags", (json_int_t)s->flags,
                  "gsoMaxSize", (json_int_t)s->gso_max_size, "gsoMaxSegs",
                  (json_int_t)s->gso_max_segs, "groMaxSize", (json_int_t)s->gro_max_size,
                  "gsoIpv4MaxSize", (json_int_t)s->gso_ipv4_max_size, "groIpv4MaxSize",
                  (json_int_t)s->gro_ipv4_max_size, "protoDownReason",
                  (json_int_t)s->proto_down_reason);
    if (!j)
        return -ENOMEM;
    mac_format(s->broadcast, bc, sizeof(bc));
    if (s->has_txqlen)
        r = r ?: json_object_set_new(j, "txqueuelen", json_integer(s->txqlen));
    if (s->has_group)
        r = r ?: json_object_set_new(j, "group", json_integer(s->group));
    if (s->has_linkmode)
        r = r ?: json_object_set_new(j, "linkMode", json_integer(s->linkmode));
    if (s->has_broadcast)
        r = r ?: json_object_set_new(j, "broadcast", json_string(bc));
    if (s->carrier >= 0)
        r = r ?: json_object_set_new(j, "carrier", json_boolean(s->carrier));
    if (s->proto_down >= 0)
        r = r ?: json_object_set_new(j, "protoDown", json_boolean(s->proto_down));
    if (s->macvlan_mode) {
        json_t *m = json_pack("{s:I, s:I}", "mode", (json_int_t)s->macvlan_mode, "flags",
                              (json_int_t)s->macvlan_flags);
        if (m && s->has_macvlan_bcqlen)
            r = r ?: json_object_set_new(m, "bcQueueLen", json_integer(s->macvlan_bcqlen));
        if (m && s->has_macvlan_bc_cutoff)
            r = r ?: json_object_set_new(m, "bcCutoff", json_integer(s->macvlan_bc_cutoff));
        r = r ?: json_object_set_new(j, "macvlan", m);
    }
    r = r ?: json_object_set_new(o, "linkSettings", j);
    if (r < 0)
        json_decref(j);
    return r < 0 ? -ENOMEM : 0;
}

/* "ethtool": the NIC's ethtool state as the host had it, where it was read */
static int ethtool_to_json(const AttachedNic *n, json_t *o) {
    json_t *j;
    int r;

    if (!n->has_ethtool)
        return 0;
    r = ethtool_state_to_json(&n->ethtool, &j);
    return r < 0 ? r : json_object_set_new(o, "ethtool", j) < 0 ? -ENOMEM : 0;
}

/* "sysfs": its NAPI and queue settings as the host had them, where read */
static int sysfs_to_json(const AttachedNic *n, json_t *o) {
    json_t *j;
    int r;

    if (!n->has_sysfs)
        return 0;
    r = netdev_sysfs_to_json(&n->sysfs, &j);
    return r < 0 ? r : json_object_set_new(o, "sysfs", j) < 0 ? -ENOMEM : 0;
}

/* "rxnfc": its n-tuple rules and flow hash fields, where it has them */
static int rxnfc_to_json_of(const AttachedNic *n, json_t *o) {
    json_t *j;
    int r;

    if (!n->has_rxnfc)
        return 0;
    r = rxnfc_to_json(&n->rxnfc, &j);
    return r < 0 ? r : json_object_set_new(o, "rxnfc", j) < 0 ? -ENOMEM : 0;
}

static json_t *nic_to_json(const AttachedNic *n) {
    char mac[18], perm[18];
    json_t *o;

    mac_format(n->mac, mac, sizeof(mac));
    mac_format(n->perm_mac, perm, sizeof(perm));
    o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:o, s:o, s:s, s:I, s:I, s:i}", "unit",
                  n->unit, "hostName", n->host_name, "podName", n->pod_name, "pci", n->pci, "mac",
                  mac, "mtu", (int)n->mtu, "wasUp", n->was_up, "hostAddresses",
                  strv_to_json(n->host_addrs), "podAddresses", strv_to_json(n->pod_addrs),
                  "gateway", n->gateway, "table", (json_int_t)n->table, "rulePriority",
                  (json_int_t)n->rule_prio, "podMtu", (int)n->pod_mtu);
    /* for railgate before 2026-12-07 after a downgrade: it took a NIC not
     * "moved" for one never attached (CHECK failed, networkData left out);
     * nothing reads it now that the record is first written before the
     * moves (an older one then reads a killed ADD's NICs as moved) */
    if (o && json_object_set_new(o, "stage", json_string("moved")) < 0) {
        json_decref(o);
        return NULL;
    }
    if (o && n->altnames && json_object_set_new(o, "altnames", strv_to_json(n->altnames)) < 0) {
        json_decref(o);
        return NULL;
    }
    if (o && json_object_update_new(o, json_pack("{s:s, s:s, s:i, s:i, s:i, s:s, s:s}", "kind",
                                                 n->kind, "parent", n->parent, "hostIfindex",
                                                 n->host_ifindex, "peerIfindex", n->peer_ifindex,
                                                 "peerNsid", n->peer_nsid, "peerName", n->peer_name,
                                                 "permMac", perm)) < 0) {
        json_decref(o);
        return NULL;
    }
    if (o && (vf_to_json(n, o) < 0 || anchor_to_json(n, o) < 0 || rdma_to_json(n, o) < 0 ||
              settings_to_json(n, o) < 0 || ethtool_to_json(n, o) < 0 || sysfs_to_json(n, o) < 0 ||
              rxnfc_to_json_of(n, o) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *attachment_to_json(const Attachment *a) {
    json_t *nics = json_array();

    for (size_t i = 0; nics && i < a->n_nics; i++)
        json_array_append_new(nics, nic_to_json(&a->nics[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s?, s:o}", "bootId", a->boot_id,
                     "containerID", a->container_id, "ifname", a->ifname, "netns", a->netns,
                     "podNamespace", a->pod_ns, "podName", a->pod_name, "ipam", a->ipam, "ipamConf",
                     a->ipam_conf, "nics", nics);
}

static int copy_field(char *dst, size_t n, json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));

    if (!s || strlen(s) >= n)
        return -EBADMSG;
    strcpy(dst, s);
    return 0;
}

/* Append the strings of a JSON array (or of nothing) to *v. */
static int strv_from_json(json_t *a, char ***v) {
    json_t *s;
    size_t i;

    json_array_foreach(a, i, s) {
        if (!json_is_string(s) || strv_push(v, json_string_value(s)) < 0)
            return -EBADMSG;
    }
    return 0;
}

/* true, false, or absent (-1) */
static int switch_from_json(json_t *v, int *ret) {
    if (!v)
        *ret = -1;
    else if (json_is_boolean(v))
        *ret = json_is_true(v);
    else
        return -EBADMSG;
    return 0;
}

static int vf_state_from_json(json_t *o, VfState *v) {
    json_t *mac = json_object_get(o, "mac"), *ls = json_object_get(o, "linkState");

    *v = (VfState)VF_STATE_NONE;
    if (!json_is_object(o))
        return -EBADMSG;
    if (mac && mac_parse(json_string_value(mac), v->mac) < 0)
        return -EBADMSG;
    v->has_mac = mac;
    if (switch_from_json(json_object_get(o, "spoofChk"), &v->spoofchk) < 0 ||
        switch_from_json(json_object_get(o, "trust"), &v->trust) < 0)
        return -EBADMSG;
    for (size_t i = 0; ls && i < ELEMENTSOF(LINK_STATES); i++)
        if (streq_ptr(json_string_value(ls), LINK_STATES[i]))
            v->link_state = (int)i;
    return ls && v->link_state < 0 ? -EBADMSG : 0;
}

/* "vf": absent in records of other NICs (and in those written before VF
 * admin state was kept) */
static int vf_from_json(json_t *o, AttachedNic *n) {
    json_t *vf = json_object_get(o, "vf"), *index;
    int r;

    n->vf_set = n->vf_saved = (VfState)VF_STATE_NONE;
    if (!vf)
        return 0;
    index = json_object_get(vf, "index");
    if (!json_is_integer(index) || json_integer_value(index) < 0 ||
        json_integer_value(index) > 65535)
        return -EBADMSG;
    n->vf_index = (unsigned)json_integer_value(index);
    r = copy_field(n->vf_pf, sizeof(n->vf_pf), vf, "pf");
    r = r ?: vf_state_from_json(json_object_get(vf, "set"), &n->vf_set);
    r = r ?: vf_state_from_json(json_object_get(vf, "saved"), &n->vf_saved);
    return r < 0 || !n->vf_pf[0] ? -EBADMSG : 0;
}

/* "anchor": absent in records of other NICs (and in those written before
 * anchors); one that is not whole is refused */
static int anchor_from_json(json_t *o, AttachedNic *n) {
    json_t *an = json_object_get(o, "anchor"), *id, *ifindex;
    const char *kind, *proto;

    if (!an)
        return 0;
    id = json_object_get(an, "id");
    ifindex = json_object_get(an, "ifindex");
    kind = json_string_value(json_object_get(an, "kind"));
    proto = json_string_value(json_object_get(an, "protocol"));
    if (copy_field(n->anchor, sizeof(n->anchor), an, "name") < 0 ||
        !netlink_ifname_valid(n->anchor) || !streq_ptr(kind, "vlan") || !json_is_integer(id) ||
        json_integer_value(id) < 1 || json_integer_value(id) > 4094 || !json_is_integer(ifindex) ||
        json_integer_value(ifindex) < 0 || json_integer_value(ifindex) > INT32_MAX)
        return -EBADMSG;
    if (streq_ptr(proto, "802.1ad"))
        n->anchor_proto = ETH_P_8021AD;
    else if (streq_ptr(proto, "802.1Q"))
        n->anchor_proto = ETH_P_8021Q;
    else
        return -EBADMSG;
    n->anchor_vid = (uint16_t)json_integer_value(id);
    n->anchor_ifindex = (int)json_integer_value(ifindex);
    return 0;
}

/* "rdma", absent in a record of a NIC whose RDMA device stays (and in
 * records written before): one that is not whole is refused, as a record
 * that cannot find the device again */
static int rdma_from_json(json_t *o, AttachedNic *n) {
    json_t *j = json_object_get(o, "rdma"), *index;
    const char *guid;
    char *end = NULL;
    int r = 0;

    if (!j)
        return 0;
    index = json_object_get(j, "index");
    guid = json_string_value(json_object_get(j, "nodeGuid"));
    r = r ?: copy_field(n->rdma, sizeof(n->rdma), j, "name");
    r = r ?: copy_field(n->rdma_parent, sizeof(n->rdma_parent), j, "parent");
    if (r < 0 || !n->rdma[0] || !json_is_integer(index) || json_integer_value(index) < 0 ||
        json_integer_value(index) > UINT32_MAX || !guid || strlen(guid) != 16)
        return -EBADMSG;
    for (const char *c = guid; *c; c++)
        if (!isxdigit((unsigned char)*c))
            return -EBADMSG;
    errno = 0;
    n->rdma_guid = strtoull(guid, &end, 16);
    if (errno || !end || *end)
        return -EBADMSG;
    n->rdma_index = (uint32_t)json_integer_value(index);
    return 0;
}

/* An unsigned number of at most max, when v is there; -EBADMSG if it is
 * anything else. */
static int uint_from_json(json_t *v, uint32_t max, bool *ret_has, uint32_t *ret) {
    if (!v) {
        if (ret_has)
            *ret_has = false;
        return ret_has ? 0 : -EBADMSG;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return -EBADMSG;
    *ret = (uint32_t)json_integer_value(v);
    if (ret_has)
        *ret_has = true;
    return 0;
}

static int settings_from_json(json_t *o, AttachedNic *n) {
    json_t *j = json_object_get(o, "linkSettings"), *m, *bc, *cut;
    LinkSettings *s = &n->settings;
    uint32_t v = 0;
    int carrier, proto_down, r = 0;

    *s = (LinkSettings){.carrier = -1, .proto_down = -1};
    n->has_settings = j;
    if (!j)
        return 0; /* a record written before they were kept */
    if (!json_is_object(j))
        return -EBADMSG;
    r = r ?: uint_from_json(json_object_get(j, "flags"), UINT32_MAX, NULL, &s->flags);
    s->flags &= LINK_SETTABLE_FLAGS;
    r = r
            ?: uint_from_json(json_object_get(j, "txqueuelen"), UINT32_MAX, &s->has_txqlen,
                              &s->txqlen);
    r = r ?: uint_from_json(json_object_get(j, "group"), UINT32_MAX, &s->has_group, &s->group);
    r = r ?: uint_from_json(json_object_get(j, "linkMode"), UINT8_MAX, &s->has_linkmode, &v);
    s->linkmode = (uint8_t)v;
    r = r ?: uint_from_json(json_object_get(j, "gsoMaxSize"), UINT32_MAX, NULL, &s->gso_max_size);
    r = r ?: uint_from_json(json_object_get(j, "gsoMaxSegs"), UINT32_MAX, NULL, &s->gso_max_segs);
    r = r ?: uint_from_json(json_object_get(j, "groMaxSize"), UINT32_MAX, NULL, &s->gro_max_size);
    r = r
            ?: uint_from_json(json_object_get(j, "gsoIpv4MaxSize"), UINT32_MAX, NULL,
                              &s->gso_ipv4_max_size);
    r = r
            ?: uint_from_json(json_object_get(j, "groIpv4MaxSize"), UINT32_MAX, NULL,
                              &s->gro_ipv4_max_size);
    r = r
            ?: uint_from_json(json_object_get(j, "protoDownReason"), UINT32_MAX, NULL,
                              &s->proto_down_reason);
    r = r ?: switch_from_json(json_object_get(j, "carrier"), &carrier);
    r = r ?: switch_from_json(json_object_get(j, "protoDown"), &proto_down);
    if (r < 0)
        return -EBADMSG;
    s->carrier = (int8_t)carrier;
    s->proto_down = (int8_t)proto_down;
    bc = json_object_get(j, "broadcast");
    if (bc && mac_parse(json_string_value(bc), s->broadcast) < 0)
        return -EBADMSG;
    s->has_broadcast = bc;
    m = json_object_get(j, "macvlan");
    if (!m)
        return 0;
    cut = json_object_get(m, "bcCutoff");
    r = r ?: uint_from_json(json_object_get(m, "mode"), UINT32_MAX, NULL, &s->macvlan_mode);
    r = r ?: uint_from_json(json_object_get(m, "flags"), UINT16_MAX, NULL, &v);
    s->macvlan_flags = (uint16_t)v;
    r = r
            ?: uint_from_json(json_object_get(m, "bcQueueLen"), UINT32_MAX, &s->has_macvlan_bcqlen,
                              &s->macvlan_bcqlen);
    if (r < 0 || !s->macvlan_mode || (cut && !json_is_integer(cut)) ||
        (cut && (json_integer_value(cut) < INT32_MIN || json_integer_value(cut) > INT32_MAX)))
        return -EBADMSG;
    s->has_macvlan_bc_cutoff = cut;
    s->macvlan_bc_cutoff = cut ? (int32_t)json_integer_value(cut) : 0;
    return 0;
}

static int nic_from_json(json_t *o, AttachedNic *n) {
    const char *mac = json_string_value(json_object_get(o, "mac"));
    json_t *addrs = json_object_get(o, "hostAddresses"), *pods = json_object_get(o, "podAddresses");
    int r = 0;

    r = r ?: copy_field(n->unit, sizeof(n->unit), o, "unit");
    r = r ?: copy_field(n->host_name, sizeof(n->host_name), o, "hostName");
    r = r ?: copy_field(n->pod_name, sizeof(n->pod_name), o, "podName");
    r = r ?: copy_field(n->pci, sizeof(n->pci), o, "pci");
    r = r ?: copy_field(n->kind, sizeof(n->kind), o, "kind");
    r = r ?: copy_field(n->parent, sizeof(n->parent), o, "parent");
    r = r ?: copy_field(n->peer_name, sizeof(n->peer_name), o, "peerName");
    r = r ?: mac_parse(mac, n->mac);
    r = r ?: mac_parse(json_string_value(json_object_get(o, "permMac")), n->perm_mac);
    if (r < 0)
        return -EBADMSG;
    n->host_ifindex = (int)json_integer_value(json_object_get(o, "hostIfindex"));
    n->peer_ifindex = (int)json_integer_value(json_object_get(o, "peerIfindex"));
    n->peer_nsid = (int)json_integer_value(json_object_get(o, "peerNsid"));
    n->mtu = (unsigned)json_integer_value(json_object_get(o, "mtu"));
    n->was_up = json_is_true(json_object_get(o, "wasUp"));
    /* altnames: absent in records written before they were kept */
    if (strv_from_json(addrs, &n->host_addrs) < 0 || strv_from_json(pods, &n->pod_addrs) < 0 ||
        strv_from_json(json_object_get(o, "altnames"), &n->altnames) < 0)
        return -EBADMSG;
    r = copy_field(n->gateway, sizeof(n->gateway), o, "gateway");
    n->table = (uint32_t)json_integer_value(json_object_get(o, "table"));
    n->rule_prio = (uint32_t)json_integer_value(json_object_get(o, "rulePriority"));
    n->pod_mtu = (unsigned)json_integer_value(json_object_get(o, "podMtu"));
    r = r ?: vf_from_json(o, n);
    r = r ?: settings_from_json(o, n);
    if (r >= 0 && json_object_get(o, "ethtool")) {
        r = ethtool_state_from_json(json_object_get(o, "ethtool"), &n->ethtool, NULL);
        n->has_ethtool = r >= 0;
    }
    if (r >= 0 && json_object_get(o, "sysfs")) {
        r = netdev_sysfs_from_json(json_object_get(o, "sysfs"), &n->sysfs);
        n->has_sysfs = r >= 0;
    }
    if (r >= 0 && json_object_get(o, "rxnfc")) {
        r = rxnfc_from_json(json_object_get(o, "rxnfc"), &n->rxnfc);
        n->has_rxnfc = r >= 0;
    }
    r = r ?: rdma_from_json(o, n);
    return r ?: anchor_from_json(o, n);
}

static int attachment_from_json(json_t *j, Attachment *a) {
    json_t *nics = json_object_get(j, "nics"), *v;
    size_t i;
    int r = 0;

    r = r ?: copy_field(a->boot_id, sizeof(a->boot_id), j, "bootId");
    r = r ?: copy_field(a->container_id, sizeof(a->container_id), j, "containerID");
    r = r ?: copy_field(a->ifname, sizeof(a->ifname), j, "ifname");
    r = r ?: copy_field(a->netns, sizeof(a->netns), j, "netns");
    r = r ?: copy_field(a->pod_ns, sizeof(a->pod_ns), j, "podNamespace");
    r = r ?: copy_field(a->pod_name, sizeof(a->pod_name), j, "podName");
    if (r < 0 || !json_is_array(nics) || json_array_size(nics) > ATTACHMENT_MAX_NICS)
        return -EBADMSG;
    a->ipam = json_is_true(json_object_get(j, "ipam"));
    v = json_object_get(j, "ipamConf");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return -EBADMSG;
        a->ipam_conf = strdup(json_string_value(v));
        if (!a->ipam_conf)
            return -ENOMEM;
    }
    json_array_foreach(nics, i, v) {
        AttachedNic *n = attachment_add_nic(a);
        if (!n)
            return -ENOMEM;
        r = nic_from_json(v, n);
        if (r < 0)
            return r;
    }
    return 0;
}

int attachment_to_text(const Attachment *a, char **ret) {
    json_auto_t *j = attachment_to_json(a);
    char *text;

    if (!j || !(text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
        return -ENOMEM;
    *ret = text;
    return 0;
}

int attachment_from_text(const char *text, Attachment **ret) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    json_auto_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    int r;

    if (!j || !json_is_object(j))
        return -EBADMSG;
    a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    r = attachment_from_json(j, a);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(a);
    return 0;
}
