/* CNI benchmark: railgate ADD/DEL against Debian's host-device + static, same moves, same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cnienv.h"
#include "proc.h"
#include "testns.h"

static CniEnvT env;

static void die(const char *what, const CniRun *r) {
    fprintf(stderr, "bench: %s failed: %s\n", what, r ? r->raw : "");
    exit(1);
}

typedef struct Stats {
    double add50, add99, del50, del99;
} Stats;

static void run_ok(const char *plugin, const char *cmd, const char *container, const char *netns,
                   const char *ifname, const char *conf) {
    CniRun r;

    cnienv_run(&env, plugin, cmd, container, netns, ifname, "team-a", "bench", conf, NULL, &r);
    if (r.status != 0)
        die(cmd, &r);
    cni_run_done(&r);
}

/* railgate: one invocation moves every unit of the pod. */
static void bench_railgate(const char *netns, unsigned cycles, Stats *s) {
    double *a = calloc(cycles, sizeof(double)), *d = calloc(cycles, sizeof(double));
    char *conf = cnienv_conf("1.1.0", NULL);

    for (unsigned i = 0; i < cycles; i++) {
        double t0 = now_us();
        run_ok("railgate", "ADD", "bench", netns, "eth0", conf);
        double t1 = now_us();
        run_ok("railgate", "DEL", "bench", netns, "eth0", conf);
        a[i] = t1 - t0;
        d[i] = now_us() - t1;
    }
    *s = (Stats){percentile(a, cycles, 50), percentile(a, cycles, 99), percentile(d, cycles, 50),
                 percentile(d, cycles, 99)};
    free(conf);
    free(a);
    free(d);
}

static char *host_device_conf(unsigned k) {
    char *s = NULL;

    if (asprintf(&s,
                 "{\"cniVersion\": \"1.0.0\", \"name\": \"hd%u\", \"type\": \"host-device\","
                 " \"device\": \"rail-nic%u\", \"ipam\": {\"type\": \"static\", \"addresses\":"
                 " [{\"address\": \"10.%u.0.2/24\", \"gateway\": \"10.%u.0.1\"}]}}",
                 k, k, 100 + k, 100 + k) < 0)
        return NULL;
    return s;
}

/* host-device: one invocation per rail, as a runtime (or Multus) must. */
static void bench_host_device(const char *netns, unsigned rails, unsigned cycles, Stats *s) {
    double *a = calloc(cycles, sizeof(double)), *d = calloc(cycles, sizeof(double));
    char *confs[8], ifn[8][16];

    for (unsigned k = 0; k < rails; k++) {
        confs[k] = host_device_conf(k);
        snprintf(ifn[k], sizeof(ifn[k]), "rail%u", k);
    }
    for (unsigned i = 0; i < cycles; i++) {
        double t0 = now_us();
        for (unsigned k = 0; k < rails; k++)
            run_ok("host-device", "ADD", "bench", netns, ifn[k], confs[k]);
        double t1 = now_us();
        for (unsigned k = rails; k-- > 0;)
            run_ok("host-device", "DEL", "bench", netns, ifn[k], confs[k]);
        a[i] = t1 - t0;
        d[i] = now_us() - t1;
        /* host-device leaves a returned NIC down: bring it up as railgate would */
        for (unsigned k = 0; k < rails; k++) {
            char name[32];
            snprintf(name, sizeof(name), "rail-nic%u", k);
            testns_link_set_up(name, true);
        }
    }
    *s = (Stats){percentile(a, cycles, 50), percentile(a, cycles, 99), percentile(d, cycles, 50),
                 percentile(d, cycles, 99)};
    for (unsigned k = 0; k < rails; k++)
        free(confs[k]);
    free(a);
    free(d);
}

static void row(const char *what, const Stats *rg, const Stats *hd) {
    printf("| %-26s | %8.2f | %8.2f | %8.2f | %8.2f | %6.1fx | %6.1fx |\n", what, rg->add50 / 1000,
           rg->add99 / 1000, hd->add50 / 1000, hd->add99 / 1000, hd->add50 / rg->add50,
           hd->add99 / rg->add99);
    printf("| %-26s | %8.2f | %8.2f | %8.2f | %8.2f | %6.1fx | %6.1fx |\n", "  DEL",
           rg->del50 / 1000, rg->del99 / 1000, hd->del50 / 1000, hd->del99 / 1000,
           hd->del50 / rg->del50, hd->del99 / rg->del99);
}

int main(int argc, char **argv) {
    unsigned cycles = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    char netns[128], errlog[160], *one[] = {"rail0"};
    char *eight[] = {"rail0", "rail1", "rail2", "rail3", "rail4", "rail5", "rail6", "rail7"};
    Stats rg1, hd1, rg8, hd8;

    testns_require_root();
    if (testns_enter_private() < 0 || cnienv_setup(&env, CNIENV_RAILS) < 0)
        die("setup", NULL);
    /* the plugins' stderr (railgate logs there too) stays out of the table */
    snprintf(errlog, sizeof(errlog), "%s/plugins.stderr", env.tmp);
    env.plugin_stderr = errlog;
    if (cnienv_pod_netns("rgbench", netns, sizeof(netns)) < 0)
        die("pod netns", NULL);
    fk_pod_set(env.k, "team-a", "bench", "railgate.io/a", one, 1);
    bench_railgate(netns, cycles, &rg1);
    bench_host_device(netns, 1, cycles, &hd1);
    fk_pod_set(env.k, "team-a", "bench", "railgate.io/a", eight, 8);
    bench_railgate(netns, cycles, &rg8);
    bench_host_device(netns, 8, cycles, &hd8);
    cnienv_teardown(&env);

    printf("\nCNI ADD/DEL latency, ms, %u cycles each, same run, same veth rails\n", cycles);
    printf("(railgate: one invocation per pod; host-device + static: one per rail)\n\n");
    printf("| %-26s | %8s | %8s | %8s | %8s | %7s | %7s |\n", "rails / command", "rg p50", "rg p99",
           "hd p50", "hd p99", "p50 x", "p99 x");
    printf("|----------------------------|----------|----------|----------|----------|---------|"
           "---------|\n");
    row("1 rail ADD", &rg1, &hd1);
    row("8 rails ADD", &rg8, &hd8);
    return 0;
}
