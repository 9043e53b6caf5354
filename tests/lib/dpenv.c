/* SPDX-License-Identifier: Apache-2.0 */
/* Device-plugin test node: files under a temp dir, links in the caller's netns. */
#include "dpenv.h"

#include <dirent.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "attachment.h"
#include "netns.h"
#include "proc.h"
#include "rdma.h"
#include "state.h"
#include "testns.h"
#include "waitscale.h"

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "we");

    if (!f)
        return -errno;
    fputs(text, f);
    fclose(f);
    return 0;
}

__attribute__((format(printf, 1, 2))) static int mkdirs(const char *fmt, ...) {
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            (void)mkdir(path, 0755);
            *p = '/';
        }
    return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

void dpenv_gpu_node(DpEnv *e, unsigned rail, bool present) {
    char path[256];

    snprintf(path, sizeof(path), "%s/dev/railgate/gpu%u", e->devroot, rail);
    if (present)
        (void)write_file(path, "");
    else
        (void)unlink(path);
}

int dpenv_dev_node(DpEnv *e, const char *path, bool present) {
    char host[256];

    if ((size_t)snprintf(host, sizeof(host), "%s%s", e->devroot, path) >= sizeof(host))
        return -ENAMETOOLONG;
    if (present)
        return write_file(host, "");
    return unlink(host) < 0 && errno != ENOENT ? -errno : 0;
}

static void pf_pci(unsigned rail, char *buf, size_t n) {
    snprintf(buf, n, "0000:%02x:00.0", 0x20 + rail);
}

/* PF with vfs virtfn links, and class/net/rail-nic<k>/device pointing at it. */
static int sysfs_rail(DpEnv *e, unsigned rail) {
    char pf[16], vf[16], dir[256], link[512], target[64];
    int r;

    pf_pci(rail, pf, sizeof(pf));
    r = mkdirs("%s/bus/pci/devices/%s", e->sysfs, pf);
    if (r < 0)
        return r;
    snprintf(dir, sizeof(dir), "class/net/rail-nic%u", rail);
    r = mkdirs("%s/%s", e->sysfs, dir);
    if (r < 0)
        return r;
    snprintf(link, sizeof(link), "%s/%s/device", e->sysfs, dir);
    snprintf(target, sizeof(target), "../../../bus/pci/devices/%s", pf);
    if (symlink(target, link) < 0)
        return -errno;
    for (unsigned j = 0; j < e->vfs; j++) {
        snprintf(vf, sizeof(vf), "0000:%02x:%02x.%x", (0x20 + rail) & 0xff, (1 + j / 8) & 0xff,
                 j % 8);
        r = mkdirs("%s/bus/pci/devices/%s/net", e->sysfs, vf);
        if (r < 0)
            return r;
        snprintf(link, sizeof(link), "%s/bus/pci/devices/%s/virtfn%u", e->sysfs, pf, j);
        snprintf(target, sizeof(target), "../%s", vf);
        if (symlink(target, link) < 0)
            return -errno;
    }
    return 0;
}

static void config_rail(const DpEnv *e, FILE *f, unsigned i) {
    unsigned numa = i < e->n_rails / 2 ? 0 : 1;

    fprintf(f, "  {\"index\": %u, \"numa\": %u, \"mtu\": 9000,\n", i, numa);
    fprintf(f,
            "   \"gpu\": {\"simulated\": \"gpu%u\", \"minor\": %u,"
            " \"devices\": [\"/dev/railgate/gpu%u\"]},\n",
            i, i, i);
    if (e->vfs)
        fprintf(f, "   \"nic\": {\"name\": \"rail-nic%u\", \"vf\": true, \"units\": %u}}", i,
                e->vfs);
    else if (i >= e->rdma_from)
        fprintf(f,
                "   \"nic\": {\"name\": \"rail-nic%u\", \"rdma\": \"mlx5_%u\"},\n"
                "   \"addresses\": [\"10.10.%u.2/24\"], \"gateway\": \"10.10.%u.1\"}",
                i, i, i, i);
    else
        fprintf(f,
                "   \"nic\": {\"name\": \"rail-nic%u\"},\n"
                "   \"addresses\": [\"10.10.%u.2/24\"], \"gateway\": \"10.10.%u.1\"}",
                i, i, i);
    fprintf(f, "%s\n", i + 1 < e->n_rails ? "," : "");
}

