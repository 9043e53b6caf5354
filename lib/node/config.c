/* SPDX-License-Identifier: Apache-2.0 */
/* The node config: read node.json, validate every key, build a NodeConfig. */
#include "config.h"

#include "fileio.h"
#include "jsonread.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <linux/if_link.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>

#include "cidr.h"
#include "listen.h"
#include "strv.h"

#define GPU_MINOR_MAX ((1 << 20) - 1) /* the kernel's MINORBITS */
#define NUMA_NODE_MAX 1023            /* the kernel's largest MAX_NUMNODES */
#define NAME_MAX_LEN 63               /* simulated GPU names, UUIDs, RDMA devices */

typedef struct Parser {
    JsonReader jr; /* the file's name and the error to fill */
    NodeConfig *c; /* being filled; freed whole on failure */
} Parser;

/* ---- top level ---------------------------------------------------------- */

static const struct RootString {
    const char *key;
    const Check *check;
    const char *def;
    size_t offset;
} ROOT_STRINGS[] = {
    {"domain", &CHECK_DOMAIN, "railgate.io", offsetof(NodeConfig, domain)},
    {"kubeletDir", &CHECK_PATH, "/var/lib/kubelet", offsetof(NodeConfig, kubelet_dir)},
    {"stateDir", &CHECK_PATH, "/var/lib/railgate", offsetof(NodeConfig, state_dir)},
    {"logFile", &CHECK_PATH, "/var/log/railgate-cni.log", offsetof(NodeConfig, log_file)},
    {"sysfsRoot", &CHECK_PATH, "/sys", offsetof(NodeConfig, sysfs_root)},
    {"procRoot", &CHECK_PATH, "/proc", offsetof(NodeConfig, proc_root)},
    {"devRoot", &CHECK_PATH_OR_EMPTY, "", offsetof(NodeConfig, dev_root)},
    {"cdiKind", &CHECK_CDI_KIND, NULL, offsetof(NodeConfig, cdi_kind)},
    {"cdiDir", &CHECK_PATH, "/var/run/cdi", offsetof(NodeConfig, cdi_dir)},
};

static const EnumName AGENT_MODE_NAMES[] = {
    {"devicePlugin", AGENT_MODE_DEVICE_PLUGIN},
    {"dra", AGENT_MODE_DRA},
    {NULL, 0},
};

static int parse_mode(const Parser *p, json_t *root) {
    int mode = AGENT_MODE_DEVICE_PLUGIN;
    int r = jr_get_enum(&p->jr, root, "$", "mode", AGENT_MODE_NAMES, &mode);

    if (r < 0)
        return r;
    p->c->mode = (AgentMode)mode;
    return 0;
}

static int parse_root_strings(const Parser *p, json_t *root) {
    for (size_t i = 0; i < ELEMENTSOF(ROOT_STRINGS); i++) {
        const struct RootString *s = &ROOT_STRINGS[i];
        int r = jr_set_string(&p->jr, root, "$", s->key, s->check, s->def,
                              (char **)((char *)p->c + s->offset));
        if (r < 0)
            return r;
    }
    return 0;
}

static const EnumName DISTANCE_NAMES[] = {
    {"switch", PAIR_DISTANCE_SWITCH},
    {"hostbridge", PAIR_DISTANCE_HOSTBRIDGE},
    {"numa", PAIR_DISTANCE_NUMA},
    {"system", PAIR_DISTANCE_SYSTEM},
    {NULL, 0},
};

static int parse_discovery(const Parser *p, json_t *root) {
    static const char *const keys[] = {"enabled", "topologyXml", "maxDistance", "nicExclude", NULL};
    DiscoveryConfig *d = &p->c->discovery;
    const char *path = "$.discovery";
    int distance = PAIR_DISTANCE_SWITCH;
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, root, "$", "discovery", &o);

    d->max_distance = PAIR_DISTANCE_SWITCH;
    if (r <= 0)
        return r;
    r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0)
        r = jr_get_bool(&p->jr, o, path, "enabled", &d->enabled);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, path, "topologyXml", &CHECK_PATH, NULL, &d->topology_xml);
    if (r >= 0)
        r = jr_get_enum(&p->jr, o, path, "maxDistance", DISTANCE_NAMES, &distance);
    if (r >= 0)
        r = jr_get_strv(&p->jr, o, path, "nicExclude", &CHECK_NETDEV, CONFIG_MAX_LIST,
                        &d->nic_exclude, &d->n_nic_exclude);
    d->max_distance = (PairDistance)distance;
    return r < 0 ? r : 0;
}

/* ---- timeouts ----------------------------------------------------------- */

/* The CNI's wait on the agent covers the agent's wait on kubelet, so that a
 * kubelet late to answer is reported as that, not as the agent away. */
static int parse_agent_timeout(const Parser *p, json_t *o, const char *path) {
    TimeoutConfig *t = &p->c->timeouts;
    long long v = 0;
    int r;

    t->agent_s = t->pod_resources_s + CONFIG_AGENT_TIMEOUT_MARGIN_S;
    r = o ? jr_get_int(&p->jr, o, path, "agentSeconds", 1, CONFIG_MAX_AGENT_TIMEOUT_S, &v) : 0;
    if (r <= 0)
        return r;
    if ((unsigned)v <= t->pod_resources_s) {
        JPath at = jpath_key(path, "agentSeconds");
        return jr_fail(&p->jr, at.s,
                       "%lld s is no longer than podResourcesSeconds (%u s): the node agent "
                       "waits that long for kubelet before it answers",
                       v, t->pod_resources_s);
    }
    t->agent_s = (unsigned)v;
    return 0;
}

