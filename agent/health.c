/* SPDX-License-Identifier: Apache-2.0 */
/* Unit health: the rail NIC's link state, on the host or in the pod that holds it, and the presence
 * of the GPU's device nodes and of the RDMA device's uverbs node, re-read on the events that change
 * them (link events, the host's and every namespace's the host has an id for, the units' markers,
 * the device nodes' dirs). */
#include "health.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/inotify.h>

#include "agentmetrics.h"
#include "clock.h"
#include "log.h"
#include "netlink.h"
#include "podnic.h"
#include "state.h"
#include "strv.h"

#define INOTIFY_DIR_MASK                                                                           \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |            \
     IN_MOVE_SELF)
#define UNITS_DIR_NAME "units"
/* how soon a unit read while the CNI works on its attachment is read again */
#define HEALTH_BUSY_RETRY_MS 100
/* Link events come in bursts: a CNI moving a pod's NICs makes several per
 * NIC, ~20 ms apart, and reading the units they name at each one (the link,
 * the pod's record) takes the CPU and RTNL that the moves wait for (an
 * 8-rail DEL took 1.26x as long with the reads as without). The units'
 * markers are part of the same burst: an ADD writes them right before its
 * first move, a DEL removes them after its last. What a burst names is
 * read once it is over: HEALTH_SETTLE_MS after its last event, and no
 * later than HEALTH_SETTLE_MAX_MS after its first. */
#define HEALTH_SETTLE_MS 50
#define HEALTH_SETTLE_MAX_MS 500

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
    uint64_t reads;              /* units read, for tests */
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
    bool *in_pod;        /* per unit: its NIC was last read in the pod holding it */
    PodNicCache *podnic; /* per unit: where that was */
    bool pods_dirty;     /* a link changed somewhere: re-read the in_pod units */
    bool pods_busy;      /* a unit in a pod read while the CNI works on its attachment */
    int busy_timer;      /* re-reads them once it may be done */
    bool *link_dirty;    /* per unit: a link or marker event named it, not yet read */
    bool links_lost;     /* the link event socket overran: every unit, once the burst is over */
    int settle_timer;    /* reads them once the burst of events is over */
    uint64_t burst_ms;   /* when the burst's first event came */
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
    h->in_pod = calloc(n, sizeof(bool));
    h->podnic = calloc(n, sizeof(PodNicCache));
    h->link_dirty = calloc(n, sizeof(bool));
    if (!h->healthy || !h->reasons || !h->unit_dirty || !h->uverbs_reasons || !h->in_pod ||
        !h->podnic || !h->link_dirty)
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
    free(h->link_dirty);
    free(h->podnic);
    free(h->in_pod);
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

/* The uverbs node of the unit's RDMA device, what a verbs job opens: known
 * (sysfs had it at start) and in /dev now. */
static bool uverbs_present(const Health *h, size_t i, const char **ret_reason) {
    const Unit *u = &h->inv->units[i];
    char host[PATH_MAX];

    if (u->uverbs[0] &&
        (size_t)snprintf(host, sizeof(host), "%s/dev/infiniband/%s", h->config->dev_root,
                         u->uverbs) < sizeof(host) &&
        access(host, F_OK) >= 0)
        return true;
    *ret_reason = h->uverbs_reasons[i];
    return false;
}

/* The record's entry of the unit that the pod holding it has: -ENOENT for
 * none (claimed and not yet recorded: an ADD between the two). */
static int held_nic(const Health *h, const Unit *u, char key[static STATE_KEY_MAX + 1],
                    Attachment **ret_a, const AttachedNic **ret) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    int r;

    r = state_unit_holder(h->config->state_dir, u->id, key, STATE_KEY_MAX + 1);
    if (r >= 0)
        r = state_record_load_key(h->config->state_dir, key, &a);
    if (r < 0)
        return r;
    for (size_t k = 0; k < a->n_nics; k++)
        if (streq(a->nics[k].unit, u->id)) {
            *ret = &a->nics[k];
            *ret_a = TAKE_PTR(a);
            return 0;
        }
    return -ENOENT;
}

/*
 * Is an ADD, DEL, CHECK or GC of attachment key running? A NIC that a DEL
 * or a failed ADD's rollback moves home arrives down (the move closes it)
 * and stays down until its settings are back, so what it reads meanwhile is
 * the CNI's doing, not the rail's: an unhealthy reading then is not shown
 * but retried a little later (busy_timer), once the CNI may be done.
 */
static bool cni_busy(Health *h, const char *key) {
    if (state_attachment_busy(h->config->state_dir, key) <= 0)
        return false;
    h->pods_busy = true;
    return true;
}

/* The same for the attachment a unit's marker names, if any. */
static bool unit_busy(Health *h, const Unit *u) {
    char key[STATE_KEY_MAX + 1];

    return state_unit_holder(h->config->state_dir, u->id, key, sizeof(key)) >= 0 &&
           cni_busy(h, key);
}