static void config_tenant(const DpEnv *e, FILE *f, const char *name, unsigned from, unsigned to,
                          unsigned table) {
    fprintf(f, "  {\"name\": \"%s\", \"namespaces\": [\"team-%s\"], \"rails\": [", name, name);
    for (unsigned i = from; i < to; i++)
        fprintf(f, "%s%u", i > from ? ", " : "", i);
    fprintf(f, "],\n   \"vrf\": {\"table\": %u, \"prefixes\": [\"10.%u.0.0/16\"]}}", table,
            table / 10);
}

static int write_config(const DpEnv *e) {
    FILE *f = fopen(e->config, "we");

    if (!f)
        return -errno;
    fprintf(f,
            "{\"domain\": \"railgate.io\", \"kubeletDir\": \"%s\", \"stateDir\": \"%s\",\n"
            " \"devRoot\": \"%s\", \"sysfsRoot\": \"%s\",\n",
            e->kubelet, e->state, e->devroot, e->sysfs);
    if (e->metrics[0])
        fprintf(f, " \"metrics\": %s,\n", e->metrics);
    if (e->extra[0])
        fprintf(f, " %s,\n", e->extra);
    if (e->rdma[0])
        fprintf(f, " \"rdma\": %s,\n", e->rdma);
    fprintf(f, " \"rails\": [\n");
    for (unsigned i = 0; i < e->n_rails; i++)
        config_rail(e, f, i);
    fprintf(f, " ], \"tenants\": [\n");
    config_tenant(e, f, "a", 0, e->n_rails / 2, 100);
    fprintf(f, ",\n");
    config_tenant(e, f, "b", e->n_rails / 2, e->n_rails, 200);
    fprintf(f, "\n ]}\n");
    fclose(f);
    return 0;
}

static int rails_up(DpEnv *e) {
    int r;

    for (unsigned i = 0; i < e->n_rails; i++) {
        r = testns_rail_add(i);
        if (r < 0)
            return r;
        if (e->vfs && (r = sysfs_rail(e, i)) < 0)
            return r;
        dpenv_gpu_node(e, i, true);
    }
    return 0;
}

int dpenv_setup(DpEnv *e, unsigned n_rails, unsigned vfs) {
    int r;

    memset(e, 0, sizeof(*e));
    (void)testns_rail_kind(); /* 77 before anything is made, if this kernel lacks it */
    e->n_rails = n_rails;
    e->rdma_from = n_rails;
    e->vfs = vfs;
    snprintf(e->tmp, sizeof(e->tmp), "/tmp/rg-dp-XXXXXX");
    if (!mkdtemp(e->tmp))
        return -errno;
    snprintf(e->kubelet, sizeof(e->kubelet), "%s/kubelet", e->tmp);
    snprintf(e->state, sizeof(e->state), "%s/state", e->tmp);
    snprintf(e->devroot, sizeof(e->devroot), "%s/root", e->tmp);
    snprintf(e->sysfs, sizeof(e->sysfs), "%s/sys", e->tmp);
    snprintf(e->config, sizeof(e->config), "%s/node.json", e->tmp);
    snprintf(e->log, sizeof(e->log), "%s/plugin.log", e->tmp);
    r = mkdirs("%s/%s", e->devroot, "dev/railgate");
    if (r >= 0)
        r = mkdirs("%s/%s", e->sysfs, "class/net");
    if (r >= 0)
        r = rails_up(e);
    if (r >= 0)
        r = write_config(e);
    if (r >= 0)
        r = fk_start(e->kubelet, &e->k);
    return r;
}

