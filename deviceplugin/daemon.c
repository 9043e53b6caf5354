/* SPDX-License-Identifier: Apache-2.0 */
/* The device-plugin front on the agent's loop: kubelet restarts, registration backoff, health
 * changes to ListAndWatch. */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "failpoint.h"
#include "log.h"
#include "plugin.h"

#define INOTIFY_DIR_MASK                                                                           \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |            \
     IN_MOVE_SELF)

#define KUBELET_SOCK "kubelet.sock"

/*
 * The agent's loop (loop.h) sleeps in poll() until something happens: a
 * signal, an inotify event, a link event (health.c: ListAndWatch updates
 * follow at once), the end of a Register call, or the next retry of a
 * failed bind or Register. Waiting for kubelet costs nothing: its socket's
 * creation wakes the loop (the device-plugin dir is watched, or while it is
 * missing its nearest existing ancestor).
 *
 * Kubelet starts are counted (Plugin.kubelet_gen) from inotify creation
 * events of kubelet.sock, not from what stat() says: stat() cannot tell a
 * new socket that reused the old inode number from the old one, and a
 * socket found by stat() has a creation event still queued. The only socket
 * found by stat() is the one there when the watch on the dir is set; its
 * event, if it comes, is recognised by the same inode and ctime and
 * dropped. Each tenant registers once per kubelet start.
 */
struct Loop {
    Plugin *p;
    int ifd, efd;               /* inotify (kubelet's dir), ends of Register calls */
    int dp_wd;                  /* the device-plugin dir, -1 while it is missing */
    int parent_wd;              /* its nearest existing ancestor, while it is missing */
    uint64_t watch_retry_at_ms; /* neither dir could be watched: try again then */
    unsigned watch_backoff_ms;
    bool kubelet_up;
    bool kubelet_created; /* inotify saw a kubelet.sock made */
    bool kubelet_removed; /* inotify saw kubelet.sock go */
    bool found;           /* kubelet.sock found by stat when the dir watch was set */
    struct stat found_st;
    bool kubelet_missing_logged;
    bool restart_all;
};

static int socket_ino(const char *path, ino_t *ret) {
    struct stat st;

    if (stat(path, &st) < 0)
        return -errno;
    if (!S_ISSOCK(st.st_mode))
        return -ENOTSOCK;
    *ret = st.st_ino;
    return 0;
}

int plugin_new(const NodeConfig *c, const Inventory *inv, Health *health, Plugin **ret) {
    _cleanup_(plugin_freep) Plugin *p = calloc(1, sizeof(*p));

    if (!p)
        return -ENOMEM;
    p->config = c;
    p->inv = inv;
    p->health = health;
    if ((size_t)snprintf(p->dp_dir, sizeof(p->dp_dir), "%s/device-plugins", c->kubelet_dir) >=
            sizeof(p->dp_dir) ||
        (size_t)snprintf(p->kubelet_sock, sizeof(p->kubelet_sock), "%s/kubelet.sock", p->dp_dir) >=
            sizeof(p->kubelet_sock))
        return -ENAMETOOLONG;
    p->tenants = calloc(c->n_tenants, sizeof(TenantServer));
    if (!p->tenants)
        return -ENOMEM;
    p->n_tenants = c->n_tenants;
    for (size_t i = 0; i < c->n_tenants; i++) {
        TenantServer *t = &p->tenants[i];
        t->plugin = p;
        t->tenant = i;
        t->name = c->tenants[i].name;
        t->resource = c->tenants[i].resource;
        /* the socket's name is made at each start (server.c); this one is
         * as long as any of them */
        if ((size_t)snprintf(t->socket_path, sizeof(t->socket_path),
                             "%s/" DP_SOCKET_PREFIX "%s-00000000.sock", p->dp_dir,
                             t->name) >= sizeof(t->socket_path))
            return -ENAMETOOLONG;
        t->units = calloc(inv->n_units ? inv->n_units : 1, sizeof(Unit *));
        if (!t->units)
            return -ENOMEM;
        t->n_units = inventory_tenant_units(inv, i, t->units, inv->n_units);
    }
    *ret = TAKE_PTR(p);
    return 0;
}