static int parse_timeouts(const Parser *p, json_t *root) {
    static const char *const keys[] = {"podResourcesSeconds", "agentSeconds", "ipamSeconds",
                                       "netnsTeardownSeconds", NULL};
    TimeoutConfig *t = &p->c->timeouts;
    const char *path = "$.timeouts";
    long long v = 0;
    json_t *o = NULL;
    int r;

    t->pod_resources_s = CONFIG_DEFAULT_POD_RESOURCES_TIMEOUT_S;
    t->ipam_s = CONFIG_DEFAULT_IPAM_TIMEOUT_S;
    t->netns_teardown_s = CONFIG_DEFAULT_NETNS_TEARDOWN_TIMEOUT_S;
    r = jr_get_object(&p->jr, root, "$", "timeouts", &o);
    if (r > 0)
        r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0 && o &&
        (r = jr_get_int(&p->jr, o, path, "podResourcesSeconds", 1, CONFIG_MAX_TIMEOUT_S, &v)) > 0)
        t->pod_resources_s = (unsigned)v;
    if (r >= 0 && o &&
        (r = jr_get_int(&p->jr, o, path, "ipamSeconds", 1, CONFIG_MAX_TIMEOUT_S, &v)) > 0)
        t->ipam_s = (unsigned)v;
    if (r >= 0 && o &&
        (r = jr_get_int(&p->jr, o, path, "netnsTeardownSeconds", 1, CONFIG_MAX_TIMEOUT_S, &v)) > 0)
        t->netns_teardown_s = (unsigned)v;
    if (r >= 0)
        r = parse_agent_timeout(p, o, path);
    return r < 0 ? r : 0;
}

/* ---- metrics ------------------------------------------------------------ */

static const Check CHECK_LISTEN = {
    listen_address_valid,
    "must be \"unix:\" and an absolute path, or an IPv4 address or an IPv6 address "
    "in brackets, \":\" and a port from 1 to 65535 (\"127.0.0.1:9402\", "
    "\"[::]:9402\", \"unix:/run/railgate/metrics.sock\")"};

static const EnumName SOCKET_MODES[] = {
    {"0600", 0600},
    {"0660", 0660},
    {NULL, 0},
};

/* socketMode and socketGroup are of a unix socket's file. */
static int parse_metrics_socket(const Parser *p, json_t *o, const char *path) {
    MetricsConfig *m = &p->c->metrics;
    bool is_unix = strncmp(m->listen, LISTEN_UNIX_PREFIX, strlen(LISTEN_UNIX_PREFIX)) == 0;
    int mode = 0600;
    int r;

    if (!is_unix && (json_object_get(o, "socketMode") || json_object_get(o, "socketGroup"))) {
        JPath at = jpath_key(path, json_object_get(o, "socketMode") ? "socketMode" : "socketGroup");
        return jr_fail(&p->jr, at.s, "only for a \"unix:\" listen address");
    }
    r = jr_get_enum(&p->jr, o, path, "socketMode", SOCKET_MODES, &mode);
    if (r >= 0)
        r = jr_get_int(&p->jr, o, path, "socketGroup", 0, INT32_MAX - 1, &m->socket_group);
    m->socket_mode = (unsigned)mode;
    return r < 0 ? r : 0;
}

/* How many connections, and for how long: maxConnectionsPerClient is
 * checked against maxConnections as it was given or defaulted. */
static int parse_metrics_limits(const Parser *p, json_t *o, const char *path) {
    MetricsConfig *m = &p->c->metrics;
    long long v = 0;
    int r;

    r = jr_get_int(&p->jr, o, path, "maxConnections", 1, CONFIG_MAX_METRICS_CONNECTIONS, &v);
    if (r > 0)
        m->max_connections = (unsigned)v;
    if (m->max_per_client > m->max_connections)
        m->max_per_client = m->max_connections;
    if (r >= 0 && (r = jr_get_int(&p->jr, o, path, "maxConnectionsPerClient", 1,
                                  CONFIG_MAX_METRICS_CONNECTIONS, &v)) > 0) {
        if ((unsigned)v > m->max_connections)
            return jr_fail(&p->jr, jpath_key(path, "maxConnectionsPerClient").s,
                           "must be at most maxConnections (%u)", m->max_connections);
        m->max_per_client = (unsigned)v;
    }
    if (r >= 0 &&
        (r = jr_get_int(&p->jr, o, path, "timeoutSeconds", 1, CONFIG_MAX_TIMEOUT_S, &v)) > 0)
        m->timeout_s = (unsigned)v;
    if (r >= 0 &&
        (r = jr_get_int(&p->jr, o, path, "deadlineSeconds", 1, CONFIG_MAX_TIMEOUT_S, &v)) > 0)
        m->deadline_s = (unsigned)v;
    return r < 0 ? r : 0;
}

