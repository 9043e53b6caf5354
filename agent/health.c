/* SPDX-License-Identifier: Apache-2.0 */
/* Unit health: the rail NIC's link state and the presence of the GPU's device nodes and of the
 * RDMA device's uverbs node, re-read on the events that change them (link events, the units'
 * markers, the device nodes' dirs). */
#include "health.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/inotify.h>

#include "agentmetrics.h"
#include "log.h"
#include "netlink.h"
#include "state.h"
#include "strv.h"

#define INOTIFY_DIR_MASK                                                                           \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |            \
     IN_MOVE_SELF)
#define UNITS_DIR_NAME "units"

struct Health {
    const NodeConfig *config;
    const Inventory *inv;
    health_changed_fn changed;
    void *userdata;

    pthread_mutex_t lock;        /* healthy[] and reasons[] against the fronts' threads */
    bool *healthy;               /* per inventory unit */
    const char **reasons;        /* per unit, static text or uverbs_reasons[i] */
    char (*uverbs_reasons)[112]; /* per unit, set once: its RDMA device has no uverbs node */
    uint64_t changes;            /* count, for tests and logs */
    bool ready;                  /* every unit's health read once: changes now are transitions */

    /* the loop thread's alone */
    EvLoop *loop;
    Netlink *nl; /* for the lookups; NULL: one per lookup */
    LinkMonitor *links;
    int links_id;     /* its slot on the loop */
    int ifd;          /* inotify: the markers' dir and the GPU nodes' dirs */
    int units_wd;     /* <stateDir>/units, -1 while it is missing */
    int state_wd;     /* stateDir, while units is missing */
    bool all;         /* every unit's health to re-read */
    bool *unit_dirty; /* per inventory unit: its marker changed */
    bool any_dirty;
};

int health_new(const NodeConfig *c, const Inventory *inv, Health **ret) {
    _cleanup_(health_freep) Health *h = calloc(1, sizeof(*h));
    size_t n = inv->n_units ? inv->n_units : 1;

    if (!h)
        return -ENOMEM;
    pthread_mutex_init(&h->lock, NULL);
    h->config = c;
    h->inv = inv;
    h->ifd = h->units_wd = h->state_wd = h->links_id = -1;
    h->healthy = calloc(n, sizeof(bool));
    h->reasons = calloc(n, sizeof(char *));
    h->unit_dirty = calloc(n, sizeof(bool));
    h->uverbs_reasons = calloc(n, sizeof(*h->uverbs_reasons));
    if (!h->healthy || !h->reasons || !h->unit_dirty || !h->uverbs_reasons)
        return -ENOMEM;
    for (size_t i = 0; i < inv->n_units; i++)
        snprintf(h->uverbs_reasons[i], sizeof(h->uverbs_reasons[i]),
                 "RDMA device %.63s has no uverbs device node", inv->units[i].rdma);
    *ret = TAKE_PTR(h);
    return 0;
}

