/* SPDX-License-Identifier: Apache-2.0 */
/* CNI benchmark: the kernel's floor, railgate (and an earlier build of it), and Debian's
 * host-device + static, cycle by cycle; --syscalls: one invocation's syscalls; --overlap: do
 * moves overlap; --floor-only: the floor's cycles alone. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cnienv.h"
#include "proc.h"
#include "rawnl.h"
#include "testns.h"

#define MAX_RAILS 8

/* the node's name of rail k: "rail-nic0".."rail-nic7" */
static void rail_nic_name(char name[static IFNAMSIZ], unsigned k) {
    snprintf(name, IFNAMSIZ, "rail-nic%u", k % MAX_RAILS);
}

static CniEnvT env;
/* bench-cni [CYCLES] --before CNI: an earlier railgate CNI binary, measured in
 * the same cycles (it finds what it needs in the same node config and state
 * dir; one before the node agent asks the fake kubelet itself) */
static const char *before_cni;

static void die(const char *what, const CniRun *r) {
    fprintf(stderr, "bench: %s failed: %s\n", what, r ? r->raw : "");
    exit(1);
}

/* Per-cycle samples of one contender, in microseconds. */
typedef struct Samples {
    double *add, *del;
} Samples;

typedef struct Stats {
    double add50, add99, del50, del99;
} Stats;

static void samples_init(Samples *s, unsigned cycles) {
    s->add = calloc(cycles, sizeof(double));
    s->del = calloc(cycles, sizeof(double));
    if (!s->add || !s->del)
        die("calloc", NULL);
}

static Stats samples_stats(Samples *s, unsigned cycles) {
    Stats st = {percentile(s->add, cycles, 50), percentile(s->add, cycles, 99),
                percentile(s->del, cycles, 50), percentile(s->del, cycles, 99)};
    free(s->add);
    free(s->del);
    return st;
}

/*
 * The floor: what the kernel alone costs. One process, one rtnetlink socket
 * per namespace opened once, ifindexes known in advance, one RTM_NEWLINK per
 * NIC each way: ADD moves, renames and brings it up in the pod (a pod's NIC
 * must be up), DEL moves and renames it home (the move closes it, as every
 * DEL's does). No plugin can do less.
 */
typedef struct Floor {
    int host_sk, pod_sk, host_ns, pod_ns;
    int ifindex[MAX_RAILS];
} Floor;

/* Send the request in req and wait for its ack (rawnl.h); die on an error. */
/* One RTM_NEWLINK on ifindex, acked: see rawnl_link_msg(). */
static void floor_link(int sk, int ifindex, int ns_fd, const char *name, bool up) {
    if (rawnl_link(sk, ifindex, ns_fd, name, up) != 0)
        die("floor link", NULL);
}

static void floor_move(int sk, int ifindex, int ns_fd, const char *name) {
    floor_link(sk, ifindex, ns_fd, name, false);
}

/* 10.<net>.<k>.<host>/24 on ifindex */
static void floor_addr(int sk, int ifindex, unsigned net, unsigned k, unsigned host) {
    const uint8_t a[4] = {10, (uint8_t)net, (uint8_t)k, (uint8_t)host};

    if (rawnl_addr4(sk, ifindex, a, 24) != 0)
        die("floor address", NULL);
}

static void floor_open(Floor *f, const char *pod_netns, unsigned rails) {
    char name[IFNAMSIZ];

    f->host_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    f->pod_ns = open(pod_netns, O_RDONLY | O_CLOEXEC);
    f->host_sk = rawnl_socket();
    if (f->host_ns < 0 || f->pod_ns < 0 || f->host_sk < 0 || setns(f->pod_ns, CLONE_NEWNET) < 0)
        die("floor setup", NULL);
    f->pod_sk = rawnl_socket(); /* a socket stays in the namespace it was made in */
    if (f->pod_sk < 0 || setns(f->host_ns, CLONE_NEWNET) < 0)
        die("floor setup", NULL);
    for (unsigned k = 0; k < rails; k++) {
        rail_nic_name(name, k);
        f->ifindex[k] = (int)if_nametoindex(name);
        if (f->ifindex[k] <= 0)
            die("floor ifindex", NULL);
    }
}

static void floor_close(Floor *f) {
    close(f->host_sk);
    close(f->pod_sk);
    close(f->host_ns);
    close(f->pod_ns);
}