static int parse_metrics(const Parser *p, json_t *root) {
    static const char *const keys[] = {"listen",
                                       "socketMode",
                                       "socketGroup",
                                       "maxConnections",
                                       "maxConnectionsPerClient",
                                       "timeoutSeconds",
                                       "deadlineSeconds",
                                       NULL};
    MetricsConfig *m = &p->c->metrics;
    const char *path = "$.metrics";
    json_t *o = NULL;
    int r;

    m->socket_mode = 0600;
    m->socket_group = -1;
    m->max_connections = CONFIG_DEFAULT_METRICS_CONNECTIONS;
    m->max_per_client = CONFIG_DEFAULT_METRICS_PER_CLIENT;
    m->timeout_s = CONFIG_DEFAULT_METRICS_TIMEOUT_S;
    m->deadline_s = CONFIG_DEFAULT_METRICS_DEADLINE_S;
    r = jr_get_object(&p->jr, root, "$", "metrics", &o);
    if (r <= 0)
        return r;
    r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0 && !json_object_get(o, "listen"))
        r = jr_missing(&p->jr, path, "listen");
    if (r >= 0)
        r = jr_set_string(&p->jr, o, path, "listen", &CHECK_LISTEN, NULL, &m->listen);
    if (r >= 0)
        r = parse_metrics_socket(p, o, path);
    if (r >= 0)
        r = parse_metrics_limits(p, o, path);
    return r < 0 ? r : 0;
}

/* ---- rdma --------------------------------------------------------------- */

static int parse_rdma(const Parser *p, json_t *root) {
    static const char *const keys[] = {"umad", "gdrcopy", NULL};
    RdmaConfig *d = &p->c->rdma;
    const char *path = "$.rdma";
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, root, "$", "rdma", &o);

    if (r <= 0)
        return r;
    r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0)
        r = jr_get_bool(&p->jr, o, path, "umad", &d->umad);
    if (r >= 0)
        r = jr_get_bool(&p->jr, o, path, "gdrcopy", &d->gdrcopy);
    return r < 0 ? r : 0;
}

/* ---- rails -------------------------------------------------------------- */

static int parse_gpu(const Parser *p, json_t *rail, const char *path, GpuConfig *g) {
    static const char *const keys[] = {"pci", "simulated", "uuid", "minor", "devices", NULL};
    JPath at = jpath_key(path, "gpu");
    long long minor = 0;
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, rail, path, "gpu", &o);

    if (r <= 0)
        return r;
    g->present = true;
    r = jr_check_keys(&p->jr, o, at.s, keys);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "pci", &CHECK_PCI, NULL, &g->pci);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "simulated", &CHECK_TOKEN, NULL, &g->simulated);
    if (r >= 0 && !g->pci == !g->simulated)
        return jr_fail(&p->jr, at.s, "exactly one of \"pci\" and \"simulated\"");
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "uuid", &CHECK_TOKEN, NULL, &g->uuid);
    if (r >= 0 && (r = jr_get_int(&p->jr, o, at.s, "minor", 0, GPU_MINOR_MAX, &minor)) > 0)
        g->minor = (int)minor;
    if (r >= 0)
        r = jr_get_strv(&p->jr, o, at.s, "devices", &CHECK_PATH, CONFIG_MAX_LIST, &g->devices,
                        &g->n_devices);
    return r < 0 ? r : 0;
}

static int parse_nic_units(const Parser *p, json_t *o, const char *path, NicConfig *n) {
    JPath at = jpath_key(path, "units");
    long long units = 0;
    int r = jr_get_bool(&p->jr, o, path, "vf", &n->vf);

    if (r < 0)
        return r;
    r = jr_get_int(&p->jr, o, path, "units", 1, CONFIG_MAX_UNITS_PER_RAIL, &units);
    if (r <= 0)
        return r;
    /* a PF is one device: only VFs can be handed to several pods */
    if (units > 1 && !n->vf)
        return jr_fail(&p->jr, at.s, "more than one unit needs \"vf\": true");
    n->units = (unsigned)units;
    return 0;
}

static const EnumName VF_MAC_NAMES[] = {
    {"pin", true},
    {"keep", false},
    {NULL, 0},
};

static const EnumName VF_LINK_STATE_NAMES[] = {
    {"auto", IFLA_VF_LINK_STATE_AUTO},
    {"enable", IFLA_VF_LINK_STATE_ENABLE},
    {"disable", IFLA_VF_LINK_STATE_DISABLE},
    {"keep", CONFIG_VF_KEEP},
    {NULL, 0},
};

/* true, false, or "keep" (CONFIG_VF_KEEP) */
static int get_vf_switch(const Parser *p, json_t *o, const char *path, const char *key, int *ret) {
    json_t *v = json_object_get(o, key);

    if (!v)
        return 0;
    if (json_is_boolean(v))
        *ret = json_is_true(v);
    else if (json_is_string(v) && streq(json_string_value(v), "keep"))
        *ret = CONFIG_VF_KEEP;
    else
        return jr_fail(&p->jr, jpath_key(path, key).s, "must be true, false or \"keep\"");
    return 1;
}

static int parse_vf_config(const Parser *p, json_t *nic, const char *path, NicConfig *n) {
    static const char *const keys[] = {"mac", "spoofChk", "trust", "linkState", NULL};
    JPath at = jpath_key(path, "vfConfig");
    VfConfig *v = &n->vf_config;
    int pin = v->pin_mac;
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, nic, path, "vfConfig", &o);

    if (r <= 0)
        return r;
    if (!n->vf)
        return jr_fail(&p->jr, at.s, "only with \"vf\": true (a PF's own state is not set)");
    r = jr_check_keys(&p->jr, o, at.s, keys);
    if (r >= 0)
        r = jr_get_enum(&p->jr, o, at.s, "mac", VF_MAC_NAMES, &pin);
    if (r >= 0)
        r = get_vf_switch(p, o, at.s, "spoofChk", &v->spoofchk);
    if (r >= 0)
        r = get_vf_switch(p, o, at.s, "trust", &v->trust);
    if (r >= 0)
        r = jr_get_enum(&p->jr, o, at.s, "linkState", VF_LINK_STATE_NAMES, &v->link_state);
    v->pin_mac = pin;
    return r < 0 ? r : 0;
}

