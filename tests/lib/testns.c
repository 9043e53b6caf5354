/* SPDX-License-Identifier: Apache-2.0 */
/* Throwaway network namespaces and veth links for integration tests, through libnl. */
#include "testns.h"
#include "waitscale.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_vlan.h>
#include <linux/rtnetlink.h>

#include "macro.h"
#include "netlink.h"

#define NETNS_DIR "/run/netns"
#define NETNS_PREFIX "rgtest-"
#define MAX_TAG 16
#define MAX_NAMED 32
#define WAIT_STEP_NS (2 * 1000 * 1000)
#define LOWER_MTU 9216

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

int testns_require_root(void) {
    if (geteuid() != 0) {
        printf("SKIP: needs root (network namespaces, veth pairs, mounts under " NETNS_DIR ")\n");
        fflush(stdout);
        exit(77);
    }
    return 0;
}

/* ---- links: the product's netlink layer, one connection per call ---- */

/* The link called name, through a new connection in this thread's namespace. */
/* The link called name in the namespace open at netns_fd (-1: this one),
 * and a netlink socket there. */
static int by_name_in(int netns_fd, const char *name, Netlink **ret_nl, int *ret_ifindex) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    Link l;
    int r;

    if (!netlink_ifname_valid(name))
        return -EINVAL;
    r = netlink_open(netns_fd, &nl);
    r = r ?: link_get_by_name(nl, name, &l);
    if (r < 0)
        return r;
    *ret_nl = TAKE_PTR(nl);
    *ret_ifindex = l.ifindex;
    return 0;
}

static int by_name(const char *name, Netlink **ret_nl, int *ret_ifindex) {
    return by_name_in(-1, name, ret_nl, ret_ifindex);
}

int testns_link_get(const char *name, Link *ret) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int r = netlink_open(-1, &nl);

    return r ?: link_get_by_name(nl, name, ret);
}

int testns_veth_add(const char *a, const char *b) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int r = netlink_open(-1, &nl);

    return r ?: veth_add(nl, a, b);
}

/* ---- rails of the kind the harness names ---- */

static const char *const kind_names[] = {
    [RAIL_KIND_VETH] = "veth",
    [RAIL_KIND_DUMMY] = "dummy",
    [RAIL_KIND_MACVLAN] = "macvlan",
};

static int kind_checked = -1; /* the named kind, once checked */
static bool kind_veth_forced;

const char *testns_rail_kind_name(RailKind kind) {
    return (size_t)kind < ELEMENTSOF(kind_names) ? kind_names[kind] : "?";
}

/* The partner's own peer, for a macvlan's lower veth: <partner>w. */
static int lower_wire(const char *partner, char wire[static IF_NAMESIZE]) {
    if (!partner || strlen(partner) + 1 >= IF_NAMESIZE)
        return -EINVAL;
    snprintf(wire, IF_NAMESIZE, "%sw", partner);
    return 0;
}

static int lower_up(Netlink *nl, const char *name) {
    LinkChange c = LINK_CHANGE_INIT;
    Link l;
    int r = link_get_by_name(nl, name, &l);

    c.mtu = LOWER_MTU;
    c.state = LINK_SET_UP;
    return r ?: link_change(nl, l.ifindex, &c);
}

static int kind_add(RailKind kind, const char *name, const char *partner) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    char wire[IF_NAMESIZE];
    Link lower;
    int r;

    r = netlink_open(-1, &nl);
    if (r < 0)
        return r;
    switch (kind) {
    case RAIL_KIND_VETH:
        r = partner ? veth_add(nl, name, partner) : -EINVAL;
        return r ?: testns_link_set_up(partner, true);
    case RAIL_KIND_DUMMY:
        return link_add(nl, name, "dummy", 0);
    case RAIL_KIND_MACVLAN:
        r = lower_wire(partner, wire);
        r = r ?: veth_add(nl, partner, wire);
        /* jumbo frames below, as on a rail NIC: a macvlan's MTU is at most
         * its lower link's */
        r = r ?: lower_up(nl, wire);
        r = r ?: lower_up(nl, partner);
        r = r ?: link_get_by_name(nl, partner, &lower);
        r = r ?: link_add(nl, name, "macvlan", lower.ifindex);
        if (r < 0)
            (void)testns_link_del(partner); /* its peer goes with it */
        return r;
    }
    return -EINVAL;
}