void plugin_free(Plugin *p) {
    if (!p)
        return;
    if (p->loop) {
        plugin_stop(p);
        free(p->loop);
    }
    for (size_t i = 0; p->tenants && i < p->n_tenants; i++) {
        registration_free(p->tenants[i].reg);
        tenant_server_stop(&p->tenants[i]);
        free(p->tenants[i].units);
    }
    free(p->tenants);
    free(p);
}

static unsigned backoff_next(unsigned ms) {
    ms = ms ? ms * 2 : DP_BACKOFF_MIN_MS;
    return ms > DP_BACKOFF_MAX_MS ? DP_BACKOFF_MAX_MS : ms;
}

static void tenant_schedule_retry(TenantServer *t, uint64_t now) {
    t->backoff_ms = backoff_next(t->backoff_ms);
    t->retry_at_ms = now + t->backoff_ms;
}

/* Several causes may lead to one registration: the strongest is counted. */
static void tenant_note(TenantServer *t, RegisterReason why) {
    if (why > t->reg_why)
        t->reg_why = why;
}

/* Serve if we are not serving, or our socket is gone (kubelet wiped the dir). */
static void tenant_ensure_serving(TenantServer *t, bool force, uint64_t now) {
    ino_t ino = 0;

    if (t->server && !force && socket_ino(t->socket_path, &ino) == 0 && ino == t->socket_ino)
        return;
    if (!t->server && now < t->retry_at_ms)
        return;
    if (t->server) {
        tenant_note(t, force ? REGISTER_REASON_SIGHUP : REGISTER_REASON_REBIND);
        log_info(t->name, NULL, "%s",
                 force ? "restarting server" : "our socket is gone: rebinding");
    }
    tenant_server_stop(t);
    t->retry_at_ms = 0;
    t->backoff_ms = 0;
    if (tenant_server_start(t) < 0)
        tenant_schedule_retry(t, now);
}

/* Does the tenant wait to register with the current kubelet? */
static bool tenant_wants_register(const Loop *l, const TenantServer *t) {
    const Plugin *p = l->p;

    return t->server && !t->reg && l->kubelet_up && p->kubelet_gen && t->reg_gen != p->kubelet_gen;
}

static void tenant_register(Loop *l, TenantServer *t, uint64_t now) {
    int r;

    if (!tenant_wants_register(l, t) || now < t->retry_at_ms)
        return;
    r = registration_start(t, l->efd, &t->reg);
    if (r == -ESTALE) { /* kubelet.sock replaced under the connect: its event comes */
        tenant_schedule_retry(t, now);
        log_info(t->name, NULL, "%s was replaced while connecting: registering with the new one",
                 l->p->kubelet_sock);
        return;
    }
    if (r < 0) {
        tenant_schedule_retry(t, now);
        log_warn(t->name, NULL, "cannot start Register of %s: %s; retrying in %u ms", t->resource,
                 strerror(-r), t->backoff_ms);
        return;
    }
    t->reg_for_gen = l->p->kubelet_gen;
    t->reg_stale = false;
    t->reg_st = *registration_socket(t->reg);
    log_info(t->name, NULL, "registering %s with kubelet", t->resource);
}

/* The same socket: device and inode, and the time it was made (a new
 * socket may get a freed inode number). Not ctime: a chmod, chown or
 * relabel of the socket changes it, and a socket taken for a new kubelet is
 * registered with again, which kubelet refuses ("device plugin already
 * connected"). A socket's mtime is its creation; nothing writes it. */