static void floor_cycle(Floor *f, unsigned rails, double *ret_add, double *ret_del) {
    char name[IFNAMSIZ];
    double t0 = now_us();

    for (unsigned k = 0; k < rails; k++) {
        snprintf(name, sizeof(name), "rail%u", k);
        floor_link(f->host_sk, f->ifindex[k], f->pod_ns, name, true);
    }
    double t1 = now_us();
    for (unsigned k = rails; k-- > 0;) {
        rail_nic_name(name, k);
        floor_move(f->pod_sk, f->ifindex[k], f->host_ns, name);
    }
    *ret_add = t1 - t0;
    *ret_del = now_us() - t1;
}

/*
 * The same job's floor: what the kernel costs for what railgate asks of it
 * besides the moves, still in one process: the floor's requests, and each
 * NIC gets an address in the pod, and comes home up with its address back. railgate also sets MTU
 * and alias and adds routes and a rule per rail; those cost the kernel little.
 */
static void floor_job_cycle(Floor *f, unsigned rails, double *ret_add, double *ret_del) {
    char name[IFNAMSIZ];
    double t0 = now_us();

    for (unsigned k = 0; k < rails; k++) {
        snprintf(name, sizeof(name), "rail%u", k);
        floor_link(f->host_sk, f->ifindex[k], f->pod_ns, name, true);
        floor_addr(f->pod_sk, f->ifindex[k], 50, k, 2);
    }
    double t1 = now_us();
    for (unsigned k = rails; k-- > 0;) {
        rail_nic_name(name, k);
        floor_move(f->pod_sk, f->ifindex[k], f->host_ns, name);
        floor_link(f->host_sk, f->ifindex[k], -1, NULL, true);
        floor_addr(f->host_sk, f->ifindex[k], 99, k, 1);
    }
    *ret_add = t1 - t0;
    *ret_del = now_us() - t1;
}

static void run_ok(const char *plugin, const char *cmd, const char *container, const char *netns,
                   const char *ifname, const char *conf) {
    CniRun r;

    cnienv_run(&env, plugin, cmd, container, netns, ifname, "team-a", "bench", conf, NULL, &r);
    if (r.status != 0)
        die(cmd, &r);
    cni_run_done(&r);
}

/* railgate (plugin: the bin dir's name of this build or the earlier one):
 * one invocation moves every unit of the pod. */
static void railgate_cycle(const char *plugin, const char *netns, const char *conf, double *ret_add,
                           double *ret_del) {
    double t0 = now_us();

    run_ok(plugin, "ADD", "bench", netns, "eth0", conf);
    double t1 = now_us();
    run_ok(plugin, "DEL", "bench", netns, "eth0", conf);
    *ret_add = t1 - t0;
    *ret_del = now_us() - t1;
}

static char *host_device_conf(unsigned k) {
    char *s = NULL;

    if (asprintf(&s,
                 "{\"cniVersion\": \"1.0.0\", \"name\": \"hd%u\", \"type\": \"host-device\","
                 " \"device\": \"rail-nic%u\", \"ipam\": {\"type\": \"static\", \"addresses\":"
                 " [{\"address\": \"10.%u.0.2/24\", \"gateway\": \"10.%u.0.1\"}]}}",
                 k, k, 100 + k, 100 + k) < 0)
        die("asprintf", NULL);
    return s;
}

/* host-device: one invocation per rail, as a runtime (or Multus) must. */
static void host_device_cycle(const char *netns, unsigned rails, char *const *confs,
                              double *ret_add, double *ret_del) {
    char ifn[IFNAMSIZ], name[IFNAMSIZ];
    double t0 = now_us();

    for (unsigned k = 0; k < rails; k++) {
        snprintf(ifn, sizeof(ifn), "rail%u", k);
        run_ok("host-device", "ADD", "bench", netns, ifn, confs[k]);
    }
    double t1 = now_us();
    for (unsigned k = rails; k-- > 0;) {
        snprintf(ifn, sizeof(ifn), "rail%u", k);
        run_ok("host-device", "DEL", "bench", netns, ifn, confs[k]);
    }
    *ret_add = t1 - t0;
    *ret_del = now_us() - t1;
    /* host-device leaves a returned NIC down: bring it up as railgate would (not timed) */
    for (unsigned k = 0; k < rails; k++) {
        rail_nic_name(name, k);
        testns_link_set_up(name, true);
    }
}

/* One row pair: the contenders measured in the same cycles. */
typedef struct Result {
    Stats floor, job, rg, before, hd;
} Result;