/* A link of the kind and a VLAN on it, as the CNI anchors a rail. */
static int kind_add_anchored(RailKind kind, const char *name, const char *partner) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    Link l;
    int r = kind_add(kind, name, partner);

    r = r ?: netlink_open(-1, &nl);
    r = r ?: link_get_by_name(nl, name, &l);
    return r ?: vlan_add(nl, "rgprobe2", l.ifindex, ETH_P_8021AD, 4094, VLAN_FLAG_LOOSE_BINDING);
}

/* In a child in a namespace of its own (a thread would linger in
 * /proc/self/task for a moment after its join, and testns_enter_private
 * wants the process single-threaded): can the kernel make the kind (and,
 * anchored, a VLAN on it)? */
static int probe(RailKind kind, bool anchored) {
    int p[2], result = -EIO, st;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        int r = unshare(CLONE_NEWNET) < 0 ? -errno
                : anchored                ? kind_add_anchored(kind, "rgprobe0", "rgprobe1")
                                          : kind_add(kind, "rgprobe0", "rgprobe1");
        _exit(write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(p[1]);
    if (read(p[0], &result, sizeof(result)) != (ssize_t)sizeof(result))
        result = -EIO;
    close(p[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* the child's namespace went with it, the probe's links too */
    if (result == -EOPNOTSUPP)
        return 0;
    return result < 0 ? result : 1;
}

int testns_kind_probe(RailKind kind) {
    return probe(kind, false);
}

int testns_kind_anchorable(RailKind kind) {
    int r = probe(kind, false);

    return r <= 0 ? r : probe(kind, true);
}

RailKind testns_rail_kind(void) {
    const char *s = getenv("RAILGATE_TEST_RAIL_KIND");
    size_t k;
    int r;

    if (kind_checked >= 0)
        return (RailKind)kind_checked;
    if (!s || !*s)
        s = "veth";
    for (k = 0; k < ELEMENTSOF(kind_names) && !streq(kind_names[k], s); k++)
        ;
    if (k == ELEMENTSOF(kind_names)) {
        printf("RAILGATE_TEST_RAIL_KIND=%s: not a rail kind (veth, dummy, macvlan)\n", s);
        fflush(stdout);
        exit(1);
    }
    r = testns_kind_probe((RailKind)k);
    if (r == 0) {
        printf("SKIP: RAILGATE_TEST_RAIL_KIND=%s, and this kernel has no %s driver (%s)\n", s, s,
               strerror(EOPNOTSUPP));
        fflush(stdout);
        exit(77);
    }
    if (r < 0) {
        printf("RAILGATE_TEST_RAIL_KIND=%s: cannot make a %s link: %s\n", s, s, strerror(-r));
        fflush(stdout);
        exit(1);
    }
    kind_checked = (int)k;
    printf("rail kind: %s\n", s);
    fflush(stdout);
    return (RailKind)k;
}

void testns_rails_veth(const char *why) {
    const char *s = getenv("RAILGATE_TEST_RAIL_KIND");
    bool other = s && *s && !streq(s, "veth");

    if (kind_veth_forced)
        return;
    kind_veth_forced = true;
    printf("rail kind: veth (%s)%s%s\n", why, other ? "; not RAILGATE_TEST_RAIL_KIND=" : "",
           other ? s : "");
    fflush(stdout);
}

RailKind testns_rail_kind_used(void) {
    return kind_veth_forced ? RAIL_KIND_VETH : testns_rail_kind();
}

int testns_kind_link_add(const char *name, const char *partner) {
    return kind_add(testns_rail_kind_used(), name, partner);
}

int testns_kind_link_add_as(RailKind kind, const char *name, const char *partner) {
    return kind_add(kind, name, partner);
}

static int carrier_set(const char *name, bool on) {
    char cmd[96];
    int st;

    if (!netlink_ifname_valid(name))
        return -EINVAL;
    snprintf(cmd, sizeof(cmd), "ip link set dev %s carrier %s", name, on ? "on" : "off");
    st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int testns_kind_carrier(const char *name, const char *partner, bool on) {
    char wire[IF_NAMESIZE];
    int r;

    switch (testns_rail_kind_used()) {
    case RAIL_KIND_VETH:
        return testns_link_set_up(partner, on);
    case RAIL_KIND_DUMMY:
        return carrier_set(name, on);
    case RAIL_KIND_MACVLAN:
        r = lower_wire(partner, wire);
        return r ?: testns_link_set_up(wire, on);
    }
    return -EINVAL;
}

int testns_kind_link_del_as(RailKind kind, const char *name, const char *partner) {
    int r = testns_link_del(name);

    if (kind == RAIL_KIND_MACVLAN && partner) {
        int k = testns_link_del(partner); /* and its peer with it */
        r = r < 0 ? r : k;
    }
    return r;
}

int testns_kind_link_del(const char *name, const char *partner) {
    return testns_kind_link_del_as(testns_rail_kind_used(), name, partner);
}

static void rail_names(unsigned k, char nic[static IF_NAMESIZE], char peer[static IF_NAMESIZE]) {
    snprintf(nic, IF_NAMESIZE, "rail-nic%u", k);
    snprintf(peer, IF_NAMESIZE, "rail-peer%u", k);
}

int testns_rail_add(unsigned k) {
    char a[IF_NAMESIZE], b[IF_NAMESIZE];
    int r;

    rail_names(k, a, b);
    r = testns_kind_link_add(a, b);
    return r ?: testns_link_set_up(a, true);
}

int testns_rail_carrier(unsigned k, bool on) {
    char a[IF_NAMESIZE], b[IF_NAMESIZE];

    rail_names(k, a, b);
    return testns_kind_carrier(a, b, on);
}

int testns_rail_del(unsigned k) {
    char a[IF_NAMESIZE], b[IF_NAMESIZE];

    rail_names(k, a, b);
    return testns_kind_link_del(a, b);
}

int testns_link_set_up(const char *name, bool up) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    LinkChange c = LINK_CHANGE_INIT;
    int ifindex, r;

    c.state = up ? LINK_SET_UP : LINK_SET_DOWN;
    r = by_name(name, &nl, &ifindex);
    return r ?: link_change(nl, ifindex, &c);
}

int testns_link_change_in(int netns_fd, const char *name, const LinkChange *c) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int ifindex, r;

    r = by_name_in(netns_fd, name, &nl, &ifindex);
    return r ?: link_change(nl, ifindex, c);
}

int testns_link_set_netns(const char *name, int netns_fd) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    LinkChange c = LINK_CHANGE_INIT;
    int ifindex, r;

    if (netns_fd < 0)
        return -EBADF;
    c.netns_fd = netns_fd;
    r = by_name(name, &nl, &ifindex);
    return r ?: link_change(nl, ifindex, &c);
}

int testns_link_del(const char *name) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int ifindex, r;

    r = by_name(name, &nl, &ifindex);
    return r ?: link_delete(nl, ifindex);
}

