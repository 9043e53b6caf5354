/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA driver's life: its two sockets, kubelet's registration, the main loop. */
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agent.h"
#include "clock.h"
#include "dra-slices.h"
#include "dra.h"
#include "failpoint.h"
#include "fileio.h"
#include "jsonread.h"
#include "log.h"
#include "health.h"
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
    /* one server for both services: kubelet dials the health service on the
     * DRAPlugin's endpoint; the table outlives the servers that serve it */
    d->n_service = dra_n_plugin_methods + dra_n_health_methods;
    d->service = calloc(d->n_service, sizeof(RpcMethod));
    if (!d->service)
        return -ENOMEM;
    memcpy(d->service, dra_plugin_methods, dra_n_plugin_methods * sizeof(RpcMethod));
    memcpy(d->service + dra_n_plugin_methods, dra_health_methods,
           dra_n_health_methods * sizeof(RpcMethod));
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
    r = serve(d, d->dra_sock, d->service, d->n_service, &d->dra, &d->dra_ino);
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
        r = serve(d, d->dra_sock, d->service, d->n_service, &d->dra, &d->dra_ino);
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
    free(d->service);
    free(d);
}

/* ---- the DRA front of the node agent ---- */

struct DraFront {
    const NodeConfig *config;
    const Inventory *inv;
    EvLoop *ev;
    Health *health; /* borrowed: the agent's one health module */
    KubeClient *kube;
    DraDriver *d;
    SlicePublisher *pub;
    PodResources *pr;
    NetData *nd;
    Holdings *h;
    Agent *agent;
    int tick_timer, health_timer, resend_timer;
    unsigned ticks;
    bool tick_off_logged;
    uint64_t health_published_ms; /* a change last republished; 0: none yet */
};

/* The units' health as the health module last read it, to the slices. */
static void publish_health(DraFront *f) {
    size_t n = f->inv->n_units;
    _cleanup_free_ bool *healthy = calloc(n ? n : 1, sizeof(bool));
    _cleanup_free_ const char **reasons = calloc(n ? n : 1, sizeof(char *));

    if (!healthy || !reasons)
        return;
    health_read(f->health, healthy, reasons);
    slice_publisher_set_health(f->pub, healthy, reasons);
}

static void broadcast_health(DraFront *f) {
    int r = dra_health_broadcast(f->d);

    if (r < 0)
        log_warn(NULL, NULL, "units' health not sent to kubelet: %s (sent again soon)",
                 strerror(-r));
}

/* Kubelet's lease on each device's health (DRA_HEALTH_TIMEOUT_S) renewed
 * with the full list: a timer of its own, not the tick's work, so that the
 * dra-tick failpoint that turns the tick off leaves it running. */
static void on_resend(void *userdata) {
    DraFront *f = userdata;

    ev_loop_timer_at(f->ev, f->resend_timer, clock_monotonic_ms() + DRA_HEALTH_RESEND_S * 1000);
    broadcast_health(f);
}

/* The coalescing window has passed: the taints follow now, not at a tick. */
static void on_health_timer(void *userdata) {
    DraFront *f = userdata;

    publish_health(f);
    f->health_published_ms = clock_monotonic_ms();
    slice_publisher_tick(f->pub); /* reconciles now (its own backoff aside) */
}

/* A unit turned (a link event, a marker, a GPU node): republish after
 * DRA_HEALTH_COALESCE_MS, and no sooner than DRA_HEALTH_MIN_GAP_MS after
 * the last health republished, so that a flapping link costs the API
 * server one write per gap at most; what turns meanwhile goes out with it. */