static int parse_nic(const Parser *p, json_t *rail, const char *path, NicConfig *n) {
    static const char *const keys[] = {"name", "pci", "vf", "units", "rdma", "vfConfig", NULL};
    JPath at = jpath_key(path, "nic");
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, rail, path, "nic", &o);

    if (r <= 0)
        return r;
    n->present = true;
    r = jr_check_keys(&p->jr, o, at.s, keys);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "name", &CHECK_NETDEV, NULL, &n->name);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "pci", &CHECK_PCI, NULL, &n->pci);
    if (r >= 0 && !n->name == !n->pci)
        return jr_fail(&p->jr, at.s, "exactly one of \"name\" and \"pci\"");
    if (r >= 0)
        r = parse_nic_units(p, o, at.s, n);
    if (r >= 0)
        r = jr_set_string(&p->jr, o, at.s, "rdma", &CHECK_TOKEN, NULL, &n->rdma);
    if (r >= 0)
        r = parse_vf_config(p, o, at.s, n);
    return r < 0 ? r : 0;
}

static int parse_addresses(const Parser *p, json_t *o, const char *path, RailConfig *rc) {
    bool one = json_object_get(o, "address"), many = json_object_get(o, "addresses");
    JPath at = jpath_key(path, one ? "address" : "addresses");
    const char *s = NULL;
    int r;

    if (one && many)
        return jr_fail(&p->jr, path, "only one of \"address\" and \"addresses\"");
    if (!one && !many)
        return 0;
    if (rc->address_mode != ADDRESS_MODE_STATIC)
        return jr_fail(&p->jr, at.s, "only allowed with \"addressing\": \"static\"");
    if (many)
        r = jr_get_strv(&p->jr, o, path, "addresses", &CHECK_CIDR, CONFIG_MAX_UNITS_PER_RAIL,
                        &rc->addresses, &rc->n_addresses);
    else if ((r = jr_get_string(&p->jr, o, path, "address", &CHECK_CIDR, &s)) > 0) {
        if (strv_push(&rc->addresses, s) < 0)
            return jr_oom(&p->jr);
        rc->n_addresses = 1;
    }
    if (r < 0)
        return r;
    /* unit j gets addresses[j]: a unit without one would come up unaddressed */
    if (rc->n_addresses != rc->nic.units)
        return jr_fail(&p->jr, at.s, "%zu address(es) for %u unit(s): give exactly one per unit",
                       rc->n_addresses, rc->nic.units);
    return 0;
}

static int parse_gateway(const Parser *p, json_t *o, const char *path, RailConfig *rc) {
    JPath at = jpath_key(path, "gateway");
    const char *gw = NULL;
    int r = jr_get_string(&p->jr, o, path, "gateway", &CHECK_IP, &gw);

    if (r <= 0)
        return r;
    for (size_t i = 0; i < rc->n_addresses; i++) {
        Cidr a;

        if (cidr_parse(rc->addresses[i], false, &a) >= 0 && a.family != ip_family(gw))
            return jr_fail(&p->jr, at.s, "must be of the same address family as \"%s\"",
                           rc->addresses[i]);
    }
    rc->gateway = strdup(gw);
    return rc->gateway ? 0 : jr_oom(&p->jr);
}

static const EnumName ADDRESSING_NAMES[] = {
    {"static", ADDRESS_MODE_STATIC},
    {"ipam", ADDRESS_MODE_IPAM},
    {"keep", ADDRESS_MODE_KEEP},
    {NULL, 0},
};

static int parse_rail_numbers(const Parser *p, json_t *o, const char *path, RailConfig *rc) {
    JPath at = jpath_key(path, "mtu");
    long long v = 0;
    int mode = ADDRESS_MODE_STATIC;
    int r = jr_get_int(&p->jr, o, path, "numa", 0, NUMA_NODE_MAX, &v);

    if (r > 0)
        rc->numa = (int)v;
    if (r >= 0 && (r = jr_get_int(&p->jr, o, path, "mtu", 0, 65535, &v)) > 0) {
        /* 68 is the IPv4 minimum; 0 means "leave the NIC's MTU alone" */
        if (v > 0 && v < 68)
            return jr_fail(&p->jr, at.s, "must be 0 (leave as is) or from 68 to 65535");
        rc->mtu = (unsigned)v;
    }
    if (r >= 0)
        r = jr_get_enum(&p->jr, o, path, "addressing", ADDRESSING_NAMES, &mode);
    rc->address_mode = (AddressMode)mode;
    return r < 0 ? r : 0;
}

static int parse_rail(const Parser *p, json_t *o, const char *path, RailConfig *rc) {
    static const char *const keys[] = {"index",      "gpu",       "nic",     "numa",    "mtu",
                                       "addressing", "addresses", "address", "gateway", NULL};
    long long index = 0;
    int r;

    rc->gpu.minor = -1;
    rc->numa = -1;
    rc->nic.units = 1;
    /* what users of SR-IOV CNI expect of a VF in a pod: a MAC the pod
     * cannot change, no spoofed source, no trust, the PF's link state */
    rc->nic.vf_config = (VfConfig){
        .pin_mac = true, .spoofchk = 1, .trust = 0, .link_state = IFLA_VF_LINK_STATE_AUTO};
    if (!json_is_object(o))
        return jr_fail(&p->jr, path, "must be an object");
    r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0 && (r = jr_get_int(&p->jr, o, path, "index", 0, CONFIG_MAX_RAILS - 1, &index)) == 0)
        return jr_missing(&p->jr, path, "index");
    if (r < 0)
        return r;
    rc->index = (unsigned)index;
    r = parse_gpu(p, o, path, &rc->gpu);
    if (r >= 0)
        r = parse_nic(p, o, path, &rc->nic);
    if (r >= 0 && !rc->nic.present && !p->c->discovery.enabled)
        return jr_fail(&p->jr, jpath_key(path, "nic").s, "is required when discovery is disabled");
    if (r >= 0)
        r = parse_rail_numbers(p, o, path, rc);
    if (r >= 0)
        r = parse_addresses(p, o, path, rc);
    if (r >= 0)
        r = parse_gateway(p, o, path, rc);
    return r;
}