int testns_addr_add(const char *name, const char *cidr) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    int ifindex, r;

    r = by_name(name, &nl, &ifindex);
    return r ?: addr_add(nl, ifindex, cidr);
}

/* ---- namespaces ---- */

/* unshare() moves only the calling thread: other threads would stay behind. */
static int single_threaded(void) {
    _cleanup_(closedirp) DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    unsigned n = 0;

    if (!d)
        return -errno;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    return n == 1 ? 0 : -EBUSY;
}

/* A new namespace for the calling thread, lo up, bind-mounted at path (if any). */
static int ns_make(const char *path) {
    char self[64];
    int r;

    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    r = testns_link_set_up("lo", true);
    if (r < 0 || !path)
        return r;
    snprintf(self, sizeof(self), "/proc/self/task/%d/ns/net", (int)gettid());
    if (mount(self, path, "none", MS_BIND, NULL) < 0)
        return -errno;
    return 0;
}

int testns_enter_private(void) {
    int r = single_threaded();

    if (r < 0)
        return r;
    return ns_make(NULL);
}

/* Paths to remove at exit or on a fatal signal. Written before used is set,
 * so that the signal handler only ever sees complete entries. */
typedef struct Named {
    volatile sig_atomic_t used;
    pid_t owner; /* a forked child's exit() must not take its parent's away */
    char path[96];
} Named;

