/* SPDX-License-Identifier: Apache-2.0 */
/*
 * floor-cni: the eight moves' floor where a pod's CNI runs, for tests/k8s/bench.sh. A CNI
 * plugin chained after the primary one (ptp) on a bench cluster: for a pod named
 * "<podPrefix>u<N>-...", ADD moves N of the node's floor rails (<railPrefix>0..) into the pod,
 * renamed and up, one bare RTM_NEWLINK each, and DEL moves them home: the floor of
 * tests/bench/bench-cni, in the same pod start and the same position in the chain as
 * railgate's moves. Each command appends "ADD|DEL <container id> <microseconds> <N>" to the
 * config's "log". Any other pod passes through: its prevResult is the answer.
 *
 * {"type": "floor-cni", "rails": 8, "railPrefix": "flr", "podPrefix": "floor-", "log": PATH,
 *  "hostAddresses": ["10.251.0.101/24", ...]}
 *
 * After DEL's moves home (timed) each rail is brought up with its hostAddresses entry (not
 * timed), the state railgate's DEL leaves its rails in: so the next ADD moves rails as
 * railgate's are at home, up and addressed, which costs the kernel more than moving bare
 * ones (the address and its routes go with the move, in a FIB that grows with the pods).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rawnl.h"

#define MAX_RAILS 64

static const char *version = "1.0.0";

static int fail(const char *what, int err) {
    json_t *j = json_pack("{s:s, s:i, s:s++}", "cniVersion", version, "code", 999, "msg", what,
                          err ? ": " : "", err ? strerror(-err) : "");

    json_dumpf(j, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(j);
    return 1;
}

static double now_us(void) {
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* K8S_POD_NAME of CNI_ARGS ("K1=V1;K2=V2"), into buf; "" if none. */
static void pod_name(char *buf, size_t n) {
    const char *args = getenv("CNI_ARGS"), *p = args ? strstr(args, "K8S_POD_NAME=") : NULL;
    size_t len = 0;

    if (p) {
        p += strlen("K8S_POD_NAME=");
        len = strcspn(p, ";");
    }
    snprintf(buf, n, "%.*s", (int)len, p ? p : "");
}

/* The number of rails the pod's name asks for: "<prefix>u<N>-..."; 0: not a floor pod. */
static unsigned rails_wanted(const char *name, const char *prefix, unsigned max) {
    size_t k = strlen(prefix);
    char *end;

    if (strncmp(name, prefix, k) || name[k] != 'u')
        return 0;
    unsigned long n = strtoul(name + k + 1, &end, 10);
    return *end == '-' && n >= 1 && n <= max ? (unsigned)n : 0;
}

/*
 * Move rails 0..n-1 from the namespace of from_sk to the one at to_fd, named to_prefix<k>,
 * up when up; ifindexes are looked up in the namespace at from_fd (the moves are timed, not
 * the lookups). All of them must be there (ADD), or those that are are moved (DEL: a
 * runtime repeats it); the number moved.
 */
static int moves(int from_sk, int from_fd, int home_fd, int to_fd, const char *from_prefix,
                 const char *to_prefix, unsigned n, bool up, bool all, double *ret_us) {
    int ifindex[MAX_RAILS];
    char name[IF_NAMESIZE];
    int r = 0, moved = 0;

    if (from_fd != home_fd && setns(from_fd, CLONE_NEWNET) < 0)
        return -errno;
    for (unsigned k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "%s%u", from_prefix, k);
        ifindex[k] = (int)if_nametoindex(name);
        if (ifindex[k] <= 0 && all)
            r = -ENODEV;
    }
    if (from_fd != home_fd && setns(home_fd, CLONE_NEWNET) < 0)
        return -errno;
    if (r < 0)
        return r;
    double t0 = now_us();
    for (unsigned k = 0; r == 0 && k < n; k++) {
        if (ifindex[k] <= 0)
            continue;
        snprintf(name, sizeof(name), "%s%u", to_prefix, k);
        r = rawnl_link(from_sk, ifindex[k], to_fd, name, up);
        moved += r == 0;
    }
    *ret_us = now_us() - t0;
    return r < 0 ? r : moved;
}

/* Rails 0..n-1 (named prefix<k>, here) up, each with addrs[k] ("a.b.c.d/len"; none: no
 * address), as railgate's DEL leaves its rails. */
