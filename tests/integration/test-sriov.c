/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VF mode on real SR-IOV VFs: a PF found in the live sysfs (QEMU's igb
 * under tests/vm/run.sh --sriov), VFs made by writing sriov_numvfs, the
 * real device plugin under the fake kubelet resolving its units from the
 * PF's virtfn links, the real CNI moving a VF into a pod and home again
 * (also after the pod's namespace is gone), the PF staying on the node. The
 * VF's admin state as the PF has it (iproute2's view of IFLA_VFINFO_LIST):
 * MAC pinned, spoof checking on, trust off, link state auto while a pod
 * holds the VF, and as it was before once the VF is home; the tenant, with
 * NET_ADMIN in its pod, cannot change it from inside. Unit health follows
 * the PF's link. Exits 77 without an SR-IOV PF: it never touches a host's
 * NIC unless it is QEMU's (subsystem vendor 1af4) or RAILGATE_TEST_SRIOV_PF
 * names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cnienv.h"
#include "fakekubelet.h"
#include "fileio.h"
#include "macro.h"
#include "netlink.h"
#include "netns.h"
#include "podnic.h"
#include "proc.h"
#include "testns.h"
#include "waitscale.h"

#define RES "railgate.io/a"
#define N_VFS 2
#define PRESET_MAC "02:00:00:00:aa:01" /* VF 0's administrative MAC before the first ADD */
#define ZERO_MAC "00:00:00:00:00:00"

static CniEnvT env;
static char pf[IF_NAMESIZE], pf_pci[16], sys_pf[256];
static char vf_pci[N_VFS][16];
static bool pf_was_up;
static int pf_ifindex;
static pid_t plugin;
static char plugin_log[256];
static char rail_extra[256]; /* the rail's vfConfig member, "" for the defaults */

/* ---- sysfs and iproute2 views --------------------------------------------- */

static int write_str(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t k;

    if (fd < 0)
        return -errno;
    k = write(fd, s, strlen(s));
    int e = k < 0 ? -errno : 0;
    close(fd);
    return e;
}

/* The netdev of VF j in the host, "" when it has none there. */
static void vf_netdev(unsigned j, char *buf, size_t n) {
    char dir[320];
    DIR *d;

    buf[0] = 0;
    snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/net", vf_pci[j]);
    d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] != '.')
            snprintf(buf, n, "%.15s", de->d_name);
    if (d)
        closedir(d);
}

static void netdev_mac(const char *dev, char *buf, size_t n) {
    char path[128];

    snprintf(path, sizeof(path), "/sys/class/net/%s/address", dev);
    if (file_read_line(path, buf, n) < 0)
        buf[0] = 0;
}

/* What the PF says of VF j (iproute2: `ip -d -j link show dev <pf>`). */
typedef struct VfView {
    char mac[18];
    int spoofchk, trust; /* -1: not reported */
    char link_state[16];
} VfView;

static void vf_view(unsigned j, VfView *v) {
    char args[64];
    json_t *l, *e;
    size_t i;

    memset(v, 0, sizeof(*v));
    v->spoofchk = v->trust = -1;
    snprintf(args, sizeof(args), "-d link show dev %s", pf);
    l = ip_json(NULL, args);
    json_array_foreach(json_object_get(json_array_get(l, 0), "vfinfo_list"), i, e) {
        if (json_integer_value(json_object_get(e, "vf")) != (json_int_t)j)
            continue;
        snprintf(v->mac, sizeof(v->mac), "%s",
                 json_string_value(json_object_get(e, "address")) ?: "");
        if (json_is_boolean(json_object_get(e, "spoofchk")))
            v->spoofchk = json_is_true(json_object_get(e, "spoofchk"));
        if (json_is_boolean(json_object_get(e, "trust")))
            v->trust = json_is_true(json_object_get(e, "trust"));
        snprintf(v->link_state, sizeof(v->link_state), "%s",
                 json_string_value(json_object_get(e, "link_state")) ?: "");
    }
    json_decref(l);
}

static void assert_vf(unsigned j, const char *mac, int spoofchk, int trust) {
    VfView v;

    vf_view(j, &v);
    if (strcmp(v.mac, mac) || v.spoofchk != spoofchk || v.trust != trust ||
        strcmp(v.link_state, "auto"))
        fail_msg("PF %s VF %u: mac %s spoofchk %d trust %d link-state %s; want %s %d %d auto", pf,
                 j, v.mac, v.spoofchk, v.trust, v.link_state, mac, spoofchk, trust);
}

/* The VF's admin state set from the host, as an operator's own settings. */
static void vf_preset(unsigned j, const char *mac, bool spoofchk, bool trust) {
    char args[160];

    snprintf(args, sizeof(args), "link set dev %s vf %u mac %s spoofchk %s trust %s", pf, j, mac,
             spoofchk ? "on" : "off", trust ? "on" : "off");
    assert_int_equal(ip_cmd(NULL, args), 0);
    assert_vf(j, mac, spoofchk, trust);
}

/* Before an ADD: VF j's admin state set from the host as given, and its
 * netdev's name and MAC, which the VF must come home with. */