static void on_health(void *userdata, const bool *dirty_tenants) {
    DraFront *f = userdata;
    uint64_t at = clock_monotonic_ms() + DRA_HEALTH_COALESCE_MS;

    (void)dirty_tenants;
    /* kubelet at once: a stream costs the API server nothing, and a slow
     * reader gets the newest list, never a backlog */
    broadcast_health(f);
    if (ev_loop_timer_armed(f->ev, f->health_timer))
        return;
    if (f->health_published_ms && f->health_published_ms + DRA_HEALTH_MIN_GAP_MS > at)
        at = f->health_published_ms + DRA_HEALTH_MIN_GAP_MS;
    ev_loop_timer_at(f->ev, f->health_timer, at);
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

/* A CNI command moved NICs (its report is best effort: reconciled anyway). */
static void on_netdata(void *userdata, short revents) {
    DraFront *f = userdata;

    (void)revents;
    if (netdata_kicked(f->nd))
        sync_netdata(f->nd);
}

/* Once a second: what no event tells (health is not among it). */
static void on_tick(void *userdata) {
    DraFront *f = userdata;
    DraDriver *d = f->d;
    int r;

    ev_loop_timer_at(f->ev, f->tick_timer, clock_monotonic_ms() + 1000);
    if (failpoint("dra-tick") < 0) { /* a test turns it off: what still happens is event-driven */
        if (!f->tick_off_logged)
            log_debug(NULL, NULL, "periodic work off (failpoint %s)", failpoint_name());
        f->tick_off_logged = true;
        return;
    }
    if (f->ticks % DRA_SWEEP_EVERY_S == 0 || atomic_exchange(&d->sweep_soon, false))
        sweep_claims(d);
    if (f->ticks++ % DRA_NETDATA_EVERY_S == 0 || netdata_left_busy(f->nd))
        sync_netdata(f->nd);
    slice_publisher_tick(f->pub); /* a failed write retried after its backoff */
    /* kubelet's cleanup or an operator may remove a socket: bind it again */
    r = dra_driver_check_sockets(d);
    if (r < 0)
        log_error(NULL, NULL, r, "cannot bind the DRA sockets again: %s", strerror(-r));
    else if (r > 0)
        log_info(NULL, NULL, "bound %d DRA socket(s) again", r);
}

void dra_front_hup(DraFront *f) {
    log_info(NULL, NULL, "SIGHUP: binding both sockets anew");
    f->d->reg_ino = f->d->dra_ino = 0;
}

void dra_front_free(DraFront *f) {
    if (!f)
        return;
    health_subscribe(f->health, NULL, NULL);
    agent_stop(f->agent); /* before h and nd are freed */
    holdings_free(f->h);
    netdata_free(f->nd);
    podresources_free(f->pr);
    slice_publisher_stop(f->pub);
    dra_driver_free(f->d);
    kube_client_free(f->kube);
    free(f);
}

int dra_front_start(const NodeConfig *c, const Inventory *inv, const char *pod_resources,
                    EvLoop *ev, Health *health, DraFront **ret) {
    _cleanup_(dra_front_freep) DraFront *f = calloc(1, sizeof(*f));
    const char *node = getenv(DRA_NODE_NAME_ENV);
    RgError err = {0};
    DraDriver *d;
    int r;

    if (!f)
        return log_error(NULL, NULL, -ENOMEM, "out of memory");
    f->config = c;
    f->inv = inv;
    f->ev = ev;
    f->health = health;
    if (!node || !*node)
        return log_error(NULL, NULL, -EINVAL,
                         "DRA mode needs this node's name in " DRA_NODE_NAME_ENV
                         " (the DaemonSet sets it from spec.nodeName)");
    r = kube_client_from_env(&f->kube, &err);
    if (r < 0)
        return log_error(NULL, NULL, r, "no Kubernetes API: %s", err.msg);
    r = dra_driver_new(c, inv, f->kube, node, &f->d);
    if (r < 0)
        return log_error(NULL, NULL, r, "%s=\"%.64s\": not a node name, or paths too long",
                         DRA_NODE_NAME_ENV, node);
    d = f->d;
    d->health = health; /* before the socket is served: NodeWatchResources reads it */
    /* the CNI's question is answered from the claims prepared here, by pod uid */
    r = podresources_new(pod_resources, NULL, &f->pr);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the PodResources client for %s",
                         pod_resources);
    d->podresources = f->pr;
    r = netdata_new(d, &f->nd);
    if (r >= 0)
        r = holdings_new_claims(c, netdata_kick, f->nd, &f->h);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot set up the agent: %s", strerror(-r));
    r = agent_serve(c, f->h, &f->agent);
    if (r < 0)
        return r;
    r = dra_driver_start(d);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot serve %s and %s: %s", d->dra_sock, d->reg_sock,
                         strerror(-r));
    r = slice_publisher_start(f->kube, inv, d->driver, d->node, &f->pub);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot start publishing ResourceSlices: %s", strerror(-r));
    r = f->tick_timer = ev_loop_add_timer(ev, on_tick, f);
    if (r >= 0)
        r = f->health_timer = ev_loop_add_timer(ev, on_health_timer, f);
    if (r >= 0)
        r = f->resend_timer = ev_loop_add_timer(ev, on_resend, f);
    if (r >= 0)
        r = ev_loop_add_fd(ev, netdata_fd(f->nd), POLLIN, on_netdata, f);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot join the agent's loop");
    log_info(NULL, NULL, "DRA driver %s for node %s: %zu units; registration at %s, API %s",
             d->driver, d->node, inv->n_units, d->reg_sock, kube_client_server(f->kube));
    health_subscribe(health, on_health, f);
    publish_health(f);                                         /* the health read at the start */
    ev_loop_timer_at(ev, f->tick_timer, clock_monotonic_ms()); /* the first tick at once */
    ev_loop_timer_at(ev, f->resend_timer, clock_monotonic_ms() + DRA_HEALTH_RESEND_S * 1000);
    *ret = TAKE_PTR(f);
    return 0;
}