static bool same(const char *a, const char *b) {
    return a && b && streq(a, b);
}

/* Two rails on one device would hand it to two pods, maybe of two tenants. */
static int check_rail_devices(const Parser *p, const RailConfig *rc, const RailConfig *o,
                              const char *path) {
    const NicConfig *n = &rc->nic, *m = &o->nic;
    const GpuConfig *g = &rc->gpu, *h = &o->gpu;

    if (same(n->name, m->name) || same(n->pci, m->pci))
        return jr_fail(&p->jr, jpath_key(path, "nic").s, "NIC \"%s\" is already rail %u",
                       n->name ? n->name : n->pci, o->index);
    if (same(g->pci, h->pci) || same(g->simulated, h->simulated))
        return jr_fail(&p->jr, jpath_key(path, "gpu").s, "GPU \"%s\" is already rail %u",
                       g->pci ? g->pci : g->simulated, o->index);
    return 0;
}

static int check_rail_unique(const Parser *p, size_t i, const char *path) {
    const RailConfig *rc = &p->c->rails[i];
    const DiscoveryConfig *d = &p->c->discovery;
    int r;

    for (size_t j = 0; j < i; j++) {
        if (p->c->rails[j].index == rc->index)
            return jr_fail(&p->jr, jpath_key(path, "index").s,
                           "rail %u is listed twice (also $.rails[%zu])", rc->index, j);
        r = check_rail_devices(p, rc, &p->c->rails[j], path);
        if (r < 0)
            return r;
    }
    /* naming a NIC and excluding it is a contradiction; refuse to guess */
    if (rc->nic.name && strv_contains(d->nic_exclude, rc->nic.name))
        return jr_fail(&p->jr, jpath_key(path, "nic.name").s, "\"%s\" is in $.discovery.nicExclude",
                       rc->nic.name);
    return 0;
}

static int rail_cmp(const void *a, const void *b) {
    const RailConfig *x = a, *y = b;

    return x->index < y->index ? -1 : x->index > y->index;
}

static int parse_rails(const Parser *p, json_t *root) {
    NodeConfig *c = p->c;
    json_t *a = NULL;
    int r = jr_get_array(&p->jr, root, "$", "rails", CONFIG_MAX_RAILS, &a);

    if (r <= 0 || json_array_size(a) == 0)
        return r < 0 ? r : 0;
    c->rails = calloc(json_array_size(a), sizeof(RailConfig));
    if (!c->rails)
        return jr_oom(&p->jr);
    c->n_rails = json_array_size(a);
    for (size_t i = 0; i < c->n_rails; i++) {
        JPath at = jpath_index("$.rails", i);

        r = parse_rail(p, json_array_get(a, i), at.s, &c->rails[i]);
        if (r >= 0)
            r = check_rail_unique(p, i, at.s);
        if (r < 0)
            return r;
    }
    qsort(c->rails, c->n_rails, sizeof(RailConfig), rail_cmp);
    return 0;
}

/* ---- tenants ------------------------------------------------------------ */

static int parse_resource(const Parser *p, json_t *o, const char *path, TenantConfig *t) {
    int r = jr_set_string(&p->jr, o, path, "resource", &CHECK_RESOURCE, NULL, &t->resource);

    if (r != 0)
        return r < 0 ? r : 0;
    /* domain and name are validated, so the default is a valid resource name */
    if (asprintf(&t->resource, "%s/%s", p->c->domain, t->name) < 0) {
        t->resource = NULL;
        return jr_oom(&p->jr);
    }
    return 0;
}

static int parse_tenant_rail(const Parser *p, json_t *v, const char *path, TenantConfig *t) {
    unsigned k;

    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= CONFIG_MAX_RAILS)
        return jr_fail(&p->jr, path, "must be a rail index from 0 to %d", CONFIG_MAX_RAILS - 1);
    k = (unsigned)json_integer_value(v);
    for (size_t j = 0; j < t->n_rails; j++)
        if (t->rails[j] == k)
            return jr_fail(&p->jr, path, "rail %u is listed twice", k);
    /* without discovery, rails[] is all there is: a typo would sell nothing */
    if (!p->c->discovery.enabled && !config_find_rail(p->c, k))
        return jr_fail(&p->jr, path, "rail %u is not in $.rails (and discovery is disabled)", k);
    t->rails[t->n_rails++] = k;
    return 0;
}