static Named named[MAX_NAMED];
static const int fatal_signals[] = {SIGINT, SIGTERM, SIGABRT};
static struct sigaction saved_actions[ELEMENTSOF(fatal_signals)];

static void named_unmount(const char *path) {
    (void)umount2(path, MNT_DETACH);
    (void)unlink(path);
}

/* Async-signal-safe: umount2, unlink, getpid. */
static void named_remove_all(void) {
    pid_t self = getpid();

    for (size_t i = 0; i < MAX_NAMED; i++)
        if (named[i].used && named[i].owner == self) {
            named[i].used = 0;
            named_unmount(named[i].path);
        }
}

static void on_fatal_signal(int sig) {
    int saved = errno;

    named_remove_all();
    for (size_t i = 0; i < ELEMENTSOF(fatal_signals); i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &saved_actions[i], NULL);
    errno = saved;
    /* delivered again once we return, to whatever handled it before us */
    raise(sig);
}

static void install_signal_handlers(void) {
    struct sigaction sa = {.sa_handler = on_fatal_signal};

    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ELEMENTSOF(fatal_signals); i++) {
        if (sigaction(fatal_signals[i], NULL, &saved_actions[i]) < 0 ||
            saved_actions[i].sa_handler == SIG_IGN)
            continue; /* an ignored SIGINT (background job) stays ignored */
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

/* "rgtest-<tag>-<pid>-<seq>": the pid, or 0 if the name is not ours. */
static pid_t name_pid(const char *name) {
    const char *seq = strrchr(name, '-'), *p;
    long pid = 0;

    if (strncmp(name, NETNS_PREFIX, strlen(NETNS_PREFIX)) != 0 || !seq || seq == name)
        return 0;
    for (p = seq - 1; p > name && *p != '-'; p--)
        ;
    for (p++; p < seq; p++) {
        if (*p < '0' || *p > '9' || pid > 4194304)
            return 0;
        pid = pid * 10 + (*p - '0');
    }
    return (pid_t)pid;
}

/* Namespaces left by runs that were killed (SIGKILL, a ctest timeout). */
static void reap_stale(void) {
    _cleanup_(closedirp) DIR *d = opendir(NETNS_DIR);
    struct dirent *de;
    char path[sizeof(named[0].path)];

    if (!d)
        return;
    while ((de = readdir(d))) {
        pid_t pid = name_pid(de->d_name);

        if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        if (snprintf(path, sizeof(path), NETNS_DIR "/%s", de->d_name) < (int)sizeof(path))
            named_unmount(path);
    }
}

static int named_register(const char *path) {
    static bool hooks;

    if (!hooks) {
        if (atexit(named_remove_all) != 0)
            return -ENOMEM;
        install_signal_handlers();
        reap_stale();
        hooks = true;
    }
    for (size_t i = 0; i < MAX_NAMED; i++)
        if (!named[i].used) {
            snprintf(named[i].path, sizeof(named[i].path), "%s", path);
            named[i].owner = getpid();
            named[i].used = 1;
            return 0;
        }
    return -ENOSPC;
}

static bool tag_valid(const char *tag) {
    size_t len = tag ? strlen(tag) : 0;

    return len > 0 && len <= MAX_TAG &&
           strspn(tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len;
}

/* Create the empty mount point /run/netns/rgtest-<tag>-<pid>-<seq> and
 * register it for removal. */
static int named_reserve(const char *tag, char *path, size_t n) {
    static unsigned seq;
    int fd, r;

    if (!tag_valid(tag))
        return -EINVAL;
    if (mkdir(NETNS_DIR, 0755) < 0 && errno != EEXIST)
        return -errno;
    if ((size_t)snprintf(path, n, NETNS_DIR "/" NETNS_PREFIX "%s-%d-%u", tag, (int)getpid(),
                         __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >= n)
        return -ENAMETOOLONG;
    fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    close(fd);
    r = named_register(path);
    if (r < 0)
        (void)unlink(path);
    return r;
}

typedef struct NsMake {
    const char *path;
    int result;
} NsMake;

static void *ns_make_thread(void *p) {
    NsMake *m = p;

    m->result = ns_make(m->path);
    return NULL;
}

static int named_create(const char *tag, bool enter, char *ret_path, size_t n) {
    char path[sizeof(named[0].path)];
    NsMake m = {.path = path};
    pthread_t t;
    int r;

    if (!ret_path)
        return -EINVAL;
    r = named_reserve(tag, path, sizeof(path));
    if (r < 0)
        return r;
    if (enter) {
        m.result = ns_make(path);
    } else {
        /* a short-lived thread makes the namespace, so the caller stays put */
        r = pthread_create(&t, NULL, ns_make_thread, &m);
        if (r != 0)
            m.result = -r;
        else
            pthread_join(t, NULL);
    }
    if (m.result >= 0 && strlen(path) >= n)
        m.result = -ENAMETOOLONG;
    if (m.result < 0) {
        (void)testns_named_remove(path);
        return m.result;
    }
    memcpy(ret_path, path, strlen(path) + 1);
    return 0;
}

int testns_named_new(const char *tag, char *ret_path, size_t n) {
    return named_create(tag, false, ret_path, n);
}

int testns_enter_named(const char *tag, char *ret_path, size_t n) {
    int r = single_threaded();

    if (r < 0)
        return r;
    return named_create(tag, true, ret_path, n);
}

int testns_sysfs_mount(const char *path) {
    int r;

    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return -errno;
    r = named_register(path);
    if (r < 0)
        return r;
    if (mount("sysfs", path, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        r = -errno;
        (void)testns_named_remove(path);
        return r;
    }
    return 0;
}

int testns_named_remove(const char *path) {
    if (!path)
        return -EINVAL;
    for (size_t i = 0; i < MAX_NAMED; i++)
        if (named[i].used && named[i].owner == getpid() && streq(named[i].path, path)) {
            named[i].used = 0;
            named_unmount(path);
            return 0;
        }
    return -ENOENT;
}

/* ---- waiting ---- */

static long elapsed_ms(const struct timespec *since) {
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

bool testns_wait_until(bool (*pred)(void *arg), void *arg, int timeout_ms) {
    const struct timespec step = {.tv_nsec = WAIT_STEP_NS};
    const int limit_ms = wait_scaled_ms(timeout_ms);
    struct timespec start;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (pred(arg))
            return true;
        if (elapsed_ms(&start) >= limit_ms)
            return false;
        nanosleep(&step, NULL);
    }
}

/* ---- XDP, as a pod attaches it ---- */

static int bpf(int cmd, union bpf_attr *attr) {
    return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* r0 = XDP_DROP; exit */
static int xdp_drop_load(void) {
    struct bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP},
        {.code = BPF_JMP | BPF_EXIT},
    };
    union bpf_attr a = {0};

    a.prog_type = BPF_PROG_TYPE_XDP;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = ELEMENTSOF(insns);
    a.license = (uint64_t)(uintptr_t) "GPL";
    int fd = bpf(BPF_PROG_LOAD, &a);
    return fd < 0 ? -errno : fd;
}

static int prog_id(int fd, unsigned *ret) {
    struct bpf_prog_info info = {0};
    union bpf_attr a = {0};

    a.info.bpf_fd = (uint32_t)fd;
    a.info.info_len = sizeof(info);
    a.info.info = (uint64_t)(uintptr_t)&info;
    if (bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
        return -errno;
    *ret = info.id;
    return 0;
}

/* IFLA_XDP {fd, flags} on ifindex, on a NETLINK_ROUTE socket of this namespace */
static int xdp_setlink(int ifindex, int prog_fd, unsigned flags) {
    struct {
        struct nlmsghdr h;
        struct ifinfomsg ifi;
        char attrs[64];
    } req = {0};
    struct nlattr *xdp, *a;
    char buf[4096];
    int fd, r = 0;

    req.h.nlmsg_type = RTM_NEWLINK;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    req.ifi.ifi_family = AF_UNSPEC;
    req.ifi.ifi_index = ifindex;
    xdp = (struct nlattr *)req.attrs;
    xdp->nla_type = IFLA_XDP | NLA_F_NESTED;
    a = (struct nlattr *)((char *)xdp + NLA_HDRLEN);
    a->nla_type = IFLA_XDP_FD;
    a->nla_len = NLA_HDRLEN + 4;
    memcpy((char *)a + NLA_HDRLEN, &prog_fd, 4);
    a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
    a->nla_type = IFLA_XDP_FLAGS;
    a->nla_len = NLA_HDRLEN + 4;
    memcpy((char *)a + NLA_HDRLEN, &flags, 4);
    xdp->nla_len = (uint16_t)((char *)a + NLA_ALIGN(a->nla_len) - (char *)xdp);
    req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi)) + xdp->nla_len;
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return -errno;
    if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
        r = -errno;
    ssize_t n = r < 0 ? -1 : recv(fd, buf, sizeof(buf), 0);
    if (r >= 0 && n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        r = -EIO;
    if (r >= 0 && ((struct nlmsghdr *)buf)->nlmsg_type == NLMSG_ERROR)
        r = ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)buf))->error;
    close(fd);
    return r;
}

