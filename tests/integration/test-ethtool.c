/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A NIC's ethtool state recorded and set back through ethtool's netlink family, in a
 * private netns: veth (features, channels), dummy where the kernel has it (features),
 * and, under `tests/vm/run.sh --sriov`, an igbvf VF of QEMU's igb (every piece igbvf
 * has). The state is changed with ethtool(8), an independent witness, restored, read
 * back and compared with the record; refusals name their piece, and RSS (read only over
 * netlink) is answered with ETHTOOL_CANNOT_RESTORE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/ethtool_netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ethtool-rxnfc.h"
#include "ethtool.h"
#include "macro.h"
#include "netlink.h"
#include "netns.h"
#include "proc.h"
#include "testns.h"
#include "waitscale.h"

#define RESTORE_RUNS 5

static EthtoolConn *conn; /* in the private namespace */
static int host_netns = -EBADF;
static char sys_pf[300]; /* the PF whose VFs this test made, for removing them at exit */

_printf_(1, 2) static int sh(const char *fmt, ...) {
    char cmd[512];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

_printf_(1, 2) static void must(const char *fmt, ...) {
    char cmd[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (sh("%s >/dev/null", cmd) != 0)
        fail_msg("'%s' failed", cmd);
}

/* Does the output of cmd hold a line that is exactly want, blanks aside? */
static bool output_has_line(const char *cmd, const char *want) {
    FILE *f = popen(cmd, "r");
    char line[512], a[512], b[512];
    bool found = false;

    /* compare without whitespace: ethtool pads with tabs */
    size_t k = 0;
    for (const char *p = want; *p && k < sizeof(b) - 1; p++)
        if (*p != ' ' && *p != '\t')
            b[k++] = *p;
    b[k] = 0;
    while (f && fgets(line, sizeof(line), f)) {
        k = 0;
        for (const char *p = line; *p && k < sizeof(a) - 1; p++)
            if (*p != ' ' && *p != '\t' && *p != '\n')
                a[k++] = *p;
        a[k] = 0;
        found = found || streq(a, b);
    }
    if (f)
        pclose(f);
    return found;
}

static int ifindex(const char *name) {
    Link l;

    assert_int_equal(testns_link_get(name, &l), 0);
    return l.ifindex;
}

static void get(int idx, EthtoolState *ret) {
    RgError err = {0};
    int r = ethtool_state_get(conn, idx, ret, &err);

    if (r < 0)
        fail_msg("ethtool_state_get: %s", err.msg);
}

/* A deep copy, through the JSON the CNI keeps on disk. */
static void copy_via_json(const EthtoolState *s, EthtoolState *ret) {
    json_t *j = NULL;
    RgError err = {0};

    assert_int_equal(ethtool_state_to_json(s, &j), 0);
    if (ethtool_state_from_json(j, ret, &err) < 0)
        fail_msg("%s", err.msg);
    json_decref(j);
}

static void print_state(const char *what, const EthtoolState *s) {
    json_t *j = NULL;
    char *text;

    assert_int_equal(ethtool_state_to_json(s, &j), 0);
    text = json_dumps(j, JSON_COMPACT);
    fprintf(stderr, "test-ethtool: %s: %s\n", what, text);
    free(text);
    json_decref(j);
}

static const EthtoolBit *feature(const EthtoolState *s, const char *name) {
    const EthtoolBit *b = NULL;

    for (size_t i = 0; i < s->part[ETHTOOL_FEATURES].bits.n && !b; i++)
        if (streq(s->part[ETHTOOL_FEATURES].bits.bits[i].name, name))
            b = &s->part[ETHTOOL_FEATURES].bits.bits[i];
    if (!b)
        fail_msg("feature %s is not among the changeable ones", name);
    return b;
}

/* Flip feature name of dev with ethtool -K; returns the value it had. */
static bool flip(const char *dev, const EthtoolState *s, const char *name) {
    bool was = feature(s, name)->on;

    must("ethtool -K %s %s %s", dev, name, was ? "off" : "on");
    return was;
}

static void expect_feature(const char *dev, const char *name, bool on) {
    char cmd[128], line[128];

    snprintf(cmd, sizeof(cmd), "ethtool -k %s", dev);
    snprintf(line, sizeof(line), "%s: %s", name, on ? "on" : "off");
    if (!output_has_line(cmd, line))
        fail_msg("ethtool -k %s does not say '%s'", dev, line);
}

static unsigned diff_now(int idx, const EthtoolState *rec) {
    EthtoolState now;
    unsigned d;

    get(idx, &now);
    d = ethtool_state_diff(rec, &now);
    ethtool_state_done(&now);
    return d;
}

static void restore_ok(int idx, const EthtoolState *rec) {
    RgError err = {0};
    int r = ethtool_state_restore(conn, idx, rec, &err);

    if (r < 0)
        fail_msg("ethtool_state_restore: %d: %s", r, err.msg);
    assert_int_equal(diff_now(idx, rec), 0);
}

static void et_pair_add(void) {
    must("ip link add et0 numtxqueues 4 numrxqueues 4 type veth peer name et1 numtxqueues 4 "
         "numrxqueues 4");
}

static int links_del(void **state) {
    (void)sh("ip link del et0 2>/dev/null");
    (void)sh("ip link del dm0 2>/dev/null");
    return 0;
}

/* ---- veth ------------------------------------------------------------------- */

static void test_veth_restore(void **state) {
    EthtoolState rec, now;
    bool gro_list, tso;
    int idx;
    char b[128];

    et_pair_add();
    idx = ifindex("et0");
    get(idx, &rec);
    print_state("veth", &rec);
    assert_int_equal(rec.part[ETHTOOL_FEATURES].have, ETHTOOL_HAVE);
    assert_int_equal(rec.part[ETHTOOL_CHANNELS].have, ETHTOOL_HAVE);
    assert_int_equal(rec.part[ETHTOOL_CHANNELS].v[ETHTOOL_A_CHANNELS_RX_COUNT], 4);
    /* veth has no rings, coalescing, pause or private flags: absent, not an error */
    assert_int_equal(rec.part[ETHTOOL_RINGS].have, ETHTOOL_NONE);
    assert_int_equal(rec.part[ETHTOOL_PRIVFLAGS].have, ETHTOOL_NONE);

    gro_list = flip("et0", &rec, "rx-gro-list");
    tso = flip("et0", &rec, "tx-tcp-segmentation");
    must("ethtool -L et0 rx 2 tx 3");
    get(idx, &now);
    assert_int_equal(ethtool_state_diff(&rec, &now),
                     1u << ETHTOOL_FEATURES | 1u << ETHTOOL_CHANNELS);
    fprintf(stderr, "test-ethtool: after ethtool -K/-L, differs: %s\n",
            ethtool_pieces_to_string(ethtool_state_diff(&rec, &now), b, sizeof(b)));
    ethtool_state_done(&now);

    restore_ok(idx, &rec);
    expect_feature("et0", "rx-gro-list", gro_list);
    expect_feature("et0", "tx-tcp-segmentation", tso);
    assert_true(output_has_line("ethtool -l et0 | sed -n '/Current/,$p'", "RX: 4"));
    assert_true(output_has_line("ethtool -l et0 | sed -n '/Current/,$p'", "TX: 4"));
    /* nothing differs: nothing is sent */
    restore_ok(idx, &rec);
    ethtool_state_done(&rec);
}

/* A piece nothing can set back (RSS over netlink) is answered with its own error, and
 * the pieces that can be set are set all the same. */
static void test_rss_cannot_restore(void **state) {
    static const uint32_t table[] = {0, 1, 0, 1};
    EthtoolState rec, fake;
    RgError err = {0};
    EthtoolPart *rss;
    bool gro_list;
    int idx;

    et_pair_add();
    idx = ifindex("et0");
    get(idx, &rec);
    copy_via_json(&rec, &fake);
    rss = &fake.part[ETHTOOL_RSS];
    assert_int_not_equal(rss->have, ETHTOOL_HAVE); /* veth has no RSS */
    rss->have = ETHTOOL_HAVE;
    rss->table = malloc(sizeof(table));
    assert_non_null(rss->table);
    memcpy(rss->table, table, sizeof(table));
    rss->table_len = ELEMENTSOF(table);
    gro_list = flip("et0", &rec, "rx-gro-list");

    assert_int_equal(ethtool_state_restore(conn, idx, &fake, &err), ETHTOOL_CANNOT_RESTORE);
    fprintf(stderr, "test-ethtool: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "rss: cannot be restored"));
    expect_feature("et0", "rx-gro-list", gro_list);
    /* where this kernel cannot read RSS (6.1), the diff leaves it out */
    assert_int_equal(diff_now(idx, &fake),
                     rec.part[ETHTOOL_RSS].have == ETHTOOL_UNREADABLE ? 0 : 1u << ETHTOOL_RSS);
    ethtool_state_done(&fake);
    ethtool_state_done(&rec);
}

/* A SET the kernel refuses names its piece and the kernel's reason; the other pieces
 * are still set back. */
static void test_refusal_names_piece(void **state) {
    EthtoolState rec, bad;
    RgError err = {0};
    bool gro_list;
    int idx, r;

    et_pair_add();
    idx = ifindex("et0");
    get(idx, &rec);
    copy_via_json(&rec, &bad);
    bad.part[ETHTOOL_CHANNELS].v[ETHTOOL_A_CHANNELS_RX_COUNT] = 64; /* beyond the 4 queues */
    gro_list = flip("et0", &rec, "rx-gro-list");

    r = ethtool_state_restore(conn, idx, &bad, &err);
    fprintf(stderr, "test-ethtool: %d: %s\n", r, err.msg);
    assert_true(r < 0 && r != ETHTOOL_CANNOT_RESTORE && r != -EIO);
    assert_non_null(strstr(err.msg, "channels: "));
    assert_null(strstr(err.msg, "features"));
    expect_feature("et0", "rx-gro-list", gro_list);
    assert_int_equal(diff_now(idx, &rec), 0);
    ethtool_state_done(&bad);
    ethtool_state_done(&rec);
}

/* What the CNI writes to disk is what it reads back. */
static void test_json_of_a_real_device(void **state) {
    EthtoolState rec, back;

    et_pair_add();
    get(ifindex("et0"), &rec);
    copy_via_json(&rec, &back);
    assert_int_equal(ethtool_state_diff(&rec, &back), 0);
    ethtool_state_done(&back);
    ethtool_state_done(&rec);
}

/* A connection opened from here on a namespace's fd reads the links there, and only
 * those: the socket is made inside it. */
static void test_other_namespace(void **state) {
    _cleanup_(ethtool_closep) EthtoolConn *there = NULL;
    _cleanup_(netlink_closep) Netlink *nl_there = NULL;
    _cleanup_close_ int fd = -EBADF;
    char path[128];
    EthtoolState s;
    RgError err = {0};
    Link l;
    int idx;

    assert_int_equal(testns_named_new("ethtool", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    et_pair_add();
    must("ethtool -L et1 rx 3");
    idx = ifindex("et1");
    assert_int_equal(testns_link_set_netns("et1", fd), 0);
    assert_int_equal(ethtool_open(fd, &there), 0);
    assert_int_equal(netlink_open(fd, &nl_there), 0);
    assert_int_equal(link_get_by_name(nl_there, "et1", &l), 0);
    /* et1 is no longer here: its ifindex names nothing on our connection */
    assert_int_equal(ethtool_state_get(conn, idx, &s, &err), -ENODEV);
    assert_non_null(strstr(err.msg, "ifindex"));
    assert_int_equal(ethtool_state_get(there, l.ifindex, &s, &err), 0);
    assert_int_equal(s.part[ETHTOOL_CHANNELS].v[ETHTOOL_A_CHANNELS_RX_COUNT], 3);
    ethtool_state_done(&s);
    assert_int_equal(testns_named_remove(path), 0);
}

/* Many links in one batch: each answer is that link's (as read alone), and a
 * link that is not there fails with the same words as alone, the others read. */
static void test_many_links(void **state) {
    EthtoolState many[3], one;
    RgError errs[3] = {{0}}, err = {0};
    int idx[3], r[3];

    et_pair_add();
    must("ethtool -L et1 rx 3");
    idx[0] = ifindex("et0");
    idx[1] = 999999; /* no such link */
    idx[2] = ifindex("et1");
    assert_int_equal(ethtool_state_get_many(conn, idx, 3, many, r, errs), -ENODEV);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[1], -ENODEV);
    assert_int_equal(r[2], 0);
    assert_int_equal(ethtool_state_get(conn, idx[1], &one, &err), -ENODEV);
    assert_string_equal(errs[1].msg, err.msg);
    assert_int_equal(many[2].part[ETHTOOL_CHANNELS].v[ETHTOOL_A_CHANNELS_RX_COUNT], 3);
    for (int i = 0; i < 3; i += 2) {
        get(idx[i], &one);
        assert_int_equal(ethtool_state_diff(&many[i], &one), 0);
        ethtool_state_done(&one);
        ethtool_state_done(&many[i]);
    }
}

/* ---- dummy ------------------------------------------------------------------ */

static void test_dummy_restore(void **state) {
    EthtoolState rec;
    bool csum;
    int idx;

    if (sh("ip link add dm0 type dummy 2>/dev/null") != 0) {
        fprintf(stderr, "test-ethtool: this kernel has no dummy driver: the dummy part is "
                        "skipped (tests/vm/run.sh runs it)\n");
        skip();
    }
    idx = ifindex("dm0");
    get(idx, &rec);
    print_state("dummy", &rec);
    assert_int_equal(rec.part[ETHTOOL_CHANNELS].have, ETHTOOL_NONE);
    csum = flip("dm0", &rec, "tx-checksum-ip-generic");
    (void)flip("dm0", &rec, "rx-gro-list");
    assert_int_equal(diff_now(idx, &rec), 1u << ETHTOOL_FEATURES);
    restore_ok(idx, &rec);
    expect_feature("dm0", "tx-checksum-ip-generic", csum);
    ethtool_state_done(&rec);
}

/* ---- an igbvf VF (tests/vm/run.sh --sriov) ------------------------------------ */

static int write_str(const char *path, const char *s) {
    FILE *f = fopen(path, "we");
    int r = f && fputs(s, f) >= 0 ? 0 : -EIO;

    if (f && fclose(f) != 0)
        r = -EIO;
    return r;
}

static void vfs_remove(void) {
    char path[340];

    if (!sys_pf[0])
        return;
    snprintf(path, sizeof(path), "%s/sriov_numvfs", sys_pf);
    (void)write_str(path, "0");
}

/* QEMU's igb (subsystem vendor 1af4) only: never a host's real NIC. */
static bool qemu_pf_find(char *ret, size_t n) {
    DIR *d = opendir("/sys/class/net");
    char path[300], buf[32];

    ret[0] = 0;
    for (struct dirent *de; d && (de = readdir(d)) && !ret[0];) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/sys/class/net/%s/device/sriov_totalvfs", de->d_name);
        if (file_read_line(path, buf, sizeof(buf)) < 0 || atoi(buf) < 1)
            continue;
        snprintf(path, sizeof(path), "/sys/class/net/%s/device/subsystem_vendor", de->d_name);
        if (file_read_line(path, buf, sizeof(buf)) == 0 && streq(buf, "0x1af4"))
            snprintf(ret, n, "%.15s", de->d_name);
    }
    if (d)
        closedir(d);
    return ret[0];
}

typedef struct VfWait {
    char pci[32];
    char name[IF_NAMESIZE];
} VfWait;

static bool vf_netdev(void *arg) {
    VfWait *w = arg;
    char path[128];
    DIR *d;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/net", w->pci);
    d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] != '.')
            snprintf(w->name, sizeof(w->name), "%.15s", de->d_name);
    if (d)
        closedir(d);
    return w->name[0];
}

/* One VF of QEMU's igb, its netdev moved into this test's namespace: its name. */
static void vf_make(char *ret, size_t n) {
    _cleanup_(netlink_closep) Netlink *host = NULL;
    char pf[IF_NAMESIZE], path[340], target[256];
    _cleanup_close_ int self = -EBADF;
    LinkChange move = LINK_CHANGE_INIT, up = LINK_CHANGE_INIT;
    VfWait w = {.pci = {0}};
    Link l;
    ssize_t k;

    if (!qemu_pf_find(pf, sizeof(pf))) {
        fprintf(stderr, "test-ethtool: no SR-IOV PF of QEMU's igb here: the VF part is "
                        "skipped (run it under `bash tests/vm/run.sh --sriov`)\n");
        skip();
    }
    snprintf(sys_pf, sizeof(sys_pf), "/sys/class/net/%s/device", pf);
    atexit(vfs_remove);
    assert_int_equal(netlink_open(host_netns, &host), 0);
    assert_int_equal(link_get_by_name(host, pf, &l), 0);
    up.state = LINK_SET_UP;
    assert_int_equal(link_change(host, l.ifindex, &up), 0);
    snprintf(path, sizeof(path), "%s/sriov_numvfs", sys_pf);
    assert_int_equal(write_str(path, "1"), 0);
    snprintf(path, sizeof(path), "%s/virtfn0", sys_pf);
    k = readlink(path, target, sizeof(target) - 1);
    assert_true(k > 0);
    target[k] = 0;
    snprintf(w.pci, sizeof(w.pci), "%s", strrchr(target, '/') + 1);
    assert_true(testns_wait_until(vf_netdev, &w, wait_scaled_ms(60000)));
    assert_int_equal(link_get_by_name(host, w.name, &l), 0);
    assert_int_equal(netns_open_current(&self), 0);
    move.netns_fd = self;
    assert_int_equal(link_change(host, l.ifindex, &move), 0);
    fprintf(stderr, "test-ethtool: VF %s (%s) of %s, driver igbvf\n", w.name, w.pci, pf);
    snprintf(ret, n, "%s", w.name);
}

static double now_ms(void) {
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* What a pod would do to piece p of the VF with ethtool(8) (the pieces igbvf lets change). */
static void vf_change(const char *vf, const EthtoolState *rec, EthtoolPiece p) {
    const EthtoolPart *r = &rec->part[p];

    switch (p) {
    case ETHTOOL_RINGS:
        must("ethtool -G %s rx %u tx %u", vf, r->v[ETHTOOL_A_RINGS_RX] == 512 ? 1024 : 512,
             r->v[ETHTOOL_A_RINGS_TX] == 512 ? 1024 : 512);
        break;
    case ETHTOOL_COALESCE:
        must("ethtool -C %s rx-usecs %u", vf, r->v[ETHTOOL_A_COALESCE_RX_USECS] == 100 ? 200 : 100);
        break;
    case ETHTOOL_MSGLEVEL:
        must("ethtool -s %s msglvl 0x%x", vf, r->bits.n == 1 ? 0x3u : 0x1u);
        break;
    case ETHTOOL_FEATURES:
        (void)flip(vf, rec, "rx-gro-list");
        break;
    default:
        fail_msg("no change for %s", ethtool_piece_to_string(p));
    }
}

static unsigned vf_changeable(const EthtoolState *rec) {
    unsigned want = 0;

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        if (rec->part[p].have == ETHTOOL_HAVE && (p == ETHTOOL_FEATURES || p == ETHTOOL_RINGS ||
                                                  p == ETHTOOL_COALESCE || p == ETHTOOL_MSGLEVEL))
            want |= 1u << p;
    return want;
}

/* Change the pieces in mask, check that the diff says so, restore: how long it took. */
static double vf_change_restore(const char *vf, int idx, const EthtoolState *rec, unsigned mask) {
    EthtoolState now;
    double t0;

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        if (mask & (1u << p))
            vf_change(vf, rec, p);
    get(idx, &now);
    assert_int_equal(ethtool_state_diff(rec, &now), mask);
    ethtool_state_done(&now);
    t0 = now_ms();
    restore_ok(idx, rec);
    return now_ms() - t0;
}

static void median_print(const char *what, double *ms, unsigned n) {
    qsort(ms, n, sizeof(ms[0]), cmp_double);
    fprintf(stderr,
            "test-ethtool: igbvf: restoring %s: median %.1f ms (min %.1f, max %.1f, %u runs)\n",
            what, ms[n / 2], ms[0], ms[n - 1], n);
}

static void test_vf_restore(void **state) {
    EthtoolState rec;
    double ms[RESTORE_RUNS];
    char vf[IF_NAMESIZE], b[160];
    unsigned want;
    int idx;

    vf_make(vf, sizeof(vf));
    must("ip link set %s up", vf);
    idx = ifindex(vf);
    get(idx, &rec);
    print_state("igbvf", &rec);
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        fprintf(stderr, "test-ethtool:   %s: %s\n", ethtool_piece_to_string(p),
                rec.part[p].have == ETHTOOL_HAVE   ? "yes"
                : rec.part[p].have == ETHTOOL_NONE ? "no (EOPNOTSUPP)"
                                                   : "unreadable (no netlink request)");
    want = vf_changeable(&rec);
    assert_true(want & (1u << ETHTOOL_RINGS));
    assert_true(want & (1u << ETHTOOL_MSGLEVEL));
    /* reading alone */
    for (unsigned i = 0; i < RESTORE_RUNS; i++) {
        EthtoolState now;
        double t0 = now_ms();

        get(idx, &now);
        ms[i] = now_ms() - t0;
        ethtool_state_done(&now);
    }
    median_print("nothing (reading the state)", ms, RESTORE_RUNS);
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        if (!(want & (1u << p)))
            continue;
        for (unsigned i = 0; i < RESTORE_RUNS; i++)
            ms[i] = vf_change_restore(vf, idx, &rec, 1u << p);
        median_print(ethtool_piece_to_string(p), ms, RESTORE_RUNS);
    }
    for (unsigned i = 0; i < RESTORE_RUNS; i++)
        ms[i] = vf_change_restore(vf, idx, &rec, want);
    median_print(ethtool_pieces_to_string(want, b, sizeof(b)), ms, RESTORE_RUNS);
    ethtool_state_done(&rec);
}

/* ---- n-tuple rules and flow hash fields: QEMU's igb PF (tests/vm/run.sh --sriov) ---- */

/* SIOCGHWTSTAMP / SIOCSHWTSTAMP on dev in this namespace, as linuxptp does. */
static int hwtstamp(const char *dev, unsigned long req, struct hwtstamp_config *c) {
    struct ifreq ifr = {0};
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

    if (fd < 0)
        return -errno;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
    ifr.ifr_data = (void *)c;
    r = ioctl(fd, req, &ifr) < 0 ? -errno : 0;
    close(fd);
    return r;
}

/* What `cmd` prints (ethtool(8), the witness), whole. */
static char *output_of(const char *cmd) {
    char *buf = calloc(1, 16384);
    size_t n = 0;
    FILE *f = buf ? popen(cmd, "r") : NULL;

    assert_non_null(f);
    for (size_t k; (k = fread(buf + n, 1, 16383 - n, f)) > 0;)
        n += k;
    assert_int_equal(pclose(f), 0);
    return buf;
}

static void assert_same_output(const char *what, const char *before, const char *now) {
    if (!streq(before, now))
        fprintf(stderr, "%s: before\n%s\nnow\n%s\n", what, before, now);
    assert_string_equal(before, now);
}

/*
 * The node has an n-tuple rule on the PF (an ether-type filter at location
 * 2); it is recorded with the PF's flow hash fields and RSS table. Then,
 * as a pod holding the NIC would: that rule deleted, one of its own added
 * at location 5, UDP over IPv4 hashed on ports too, every flow to queue 0.
 * rxnfc_restore() deletes the pod's rule, puts the node's back at its
 * location, sets the hash fields and the table back: `ethtool -n` and `-x`
 * show what they showed before. (No rail is a PF here: a PF
 * with VFs is not lent, and igb is the only driver with these on these
 * machines; the CNI calls this library for every NIC it lends.)
 */
static void test_pf_rxnfc(void **state) {
    char pf[IF_NAMESIZE], cmd[160];
    _cleanup_close_ int self = -EBADF;
    RxnfcState rec = {0};

    if (!qemu_pf_find(pf, sizeof(pf))) {
        fprintf(stderr, "test-ethtool: no SR-IOV PF of QEMU's igb here: the n-tuple part is "
                        "skipped (run it under `bash tests/vm/run.sh --sriov`)\n");
        skip();
    }
    assert_int_equal(netns_open_current(&self), 0);
    assert_int_equal(setns(host_netns, CLONE_NEWNET), 0);
    int ifindex = (int)if_nametoindex(pf);
    assert_true(ifindex > 0);
    /* n-tuple rules where the PF takes them (igb from the i350 on; QEMU
     * emulates an 82576, which reads its rules, none, and takes none) */
    bool rules = sh("ethtool -K %s ntuple on >/dev/null 2>&1", pf) == 0;
    if (!rules)
        fprintf(stderr,
                "test-ethtool: %s takes no n-tuple rules: they are read (none), and "
                "the hash fields, RSS table and timestamping are changed\n",
                pf);
    /* two queues where the PF takes them (one under TCG's single CPU):
     * a table that can change */
    snprintf(cmd, sizeof(cmd), "ethtool -l %s | awk '/Combined:/ {c = $2} END {print c}'", pf);
    char *combined = output_of(cmd);
    (void)sh("ethtool -L %s combined 2 >/dev/null 2>&1", pf);
    if (rules)
        must("ethtool -N %s flow-type ether proto 0x88f7 action 0 loc 2", pf);
    snprintf(cmd, sizeof(cmd), "ethtool -n %s", pf);
    char *rules_before = output_of(cmd);
    snprintf(cmd, sizeof(cmd), "ethtool -n %s rx-flow-hash udp4", pf);
    char *hash_before = output_of(cmd);
    snprintf(cmd, sizeof(cmd), "ethtool -x %s", pf);
    char *rss_before = output_of(cmd);
    fprintf(stderr, "test-ethtool: %s before:\n%s%s%s", pf, rules_before, hash_before, rss_before);

    assert_int_equal(rxnfc_get(pf, ifindex, &rec), 0);
    assert_true(rec.have_rules);
    assert_int_equal(rec.n_rules, rules);
    if (rules)
        assert_int_equal(rec.rules[0].fs.location, 2);
    assert_true(rec.hash_have != 0);
    assert_true(rec.have_rss);
    assert_true(rec.rss_indir_n > 0);
    assert_int_equal(rxnfc_rss_contexts(pf, ifindex), 0); /* igb keeps none */
    /* the record round trips */
    json_t *j;
    RxnfcState back = {0};
    assert_int_equal(rxnfc_to_json(&rec, &j), 0);
    assert_int_equal(rxnfc_from_json(j, &back), 0);
    json_decref(j);
    assert_int_equal(back.n_rules, rec.n_rules);
    if (rules)
        assert_memory_equal(&back.rules[0].fs, &rec.rules[0].fs, sizeof(rec.rules[0].fs));
    rxnfc_done(&back);

    if (rules) {
        must("ethtool -N %s delete 2", pf);
        must("ethtool -N %s flow-type ether proto 0x88cc action 0 loc 5", pf);
    }
    must("ethtool -N %s rx-flow-hash udp4 sdfn", pf);
    must("ethtool -X %s equal 1", pf);
    /* and timestamps every frame it receives, as a PTP daemon would ask */
    struct hwtstamp_config ts_before,
        ts_pod = {.tx_type = HWTSTAMP_TX_ON, .rx_filter = HWTSTAMP_FILTER_ALL};
    bool ts = hwtstamp(pf, SIOCGHWTSTAMP, &ts_before) == 0;
    if (ts && hwtstamp(pf, SIOCSHWTSTAMP, &ts_pod) < 0) {
        fprintf(stderr, "test-ethtool: %s takes no timestamping setting here\n", pf);
        ts = false;
    }
    assert_int_equal(rec.have_tstamp, hwtstamp(pf, SIOCGHWTSTAMP, &ts_pod) == 0);
    snprintf(cmd, sizeof(cmd), "ethtool -x %s", pf);
    char *rss_pod = output_of(cmd);
    bool rss_changed = !streq(rss_pod, rss_before);
    if (!rss_changed)
        fprintf(stderr, "test-ethtool: %s has one RX queue: no table a pod sets differs\n", pf);
    snprintf(cmd, sizeof(cmd), "ethtool -n %s rx-flow-hash udp4", pf);
    char *hash_pod = output_of(cmd);
    assert_string_not_equal(hash_pod, hash_before); /* the pod's change took */

    char what[256];
    int r = rxnfc_restore(pf, ifindex, &rec, what, sizeof(what));
    if (r < 0)
        fprintf(stderr, "rxnfc_restore: %s (%s)\n", strerror(-r), what);
    assert_int_equal(r, 0);
    snprintf(cmd, sizeof(cmd), "ethtool -n %s", pf);
    char *rules_now = output_of(cmd);
    snprintf(cmd, sizeof(cmd), "ethtool -n %s rx-flow-hash udp4", pf);
    char *hash_now = output_of(cmd);
    assert_same_output("n-tuple rules", rules_before, rules_now);
    assert_same_output("udp4 hash fields", hash_before, hash_now);
    snprintf(cmd, sizeof(cmd), "ethtool -x %s", pf);
    char *rss_now = output_of(cmd);
    assert_same_output("RSS table", rss_before, rss_now);
    if (ts) {
        struct hwtstamp_config ts_now;
        assert_int_equal(hwtstamp(pf, SIOCGHWTSTAMP, &ts_now), 0);
        assert_int_equal(ts_now.tx_type, ts_before.tx_type);
        assert_int_equal(ts_now.rx_filter, ts_before.rx_filter);
    }

    /* against a record of no rules, every rule goes (the pod's and the node's) */
    if (rules) {
        must("ethtool -N %s flow-type ether proto 0x88cc action 0 loc 5", pf);
        RxnfcState none = rec;
        none.n_rules = 0;
        none.hash_have = 0;
        assert_int_equal(rxnfc_restore(pf, ifindex, &none, what, sizeof(what)), 0);
        snprintf(cmd, sizeof(cmd), "ethtool -n %s", pf);
        char *rules_empty = output_of(cmd);
        assert_null(strstr(rules_empty, "Filter: 5"));
        assert_null(strstr(rules_empty, "Filter: 2"));
        free(rules_empty);
        must("ethtool -K %s ntuple off", pf);
    }
    (void)sh("ethtool -L %s combined %d >/dev/null 2>&1", pf, atoi(combined));
    free(combined);
    assert_int_equal(setns(self, CLONE_NEWNET), 0);
    free(rules_before);
    free(rules_now);
    free(hash_before);
    free(hash_pod);
    free(hash_now);
    free(rss_before);
    free(rss_pod);
    free(rss_now);
    rxnfc_done(&rec);
}

/*
 * The PF's link settings beyond what igbvf has: its MDI-X control (a copper
 * PHY's) recorded in the ethtool state; the pod forces MDI-X; the restore
 * sets it back through ETHTOOL_MSG_LINKINFO_SET and `ethtool` shows it as
 * before. FEC, MAC merge, PLCA and PSE: igb has none of them (recorded as
 * none), and its module piece holds no power mode policy.
 */
static void test_pf_linkinfo(void **state) {
    _cleanup_(ethtool_closep) EthtoolConn *host = NULL;
    char pf[IF_NAMESIZE], cmd[160];
    EthtoolState rec;
    RgError err = {0};

    if (!qemu_pf_find(pf, sizeof(pf))) {
        fprintf(stderr, "test-ethtool: no SR-IOV PF of QEMU's igb here: the link info part is "
                        "skipped (run it under `bash tests/vm/run.sh --sriov`)\n");
        skip();
    }
    assert_int_equal(ethtool_open(host_netns, &host), 0);
    _cleanup_close_ int self = -EBADF;
    assert_int_equal(netns_open_current(&self), 0);
    assert_int_equal(setns(host_netns, CLONE_NEWNET), 0);
    int ifindex = (int)if_nametoindex(pf);
    assert_int_equal(setns(self, CLONE_NEWNET), 0);
    assert_true(ifindex > 0);
    assert_int_equal(ethtool_state_get(host, ifindex, &rec, &err), 0);
    print_state("igb", &rec);
    assert_int_equal(rec.part[ETHTOOL_LINKINFO].have, ETHTOOL_HAVE);
    /* the module piece: igb answers with no power mode policy (empty) */
    for (unsigned p = ETHTOOL_FEC; p < _ETHTOOL_PIECE_MAX; p++)
        if (p != ETHTOOL_LINKINFO && p != ETHTOOL_MODULE)
            assert_int_not_equal(rec.part[p].have, ETHTOOL_HAVE);

    assert_int_equal(setns(host_netns, CLONE_NEWNET), 0);
    snprintf(cmd, sizeof(cmd), "ethtool %s | grep MDI", pf);
    char *before = output_of(cmd);
    int forced = sh("ethtool -s %s mdix on >/dev/null 2>&1", pf);
    char *pod = output_of(cmd);
    assert_int_equal(setns(self, CLONE_NEWNET), 0);
    if (forced != 0 || streq(before, pod)) {
        fprintf(stderr, "test-ethtool: QEMU's igb takes no MDI-X setting: only the record is "
                        "shown\n");
    } else {
        assert_int_equal(ethtool_state_restore(host, ifindex, &rec, &err), 0);
        assert_int_equal(setns(host_netns, CLONE_NEWNET), 0);
        char *now = output_of(cmd);
        assert_int_equal(setns(self, CLONE_NEWNET), 0);
        assert_same_output("MDI-X", before, now);
        free(now);
    }
    free(before);
    free(pod);
    ethtool_state_done(&rec);
}

static int group_setup(void **state) {
    testns_require_root();
    if (sh("ethtool --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test-ethtool: needs ethtool(8) as a witness (scripts/deps.sh)\n");
        exit(77);
    }
    assert_int_equal(netns_open_current(&host_netns), 0);
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(ethtool_open(-1, &conn), 0);
    return 0;
}

static int group_teardown(void **state) {
    ethtool_close(TAKE_PTR(conn));
    vfs_remove();
    sys_pf[0] = 0;
    if (host_netns >= 0)
        close(TAKE_FD(host_netns));
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_veth_restore, links_del),
        cmocka_unit_test_teardown(test_rss_cannot_restore, links_del),
        cmocka_unit_test_teardown(test_refusal_names_piece, links_del),
        cmocka_unit_test_teardown(test_json_of_a_real_device, links_del),
        cmocka_unit_test_teardown(test_other_namespace, links_del),
        cmocka_unit_test_teardown(test_many_links, links_del),
        cmocka_unit_test_teardown(test_dummy_restore, links_del),
        cmocka_unit_test(test_vf_restore),
        cmocka_unit_test(test_pf_rxnfc),
        cmocka_unit_test(test_pf_linkinfo),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