static void bench(const char *netns, unsigned rails, unsigned cycles, Result *res) {
    char *units[MAX_RAILS], *confs[MAX_RAILS], *conf = cnienv_conf("1.1.0", NULL);
    Samples fl, jb, rg, bf, hd;
    Floor f;

    for (unsigned k = 0; k < rails; k++) {
        if (asprintf(&units[k], "rail%u", k) < 0)
            die("asprintf", NULL);
        confs[k] = host_device_conf(k);
    }
    fk_pod_set(env.k, "team-a", "bench", "railgate.io/a", units, rails);
    floor_open(&f, netns, rails);
    samples_init(&fl, cycles);
    samples_init(&jb, cycles);
    samples_init(&rg, cycles);
    samples_init(&bf, cycles);
    samples_init(&hd, cycles);
    /* interleaved, so that a noisy neighbour moves all the columns together,
     * and in an order shuffled each cycle (the same shuffles every run): what
     * the kernel does after a column's DEL (a NIC up at home starts IPv6 DAD
     * and link watch work, which take RTNL up to a second later) falls on
     * whichever column comes next, and a fixed order (or one turned by a
     * step, which keeps each column's neighbour) gives it to the same one */
    unsigned n_cols = before_cni ? 5 : 4, order[5] = {0, 1, 2, 3, 4};
    uint32_t seed = 2654435761u;
    for (unsigned i = 0; i < cycles; i++) {
        for (unsigned c = n_cols - 1; c > 0; c--) {
            seed = seed * 1664525u + 1013904223u;
            unsigned o = (seed >> 16) % (c + 1), t = order[c];
            order[c] = order[o];
            order[o] = t;
        }
        for (unsigned c = 0; c < n_cols; c++)
            switch (order[c]) {
            case 0:
                floor_cycle(&f, rails, &fl.add[i], &fl.del[i]);
                break;
            case 1:
                floor_job_cycle(&f, rails, &jb.add[i], &jb.del[i]);
                break;
            case 2:
                railgate_cycle("railgate", netns, conf, &rg.add[i], &rg.del[i]);
                break;
            case 3:
                host_device_cycle(netns, rails, confs, &hd.add[i], &hd.del[i]);
                break;
            default:
                railgate_cycle("railgate-before", netns, conf, &bf.add[i], &bf.del[i]);
                break;
            }
    }
    res->floor = samples_stats(&fl, cycles);
    res->job = samples_stats(&jb, cycles);
    res->rg = samples_stats(&rg, cycles);
    res->before = samples_stats(&bf, cycles);
    res->hd = samples_stats(&hd, cycles);
    floor_close(&f);
    for (unsigned k = 0; k < rails; k++) {
        free(units[k]);
        free(confs[k]);
    }
    free(conf);
}

typedef struct Column {
    double p50, p99;
} Column;

typedef struct Row {
    Column fl, jb, rg, bf, hd;
} Row;

static void row(const char *what, Row c) {
    printf("| %-11s | %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f |", what, c.fl.p50 / 1000,
           c.fl.p99 / 1000, c.jb.p50 / 1000, c.jb.p99 / 1000, c.rg.p50 / 1000, c.rg.p99 / 1000);
    if (before_cni)
        printf(" %7.2f %7.2f |", c.bf.p50 / 1000, c.bf.p99 / 1000);
    printf(" %7.2f %7.2f | %5.2fx %5.2fx | %5.2fx %5.2fx |", c.hd.p50 / 1000, c.hd.p99 / 1000,
           c.rg.p50 / c.fl.p50, c.rg.p99 / c.fl.p99, c.rg.p50 / c.jb.p50, c.rg.p99 / c.jb.p99);
    if (before_cni)
        printf(" %5.2fx %5.2fx |", c.bf.p50 / c.fl.p50, c.bf.p99 / c.fl.p99);
    printf(" %5.2fx %5.2fx |\n", c.hd.p50 / c.rg.p50, c.hd.p99 / c.rg.p99);
}

static void rows(unsigned rails, const Result *r) {
    char what[32];

    snprintf(what, sizeof(what), "%u rail%s ADD", rails, rails > 1 ? "s" : "");
    row(what, (Row){{r->floor.add50, r->floor.add99},
                    {r->job.add50, r->job.add99},
                    {r->rg.add50, r->rg.add99},
                    {r->before.add50, r->before.add99},
                    {r->hd.add50, r->hd.add99}});
    snprintf(what, sizeof(what), "%u rail%s DEL", rails, rails > 1 ? "s" : "");
    row(what, (Row){{r->floor.del50, r->floor.del99},
                    {r->job.del50, r->job.del99},
                    {r->rg.del50, r->rg.del99},
                    {r->before.del50, r->before.del99},
                    {r->hd.del50, r->hd.del99}});
}

/* exec, loading and VERSION of a CNI binary (path), cycles times, interleaved
 * with the earlier build's when there is one: p50 and p99 in microseconds. */