/* ib_uverbs' and ib_umad's class entries of mlx5_<rail>. */
static int sysfs_rdma(DpEnv *e, unsigned rail) {
    char path[512], text[32];
    int r;

    r = mkdirs("%s/class/infiniband_verbs/uverbs%u", e->sysfs, rail);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "%s/class/infiniband_verbs/uverbs%u/ibdev", e->sysfs, rail);
    snprintf(text, sizeof(text), "mlx5_%u\n", rail);
    r = write_file(path, text);
    for (unsigned port = 1; r >= 0 && port <= 2; port++) {
        unsigned umad = 2 * rail + port - 1;
        r = mkdirs("%s/class/infiniband_mad/umad%u", e->sysfs, umad);
        if (r < 0)
            return r;
        snprintf(path, sizeof(path), "%s/class/infiniband_mad/umad%u/ibdev", e->sysfs, umad);
        snprintf(text, sizeof(text), "mlx5_%u\n", rail);
        r = write_file(path, text);
        snprintf(path, sizeof(path), "%s/class/infiniband_mad/umad%u/port", e->sysfs, umad);
        snprintf(text, sizeof(text), "%u\n", port);
        r = r ?: write_file(path, text);
        snprintf(path, sizeof(path), "/dev/infiniband/umad%u", umad);
        r = r ?: dpenv_dev_node(e, path, true);
    }
    snprintf(path, sizeof(path), "/dev/infiniband/uverbs%u", rail);
    return r ?: dpenv_dev_node(e, path, true);
}

int dpenv_rdma(DpEnv *e, unsigned from, const char *config) {
    int r;

    if ((size_t)snprintf(e->rdma, sizeof(e->rdma), "%s", config ?: "") >= sizeof(e->rdma))
        return -ENAMETOOLONG;
    e->rdma_from = from;
    r = mkdirs("%s/dev/infiniband", e->devroot);
    r = r ?: dpenv_dev_node(e, "/dev/infiniband/rdma_cm", true);
    for (unsigned k = from; r >= 0 && k < e->n_rails; k++)
        r = sysfs_rdma(e, k);
    return r ?: write_config(e);
}

int dpenv_config_metrics(DpEnv *e, const char *json) {
    if ((size_t)snprintf(e->metrics, sizeof(e->metrics), "%s", json ?: "") >= sizeof(e->metrics))
        return -ENAMETOOLONG;
    return write_config(e);
}

int dpenv_config_extra(DpEnv *e, const char *members) {
    if ((size_t)snprintf(e->extra, sizeof(e->extra), "%s", members ?: "") >= sizeof(e->extra))
        return -ENAMETOOLONG;
    return write_config(e);
}

int dpenv_plugin_start(DpEnv *e, const char *extra) {
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"), "--config", e->config,
                    (char *)extra, NULL};

    e->plugin = proc_spawn(argv, e->log);
    return e->plugin > 0 ? 0 : -errno;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

