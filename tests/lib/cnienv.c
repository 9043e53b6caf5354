/* SPDX-License-Identifier: Apache-2.0 */
/* CNI test node: rails, tenants, a bin dir of links, pod namespaces, plugin runs. */
#include "cnienv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "testns.h"
#include "waitscale.h"

extern char **environ;

static char **env_with(char *const *extra, size_t *ret_k);
static void env_free(char **env);

#define MAX_PODS 64
static char pods[MAX_PODS][64];
static bool cleanup_registered;

int ip_cmd(const char *netns, const char *args) {
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "ip %s%s %s >/dev/null 2>&1", netns ? "-n " : "", netns ? netns : "",
             args);
    int st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* All of `ip`'s output (a link with hundreds of alternative names prints
 * more than 64 KB: read to the end, or ip blocks and pclose() with it). */
static char *ip_output(const char *netns, const char *flags, const char *args) {
    char cmd[1024];
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    FILE *f;

    snprintf(cmd, sizeof(cmd), "ip %s%s %s %s 2>/dev/null", netns ? "-n " : "", netns ? netns : "",
             flags, args);
    f = popen(cmd, "r");
    if (!f || !buf) {
        free(buf);
        if (f)
            pclose(f);
        return NULL;
    }
    for (size_t k; (k = fread(buf + len, 1, cap - 1 - len, f)) > 0;) {
        len += k;
        if (len == cap - 1) {
            char *m = realloc(buf, cap * 2);
            if (!m)
                break;
            buf = m;
            cap *= 2;
        }
    }
    buf[len] = 0;
    pclose(f);
    return buf;
}

json_t *ip_json(const char *netns, const char *args) {
    char *out = ip_output(netns, "-j", args);
    json_t *j = out ? json_loads(out, 0, NULL) : NULL;

    free(out);
    return j;
}

bool ip_has(const char *netns, const char *args, const char *needle) {
    char *out = ip_output(netns, "", args);
    bool found = out && strstr(out, needle);

    free(out);
    return found;
}

static void pods_cleanup(void) {
    for (int i = 0; i < MAX_PODS; i++)
        if (pods[i][0]) {
            char args[sizeof(pods[i]) + 16];
            snprintf(args, sizeof(args), "netns del %.63s", pods[i]);
            ip_cmd(NULL, args);
            pods[i][0] = 0;
        }
}