static int parse_tenant_rails(const Parser *p, json_t *o, const char *path, TenantConfig *t) {
    JPath at = jpath_key(path, "rails");
    json_t *a = NULL;
    int r = jr_get_array(&p->jr, o, path, "rails", CONFIG_MAX_RAILS, &a);

    if (r == 0)
        return jr_missing(&p->jr, path, "rails");
    if (r < 0)
        return r;
    if (json_array_size(a) == 0)
        return jr_fail(&p->jr, at.s, "must list at least one rail");
    t->rails = calloc(json_array_size(a), sizeof(unsigned));
    if (!t->rails)
        return jr_oom(&p->jr);
    for (size_t i = 0; i < json_array_size(a); i++) {
        JPath el = jpath_index(at.s, i);

        r = parse_tenant_rail(p, json_array_get(a, i), el.s, t);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Rail k routes in table + k: that must not wrap, nor hit the kernel's own tables. */
static int check_vrf_tables(const Parser *p, const char *path, const TenantConfig *t) {
    JPath at = jpath_key(path, "table");

    for (size_t i = 0; i < t->n_rails; i++) {
        uint64_t id = (uint64_t)t->vrf.table + t->rails[i];

        if (id > UINT32_MAX)
            return jr_fail(&p->jr, at.s, "table %" PRIu32 " + rail %u does not fit in 32 bits",
                           t->vrf.table, t->rails[i]);
        if (id >= 253 && id <= 255)
            return jr_fail(&p->jr, at.s,
                           "table %" PRIu32 " + rail %u is %" PRIu64
                           ", a table the kernel reserves (253 default, 254 main, 255 local)",
                           t->vrf.table, t->rails[i], id);
    }
    return 0;
}

static int default_vrf_name(const Parser *p, TenantConfig *t) {
    char name[16]; /* IFNAMSIZ */
    size_t n;

    snprintf(name, sizeof(name), "vrf-%s", t->name);
    /* a cut tenant name may end in '-'; drop it so the name reads whole */
    for (n = strlen(name); n > 4 && name[n - 1] == '-'; n--)
        name[n - 1] = 0;
    t->vrf.name = strdup(name);
    return t->vrf.name ? 0 : jr_oom(&p->jr);
}

static const EnumName MODE_NAMES[] = {
    {"table", ROUTING_MODE_TABLE},
    {"vrf", ROUTING_MODE_VRF},
    {NULL, 0},
};

static int parse_vrf(const Parser *p, json_t *tenant, const char *path, TenantConfig *t) {
    static const char *const keys[] = {"name", "table", "prefixes", "mode", NULL};
    JPath at = jpath_key(path, "vrf");
    int mode = ROUTING_MODE_TABLE;
    long long table = 0;
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, tenant, path, "vrf", &o);

    if (r == 0)
        return jr_missing(&p->jr, path, "vrf");
    if (r >= 0)
        r = jr_check_keys(&p->jr, o, at.s, keys);
    if (r >= 0 &&
        (r = jr_set_string(&p->jr, o, at.s, "name", &CHECK_NETDEV, NULL, &t->vrf.name)) == 0)
        r = default_vrf_name(p, t);
    if (r >= 0 && (r = jr_get_int(&p->jr, o, at.s, "table", 1, UINT32_MAX, &table)) == 0)
        return jr_missing(&p->jr, at.s, "table");
    if (r < 0)
        return r;
    t->vrf.table = (uint32_t)table;
    r = jr_get_strv(&p->jr, o, at.s, "prefixes", &CHECK_PREFIX, CONFIG_MAX_LIST, &t->vrf.prefixes,
                    &t->vrf.n_prefixes);
    if (r >= 0)
        r = jr_get_enum(&p->jr, o, at.s, "mode", MODE_NAMES, &mode);
    t->vrf.mode = (RoutingMode)mode;
    return r < 0 ? r : check_vrf_tables(p, at.s, t);
}

/* Plugins that are not IPAM plugins, railgate first: naming one as IPAM would
 * run a plugin that moves host devices (host-device, sriov) or ourselves. */
static const char *const NOT_IPAM[] = {
    "railgate",  "host-device", "sriov", "bridge", "ptp",         "macvlan", "ipvlan",
    "vlan",      "tap",         "dummy", "vrf",    "loopback",    "tuning",  "portmap",
    "bandwidth", "firewall",    "sbr",   "multus", "multus-shim",
};

static bool plugin_type_valid(const char *s) {
    /* a file name in CNI_PATH: no '/', no leading '.', nothing a shell or a path would read */
    return s[0] && s[0] != '.' && strlen(s) <= NAME_MAX_LEN && all_chars(s, strlen(s), "._-", true);
}

static int parse_ipam(const Parser *p, json_t *tenant, const char *path, TenantConfig *t) {
    JPath at = jpath_key(path, "ipam"), type_at = jpath_key(at.s, "type");
    const char *type = NULL;
    json_t *o = NULL;
    int r = jr_get_object(&p->jr, tenant, path, "ipam", &o);

    if (r <= 0)
        return r;
    r = jr_get_string(&p->jr, o, at.s, "type", NULL, &type);
    if (r == 0)
        return jr_missing(&p->jr, at.s, "type");
    if (r < 0)
        return r;
    if (!plugin_type_valid(type))
        return jr_fail(&p->jr, type_at.s,
                       "must be a plugin file name: 1 to 63 of [A-Za-z0-9._-], not starting with "
                       "'.'");
    for (size_t i = 0; i < ELEMENTSOF(NOT_IPAM); i++)
        if (strcasecmp(type, NOT_IPAM[i]) == 0)
            return jr_fail(&p->jr, type_at.s, "\"%s\" is not an IPAM plugin%s", type,
                           i == 0 ? " (railgate never runs itself as IPAM)" : "");
    t->ipam = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    t->ipam_type = strdup(type);
    if (!t->ipam || !t->ipam_type)
        return jr_oom(&p->jr);
    if (strlen(t->ipam) > CONFIG_MAX_IPAM_SIZE)
        return jr_fail(&p->jr, at.s, "larger than %u bytes", CONFIG_MAX_IPAM_SIZE);
    return 0;
}

/* A tenant rail on "addressing": "ipam" needs the tenant's IPAM plugin. */
static int check_tenant_ipam(const Parser *p, const char *path, const TenantConfig *t) {
    for (size_t i = 0; i < t->n_rails && !t->ipam; i++) {
        const RailConfig *rc = config_find_rail(p->c, t->rails[i]);

        if (rc && rc->address_mode == ADDRESS_MODE_IPAM)
            return jr_fail(&p->jr, jpath_index(jpath_key(path, "rails").s, i).s,
                           "rail %u has \"addressing\": \"ipam\", and the tenant has no \"ipam\"",
                           rc->index);
    }
    return 0;
}

static int parse_tenant(const Parser *p, json_t *o, const char *path, TenantConfig *t) {
    static const char *const keys[] = {"name", "resource", "namespaces", "rails",
                                       "vrf",  "ipam",     NULL};
    int r;

    if (!json_is_object(o))
        return jr_fail(&p->jr, path, "must be an object");
    r = jr_check_keys(&p->jr, o, path, keys);
    if (r >= 0 &&
        (r = jr_set_string(&p->jr, o, path, "name", &CHECK_DNS_LABEL, NULL, &t->name)) == 0)
        return jr_missing(&p->jr, path, "name");
    if (r >= 0)
        r = parse_resource(p, o, path, t);
    if (r >= 0 && (r = jr_get_strv(&p->jr, o, path, "namespaces", &CHECK_DNS_LABEL, CONFIG_MAX_LIST,
                                   &t->namespaces, &t->n_namespaces)) == 0)
        return jr_missing(&p->jr, path, "namespaces");
    /* a tenant no namespace may use is a typo, not a policy */
    if (r >= 0 && t->n_namespaces == 0)
        return jr_fail(&p->jr, jpath_key(path, "namespaces").s, "must list at least one namespace");
    if (r >= 0)
        r = parse_tenant_rails(p, o, path, t);
    if (r >= 0)
        r = parse_vrf(p, o, path, t);
    if (r >= 0)
        r = parse_ipam(p, o, path, t);
    if (r >= 0)
        r = check_tenant_ipam(p, path, t);
    return r < 0 ? r : 0;
}

/* What tenant t shares with an earlier tenant o: each a breach of isolation. */
static int check_tenant_pair(const Parser *p, const TenantConfig *t, const TenantConfig *o,
                             const char *path) {
    JPath rails = jpath_key(path, "rails"), nss = jpath_key(path, "namespaces");

    if (streq(t->name, o->name))
        return jr_fail(&p->jr, jpath_key(path, "name").s, "tenant \"%s\" is listed twice", t->name);
    if (streq(t->resource, o->resource))
        return jr_fail(&p->jr, jpath_key(path, "resource").s,
                       "resource \"%s\" already belongs to tenant \"%s\"", t->resource, o->name);
    for (size_t i = 0; i < t->n_namespaces; i++)
        if (strv_contains(o->namespaces, t->namespaces[i]))
            return jr_fail(&p->jr, jpath_index(nss.s, i).s,
                           "namespace \"%s\" already belongs to tenant \"%s\"", t->namespaces[i],
                           o->name);
    for (size_t i = 0; i < t->n_rails; i++)
        for (size_t j = 0; j < o->n_rails; j++)
            if (t->rails[i] == o->rails[j])
                return jr_fail(&p->jr, jpath_index(rails.s, i).s,
                               "rail %u already belongs to tenant \"%s\"", t->rails[i], o->name);
    return 0;
}

static int parse_tenants(const Parser *p, json_t *root) {
    NodeConfig *c = p->c;
    json_t *a = NULL;
    int r = jr_get_array(&p->jr, root, "$", "tenants", CONFIG_MAX_TENANTS, &a);

    if (r < 0)
        return r;
    if (r == 0 || json_array_size(a) == 0)
        return jr_fail(&p->jr, "$.tenants", "at least one tenant is required");
    c->tenants = calloc(json_array_size(a), sizeof(TenantConfig));
    if (!c->tenants)
        return jr_oom(&p->jr);
    c->n_tenants = json_array_size(a);
    for (size_t i = 0; i < c->n_tenants; i++) {
        JPath at = jpath_index("$.tenants", i);

        r = parse_tenant(p, json_array_get(a, i), at.s, &c->tenants[i]);
        for (size_t j = 0; r >= 0 && j < i; j++)
            r = check_tenant_pair(p, &c->tenants[i], &c->tenants[j], at.s);
        if (r < 0)
            return r;
    }
    return 0;
}

static int parse_root(const Parser *p, json_t *root) {
    static const char *const keys[] = {
        "domain",  "kubeletDir", "stateDir", "logFile", "sysfsRoot", "procRoot",
        "devRoot", "cdiKind",    "cdiDir",   "mode",    "discovery", "timeouts",
        "metrics", "rdma",       "rails",    "tenants", NULL};
    int r;

    if (!json_is_object(root))
        return jr_fail(&p->jr, "$", "must be an object");
    r = jr_check_keys(&p->jr, root, "$", keys);
    /* order matters: rails depend on discovery, tenants on rails and domain */
    if (r >= 0)
        r = parse_root_strings(p, root);
    if (r >= 0)
        r = parse_mode(p, root);
    if (r >= 0)
        r = parse_discovery(p, root);
    if (r >= 0)
        r = parse_timeouts(p, root);
    if (r >= 0)
        r = parse_metrics(p, root);
    if (r >= 0)
        r = parse_rdma(p, root);
    if (r >= 0)
        r = parse_rails(p, root);
    if (r >= 0)
        r = parse_tenants(p, root);
    return r;
}

/* ---- entry points ------------------------------------------------------- */

static int parse_buffer(const char *text, size_t len, const char *name, NodeConfig **ret,
                        RgError *err) {
    _cleanup_(config_freep) NodeConfig *c = NULL;
    json_auto_t *root = NULL;
    json_error_t je;
    int r;

    if (len > CONFIG_MAX_FILE_SIZE)
        return rg_error(err, -EINVAL, 0, "%s: larger than %u bytes", name, CONFIG_MAX_FILE_SIZE);
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root && json_error_code(&je) == json_error_out_of_memory)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", name);
    if (!root)
        return rg_error(err, -EINVAL, 0, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(name)))
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", name);
    r = parse_root(&(Parser){.jr = {.name = name, .err = err}, .c = c}, root);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(c);
    return 0;
}