static void vf_before(unsigned j, const char *mac, bool spoofchk, bool trust,
                      char name[IF_NAMESIZE], char host_mac[18]) {
    if (mac)
        vf_preset(j, mac, spoofchk, trust);
    vf_netdev(j, name, IF_NAMESIZE);
    netdev_mac(name, host_mac, 18);
}

/* ---- the PF ----------------------------------------------------------------- */

/* QEMU's devices carry subsystem vendor 1af4; anything else is a real NIC
 * that the test touches only when RAILGATE_TEST_SRIOV_PF names it. */
static bool pf_usable(const char *dev, const char *want) {
    char path[300], buf[64];

    snprintf(path, sizeof(path), "/sys/class/net/%s/device/sriov_totalvfs", dev);
    if (file_read_line(path, buf, sizeof(buf)) < 0 || atoi(buf) < N_VFS)
        return false;
    if (want)
        return streq(want, dev);
    snprintf(path, sizeof(path), "/sys/class/net/%s/device/subsystem_vendor", dev);
    if (file_read_line(path, buf, sizeof(buf)) < 0 || !streq(buf, "0x1af4")) {
        fprintf(stderr,
                "test-sriov: %s is an SR-IOV PF of a real device; set RAILGATE_TEST_SRIOV_PF=%s "
                "to let this test make VFs on it\n",
                dev, dev);
        return false;
    }
    return true;
}

static bool pf_find(void) {
    const char *want = getenv("RAILGATE_TEST_SRIOV_PF");
    DIR *d = opendir("/sys/class/net");

    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] != '.' && !pf[0] && pf_usable(de->d_name, want))
            snprintf(pf, sizeof(pf), "%.15s", de->d_name);
    if (d)
        closedir(d);
    return pf[0];
}

static bool vfs_have_netdevs(void *arg) {
    char dev[IF_NAMESIZE];

    for (unsigned j = 0; j < N_VFS; j++) {
        vf_netdev(j, dev, sizeof(dev));
        if (!dev[0])
            return false;
    }
    return true;
}

static void vfs_remove(void) {
    char path[300];

    if (!sys_pf[0])
        return;
    snprintf(path, sizeof(path), "%s/sriov_numvfs", sys_pf);
    (void)write_str(path, "0");
    if (!pf_was_up && pf[0]) {
        char args[64];
        snprintf(args, sizeof(args), "link set dev %s down", pf);
        ip_cmd(NULL, args);
    }
    sys_pf[0] = 0;
}

