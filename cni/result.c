/* SPDX-License-Identifier: Apache-2.0 */
/* The ADD result: prevResult with the rails appended, in the requested version's shape. */
#include <stdio.h>

#include "cidr.h"
#include "result.h"

static json_t *interface_json(const CniContext *c, const AttachedNic *n, bool v11) {
    char mac[18];
    json_t *o;

    snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", n->mac[0], n->mac[1], n->mac[2],
             n->mac[3], n->mac[4], n->mac[5]);
    o = json_pack("{s:s, s:s, s:s}", "name", n->pod_name, "mac", mac, "sandbox", c->env->netns);
    if (o && v11 && n->pod_mtu)
        json_object_set_new(o, "mtu", json_integer(n->pod_mtu));
    if (o && v11 && n->pci[0])
        json_object_set_new(o, "pciID", json_string(n->pci));
    return o;
}

static void add_ips(json_t *ips, const AttachedNic *n, size_t index, bool v04) {
    for (char **a = n->pod_addrs; a && *a; a++) {
        Cidr cidr;
        json_t *o = json_pack("{s:s, s:I}", "address", *a, "interface", (json_int_t)index);
        if (!o)
            continue;
        if (n->gateway[0])
            json_object_set_new(o, "gateway", json_string(n->gateway));
        if (v04 && cidr_parse(*a, false, &cidr) >= 0)
            json_object_set_new(o, "version", json_string(cidr.family == AF_INET ? "4" : "6"));
        json_array_append_new(ips, o);
    }
}

/* Routes live in the rail's own table: only 1.1 can say so, so older
 * results carry none rather than ones that read as main-table routes. */
static void add_routes(json_t *routes, const CniContext *c, const AttachedNic *n) {
    for (char **a = n->pod_addrs; a && *a && n->gateway[0]; a++) {
        Cidr cidr;
        if (cidr_parse(*a, false, &cidr) < 0)
            continue;
        json_array_append_new(routes, json_pack("{s:s, s:s, s:I}", "dst",
                                                cidr.family == AF_INET ? "0.0.0.0/0" : "::/0", "gw",
                                                n->gateway, "table", (json_int_t)n->table));
    }
}

static json_t *array_member(json_t *o, const char *key) {
    json_t *a = json_object_get(o, key);

    if (json_is_array(a))
        return a;
    a = json_array();
    json_object_set_new(o, key, a);
    return a;
}

json_t *result_build(const CniContext *c, const Attachment *a) {
    const char *v = c->conf->cni_version;
    bool v11 = cni_version_at_least(v, "1.1.0"), v04 = !cni_version_at_least(v, "1.0.0");
    json_t *r = c->conf->prev_result ? json_deep_copy(c->conf->prev_result) : json_object();

    if (!r)
        return NULL;
    json_object_set_new(r, "cniVersion", json_string(v));
    json_t *ifs = array_member(r, "interfaces"), *ips = array_member(r, "ips");
    json_t *routes = v11 ? array_member(r, "routes") : NULL;
    for (size_t i = 0; a && i < a->n_nics; i++) {
        size_t index = json_array_size(ifs);
        json_array_append_new(ifs, interface_json(c, &a->nics[i], v11));
        add_ips(ips, &a->nics[i], index, v04);
        if (routes)
            add_routes(routes, c, &a->nics[i]);
    }
    return r;
}
