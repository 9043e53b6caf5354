/* SPDX-License-Identifier: Apache-2.0 */
/* railgate-device-plugin, the node agent: flags, config, inventory, then one loop (loop.h) with
 * one health module (health.h) and the fronts of the mode: the device plugin or the DRA driver,
 * each with the CNI's socket (agent.h), and the metrics. */
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>

#include "agent.h"
#include "agentmetrics.h"
#include "config.h"
#include "discover.h"
#include "dra.h"
#include "health.h"
#include "holdings.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "lowers.h"
#include "metrics-mhd.h"
#include "plugin.h"
#include "rdma.h"
#include "state.h"

typedef struct Args {
    const char *config;
    const char *kubelet_dir, *state_dir, *topology_xml, *sysfs_root, *dev_root, *proc_root;
    const char *metrics_listen;
    LogFormat log_format;
    LogLevel log_level;
    bool print_inventory, publish_inventory;
} Args;

static void usage(FILE *f) {
    fprintf(f, "Usage: railgate-device-plugin [OPTIONS]\n"
               "Serve GPU + rail-NIC units to kubelet, one resource per tenant.\n\n"
               "  -c, --config PATH        node config (default " CONFIG_DEFAULT_PATH ")\n"
               "      --kubelet-dir DIR    overrides kubeletDir for the device-plugin dir\n"
               "                           (PodResources stays under the config's kubeletDir)\n"
               "      --state-dir DIR      overrides stateDir\n"
               "      --topology-xml FILE  hwloc XML instead of the live topology\n"
               "      --sysfs-root DIR     overrides sysfsRoot\n"
               "      --proc-root DIR      overrides procRoot\n"
               "      --dev-root DIR       overrides devRoot\n"
               "      --metrics-listen ADDR\n"
               "                           serve /metrics on ADDR: unix:/PATH, IPv4:PORT or\n"
               "                           [IPv6]:PORT (overrides metrics.listen)\n"
               "      --log-format FMT     text (default) or json\n"
               "      --log-level LEVEL    error, warn, info (default), debug\n"
               "      --print-inventory    print the units and discovery notes, then exit\n"
               "      --publish-inventory  publish the inventory in the state dir for the CNI,\n"
               "                           then exit (the daemon publishes it when it starts)\n"
               "  -h, --help               this text\n");
}