static void on_signal(int sig) {
    pods_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Pod namespaces of a SIGKILLed run: rgp<pid>-<n> with a dead pid. */
static void sweep_stale_pods(void) {
    DIR *d = opendir("/run/netns");

    for (struct dirent *de; d && (de = readdir(d));) {
        int pid;
        char args[300];
        if (sscanf(de->d_name, "rgp%d-", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
            errno != ESRCH)
            continue;
        snprintf(args, sizeof(args), "netns del %s", de->d_name);
        ip_cmd(NULL, args);
    }
    if (d)
        closedir(d);
}

int cnienv_pod_netns(const char *name, char *path, size_t n) {
    char args[128];

    if (!cleanup_registered) {
        atexit(pods_cleanup);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGABRT, on_signal);
        cleanup_registered = true;
        sweep_stale_pods();
    }
    snprintf(args, sizeof(args), "netns add %s", name);
    if (ip_cmd(NULL, args) < 0)
        return -EIO;
    for (int i = 0; i < MAX_PODS; i++)
        if (!pods[i][0]) {
            snprintf(pods[i], sizeof(pods[i]), "%s", name);
            break;
        }
    ip_cmd(name, "link set lo up");
    snprintf(path, n, "/run/netns/%s", name);
    return 0;
}

void cnienv_pod_netns_del(const char *name) {
    char args[128];

    snprintf(args, sizeof(args), "netns del %s", name);
    ip_cmd(NULL, args);
    for (int i = 0; i < MAX_PODS; i++)
        if (strcmp(pods[i], name) == 0)
            pods[i][0] = 0;
}

int cnienv_pod_new(CniEnvT *e, CniPod *p, const char *prefix, const char *ns, const char *resource,
                   char *const *ids, size_t n) {
    static unsigned seq;

    memset(p, 0, sizeof(*p));
    seq++;
    snprintf(p->name, sizeof(p->name), "%s%u", prefix, seq);
    snprintf(p->ns, sizeof(p->ns), "%s", ns);
    snprintf(p->nsname, sizeof(p->nsname), "rgp%d-%u", (int)getpid(), seq);
    snprintf(p->container, sizeof(p->container), "%c%08x%u", prefix[0], (unsigned)getpid(), seq);
    if (cnienv_pod_netns(p->nsname, p->netns, sizeof(p->netns)) < 0)
        return -1;
    return n ? fk_pod_set(e->k, ns, p->name, resource, ids, n) : 0;
}

void cnienv_pod_free(CniEnvT *e, CniPod *p) {
    fk_pod_remove(e->k, p->ns, p->name);
    cnienv_pod_netns_del(p->nsname);
    free(p->result);
    p->result = NULL;
}

int cnienv_pod_cmd(const CniEnvT *e, const CniPod *p, const char *cmd, char *const *env_extra,
                   CniRun *ret) {
    char *conf = cnienv_conf("1.1.0", NULL);
    int r = conf ? cnienv_run(e, "railgate", cmd, p->container, p->netns, "eth0", p->ns, p->name,
                              conf, env_extra, ret)
                 : -ENOMEM;

    free(conf);
    return r;
}

bool cnienv_nothing_moved(const CniEnvT *e, const CniPod *p, unsigned rail) {
    char nic[32];

    snprintf(nic, sizeof(nic), "rail-nic%u", rail);
    return link_on_host(nic) && !ip_has(p->nsname, "link show", "rail") &&
           cnienv_state_count(e, "attachments") == 0 && cnienv_state_count(e, "units") == 0;
}

size_t cnienv_state_count(const CniEnvT *e, const char *sub) {
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", e->state, sub);
    return dir_entries(path);
}

static void config_rails(const CniEnvT *e, FILE *f) {
    for (unsigned k = 0; k < e->n_rails; k++) {
        bool ipam = k == 16 || k == 17;
        fprintf(f, "  {\"index\": %u, \"nic\": {\"name\": \"rail-nic%u\"}, \"mtu\": 9000,", k, k);
        if (ipam)
            fprintf(f, " \"addressing\": \"ipam\", \"gateway\": \"10.%u.0.1\"}", 34 + k);
        else
            fprintf(f, " \"addresses\": [\"10.%u.0.2/24\"], \"gateway\": \"10.%u.0.1\"}", 100 + k,
                    100 + k);
        fprintf(f, "%s\n", k + 1 < e->n_rails ? "," : "");
    }
}

static int write_config(const CniEnvT *e) {
    FILE *f = fopen(e->config, "we");

    if (!f)
        return -errno;
    fprintf(f, "{\"kubeletDir\": \"%s\", \"stateDir\": \"%s\", \"logFile\": \"%s\",\n", e->kubelet,
            e->state, e->log);
    fprintf(f, " \"sysfsRoot\": \"%s\",\n", e->sys);
    if (e->kubeconfig[0])
        fprintf(f, " \"mode\": \"dra\", \"cdiDir\": \"%s\",\n", e->cdi);
    fprintf(f, " \"rails\": [\n");
    config_rails(e, f);
    fprintf(f, " ],\n \"tenants\": [\n"
               "  {\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [");
    for (unsigned k = 0; k < 16 && k < e->n_rails; k++)
        fprintf(f, "%s%u", k ? ", " : "", k);
    fprintf(f, "],\n   \"vrf\": {\"table\": 100, \"prefixes\": [\"10.64.0.0/10\"]}},\n"
               "  {\"name\": \"b\", \"namespaces\": [\"team-b\"], \"rails\": [");
    for (unsigned k = 16; k < e->n_rails; k++)
        fprintf(f, "%s%u", k > 16 ? ", " : "", k);
    /* rails 16 and 17 are on "addressing": "ipam": host-local, one range set per rail */
    fprintf(f,
            "],\n   \"vrf\": {\"table\": 200, \"prefixes\": [\"10.32.0.0/11\"]},\n"
            "   \"ipam\": {\"type\": \"host-local\", \"dataDir\": \"%s\", \"ranges\": ["
            "[{\"subnet\": \"10.50.0.0/24\", \"gateway\": \"10.50.0.1\"}], "
            "[{\"subnet\": \"10.51.0.0/24\", \"gateway\": \"10.51.0.1\"}]]}}\n ]}\n",
            e->ipamdir);
    fclose(f);
    return 0;
}

static int make_bindir(const CniEnvT *e) {
    static const char *const ref[] = {"host-local", "static", "ptp", "bridge", "host-device"};
    char link[256];

    if (mkdir(e->bindir, 0755) < 0)
        return -errno;
    snprintf(link, sizeof(link), "%s/railgate", e->bindir);
    if (symlink(proc_bin("cni/railgate"), link) < 0)
        return -errno;
    for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
        char target[128];
        snprintf(target, sizeof(target), "/usr/lib/cni/%s", ref[i]);
        snprintf(link, sizeof(link), "%s/%s", e->bindir, ref[i]);
        if (access(target, X_OK) == 0 && symlink(target, link) < 0)
            return -errno;
    }
    return 0;
}