int config_parse(const char *text, const char *name, NodeConfig **ret, RgError *err) {
    if (!name)
        name = "config";
    if (!text)
        return rg_error(err, -EINVAL, 0, "%s: no text", name);
    return parse_buffer(text, strlen(text), name, ret, err);
}

/* A regular file, a symlink followed (a ConfigMap mount is made of them). */
static int read_file(const char *path, char **ret, size_t *ret_size, RgError *err) {
    int r = fileio_read_file(path, CONFIG_MAX_FILE_SIZE, ret, ret_size);

    if (r == -EBADFD)
        return rg_error(err, -EINVAL, 0, "%s: not a regular file", path);
    if (r == -EFBIG)
        return rg_error(err, -EINVAL, 0, "%s: larger than %u bytes", path, CONFIG_MAX_FILE_SIZE);
    if (r < 0)
        return rg_error(err, r, 0, "%s: %s", path, strerror(-r));
    return 0;
}

int config_load(const char *path, NodeConfig **ret, RgError *err) {
    _cleanup_free_ char *text = NULL;
    size_t size = 0;
    int r;

    if (!path)
        return rg_error(err, -EINVAL, 0, "no config path");
    r = read_file(path, &text, &size, err);
    if (r < 0)
        return r;
    return parse_buffer(text, size, path, ret, err);
}