static double now_s(void) {
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* N_VFS VFs on the PF, with their netdevs bound (igbvf). */
static void vfs_make(void) {
    char path[320], buf[64], args[64];
    Link l;

    snprintf(sys_pf, sizeof(sys_pf), "/sys/class/net/%s/device", pf);
    snprintf(path, sizeof(path), "%s/sriov_numvfs", sys_pf);
    assert_int_equal(file_read_line(path, buf, sizeof(buf)), 0);
    if (!streq(buf, "0")) {
        sys_pf[0] = 0; /* not ours to remove */
        fail_msg("PF %s already has %s VFs: not touching them", pf, buf);
    }
    atexit(vfs_remove);
    assert_int_equal(testns_link_get(pf, &l), 0);
    pf_was_up = l.flags & IFF_UP;
    pf_ifindex = l.ifindex;
    snprintf(args, sizeof(args), "link set dev %s up", pf);
    assert_int_equal(ip_cmd(NULL, args), 0);
    snprintf(path, sizeof(path), "%s/sriov_numvfs", sys_pf);
    snprintf(buf, sizeof(buf), "%d", N_VFS);
    double t0 = now_s();
    assert_int_equal(write_str(path, buf), 0);
    double t1 = now_s();
    /* the virtfn links are there once the write returns; the netdevs come
     * as igbvf binds */
    for (unsigned j = 0; j < N_VFS; j++) {
        char target[256];
        snprintf(path, sizeof(path), "%s/virtfn%u", sys_pf, j);
        ssize_t k = readlink(path, target, sizeof(target) - 1);
        assert_true(k > 0);
        target[k] = 0;
        snprintf(vf_pci[j], sizeof(vf_pci[j]), "%s", strrchr(target, '/') + 1);
    }
    assert_true(testns_wait_until(vfs_have_netdevs, NULL, 60000));
    fprintf(stderr, "test-sriov: PF %s (%s): %d VFs in %.1f s, their netdevs after %.1f s\n", pf,
            pf_pci, N_VFS, t1 - t0, now_s() - t0);
}

/* ---- node, plugin, CNI -------------------------------------------------------- */

static void write_config(void) {
    char text[2048];

    snprintf(text, sizeof(text),
             "{\"kubeletDir\": \"%s\", \"stateDir\": \"%s\", \"logFile\": \"%s\",\n"
             " \"devRoot\": \"%s/root\",\n"
             " \"rails\": [{\"index\": 0,\n"
             "   \"gpu\": {\"simulated\": \"gpu0\", \"devices\": [\"/dev/railgate/gpu0\"]},\n"
             "   \"nic\": {\"pci\": \"%s\", \"vf\": true, \"units\": %d%s},\n"
             "   \"addresses\": [\"10.77.0.2/24\", \"10.77.0.3/24\"], \"gateway\": "
             "\"10.77.0.1\"}],\n"
             " \"tenants\": [{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0],\n"
             "   \"vrf\": {\"table\": 100, \"prefixes\": [\"10.77.0.0/16\"]}}]}\n",
             env.kubelet, env.state, env.log, env.tmp, pf_pci, N_VFS, rail_extra);
    assert_int_equal(fileio_write_atomic(env.config, text, strlen(text), 0644, false), 0);
}

static void node_setup(void) {
    char path[256];

    snprintf(env.tmp, sizeof(env.tmp), "/tmp/rg-sriov-XXXXXX");
    assert_non_null(mkdtemp(env.tmp));
    snprintf(env.kubelet, sizeof(env.kubelet), "%s/kubelet", env.tmp);
    snprintf(env.state, sizeof(env.state), "%s/state", env.tmp);
    snprintf(env.config, sizeof(env.config), "%s/node.json", env.tmp);
    snprintf(env.bindir, sizeof(env.bindir), "%s/bin", env.tmp);
    snprintf(env.log, sizeof(env.log), "%s/cni.log", env.tmp);
    snprintf(path, sizeof(path), "%s/root/dev/railgate", env.tmp);
    assert_int_equal(fileio_mkdir_p(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/root/dev/railgate/gpu0", env.tmp);
    assert_int_equal(fileio_write_atomic(path, "", 0, 0644, false), 0);
    assert_int_equal(fileio_mkdir_p(env.bindir, 0755), 0);
    snprintf(path, sizeof(path), "%s/railgate", env.bindir);
    assert_int_equal(symlink(proc_bin("cni/railgate"), path), 0);
    write_config();
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

static int group_setup(void **state) {
    char path[300];

    testns_require_root();
    if (!pf_find()) {
        fprintf(stderr,
                "test-sriov: no SR-IOV PF here (no /sys/class/net/*/device/sriov_totalvfs "
                "of %d or more that this test may use): skipped; run it under "
                "`bash tests/vm/run.sh --sriov`\n",
                N_VFS);
        exit(77);
    }
    snprintf(path, sizeof(path), "/sys/class/net/%s/device", pf);
    char target[256];
    ssize_t k = readlink(path, target, sizeof(target) - 1);
    assert_true(k > 0);
    target[k] = 0;
    snprintf(pf_pci, sizeof(pf_pci), "%s", strrchr(target, '/') + 1);
    vfs_make();
    node_setup();
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"), "--config", env.config, NULL};
    snprintf(plugin_log, sizeof(plugin_log), "%s/plugin.log", env.tmp);
    plugin = proc_spawn(argv, plugin_log);
    assert_true(plugin > 0);
    assert_int_equal(fk_wait_registered(env.k, RES, 1, 30000), 0);
    return 0;
}

static int group_teardown(void **state) {
    if (plugin > 0)
        proc_stop(plugin, 5000);
    fk_stop(env.k);
    env.k = NULL;
    double t0 = now_s();
    vfs_remove();
    fprintf(stderr, "test-sriov: sriov_numvfs back to 0 in %.1f s\n", now_s() - t0);
    if (getenv("RAILGATE_TEST_KEEP"))
        fprintf(stderr, "kept %s\n", env.tmp);
    else if (env.tmp[0])
        nftw(env.tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ---- pods ------------------------------------------------------------------ */

static void pod_new(CniPod *p, unsigned j) {
    char id[32];
    char *ids[] = {id};

    snprintf(id, sizeof(id), "rail0-vf%u", j);
    assert_int_equal(cnienv_pod_new(&env, p, "sriov", "team-a", RES, ids, 1), 0);
}

static int cni(const char *cmd, CniPod *p, const char *extra, char *const *env_extra, CniRun *r) {
    char *conf = cnienv_conf("1.1.0", extra);
    int k = cnienv_run(&env, "railgate", cmd, p->container, p->netns, "eth0", p->ns, p->name, conf,
                       env_extra, r);

    free(conf);
    return k;
}

static void cni_ok(const char *cmd, CniPod *p) {
    char extra[9000] = "";
    CniRun r;

    if (streq(cmd, "CHECK"))
        snprintf(extra, sizeof(extra), "\"prevResult\": %s", p->result);
    assert_int_equal(cni(cmd, p, extra, NULL, &r), 0);
    if (r.status)
        fail_msg("%s: %s", cmd, r.raw);
    if (streq(cmd, "ADD")) {
        free(p->result);
        p->result = strdup(r.raw);
    }
    cni_run_done(&r);
}

/* No record and no claim left; the VF j in the host under name with mac. */
static void assert_home(unsigned j, const char *name, const char *mac) {
    char dev[IF_NAMESIZE], now[18];

    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    vf_netdev(j, dev, sizeof(dev));
    if (!streq(dev, name))
        fail_msg("VF %u is %s in the host, want %s", j, dev[0] ? dev : "missing", name);
    netdev_mac(dev, now, sizeof(now));
    if (!streq(now, mac))
        fail_msg("VF %u (%s) has MAC %s, want %s", j, dev, now, mac);
}

/* The PF on the node, as it was: same ifindex, up. */
static void assert_pf_home(void) {
    Link l;

    assert_int_equal(testns_link_get(pf, &l), 0);
    assert_int_equal(l.ifindex, pf_ifindex);
    assert_true(l.flags & IFF_UP);
}

/* In the pod: the VF (its PCI function) under name, with address. */
static void assert_in_pod(const CniPod *p, unsigned j, const char *name, const char *addr) {
    char args[64];
    json_t *l;

    snprintf(args, sizeof(args), "-d link show dev %s", name);
    l = ip_json(p->nsname, args);
    const char *parent = json_string_value(json_object_get(json_array_get(l, 0), "parentdev"));
    if (!parent || !streq(parent, vf_pci[j]))
        fail_msg("pod %s: %s has parent %s, want VF %u %s", p->nsname, name, parent ?: "none", j,
                 vf_pci[j]);
    json_decref(l);
    snprintf(args, sizeof(args), "addr show dev %s", name);
    assert_true(ip_has(p->nsname, args, addr));
}

/* The one attachment record in the state dir, parsed. */
static json_t *the_record(void) {
    char path[512] = "", *text = NULL;
    json_t *rec;
    DIR *d;

    snprintf(path, sizeof(path), "%s/attachments", env.state);
    d = opendir(path);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.')
            snprintf(path, sizeof(path), "%s/attachments/%.255s", env.state, de->d_name);
    closedir(d);
    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    rec = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(rec);
    return rec;
}

/* ---- tests ------------------------------------------------------------------ */

/* The units come from the PF's real virtfn links, healthy with the PF up. */
static void test_units_from_sysfs(void **state) {
    char path[256], *text = NULL;
    FkDevice *d = NULL;
    size_t n = 0;

    assert_int_equal(fk_devices(env.k, RES, &d, &n, NULL), 0);
    assert_int_equal(n, N_VFS);
    for (size_t i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof(want), "rail0-vf%zu", i);
        assert_string_equal(d[i].id, want);
        assert_int_equal(fk_wait_health(env.k, RES, want, true, 10000), 0);
    }
    free(d);
    snprintf(path, sizeof(path), "%s/inventory.json", env.state);
    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    json_t *doc = json_loads(text, 0, NULL), *u;
    free(text);
    size_t i;
    json_array_foreach(json_object_get(doc, "units"), i, u) {
        json_t *nic = json_object_get(u, "nic");
        char dev[IF_NAMESIZE];
        assert_true(i < N_VFS);
        vf_netdev(i, dev, sizeof(dev));
        assert_string_equal(json_string_value(json_object_get(nic, "pci")), vf_pci[i]);
        assert_string_equal(json_string_value(json_object_get(nic, "netdev")), dev);
    }
    json_decref(doc);
    fprintf(stderr, "test-sriov: units rail0-vf0 = %s, rail0-vf1 = %s, healthy\n", vf_pci[0],
            vf_pci[1]);
}

/* VF 0 into a pod and home: pinned while there, given back as it was. The
 * record holds the old values before anything changed. Health follows the
 * PF while the pod holds the VF; the PF's flap leaves the pin (CHECK). */
static void test_vf_into_pod_and_home(void **state) {
    char host_name[IF_NAMESIZE], host_mac[18];
    CniPod p;

    vf_before(0, PRESET_MAC, false, true, host_name, host_mac);
    pod_new(&p, 0);
    cni_ok("ADD", &p);
    assert_in_pod(&p, 0, "rail0", "10.77.0.2/24");
    char dev[IF_NAMESIZE];
    vf_netdev(0, dev, sizeof(dev));
    assert_string_equal(dev, ""); /* not in the host */
    assert_pf_home();
    assert_vf(0, host_mac, 1, 0);
    assert_vf(1, ZERO_MAC, 1, 0); /* the other VF untouched */
    json_t *rec = the_record();
    json_t *vf = json_object_get(json_array_get(json_object_get(rec, "nics"), 0), "vf");
    char *saved = json_dumps(json_object_get(vf, "saved"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(saved, "{\"linkState\":\"auto\",\"mac\":\"" PRESET_MAC
                               "\",\"spoofChk\":false,\"trust\":true}");
    assert_string_equal(json_string_value(json_object_get(vf, "pf")), pf_pci);
    free(saved);
    json_decref(rec);
    cni_ok("CHECK", &p);

    /* health: the PF down makes both units Unhealthy, up Healthy again */
    char args[64];
    snprintf(args, sizeof(args), "link set dev %s down", pf);
    assert_int_equal(ip_cmd(NULL, args), 0);
    assert_int_equal(fk_wait_health(env.k, RES, "rail0-vf0", false, 10000), 0);
    assert_int_equal(fk_wait_health(env.k, RES, "rail0-vf1", false, 10000), 0);
    snprintf(args, sizeof(args), "link set dev %s up", pf);
    assert_int_equal(ip_cmd(NULL, args), 0);
    assert_int_equal(fk_wait_health(env.k, RES, "rail0-vf0", true, 30000), 0);
    assert_int_equal(fk_wait_health(env.k, RES, "rail0-vf1", true, 30000), 0);
    assert_true(file_contains(plugin_log, "unit=rail0-vf1 msg=\"Unhealthy: PF link down\""));
    fprintf(stderr, "test-sriov: PF down: both units Unhealthy; PF up: Healthy\n");
    assert_vf(0, host_mac, 1, 0);
    cni_ok("CHECK", &p);
    /* CHECK sees the admin state drift, whoever changed it */
    char extra[9000], cmd[96];
    CniRun r;
    snprintf(cmd, sizeof(cmd), "link set dev %s vf 0 trust on", pf);
    assert_int_equal(ip_cmd(NULL, cmd), 0);
    snprintf(extra, sizeof(extra), "\"prevResult\": %s", p.result);
    assert_int_equal(cni("CHECK", &p, extra, NULL, &r), 0);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 103);
    assert_non_null(
        strstr(json_string_value(json_object_get(r.out, "msg")) ?: "", "vfConfig.trust"));
    cni_run_done(&r);
    snprintf(cmd, sizeof(cmd), "link set dev %s vf 0 trust off", pf);
    assert_int_equal(ip_cmd(NULL, cmd), 0);

    cni_ok("DEL", &p);
    assert_home(0, host_name, host_mac);
    assert_pf_home();
    assert_vf(0, PRESET_MAC, 0, 1);
    cnienv_pod_free(&env, &p);
    vf_preset(0, ZERO_MAC, true, false);
}

typedef struct Frame {
    int ifindex;
    uint8_t src[6];
} Frame;

/* In the pod's namespace: one Ethernet frame out of ifindex with src. */
static int send_frame(void *arg) {
    const Frame *f = arg;
    uint8_t buf[64] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_ifindex = f->ifindex, .sll_halen = 6};
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    ssize_t k;

    if (fd < 0)
        return -errno;
    memcpy(buf + 6, f->src, 6);
    buf[12] = 0x88; /* local experimental ethertype 88b5 */
    buf[13] = 0xb5;
    memset(to.sll_addr, 0xff, 6);
    k = sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&to, sizeof(to));
    int r = k < 0 ? -errno : 0;
    close(fd);
    return r;
}

/*
 * The tenant with NET_ADMIN in its pod: changes its VF's MAC, tries spoof
 * checking and trust on the VF itself (no PF in its namespace: not even by
 * the PF's ifindex), sends with another MAC, renames the VF. The PF's view
 * of the VF never moves; DEL finds the VF by its PCI function and brings it
 * home under its name with its MAC, the admin state as before.
 */
static void test_tenant_attack(void **state) {
    char host_name[IF_NAMESIZE], host_mac[18], args[128];
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    _cleanup_close_ int pod_fd = -EBADF;
    CniPod p;
    Link rail;

    vf_before(1, NULL, false, false, host_name, host_mac);
    pod_new(&p, 1);
    cni_ok("ADD", &p);
    assert_in_pod(&p, 1, "rail0v1", "10.77.0.3/24");
    assert_vf(1, host_mac, 1, 0);

    /* its MAC: whatever the VF driver answers, the PF keeps the pinned one */
    int mac_rc = ip_cmd(p.nsname, "link set dev rail0v1 address 02:de:ad:be:ef:01");
    fprintf(stderr, "test-sriov: MAC change inside the pod: %s\n",
            mac_rc ? "refused by the VF driver" : "taken by the VF's netdev, not by the PF");
    assert_vf(1, host_mac, 1, 0);
    /* spoof checking and trust on the VF: it has no VFs */
    assert_int_not_equal(ip_cmd(p.nsname, "link set dev rail0v1 vf 1 spoofchk off"), 0);
    assert_int_not_equal(ip_cmd(p.nsname, "link set dev rail0v1 vf 1 trust on"), 0);
    snprintf(args, sizeof(args), "link set dev %s vf 1 trust on", pf);
    assert_int_not_equal(ip_cmd(p.nsname, args), 0);
    /* by netlink, at the PF's ifindex and at its own */
    assert_int_equal(netns_open(p.netns, &pod_fd), 0);
    assert_int_equal(netlink_open(pod_fd, &nl), 0);
    VfState off = VF_STATE_NONE;
    off.spoofchk = 0;
    off.trust = 1;
    assert_int_not_equal(vf_state_set(nl, pf_ifindex, 1, VF_FIELD_SPOOFCHK, &off), 0);
    assert_int_not_equal(vf_state_set(nl, pf_ifindex, 1, VF_FIELD_TRUST, &off), 0);
    assert_int_equal(link_get_by_name(nl, "rail0v1", &rail), 0);
    assert_int_not_equal(vf_state_set(nl, rail.ifindex, 1, VF_FIELD_SPOOFCHK, &off), 0);
    assert_int_not_equal(vf_state_set(nl, rail.ifindex, 0, VF_FIELD_TRUST, &off), 0);
    /* a frame with a forged source */
    Frame f = {.ifindex = rail.ifindex, .src = {0x02, 0xba, 0xd0, 0x00, 0x00, 0x01}};
    int sent = netns_run(pod_fd, send_frame, &f);
    fprintf(stderr, "test-sriov: a frame from 02:ba:d0:00:00:01 out of the VF: %s\n",
            sent < 0 ? strerror(-sent) : "sent");
    assert_vf(1, host_mac, 1, 0);
    /* renamed, then DEL */
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 down"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 name evil0"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev evil0 up"), 0);
    cni_ok("DEL", &p);
    assert_home(1, host_name, host_mac);
    assert_pf_home();
    assert_vf(1, ZERO_MAC, 1, 0);
    assert_false(ip_has(p.nsname, "link show", "evil0"));
    cnienv_pod_free(&env, &p);
}

/* `ip netns exec <ns> ethtool <args...>` as the pod: 0 when the driver took it. */
static int pod_ethtool(const CniPod *p, const char *a1, const char *a2, const char *a3) {
    char *argv[] = {"/usr/sbin/ip", "netns",   "exec",     (char *)p->nsname, "/usr/sbin/ethtool",
                    (char *)a1,     "rail0v1", (char *)a2, (char *)a3,        NULL};
    int r = proc_run(argv, NULL);

    fprintf(stderr, "test-sriov: ethtool %s rail0v1 %s %s from the pod: %s\n", a1, a2, a3,
            r == 0 ? "taken" : "refused");
    return r;
}

/*
 * The tenant sets on its VF all a holder can from its own namespace:
 * flags, queue length, group, GSO/GRO limits, broadcast, link mode, an XDP
 * program, and through ethtool its rings, coalescing, message level and
 * features. DEL brings the VF home with each as it was: iproute2's and
 * ethtool's view of it before the ADD and after the DEL agree.
 */
static void test_pod_settings_on_vf(void **state) {
    static const char *const views[] = {"-k", "-g", "-c"};
    char host_name[IF_NAMESIZE], host_mac[18], *before[4], *after[4];
    CniPod p;

    vf_before(1, NULL, false, false, host_name, host_mac);
    before[0] = cnienv_link_settings(NULL, host_name);
    for (size_t i = 0; i < ELEMENTSOF(views); i++)
        before[i + 1] = cnienv_ethtool_show(views[i], host_name);
    pod_new(&p, 1);
    cni_ok("ADD", &p);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 promisc on allmulticast on arp off"),
                     0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 txqueuelen 1 group 7"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 gso_max_size 1024 gso_max_segs 10"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 broadcast 02:00:5e:00:00:ff"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0v1 mode dormant"), 0);
    assert_int_equal(testns_xdp_attach(p.netns, "rail0v1", XDP_FLAGS_SKB_MODE, NULL, NULL), 0);
    /* what igbvf takes: rings, coalescing, message level, features */
    assert_int_equal(pod_ethtool(&p, "-G", "rx", "512"), 0);
    assert_int_equal(pod_ethtool(&p, "-C", "rx-usecs", "100"), 0);
    assert_int_equal(pod_ethtool(&p, "-s", "msglvl", "1"), 0);
    assert_int_equal(pod_ethtool(&p, "-K", "rx-gro-list", "on"), 0);
    cni_ok("DEL", &p);
    assert_home(1, host_name, host_mac);
    after[0] = cnienv_link_settings(NULL, host_name);
    for (size_t i = 0; i < ELEMENTSOF(views); i++)
        after[i + 1] = cnienv_ethtool_show(views[i], host_name);
    for (size_t i = 0; i < ELEMENTSOF(before); i++) {
        assert_non_null(after[i]);
        if (!streq(before[i], after[i]))
            fprintf(stderr, "view %zu: want %s\n        got  %s\n", i, before[i], after[i]);
        assert_string_equal(before[i], after[i]);
        free(before[i]);
        free(after[i]);
    }
    assert_pf_home();
    cnienv_pod_free(&env, &p);
}

static bool vf0_in_host(void *arg) {
    char dev[IF_NAMESIZE];

    vf_netdev(0, dev, sizeof(dev));
    return dev[0];
}

/* The pod's namespace deleted before DEL: the kernel puts the VF back in
 * the host under its pod name; DEL finds it by its PCI function and gives
 * it its name, MAC and admin state back. */
static void test_del_after_netns_gone(void **state) {
    char host_name[IF_NAMESIZE], host_mac[18], dev[IF_NAMESIZE];
    CniPod p;

    vf_before(0, PRESET_MAC, false, false, host_name, host_mac);
    pod_new(&p, 0);
    cni_ok("ADD", &p);
    assert_vf(0, host_mac, 1, 0);
    cnienv_pod_netns_del(p.nsname);
    assert_true(testns_wait_until(vf0_in_host, NULL, 10000));
    vf_netdev(0, dev, sizeof(dev));
    fprintf(stderr, "test-sriov: the pod's namespace gone, VF 0 is back as %s\n", dev);
    assert_vf(0, host_mac, 1, 0); /* still pinned until DEL */
    cni_ok("DEL", &p);
    assert_home(0, host_name, host_mac);
    assert_vf(0, PRESET_MAC, 0, 0);
    cnienv_pod_free(&env, &p);
    vf_preset(0, ZERO_MAC, true, false);
}

/*
 * The same with DEL racing the teardown (issue 25): the namespace deleted
 * and still held (here by an fd), let go only once DEL watches the link
 * events (stopped there by the failpoint). The kernel moves the VF to the
 * host in its teardown worker; DEL waits for it (with the pod's namespace
 * gone, a device with a parent not yet home is on its way, not the pod's
 * doing) and brings it home. Before the wait DEL answered 101 at once.
 */
static void test_del_racing_netns_teardown(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char host_name[IF_NAMESIZE], host_mac[18],
        *conf = cnienv_conf("1.1.0", NULL),
        *fp[] = {"RAILGATE_FAILPOINT=restore-dying-wait=pause", NULL};
    CniPod p;
    CniProc proc;
    CniRun r;

    vf_before(0, PRESET_MAC, false, false, host_name, host_mac);
    pod_new(&p, 0);
    cni_ok("ADD", &p);
    int fd = open(p.netns, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    cnienv_pod_netns_del(p.nsname);
    int started = cnienv_start(&env, "railgate", "DEL", p.container, p.netns, "eth0", p.ns, p.name,
                               conf, fp, &proc);
    free(conf);
    int stopped = started < 0 ? started : cni_proc_wait_stopped(&proc);
    bool home_before = vf0_in_host(NULL); /* the namespace is held: not yet */
    close(fd);
    if (stopped == 0)
        (void)cni_proc_continue(&proc);
    int finished = started < 0 ? started : cni_proc_finish(&proc, &r);
    int status = finished < 0 ? -1 : r.status;
    if (finished >= 0) {
        if (status)
            fprintf(stderr, "DEL: %s\n", r.raw);
        cni_run_done(&r);
    }
    if (status) { /* failed: the record ended once the VF is back, for the tests after */
        (void)testns_wait_until(vf0_in_host, NULL, 10000);
        if (cni("DEL", &p, NULL, NULL, &r) >= 0)
            cni_run_done(&r);
    }
    assert_int_equal(stopped, 0);
    assert_false(home_before);
    assert_int_equal(status, 0);
    assert_home(0, host_name, host_mac);
    assert_vf(0, PRESET_MAC, 0, 0);
    cnienv_pod_free(&env, &p);
    vf_preset(0, ZERO_MAC, true, false);
#endif
}

static void set_vf_config(const char *json) {
    snprintf(rail_extra, sizeof(rail_extra), "%s%s", json[0] ? ", \"vfConfig\": " : "", json);
    write_config();
}

/* A setting the driver cannot make (igb has no ndo_set_vf_link_state):
 * the ADD fails naming it, and rolls back what it set before (the MAC pin,
 * spoof checking): the VF home, its admin state as it was. */
static void test_unsupported_setting_rolls_back(void **state) {
    char host_name[IF_NAMESIZE], host_mac[18];
    CniPod p;
    CniRun r;

    vf_before(1, PRESET_MAC, false, false, host_name, host_mac);
    set_vf_config("{\"linkState\": \"enable\"}");
    pod_new(&p, 1);
    assert_int_equal(cni("ADD", &p, NULL, NULL, &r), 0);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    fprintf(stderr, "test-sriov: linkState enable on igb: %s\n", msg ?: r.raw);
    assert_int_equal(r.status, 1);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 102);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "vfConfig.linkState"));
    cni_run_done(&r);
    assert_false(ip_has(p.nsname, "link show", "rail0"));
    assert_home(1, host_name, host_mac);
    assert_vf(1, PRESET_MAC, 0, 0);
    cni_ok("DEL", &p); /* the runtime's DEL after a failed ADD */
    cnienv_pod_free(&env, &p);
    set_vf_config("");
    vf_preset(1, ZERO_MAC, true, false);
}

