/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint's connections: so many per client, each request cut off at a deadline. */
#include "metrics-guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "metrics-mhd.h"

typedef struct Conn {
    struct Conn *prev, *next;
    int fd;
    bool limited;           /* counted against max_per_client */
    struct in6_addr client; /* IPv4 as ::ffff:a.b.c.d */
    uint64_t deadline_ns;   /* CLOCK_MONOTONIC */
    bool cut;               /* shut down; the daemon closes it next */
} Conn;

struct MetricsGuard {
    unsigned max_per_client;
    uint64_t deadline_ns; /* a request's time; 0: none */
    pthread_mutex_t lock; /* conns and stopping; the cutter sleeps on wake */
    pthread_cond_t wake;
    Conn *conns;
    bool stopping;
    pthread_t cutter;
    bool cutter_started;
};

/* The address a client is counted by, or false when it is not counted
 * (loopback, a unix socket's peer). */
static bool client_address(const struct sockaddr *sa, socklen_t len, struct in6_addr *ret) {
    if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

        if (ntohl(in->sin_addr.s_addr) >> 24 == IN_LOOPBACKNET)
            return false;
        *ret = (struct in6_addr){.s6_addr = {[10] = 0xff, [11] = 0xff}};
        memcpy(&ret->s6_addr[12], &in->sin_addr, 4);
        return true;
    }
    if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
            (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == IN_LOOPBACKNET))
            return false;
        *ret = in6->sin6_addr;
        return true;
    }
    return false;
}

/* Shut down every connection past its deadline, then sleep until the next
 * one's (or until a connection comes, when none is pending). */
static void *cut_overdue(void *arg) {
    MetricsGuard *g = arg;

    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        uint64_t now = clock_monotonic_ns(), next = UINT64_MAX;

        for (Conn *c = g->conns; c; c = c->next) {
            if (c->cut)
                continue;
            if (c->deadline_ns <= now) {
                /* the fd is still the connection's: the daemon closes it
                 * only after metrics_guard_connection dropped it, under lock */
                (void)shutdown(c->fd, SHUT_RDWR);
                c->cut = true;
            } else if (c->deadline_ns < next)
                next = c->deadline_ns;
        }
        if (next == UINT64_MAX) {
            pthread_cond_wait(&g->wake, &g->lock);
            continue;
        }
        struct timespec at = {.tv_sec = (time_t)(next / 1000000000u),
                              .tv_nsec = (long)(next % 1000000000u)};
        (void)pthread_cond_timedwait(&g->wake, &g->lock, &at);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* Connections from a at once; under lock. */
static unsigned count_from(const MetricsGuard *g, const struct in6_addr *a) {
    unsigned n = 0;

    for (const Conn *c = g->conns; c; c = c->next)
        n += c->limited && memcmp(&c->client, a, sizeof(*a)) == 0;
    return n;
}

/* The daemon's one thread accepts: no connection of this address is added
 * between this count and its own notification. */
enum MHD_Result metrics_guard_accept(void *cls, const struct sockaddr *addr, socklen_t len) {
    MetricsGuard *g = cls;
    struct in6_addr a;
    bool ok;

    if (!g->max_per_client || !client_address(addr, len, &a))
        return MHD_YES;
    pthread_mutex_lock(&g->lock);
    ok = count_from(g, &a) < g->max_per_client;
    pthread_mutex_unlock(&g->lock);
    return ok ? MHD_YES : MHD_NO;
}

static void conn_started(MetricsGuard *g, struct MHD_Connection *mc, void **socket_context) {
    const union MHD_ConnectionInfo *fd =
        metrics_mhd.get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr =
        metrics_mhd.get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    Conn *c = calloc(1, sizeof(*c));

    if (!c || !fd) {
        /* unbounded otherwise: refuse it */
        if (fd)
            (void)shutdown(fd->connect_fd, SHUT_RDWR);
        free(c);
        return;
    }
    c->fd = fd->connect_fd;
    c->limited =
        addr && addr->client_addr &&
        client_address(addr->client_addr,
                       addr->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                : sizeof(struct sockaddr_in),
                       &c->client);
    c->deadline_ns = g->deadline_ns ? clock_monotonic_ns() + g->deadline_ns : UINT64_MAX;
    pthread_mutex_lock(&g->lock);
    c->next = g->conns;
    if (g->conns)
        g->conns->prev = c;
    g->conns = c;
    if (g->deadline_ns)
        pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    *socket_context = c;
}

static void conn_closed(MetricsGuard *g, Conn *c) {
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&g->lock);
    free(c);
}

void metrics_guard_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                              enum MHD_ConnectionNotificationCode code) {
    MetricsGuard *g = cls;

    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        conn_started(g, mc, socket_context);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_closed(g, *socket_context);
        *socket_context = NULL;
    }
}

/* A request answered: the connection's next one has its own deadline, from now. */
void metrics_guard_completed(void *cls, struct MHD_Connection *mc, void **req_cls,
                             enum MHD_RequestTerminationCode why) {
    const union MHD_ConnectionInfo *ctx =
        metrics_mhd.get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    MetricsGuard *g = cls;
    Conn *c = ctx ? ctx->socket_context : NULL;

    if (!c || !g->deadline_ns || why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        return;
    pthread_mutex_lock(&g->lock);
    c->deadline_ns = clock_monotonic_ns() + g->deadline_ns;
    pthread_mutex_unlock(&g->lock);
}

int metrics_guard_new(unsigned max_per_client, unsigned deadline_s, MetricsGuard **ret) {
    _cleanup_(metrics_guard_freep) MetricsGuard *g = NULL;
    pthread_condattr_t attr;
    int r;

    g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->max_per_client = max_per_client;
    g->deadline_ns = (uint64_t)deadline_s * 1000000000u;
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (g->deadline_ns) {
        r = pthread_create(&g->cutter, NULL, cut_overdue, g);
        if (r)
            return -r;
        g->cutter_started = true;
        (void)pthread_setname_np(g->cutter, "rg-metrics-cut");
    }
    *ret = TAKE_PTR(g);
    return 0;
}

void metrics_guard_free(MetricsGuard *g) {
    if (!g)
        return;
    if (g->cutter_started) {
        pthread_mutex_lock(&g->lock);
        g->stopping = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->cutter, NULL);
    }
    /* the daemon closed every connection, and dropped each */
    while (g->conns)
        conn_closed(g, g->conns);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
