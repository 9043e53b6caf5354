/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA driver's life: its two sockets, kubelet's registration, the main loop. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "agent.h"
#include "clock.h"
#include "dra-slices.h"
#include "dra.h"
#include "fileio.h"
#include "jsonread.h"
#include "log.h"
#include "plugin.h"
#include "podresources.h"
#include "sockfile.h"
#include "state.h"

/* A DNS subdomain: the node's name is its pool's, and part of API paths. */
static bool node_name_valid(const char *s) {
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= 253 && all_chars(s, n, "-.", false) && s[0] != '-' && s[0] != '.' &&
           s[n - 1] != '-' && s[n - 1] != '.';
}

int dra_driver_new(const NodeConfig *c, const Inventory *inv, KubeClient *kube, const char *node,
                   DraDriver **ret) {
    _cleanup_(dra_driver_freep) DraDriver *d = calloc(1, sizeof(*d));
    int r;

    if (!d)
        return -ENOMEM;
    if (!node_name_valid(node))
        return -EINVAL;
    d->config = c;
    d->inv = inv;
    d->kube = kube;
    d->driver = c->domain;
    snprintf(d->node, sizeof(d->node), "%s", node);
    /* names of their own at every start, as kubelet's rolling-update
     * support expects (<driver>-<id>-reg.sock, dra-<id>.sock): a new agent
     * registers next to an old one that still serves, never over it */
    r = sockfile_name("", "", d->id, sizeof(d->id));
    if (r < 0)
        return r;
    if ((size_t)snprintf(d->reg_sock, sizeof(d->reg_sock),
                         "%s/" DRA_REGISTRY_DIR "/%s-%s" DRA_REG_SUFFIX, c->kubelet_dir, d->driver,
                         d->id) >= sizeof(d->reg_sock) ||
        (size_t)snprintf(d->dra_sock, sizeof(d->dra_sock),
                         "%s/" DRA_PLUGINS_DIR "/%s/" DRA_SOCK_PREFIX "%s.sock", c->kubelet_dir,
                         d->driver, d->id) >= sizeof(d->dra_sock))
        return -ENAMETOOLONG;
    *ret = TAKE_PTR(d);
    return 0;
}

static int parent_mkdir(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');

    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    return fileio_mkdir_p(dir, 0750);
}

static int serve(DraDriver *d, const char *path, const RpcMethod *methods, size_t n,
                 RpcServer **server, ino_t *ino) {
    struct stat st;
    int r;

    r = parent_mkdir(path);
    if (r < 0)
        return r;
    r = rpc_server_start(path, methods, n, d, server);
    if (r < 0)
        return r;
    *ino = stat(path, &st) == 0 ? st.st_ino : 0;
    return 0;
}

static void swept(const char *path, void *userdata) {
    (void)userdata;
    log_info(NULL, NULL, "removed %s: nobody serves it", path);
}

/* Sockets of this driver that nobody serves (an agent killed, or an older
 * version's fixed names): kubelet's plugin watcher would keep dialing them. */
static void sweep(const DraDriver *d) {
    char dir[PATH_MAX], prefix[128], legacy[128];

    snprintf(dir, sizeof(dir), "%s/" DRA_REGISTRY_DIR, d->config->kubelet_dir);
    snprintf(prefix, sizeof(prefix), "%s-", d->driver);
    snprintf(legacy, sizeof(legacy), "%s" DRA_REG_SUFFIX, d->driver);
    (void)sockfile_sweep(dir, prefix, DRA_REG_SUFFIX, legacy, swept, NULL);
    snprintf(dir, sizeof(dir), "%s/" DRA_PLUGINS_DIR "/%s", d->config->kubelet_dir, d->driver);
    (void)sockfile_sweep(dir, DRA_SOCK_PREFIX, ".sock", "dra.sock", swept, NULL);
}

int dra_driver_start(DraDriver *d) {
    int r;

    r = state_dir_ensure(d->config->state_dir);
    if (r < 0)
        return r;
    sweep(d);
    /* the service first: kubelet dials it as soon as it has the info */
    r = serve(d, d->dra_sock, dra_plugin_methods, dra_n_plugin_methods, &d->dra, &d->dra_ino);
    if (r < 0)
        return r;
    return serve(d, d->reg_sock, dra_registration_methods, dra_n_registration_methods, &d->reg,
                 &d->reg_ino);
}

static bool still_ours(const char *path, ino_t ino) {
    struct stat st;

    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino;
}

int dra_driver_check_sockets(DraDriver *d) {
    int n = 0, r;

    if (d->dra && !still_ours(d->dra_sock, d->dra_ino)) {
        rpc_server_stop(d->dra);
        d->dra = NULL;
        r = serve(d, d->dra_sock, dra_plugin_methods, dra_n_plugin_methods, &d->dra, &d->dra_ino);
        if (r < 0)
            return r;
        n++;
    }
    if (d->reg && (n > 0 || !still_ours(d->reg_sock, d->reg_ino))) {
        /* a new registration socket makes kubelet register us again */
        rpc_server_stop(d->reg);
        d->reg = NULL;
        atomic_store(&d->registered, 0);
        r = serve(d, d->reg_sock, dra_registration_methods, dra_n_registration_methods, &d->reg,
                  &d->reg_ino);
        if (r < 0)
            return r;
        n++;
    }
    return n;
}

void dra_driver_stop(DraDriver *d) {
    /* the registration first: kubelet stops sending work before the service goes */
    rpc_server_stop(d->reg);
    d->reg = NULL;
    rpc_server_stop(d->dra);
    d->dra = NULL;
}

void dra_driver_free(DraDriver *d) {
    if (!d)
        return;
    dra_driver_stop(d);
    free(d);
}

/* ---- the node agent in DRA mode ---- */