static int home_as_railgate(const char *prefix, unsigned n, json_t *addrs) {
    char name[IF_NAMESIZE];
    int sk = rawnl_socket(), r = sk < 0 ? sk : 0;

    for (unsigned k = 0; r == 0 && k < n; k++) {
        const char *a = json_string_value(json_array_get(addrs, k));
        uint8_t ip[4];
        unsigned len = 0;
        snprintf(name, sizeof(name), "%s%u", prefix, k);
        int ifindex = (int)if_nametoindex(name);
        if (ifindex <= 0)
            continue; /* not home: nothing of ours to set */
        r = rawnl_link(sk, ifindex, -1, NULL, true);
        if (r == 0 && a &&
            (sscanf(a, "%hhu.%hhu.%hhu.%hhu/%u", &ip[0], &ip[1], &ip[2], &ip[3], &len) != 5 ||
             len > 32))
            r = -EINVAL;
        if (r == 0 && a)
            r = rawnl_addr4(sk, ifindex, ip, len);
    }
    if (sk >= 0)
        close(sk);
    return r;
}

/* A socket in the namespace at fd, made from the namespace at home_fd. */
static int socket_in(int fd, int home_fd) {
    if (setns(fd, CLONE_NEWNET) < 0)
        return -errno;
    int sk = rawnl_socket();
    if (setns(home_fd, CLONE_NEWNET) < 0)
        return -errno;
    return sk;
}

int main(void) {
    const char *cmd = getenv("CNI_COMMAND") ?: "", *netns = getenv("CNI_NETNS") ?: "",
               *cid = getenv("CNI_CONTAINERID") ?: "";
    json_error_t jerr;
    json_t *conf = NULL;
    char name[256];

    if (!strcmp(cmd, "VERSION")) {
        puts("{\"cniVersion\": \"1.0.0\", \"supportedVersions\": [\"0.4.0\", \"1.0.0\", "
             "\"1.1.0\"]}");
        return 0;
    }
    conf = json_loadf(stdin, 0, &jerr);
    if (!conf)
        return fail("config", -EINVAL);
    version = json_string_value(json_object_get(conf, "cniVersion")) ?: version;
    const char *rail_prefix = json_string_value(json_object_get(conf, "railPrefix")) ?: "flr",
               *pod_prefix = json_string_value(json_object_get(conf, "podPrefix")) ?: "floor-",
               *log = json_string_value(json_object_get(conf, "log"));
    json_int_t max = json_integer_value(json_object_get(conf, "rails"));
    pod_name(name, sizeof(name));
    unsigned n = rails_wanted(name, pod_prefix, max > 0 && max <= MAX_RAILS ? (unsigned)max : 0);
    bool add = !strcmp(cmd, "ADD"), del = !strcmp(cmd, "DEL");
    int r = 0;
    double us = 0;

    if (n && (add || del)) {
        int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        int pod = open(netns, O_RDONLY | O_CLOEXEC);
        if (home < 0)
            return fail("the node's namespace", -errno);
        if (pod < 0 && add)
            return fail("the pod's namespace", -errno);
        if (pod >= 0 && add) {
            int sk = rawnl_socket();
            r = sk < 0 ? sk : moves(sk, home, home, pod, rail_prefix, "fl", n, true, true, &us);
        } else if (pod >= 0) { /* DEL: home under the node's names (the move closes them) */
            int sk = socket_in(pod, home);
            r = sk < 0 ? sk : moves(sk, pod, home, home, "fl", rail_prefix, n, false, false, &us);
        } /* DEL with the namespace gone: nothing of ours is left to move */
        if (del && r >= 0) {
            int q = home_as_railgate(rail_prefix, n, json_object_get(conf, "hostAddresses"));
            if (q < 0)
                return fail("bringing the floor rails up and addressed at home", q);
        }
        if (r < 0)
            return fail(add ? "moving the floor rails into the pod" : "moving them home", r);
        /* a DEL that found nothing to move (repeated) is no sample */
        FILE *f = log && r > 0 ? fopen(log, "ae") : NULL;
        if (f) {
            fprintf(f, "%s %s %.0f %u\n", cmd, cid, us, n);
            fclose(f);
        }
    }
    if (add) { /* chained: the previous plugin's result is the answer */
        json_t *prev = json_object_get(conf, "prevResult");
        json_t *out = prev ? json_deep_copy(prev) : json_object();
        json_object_set_new(out, "cniVersion", json_string(version));
        json_dumpf(out, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(out);
    }
    json_decref(conf);
    return 0;
}