static void exec_times(unsigned cycles) {
    const char *paths[2] = {strdup(proc_bin("cni/railgate")), before_cni};
    char *envp[] = {"CNI_COMMAND=VERSION", NULL};
    double *v[2] = {calloc(cycles, sizeof(double)), calloc(cycles, sizeof(double))};
    CniRun r;

    if (!paths[0] || !v[0] || !v[1])
        die("calloc", NULL);
    for (unsigned i = 0; i < cycles; i++)
        for (unsigned b = 0; b < 2 && paths[b]; b++) {
            double t0 = now_us();
            if (cni_exec(paths[b], envp, "{\"cniVersion\": \"1.0.0\"}", NULL, NULL, &r) < 0 ||
                r.status != 0)
                die("VERSION", &r);
            v[b][i] = now_us() - t0;
            cni_run_done(&r);
        }
    printf("\nexec + load + VERSION of the CNI, ms, %u runs each (fork, exec, dynamic loading, "
           "constructors, exit)\n\n| %-8s | %7s | %7s |\n|----------|---------|---------|\n",
           cycles, "", "p50", "p99");
    for (unsigned b = 0; b < 2 && paths[b]; b++)
        printf("| %-8s | %7.3f | %7.3f |\n", b ? "before" : "railgate",
               percentile(v[b], cycles, 50) / 1000, percentile(v[b], cycles, 99) / 1000);
    free(v[0]);
    free(v[1]);
    free((char *)paths[0]);
}

/*
 * What one invocation asks of the kernel: `strace -f -c` of one ADD and one
 * DEL of the CNI (cni, or this build's), for 1 and 8 rails. Counts, not
 * times: the costs the benchmark's ratios are made of (sockets per command,
 * threads, netlink round trips, fsyncs, record renames, state dirs, log
 * writes, libraries mapped).
 */
typedef struct SyscallRow {
    const char *what;
    const char *const names[5];
} SyscallRow;

static const SyscallRow SYSCALL_ROWS[] = {
    {"all syscalls", {"total"}},
    {"socket", {"socket"}},
    {"clone (threads)", {"clone", "clone3"}},
    {"setns", {"setns"}},
    {"netlink/RPC sends", {"sendto", "sendmsg"}},
    {"receives", {"recvfrom", "recvmsg"}},
    {"fsync", {"fsync", "fdatasync"}},
    {"rename/link", {"rename", "renameat", "renameat2", "link", "linkat"}},
    {"mkdir", {"mkdir", "mkdirat"}},
    {"write", {"write", "writev"}},
    {"openat", {"openat", "open"}},
    {"mmap", {"mmap"}},
};

/* calls of syscall name in an `strace -c` summary (the "total" line for "total") */
static long strace_calls(const char *file, const char *name) {
    char line[256];
    long total = 0;
    FILE *f = fopen(file, "re");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        char sys[64] = "";
        long calls = 0;
        double pct, secs;
        long usecs;
        /* "% time seconds usecs/call calls errors syscall"; errors may be empty */
        int n = sscanf(line, "%lf %lf %ld %ld %*s %63s", &pct, &secs, &usecs, &calls, sys);
        if (n < 4)
            continue;
        if (n == 4 || !sys[0] || strspn(sys, "0123456789") == strlen(sys)) {
            /* no errors column: the 5th field was the name */
            char a[64] = "";
            if (sscanf(line, "%*f %*f %*d %*d %63s", a) == 1)
                snprintf(sys, sizeof(sys), "%s", a);
        }
        if (streq(sys, name))
            total += calls;
    }
    fclose(f);
    return total;
}

static int trace_wrapper(const char *cni, const char *out) {
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/railgate", env.bindir);
    if (unlink(path) < 0)
        return -errno;
    f = fopen(path, "we");
    if (!f)
        return -errno;
    /* BENCH_STRACE: other strace options than -c, to see the calls themselves */
    const char *opts = getenv("BENCH_STRACE") ?: "-c";
    fprintf(f, "#!/bin/sh\nexec strace -f -qq %s -o '%s' '%s' \"$@\"\n", opts, out, cni);
    fclose(f);
    return chmod(path, 0755) < 0 ? -errno : 0;
}

/* sendto/sendmsg calls on a netlink socket of proto ("ROUTE", "GENERIC") in
 * an `strace -yy -e trace=sendto,sendmsg` log */