typedef struct XdpAttach {
    const char *dev;
    unsigned flags;
    int *ret_link_fd;
    unsigned *ret_prog_id;
} XdpAttach;

static int xdp_attach_here(void *p) {
    const XdpAttach *x = p;
    /* a BPF link and IFLA_XDP both name the device as this namespace does */
    unsigned ifindex = if_nametoindex(x->dev);
    int prog = -EBADF, r;

    r = ifindex ? 0 : -ENODEV;
    if (r >= 0)
        r = prog = xdp_drop_load();
    if (r >= 0 && x->ret_prog_id)
        r = prog_id(prog, x->ret_prog_id);
    if (r >= 0 && x->ret_link_fd) {
        union bpf_attr a = {0};
        a.link_create.prog_fd = (uint32_t)prog;
        a.link_create.target_ifindex = ifindex;
        a.link_create.attach_type = BPF_XDP;
        a.link_create.flags = x->flags;
        r = bpf(BPF_LINK_CREATE, &a);
        if (r < 0)
            r = -errno;
        else
            *x->ret_link_fd = r;
    } else if (r >= 0)
        r = xdp_setlink((int)ifindex, prog, x->flags);
    if (prog >= 0)
        close(prog);
    return r < 0 ? r : 0;
}

static int in_netns(const char *netns_path, int (*fn)(void *), void *arg);