void health_free(Health *h) {
    if (!h)
        return;
    netlink_close(h->nl);
    link_monitor_free(h->links);
    if (h->ifd >= 0)
        close(h->ifd);
    free(h->unit_dirty);
    free(h->uverbs_reasons);
    free(h->reasons);
    free(h->healthy);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void health_subscribe(Health *h, health_changed_fn fn, void *userdata) {
    h->changed = fn;
    h->userdata = userdata;
}

static bool gpu_present(const Health *h, const Unit *u, const char **ret_reason) {
    char host[PATH_MAX];

    if (!u->gpu_devices) {
        *ret_reason = "no device node known for the GPU";
        return false;
    }
    for (char **d = u->gpu_devices; *d; d++) {
        snprintf(host, sizeof(host), "%s%s", h->config->dev_root, *d);
        if (access(host, F_OK) < 0) {
            *ret_reason = "GPU device node missing";
            return false;
        }
    }
    return true;
}

/* The reason text made for u in health_new(), if u is one of the inventory's units. */
static const char *uverbs_reason(const Health *h, const Unit *u) {
    uintptr_t first = (uintptr_t)h->inv->units, at = (uintptr_t)u;

    if (h->inv->n_units && at >= first && at < (uintptr_t)(h->inv->units + h->inv->n_units))
        return h->uverbs_reasons[(at - first) / sizeof(Unit)];
    return "RDMA device has no uverbs device node";
}

/* The uverbs node of the unit's RDMA device, what a verbs job opens: known
 * (sysfs had it at start) and in /dev now. */
static bool uverbs_present(const Health *h, const Unit *u, const char **ret_reason) {
    char host[PATH_MAX];

    if (u->uverbs[0] &&
        (size_t)snprintf(host, sizeof(host), "%s/dev/infiniband/%s", h->config->dev_root,
                         u->uverbs) < sizeof(host) &&
        access(host, F_OK) >= 0)
        return true;
    *ret_reason = uverbs_reason(h, u);
    return false;
}

bool health_unit_now(const Health *h, const Unit *u, const char **ret_reason) {
    _cleanup_(netlink_closep) Netlink *own = NULL;
    Netlink *nl = h->nl;
    Link l;
    int r;

    *ret_reason = "ok";
    if (u->has_gpu && !gpu_present(h, u, ret_reason))
        return false;
    if (u->rdma[0] && !uverbs_present(h, u, ret_reason))
        return false;
    if (!u->health_netdev[0]) {
        *ret_reason = "NIC netdev unknown";
        return false;
    }
    r = nl ? 0 : netlink_open(-1, &own);
    if (r >= 0)
        r = link_get_by_name(nl ?: own, u->health_netdev, &l);
    if (r == -ENODEV && !u->is_vf && state_unit_attached(h->config->state_dir, u->id)) {
        /* railgate moved it into a pod: in use, not broken */
        *ret_reason = "NIC attached to a pod";
        return true;
    }
    /* a VF unit is as healthy as its PF's link: the VF's own is the pod's
     * (and follows the PF's where its link state is "auto") */
    if (r < 0) {
        *ret_reason = r != -ENODEV ? "NIC state unreadable"
                      : u->is_vf   ? "PF missing"
                                   : "NIC missing";
        return false;
    }
    if (!link_healthy(&l)) {
        if (l.flags & IFF_UP)
            *ret_reason = u->is_vf ? "PF has no carrier" : "NIC has no carrier";
        else
            *ret_reason = u->is_vf ? "PF link down" : "NIC link down";
        return false;
    }
    return true;
}

/* Re-read unit i; marks its tenant dirty when its health changed. */
static void refresh_one(Health *h, size_t i, bool *dirty) {
    const Unit *u = &h->inv->units[i];
    const char *reason;
    bool now = health_unit_now(h, u, &reason);

    pthread_mutex_lock(&h->lock);
    bool changed = h->healthy[i] != now;
    h->healthy[i] = now;
    h->reasons[i] = reason;
    if (changed)
        h->changes++;
    pthread_mutex_unlock(&h->lock);
    if (!changed)
        return;
    if (h->ready)
        metrics_health_transition(h->config->tenants[u->tenant].name, now);
    dirty[u->tenant] = true;
    log_info(h->config->tenants[u->tenant].name, u->id, "%s: %s", now ? "Healthy" : "Unhealthy",
             reason);
}

/* The tenant's units by health, for the metrics. Loop thread: it alone writes healthy[]. */
static void publish_units(const Health *h, size_t t) {
    unsigned healthy = 0, n = 0;

    for (size_t i = 0; i < h->inv->n_units; i++)
        if (h->inv->units[i].tenant == t) {
            n++;
            healthy += h->healthy[i];
        }
    metrics_units(h->config->tenants[t].name, healthy, n - healthy);
}

/* Tell the metrics and the front of the tenants whose units changed (every
 * tenant at the first reading). */
static void changed(Health *h, const bool *dirty) {
    bool any = !h->ready;

    for (size_t t = 0; t < h->config->n_tenants; t++) {
        if (!dirty[t] && h->ready)
            continue;
        publish_units(h, t);
        any |= dirty[t];
    }
    if (any && h->changed)
        h->changed(h->userdata, dirty);
}

void health_refresh(Health *h, const char *netdev) {
    bool dirty[CONFIG_MAX_TENANTS] = {false};

    for (size_t i = 0; i < h->inv->n_units; i++) {
        const Unit *u = &h->inv->units[i];
        if (netdev && !streq(u->health_netdev, netdev) && !streq(u->netdev, netdev))
            continue;
        refresh_one(h, i, dirty);
    }
    changed(h, dirty);
    if (!netdev)
        h->ready = true;
}

void health_refresh_units(Health *h, const bool *which) {
    bool dirty[CONFIG_MAX_TENANTS] = {false};

    for (size_t i = 0; i < h->inv->n_units; i++)
        if (which[i])
            refresh_one(h, i, dirty);
    changed(h, dirty);
}

void health_read(Health *h, bool *healthy, const char **reasons) {
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->inv->n_units; i++) {
        if (healthy)
            healthy[i] = h->healthy[i];
        if (reasons)
            reasons[i] = h->reasons[i] ?: "not read yet";
    }
    pthread_mutex_unlock(&h->lock);
}