static long netlink_sends(const char *file, const char *proto) {
    char line[512], sock[64];
    long n = 0;
    FILE *f = fopen(file, "re");

    if (!f)
        return -1;
    snprintf(sock, sizeof(sock), "<NETLINK:[%s:", proto);
    /* a long line is read in pieces: only the one with the call's start
     * counts. strace names a socket's protocol from its own namespace: one
     * made in the pod's shows as "<NETLINK:[inode]>", and the CNI makes only
     * rtnetlink sockets there */
    while (fgets(line, sizeof(line), f)) {
        const char *any = strstr(line, "<NETLINK:[");
        bool pod = any && any[10] >= '0' && any[10] <= '9';

        if ((strstr(line, " sendto(") || strstr(line, " sendmsg(")) &&
            (strstr(line, sock) || (streq(proto, "ROUTE") && pod)))
            n++;
    }
    fclose(f);
    return n;
}

/* what = 0..3: rtnl requests, rtnl sendmsg, genl requests, genl sendmsg
 * from a RAILGATE_NL_STATS file (its last line); -1: the binary wrote none */
static long nl_stat(const char *file, unsigned what) {
    char line[256], last[256] = "";
    long v[4];
    FILE *f = fopen(file, "re");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        snprintf(last, sizeof(last), "%s", line);
    fclose(f);
    if (sscanf(last, "rtnl_msgs %ld rtnl_sendmsg %ld genl_msgs %ld genl_sendmsg %ld", &v[0], &v[1],
               &v[2], &v[3]) != 4)
        return -1;
    return v[what];
}

static void syscalls(const char *netns, const char *cni) {
    char *units[MAX_RAILS], *conf = cnienv_conf("1.1.0", NULL), out[2][2][200];
    static const unsigned sizes[2] = {1, 8};
    static const char *const cmds[2] = {"ADD", "DEL"};

    for (unsigned k = 0; k < MAX_RAILS; k++)
        if (asprintf(&units[k], "rail%u", k) < 0)
            die("asprintf", NULL);
    for (unsigned s = 0; s < 2; s++) {
        fk_pod_set(env.k, "team-a", "bench", "railgate.io/a", units, sizes[s]);
        for (unsigned c = 0; c < 2; c++) {
            snprintf(out[s][c], sizeof(out[s][c]), "%s/strace-%u-%s", env.tmp, sizes[s], cmds[c]);
            if (trace_wrapper(cni, out[s][c]) < 0)
                die("strace wrapper", NULL);
            run_ok("railgate", cmds[c], "bench", netns, "eth0", conf);
        }
    }
    printf("\nSyscalls of one invocation (strace -f -c), %s\n\n", cni);
    printf("| %-17s | %6s | %6s | %6s | %6s |\n", "", "1 ADD", "1 DEL", "8 ADD", "8 DEL");
    printf("|-------------------|--------|--------|--------|--------|\n");
    for (size_t i = 0; i < ELEMENTSOF(SYSCALL_ROWS); i++) {
        const SyscallRow *r = &SYSCALL_ROWS[i];
        printf("| %-17s |", r->what);
        for (unsigned s = 0; s < 2; s++)
            for (unsigned c = 0; c < 2; c++) {
                long n = 0;
                for (size_t j = 0; j < ELEMENTSOF(r->names) && r->names[j]; j++)
                    n += strace_calls(out[s][c], r->names[j]);
                printf(" %6ld |", n);
            }
        printf("\n");
    }
    /* netlink, counted per protocol: the requests from the CNI's own
     * counters (RAILGATE_NL_STATS; an earlier binary writes none: "-"),
     * the sendmsg calls from strace -yy, which names each socket's protocol */
    char nl_out[2][2][200], nl_stats[2][2][200];
    setenv("BENCH_STRACE", "-yy -e trace=sendto,sendmsg", 1);
    for (unsigned s = 0; s < 2; s++) {
        fk_pod_set(env.k, "team-a", "bench", "railgate.io/a", units, sizes[s]);
        for (unsigned c = 0; c < 2; c++) {
            snprintf(nl_out[s][c], sizeof(nl_out[s][c]), "%s/strace-yy-%u-%s", env.tmp, sizes[s],
                     cmds[c]);
            snprintf(nl_stats[s][c], sizeof(nl_stats[s][c]), "%s/nlstats-%u-%s", env.tmp, sizes[s],
                     cmds[c]);
            setenv("RAILGATE_NL_STATS", nl_stats[s][c], 1);
            if (trace_wrapper(cni, nl_out[s][c]) < 0)
                die("strace wrapper", NULL);
            run_ok("railgate", cmds[c], "bench", netns, "eth0", conf);
        }
    }
    unsetenv("BENCH_STRACE");
    unsetenv("RAILGATE_NL_STATS");
    printf("\nNetlink of one invocation: requests and sendmsg calls per protocol "
           "(RAILGATE_NL_STATS; a binary without it: \"-\", sendmsg from strace -yy), %s\n\n",
           cni);
    printf("| %-17s | %6s | %6s | %6s | %6s |\n", "", "1 ADD", "1 DEL", "8 ADD", "8 DEL");
    printf("|-------------------|--------|--------|--------|--------|\n");
    static const char *const nl_rows[4] = {"rtnl requests", "rtnl sendmsg", "genl requests",
                                           "genl sendmsg"};
    for (unsigned i = 0; i < 4; i++) {
        printf("| %-17s |", nl_rows[i]);
        for (unsigned s = 0; s < 2; s++)
            for (unsigned c = 0; c < 2; c++) {
                /* sendmsg: the CNI's own count where it keeps one */
                long n = nl_stat(nl_stats[s][c], i);
                if (n < 0 && i % 2)
                    n = netlink_sends(nl_out[s][c], i < 2 ? "ROUTE" : "GENERIC");
                if (n < 0)
                    printf(" %6s |", "-");
                else
                    printf(" %6ld |", n);
            }
        printf("\n");
    }
    for (unsigned k = 0; k < MAX_RAILS; k++)
        free(units[k]);
    free(conf);
}