static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Take in the result of a Register call that has ended. */
static void tenant_reap(Loop *l, TenantServer *t, uint64_t now) {
    RgError err = {0};
    int r;

    if (!t->reg || !registration_done(t->reg))
        return;
    r = registration_finish(TAKE_PTR(t->reg), &err);
    if (t->reg_stale || t->reg_for_gen != l->p->kubelet_gen) {
        /* for a server or a kubelet since replaced: once more, now */
        t->retry_at_ms = t->backoff_ms = 0;
        return;
    }
    if (r < 0) {
        tenant_schedule_retry(t, now);
        metrics_registration_failed(t->resource);
        log_warn(t->name, NULL, "Register %s with kubelet failed: %s; retrying in %u ms",
                 t->resource, err.msg, t->backoff_ms);
        return;
    }
    /* A kubelet other than the one last registered with took it in: a
     * restart, even where the Register reached the new socket before its
     * creation event was read (kubelet_started then adopts it) */
    if (t->registered && !same_file(&t->reg_st, &t->done_st))
        tenant_note(t, REGISTER_REASON_KUBELET_RESTART);
    t->done_st = t->reg_st;
    t->reg_gen = t->reg_for_gen;
    t->backoff_ms = 0;
    metrics_registered(t->resource, t->reg_why
                                        ?: t->registered ? REGISTER_REASON_REBIND
                                                         : REGISTER_REASON_START);
    t->reg_why = REGISTER_REASON_NONE;
    t->registered = true;
    log_info(t->name, NULL, "registered %s with kubelet (endpoint %s)", t->resource, t->endpoint);
}

static int kubelet_stat(const Plugin *p, struct stat *ret) {
    if (stat(p->kubelet_sock, ret) < 0)
        return -errno;
    return S_ISSOCK(ret->st_mode) ? 0 : -ENOTSOCK;
}

/*
 * A kubelet started, its socket st: every tenant registers with it, at once,
 * unless its Register (done or in flight) already went to that socket: a
 * tenant that rebound while the socket was being replaced connects to the
 * new one before its creation event is read, and registering twice would
 * make kubelet refuse the second ("device plugin already connected") and
 * drop the resource's endpoint.
 */
static void kubelet_started(Loop *l, const struct stat *st) {
    Plugin *p = l->p;
    uint64_t was = p->kubelet_gen;

    p->kubelet_gen++;
    log_info(NULL, NULL, "kubelet is up (%s new): registering", p->kubelet_sock);
    for (size_t i = 0; i < p->n_tenants; i++) {
        TenantServer *t = &p->tenants[i];
        bool this_one = same_file(&t->reg_st, st);

        t->retry_at_ms = t->backoff_ms = 0;
        if (t->reg && this_one && t->reg_for_gen == was)
            t->reg_for_gen = p->kubelet_gen; /* in flight to this kubelet already */
        else if (!t->reg && this_one && t->reg_gen == was && was)
            t->reg_gen = p->kubelet_gen; /* registered with this kubelet already */
        else {
            tenant_note(t, t->registered ? REGISTER_REASON_KUBELET_RESTART : REGISTER_REASON_START);
            registration_cancel(t->reg); /* the old kubelet's, if any; reaped, then redone */
        }
    }
}

#define ANCESTOR_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* Watch the nearest existing ancestor of the device-plugin dir: the
 * creation of the next dir down wakes the loop, which then looks again.
 * -EAGAIN when that dir came meanwhile. */
static int ancestor_watch(Loop *l) {
    char path[PATH_MAX], child[PATH_MAX];

    snprintf(path, sizeof(path), "%s", l->p->dp_dir);
    for (;;) {
        char *slash = strrchr(path, '/');
        if (!slash)
            return -ENOENT;
        memcpy(child, path, sizeof(child));
        if (slash == path)
            slash[1] = 0; /* "/" */
        else
            *slash = 0;
        int wd = inotify_add_watch(l->ifd, path, ANCESTOR_MASK);
        if (wd < 0) {
            if (errno != ENOENT && errno != ENOTDIR)
                return -errno;
            if (slash == path)
                return -ENOENT;
            continue;
        }
        if (access(child, F_OK) == 0) {
            (void)inotify_rm_watch(l->ifd, wd);
            return -EAGAIN;
        }
        return wd;
    }
}