void dpenv_teardown(DpEnv *e) {
    if (e->plugin > 0)
        proc_stop(e->plugin, 5000);
    e->plugin = 0;
    fk_stop(e->k);
    e->k = NULL;
    if (getenv("RAILGATE_TEST_KEEP"))
        fprintf(stderr, "kept %s\n", e->tmp);
    else if (e->tmp[0])
        nftw(e->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A record of container_id:eth0 listing unit (with nic's identity, NULL:
 * none) and the unit's marker naming it. */
static int pod_hold(const char *state_dir, const char *container_id, const char *unit,
                    const AttachedNic *nic_id) {
    char key[STATE_KEY_MAX + 1];
    Attachment *a = calloc(1, sizeof(*a));
    int r;

    if (!a)
        return -ENOMEM;
    if (strlen(container_id) >= sizeof(a->container_id) || strlen(unit) >= sizeof(a->nics->unit))
        return free(a), -ENAMETOOLONG;
    strcpy(a->container_id, container_id);
    strcpy(a->ifname, "eth0");
    AttachedNic *nic = attachment_add_nic(a);
    if (!nic)
        return attachment_free(a), -ENOMEM;
    if (nic_id)
        *nic = *nic_id;
    strcpy(nic->unit, unit);
    r = state_key(container_id, "eth0", key, sizeof(key));
    r = r ?: state_record_save(state_dir, a);
    attachment_free(a);
    return r ?: state_unit_mark(state_dir, unit, key);
}

int state_pod_hold(const char *state_dir, const char *container_id, const char *unit) {
    return pod_hold(state_dir, container_id, unit, NULL);
}

/* An anchor as the CNI makes one (cni/anchor.c) on l, a NIC with neither a
 * parent nor a peer: a VLAN 802.1ad 4094 on the host, down, loose binding. */
static int anchor_make(Netlink *nl, const char *unit, const Link *l, AttachedNic *id) {
    Link a;
    int r;

    snprintf(id->anchor, sizeof(id->anchor), "anc-%.11s", unit);
    id->anchor_vid = 4094;
    id->anchor_proto = ETH_P_8021AD;
    r = vlan_add(nl, id->anchor, l->ifindex, id->anchor_proto, id->anchor_vid,
                 VLAN_FLAG_LOOSE_BINDING);
    r = r ?: link_get_by_name(nl, id->anchor, &a);
    if (r < 0)
        return r;
    id->anchor_ifindex = a.ifindex;
    return 0;
}

int state_pod_hold_nic(const char *state_dir, const char *container_id, const char *unit,
                       const char *nic, const char *pod_name) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    AttachedNic id = {.peer_nsid = -1};
    Link l, peer;
    int r = netlink_open(-1, &nl);

    r = r ?: link_get_by_name(nl, nic, &l);
    if (r < 0)
        return r;
    snprintf(id.host_name, sizeof(id.host_name), "%s", l.name);
    snprintf(id.pod_name, sizeof(id.pod_name), "%s", pod_name);
    snprintf(id.kind, sizeof(id.kind), "%s", l.kind);
    id.host_ifindex = l.ifindex;
    memcpy(id.mac, l.mac, sizeof(id.mac));
    id.mtu = l.mtu;
    id.was_up = l.flags & IFF_UP;
    if (streq(l.kind, "veth")) {
        if (l.link <= 0 || l.link_netnsid != LINK_NETNSID_SELF)
            return -EOPNOTSUPP;
        r = link_get(nl, l.link, &peer);
        if (r < 0)
            return r;
        id.peer_ifindex = peer.ifindex;
        snprintf(id.peer_name, sizeof(id.peer_name), "%s", peer.name);
    } else if (streq(l.kind, "dummy") || streq(l.kind, "macvlan")) {
        r = anchor_make(nl, unit, &l, &id);
        if (r < 0)
            return r;
    } else
        return -EOPNOTSUPP;
    return pod_hold(state_dir, container_id, unit, &id);
}

int state_pod_release(const char *state_dir, const char *container_id, const char *unit) {
    char key[STATE_KEY_MAX + 1];
    int r = state_key(container_id, "eth0", key, sizeof(key));

    r = r ?: state_unit_release(state_dir, unit, key);
    return r ?: state_record_remove(state_dir, key);
}

static int pod_link_up(Netlink *pod, const char *name) {
    LinkChange c = LINK_CHANGE_INIT;
    Link l;
    int r = link_get_by_name(pod, name, &l);

    c.state = LINK_SET_UP;
    return r ?: link_change(pod, l.ifindex, &c);
}

int dpenv_pod_take(DpEnv *e, const char *container_id, unsigned rail, char *ret_path, size_t n,
                   int *ret_fd) {
    _cleanup_(netlink_closep) Netlink *pod = NULL;
    char nic[IF_NAMESIZE], unit[16];
    int fd = -EBADF, r;

    snprintf(nic, sizeof(nic), "rail-nic%u", rail);
    snprintf(unit, sizeof(unit), "rail%u", rail);
    r = state_pod_hold_nic(e->state, container_id, unit, nic, nic);
    r = r ?: testns_named_new("pod", ret_path, n);
    r = r ?: netns_open(ret_path, &fd);
    r = r ?: testns_link_set_netns(nic, fd);
    r = r ?: netlink_open(fd, &pod);
    r = r ?: pod_link_up(pod, nic);
    if (r < 0) {
        if (fd >= 0)
            close(fd);
        return r;
    }
    *ret_fd = fd;
    return 0;
}

int dpenv_pod_take_or_skip(DpEnv *e, const char *container_id, unsigned rail, char *ret_path,
                           size_t n, int *ret_fd) {
    int r = dpenv_pod_take(e, container_id, rail, ret_path, n, ret_fd);

    if (r == -EOPNOTSUPP) { /* a dummy's or macvlan's anchor needs 8021q */
        print_message("no 8021q driver for the anchor of a %s rail: skipped\n",
                      testns_rail_kind_name(testns_rail_kind_used()));
        skip();
    }
    return r;
}

typedef struct Carrier {
    unsigned rail;
    bool on;
} Carrier;

static int carrier_here(void *arg) {
    const Carrier *c = arg;

    return testns_rail_carrier(c->rail, c->on);
}

int dpenv_pod_carrier(unsigned rail, int pod_fd, bool on) {
    Carrier c = {rail, on};

    /* a dummy's own carrier, in the pod; a veth's peer and a macvlan's
     * wire stay on the host */
    if (testns_rail_kind_used() == RAIL_KIND_DUMMY)
        return netns_run(pod_fd, carrier_here, &c);
    return carrier_here(&c);
}

static bool partner_gone(void *arg) {
    Link l;

    return testns_link_get(arg, &l) == -ENODEV;
}

int dpenv_rail_remake(unsigned rail) {
    char peer[IF_NAMESIZE];

    snprintf(peer, sizeof(peer), "rail-peer%u", rail);
    /* a macvlan's lower stays on the host: deleted with its wire */
    if (testns_rail_kind_used() == RAIL_KIND_MACVLAN)
        (void)testns_rail_del(rail);
    /* a veth's peer goes once the kernel has torn the namespace down */
    if (!testns_wait_until(partner_gone, peer, wait_scaled_ms(10000)))
        return -EBUSY;
    return testns_rail_add(rail);
}

int dpenv_pod_hold(DpEnv *e, const char *container_id, const char *unit) {
    return state_pod_hold(e->state, container_id, unit);
}

int dpenv_pod_release(DpEnv *e, const char *container_id, const char *unit) {
    return state_pod_release(e->state, container_id, unit);
}

int dpenv_tenant_socket(const DpEnv *e, const char *tenant, char *buf, size_t n) {
    char dir[256], prefix[96];
    struct dirent *de;
    size_t plen;
    int found = 0;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/device-plugins", e->kubelet);
    plen = (size_t)snprintf(prefix, sizeof(prefix), "railgate-%s-", tenant);
    d = opendir(dir);
    if (!d)
        return -errno;
    while ((de = readdir(d)))
        if (strlen(de->d_name) == plen + 8 + 5 && !strncmp(de->d_name, prefix, plen) &&
            !strcmp(de->d_name + plen + 8, ".sock") && found++ == 0)
            snprintf(buf, n, "%s/%s", dir, de->d_name);
    closedir(d);
    return found == 0 ? -ENOENT : found > 1 ? -ENOTUNIQ : 0;
}

const char *dpenv_rdma_netns_mode(void) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    RdmaNetnsMode m;
    int r = rdma_open(-1, &nl);

    r = r ?: rdma_netns_mode_get(nl, &m);
    return r < 0 ? "unavailable" : rdma_netns_mode_name(m);
}