/*
 * Rails of their own for --floor-only and --overlap: veth pairs
 * rail-nic<k>/rail-peer<k>, up, in a private namespace the kernel removes
 * with this process, and a pod namespace (netns: its path) removed at exit.
 */
static void private_rails(unsigned rails, char *netns, size_t n) {
    char nic[IFNAMSIZ], peer[IFNAMSIZ];

    if (testns_enter_private() < 0)
        die("private namespace", NULL);
    for (unsigned k = 0; k < rails; k++) {
        rail_nic_name(nic, k);
        snprintf(peer, sizeof(peer), "rail-peer%u", k % MAX_RAILS);
        if (testns_veth_add(nic, peer) < 0 || testns_link_set_up(peer, true) < 0 ||
            testns_link_set_up(nic, true) < 0)
            die("veth rail", NULL);
    }
    if (testns_named_new("rgfloor", netns, n) < 0)
        die("pod namespace", NULL);
}

/* bench-cni --floor-only CYCLES RAILS: the floor's cycles alone, one line
 * each, "floor ADD_US DEL_US" (for tests/k8s/bench.sh) */
static int floor_only(unsigned cycles, unsigned rails) {
    char netns[128];
    Floor f;

    if (rails < 1 || rails > MAX_RAILS || cycles < 1) {
        fprintf(stderr, "bench: --floor-only CYCLES RAILS (1-%u rails)\n", MAX_RAILS);
        return 2;
    }
    testns_require_root();
    private_rails(rails, netns, sizeof(netns));
    floor_open(&f, netns, rails);
    for (unsigned i = 0; i < cycles; i++) {
        double add, del;
        floor_cycle(&f, rails, &add, &del);
        printf("floor %.0f %.0f\n", add, del);
        fflush(stdout);
    }
    floor_close(&f);
    return 0;
}

/*
 * --overlap: can moves run side by side? 8 NICs moved (up, renamed) into
 * the pod and back home, three ways, cycle by cycle: serial (one request at
 * a time, each acked before the next), batch (the 8 requests in one
 * sendmsg, then the 8 acks), threads (8 threads, each with its own socket
 * per namespace opened beforehand, released together by a barrier).
 */
#define OVERLAP_NICS MAX_RAILS

typedef struct Mover {
    pthread_t thread;
    int sk[2]; /* [0] in the host, [1] in the pod */
    int ifindex;
    const Floor *f;
    unsigned k;
} Mover;

static pthread_barrier_t overlap_start, overlap_end;
static int overlap_dir = -1; /* 0: there, 1: back, -1: stop; set before overlap_start */

static void overlap_move(const Floor *f, int sk, unsigned k, int dir) {
    char name[IFNAMSIZ];

    if (dir == 0)
        snprintf(name, sizeof(name), "rail%u", k);
    else
        rail_nic_name(name, k);
    floor_link(sk, f->ifindex[k], dir == 0 ? f->pod_ns : f->host_ns, name, dir == 0);
}

static void *mover_main(void *arg) {
    Mover *m = arg;

    for (;;) {
        pthread_barrier_wait(&overlap_start);
        int dir = overlap_dir;
        if (dir < 0)
            return NULL;
        overlap_move(m->f, m->sk[dir], m->k, dir);
        pthread_barrier_wait(&overlap_end);
    }
}

/* where the NICs are: 0 home, 1 in the pod */
static int overlap_at;