bool cnienv_rails_anchored(void) {
    return testns_rail_kind_used() != RAIL_KIND_VETH;
}

/* The named kind, or exit 77 where this kernel cannot make it (testns) or
 * the CNI could not anchor it (no 8021q driver): never a veth instead. */
static void rails_kind_check(void) {
    RailKind kind = testns_rail_kind_used();
    int r;

    if (kind == RAIL_KIND_VETH)
        return;
    r = testns_kind_anchorable(kind);
    if (r == 0) {
        printf("SKIP: the CNI moves a %s rail only with an anchor, a VLAN it makes on it in the "
               "host namespace, and this kernel cannot make one (no 8021q driver)\n",
               testns_rail_kind_name(kind));
        fflush(stdout);
        exit(77);
    }
    if (r < 0) {
        printf("cannot check for VLANs on a %s link: %s\n", testns_rail_kind_name(kind),
               strerror(-r));
        fflush(stdout);
        exit(1);
    }
    printf("rails: %s, anchored by the CNI (a VLAN on each in the host namespace)\n",
           testns_rail_kind_name(kind));
    fflush(stdout);
}

size_t cnienv_host_vlans(void) {
    json_t *l = ip_json(NULL, "-d link show"), *o;
    size_t i, n = 0;

    json_array_foreach(l, i, o) {
        const char *k =
            json_string_value(json_object_get(json_object_get(o, "linkinfo"), "info_kind"));
        n += k && strcmp(k, "vlan") == 0;
    }
    json_decref(l);
    return n;
}

/* The "anchor" object of unit's NIC in the record of container/ifname
 * (a reference of the caller's), or NULL. */
static json_t *record_anchor(const CniEnvT *e, const char *container, const char *ifname,
                             const char *unit) {
    char path[512];
    json_t *rec, *nic, *anchor = NULL;
    size_t i;

    snprintf(path, sizeof(path), "%s/attachments/%s:%s.json", e->state, container, ifname);
    rec = json_load_file(path, 0, NULL);
    json_array_foreach(json_object_get(rec, "nics"), i, nic) {
        const char *u = json_string_value(json_object_get(nic, "unit"));
        if (u && strcmp(u, unit) == 0 && json_object_get(nic, "anchor"))
            anchor = json_object_get(nic, "anchor");
    }
    json_incref(anchor);
    json_decref(rec);
    return anchor;
}

int cnienv_anchor_name(const CniEnvT *e, const char *container, const char *ifname,
                       const char *unit, char *name) {
    json_t *anchor = record_anchor(e, container, ifname, unit);
    const char *a = json_string_value(json_object_get(anchor, "name"));
    int r = -ENOENT;

    if (a && strlen(a) < 16) {
        snprintf(name, 16, "%s", a);
        r = 0;
    }
    json_decref(anchor);
    return r;
}

int cnienv_anchor_ifindex(const CniEnvT *e, const char *container, const char *ifname,
                          const char *unit) {
    json_t *anchor = record_anchor(e, container, ifname, unit);
    int r = anchor ? (int)json_integer_value(json_object_get(anchor, "ifindex")) : -ENOENT;

    json_decref(anchor);
    return r;
}

static int rails_up(const CniEnvT *e) {
    char nic[32], cidr[32];
    int r;

    for (unsigned k = 0; k < e->n_rails; k++) {
        snprintf(nic, sizeof(nic), "rail-nic%u", k);
        snprintf(cidr, sizeof(cidr), "10.99.%u.1/24", k);
        r = testns_rail_add(k);
        r = r ?: testns_addr_add(nic, cidr);
        if (r < 0)
            return r;
    }
    return 0;
}

int cnienv_publish(const CniEnvT *e) {
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"), "--config", (char *)e->config,
                    "--publish-inventory", NULL};

    return proc_run(argv, e->log);
}

