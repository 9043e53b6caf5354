/* The daemon's main loop: signals, kubelet restarts, registration backoff, health events. */
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "netlink.h"
#include "plugin.h"
#include "strv.h"

#define INOTIFY_DIR_MASK                                                                           \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |            \
     IN_MOVE_SELF)

typedef struct Loop {
    Plugin *p;
    int sfd, ifd;
    int dp_wd; /* watch on the device-plugin dir, -1 when lost */
    LinkMonitor *links;
    bool kubelet_missing_logged;
    bool kubelet_created; /* inotify saw a kubelet.sock made since the last sync */
    bool restart_all;
} Loop;

static uint64_t now_ms(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int socket_ino(const char *path, ino_t *ret) {
    struct stat st;

    if (stat(path, &st) < 0)
        return -errno;
    if (!S_ISSOCK(st.st_mode))
        return -ENOTSOCK;
    *ret = st.st_ino;
    return 0;
}

int plugin_new(const NodeConfig *c, const Inventory *inv, Plugin **ret) {
    _cleanup_(plugin_freep) Plugin *p = calloc(1, sizeof(*p));

    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->config = c;
    p->inv = inv;
    if ((size_t)snprintf(p->dp_dir, sizeof(p->dp_dir), "%s/device-plugins", c->kubelet_dir) >=
            sizeof(p->dp_dir) ||
        (size_t)snprintf(p->kubelet_sock, sizeof(p->kubelet_sock), "%s/kubelet.sock", p->dp_dir) >=
            sizeof(p->kubelet_sock))
        return -ENAMETOOLONG;
    p->healthy = calloc(inv->n_units ? inv->n_units : 1, sizeof(bool));
    p->tenants = calloc(c->n_tenants, sizeof(TenantServer));
    if (!p->healthy || !p->tenants)
        return -ENOMEM;
    p->n_tenants = c->n_tenants;
    for (size_t i = 0; i < c->n_tenants; i++) {
        TenantServer *t = &p->tenants[i];
        t->plugin = p;
        t->tenant = i;
        t->name = c->tenants[i].name;
        t->resource = c->tenants[i].resource;
        snprintf(t->endpoint, sizeof(t->endpoint), "railgate-%s.sock", t->name);
        if ((size_t)snprintf(t->socket_path, sizeof(t->socket_path), "%s/%s", p->dp_dir,
                             t->endpoint) >= sizeof(t->socket_path))
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
    for (size_t i = 0; p->tenants && i < p->n_tenants; i++) {
        tenant_server_stop(&p->tenants[i]);
        free(p->tenants[i].units);
    }
    free(p->tenants);
    free(p->healthy);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static void tenant_schedule_retry(TenantServer *t, uint64_t now) {
    t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : DP_BACKOFF_MIN_MS;
    if (t->backoff_ms > DP_BACKOFF_MAX_MS)
        t->backoff_ms = DP_BACKOFF_MAX_MS;
    t->retry_at_ms = now + t->backoff_ms;
}

/* Serve if we are not serving, or our socket is gone (kubelet wiped the dir). */
static void tenant_ensure_serving(TenantServer *t, bool force) {
    ino_t ino = 0;

    if (t->server && !force && socket_ino(t->socket_path, &ino) == 0 && ino == t->socket_ino)
        return;
    if (t->server)
        log_info(t->name, NULL, "%s",
                 force ? "restarting server" : "our socket is gone: rebinding");
    tenant_server_stop(t);
    t->retry_at_ms = 0;
    t->backoff_ms = 0;
    if (tenant_server_start(t) < 0)
        tenant_schedule_retry(t, now_ms());
}

static void tenant_try_register(Loop *l, TenantServer *t, ino_t kubelet_ino) {
    uint64_t now = now_ms();

    if (!t->server || t->registered || now < t->retry_at_ms)
        return;
    if (registration_register(t) < 0) {
        tenant_schedule_retry(t, now);
        log_warn(t->name, NULL, "retrying registration in %u ms", t->backoff_ms);
        return;
    }
    t->registered = true;
    t->backoff_ms = 0;
    l->p->kubelet_ino = kubelet_ino;
}

/* Bring every tenant to "serving and registered with the current kubelet". */
static void loop_sync(Loop *l) {
    Plugin *p = l->p;
    ino_t kino = 0;
    bool kubelet_up = socket_ino(p->kubelet_sock, &kino) == 0;
    bool restart = l->restart_all;

    /* A new kubelet.sock may reuse the inode number of the one we registered
     * with (ext4, tmpfs): its creation, as inotify reported it, counts too. */
    if (kubelet_up && p->kubelet_ino && (kino != p->kubelet_ino || l->kubelet_created)) {
        log_info(NULL, NULL, "kubelet restarted (new %s): re-registering", p->kubelet_sock);
        restart = true;
    }
    if (kubelet_up)
        l->kubelet_created = false;
    if (!kubelet_up && !l->kubelet_missing_logged) {
        log_warn(NULL, NULL, "kubelet not there (%s missing): waiting, retrying with backoff",
                 p->kubelet_sock);
        l->kubelet_missing_logged = true;
    } else if (kubelet_up && l->kubelet_missing_logged) {
        /* kubelet.sock appeared: no reason to sit out the backoff */
        log_info(NULL, NULL, "kubelet is back at %s", p->kubelet_sock);
        l->kubelet_missing_logged = false;
        for (size_t i = 0; i < p->n_tenants; i++)
            p->tenants[i].retry_at_ms = p->tenants[i].backoff_ms = 0;
    }
    l->restart_all = false;
    if (restart)
        p->kubelet_ino = 0;
    for (size_t i = 0; i < p->n_tenants; i++) {
        TenantServer *t = &p->tenants[i];
        if (access(p->dp_dir, F_OK) < 0)
            break; /* nowhere to bind until kubelet makes its dir */
        tenant_ensure_serving(t, restart);
        if (kubelet_up)
            tenant_try_register(l, t, kino);
        else if (!t->registered && !t->retry_at_ms)
            tenant_schedule_retry(t, now_ms());
    }
}

static int loop_timeout(const Loop *l) {
    uint64_t now = now_ms(), next = UINT64_MAX;

    for (size_t i = 0; i < l->p->n_tenants; i++) {
        const TenantServer *t = &l->p->tenants[i];
        if (!t->registered || !t->server)
            next = next < t->retry_at_ms ? next : t->retry_at_ms;
    }
    if (l->dp_wd < 0)
        next = next < now + 1000 ? next : now + 1000; /* poll for the dir to come back */
    if (next == UINT64_MAX)
        return -1;
    return next <= now ? 0 : (int)(next - now > INT_MAX ? INT_MAX : next - now);
}

static void loop_watch_dirs(Loop *l) {
    const Plugin *p = l->p;
    char **dirs = NULL;
    char host[PATH_MAX];

    if (l->dp_wd < 0)
        l->dp_wd = inotify_add_watch(l->ifd, p->dp_dir, INOTIFY_DIR_MASK);
    /* the GPU device nodes' directories and the attachment markers */
    for (size_t i = 0; i < p->inv->n_units; i++)
        for (char **d = p->inv->units[i].gpu_devices; d && *d; d++) {
            snprintf(host, sizeof(host), "%s%s", p->config->dev_root, *d);
            char *slash = strrchr(host, '/');
            if (slash && slash != host)
                *slash = 0;
            if (!strv_contains(dirs, host) && strv_push(&dirs, host) >= 0)
                (void)inotify_add_watch(l->ifd, host, INOTIFY_DIR_MASK);
        }
    snprintf(host, sizeof(host), "%s/units", p->config->state_dir);
    (void)inotify_add_watch(l->ifd, host, INOTIFY_DIR_MASK);
    strv_free(dirs);
}

/* Drain inotify; returns true if anything but the device-plugin dir changed. */
static bool loop_inotify(Loop *l) {
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool other = false;
    ssize_t n;

    while ((n = read(l->ifd, buf, sizeof(buf))) > 0)
        for (char *q = buf; q < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)q;
            if (ev->wd == l->dp_wd && (ev->mask & IN_IGNORED))
                l->dp_wd = -1; /* the dir itself went away */
            else if (ev->wd != l->dp_wd || (ev->mask & IN_Q_OVERFLOW))
                other = true;
            if ((ev->mask & IN_Q_OVERFLOW) ||
                (ev->wd == l->dp_wd && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len &&
                 streq(ev->name, "kubelet.sock")))
                l->kubelet_created = true;
            q += sizeof(*ev) + ev->len;
        }
    return other;
}

static void on_link_event(void *userdata, const LinkEvent *ev) {
    plugin_health_refresh(userdata, ev->link.name);
}

/* Returns false when the loop must end. */
static bool loop_signal(Loop *l) {
    struct signalfd_siginfo si;

    while (read(l->sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            log_info(NULL, NULL, "SIGHUP: rebinding and re-registering every tenant");
            l->restart_all = true;
            continue;
        }
        log_info(NULL, NULL, "signal %u: stopping", si.ssi_signo);
        return false;
    }
    return true;
}

static int loop_init(Loop *l, Plugin *p) {
    sigset_t mask;
    int r;

    l->p = p;
    l->dp_wd = -1;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    l->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    l->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (l->sfd < 0 || l->ifd < 0)
        return -errno;
    r = link_monitor_new(&l->links);
    if (r < 0)
        return log_error(NULL, NULL, r, "cannot follow link events");
    return 0;
}

static void loop_done(Loop *l) {
    link_monitor_free(l->links);
    if (l->sfd >= 0)
        close(l->sfd);
    if (l->ifd >= 0)
        close(l->ifd);
}

int plugin_run(Plugin *p) {
    _cleanup_(loop_done) Loop l = {.sfd = -EBADF, .ifd = -EBADF};
    int r;

    r = loop_init(&l, p);
    if (r < 0)
        return r;
    loop_watch_dirs(&l);
    plugin_health_refresh(p, NULL);
    for (;;) {
        loop_sync(&l);
        if (l.dp_wd < 0)
            loop_watch_dirs(&l);
        struct pollfd fds[3] = {
            {.fd = l.sfd, .events = POLLIN},
            {.fd = l.ifd, .events = POLLIN},
            {.fd = link_monitor_fd(l.links), .events = POLLIN},
        };
        if (poll(fds, 3, loop_timeout(&l)) < 0 && errno != EINTR)
            return log_error(NULL, NULL, -errno, "poll failed");
        if ((fds[0].revents & POLLIN) && !loop_signal(&l))
            break;
        if ((fds[1].revents & POLLIN) && loop_inotify(&l))
            plugin_health_refresh(p, NULL);
        if (fds[2].revents & POLLIN) {
            r = link_monitor_dispatch(l.links, on_link_event, p);
            if (r == -ENOBUFS) {
                log_warn(NULL, NULL, "link events lost: re-reading every rail NIC");
                plugin_health_refresh(p, NULL);
            }
        }
    }
    for (size_t i = 0; i < p->n_tenants; i++)
        tenant_server_stop(&p->tenants[i]);
    return 0;
}