/* every NIC to at (0: home, 1: the pod), one request at a time, untimed */
static void overlap_place(const Floor *f, int at) {
    for (unsigned k = 0; overlap_at != at && k < OVERLAP_NICS; k++)
        overlap_move(f, at == 1 ? f->host_sk : f->pod_sk, k, at == 1 ? 0 : 1);
    overlap_at = at;
}

/* the 8 moves of dir in one sendmsg, then their acks */
static void overlap_batch(const Floor *f, int dir) {
    static union {
        struct nlmsghdr h;
        char buf[OVERLAP_NICS * 256];
    } req;
    char ack[8192], name[IFNAMSIZ];
    size_t len = 0;
    unsigned acked = 0;

    for (unsigned k = 0; k < OVERLAP_NICS; k++) {
        struct nlmsghdr *h = (struct nlmsghdr *)(req.buf + len);
        if (dir == 0)
            snprintf(name, sizeof(name), "rail%u", k);
        else
            rail_nic_name(name, k);
        rawnl_link_msg(h, f->ifindex[k], dir == 0 ? f->pod_ns : f->host_ns, name, dir == 0, k + 1);
        len += NLMSG_ALIGN(h->nlmsg_len);
    }
    if (send(dir == 0 ? f->host_sk : f->pod_sk, req.buf, len, 0) != (ssize_t)len)
        die("batch send", NULL);
    while (acked < OVERLAP_NICS) {
        ssize_t n = recv(dir == 0 ? f->host_sk : f->pod_sk, ack, sizeof(ack), 0);
        if (n < 0)
            die("batch recv", NULL);
        for (struct nlmsghdr *h = (struct nlmsghdr *)ack; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type != NLMSG_ERROR || ((struct nlmsgerr *)NLMSG_DATA(h))->error != 0)
                die("batch move", NULL);
            acked++;
        }
    }
}

static int overlap(unsigned cycles) {
    static const char *const modes[3] = {"serial", "batch", "threads"};
    char netns[128];
    Mover m[OVERLAP_NICS];
    double *v[3][2];
    Floor f;

    testns_require_root();
    private_rails(OVERLAP_NICS, netns, sizeof(netns));
    floor_open(&f, netns, OVERLAP_NICS);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned d = 0; d < 2; d++)
            if (!(v[i][d] = calloc(cycles, sizeof(double))))
                die("calloc", NULL);
    if (pthread_barrier_init(&overlap_start, NULL, OVERLAP_NICS + 1) ||
        pthread_barrier_init(&overlap_end, NULL, OVERLAP_NICS + 1))
        die("barrier", NULL);
    for (unsigned k = 0; k < OVERLAP_NICS; k++) {
        m[k] = (Mover){.sk = {rawnl_socket(), -1}, .f = &f, .k = k};
        if (m[k].sk[0] < 0 || setns(f.pod_ns, CLONE_NEWNET) < 0 ||
            (m[k].sk[1] = rawnl_socket()) < 0 || setns(f.host_ns, CLONE_NEWNET) < 0)
            die("overlap sockets", NULL);
        if (pthread_create(&m[k].thread, NULL, mover_main, &m[k]))
            die("pthread_create", NULL);
    }
    /* interleaved, so that a noisy neighbour moves all the columns together */
    for (unsigned i = 0; i < cycles; i++)
        for (int d = 0; d < 2; d++) {
            overlap_place(&f, d);
            double t0 = now_us();
            for (unsigned k = 0; k < OVERLAP_NICS; k++)
                overlap_move(&f, d == 0 ? f.host_sk : f.pod_sk, k, d);
            v[0][d][i] = now_us() - t0;
            overlap_at = !d;
            overlap_place(&f, d);
            t0 = now_us();
            overlap_batch(&f, d);
            v[1][d][i] = now_us() - t0;
            overlap_at = !d;
            overlap_place(&f, d);
            overlap_dir = d;
            t0 = now_us();
            pthread_barrier_wait(&overlap_start);
            pthread_barrier_wait(&overlap_end);
            v[2][d][i] = now_us() - t0;
            overlap_at = !d;
        }
    overlap_dir = -1;
    pthread_barrier_wait(&overlap_start);
    for (unsigned k = 0; k < OVERLAP_NICS; k++) {
        pthread_join(m[k].thread, NULL);
        close(m[k].sk[0]);
        close(m[k].sk[1]);
    }
    printf("\n%u NICs moved between namespaces (up and renamed in the pod, renamed home), ms, "
           "%u cycles, the modes interleaved: serial (one request at a time), batch (one "
           "sendmsg), threads (one socket and thread per NIC, released by a barrier)\n\n",
           OVERLAP_NICS, cycles);
    printf("| %-8s | %15s | %15s |\n|----------|-----------------|-----------------|\n", "",
           "there p50 p99", "back p50 p99");
    for (unsigned i = 0; i < 3; i++) {
        printf("| %-8s |", modes[i]);
        for (unsigned d = 0; d < 2; d++)
            printf(" %7.2f %7.2f |", percentile(v[i][d], cycles, 50) / 1000,
                   percentile(v[i][d], cycles, 99) / 1000);
        printf("\n");
        free(v[i][0]);
        free(v[i][1]);
    }
    floor_close(&f);
    return 0;
}