/* Watch the device-plugin dir, or its nearest ancestor while it is missing. */
static void kubelet_watch(Loop *l, uint64_t now) {
    Plugin *p = l->p;
    int r = 0;

    if (l->dp_wd >= 0 || l->parent_wd >= 0 || now < l->watch_retry_at_ms)
        return;
    for (unsigned attempt = 0; attempt < 8; attempt++) {
        l->dp_wd = inotify_add_watch(l->ifd, p->dp_dir, INOTIFY_DIR_MASK | IN_ONLYDIR);
        if (l->dp_wd >= 0)
            break;
        r = ancestor_watch(l);
        if (r >= 0) {
            l->parent_wd = r;
            return; /* a creation below it wakes us */
        }
        if (r != -EAGAIN)
            break;
    }
    if (l->dp_wd < 0) { /* no watch to be had (inotify limits?): look again later */
        l->watch_backoff_ms = backoff_next(l->watch_backoff_ms);
        l->watch_retry_at_ms = now + l->watch_backoff_ms;
        log_warn(NULL, NULL, "cannot watch for %s (%s): looking again in %u ms", p->dp_dir,
                 strerror(r < 0 ? -r : EAGAIN), l->watch_backoff_ms);
        return;
    }
    l->watch_backoff_ms = 0;
    l->watch_retry_at_ms = 0;
    /* a kubelet.sock already there has no creation event to come, or one
     * that is already queued: count it now, drop its event later */
    l->found = kubelet_stat(p, &l->found_st) == 0;
    if (l->found)
        kubelet_started(l, &l->found_st);
}

/* kubelet_up and kubelet_gen from the events read and the socket there now. */
static void kubelet_sync(Loop *l, uint64_t now) {
    Plugin *p = l->p;
    struct stat st;

    kubelet_watch(l, now);
    if (l->kubelet_removed) {
        l->kubelet_removed = false;
        /* a test holds the loop here, kubelet.sock gone, while the next
         * kubelet starts: its socket is then found before its event is read */
        (void)failpoint("dp-kubelet-removed");
    }
    l->kubelet_up = l->dp_wd >= 0 && kubelet_stat(p, &st) == 0;
    if (l->kubelet_created) {
        if (l->kubelet_up && !(l->found && same_file(&st, &l->found_st)))
            kubelet_started(l, &st);
        l->kubelet_created = false;
        l->found = false;
    }
    if (!l->kubelet_up && !l->kubelet_missing_logged) {
        log_warn(NULL, NULL, "kubelet not there (%s missing): waiting for it", p->kubelet_sock);
        l->kubelet_missing_logged = true;
    } else if (l->kubelet_up && l->kubelet_missing_logged) {
        log_info(NULL, NULL, "kubelet is back at %s", p->kubelet_sock);
        l->kubelet_missing_logged = false;
    }
}

/* Bring every tenant to "serving and registered with the current kubelet". */
static void loop_sync(Loop *l) {
    Plugin *p = l->p;
    uint64_t now = clock_monotonic_ms();

    kubelet_sync(l, now);
    for (size_t i = 0; i < p->n_tenants; i++) {
        TenantServer *t = &p->tenants[i];
        tenant_reap(l, t, now);
        if (l->dp_wd < 0)
            continue; /* nowhere to bind until kubelet makes its dir */
        tenant_ensure_serving(t, l->restart_all, now);
        tenant_register(l, t, now);
    }
    if (l->dp_wd >= 0)
        l->restart_all = false;
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

/* The next retry; EV_NEVER when only an event can change anything. */
static uint64_t loop_next(const Loop *l) {
    uint64_t next = EV_NEVER;

    for (size_t i = 0; l->dp_wd >= 0 && i < l->p->n_tenants; i++) {
        const TenantServer *t = &l->p->tenants[i];
        if (!t->server || tenant_wants_register(l, t))
            next = min_u64(next, t->retry_at_ms);
    }
    if (l->dp_wd < 0 && l->parent_wd < 0)
        next = min_u64(next, l->watch_retry_at_ms);
    return next;
}

/* Before each wait of the agent's loop. */
static uint64_t on_prepare(void *userdata) {
    Loop *l = userdata;

    loop_sync(l);
    return loop_next(l);
}

static void loop_inotify_event(Loop *l, const struct inotify_event *ev) {
    if (ev->mask & IN_Q_OVERFLOW)
        l->kubelet_created = true; /* may have been lost: compare with stat */
    else if (ev->wd == l->dp_wd) {
        if (ev->mask & IN_IGNORED)
            l->dp_wd = -1; /* the dir itself went away */
        else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len && streq(ev->name, KUBELET_SOCK))
            l->kubelet_created = true;
        else if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && ev->len &&
                 streq(ev->name, KUBELET_SOCK))
            l->kubelet_removed = true;
        /* our own sockets: loop_sync checks them */
    } else if (ev->wd == l->parent_wd) {
        /* something appeared below (or the ancestor went): look again */
        (void)inotify_rm_watch(l->ifd, l->parent_wd);
        l->parent_wd = -1;
    }
}

