/* SPDX-License-Identifier: Apache-2.0 */
/* What the question "which units does this pod hold" costs: gRPC core's start and shut-down
 * (the CNI before the node agent), the agent's warm channel, the CNI's round trip to the agent. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agentclient.h"
#include "fakekubelet.h"
#include "podresources.h"
#include "proc.h"
#include "state.h"
#include "strv.h"
#include "testns.h"

#define PHASES 5

static const char *const phase_names[PHASES] = {
    "lookup, cold (gRPC start, call, shut-down in line)",
    "  of which gRPC start (first grpc_init, its threads)",
    "  of which gRPC shut-down (grpc_shutdown, joins them)",
    "lookup, warm (the node agent's kept channel)",
    "the CNI's question to the node agent (socket + warm)",
};

static char *const resources[] = {"railgate.io/a", NULL};

static void lookup(PodResources *p) {
    RgError err = {0};
    char **ids = NULL, *resource = NULL;

    if (podresources_pod_units(p, 5000, "team-a", "bench", &ids, &resource, &err) < 0 ||
        strv_length(ids) != 2) {
        fprintf(stderr, "bench: PodResources lookup failed: %s\n", err.msg);
        exit(1);
    }
    strv_free(ids);
    free(resource);
}

/* Lookup timings, in a fresh child of a process where gRPC has never run,
 * as a CNI process was before the node agent: static state of an earlier
 * cycle cannot help it. */
typedef void (*Cycle)(const char *sock, double *t);

static void in_child(Cycle fn, const char *sock, double *ret, size_t n) {
    int p[2], status;
    double t[4] = {0};
    size_t len = n * sizeof(double);

    if (n > 4 || pipe(p) < 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        fn(sock, t);
        _exit(write(p[1], t, len) == (ssize_t)len ? 0 : 1);
    }
    close(p[1]);
    if (pid < 0 || read(p[0], t, len) != (ssize_t)len || waitpid(pid, &status, 0) < 0 ||
        status != 0)
        exit(1);
    close(p[0]);
    memcpy(ret, t, len);
}

/* gRPC start, call, shut-down in line: t[0] all, t[1] start, t[2] shut-down. */
static void cold_cycle(const char *sock, double *t) {
    PodResources *p = NULL;
    double t0 = now_us();

    if (podresources_new(sock, resources, &p) < 0)
        _exit(1);
    double t1 = now_us();
    lookup(p);
    double t2 = now_us();
    podresources_free(p);
    double t3 = now_us();
    t[0] = t3 - t0;
    t[1] = t1 - t0;
    t[2] = t3 - t2;
}

/* A node agent in this process, asking the PodResources socket podres, its
 * state in dir: it and its socket path. */
static Agent *agent_up(const char *dir, const char *podres, Holdings **ret_h, NodeConfig **ret_c,
                       char *sock, size_t n) {
    char *text = NULL;
    Agent *a = NULL;
    RgError err = {0};

    if (asprintf(&text,
                 "{\"kubeletDir\": \"%s\", \"stateDir\": \"%s/state\", \"rails\": "
                 "[{\"index\": 0, \"nic\": {\"name\": \"rail-nic0\"}}], \"tenants\": "
                 "[{\"name\": \"a\", \"namespaces\": [\"team-a\"], \"rails\": [0], "
                 "\"vrf\": {\"table\": 100}}]}",
                 dir, dir) < 0 ||
        config_parse(text, "bench.json", ret_c, &err) < 0 ||
        state_dir_ensure((*ret_c)->state_dir) < 0 || holdings_new(*ret_c, podres, ret_h) < 0 ||
        agent_start(*ret_c, *ret_h, &a) < 0) {
        fprintf(stderr, "bench: node agent: %s\n", err.msg);
        exit(1);
    }
    free(text);
    snprintf(sock, n, "%s", agent_socket(a));
    return a;
}

static void measure(const char *dir, const char *sock, unsigned cycles, double (*v)[PHASES]) {
    PodResources *warm = NULL;
    Holdings *h = NULL;
    NodeConfig *c = NULL;
    char agent_sock[256];

    for (unsigned i = 0; i < cycles; i++)
        in_child(cold_cycle, sock, v[i], 3);
    if (podresources_new(sock, resources, &warm) < 0)
        exit(1);
    Agent *a = agent_up(dir, sock, &h, &c, agent_sock, sizeof(agent_sock));
    for (unsigned i = 0; i < cycles; i++) { /* interleaved: load moves both alike */
        double t0 = now_us();
        lookup(warm);
        double t1 = now_us();
        char **ids = NULL, *resource = NULL;
        RgError err = {0};
        if (agentclient_pod_units(agent_sock, 5000, "team-a", "bench", NULL, &ids, &resource,
                                  &err) < 0 ||
            strv_length(ids) != 2) {
            fprintf(stderr, "bench: the node agent's answer: %s\n", err.msg);
            exit(1);
        }
        v[i][3] = t1 - t0;
        v[i][4] = now_us() - t1;
        strv_free(ids);
        free(resource);
    }
    agent_stop(a);
    holdings_free(h);
    config_free(c);
    podresources_free(warm);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
    return remove(path) < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
    unsigned cycles = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    char dir[] = "/tmp/rgbench-pr-XXXXXX", sock[256], *ids[] = {"rail0", "rail1"};
    double(*v)[PHASES], col[cycles ? cycles : 1];
    int go[2], res[2], status;
    FakeKubelet *k = NULL;

    testns_require_root(); /* the node agent answers root only */
    if (cycles == 0 || !mkdtemp(dir) || pipe(go) < 0 || pipe(res) < 0)
        return 1;
    v = calloc(cycles, sizeof(*v));
    snprintf(sock, sizeof(sock), "%s/pod-resources/kubelet.sock", dir);
    /* fork before the fake kubelet starts gRPC in this process */
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        measure(dir, sock, cycles, v);
        size_t len = cycles * sizeof(*v);
        _exit(write(res[1], v, len) == (ssize_t)len ? 0 : 1);
    }
    if (fk_start(dir, &k) < 0 || fk_pod_set(k, "team-a", "bench", "railgate.io/a", ids, 2) < 0 ||
        write(go[1], "g", 1) != 1)
        return 1;
    size_t got = 0, len = cycles * sizeof(*v);
    while (got < len) {
        ssize_t n = read(res[0], (char *)v + got, len - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (waitpid(pid, &status, 0) < 0 || status != 0 || got != len)
        return 1;
    fk_stop(k);

    printf("\nWhich units a pod holds, %u cycles, ms (fake kubelet, same machine)\n\n", cycles);
    printf("| %-55s | %7s | %7s |\n", "", "p50", "p99");
    printf("|---------------------------------------------------------|---------|---------|\n");
    for (unsigned p = 0; p < PHASES; p++) {
        for (unsigned i = 0; i < cycles; i++)
            col[i] = v[i][p];
        printf("| %-55s | %7.3f | %7.3f |\n", phase_names[p], percentile(col, cycles, 50) / 1000,
               percentile(col, cycles, 99) / 1000);
    }
    free(v);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}