static bool agent_answers(void *arg) {
    const CniEnvT *e = arg;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    bool ok;

    if (strlen(e->agent_sock) >= sizeof(sa.sun_path)) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    memcpy(sa.sun_path, e->agent_sock, strlen(e->agent_sock) + 1);
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int cnienv_agent_start(CniEnvT *e, char *const *env_extra) {
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"),
                    "--config",
                    e->config,
                    "--log-level",
                    "debug",
                    NULL};
    char kc[192] = "", *extra[40] = {0};
    size_t k = 0;

    /* DRA mode: the API server and this node's name, after the caller's */
    for (size_t i = 0; env_extra && env_extra[i] && k < 36; i++)
        extra[k++] = env_extra[i];
    if (e->kubeconfig[0]) {
        snprintf(kc, sizeof(kc), "KUBECONFIG=%s", e->kubeconfig);
        extra[k++] = kc;
        extra[k++] = "NODE_NAME=" CNIENV_NODE;
    }
    char **env = env_with(extra, &k);

    if (e->agent > 0)
        return -EBUSY;
    e->agent = proc_spawn_env(argv, env, e->agent_log);
    env_free(env);
    if (e->agent <= 0)
        return -ECHILD;
    return testns_wait_until(agent_answers, e, wait_scaled_ms(20000)) ? 0 : -ETIMEDOUT;
}

int cnienv_agent_stop(CniEnvT *e) {
    int r = e->agent > 0 ? proc_stop(e->agent, 10000) : 0;

    e->agent = 0;
    return r;
}

int cnienv_agent_restart(CniEnvT *e, char *const *env_extra) {
    int r = cnienv_agent_stop(e);

    return r != 0 ? (r > 0 ? -ECHILD : r) : cnienv_agent_start(e, env_extra);
}

/* The node config with key set to value (taken; NULL: as it is) and tenant
 * b's IPAM type (NULL: as it is); the text before in *ret_saved. */
static int config_edit(const CniEnvT *e, const char *key, json_t *value, const char *ipam_type,
                       char **ret_saved) {
    json_error_t jerr;
    json_t *c = json_load_file(e->config, 0, &jerr);
    char *text = c ? json_dumps(c, JSON_INDENT(1)) : NULL;
    int r = c && text ? 0 : -EINVAL;

    if (r >= 0 && value)
        json_object_set(c, key, value);
    if (r >= 0 && ipam_type) {
        json_t *t = json_array_get(json_object_get(c, "tenants"), 1);
        json_object_set_new(json_object_get(t, "ipam"), "type", json_string(ipam_type));
    }
    if (r >= 0 && json_dump_file(c, e->config, JSON_INDENT(1)) < 0)
        r = -EIO;
    json_decref(value);
    json_decref(c);
    if (r < 0)
        free(text);
    else
        *ret_saved = text;
    return r;
}

int cnienv_config_patch(const CniEnvT *e, json_t *timeouts, const char *ipam_type,
                        char **ret_saved) {
    return config_edit(e, "timeouts", timeouts, ipam_type, ret_saved);
}

int cnienv_config_set(const CniEnvT *e, const char *key, json_t *value, char **ret_saved) {
    return config_edit(e, key, value, NULL, ret_saved);
}