/* "keep" everywhere: the admin state is the operator's, untouched, and no
 * PF is recorded; with its MAC not pinned, a VF re-MAC'd in the pod comes
 * home with its own. */
static void test_keep(void **state) {
    char host_name[IF_NAMESIZE], host_mac[18];
    CniPod p;

    vf_before(0, PRESET_MAC, false, true, host_name, host_mac);
    set_vf_config("{\"mac\": \"keep\", \"spoofChk\": \"keep\", \"trust\": \"keep\", "
                  "\"linkState\": \"keep\"}");
    pod_new(&p, 0);
    cni_ok("ADD", &p);
    assert_in_pod(&p, 0, "rail0", "10.77.0.2/24");
    assert_vf(0, PRESET_MAC, 0, 1);
    json_t *rec = the_record();
    assert_null(json_object_get(json_array_get(json_object_get(rec, "nics"), 0), "vf"));
    json_decref(rec);
    (void)ip_cmd(p.nsname, "link set dev rail0 address 02:de:ad:be:ef:02");
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0 down"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev rail0 name other0"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set dev other0 up"), 0);
    cni_ok("DEL", &p);
    assert_home(0, host_name, host_mac);
    assert_vf(0, PRESET_MAC, 0, 1);
    cnienv_pod_free(&env, &p);
    set_vf_config("");
    vf_preset(0, ZERO_MAC, true, false);
}

