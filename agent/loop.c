/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's one event loop: poll() over the fronts' and the health module's fds. */
#include "loop.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>

#include "clock.h"
#include "macro.h"

typedef struct EvFd {
    bool used;
    int fd;
    short events;
    ev_fd_fn fn;
    void *userdata;
} EvFd;

typedef struct EvTimer {
    bool used;
    uint64_t at_ms; /* EV_NEVER: disarmed */
    ev_fn fn;
    void *userdata;
} EvTimer;

typedef struct EvHook {
    ev_prepare_fn prepare;
    ev_fn check;
    void *userdata;
} EvHook;

struct EvLoop {
    EvFd fds[EV_MAX_FDS];
    EvTimer timers[EV_MAX_TIMERS];
    EvHook prepares[EV_MAX_HOOKS], checks[EV_MAX_HOOKS];
    size_t n_fds, n_timers, n_prepares, n_checks;
    bool quit;
};

int ev_loop_new(EvLoop **ret) {
    EvLoop *l = calloc(1, sizeof(*l));

    if (!l)
        return -ENOMEM;
    *ret = l;
    return 0;
}

void ev_loop_free(EvLoop *l) {
    free(l);
}

int ev_loop_add_fd(EvLoop *l, int fd, short events, ev_fd_fn fn, void *userdata) {
    if (l->n_fds >= EV_MAX_FDS)
        return -ENOSPC;
    l->fds[l->n_fds] =
        (EvFd){.used = true, .fd = fd, .events = events, .fn = fn, .userdata = userdata};
    return (int)l->n_fds++;
}

void ev_loop_set_fd(EvLoop *l, int id, int fd) {
    if (id >= 0 && (size_t)id < l->n_fds)
        l->fds[id].fd = fd;
}

void ev_loop_remove_fd(EvLoop *l, int id) {
    if (id >= 0 && (size_t)id < l->n_fds)
        l->fds[id].used = false;
}

int ev_loop_add_timer(EvLoop *l, ev_fn fn, void *userdata) {
    if (l->n_timers >= EV_MAX_TIMERS)
        return -ENOSPC;
    l->timers[l->n_timers] =
        (EvTimer){.used = true, .at_ms = EV_NEVER, .fn = fn, .userdata = userdata};
    return (int)l->n_timers++;
}

void ev_loop_timer_at(EvLoop *l, int id, uint64_t at_ms) {
    if (id >= 0 && (size_t)id < l->n_timers)
        l->timers[id].at_ms = at_ms;
}

bool ev_loop_timer_armed(const EvLoop *l, int id) {
    return id >= 0 && (size_t)id < l->n_timers && l->timers[id].at_ms != EV_NEVER;
}

int ev_loop_add_prepare(EvLoop *l, ev_prepare_fn fn, void *userdata) {
    if (l->n_prepares >= EV_MAX_HOOKS)
        return -ENOSPC;
    l->prepares[l->n_prepares++] = (EvHook){.prepare = fn, .userdata = userdata};
    return 0;
}

int ev_loop_add_check(EvLoop *l, ev_fn fn, void *userdata) {
    if (l->n_checks >= EV_MAX_HOOKS)
        return -ENOSPC;
    l->checks[l->n_checks++] = (EvHook){.check = fn, .userdata = userdata};
    return 0;
}

void ev_loop_quit(EvLoop *l) {
    l->quit = true;
}

static int timeout_until(uint64_t next) {
    uint64_t now = clock_monotonic_ms();

    if (next == EV_NEVER)
        return -1;
    return next <= now ? 0 : (int)(next - now > INT_MAX ? INT_MAX : next - now);
}

int ev_loop_run(EvLoop *l) {
    struct pollfd pfd[EV_MAX_FDS];

    while (!l->quit) {
        uint64_t next = EV_NEVER;

        for (size_t i = 0; i < l->n_prepares && !l->quit; i++) {
            uint64_t at = l->prepares[i].prepare(l->prepares[i].userdata);
            next = at < next ? at : next;
        }
        for (size_t i = 0; i < l->n_timers; i++)
            if (l->timers[i].used && l->timers[i].at_ms < next)
                next = l->timers[i].at_ms;
        for (size_t i = 0; i < l->n_fds; i++)
            pfd[i] = (struct pollfd){.fd = l->fds[i].used ? l->fds[i].fd : -1,
                                     .events = l->fds[i].events};
        if (l->quit)
            break;
        if (poll(pfd, l->n_fds, timeout_until(next)) < 0 && errno != EINTR)
            return -errno;
        for (size_t i = 0; i < l->n_fds && !l->quit; i++)
            if (l->fds[i].used && pfd[i].fd >= 0 && pfd[i].revents)
                l->fds[i].fn(l->fds[i].userdata, pfd[i].revents);
        uint64_t now = clock_monotonic_ms();
        for (size_t i = 0; i < l->n_timers && !l->quit; i++)
            if (l->timers[i].used && l->timers[i].at_ms <= now) {
                l->timers[i].at_ms = EV_NEVER; /* one-shot: the callback may arm it again */
                l->timers[i].fn(l->timers[i].userdata);
            }
        for (size_t i = 0; i < l->n_checks && !l->quit; i++)
            l->checks[i].check(l->checks[i].userdata);
    }
    l->quit = false;
    return 0;
}