static int parse_args(int argc, char **argv, Args *a) {
    enum { KUBELET = 256, STATE, TOPO, SYSFS, PROC, DEV, METRICS, LFMT, LLVL, PRINT, PUBLISH };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"kubelet-dir", required_argument, NULL, KUBELET},
        {"state-dir", required_argument, NULL, STATE},
        {"topology-xml", required_argument, NULL, TOPO},
        {"sysfs-root", required_argument, NULL, SYSFS},
        {"proc-root", required_argument, NULL, PROC},
        {"dev-root", required_argument, NULL, DEV},
        {"metrics-listen", required_argument, NULL, METRICS},
        {"log-format", required_argument, NULL, LFMT},
        {"log-level", required_argument, NULL, LLVL},
        {"print-inventory", no_argument, NULL, PRINT},
        {"publish-inventory", no_argument, NULL, PUBLISH},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    int c;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) >= 0)
        switch (c) {
        case 'c':
            a->config = optarg;
            break;
        case KUBELET:
            a->kubelet_dir = optarg;
            break;
        case STATE:
            a->state_dir = optarg;
            break;
        case TOPO:
            a->topology_xml = optarg;
            break;
        case SYSFS:
            a->sysfs_root = optarg;
            break;
        case PROC:
            a->proc_root = optarg;
            break;
        case DEV:
            a->dev_root = optarg;
            break;
        case METRICS:
            if (!listen_address_valid(optarg)) {
                fprintf(stderr,
                        "--metrics-listen: \"%s\" is not unix:/PATH, IPv4:PORT or [IPv6]:PORT\n",
                        optarg);
                return -EINVAL;
            }
            a->metrics_listen = optarg;
            break;
        case LFMT:
            if (log_parse_format(optarg, &a->log_format) < 0) {
                fprintf(stderr, "--log-format: \"%s\" is not text or json\n", optarg);
                return -EINVAL;
            }
            break;
        case LLVL:
            if (log_parse_level(optarg, &a->log_level) < 0) {
                fprintf(stderr, "--log-level: \"%s\" is not error, warn, info or debug\n", optarg);
                return -EINVAL;
            }
            break;
        case PRINT:
            a->print_inventory = true;
            break;
        case PUBLISH:
            a->publish_inventory = true;
            break;
        case 'h':
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            usage(stderr);
            return -EINVAL;
        }
    if (optind < argc) {
        fprintf(stderr, "unexpected argument \"%s\"\n", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

static int override(char **field, const char *value) {
    char *s;

    if (!value)
        return 0;
    s = strdup(value);
    if (!s)
        return -ENOMEM;
    free(*field);
    *field = s;
    return 0;
}

static int apply_overrides(NodeConfig *c, const Args *a) {
    int r = 0;

    r = r ?: override(&c->kubelet_dir, a->kubelet_dir);
    r = r ?: override(&c->state_dir, a->state_dir);
    r = r ?: override(&c->sysfs_root, a->sysfs_root);
    r = r ?: override(&c->proc_root, a->proc_root);
    r = r ?: override(&c->dev_root, a->dev_root);
    r = r ?: override(&c->metrics.listen, a->metrics_listen);
    return r;
}

/* The CNI's questions from now on: which units a pod holds, from kubelet's
 * PodResources socket under kubelet_dir. */
static char *pod_resources_socket(const char *kubelet_dir) {
    char *path = NULL;

    return asprintf(&path, "%s/pod-resources/kubelet.sock", kubelet_dir) < 0 ? NULL : path;
}

static int agent_serve_podresources(const NodeConfig *c, const char *kubelet_dir, Holdings **ret_h,
                                    Agent **ret_a) {
    _cleanup_free_ char *pod_resources = pod_resources_socket(kubelet_dir);
    int r;

    if (!pod_resources)
        return log_error(NULL, NULL, -ENOMEM, "out of memory");
    r = holdings_new(c, pod_resources, ret_h);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the PodResources client");
    return agent_serve(c, *ret_h, ret_a);
}

static void print_inventory(const Inventory *inv) {
    const NodeConfig *c = inv->config;

    for (size_t t = 0; t < c->n_tenants; t++) {
        printf("tenant %s: resource %s, namespaces", c->tenants[t].name, c->tenants[t].resource);
        for (size_t i = 0; i < c->tenants[t].n_namespaces; i++)
            printf(" %s", c->tenants[t].namespaces[i]);
        printf("\n");
        for (size_t i = 0; i < inv->n_units; i++) {
            const Unit *u = &inv->units[i];
            if (u->tenant != t)
                continue;
            printf("  %-12s gpu=%-16s nic=%-12s pci=%-12s rdma=%-8s numa=%d switch=%s pod-if=%s\n",
                   u->id, u->has_gpu ? u->gpu_id : "-", u->netdev[0] ? u->netdev : "-",
                   u->nic_pci[0] ? u->nic_pci : "-", u->rdma[0] ? u->rdma : "-", u->numa,
                   u->switch_id[0] ? u->switch_id : "-", u->pod_ifname);
        }
    }
    for (size_t i = 0; i < inv->n_notes; i++)
        printf("note: %s\n", inv->notes[i]);
}

/* Where each macvlan rail sits (carried over from the inventory published
 * before for a rail a pod holds now), and no lower shared with another
 * tenant or the node (lowers.h). */
static int lowers_check(const NodeConfig *c, Inventory *inv) {
    _cleanup_(inventory_freep) Inventory *prev = NULL;
    RgError err = {0};
    int r;

    r = inventory_load_published(c, c->state_dir, &prev, &err);
    if (r < 0 && r != -ENOENT)
        log_warn(NULL, NULL, "%s: the lowers of macvlan rails in pods are not carried over",
                 err.msg);
    r = rail_lowers_note(inv, r >= 0 ? prev : NULL, &err);
    if (r >= 0)
        r = rail_lowers_check_node(inv, NULL, 0, &err);
    if (r == -EADDRINUSE)
        return log_error(NULL, NULL, r, "refusing the node config: %s", err.msg);
    if (r < 0)
        return log_error(NULL, NULL, r, "%s", err.msg);
    return 0;
}

/* The node's RDMA network-namespace mode, read once at start over RDMA
 * netlink and logged: in exclusive mode an RDMA device does not follow its
 * netdev into a pod. A kernel without the RDMA core (no NETLINK_RDMA) is
 * "unavailable", never a reason not to start. */
static const char *rdma_mode_report(void) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    RdmaNetnsMode m = RDMA_NETNS_SHARED;
    char why[256];
    int r = rdma_open(-1, &nl);

    if (r >= 0)
        r = rdma_netns_mode_get(nl, &m);
    if (r < 0) {
        if (!netlink_kernel_message(nl, r, why, sizeof(why)))
            snprintf(why, sizeof(why), "%s", strerror(-r));
        log_info(NULL, NULL, "RDMA netns mode: unavailable (no RDMA netlink: %s)", why);
        return "unavailable";
    }
    log_info(NULL, NULL, "RDMA netns mode: %s", rdma_netns_mode_name(m));
    return rdma_netns_mode_name(m);
}

/* Off unless the node config or the flag names a listen address. */
static int metrics_start(const NodeConfig *c, MetricsServer **ret) {
    RgError err = {0};
    int r;

    if (!c->metrics.listen)
        return 0;
    r = metrics_mhd_load(&err);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot serve metrics: %s", err.msg);
    r = metrics_init(c);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the metrics");
    r = metrics_server_start(&c->metrics, ret);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot serve metrics on %s", c->metrics.listen);
    log_info(NULL, NULL, "serving metrics on %s", c->metrics.listen);
    return 0;
}

static void metrics_stop(MetricsServer **s) {
    metrics_server_stop(*s);
    metrics_free();
}

/* The fronts of this run: one of the two is set. */
typedef struct Fronts {
    EvLoop *ev;
    int sfd;
    Plugin *dp;
    DraFront *dra;
} Fronts;

/* SIGHUP to the front; SIGTERM or SIGINT end the loop. */
static void on_signal(void *userdata, short revents) {
    Fronts *f = userdata;
    struct signalfd_siginfo si;

    (void)revents;
    while (read(f->sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            if (f->dp)
                plugin_hup(f->dp);
            if (f->dra)
                dra_front_hup(f->dra);
            continue;
        }
        log_info(NULL, NULL, "signal %u: stopping", si.ssi_signo);
        ev_loop_quit(f->ev);
        return;
    }
}

static void ev_loop_freep(EvLoop **l) {
    ev_loop_free(*l);
}

int main(int argc, char **argv) {
    Args a = {.config = CONFIG_DEFAULT_PATH, .log_level = LOG_LVL_INFO};
    _cleanup_(config_freep) NodeConfig *c = NULL;
    _cleanup_(inventory_freep) Inventory *inv = NULL;
    _cleanup_(metrics_stop) MetricsServer *metrics = NULL;
    _cleanup_(ev_loop_freep) EvLoop *ev = NULL;
    _cleanup_close_ int sfd = -EBADF;
    _cleanup_(health_freep) Health *health = NULL; /* freed after the fronts */
    _cleanup_(plugin_freep) Plugin *p = NULL;
    _cleanup_(dra_front_freep) DraFront *dra = NULL;
    _cleanup_(holdings_freep) Holdings *h = NULL;
    _cleanup_(agent_stopp) Agent *agent = NULL; /* stopped before h is freed */
    _cleanup_free_ char *kubelet_dir = NULL;
    Fronts fronts = {0};
    RgError err = {0};
    const char *rdma_mode;
    sigset_t mask;
    int r;

    /* glibc gives each thread that allocates an arena of its own, up to 8 a core: the
     * agent's threads allocate little, and two arenas keep what is freed reusable */
    mallopt(M_ARENA_MAX, 2);
    /* Before any thread exists (gRPC starts its own): the loop reads them. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (parse_args(argc, argv, &a) < 0)
        return 2;
    log_setup(a.log_format, a.log_level, "railgate-device-plugin");
    r = config_load(a.config, &c, &err);
    if (r < 0)
        return log_error(NULL, NULL, r, "invalid node config: %s", err.msg), 1;
    /* PodResources follows kubelet's --root-dir, the device-plugin dir does
     * not: --kubelet-dir moves the latter only (docs/config.md, kubeletDir) */
    kubelet_dir = strdup(c->kubelet_dir);
    if (!kubelet_dir || apply_overrides(c, &a) < 0)
        return 1;
    InventoryOptions io = {.topology_xml = a.topology_xml};
    r = inventory_build(c, &io, &inv, &err);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot build the rail inventory: %s", err.msg), 1;
    if (a.print_inventory) {
        print_inventory(inv);
        return 0;
    }
    for (size_t i = 0; i < inv->n_notes; i++)
        log_warn(NULL, NULL, "%s", inv->notes[i]);
    /* before anything is published or served: a macvlan rail on a lower
     * another tenant or the node is on would let a pod take their frames */
    if (lowers_check(c, inv) < 0)
        return 1;
    r = state_dir_ensure(c->state_dir);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot create state dir %s", c->state_dir), 1;
    r = state_temps_sweep(c->state_dir);
    if (r > 0)
        log_info(NULL, NULL, "%d temp file(s) of writes cut short before this boot removed from %s",
                 r, c->state_dir);
    /* before kubelet hears of a unit, the CNI can find it */
    r = inventory_publish(inv, c->state_dir, &err);
    if (r < 0)
        return log_error(NULL, NULL, r, "%s", err.msg), 1;
    log_info(NULL, NULL, "inventory generation %" PRIu64 " published in %s/" INVENTORY_FILE,
             inv->generation, c->state_dir);
    if (a.publish_inventory)
        return 0;
    /* building the inventory (hwloc's topology, sysfs, the JSON) freed most of what it
     * took, in pieces the heap's top does not give back: give it back now */
    malloc_trim(0);
    rdma_mode = rdma_mode_report();
    if (metrics_start(c, &metrics) < 0)
        return 1;
    metrics_rdma_netns_mode(rdma_mode);
    /* one loop for every front; the signals (blocked above) read on it */
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return log_error(NULL, NULL, -errno, "signalfd: %m"), 1;
    r = ev_loop_new(&ev);
    if (r >= 0)
        r = health_new(c, inv, &health);
    if (r < 0)
        return log_error(NULL, NULL, r, "out of memory"), 1;
    fronts = (Fronts){.ev = ev, .sfd = sfd};
    r = ev_loop_add_fd(ev, sfd, POLLIN, on_signal, &fronts);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot follow signals"), 1;
    if (c->mode == AGENT_MODE_DRA) {
        _cleanup_free_ char *pod_resources = pod_resources_socket(kubelet_dir);
        if (!pod_resources)
            return log_error(NULL, NULL, -ENOMEM, "out of memory"), 1;
        /* health first: the slices start with what it read */
        if (health_start(health, ev) < 0 ||
            dra_front_start(c, inv, pod_resources, ev, health, &dra) < 0)
            return 1;
        fronts.dra = dra;
    } else {
        if (agent_serve_podresources(c, kubelet_dir, &h, &agent) < 0)
            return 1;
        r = plugin_new(c, inv, health, &p);
        if (r < 0)
            return log_error(NULL, NULL, r, "cannot set up the plugin"), 1;
        log_info(NULL, NULL, "%zu units for %zu tenants; kubelet at %s", inv->n_units, c->n_tenants,
                 p->kubelet_sock);
        /* health before the servers: the first ListAndWatch says what it read */
        if (health_start(health, ev) < 0)
            return 1;
        r = plugin_attach(p, ev);
        if (r < 0)
            return log_error(NULL, NULL, r, "cannot watch for kubelet"), 1;
        fronts.dp = p;
    }
    r = ev_loop_run(ev);
    if (r < 0)
        log_error(NULL, NULL, r, "poll failed");
    plugin_stop(p); /* registrations cancelled, servers stopped, before the agent's socket goes */
    return r < 0 ? 1 : 0;
}