/*
 * A unit whose NIC a pod holds: its link where the pod has it, found from
 * the host by the record's identity (podnic.c), never by the pod's names. A
 * NIC that cannot be placed because its namespace is being torn down is on
 * its way home (the host's event re-reads it there), and one whose record
 * is not there (yet) is in use: both read as today, healthy; so does one
 * the CNI is working on (an ADD moving it holds the attachment's lock).
 */
static bool pod_unit_now(Health *h, Netlink *nl, size_t i, const char **ret_reason) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    char key[STATE_KEY_MAX + 1];
    const AttachedNic *n = NULL;
    Link l;
    int r;

    h->in_pod[i] = true;
    *ret_reason = "NIC attached to a pod";
    if (held_nic(h, &h->inv->units[i], key, &a, &n) < 0)
        return true;
    r = podnic_read(nl, n, &h->podnic[i], &l);
    if (r == -EINPROGRESS)
        return true; /* dying: on its way home */
    if (r >= 0 && link_healthy(&l)) {
        *ret_reason = "NIC in its pod";
        return true;
    }
    if (cni_busy(h, key)) {
        *ret_reason = "NIC attached to a pod: the CNI is working on it";
        return true;
    }
    *ret_reason = r >= 0 && (l.flags & IFF_UP)       ? "NIC in its pod: no carrier"
                  : r >= 0                           ? "NIC in its pod: link down"
                  : r == -ENODEV                     ? "NIC missing"
                  : r == -ESTALE || r == -EOPNOTSUPP ? "NIC not found in its pod"
                                                     : "NIC state unreadable";
    return false;
}

