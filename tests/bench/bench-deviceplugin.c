/* SPDX-License-Identifier: Apache-2.0 */
/* Device plugin benchmark: Allocate latency, health propagation, daemon RSS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deviceplugin.pb-c.h"
#include "dpenv.h"
#include "pb.h"
#include "proc.h"
#include "rpc.h"
#include "testns.h"

#define RES_A "railgate.io/a"

typedef struct Rss {
    long total, anon, file; /* kB: VmRSS = RssAnon + RssFile + RssShmem */
} Rss;

static Rss rss_kb(pid_t pid) {
    char path[64], line[256];
    Rss r = {-1, -1, -1};
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return r;
    while (fgets(line, sizeof(line), f)) {
        (void)(sscanf(line, "VmRSS: %ld kB", &r.total) == 1 ||
               sscanf(line, "RssAnon: %ld kB", &r.anon) == 1 ||
               sscanf(line, "RssFile: %ld kB", &r.file) == 1);
    }
    fclose(f);
    return r;
}

static void die(const char *what, int r) {
    fprintf(stderr, "bench: %s failed: %s\n", what, strerror(r < 0 ? -r : r));
    exit(1);
}

/* kubelet keeps one connection to a plugin: so does this loop. */
static void bench_allocate(DpEnv *e, unsigned calls, double *p50, double *p99) {
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest cr = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest *crs[] = {&cr};
    char *ids[] = {"rail1", "rail0"}, sock[512];
    RpcChannel *ch = NULL;
    uint8_t *buf = NULL;
    size_t len;
    double *t = calloc(calls, sizeof(double));
    int r;

    cr.devices_ids = ids;
    cr.n_devices_ids = 2;
    req.container_requests = crs;
    req.n_container_requests = 1;
    if (!t || pb_pack(&req.base, &buf, &len) < 0)
        die("setup", ENOMEM);
    if ((r = dpenv_tenant_socket(e, "a", sock, sizeof(sock))) < 0)
        die("tenant a's socket", r);
    if ((r = rpc_channel_new(sock, &ch)) < 0)
        die("channel", r);
    for (unsigned i = 0; i < calls + 10; i++) {
        uint8_t *resp = NULL;
        size_t rl;
        RgError err = {0};
        double t0 = now_us();
        r = rpc_call_unary(ch, "/v1beta1.DevicePlugin/Allocate", buf, len, 5000, &resp, &rl, &err);
        double dt = now_us() - t0;
        if (r < 0)
            die(err.msg, r);
        free(resp);
        if (i >= 10) /* the first calls set up the connection */
            t[i - 10] = dt;
    }
    *p50 = percentile(t, calls, 50);
    *p99 = percentile(t, calls, 99);
    rpc_channel_free(ch);
    free(buf);
    free(t);
}

static void bench_health(DpEnv *e, unsigned events, double *p50, double *p99) {
    double *t = calloc(events, sizeof(double));

    for (unsigned i = 0; i < events; i++) {
        bool up = i % 2 == 1;
        double t0 = now_us();
        int r = testns_link_set_up("rail-nic0", up);
        if (r < 0)
            die("link set", r);
        r = fk_wait_health(e->k, RES_A, "rail0", up, 10000);
        if (r < 0)
            die("health propagation", r);
        t[i] = now_us() - t0;
    }
    *p50 = percentile(t, events, 50);
    *p99 = percentile(t, events, 99);
    free(t);
}

static Rss bench_rss(unsigned rails, unsigned vfs) {
    DpEnv e;
    int r = dpenv_setup(&e, rails, vfs);

    if (r < 0)
        die("node setup", r);
    if ((r = dpenv_plugin_start(&e, NULL)) < 0 ||
        (r = fk_wait_registered(e.k, RES_A, 1, 30000)) < 0 ||
        (r = fk_wait_registered(e.k, "railgate.io/b", 1, 30000)) < 0)
        die("registration", r);
    Rss kb = rss_kb(e.plugin);
    dpenv_teardown(&e);
    for (unsigned i = 0; i < rails; i++) {
        char name[32];
        snprintf(name, sizeof(name), "rail-nic%u", i);
        testns_link_del(name);
    }
    return kb;
}

int main(int argc, char **argv) {
    unsigned calls = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    unsigned events = argc > 2 ? (unsigned)atoi(argv[2]) : 200;
    double a50, a99, h50, h99;
    DpEnv e;
    int r;

    testns_require_root();
    if ((r = testns_enter_private()) < 0)
        die("private netns", r);
    if ((r = dpenv_setup(&e, 8, 0)) < 0)
        die("node setup", r);
    if ((r = dpenv_plugin_start(&e, "--log-level=warn")) < 0 ||
        (r = fk_wait_registered(e.k, RES_A, 1, 30000)) < 0)
        die("registration", r);
    bench_allocate(&e, calls, &a50, &a99);
    bench_health(&e, events, &h50, &h99);
    dpenv_teardown(&e);
    for (unsigned i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof(name), "rail-nic%u", i);
        testns_link_del(name);
    }
    Rss rss8 = bench_rss(8, 0);
    Rss rss1024 = bench_rss(8, 128);

    printf("\nrailgate-device-plugin benchmark (%ld cores)\n\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("| metric                                              | value     | target    |\n");
    printf("|-----------------------------------------------------|-----------|-----------|\n");
    printf("| Allocate latency p50 (%4u calls, 2 units)          | %6.3f ms |           |\n", calls,
           a50 / 1000);
    printf("| Allocate latency p99                                | %6.3f ms | < 1 ms    |\n",
           a99 / 1000);
    printf("| health propagation p50 (%3u link events -> stream)  | %6.3f ms |           |\n",
           events, h50 / 1000);
    printf("| health propagation p99                              | %6.3f ms | < 100 ms  |\n",
           h99 / 1000);
    printf("| daemon RSS, 8 units (8 rails)                       | %6.1f MB |           |\n",
           (double)rss8.total / 1024);
    printf("|   of which anonymous / shared-library file pages    | %4.1f/%4.1f |           |\n",
           (double)rss8.anon / 1024, (double)rss8.file / 1024);
    printf("| daemon RSS, 1024 units (8 rails x 128 VFs)          | %6.1f MB | < 10 MB   |\n",
           (double)rss1024.total / 1024);
    printf("|   of which anonymous / shared-library file pages    | %4.1f/%4.1f |           |\n",
           (double)rss1024.anon / 1024, (double)rss1024.file / 1024);
    return 0;
}