/* Killed after the admin state is set and before the VF moved (the record,
 * written before anything moved, holds the old values): DEL gives it back. */
static void test_killed_after_vf_set(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char host_name[IF_NAMESIZE], host_mac[18];
    char *fp[] = {"RAILGATE_FAILPOINT=add-vf-set=kill", NULL};
    CniPod p;
    CniRun r;

    vf_before(0, PRESET_MAC, false, true, host_name, host_mac);
    pod_new(&p, 0);
    assert_int_equal(cni("ADD", &p, NULL, fp, &r), 0);
    assert_int_equal(r.status, 128 + SIGKILL);
    cni_run_done(&r);
    assert_vf(0, host_mac, 1, 0); /* set, and the plugin died */
    assert_int_equal(cnienv_state_count(&env, "attachments"), 1);
    cni_ok("DEL", &p);
    assert_home(0, host_name, host_mac);
    assert_vf(0, PRESET_MAC, 0, 1);
    cnienv_pod_free(&env, &p);
    vf_preset(0, ZERO_MAC, true, false);
#endif
}

/* Rename the link ifindex on nl to name, down first (6.1 refuses to rename
 * an up link). */
static void rename_down(Netlink *nl, int ifindex, const char *name) {
    LinkChange c = LINK_CHANGE_INIT;

    c.state = LINK_SET_DOWN;
    assert_int_equal(link_change(nl, ifindex, &c), 0);
    c = (LinkChange)LINK_CHANGE_INIT;
    c.name = name;
    assert_int_equal(link_change(nl, ifindex, &c), 0);
}

