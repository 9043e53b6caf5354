/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics over HTTP, served by libmicrohttpd on a socket of our own. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentmetrics.h"
#include "listen.h"
#include "metrics-guard.h"
#include "metrics-mhd.h"

#define METRICS_PATH "/metrics"
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define LISTEN_BACKLOG 64
#define CONNECTION_MEMORY (32u << 10) /* a request's headers must fit */

struct MetricsServer {
    struct MHD_Daemon *daemon;
    MetricsGuard *guard; /* its callbacks' closure: freed after the daemon stops */
    ListenAddress addr;
    ino_t ino; /* the unix socket we bound, removed only if it is still that one */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text,
                             bool allow) {
    struct MHD_Response *resp =
        metrics_mhd.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result r;

    if (!resp)
        return MHD_NO;
    if (metrics_mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                        "text/plain; charset=utf-8") != MHD_YES ||
        (allow &&
         metrics_mhd.add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
        metrics_mhd.destroy_response(resp);
        return MHD_NO;
    }
    r = metrics_mhd.queue_response(c, status, resp);
    metrics_mhd.destroy_response(resp);
    return r;
}

static enum MHD_Result reply_metrics(struct MHD_Connection *c) {
    struct MHD_Response *resp;
    enum MHD_Result r;
    char *text = NULL;
    size_t len = 0;

    if (metrics_render(&text, &len) < 0)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n", false);
    resp = metrics_mhd.create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    if (metrics_mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE) !=
        MHD_YES) {
        metrics_mhd.destroy_response(resp);
        return MHD_NO;
    }
    r = metrics_mhd.queue_response(c, MHD_HTTP_OK, resp);
    metrics_mhd.destroy_response(resp);
    return r;
}

/* Answered at the first call, before any body is read: no request here has one. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    if (!streq(url, METRICS_PATH))
        return reply(c, MHD_HTTP_NOT_FOUND, "not found: metrics are at " METRICS_PATH "\n", false);
    if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or HEAD\n", true);
    return reply_metrics(c);
}

static ino_t socket_ino(const char *path) {
    struct stat st;

    return path && stat(path, &st) == 0 ? st.st_ino : 0;
}

void metrics_server_stop(MetricsServer *s) {
    const char *path;

    if (!s)
        return;
    if (s->daemon)
        metrics_mhd.stop_daemon(s->daemon); /* closes the listening socket too */
    metrics_guard_free(s->guard);
    path = listen_address_path(&s->addr);
    if (path && s->ino && socket_ino(path) == s->ino)
        (void)unlink(path);
    free(s);
}

int metrics_server_start(const MetricsConfig *c, MetricsServer **ret) {
    _cleanup_(metrics_server_stopp) MetricsServer *s = NULL;
    _cleanup_close_ int fd = -EBADF;
    ListenOptions o = {.mode = c->socket_mode,
                       .gid = c->socket_group >= 0 ? (gid_t)c->socket_group : (gid_t)-1,
                       .backlog = LISTEN_BACKLOG};
    int r;

    r = metrics_mhd_load(NULL); /* main() loads it first, for the message */
    if (r < 0)
        return r;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    r = listen_address_parse(c->listen, &s->addr);
    if (r < 0)
        return r;
    r = listen_address_bind(&s->addr, &o, &fd);
    if (r < 0)
        return r;
    s->ino = socket_ino(listen_address_path(&s->addr));
    r = metrics_guard_new(c->max_per_client, c->deadline_s, &s->guard);
    if (r < 0)
        return r;
    /* no MHD_USE_ERROR_LOG: the daemon logs, not the library; one polling
     * thread, which the guard's accept policy counts on */
    s->daemon = metrics_mhd.start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, metrics_guard_accept, s->guard,
        on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        c->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, c->timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY, MHD_OPTION_NOTIFY_CONNECTION,
        metrics_guard_connection, s->guard, MHD_OPTION_NOTIFY_COMPLETED, metrics_guard_completed,
        s->guard, MHD_OPTION_END);
    if (!s->daemon) {
        if (s->ino)
            (void)unlink(listen_address_path(&s->addr));
        s->ino = 0;
        return -EIO;
    }
    TAKE_FD(fd); /* the daemon's now */
    *ret = TAKE_PTR(s);
    return 0;
}