int cnienv_config_restore(const CniEnvT *e, char *saved) {
    FILE *f = fopen(e->config, "we");
    int r = f && fputs(saved, f) >= 0 ? 0 : -EIO;

    if (f && fclose(f) != 0)
        r = -EIO;
    free(saved);
    return r;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

static void tmp_remove(const char *tmp) {
    char sys[96];

    if (!tmp[0])
        return;
    /* the node's sysfs view first: nothing under it is removed */
    snprintf(sys, sizeof(sys), "%s/sys", tmp);
    if (testns_named_remove(sys) < 0)
        (void)umount2(sys, MNT_DETACH);
    if (getenv("RAILGATE_TEST_KEEP"))
        fprintf(stderr, "kept %s\n", tmp);
    else
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* The temp dir of the node set up last, removed at exit when a failed group
 * setup never reaches cnienv_teardown. */
static char exit_tmp[64];
static bool exit_tmp_registered;

static void tmp_remove_at_exit(void) {
    tmp_remove(exit_tmp);
}

static int setup(CniEnvT *e, unsigned n_rails, const char *kubeconfig) {
    int r;

    memset(e, 0, sizeof(*e));
    e->n_rails = n_rails;
    /* the CNI brings a moved rail home by what the pod cannot forge: a
     * parent device, a veth's peer left outside the pod, or the anchor it
     * makes on a rail with neither */
    rails_kind_check();
    /* a plugin may stop reading stdin early (oversized input): EPIPE, not death */
    signal(SIGPIPE, SIG_IGN);
    snprintf(e->tmp, sizeof(e->tmp), "/tmp/rg-cni-XXXXXX");
    if (!mkdtemp(e->tmp))
        return -errno;
    if (!exit_tmp_registered && atexit(tmp_remove_at_exit) != 0)
        return -ENOMEM;
    exit_tmp_registered = true;
    snprintf(exit_tmp, sizeof(exit_tmp), "%s", e->tmp);
    snprintf(e->kubelet, sizeof(e->kubelet), "%s/kubelet", e->tmp);
    snprintf(e->state, sizeof(e->state), "%s/state", e->tmp);
    snprintf(e->config, sizeof(e->config), "%s/node.json", e->tmp);
    snprintf(e->bindir, sizeof(e->bindir), "%s/bin", e->tmp);
    snprintf(e->ipamdir, sizeof(e->ipamdir), "%s/ipam", e->tmp);
    snprintf(e->log, sizeof(e->log), "%s/cni.log", e->tmp);
    snprintf(e->agent_log, sizeof(e->agent_log), "%s/agent.log", e->tmp);
    snprintf(e->agent_sock, sizeof(e->agent_sock), "%s/agent.sock", e->state);
    if (kubeconfig) {
        snprintf(e->kubeconfig, sizeof(e->kubeconfig), "%s", kubeconfig);
        snprintf(e->cdi, sizeof(e->cdi), "%s/cdi", e->tmp);
    }
    /* the CNI and the agent read the node's links in a sysfs of this
     * namespace, as on a node (the process's /sys shows the real host's) */
    snprintf(e->sys, sizeof(e->sys), "%s/sys", e->tmp);
    r = testns_sysfs_mount(e->sys);
    if (r >= 0)
        r = make_bindir(e);
    if (r >= 0)
        r = rails_up(e);
    if (r >= 0)
        r = write_config(e);
    if (r >= 0)
        r = fk_start(e->kubelet, &e->k);
    /* the node agent publishes the inventory as it starts, then answers */
    if (r >= 0)
        r = cnienv_agent_start(e, NULL);
    return r;
}

int cnienv_setup(CniEnvT *e, unsigned n_rails) {
    return setup(e, n_rails, NULL);
}

int cnienv_setup_dra(CniEnvT *e, unsigned n_rails, const char *kubeconfig) {
    return setup(e, n_rails, kubeconfig);
}

void cnienv_teardown(CniEnvT *e) {
    cnienv_agent_stop(e);
    fk_stop(e->k);
    e->k = NULL;
    pods_cleanup();
    tmp_remove(e->tmp);
    exit_tmp[0] = 0;
}

char *cnienv_conf(const char *version, const char *extra) {
    char *s = NULL;

    if (asprintf(&s, "{\"cniVersion\": \"%s\", \"name\": \"rails\", \"type\": \"railgate\"%s%s}",
                 version, extra && *extra ? ", " : "", extra ? extra : "") < 0)
        return NULL;
    return s;
}

/* This process's environment without CNI_* and failpoints, extras first
 * (getenv() returns the first match, so they override), with room for 16
 * more; *ret_k: the entries so far. */
static char **env_with(char *const *extra, size_t *ret_k) {
    size_t n = 0, k = 0;

    while (environ[n])
        n++;
    char **env = calloc(n + 48, sizeof(char *));
    for (size_t i = 0; extra && extra[i] && k < 31; i++)
        env[k++] = strdup(extra[i]);
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CNI_", 4) && strncmp(environ[i], "RAILGATE_FAILPOINT", 18))
            env[k++] = strdup(environ[i]);
    *ret_k = k;
    return env;
}

static void env_free(char **env) {
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

static char **run_env(const CniEnvT *e, const char *command, const char *container,
                      const char *netns, const char *ifname, const char *pod_ns,
                      const char *pod_name, char *const *extra) {
    size_t k;
    char **env = env_with(extra, &k);
#define PUSHF(...)                                                                                 \
    do {                                                                                           \
        if (asprintf(&env[k], __VA_ARGS__) >= 0)                                                   \
            k++;                                                                                   \
    } while (0)
    if (command)
        PUSHF("CNI_COMMAND=%s", command);
    if (container)
        PUSHF("CNI_CONTAINERID=%s", container);
    if (netns)
        PUSHF("CNI_NETNS=%s", netns);
    if (ifname)
        PUSHF("CNI_IFNAME=%s", ifname);
    if (pod_ns)
        PUSHF("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
              "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-%s",
              pod_ns, pod_name, container ? container : "", pod_name);
    PUSHF("CNI_PATH=%s", e->bindir);
    PUSHF("RAILGATE_NODE_CONFIG=%s", e->config);
#undef PUSHF
    return env;
}

int cni_spawn(const char *path, char *const envp[], const char *stdin_json, const char *netns_path,
              const char *stderr_log, CniProc *ret) {
    int in[2], out[2];

    *ret = (CniProc){.pid = -1, .out = -1};
    if (pipe2(in, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(out, O_CLOEXEC) < 0) {
        int r = -errno;
        close(in[0]);
        close(in[1]);
        return r;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (netns_path) {
            int fd = open(netns_path, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
                _exit(126);
        }
        if (stderr_log) {
            int efd = open(stderr_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (efd >= 0)
                dup2(efd, 2);
        }
        dup2(in[0], 0);
        dup2(out[1], 1);
        char *argv[] = {(char *)path, NULL};
        execve(path, argv, envp);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return -errno;
    }
    /* a config is far below a pipe's buffer: this never waits for the plugin */
    (void)!write(in[1], stdin_json ? stdin_json : "", stdin_json ? strlen(stdin_json) : 0);
    close(in[1]);
    ret->pid = pid;
    ret->out = out[0];
    return 0;
}

int cni_proc_wait_stopped(CniProc *p) {
    int st = 0;

    if (waitpid(p->pid, &st, WUNTRACED) != p->pid)
        return -errno;
    if (WIFSTOPPED(st))
        return 0;
    /* it ended without reaching the failpoint */
    fprintf(stderr, "cni_proc_wait_stopped: the plugin %s %d instead of stopping\n",
            WIFEXITED(st) ? "exited with" : "died of signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    p->ended = true;
    return -ECHILD;
}

int cni_proc_continue(CniProc *p) {
    return kill(p->pid, SIGCONT) < 0 ? -errno : 0;
}

int cni_proc_finish(CniProc *p, CniRun *ret) {
    int st = 0;
    size_t len = 0;
    ssize_t k;

    memset(ret, 0, sizeof(*ret));
    while ((k = read(p->out, ret->raw + len, sizeof(ret->raw) - 1 - len)) > 0)
        len += (size_t)k;
    ret->raw[len] = 0;
    close(p->out);
    p->out = -1;
    if (!p->ended) {
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
            ;
        p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        p->ended = true;
    }
    ret->status = p->status;
    ret->out = len ? json_loads(ret->raw, 0, NULL) : NULL;
    return 0;
}

int cni_exec(const char *path, char *const envp[], const char *stdin_json, const char *netns_path,
             const char *stderr_log, CniRun *ret) {
    CniProc p;
    int r;

    memset(ret, 0, sizeof(*ret));
    r = cni_spawn(path, envp, stdin_json, netns_path, stderr_log, &p);
    return r < 0 ? r : cni_proc_finish(&p, ret);
}

static char *plugin_path(const CniEnvT *e, const char *plugin) {
    char *path = NULL;

    return asprintf(&path, "%s/%s", e->bindir, plugin) < 0 ? NULL : path;
}

int cnienv_start(const CniEnvT *e, const char *plugin, const char *command, const char *container,
                 const char *netns, const char *ifname, const char *pod_ns, const char *pod_name,
                 const char *stdin_json, char *const *env_extra, CniProc *ret) {
    char **env = run_env(e, command, container, netns, ifname, pod_ns, pod_name, env_extra);
    char *path = plugin_path(e, plugin);
    int r = path ? cni_spawn(path, env, stdin_json, NULL, e->plugin_stderr, ret) : -ENOMEM;

    free(path);
    env_free(env);
    return r;
}

int cnienv_run(const CniEnvT *e, const char *plugin, const char *command, const char *container,
               const char *netns, const char *ifname, const char *pod_ns, const char *pod_name,
               const char *stdin_json, char *const *env_extra, CniRun *ret) {
    CniProc p;
    int r;

    memset(ret, 0, sizeof(*ret));
    r = cnienv_start(e, plugin, command, container, netns, ifname, pod_ns, pod_name, stdin_json,
                     env_extra, &p);
    return r < 0 ? r : cni_proc_finish(&p, ret);
}

int cni_run_code(const CniRun *r) {
    return (int)json_integer_value(json_object_get(r->out, "code"));
}

const char *cni_run_msg(const CniRun *r) {
    const char *m = json_string_value(json_object_get(r->out, "msg"));
    return m ? m : "";
}

bool link_on_host(const char *dev) {
    char args[64];

    snprintf(args, sizeof(args), "link show dev %s", dev);
    return ip_cmd(NULL, args) == 0;
}

void cni_run_done(CniRun *r) {
    json_decref(r->out);
    r->out = NULL;
}

/*
 * What a holder can change on dev beyond link_state(), as iproute2 shows
 * it: flags, operstate, link mode, group, queue length, broadcast,
 * promiscuity, GSO/GRO limits, protodown, XDP, and the kind's own data (a
 * macvlan's mode, flags, source list, broadcast queue).
 */
char *cnienv_link_settings(const char *netns, const char *dev) {
    static const char *const keys[] = {
        "flags",        "operstate",           "linkmode",          "group",        "txqlen",
        "broadcast",    "promiscuity",         "allmulti",          "gso_max_size", "gso_max_segs",
        "gro_max_size", "gso_ipv4_max_size",   "gro_ipv4_max_size", "proto_down",   "xdp",
        "qdisc",        "inet6_addr_gen_mode",
    };
    char args[128];
    json_t *l, *o, *out;

    snprintf(args, sizeof(args), "-d link show dev %s", dev);
    l = ip_json(netns, args);
    o = json_array_get(l, 0);
    out = json_object();
    if (!o || !out) {
        json_decref(l);
        json_decref(out);
        return NULL;
    }
    for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (v)
            json_object_set(out, keys[i], v);
    }
    /* UNKNOWN is what a driver that never reports carrier shows (a dummy)
     * until a carrier change makes the kernel work it out: UP then. Both
     * are running (IFF_RUNNING), and no request sets UNKNOWN back. */
    const char *oper = json_string_value(json_object_get(out, "operstate"));
    if (oper && streq(oper, "UNKNOWN"))
        json_object_set_new(out, "operstate", json_string("UP"));
    json_t *data = json_object_get(json_object_get(o, "linkinfo"), "info_data");
    if (data)
        json_object_set(out, "info_data", data);
    char *text = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(out);
    json_decref(l);
    return text;
}

char *cnienv_ethtool_show(const char *what, const char *dev) {
    char cmd[160], *buf = calloc(1, 16384);
    size_t n = 0;
    FILE *f;

    snprintf(cmd, sizeof(cmd), "/usr/sbin/ethtool %s %s 2>&1", what, dev);
    f = buf ? popen(cmd, "r") : NULL;
    if (!f) {
        free(buf);
        return NULL;
    }
    for (size_t k; (k = fread(buf + n, 1, 16383 - n, f)) > 0;)
        n += k;
    pclose(f);
    return buf;
}

char *cnienv_queue_settings(const CniEnvT *e, const char *dev) {
    static const char *const files[] = {"gro_flush_timeout",
                                        "napi_defer_hard_irqs",
                                        "threaded",
                                        "queues/rx-0/rps_cpus",
                                        "queues/rx-0/rps_flow_cnt",
                                        "queues/tx-0/tx_maxrate",
                                        "queues/tx-0/xps_cpus",
                                        "queues/tx-0/byte_queue_limits/limit_max",
                                        "queues/tx-0/byte_queue_limits/limit_min",
                                        "queues/tx-0/byte_queue_limits/hold_time"};
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);

    if (!m)
        return NULL;
    for (size_t i = 0; i < ELEMENTSOF(files); i++) {
        char path[256], line[256] = "-";
        snprintf(path, sizeof(path), "%s/class/net/%s/%s", e->sys, dev, files[i]);
        FILE *f = fopen(path, "re");
        if (f && !fgets(line, sizeof(line), f))
            snprintf(line, sizeof(line), "-");
        if (f)
            fclose(f);
        line[strcspn(line, "\n")] = 0;
        fprintf(m, "%s%s=%s", i ? " " : "", files[i], line);
    }
    fclose(m);
    return out;
}