int testns_xdp_attach(const char *netns_path, const char *dev, unsigned xdp_flags, int *ret_link_fd,
                      unsigned *ret_prog_id) {
    XdpAttach x = {
        .dev = dev, .flags = xdp_flags, .ret_link_fd = ret_link_fd, .ret_prog_id = ret_prog_id};

    return in_netns(netns_path, xdp_attach_here, &x);
}

/* ---- tcx (6.6+): its attach types and BPF_PROG_QUERY's 6.6 layout, newer
 * than the 6.1 headers ---- */

#define TEST_TCX_INGRESS 46
#define TEST_TCX_EGRESS 47

static int tc_drop_load(void) {
    struct bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 2 /* TCX_DROP */},
        {.code = BPF_JMP | BPF_EXIT},
    };
    union bpf_attr a = {0};

    a.prog_type = BPF_PROG_TYPE_SCHED_CLS;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = ELEMENTSOF(insns);
    a.license = (uint64_t)(uintptr_t) "GPL";
    int fd = bpf(BPF_PROG_LOAD, &a);
    return fd < 0 ? -errno : fd;
}

/* Run fn(arg) in the namespace at netns_path (NULL: this one). */
static int in_netns(const char *netns_path, int (*fn)(void *), void *arg) {
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), target = -EBADF, r;

    if (self < 0)
        return -errno;
    if (netns_path) {
        target = open(netns_path, O_RDONLY | O_CLOEXEC);
        if (target < 0 || setns(target, CLONE_NEWNET) < 0) {
            r = -errno;
            if (target >= 0)
                close(target);
            close(self);
            return r;
        }
    }
    r = fn(arg);
    if (target >= 0) {
        if (setns(self, CLONE_NEWNET) < 0)
            abort(); /* the test cannot go on in the wrong namespace */
        close(target);
    }
    close(self);
    return r;
}