bool health_healthy(Health *h, size_t unit) {
    pthread_mutex_lock(&h->lock);
    bool ok = unit < h->inv->n_units && h->healthy[unit];
    pthread_mutex_unlock(&h->lock);
    return ok;
}

uint64_t health_changes(Health *h) {
    pthread_mutex_lock(&h->lock);
    uint64_t n = h->changes;
    pthread_mutex_unlock(&h->lock);
    return n;
}

void health_set(Health *h, size_t unit, bool healthy, const char *reason) {
    pthread_mutex_lock(&h->lock);
    if (unit < h->inv->n_units) {
        h->healthy[unit] = healthy;
        h->reasons[unit] = reason;
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- the events that change health ---- */

/* Watch <stateDir>/units, or stateDir while units is missing. */
static void units_watch(Health *h) {
    char dir[PATH_MAX];

    if (h->units_wd >= 0)
        return;
    snprintf(dir, sizeof(dir), "%s/" UNITS_DIR_NAME, h->config->state_dir);
    h->units_wd = inotify_add_watch(h->ifd, dir, INOTIFY_DIR_MASK);
    if (h->units_wd < 0) {
        if (h->state_wd < 0)
            h->state_wd = inotify_add_watch(h->ifd, h->config->state_dir,
                                            IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF);
        return;
    }
    if (h->state_wd >= 0)
        (void)inotify_rm_watch(h->ifd, h->state_wd);
    h->state_wd = -1;
    h->all = true; /* markers may have come and gone meanwhile */
}

static void dir_watch(Health *h, char ***dirs, const char *path) {
    char host[PATH_MAX];

    snprintf(host, sizeof(host), "%s%s", h->config->dev_root, path);
    char *slash = strrchr(host, '/');
    if (slash && slash != host)
        *slash = 0;
    if (!strv_contains(*dirs, host) && strv_push(dirs, host) >= 0)
        (void)inotify_add_watch(h->ifd, host, INOTIFY_DIR_MASK);
}

/* The GPU device nodes' and the uverbs nodes' directories: a node that
 * comes or goes changes health. */
static void gpu_dirs_watch(Health *h) {
    char **dirs = NULL;

    for (size_t i = 0; i < h->inv->n_units; i++) {
        for (char **d = h->inv->units[i].gpu_devices; d && *d; d++)
            dir_watch(h, &dirs, *d);
        if (h->inv->units[i].rdma[0])
            dir_watch(h, &dirs, "/dev/infiniband/uverbs");
    }
    strv_free(dirs);
}

/* A marker's file name is its unit's id; anything else re-reads every unit. */
static void units_event(Health *h, const struct inotify_event *ev) {
    const Unit *u = ev->len ? inventory_find(h->inv, ev->name) : NULL;

    if (!u) {
        h->all = true;
        return;
    }
    h->unit_dirty[u - h->inv->units] = true;
    h->any_dirty = true;
}

static void inotify_event(Health *h, const struct inotify_event *ev) {
    if (ev->mask & IN_Q_OVERFLOW)
        h->all = true;
    else if (ev->wd == h->units_wd) {
        if (ev->mask & IN_IGNORED) {
            h->units_wd = -1;
            h->all = true;
        } else if (!(ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
            units_event(h, ev);
    } else if (ev->wd == h->state_wd) {
        if (ev->mask & IN_IGNORED)
            h->state_wd = -1;
    } else if (!(ev->mask & IN_IGNORED))
        h->all = true; /* a GPU or uverbs device node dir */
}

static void on_inotify(void *userdata, short revents) {
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    Health *h = userdata;
    ssize_t n;

    (void)revents;
    while ((n = read(h->ifd, buf, sizeof(buf))) > 0)
        for (char *q = buf; q < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)q;
            inotify_event(h, ev);
            q += sizeof(*ev) + ev->len;
        }
}

static void on_link_event(void *userdata, const LinkEvent *ev) {
    health_refresh(userdata, ev->link.name);
}

/* Read link events: the units of the NIC re-read at once. On overrun
 * re-read every unit, on a broken socket open a new one. POLLERR alone (an
 * overrun with nothing queued) comes here too: reading clears it, so the
 * loop never spins on it. */
static void on_links(void *userdata, short revents) {
    Health *h = userdata;
    int r = link_monitor_dispatch(h->links, on_link_event, h);

    (void)revents;
    if (r == -ENOBUFS) {
        log_warn(NULL, NULL, "link events lost: re-reading every rail NIC");
        h->all = true;
    } else if (r < 0) {
        log_warn(NULL, NULL, "link event socket failed (%s): opening a new one", strerror(-r));
        link_monitor_free(TAKE_PTR(h->links));
        r = link_monitor_new(&h->links);
        if (r < 0)
            log_error(NULL, NULL, r, "cannot follow link events: re-reading on other events only");
        h->all = true;
    }
    ev_loop_set_fd(h->loop, h->links_id, h->links ? link_monitor_fd(h->links) : -1);
}

/* After each turn of the loop: what the events marked, re-read. */
static void on_check(void *userdata) {
    Health *h = userdata;

    units_watch(h);
    if (h->all) {
        gpu_dirs_watch(h); /* one may have been recreated */
        health_refresh(h, NULL);
    } else if (h->any_dirty)
        health_refresh_units(h, h->unit_dirty);
    if (h->all || h->any_dirty)
        memset(h->unit_dirty, 0, h->inv->n_units * sizeof(bool));
    h->all = h->any_dirty = false;
}

int health_start(Health *h, EvLoop *l) {
    int r;

    h->loop = l;
    h->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (h->ifd < 0)
        return log_error(NULL, NULL, -errno, "inotify: %m");
    r = link_monitor_new(&h->links);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot follow link events");
    r = netlink_open(-1, &h->nl);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot open a netlink socket");
    r = ev_loop_add_fd(l, h->ifd, POLLIN, on_inotify, h);
    if (r >= 0)
        r = h->links_id = ev_loop_add_fd(l, link_monitor_fd(h->links), POLLIN, on_links, h);
    if (r >= 0)
        r = ev_loop_add_check(l, on_check, h);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot follow health events");
    gpu_dirs_watch(h);
    units_watch(h);
    health_refresh(h, NULL);
    h->all = false;
    return 0;
}