/* Health as the device plugin sees it (GPU nodes, NIC link), for the slices' taints. */
static void refresh_health(const DraDriver *d, SlicePublisher *pub) {
    const Plugin view = {.config = d->config, .inv = d->inv};
    size_t n = d->inv->n_units;
    _cleanup_free_ bool *healthy = calloc(n ? n : 1, sizeof(bool));
    _cleanup_free_ const char **reasons = calloc(n ? n : 1, sizeof(char *));

    if (!healthy || !reasons)
        return;
    for (size_t i = 0; i < n; i++)
        healthy[i] = unit_health_now(&view, &d->inv->units[i], &reasons[i]);
    slice_publisher_set_health(pub, healthy, reasons);
}

static void sync_netdata(NetData *nd) {
    RgError err = {0};
    unsigned n = 0;
    int r = netdata_sync(nd, &n, &err);

    if (r < 0)
        log_warn(NULL, NULL, "networkData: %s (tried again soon)", err.msg);
    else if (n > 0)
        log_info(NULL, NULL, "networkData: %u claim(s) written", n);
}

static void sweep_claims(DraDriver *d) {
    RgError err = {0};
    int r = dra_claims_sweep(d, NULL, &err);

    if (r < 0)
        log_warn(NULL, NULL, "stale prepared claims not checked: %s (tried again soon)", err.msg);
}

static int loop(DraDriver *d, SlicePublisher *pub, NetData *nd) {
    _cleanup_close_ int sfd = -EBADF;
    unsigned ticks = 0;
    sigset_t mask;

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return log_error(NULL, NULL, -errno, "signalfd: %m");
    for (uint64_t next = clock_monotonic_ms();;) {
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
                              {.fd = netdata_fd(nd), .events = POLLIN}};
        struct signalfd_siginfo si;
        int r = poll(p, 2, clock_left_ms(next));
        if (r < 0 && errno != EINTR)
            return log_error(NULL, NULL, -errno, "poll: %m");
        if (r > 0 && (p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si)) {
            if (si.ssi_signo == SIGHUP) {
                log_info(NULL, NULL, "SIGHUP: binding both sockets anew");
                d->reg_ino = d->dra_ino = 0;
            } else {
                log_info(NULL, NULL, "signal %u: stopping", si.ssi_signo);
                return 0;
            }
        }
        /* a CNI command moved NICs (its report is best effort: reconciled anyway) */
        if (r > 0 && (p[1].revents & POLLIN) && netdata_kicked(nd))
            sync_netdata(nd);
        if (clock_left_ms(next) > 0)
            continue;
        next = clock_monotonic_ms() + 1000; /* once a second: */
        if (ticks % DRA_SWEEP_EVERY_S == 0 || atomic_exchange(&d->sweep_soon, false))
            sweep_claims(d);
        if (ticks % DRA_NETDATA_EVERY_S == 0)
            sync_netdata(nd);
        if (ticks++ % DRA_HEALTH_EVERY_S == 0)
            refresh_health(d, pub);
        slice_publisher_tick(pub);
        /* kubelet's cleanup or an operator may remove a socket: bind it again */
        r = dra_driver_check_sockets(d);
        if (r < 0)
            log_error(NULL, NULL, r, "cannot bind the DRA sockets again: %s", strerror(-r));
        else if (r > 0)
            log_info(NULL, NULL, "bound %d DRA socket(s) again", r);
    }
}

int dra_main(const NodeConfig *c, const Inventory *inv, const char *pod_resources) {
    _cleanup_(kube_client_freep) KubeClient *kube = NULL;
    _cleanup_(dra_driver_freep) DraDriver *d = NULL;
    _cleanup_(slice_publisher_stopp) SlicePublisher *pub = NULL;
    _cleanup_(podresources_freep) PodResources *pr = NULL;
    _cleanup_(netdata_freep) NetData *nd = NULL;
    _cleanup_(holdings_freep) Holdings *h = NULL;
    _cleanup_(agent_stopp) Agent *agent = NULL; /* stopped before h and nd are freed */
    const char *node = getenv(DRA_NODE_NAME_ENV);
    RgError err = {0};
    int r;

    if (!node || !*node)
        return log_error(NULL, NULL, -EINVAL,
                         "DRA mode needs this node's name in " DRA_NODE_NAME_ENV
                         " (the DaemonSet sets it from spec.nodeName)");
    r = kube_client_from_env(&kube, &err);
    if (r < 0)
        return log_error(NULL, NULL, r, "no Kubernetes API: %s", err.msg);
    r = dra_driver_new(c, inv, kube, node, &d);
    if (r < 0)
        return log_error(NULL, NULL, r, "%s=\"%.64s\": not a node name, or paths too long",
                         DRA_NODE_NAME_ENV, node);
    /* the CNI's question is answered from the claims prepared here, by pod uid */
    r = podresources_new(pod_resources, NULL, &pr);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the PodResources client for %s",
                         pod_resources);
    d->podresources = pr;
    r = netdata_new(d, &nd);
    if (r >= 0)
        r = holdings_new_claims(c, netdata_kick, nd, &h);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the agent: %s", strerror(-r));
    r = agent_serve(c, h, &agent);
    if (r < 0)
        return r;
    r = dra_driver_start(d);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot serve %s and %s: %s", d->dra_sock, d->reg_sock,
                         strerror(-r));
    r = slice_publisher_start(kube, inv, d->driver, d->node, &pub);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot start publishing ResourceSlices: %s", strerror(-r));
    log_info(NULL, NULL, "DRA driver %s for node %s: %zu units; registration at %s, API %s",
             d->driver, d->node, inv->n_units, d->reg_sock, kube_client_server(kube));
    return loop(d, pub, nd);
}