bool health_unit_now(Health *h, size_t i, const char **ret_reason) {
    _cleanup_(netlink_closep) Netlink *own = NULL;
    const Unit *u = &h->inv->units[i];
    Netlink *nl = h->nl;
    Link l;
    int r;

    *ret_reason = "ok";
    if (u->has_gpu && !gpu_present(h, u, ret_reason))
        return false;
    if (u->rdma[0] && !uverbs_present(h, i, ret_reason))
        return false;
    if (!u->health_netdev[0]) {
        *ret_reason = "NIC netdev unknown";
        return false;
    }
    r = nl ? 0 : netlink_open(-1, &own);
    if (r >= 0)
        r = link_get_by_name(nl ?: own, u->health_netdev, &l);
    /* railgate moved it into a pod: read it there */
    if (r == -ENODEV && !u->is_vf && state_unit_attached(h->config->state_dir, u->id))
        return pod_unit_now(h, nl ?: own, i, ret_reason);
    h->in_pod[i] = false;
    /* a NIC a DEL or a rollback is bringing home arrives down (the move
     * closes it) until its settings are back: the CNI's doing */
    if ((r < 0 || !link_healthy(&l)) && !u->is_vf && unit_busy(h, u)) {
        *ret_reason = "NIC attached to a pod: the CNI is working on it";
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
    bool now = health_unit_now(h, i, &reason);

    pthread_mutex_lock(&h->lock);
    h->reads++;
    bool changed = h->healthy[i] != now;
    /* the same health for another reason (a NIC followed into its pod, its
     * link down there and then without carrier) is logged; an unhealthy
     * unit's new reason is also sent: the DRA front shows it (the health
     * stream's message, the taint's value) */
    bool why = !changed && h->ready && !streq(h->reasons[i] ?: "", reason);
    h->healthy[i] = now;
    h->reasons[i] = reason;
    if (changed)
        h->changes++;
    pthread_mutex_unlock(&h->lock);
    if (why)
        log_info(h->config->tenants[u->tenant].name, u->id, "%s: %s", now ? "Healthy" : "Unhealthy",
                 reason);
    if (why && !now)
        dirty[u->tenant] = true;
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

/* Whether a link of this name is the unit's NIC or the one its health
 * follows. */
static bool unit_named(const Unit *u, const char *name) {
    return streq(u->health_netdev, name) || streq(u->netdev, name);
}

void health_refresh(Health *h, const char *netdev) {
    bool dirty[CONFIG_MAX_TENANTS] = {false};

    for (size_t i = 0; i < h->inv->n_units; i++)
        if (!netdev || unit_named(&h->inv->units[i], netdev))
            refresh_one(h, i, dirty);
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

uint64_t health_reads(Health *h) {
    pthread_mutex_lock(&h->lock);
    uint64_t n = h->reads;
    pthread_mutex_unlock(&h->lock);
    return n;
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

static void settle_arm(Health *h);

/* A marker's file name is its unit's id: that unit is read once the burst
 * is over. A hidden name is a marker's write in progress (fileio's
 * ".<id>.tmp-XXXXXX", linked or renamed to <id> when complete: that is the
 * event that counts; lib/state never names a marker so); anything else
 * re-reads every unit, at once. */
static void units_event(Health *h, const struct inotify_event *ev) {
    if (ev->len && ev->name[0] == '.')
        return;
    const Unit *u = ev->len ? inventory_find(h->inv, ev->name) : NULL;

    if (!u) {
        h->all = true;
        return;
    }
    h->link_dirty[u - h->inv->units] = true;
    settle_arm(h);
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

/* Another event of the burst: the read waits HEALTH_SETTLE_MS more, up to
 * HEALTH_SETTLE_MAX_MS after the burst's first event. */
static void settle_arm(Health *h) {
    uint64_t now = clock_monotonic_ms();

    if (!ev_loop_timer_armed(h->loop, h->settle_timer))
        h->burst_ms = now;
    uint64_t at = now + HEALTH_SETTLE_MS, last = h->burst_ms + HEALTH_SETTLE_MAX_MS;
    ev_loop_timer_at(h->loop, h->settle_timer, at < last ? at : last);
}

/* A link event names the link as its namespace has it, and which namespace
 * that is does not reach us (libnl drops the control message): the units of
 * that name, and the units in pods, re-read once the burst is over. */
static void on_link_event(void *userdata, const LinkEvent *ev) {
    Health *h = userdata;

    for (size_t i = 0; i < h->inv->n_units; i++)
        if (unit_named(&h->inv->units[i], ev->link.name))
            h->link_dirty[i] = true;
    settle_arm(h);
}

/* The burst is over (or has gone on long enough): what it named, read. */
static void on_settle_timer(void *userdata) {
    Health *h = userdata;

    for (size_t i = 0; i < h->inv->n_units; i++)
        if (h->link_dirty[i]) {
            h->link_dirty[i] = false;
            h->unit_dirty[i] = true;
            h->any_dirty = true;
        }
    if (h->links_lost)
        h->all = true;
    h->links_lost = false;
    h->pods_dirty = true;
}

/* The events of every namespace the host has an id for (a pod's, once
 * railgate moved a NIC there): CAP_NET_BROADCAST, which the agent has. */
static void links_listen_all(Health *h) {
    int r = link_monitor_listen_all_nsid(h->links);

    if (r < 0)
        log_warn(NULL, NULL,
                 "cannot follow the link events of pods' namespaces (%s): NICs in pods re-read on "
                 "marker and host events only",
                 strerror(-r));
}

/* Read link events: the units they name re-read once the burst is over.
 * On overrun every unit, once the burst is over too (a pod flooding events
 * gets no read sooner); on a broken socket open a new one and re-read every
 * unit. POLLERR alone (an overrun with nothing queued) comes here too:
 * reading clears it, so the loop never spins on it. */
static void on_links(void *userdata, short revents) {
    Health *h = userdata;
    int r = link_monitor_dispatch(h->links, on_link_event, h);

    (void)revents;
    if (r == -ENOBUFS) {
        log_warn(NULL, NULL, "link events lost: re-reading every rail NIC");
        h->links_lost = true;
        settle_arm(h);
    } else if (r < 0) {
        log_warn(NULL, NULL, "link event socket failed (%s): opening a new one", strerror(-r));
        link_monitor_free(TAKE_PTR(h->links));
        r = link_monitor_new(&h->links);
        if (r < 0)
            log_error(NULL, NULL, r, "cannot follow link events: re-reading on other events only");
        else
            links_listen_all(h);
        h->all = true;
    }
    ev_loop_set_fd(h->loop, h->links_id, h->links ? link_monitor_fd(h->links) : -1);
}

/* After each turn of the loop: what the events marked, re-read. */
static void on_check(void *userdata) {
    Health *h = userdata;

    units_watch(h);
    for (size_t i = 0; h->pods_dirty && !h->all && i < h->inv->n_units; i++)
        if (h->in_pod[i]) {
            h->unit_dirty[i] = true;
            h->any_dirty = true;
        }
    h->pods_dirty = false;
    if (h->all) {
        gpu_dirs_watch(h); /* one may have been recreated */
        health_refresh(h, NULL);
    } else if (h->any_dirty)
        health_refresh_units(h, h->unit_dirty);
    if (h->all || h->any_dirty)
        memset(h->unit_dirty, 0, h->inv->n_units * sizeof(bool));
    h->all = h->any_dirty = false;
    if (h->pods_busy && !ev_loop_timer_armed(h->loop, h->busy_timer))
        ev_loop_timer_at(h->loop, h->busy_timer, clock_monotonic_ms() + HEALTH_BUSY_RETRY_MS);
    h->pods_busy = false;
}

/* A unit in a pod was read while the CNI worked on it: read the units in
 * pods again (after this turn). */
static void on_busy_timer(void *userdata) {
    Health *h = userdata;

    h->pods_dirty = true;
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
    links_listen_all(h);
    r = netlink_open(-1, &h->nl);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot open a netlink socket");
    r = ev_loop_add_fd(l, h->ifd, POLLIN, on_inotify, h);
    if (r >= 0)
        r = h->links_id = ev_loop_add_fd(l, link_monitor_fd(h->links), POLLIN, on_links, h);
    if (r >= 0)
        r = h->busy_timer = ev_loop_add_timer(l, on_busy_timer, h);
    if (r >= 0)
        r = h->settle_timer = ev_loop_add_timer(l, on_settle_timer, h);
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
