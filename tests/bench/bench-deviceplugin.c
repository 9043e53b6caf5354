/* SPDX-License-Identifier: Apache-2.0 */
/* Device plugin benchmark: Allocate latency, health propagation, the agent's RSS in both modes. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deviceplugin.pb-c.h"
#include "dpenv.h"
#include "dra-slices.h"
#include "fakeapi.h"
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

/* A mapping's name as smaps gives it, a file by its base name. */
typedef struct MapRss {
    char name[64];
    long rss; /* kB */
} MapRss;

#define MAPS_MAX 64

/* /proc/pid/smaps' Rss summed per file ("[heap]", "[anon]", ...), largest first. */
static size_t maps_rss(pid_t pid, MapRss *m, size_t max) {
    char path[64], line[512], name[PATH_MAX];
    size_t n = 0, cur = max;
    unsigned long lo, hi;
    long kb;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && strchr(line, ' ')) {
            int off = 0;
            if (sscanf(line, "%*s %*s %*s %*s %*s %n", &off) < 0 || !off ||
                sscanf(line + off, "%4095s", name) != 1)
                strcpy(name, "[anon]");
            const char *base = name[0] == '/' ? basename(name) : name;
            for (cur = 0; cur < n && strcmp(m[cur].name, base); cur++)
                ;
            if (cur == n && n < max)
                snprintf(m[n++].name, sizeof(m->name), "%.63s", base); /* name[64] */
        } else if (cur < n && sscanf(line, "Rss: %ld kB", &kb) == 1)
            m[cur].rss += kb;
    }
    fclose(f);
    for (size_t i = 1; i < n; i++) /* a few dozen: insertion sort */
        for (size_t j = i; j > 0 && m[j].rss > m[j - 1].rss; j--) {
            MapRss t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    return n;
}

/* What the agent holds, and (maps: not NULL) where, once it serves. */
static Rss agent_rss(pid_t pid, MapRss *maps, size_t *n_maps) {
    if (maps)
        *n_maps = maps_rss(pid, maps, MAPS_MAX);
    return rss_kb(pid);
}

static void rails_del(unsigned rails) {
    for (unsigned i = 0; i < rails; i++) {
        char name[32];
        snprintf(name, sizeof(name), "rail-nic%u", i);
        testns_link_del(name);
    }
}

static Rss bench_rss(unsigned rails, unsigned vfs, MapRss *maps, size_t *n_maps) {
    DpEnv e;
    int r = dpenv_setup(&e, rails, vfs);

    if (r < 0)
        die("node setup", r);
    if ((r = dpenv_plugin_start(&e, NULL)) < 0 ||
        (r = fk_wait_registered(e.k, RES_A, 1, 30000)) < 0 ||
        (r = fk_wait_registered(e.k, "railgate.io/b", 1, 30000)) < 0)
        die("registration", r);
    Rss kb = agent_rss(e.plugin, maps, n_maps);
    dpenv_teardown(&e);
    rails_del(rails);
    return kb;
}

/* Every unit a device of the node's ResourceSlices. */
static bool slices_hold(FakeApi *api, void *arg) {
    json_t *l = fakeapi_list(api, DRA_SLICES_PATH), *items = json_object_get(l, "items"), *s;
    size_t i, devices = 0;

    json_array_foreach(items, i, s) {
        devices += json_array_size(json_object_get(json_object_get(s, "spec"), "devices"));
    }
    json_decref(l);
    return devices == *(unsigned *)arg;
}

/* DRA mode: the same node, its units published as ResourceSlices to the fake API server. */
static Rss bench_rss_dra(unsigned rails, unsigned vfs, MapRss *maps, size_t *n_maps) {
    unsigned units = rails * (vfs ? vfs : 1);
    char kubeconfig[256], members[256];
    FakeApi *api = NULL;
    DpEnv e;
    int r = dpenv_setup(&e, rails, vfs);

    if (r < 0)
        die("node setup", r);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig.json", e.tmp);
    snprintf(members, sizeof(members), "\"mode\": \"dra\", \"cdiDir\": \"%s/cdi\"", e.tmp);
    if ((r = fakeapi_start(&api)) < 0 ||
        (r = fakeapi_write_kubeconfig(api, kubeconfig, NULL)) < 0 ||
        (r = dpenv_config_extra(&e, members)) < 0)
        die("fake API server", r);
    setenv("KUBECONFIG", kubeconfig, 1);
    setenv("NODE_NAME", "node-1", 1);
    if ((r = dpenv_plugin_start(&e, NULL)) < 0)
        die("DRA agent", r);
    if (!fakeapi_wait(api, slices_hold, &units, 30000))
        die("ResourceSlices", ETIMEDOUT);
    Rss kb = agent_rss(e.plugin, maps, n_maps);
    dpenv_teardown(&e);
    fakeapi_stop(api);
    unsetenv("KUBECONFIG");
    rails_del(rails);
    return kb;
}

/* "8.8 MB (1.6 + 7.2)": VmRSS, of it anonymous and file pages */
static const char *rss_cell(Rss r, char *buf, size_t n) {
    snprintf(buf, n, "%.1f MB (%.1f + %.1f)", (double)r.total / 1024, (double)r.anon / 1024,
             (double)r.file / 1024);
    return buf;
}

static void rss_row(const char *what, Rss dp, Rss dra, const char *target) {
    char a[64], b[64];

    printf("| %-30s | %-24s | %-24s | %-9s |\n", what, rss_cell(dp, a, sizeof(a)),
           rss_cell(dra, b, sizeof(b)), target);
}

static void maps_table(const char *mode, const MapRss *m, size_t n) {
    printf("\nthe agent's resident pages by mapping, %s mode, 1024 units (smaps Rss; >= 64 kB)\n\n",
           mode);
    printf("| mapping                      | Rss      |\n");
    printf("|------------------------------|----------|\n");
    for (size_t i = 0; i < n && m[i].rss >= 64; i++)
        printf("| %-28s | %5ld kB |\n", m[i].name, m[i].rss);
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
    rails_del(8);
    MapRss maps_dp[MAPS_MAX] = {0}, maps_dra[MAPS_MAX] = {0};
    size_t n_dp = 0, n_dra = 0;
    Rss rss8 = bench_rss(8, 0, NULL, NULL);
    Rss rss1024 = bench_rss(8, 128, maps_dp, &n_dp);
    Rss dra8 = bench_rss_dra(8, 0, NULL, NULL);
    Rss dra1024 = bench_rss_dra(8, 128, maps_dra, &n_dra);

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
    printf("\nthe agent's RSS (VmRSS: anonymous + file pages), once it serves; metrics off\n\n");
    printf("| units                          | device-plugin mode       | DRA mode                 "
           "| target    |\n");
    printf("|--------------------------------|--------------------------|--------------------------"
           "|-----------|\n");
    rss_row("8 (8 rails)", rss8, dra8, "");
    rss_row("1024 (8 rails x 128 VFs)", rss1024, dra1024, "< 10 MB");
    maps_table("device-plugin", maps_dp, n_dp);
    maps_table("DRA", maps_dra, n_dra);
    return 0;
}
