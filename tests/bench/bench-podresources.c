/* What the CNI's PodResources lookup costs beyond kubelet's answer: gRPC core start-up and
 * shut-down. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakekubelet.h"
#include "podresources.h"
#include "proc.h"
#include "rpc.h"
#include "strv.h"

#define PHASES 6

static const char *const phase_names[PHASES] = {
    "lookup, cold (gRPC start, call, shut-down in line)",
    "  of which gRPC start (first grpc_init, its threads)",
    "  of which gRPC shut-down (grpc_shutdown, joins them)",
    "lookup, cold, as the CNI does it (rpc_client_*)",
    "  then the shut-down joined at exit, if nothing overlaps",
    "lookup, warm (gRPC running, new channel)",
};

static void lookup(const char *sock, char *const *resources) {
    RgError err = {0};
    char **ids = NULL, *resource = NULL;

    if (podresources_pod_units(sock, 5000, "team-a", "bench", resources, &ids, &resource, &err) <
            0 ||
        strv_length(ids) != 2) {
        fprintf(stderr, "bench: PodResources lookup failed: %s\n", err.msg);
        exit(1);
    }
    strv_free(ids);
    free(resource);
}

/* Lookup timings, in a fresh child of a process where gRPC has never run,
 * as a CNI process is: static state of an earlier cycle cannot help it. */
typedef void (*Cycle)(const char *sock, char *const *resources, double *t);

static void in_child(Cycle fn, const char *sock, char *const *resources, double *ret, size_t n) {
    int p[2], status;
    double t[4] = {0};
    size_t len = n * sizeof(double);

    if (n > 4 || pipe(p) < 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        fn(sock, resources, t);
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
static void cold_cycle(const char *sock, char *const *resources, double *t) {
    RpcChannel *ch = NULL;
    double t0 = now_us();

    if (rpc_channel_new(sock, &ch) < 0)
        _exit(1);
    double t1 = now_us();
    lookup(sock, resources);
    double t2 = now_us();
    rpc_channel_free(ch);
    double t3 = now_us();
    t[0] = t3 - t0;
    t[1] = t1 - t0;
    t[2] = t3 - t2;
}

/* As the CNI's ADD runs it: gRPC started on a helper thread at exec,
 * released on another once the answer is in (the NICs move while it shuts
 * down), joined at exit. t[0]: exec to answer; t[1]: the join, as long as it
 * is when nothing runs meanwhile. */
static void cni_cycle(const char *sock, char *const *resources, double *t) {
    double t0 = now_us();

    rpc_client_prestart();
    lookup(sock, resources);
    rpc_client_release();
    double t1 = now_us();
    rpc_client_finish();
    t[0] = t1 - t0;
    t[1] = now_us() - t1;
}

static void measure(const char *sock, unsigned cycles, double (*v)[PHASES]) {
    char *resources[] = {"railgate.io/a", NULL};
    RpcChannel *hold = NULL;

    for (unsigned i = 0; i < cycles; i++) { /* interleaved: load moves both alike */
        in_child(cold_cycle, sock, resources, v[i], 3);
        in_child(cni_cycle, sock, resources, v[i] + 3, 2);
    }
    /* a held channel keeps gRPC core initialised: what is left is the call */
    if (rpc_channel_new(sock, &hold) < 0)
        exit(1);
    for (unsigned i = 0; i < cycles; i++) {
        double t0 = now_us();
        lookup(sock, resources);
        v[i][5] = now_us() - t0;
    }
    rpc_channel_free(hold);
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
        measure(sock, cycles, v);
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

    printf("\nPodResources lookup from the CNI, %u cycles, ms (fake kubelet, same machine)\n\n",
           cycles);
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
