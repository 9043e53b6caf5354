/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two tenants end to end on a simulated rail fabric, in network namespaces.
 *
 *   node1, node2   four rail NICs each (rail-nic0..3, veth), a device plugin
 *                  under its own fake kubelet, the CNI chain ptp + railgate
 *   leaf0..3       leaf k holds port n<n>r<k> of each node's rail k; one
 *                  routing table per tenant VRF, chosen by ingress port
 *   spine          joins the leaves, one link per leaf and tenant VRF
 *
 * Rails 0-1 of each node belong to tenant a (10.100.<k>.<10+n>/24), rails 2-3
 * to tenant b (10.200.<k>.<10+n>/24). This program plays kubelet (through the
 * fake kubelet: registration, ListAndWatch, GetPreferredAllocation, Allocate,
 * PodResources) and the container runtime (pod namespaces, the CNI chain with
 * the CNI_ARGS containerd sends), checks every step, and prints what each pod
 * got. The rails are veths: packets cross them.
 *
 * --vrf table (the default; RAILGATE_E2E_VRF=table): the tenant VRFs are
 * routing tables, chosen by ingress port on the leaves and spine, and a
 * table per rail with a source rule in the pods ("mode": "table").
 * --vrf device (RAILGATE_E2E_VRF=device): the tenant VRFs are l3mdev VRF
 * devices on the leaves and the spine with the ports enslaved, and the pods
 * get theirs ("mode": "vrf": a VRF device per tenant with the rails in it);
 * needs the kernel's vrf driver.
 *
 * Exit 0: all checks passed; 1: a check failed; 77: not root, or VRF
 * devices asked for and this kernel has no vrf driver.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cnienv.h"
#include "fakekubelet.h"
#include "proc.h"
#include "strv.h"
#include "testns.h"
#include "waitscale.h"

#define NODES 2
#define RAILS 4
#define RES_A "railgate.io/tenant-a"
#define RES_B "railgate.io/tenant-b"
#define WAIT_MS 15000

typedef struct Node {
    unsigned n; /* 1-based */
    char ns[64], dir[128], kubelet[160], config[160], state[160], log[160], cache[160];
    FakeKubelet *k;
    pid_t plugin;
} Node;

typedef struct Pod {
    Node *node;
    const char *tenant, *ns, *name, *resource;
    char netns[64], netns_path[128], container[64];
    char **ids;     /* units kubelet gave it */
    char **env;     /* "K=V" from Allocate */
    json_t *result; /* the chain's final result */
    bool attached;  /* railgate ADD succeeded */
} Pod;

static char tmp[64], prefix[24];
static Node nodes[NODES];
static unsigned checks, failures;
static bool verbose = true;
static bool vrf_devices; /* --vrf device */

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...) {
    va_list ap;

    checks++;
    if (!ok)
        failures++;
    if (!ok || verbose) {
        printf("  %s ", ok ? "ok  " : "FAIL");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    fflush(stdout);
}

static void section(const char *title) {
    printf("\n== %s\n", title);
    fflush(stdout);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "e2e: `%s` failed\n", cmd);
        return -EIO;
    }
    return 0;
}

/* "ip -n <ns> <args>" output (malloc'd), for the report. */
static char *ip_text(const char *ns, const char *args) {
    char cmd[512], *buf = NULL;
    size_t cap = 0, len = 0;
    FILE *f;

    snprintf(cmd, sizeof(cmd), "ip -n %s %s 2>/dev/null", ns, args);
    f = popen(cmd, "r");
    if (!f)
        return strdup("");
    for (int c; (c = fgetc(f)) != EOF;) {
        if (len + 2 > cap) {
            cap = cap ? cap * 2 : 1024;
            buf = realloc(buf, cap);
            if (!buf)
                break;
        }
        buf[len++] = (char)c;
    }
    pclose(f);
    if (!buf)
        return strdup("");
    buf[len] = 0;
    return buf;
}

static bool pinged(const char *ns, const char *dev, const char *dst) {
    char cmd[256];

    snprintf(cmd, sizeof(cmd),
             "ip netns exec %s ping -n -q -c 3 -i 0.2 -W 1 -I %s %s >/dev/null 2>&1", ns, dev, dst);
    int st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void fabric_cleanup(void) {
    char cmd[256];

    for (unsigned i = 0; i < NODES; i++) {
        if (nodes[i].plugin > 0)
            proc_stop(nodes[i].plugin, 5000);
        nodes[i].plugin = 0;
        fk_stop(nodes[i].k);
        nodes[i].k = NULL;
    }
    /* every namespace this run made carries its prefix and a dash (rge2e33 is
     * no prefix of rge2e335-: that is another run) */
    snprintf(cmd, sizeof(cmd),
             "for n in $(ls /run/netns 2>/dev/null | grep '^%s-'); do ip netns del $n; done",
             prefix);
    (void)!system(cmd);
    if (tmp[0] && !getenv("RAILGATE_TEST_KEEP")) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
        (void)!system(cmd);
    }
}