typedef struct Home {
    Netlink *host;
    const AttachedNic *n;
    PodNicCache *c;
    Link l;
} Home;

static bool found_home(void *arg) {
    Home *h = arg;

    return podnic_read(h->host, h->n, h->c, &h->l) == 0 && h->c->nsid == LINK_NETNSID_SELF;
}

/*
 * The agent's reading of a device with a parent (a whole NIC; here VF 1's
 * PCI function, which no ADD records with a permanent address either) in a
 * pod's namespace, from the host (agent/podnic.c): at home, a scan of the
 * host's links; in a namespace of the test's, a scan of every namespace the
 * host has an id for; renamed there, where it was found last; a parent no
 * link has, found nowhere; its namespace deleted, home again (the kernel
 * moves a device with a parent to the initial namespace).
 */
static void test_podnic_parent_device(void **state) {
    _cleanup_(netlink_closep) Netlink *host = NULL, *pod = NULL;
    char dev[IF_NAMESIZE], path[128];
    AttachedNic n = {.peer_nsid = -1};
    PodNicCache c = {0};
    int fd = -EBADF, nsid = -1;
    Link l, got;

    vf_netdev(1, dev, sizeof(dev));
    assert_true(dev[0]);
    assert_int_equal(netlink_open(-1, &host), 0);
    assert_int_equal(link_get_by_name(host, dev, &l), 0);
    assert_string_equal(l.parent + 4, vf_pci[1]);
    snprintf(n.parent, sizeof(n.parent), "%s", l.parent);
    assert_int_equal(podnic_read(host, &n, &c, &got), 0);
    assert_int_equal(got.ifindex, l.ifindex);
    assert_int_equal(c.nsid, LINK_NETNSID_SELF);

    assert_int_equal(testns_named_new("vfpod", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(testns_link_set_netns(dev, fd), 0);
    assert_int_equal(netlink_nsid(host, fd, &nsid), 0);
    assert_true(nsid >= 0);
    assert_int_equal(podnic_read(host, &n, &c, &got), 0);
    assert_int_equal(c.nsid, nsid);
    assert_string_equal(got.name, dev);
    assert_int_equal(netlink_open(fd, &pod), 0);
    rename_down(pod, got.ifindex, "eth7");
    assert_int_equal(podnic_read(host, &n, &c, &got), 0);
    assert_string_equal(got.name, "eth7");
    assert_int_equal(c.nsid, nsid);
    assert_false(got.flags & IFF_UP);
    AttachedNic other = n;
    snprintf(other.parent, sizeof(other.parent), "pci/0000:ff:1f.7");
    assert_int_equal(podnic_read(host, &other, NULL, &got), -ESTALE);

    netlink_close(TAKE_PTR(pod));
    assert_int_equal(testns_named_remove(path), 0);
    close(fd);
    Home h = {.host = host, .n = &n, .c = &c};
    assert_true(testns_wait_until(found_home, &h, wait_scaled_ms(10000)));
    fprintf(stderr, "test-sriov: the pod's namespace gone, VF 1 read at home as %s\n", h.l.name);
    if (!streq(h.l.name, dev))
        rename_down(host, h.l.ifindex, dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_from_sysfs),
        cmocka_unit_test(test_vf_into_pod_and_home),
        cmocka_unit_test(test_tenant_attack),
        cmocka_unit_test(test_pod_settings_on_vf),
        cmocka_unit_test(test_del_after_netns_gone),
        cmocka_unit_test(test_del_racing_netns_teardown),
        cmocka_unit_test(test_unsupported_setting_rolls_back),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_killed_after_vf_set),
        cmocka_unit_test(test_podnic_parent_device),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