typedef struct TcxAttach {
    const char *dev;
    bool egress;
    int *ret_link_fd;
} TcxAttach;

static int tcx_attach_here(void *p) {
    const TcxAttach *t = p;
    unsigned ifindex = if_nametoindex(t->dev);
    union bpf_attr a = {0};
    int prog, r;

    if (!ifindex)
        return -ENODEV;
    prog = tc_drop_load();
    if (prog < 0)
        return prog;
    if (t->ret_link_fd) {
        a.link_create.prog_fd = (uint32_t)prog;
        a.link_create.target_ifindex = ifindex;
        a.link_create.attach_type = t->egress ? TEST_TCX_EGRESS : TEST_TCX_INGRESS;
        r = bpf(BPF_LINK_CREATE, &a);
        if (r >= 0)
            *t->ret_link_fd = r;
    } else {
        a.target_fd = ifindex;
        a.attach_bpf_fd = (uint32_t)prog;
        a.attach_type = t->egress ? TEST_TCX_EGRESS : TEST_TCX_INGRESS;
        r = bpf(BPF_PROG_ATTACH, &a);
    }
    r = r < 0 ? -errno : 0;
    close(prog);
    return r;
}

int testns_tcx_attach(const char *netns_path, const char *dev, bool egress, int *ret_link_fd) {
    TcxAttach t = {.dev = dev, .egress = egress, .ret_link_fd = ret_link_fd};

    return in_netns(netns_path, tcx_attach_here, &t);
}

static int tcx_count_here(void *p) {
    unsigned ifindex = if_nametoindex(p);
    int n = 0;

    if (!ifindex)
        return -ENODEV;
    for (uint32_t type = TEST_TCX_INGRESS; type <= TEST_TCX_EGRESS; type++) {
        /* target_ifindex, attach_type, query_flags, attach_flags, prog_ids,
         * count: the first 28 bytes, as in 6.1's layout */
        union bpf_attr a = {0};
        a.query.target_fd = ifindex;
        a.query.attach_type = type;
        if (bpf(BPF_PROG_QUERY, &a) < 0)
            return -errno;
        n += (int)a.query.prog_cnt;
    }
    return n;
}

int testns_tcx_count(const char *netns_path, const char *dev) {
    return in_netns(netns_path, tcx_count_here, (void *)dev);
}