/* ---- freeing and lookups ------------------------------------------------ */

static void rail_done(RailConfig *r) {
    free(r->gpu.pci);
    free(r->gpu.simulated);
    free(r->gpu.uuid);
    strv_free(r->gpu.devices);
    free(r->nic.name);
    free(r->nic.pci);
    free(r->nic.rdma);
    strv_free(r->addresses);
    free(r->gateway);
}

static void tenant_done(TenantConfig *t) {
    free(t->name);
    free(t->resource);
    strv_free(t->namespaces);
    free(t->rails);
    free(t->vrf.name);
    strv_free(t->vrf.prefixes);
    free(t->ipam);
    free(t->ipam_type);
}

void config_free(NodeConfig *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->n_rails; i++)
        rail_done(&c->rails[i]);
    free(c->rails);
    for (size_t i = 0; i < c->n_tenants; i++)
        tenant_done(&c->tenants[i]);
    free(c->tenants);
    free(c->discovery.topology_xml);
    free(c->metrics.listen);
    strv_free(c->discovery.nic_exclude);
    for (size_t i = 0; i < ELEMENTSOF(ROOT_STRINGS); i++)
        free(*(char **)((char *)c + ROOT_STRINGS[i].offset));
    free(c->path);
    free(c);
}

const RailConfig *config_find_rail(const NodeConfig *c, unsigned index) {
    RailConfig key = {.index = index};

    if (!c || c->n_rails == 0)
        return NULL;
    return bsearch(&key, c->rails, c->n_rails, sizeof(RailConfig), rail_cmp);
}

bool config_vf_keeps_all(const VfConfig *c) {
    return !c->pin_mac && c->spoofchk == CONFIG_VF_KEEP && c->trust == CONFIG_VF_KEEP &&
           c->link_state == CONFIG_VF_KEEP;
}

const TenantConfig *config_find_tenant(const NodeConfig *c, const char *name) {
    for (size_t i = 0; c && name && i < c->n_tenants; i++)
        if (streq(c->tenants[i].name, name))
            return &c->tenants[i];
    return NULL;
}

const TenantConfig *config_rail_tenant(const NodeConfig *c, unsigned index) {
    for (size_t i = 0; c && i < c->n_tenants; i++)
        for (size_t j = 0; j < c->tenants[i].n_rails; j++)
            if (c->tenants[i].rails[j] == index)
                return &c->tenants[i];
    return NULL;
}

const TenantConfig *config_namespace_tenant(const NodeConfig *c, const char *ns) {
    for (size_t i = 0; c && ns && i < c->n_tenants; i++)
        if (strv_contains(c->tenants[i].namespaces, ns))
            return &c->tenants[i];
    return NULL;
}

const TenantConfig *config_resource_tenant(const NodeConfig *c, const char *resource) {
    for (size_t i = 0; c && resource && i < c->n_tenants; i++)
        if (streq(c->tenants[i].resource, resource))
            return &c->tenants[i];
    return NULL;
}