static void on_inotify(void *userdata, short revents) {
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    Loop *l = userdata;
    ssize_t n;

    (void)revents;
    while ((n = read(l->ifd, buf, sizeof(buf))) > 0)
        for (char *q = buf; q < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)q;
            loop_inotify_event(l, ev);
            q += sizeof(*ev) + ev->len;
        }
}

static void on_register_ended(void *userdata, short revents) {
    Loop *l = userdata;
    uint64_t ended;

    (void)revents;
    (void)!read(l->efd, &ended, sizeof(ended)); /* reaped in loop_sync */
}

/* Health changed: the tenants whose units turned tell their ListAndWatch streams. */
static void on_health(void *userdata, const bool *dirty_tenants) {
    Plugin *p = userdata;

    for (size_t t = 0; t < p->n_tenants; t++)
        if (dirty_tenants[p->tenants[t].tenant])
            tenant_server_broadcast(&p->tenants[t]);
}

void plugin_hup(Plugin *p) {
    log_info(NULL, NULL, "SIGHUP: rebinding and re-registering every tenant");
    if (p->loop)
        p->loop->restart_all = true;
}

/* A Register in flight at shutdown is cancelled, not waited for; the log
 * says which ended how (a deadline here would mean the cancel did not work). */
static void registration_stop(TenantServer *t) {
    Registration *g = TAKE_PTR(t->reg);
    RgError e = {0};
    int r;

    if (!g)
        return;
    registration_cancel(g);
    r = registration_finish(g, &e);
    if (r < 0 && e.code == RPC_CANCELLED)
        log_info(t->name, NULL, "Register of %s with kubelet cancelled: shutting down",
                 t->resource);
    else if (r < 0)
        log_warn(t->name, NULL, "Register of %s with kubelet ended while shutting down: %s",
                 t->resource, e.msg);
}

static void loop_done(Loop *l) {
    Plugin *p = l->p;

    /* a Register in flight ends now: cancelled, its thread joined */
    for (size_t i = 0; p && i < p->n_tenants; i++) {
        registration_stop(&p->tenants[i]);
        tenant_server_stop(&p->tenants[i]);
    }
    if (l->ifd >= 0)
        close(l->ifd);
    if (l->efd >= 0)
        close(l->efd);
    l->ifd = l->efd = -EBADF;
}

int plugin_attach(Plugin *p, EvLoop *ev) {
    Loop *l = calloc(1, sizeof(*l));
    int r;

    if (!l)
        return -ENOMEM;
    *l = (Loop){.p = p, .dp_wd = -1, .parent_wd = -1};
    p->loop = l;
    l->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->ifd < 0 || l->efd < 0)
        return -errno;
    r = ev_loop_add_fd(ev, l->ifd, POLLIN, on_inotify, l);
    if (r >= 0)
        r = ev_loop_add_fd(ev, l->efd, POLLIN, on_register_ended, l);
    if (r >= 0)
        r = ev_loop_add_prepare(ev, on_prepare, l);
    if (r < 0)
        return r;
    health_subscribe(p->health, on_health, p);
    return 0;
}

void plugin_stop(Plugin *p) {
    if (!p || !p->loop)
        return;
    health_subscribe(p->health, NULL, NULL);
    loop_done(p->loop);
}