static void link_before(void) {
    char path[256], abs[PATH_MAX];

    snprintf(path, sizeof(path), "%s/railgate-before", env.bindir);
    if (!realpath(before_cni, abs) || symlink(abs, path) < 0)
        die("--before: no such CNI binary", NULL);
}

int main(int argc, char **argv) {
    unsigned cycles = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    const char *trace_cni = NULL;
    char netns[128], errlog[160];
    Result one, eight;

    /* bench-cni --floor-only CYCLES RAILS, bench-cni --overlap [CYCLES] */
    if (argc > 1 && streq(argv[1], "--floor-only"))
        return floor_only(argc > 2 ? (unsigned)atoi(argv[2]) : 0,
                          argc > 3 ? (unsigned)atoi(argv[3]) : 0);
    if (argc > 1 && streq(argv[1], "--overlap"))
        return overlap(argc > 2 && atoi(argv[2]) > 0 ? (unsigned)atoi(argv[2]) : 200);
    for (int i = 1; i + 1 < argc; i++)
        if (streq(argv[i], "--before"))
            before_cni = argv[i + 1];
    if (cycles == 0 && argc > 1 && streq(argv[1], "--before"))
        cycles = 200;

    /* bench-cni --syscalls [CNI binary]: counts instead of times */
    if (argc > 1 && streq(argv[1], "--syscalls")) {
        trace_cni =
            strdup(argc > 2 ? argv[2] : proc_bin("cni/railgate")); /* proc_bin: one buffer */
        cycles = 0;
    }
    if (trace_cni && access("/usr/bin/strace", X_OK) < 0) {
        fprintf(stderr, "bench: --syscalls needs strace (apt-get install strace)\n");
        return 1;
    }
    if (cycles == 0 && !trace_cni)
        cycles = 1;
    testns_require_root();
    if (testns_enter_private() < 0 || cnienv_setup(&env, CNIENV_RAILS) < 0)
        die("setup", NULL);
    /* the plugins' stderr (railgate logs there too) stays out of the table */
    snprintf(errlog, sizeof(errlog), "%s/plugins.stderr", env.tmp);
    env.plugin_stderr = errlog;
    if (cnienv_pod_netns("rgbench", netns, sizeof(netns)) < 0)
        die("pod netns", NULL);
    if (trace_cni) {
        char abs[PATH_MAX];
        syscalls(netns, realpath(trace_cni, abs) ? abs : trace_cni);
        cnienv_teardown(&env);
        return 0;
    }
    if (before_cni)
        link_before();
    bench(netns, 1, cycles, &one);
    bench(netns, 8, cycles, &eight);
    cnienv_teardown(&env);

    printf("\nCNI ADD/DEL latency, ms, %u cycles, the columns interleaved cycle by cycle\n",
           cycles);
    printf("floor: one bare RTM_NEWLINK per NIC each way in one process (the kernel's cost):\n"
           "ADD moves, renames and brings it up in the pod, DEL moves and renames it home (the\n"
           "move closes it); job: the same with each NIC addressed in the pod and up and\n"
           "addressed again at home, one process (the kernel's cost of what railgate asks of\n"
           "it); rg: railgate, one invocation per pod,\n"
           "asking the node agent;%s hd: host-device + static, one invocation per rail\n\n",
           before_cni ? " before: the earlier railgate build given with --before;" : "");
    printf("| %-11s | %15s | %15s | %15s |", "", "floor p50 p99", "job p50 p99", "rg p50 p99");
    if (before_cni)
        printf(" %15s |", "before p50 p99");
    printf(" %15s | %13s | %13s |", "hd p50 p99", "rg/floor", "rg/job");
    if (before_cni)
        printf(" %13s |", "before/floor");
    printf(" %13s |\n|-------------|-----------------|-----------------|-----------------|",
           "hd/rg");
    if (before_cni)
        printf("-----------------|");
    printf("-----------------|---------------|---------------|");
    if (before_cni)
        printf("---------------|");
    printf("---------------|\n");
    rows(1, &one);
    rows(8, &eight);
    exec_times(cycles * 5);
    return 0;
}