static void on_signal(int sig) {
    fabric_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Leftovers of a run that was SIGKILLed: namespaces named after a dead pid. */
static void sweep_stale(void) {
    (void)!system("for n in $(ls /run/netns 2>/dev/null | grep '^rge2e[0-9]*-'); do "
                  "p=${n#rge2e}; p=${p%%%%-*}; kill -0 \"$p\" 2>/dev/null || ip netns del \"$n\"; "
                  "done");
}

static const char *tenant_of_rail(unsigned k) {
    return k < 2 ? "a" : "b";
}

static unsigned octet_of_rail(unsigned k) {
    return k < 2 ? 100 : 200;
}

/* ---- the fabric ---- */

/* The tenant VRFs of a leaf or the spine as l3mdev devices: vrf-a on table
 * 10, vrf-b on table 20. */
/* Can this kernel make a VRF device? (In a namespace of a child's own.) */
static bool vrf_driver(void) {
    return system("unshare -n ip link add rgvrfprobe type vrf table 10 >/dev/null 2>&1") == 0;
}

static int vrf_devices_add(const char *ns) {
    int r = 0;

    for (unsigned t = 0; t < 2; t++) {
        r |= sh("ip -n %s link add vrf-%c type vrf table %u", ns, "ab"[t], 10 + 10 * t);
        r |= sh("ip -n %s link set vrf-%c up", ns, "ab"[t]);
    }
    return r;
}

/* Port <p><k><c> of ns into tenant c's VRF: enslaved to its VRF device, or
 * (table mode) a rule that sends what it receives to the VRF's table. */
static int vrf_port(const char *ns, const char *p, unsigned k, char c, unsigned table) {
    if (vrf_devices)
        return sh("ip -n %s link set %s%u%c master vrf-%c", ns, p, k, c, c);
    return sh("ip -n %s rule add iif %s%u%c lookup %u pref 100", ns, p, k, c, table);
}

static int leaf_setup(unsigned k) {
    char leaf[48], spine[48];
    unsigned o = octet_of_rail(k);
    int r = 0;

    snprintf(leaf, sizeof(leaf), "%s-leaf%u", prefix, k);
    snprintf(spine, sizeof(spine), "%s-spine", prefix);
    r |= sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1", leaf);
    if (vrf_devices)
        r |= vrf_devices_add(leaf);
    /* one link per tenant VRF to the spine: a for tenant a, b for tenant b */
    for (unsigned t = 0; t < 2; t++) {
        char c = "ab"[t];
        unsigned table = 10 + 10 * t, net = 16 + t;
        r |= sh("ip -n %s link add l%u%c type veth peer name s%u%c netns %s", leaf, k, c, k, c,
                spine);
        r |= vrf_port(leaf, "l", k, c, table);
        r |= vrf_port(spine, "s", k, c, table);
        r |= sh("ip -n %s addr add 172.%u.%u.0/31 dev l%u%c", leaf, net, k, k, c);
        r |= sh("ip -n %s addr add 172.%u.%u.1/31 dev s%u%c", spine, net, k, k, c);
        r |= sh("ip -n %s link set l%u%c up", leaf, k, c);
        r |= sh("ip -n %s link set s%u%c up", spine, k, c);
        r |= sh("ip -n %s route add 10.%u.0.0/16 via 172.%u.%u.1 dev l%u%c onlink table %u", leaf,
                100 * (t + 1), net, k, k, c, table);
        r |= sh("ip -n %s route add 10.%u.%u.0/24 via 172.%u.%u.0 dev s%u%c onlink table %u", spine,
                100 * (t + 1), k, net, k, k, c, table);
        /* the main tables are a flat fabric that would carry anything anywhere:
         * only the VRF tables keep the tenants apart, and they end in an
         * unreachable default so that a miss never falls through to main */
        r |= sh("ip -n %s route replace 10.%u.0.0/16 via 172.%u.%u.1 dev l%u%c onlink", leaf,
                100 * (t + 1), net, k, k, c);
        r |= sh("ip -n %s route replace 10.%u.%u.0/24 via 172.%u.%u.0 dev s%u%c onlink", spine,
                100 * (t + 1), k, net, k, k, c);
        r |= sh("ip -n %s route replace unreachable default table %u", leaf, table);
        r |= sh("ip -n %s route replace unreachable default table %u", spine, table);
    }
    /* the node ports: the rail's tenant VRF, proxy ARP for the other hosts of the subnet */
    for (unsigned n = 1; n <= NODES; n++) {
        unsigned table = tenant_of_rail(k)[0] == 'a' ? 10 : 20;
        char port[16];
        snprintf(port, sizeof(port), "n%ur%u", n, k);
        if (vrf_devices)
            r |= sh("ip -n %s link set %s master vrf-%c", leaf, port, tenant_of_rail(k)[0]);
        r |= sh("ip -n %s addr add 10.%u.%u.1/32 dev %s", leaf, o, k, port);
        r |= sh("ip -n %s link set %s up", leaf, port);
        r |= sh("ip netns exec %s sysctl -qw net.ipv4.conf.%s.proxy_arp=1 "
                "net.ipv4.neigh.%s.proxy_delay=0",
                leaf, port, port);
        if (!vrf_devices)
            r |= sh("ip -n %s rule add iif %s lookup %u pref 100", leaf, port, table);
        r |= sh("ip -n %s route add 10.%u.%u.%u/32 dev %s table %u", leaf, o, k, 10 + n, port,
                table);
        r |= sh("ip -n %s route add 10.%u.%u.%u/32 dev %s", leaf, o, k, 10 + n, port);
    }
    return r ? -EIO : 0;
}

static void node_config(Node *nd) {
    FILE *f = fopen(nd->config, "we");

    if (!f)
        return;
    fprintf(f,
            "{\"domain\": \"railgate.io\", \"kubeletDir\": \"%s\", \"stateDir\": \"%s\",\n"
            " \"devRoot\": \"%s/root\", \"logFile\": \"%s/cni.log\", \"rails\": [\n",
            nd->kubelet, nd->state, nd->dir, nd->dir);
    for (unsigned k = 0; k < RAILS; k++)
        fprintf(f,
                "  {\"index\": %u, \"numa\": %u, \"mtu\": 9000,"
                " \"gpu\": {\"simulated\": \"gpu%u\", \"minor\": %u,"
                " \"devices\": [\"/dev/railgate/gpu%u\"]},\n"
                "   \"nic\": {\"name\": \"rail-nic%u\"},"
                " \"address\": \"10.%u.%u.%u/24\", \"gateway\": \"10.%u.%u.1\"}%s\n",
                k, k / 2, k, k, k, k, octet_of_rail(k), k, 10 + nd->n, octet_of_rail(k), k,
                k + 1 < RAILS ? "," : "");
    const char *mode = vrf_devices ? "vrf" : "table";
    fprintf(f,
            " ], \"tenants\": [\n"
            "  {\"name\": \"tenant-a\", \"namespaces\": [\"team-a\"], \"rails\": [0, 1],\n"
            "   \"vrf\": {\"table\": 100, \"prefixes\": [\"10.100.0.0/16\"], \"mode\": \"%s\"}},\n"
            "  {\"name\": \"tenant-b\", \"namespaces\": [\"team-b\"], \"rails\": [2, 3],\n"
            "   \"vrf\": {\"table\": 200, \"prefixes\": [\"10.200.0.0/16\"], \"mode\": \"%s\"}}\n"
            " ]}\n",
            mode, mode);
    fclose(f);
}

static int plugin_start(Node *nd) {
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"), "--config", nd->config, NULL};
    char path[96];

    snprintf(path, sizeof(path), "/run/netns/%s", nd->ns);
    nd->plugin = proc_spawn_in_netns(argv, nd->log, path);
    return nd->plugin > 0 ? 0 : -ECHILD;
}

static int node_setup(Node *nd) {
    char leaf[48];
    int r = 0;

    snprintf(nd->ns, sizeof(nd->ns), "%s-node%u", prefix, nd->n);
    snprintf(nd->dir, sizeof(nd->dir), "%s/node%u", tmp, nd->n);
    snprintf(nd->kubelet, sizeof(nd->kubelet), "%s/kubelet", nd->dir);
    snprintf(nd->state, sizeof(nd->state), "%s/state", nd->dir);
    snprintf(nd->config, sizeof(nd->config), "%s/node.json", nd->dir);
    snprintf(nd->log, sizeof(nd->log), "%s/plugin.log", nd->dir);
    snprintf(nd->cache, sizeof(nd->cache), "%s/ipam", nd->dir);
    r |= sh("mkdir -p %s/root/dev/railgate && touch %s/root/dev/railgate/gpu0 "
            "%s/root/dev/railgate/gpu1 %s/root/dev/railgate/gpu2 %s/root/dev/railgate/gpu3",
            nd->dir, nd->dir, nd->dir, nd->dir, nd->dir);
    r |= sh("ip netns add %s && ip -n %s link set lo up", nd->ns, nd->ns);
    r |= sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1", nd->ns);
    for (unsigned k = 0; k < RAILS && !r; k++) {
        snprintf(leaf, sizeof(leaf), "%s-leaf%u", prefix, k);
        r |= sh("ip -n %s link add rail-nic%u type veth peer name n%ur%u netns %s", nd->ns, k,
                nd->n, k, leaf);
        r |= sh("ip -n %s link set rail-nic%u up", nd->ns, k);
    }
    node_config(nd);
    if (r)
        return -EIO;
    r = fk_start(nd->kubelet, &nd->k);
    if (r < 0)
        return r;
    return plugin_start(nd);
}

/* ---- kubelet's part ---- */

static bool unit_taken(Node *nd, const char *id, Pod *pods, size_t n_pods) {
    for (size_t i = 0; i < n_pods; i++)
        if (pods[i].node == nd && pods[i].ids && strv_contains(pods[i].ids, id))
            return true;
    return false;
}

/* Admit a pod as kubelet's device manager does: the healthy free units,
 * the plugin's preferred pick, Allocate, then the pod in PodResources. */
static int admit(Pod *p, unsigned count, Pod *pods, size_t n_pods) {
    FkDevice *devs = NULL;
    size_t n = 0;
    uint64_t seq;
    char **avail = NULL, **ids = NULL;
    V1beta1__AllocateResponse *resp = NULL;
    RgError err = {0};
    int r;

    r = fk_devices(p->node->k, p->resource, &devs, &n, &seq);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (devs[i].healthy && !unit_taken(p->node, devs[i].id, pods, n_pods))
            r = strv_push(&avail, devs[i].id);
    free(devs);
    if (r < 0 || strv_length(avail) < count) {
        strv_free(avail);
        return r < 0 ? r : -ENOSPC;
    }
    r = fk_preferred(p->node->k, p->resource, avail, strv_length(avail), NULL, 0, (int)count, &ids,
                     &err);
    strv_free(avail);
    if (r < 0)
        return r;
    r = fk_allocate(p->node->k, p->resource, ids, strv_length(ids), &resp, &err);
    if (r < 0) {
        strv_free(ids);
        return r;
    }
    for (size_t c = 0; c < resp->n_container_responses; c++)
        for (size_t e = 0; e < resp->container_responses[c]->n_envs; e++) {
            char *kv;
            if (asprintf(&kv, "%s=%s", resp->container_responses[c]->envs[e]->key,
                         resp->container_responses[c]->envs[e]->value) >= 0) {
                (void)strv_push(&p->env, kv);
                free(kv);
            }
        }
    v1beta1__allocate_response__free_unpacked(resp, NULL);
    p->ids = ids;
    return fk_pod_set(p->node->k, p->ns, p->name, p->resource, ids, strv_length(ids));
}

static const char *pod_env(const Pod *p, const char *key) {
    size_t n = strlen(key);

    for (char **e = p->env; e && *e; e++)
        if (strncmp(*e, key, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* ---- the runtime's part ---- */

/* Run one CNI plugin in the node's namespace, as containerd does. */
static int runtime_exec(const Pod *p, const char *plugin, const char *command, const char *conf,
                        CniRun *ret) {
    char path[256], env[8][512], nspath[96], errlog[200];
    char *envp[9];

    snprintf(path, sizeof(path), "%s/%s", proc_bin("cni"), plugin);
    if (!streq(plugin, "railgate"))
        snprintf(path, sizeof(path), "/usr/lib/cni/%s", plugin);
    snprintf(env[0], sizeof(env[0]), "CNI_COMMAND=%s", command);
    snprintf(env[1], sizeof(env[1]), "CNI_CONTAINERID=%s", p->container);
    snprintf(env[2], sizeof(env[2]), "CNI_NETNS=%s", p->netns_path);
    snprintf(env[3], sizeof(env[3]), "CNI_IFNAME=eth0"); /* one ifname for the whole chain */
    snprintf(env[4], sizeof(env[4]), "CNI_PATH=/usr/lib/cni:%s", proc_bin("cni"));
    snprintf(env[5], sizeof(env[5]),
             "CNI_ARGS=K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-%s;IgnoreUnknown=1;"
             "K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s",
             p->container, p->name, p->ns, p->name);
    snprintf(env[6], sizeof(env[6]), "RAILGATE_NODE_CONFIG=%s", p->node->config);
    snprintf(env[7], sizeof(env[7]), "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
    for (int i = 0; i < 8; i++)
        envp[i] = env[i];
    envp[8] = NULL;
    snprintf(nspath, sizeof(nspath), "/run/netns/%s", p->node->ns);
    snprintf(errlog, sizeof(errlog), "%s/cni.stderr", p->node->dir);
    return cni_exec(path, envp, conf, nspath, errlog, ret);
}

static char *plugin_conf(const Pod *p, const char *type, json_t *prev) {
    json_t *c = json_pack("{s:s, s:s, s:s}", "cniVersion", "1.0.0", "name", "pods", "type", type);

    if (streq(type, "ptp")) {
        char subnet[32], dir[200];
        snprintf(subnet, sizeof(subnet), "10.244.%u.0/24", p->node->n);
        snprintf(dir, sizeof(dir), "%s", p->node->cache);
        json_object_set_new(
            c, "ipam",
            json_pack("{s:s, s:s, s:s}", "type", "host-local", "subnet", subnet, "dataDir", dir));
    }
    if (prev)
        json_object_set(c, "prevResult", prev);
    char *s = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return s;
}

/* The conflist "pods": ptp (eth0), then railgate. Returns railgate's status. */
static int chain_add(Pod *p, CniRun *rg) {
    CniRun r;
    char *conf = plugin_conf(p, "ptp", NULL);

    runtime_exec(p, "ptp", "ADD", conf, &r);
    free(conf);
    if (r.status != 0 || !r.out) {
        fprintf(stderr, "ptp ADD: %s\n", r.raw);
        cni_run_done(&r);
        return -EIO;
    }
    conf = plugin_conf(p, "railgate", r.out);
    runtime_exec(p, "railgate", "ADD", conf, rg);
    free(conf);
    cni_run_done(&r);
    if (rg->status == 0) {
        p->result = json_incref(rg->out);
        p->attached = true;
    }
    return rg->status;
}

static int chain_del(Pod *p) {
    CniRun r;
    int failed = 0;
    char *conf = plugin_conf(p, "railgate", p->result);

    runtime_exec(p, "railgate", "DEL", conf, &r);
    free(conf);
    failed |= r.status;
    if (r.status)
        fprintf(stderr, "railgate DEL: %s\n", r.raw);
    cni_run_done(&r);
    conf = plugin_conf(p, "ptp", NULL);
    runtime_exec(p, "ptp", "DEL", conf, &r);
    free(conf);
    failed |= r.status;
    cni_run_done(&r);
    return failed ? -EIO : 0;
}

static int pod_create(Pod *p, Node *nd, const char *tenant, const char *ns, const char *name,
                      const char *resource) {
    static unsigned seq;

    memset(p, 0, sizeof(*p));
    p->node = nd;
    p->tenant = tenant;
    p->ns = ns;
    p->name = name;
    p->resource = resource;
    snprintf(p->netns, sizeof(p->netns), "%s-pod%u", prefix, ++seq);
    snprintf(p->netns_path, sizeof(p->netns_path), "/run/netns/%s", p->netns);
    snprintf(p->container, sizeof(p->container), "e2e%08x%04u", (unsigned)getpid(), seq);
    return sh("ip netns add %s && ip -n %s link set lo up", p->netns, p->netns);
}

static void pod_free(Pod *p) {
    strv_free(p->ids);
    strv_free(p->env);
    json_decref(p->result);
    p->ids = p->env = NULL;
    p->result = NULL;
}

/* ---- checks ---- */

static unsigned rail_of(const char *id) {
    return (unsigned)strtoul(id + 4, NULL, 10);
}

static char *pod_addr(const Pod *p, unsigned k, char *buf, size_t n) {
    snprintf(buf, n, "10.%u.%u.%u", octet_of_rail(k), k, 10 + p->node->n);
    return buf;
}

static void check_env(const Pod *p) {
    char want[128] = "=", rails[64] = "";

    for (char **id = p->ids; id && *id; id++) {
        char ifn[16];
        snprintf(ifn, sizeof(ifn), "rail%u", rail_of(*id));
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", id == p->ids ? "" : ",",
                 ifn);
        snprintf(rails + strlen(rails), sizeof(rails) - strlen(rails), "%s%s",
                 id == p->ids ? "" : ",", ifn);
    }
    const char *sock = pod_env(p, "NCCL_SOCKET_IFNAME"), *t = pod_env(p, "RAILGATE_TENANT");
    check(sock && streq(sock, want), "%s/%s env NCCL_SOCKET_IFNAME=%s names exactly its rails",
          p->ns, p->name, sock ? sock : "(unset)");
    check(t && streq(t, p->tenant), "%s/%s env RAILGATE_TENANT=%s", p->ns, p->name,
          t ? t : "(unset)");
    const char *r = pod_env(p, "RAILGATE_RAILS");
    check(r != NULL, "%s/%s env RAILGATE_RAILS=%s", p->ns, p->name, r ? r : "(unset)");
}

/* The routing table of rail k in a pod: one per rail in table mode, the
 * tenant's VRF table in VRF-device mode. */
static unsigned rail_table(unsigned k) {
    return (k < 2 ? 100 : 200) + (vrf_devices ? 0 : k);
}

/* The pod's VRF device of the tenant (the node config's default name). */
static const char *pod_vrf(const Pod *p) {
    return streq(p->tenant, "tenant-a") ? "vrf-tenant-a" : "vrf-tenant-b";
}

static void check_rail_vrf(const Pod *p, unsigned k, const char *dev, const char *addr) {
    unsigned table = rail_table(k);
    char args[96], want[128];

    snprintf(args, sizeof(args), "link show dev %s", dev);
    snprintf(want, sizeof(want), "master %s", pod_vrf(p));
    check(ip_has(p->netns, args, want), "%s/%s %s is in VRF device %s", p->ns, p->name, dev,
          pod_vrf(p));
    snprintf(args, sizeof(args), "-d link show dev %s", pod_vrf(p));
    snprintf(want, sizeof(want), "vrf table %u", table);
    check(ip_has(p->netns, args, want), "%s/%s %s: %s", p->ns, p->name, pod_vrf(p), want);
    snprintf(args, sizeof(args), "route show table %u", table);
    snprintf(want, sizeof(want), "10.%u.%u.0/24 dev %s", octet_of_rail(k), k, dev);
    check(ip_has(p->netns, args, want), "%s/%s table %u: %s", p->ns, p->name, table, want);
    /* one default and one prefix route for the VRF: the first rail's */
    check(ip_has(p->netns, args, "default via 10."), "%s/%s table %u: a default route", p->ns,
          p->name, table);
    snprintf(want, sizeof(want), "10.%u.0.0/16 via 10.%u.", octet_of_rail(k), octet_of_rail(k));
    check(ip_has(p->netns, args, want), "%s/%s table %u: the VRF's prefix via a rail gateway",
          p->ns, p->name, table);
    snprintf(want, sizeof(want), "from %s lookup", addr);
    check(ip_has(p->netns, "rule show", "l3mdev") && !ip_has(p->netns, "rule show", want),
          "%s/%s rules: the kernel's l3mdev rule, no source rule", p->ns, p->name);
}

static void check_rail_table(const Pod *p, unsigned k, const char *dev, const char *addr) {
    unsigned table = rail_table(k);
    char args[96], want[128];

    snprintf(args, sizeof(args), "route show table %u", table);
    snprintf(want, sizeof(want), "default via 10.%u.%u.1 dev %s", octet_of_rail(k), k, dev);
    check(ip_has(p->netns, args, want), "%s/%s table %u: %s", p->ns, p->name, table, want);
    snprintf(want, sizeof(want), "10.%u.0.0/16 via 10.%u.%u.1 dev %s", octet_of_rail(k),
             octet_of_rail(k), k, dev);
    check(ip_has(p->netns, args, want), "%s/%s table %u: %s", p->ns, p->name, table, want);
    snprintf(want, sizeof(want), "from %s lookup %u", addr, table);
    check(ip_has(p->netns, "rule show", want), "%s/%s rule: %s", p->ns, p->name, want);
}

static void check_rails(const Pod *p) {
    for (char **id = p->ids; id && *id; id++) {
        unsigned k = rail_of(*id);
        char dev[16], args[96], addr[32], want[128];
        snprintf(dev, sizeof(dev), "rail%u", k);
        snprintf(args, sizeof(args), "addr show dev %s", dev);
        snprintf(want, sizeof(want), "inet %s/24", pod_addr(p, k, addr, sizeof(addr)));
        check(ip_has(p->netns, args, want) && ip_has(p->netns, args, "mtu 9000"),
              "%s/%s has %s with %s, mtu 9000", p->ns, p->name, dev, want + 5);
        if (vrf_devices)
            check_rail_vrf(p, k, dev, addr);
        else
            check_rail_table(p, k, dev, addr);
        snprintf(args, sizeof(args), "link show dev rail-nic%u", k);
        check(!ip_has(p->node->ns, args, "rail-nic"), "node%u: rail-nic%u left the node",
              p->node->n, k);
    }
}

static void report_pod(const Pod *p) {
    printf("\n-- pod %s/%s on node%u: tenant %s, units", p->ns, p->name, p->node->n, p->tenant);
    for (char **id = p->ids; id && *id; id++)
        printf(" %s", *id);
    printf("\n   env:");
    for (char **e = p->env; e && *e; e++)
        printf(" %s", *e);
    printf("\n");
    for (char **id = p->ids; id && *id; id++) {
        unsigned k = rail_of(*id), table = rail_table(k);
        char args[64], *a, *rt;
        snprintf(args, sizeof(args), "-br addr show dev rail%u", k);
        a = ip_text(p->netns, args);
        snprintf(args, sizeof(args), "route show table %u", table);
        rt = ip_text(p->netns, args);
        printf("   %s", a);
        /* VRF-device mode: one table for the pod's rails, shown once */
        for (char *line = strtok(rt, "\n"); line && (!vrf_devices || id == p->ids);
             line = strtok(NULL, "\n"))
            printf("     table %u: %s\n", table, line);
        free(a);
        free(rt);
    }
    char *rules = ip_text(p->netns, "rule show");
    for (char *line = strtok(rules, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "lookup 1") || strstr(line, "lookup 2") || strstr(line, "l3mdev"))
            printf("     rule %s\n", line);
    free(rules);
    fflush(stdout);
}

static void check_reach(const Pod *from, const Pod *to, bool want) {
    char src[32], dst[32], dev[16];

    for (char **a = from->ids; a && *a; a++)
        for (char **b = to->ids; b && *b; b++) {
            unsigned ka = rail_of(*a), kb = rail_of(*b);
            if (want && ka != kb)
                continue; /* reachability is asserted rail to rail */
            snprintf(dev, sizeof(dev), "rail%u", ka);
            pod_addr(from, ka, src, sizeof(src));
            pod_addr(to, kb, dst, sizeof(dst));
            /* in VRF-device mode the socket binds to the VRF, whose table
             * picks the rail */
            bool ok = pinged(from->netns, vrf_devices ? pod_vrf(from) : dev, dst);
            check(ok == want, "%s %s/%s %s (%s) -> %s/%s %s (%s): %s", want ? "reach" : "isolation",
                  from->ns, from->name, dev, src, to->ns, to->name, *b, dst,
                  ok ? "reachable" : "unreachable");
        }
}

static bool host_rails_intact(const Node *nd) {
    for (unsigned k = 0; k < RAILS; k++) {
        char args[64];
        snprintf(args, sizeof(args), "link show dev rail-nic%u", k);
        if (!ip_has(nd->ns, args, "mtu 1500") || !ip_has(nd->ns, args, ",UP"))
            return false;
    }
    return true;
}

static unsigned healthy_units(Node *nd, const char *res) {
    FkDevice *d = NULL;
    size_t n = 0;
    uint64_t seq;
    unsigned h = 0;

    if (fk_devices(nd->k, res, &d, &n, &seq) < 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        h += d[i].healthy;
    free(d);
    return h;
}

/* Each tenant's ListAndWatch shows want healthy units, within the wait: the
 * agent reads health once a burst of link events is over (agent/health.c),
 * and a node's set-up or restart is one. */
static bool healthy_within(Node *nd, unsigned want) {
    int ms = wait_scaled_ms(WAIT_MS);

    for (int waited = 0;; waited += 10) {
        if (healthy_units(nd, RES_A) == want && healthy_units(nd, RES_B) == want)
            return true;
        if (waited >= ms)
            return false;
        usleep(10 * 1000);
    }
}

static void check_registered(Node *nd, unsigned count, const char *why) {
    check(fk_wait_registered(nd->k, RES_A, count, WAIT_MS) == 0 &&
              fk_wait_registered(nd->k, RES_B, count, WAIT_MS) == 0,
          "node%u: both tenant resources registered (%u times) %s", nd->n, count, why);
    check(healthy_within(nd, 2),
          "node%u: ListAndWatch shows 2 healthy units per tenant (attached NICs are in use, "
          "not unhealthy)",
          nd->n);
}

static void scenario(void) {
    Pod pods[4];
    Pod *a1 = &pods[0], *a2 = &pods[1], *b1 = &pods[2], *intruder = &pods[3];
    CniRun r;

    memset(pods, 0, sizeof(pods));
    section("device plugins register with their node's kubelet");
    for (unsigned i = 0; i < NODES; i++)
        check_registered(&nodes[i], 1, "at start");

    section("a tenant-b pod asking for tenant-a's resource");
    pod_create(intruder, &nodes[0], "tenant-b", "team-b", "intruder", RES_A);
    check(admit(intruder, 2, pods, 4) == 0, "kubelet on node1 admits team-b/intruder with %s",
          RES_A);
    int st = chain_add(intruder, &r);
    const char *msg = r.out ? json_string_value(json_object_get(r.out, "msg")) : NULL;
    check(st == 1 && json_integer_value(json_object_get(r.out, "code")) == 100,
          "railgate ADD refused it: code %lld, \"%s\"",
          r.out ? (long long)json_integer_value(json_object_get(r.out, "code")) : -1LL,
          msg ? msg : r.raw);
    cni_run_done(&r);
    check(!ip_has(intruder->netns, "link show", "rail"), "nothing moved into team-b/intruder");
    check(host_rails_intact(&nodes[0]), "node1 still has rail-nic0..3, up, MTU 1500");
    chain_del(intruder);
    fk_pod_remove(nodes[0].k, intruder->ns, intruder->name);
    pod_free(intruder);
    intruder->node = NULL;

    section("pods start: tenant-a on node1 and node2, tenant-b on node1");
    pod_create(a1, &nodes[0], "tenant-a", "team-a", "trainer-0", RES_A);
    pod_create(a2, &nodes[1], "tenant-a", "team-a", "trainer-1", RES_A);
    pod_create(b1, &nodes[0], "tenant-b", "team-b", "infer-0", RES_B);
    Pod *running[] = {a1, a2, b1};
    for (size_t i = 0; i < 3; i++) {
        Pod *p = running[i];
        check(admit(p, 2, pods, 4) == 0, "kubelet on node%u admits %s/%s: 2 x %s", p->node->n,
              p->ns, p->name, p->resource);
        st = chain_add(p, &r);
        check(st == 0, "CNI chain ptp + railgate ADD for %s/%s%s%s", p->ns, p->name, st ? ": " : "",
              st ? r.raw : "");
        cni_run_done(&r);
    }
    for (size_t i = 0; i < 3; i++) {
        check_env(running[i]);
        check_rails(running[i]);
    }
    for (size_t i = 0; i < 3; i++)
        report_pod(running[i]);

    section("isolation across the leaves");
    check_reach(a1, a2, true);
    check_reach(a2, a1, true);
    check_reach(b1, a1, false);
    check_reach(b1, a2, false);
    check(pinged(b1->netns, vrf_devices ? pod_vrf(b1) : "rail2", "10.200.2.1") &&
              pinged(b1->netns, vrf_devices ? pod_vrf(b1) : "rail3", "10.200.3.1"),
          "tenant-b's rails reach their own leaf gateways");

    section("kubelet restarts on node1");
    unsigned before = fk_registrations(nodes[0].k, RES_A);
    check(fk_restart(nodes[0].k) == 0, "kubelet restarted, device-plugin dir wiped");
    check_registered(&nodes[0], before + 1, "again after the restart");
    check_rails(a1);
    check_rails(b1);
    check_reach(a1, a2, true);

    section("device plugin restarts on node1");
    before = fk_registrations(nodes[0].k, RES_A);
    check(proc_stop(nodes[0].plugin, 5000) == 0, "plugin stopped by SIGTERM, exit 0");
    nodes[0].plugin = 0;
    check(plugin_start(&nodes[0]) == 0, "plugin started again");
    check_registered(&nodes[0], before + 1, "after the plugin restart");
    check_rails(a1);
    check_reach(a1, a2, true);

    section("pods are deleted");
    for (size_t i = 0; i < 3; i++) {
        Pod *p = running[i];
        check(chain_del(p) == 0, "CNI chain DEL for %s/%s", p->ns, p->name);
        fk_pod_remove(p->node->k, p->ns, p->name);
        sh("ip netns del %s", p->netns);
    }
    for (unsigned i = 0; i < NODES; i++) {
        check(host_rails_intact(&nodes[i]),
              "node%u: every rail NIC back as rail-nic0..3, up, MTU 1500", nodes[i].n);
        char path[256];
        snprintf(path, sizeof(path), "%s/attachments", nodes[i].state);
        DIR *d = opendir(path);
        unsigned left = 0;
        for (struct dirent *de; d && (de = readdir(d));)
            left += de->d_name[0] != '.';
        if (d)
            closedir(d);
        check(left == 0, "node%u: no attachment state left", nodes[i].n);
    }
    for (size_t i = 0; i < 4; i++)
        pod_free(&pods[i]);
}

int main(int argc, char **argv) {
    int r;

    const char *vrf = getenv("RAILGATE_E2E_VRF");

    for (int i = 1; i < argc; i++)
        if (streq(argv[i], "--quiet"))
            verbose = false;
        else if (streq(argv[i], "--vrf") && i + 1 < argc)
            vrf = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quiet] [--vrf table|device]\n", argv[0]);
            return 2;
        }
    if (vrf && !streq(vrf, "table") && !streq(vrf, "device")) {
        fprintf(stderr, "--vrf (RAILGATE_E2E_VRF) takes table or device, not %s\n", vrf);
        return 2;
    }
    vrf_devices = vrf && streq(vrf, "device");
    r = testns_require_root();
    if (r)
        return r;
    if (vrf_devices && !vrf_driver()) {
        printf("SKIP: VRF devices asked for (--vrf device), and this kernel has no vrf driver\n");
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    sweep_stale();
    snprintf(prefix, sizeof(prefix), "rge2e%d", (int)getpid());
    snprintf(tmp, sizeof(tmp), "/tmp/rg-e2e-XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    atexit(fabric_cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGABRT, on_signal);

    section(vrf_devices ? "fabric: 2 nodes x 4 veth rails, 4 leaves with a VRF device per tenant, "
                          "1 spine; a VRF device per tenant in the pods"
                        : "fabric: 2 nodes x 4 veth rails, 4 leaves with a VRF table per tenant, "
                          "1 spine; a table per rail in the pods");
    r = sh("ip netns add %s-spine && ip netns exec %s-spine sysctl -qw net.ipv4.ip_forward=1",
           prefix, prefix);
    if (!r && vrf_devices) {
        char spine[48];
        snprintf(spine, sizeof(spine), "%s-spine", prefix);
        r = vrf_devices_add(spine);
    }
    for (unsigned k = 0; k < RAILS && !r; k++)
        r = sh("ip netns add %s-leaf%u && ip -n %s-leaf%u link set lo up", prefix, k, prefix, k);
    for (unsigned i = 0; i < NODES && r >= 0; i++) {
        nodes[i].n = i + 1;
        r = node_setup(&nodes[i]);
    }
    for (unsigned k = 0; k < RAILS && r >= 0; k++)
        r = leaf_setup(k);
    check(r >= 0, "namespaces, veth rails, leaf and spine routing set up");
    if (r >= 0)
        scenario();
    printf("\n== %u checks, %u failed\n", checks, failures);
    return failures ? 1 : 0;
}
