/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI's side of the node agent's socket: one question with a deadline, reports never waited
 * for. */
#include "agentclient.h"

#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "clock.h"
#include "cni.h"
#include "failpoint.h"
#include "pb.h"
#include "strv.h"

typedef struct Ask {
    const char *socket;
    int timeout_ms;
    uint64_t deadline_ms; /* CLOCK_MONOTONIC */
    RgError *err;
} Ask;

static int set_timeout(int fd, int opt, long ms) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

    return setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

static int away(const Ask *a, int r, const char *what) {
    if (r == -ETIMEDOUT || r == -EAGAIN || r == -EWOULDBLOCK)
        return rg_error(a->err, -EAGAIN, CNI_ERR_TRY_AGAIN,
                        "the node agent (railgate-device-plugin) at %s did not answer within %d s "
                        "(timeouts.agentSeconds of the node config); try again later",
                        a->socket, a->timeout_ms / 1000);
    return rg_error(a->err, -EAGAIN, CNI_ERR_TRY_AGAIN,
                    "the node agent (railgate-device-plugin) is not answering at %s (%s: %s); "
                    "the wait for it is timeouts.agentSeconds of the node config; try again later",
                    a->socket, what, strerror(-r));
}

/* A connection to the agent, which must be root: an answer from anyone else is no answer. */
static int agent_connect(Ask *a, int *ret_fd) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_close_ int fd = -EBADF;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    int r;

    if (strlen(a->socket) >= sizeof(sa.sun_path))
        return rg_error(a->err, -ENAMETOOLONG, CNI_ERR_INVALID_CONFIG,
                        "the node agent's socket %s is too long a path for a unix socket",
                        a->socket);
    memcpy(sa.sun_path, a->socket, strlen(a->socket) + 1);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return rg_error(a->err, -errno, CNI_ERR_IO, "socket: %s", strerror(errno));
    /* a full backlog makes connect wait, a full queue send: both within the deadline */
    long ms = clock_left_ms(a->deadline_ms);
    r = ms > 0 ? set_timeout(fd, SO_SNDTIMEO, ms) : -ETIMEDOUT;
    if (r < 0)
        return away(a, r, "connect");
    while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return away(a, -errno, "connect");
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return away(a, -errno, "SO_PEERCRED");
    if (cred.uid != 0)
        return rg_error(a->err, -EPERM, CNI_ERR_TRY_AGAIN,
                        "the socket %s is served by uid %u, not by root: not the node agent; "
                        "nothing was moved",
                        a->socket, (unsigned)cred.uid);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* The request out, within the deadline; the connection into *ret_fd. */
static int ask_send(Ask *a, const uint8_t *req, size_t req_len, int *ret_fd) {
    _cleanup_close_ int fd = -EBADF;
    ssize_t n;
    int r;

    r = agent_connect(a, &fd);
    if (r < 0)
        return r;
    r = failpoint("cni-agent-connected"); /* a test restarts the agent here */
    if (r < 0)
        return away(a, r, "failpoint");
    while ((n = send(fd, req, req_len, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return away(a, -errno, "send");
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* Its reply in, within the same deadline. */
static int ask_receive(Ask *a, int fd, AgentReply **ret) {
    _cleanup_free_ uint8_t *buf = malloc(AGENT_MAX_REPLY + 1);
    struct iovec iov = {.iov_base = buf, .iov_len = AGENT_MAX_REPLY + 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t n;
    int r;

    if (!buf)
        return -ENOMEM;
    do {
        long ms = clock_left_ms(a->deadline_ms);
        r = ms > 0 ? set_timeout(fd, SO_RCVTIMEO, ms) : -ETIMEDOUT;
        if (r < 0)
            return away(a, r, "receive");
        n = recvmsg(fd, &mh, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return away(a, -errno, "receive");
    if (n == 0)
        return away(a, -ECONNRESET, "closed before it answered");
    if (mh.msg_flags & MSG_TRUNC)
        return rg_error(a->err, -EMSGSIZE, CNI_ERR_TRY_AGAIN,
                        "the node agent at %s answered with more than %u bytes; try again later",
                        a->socket, AGENT_MAX_REPLY);
    r = agent_reply_parse(buf, (size_t)n, ret, a->err);
    if (r < 0) {
        a->err->code = CNI_ERR_TRY_AGAIN;
        return rg_error_wrap(a->err, r, CNI_ERR_TRY_AGAIN, "the node agent");
    }
    return 0;
}

/* The agent's refusal as a CNI error: its words, and a code by what it means. */
static int refused(const Ask *a, const AgentReply *rep) {
    int code = rep->status == AGENT_STATUS__CONFLICT   ? CNI_ERR_TENANT
               : rep->status == AGENT_STATUS__TOO_MANY ? CNI_ERR_DEVICE
                                                       : CNI_ERR_TRY_AGAIN;

    return rg_error(a->err, code == CNI_ERR_TRY_AGAIN ? -EAGAIN : -EPERM, code,
                    "the node agent at %s: %s%s", a->socket,
                    rep->message[0] ? rep->message : agent_status_name(rep->status),
                    code == CNI_ERR_TRY_AGAIN ? "; try again later" : "; nothing was moved");
}

static int pod_arg_check(const char *key, const char *value, RgError *err) {
    if (value && !agent_token_valid(value, AGENT_MAX_NAME))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_ARGS: %s \"%.64s\" is not a Kubernetes name (1 to %d printable "
                        "characters, no spaces)",
                        key, value, AGENT_MAX_NAME);
    return 0;
}

int agentclient_ask(const char *path, int timeout_ms, const char *ns, const char *name,
                    const char *uid, AgentQuestion *ret, RgError *err) {
    Ask a = {.socket = path, .timeout_ms = timeout_ms, .err = err};
    _cleanup_free_ uint8_t *req = NULL;
    size_t len;
    int r;

    *ret = (AgentQuestion){.fd = -EBADF};
    r = pod_arg_check("K8S_POD_NAMESPACE", ns, err);
    r = r ?: pod_arg_check("K8S_POD_NAME", name, err);
    r = r ?: pod_arg_check("K8S_POD_UID", uid && *uid ? uid : NULL, err);
    if (r < 0)
        return r;
    r = agent_request_pod_units(ns, name, uid, &req, &len);
    if (r < 0)
        return r;
    a.deadline_ms = clock_monotonic_ms() + (uint64_t)timeout_ms;
    r = ask_send(&a, req, len, &ret->fd);
    if (r < 0)
        return r;
    ret->socket = path;
    ret->timeout_ms = timeout_ms;
    ret->deadline_ms = a.deadline_ms;
    return 0;
}

int agentclient_answer(AgentQuestion *q, char ***ret_ids, char **ret_resource, RgError *err) {
    Ask a = {.socket = q->socket,
             .timeout_ms = q->timeout_ms,
             .deadline_ms = q->deadline_ms,
             .err = err};
    _cleanup_pb_ AgentReply *rep = NULL;
    _cleanup_(strv_freep) char **ids = NULL;
    char *resource = NULL;
    int r;

    if (q->fd < 0)
        return -EBADF;
    r = ask_receive(&a, q->fd, &rep);
    agentclient_question_done(q);
    if (r < 0)
        return r;
    if (rep->status != AGENT_STATUS__OK)
        return refused(&a, rep);
    ids = calloc(1, sizeof(char *));
    if (!ids)
        return -ENOMEM;
    for (size_t i = 0; rep->units && i < rep->units->n_ids; i++)
        if (!strv_contains(ids, rep->units->ids[i]) && strv_push(&ids, rep->units->ids[i]) < 0)
            return -ENOMEM;
    if (ids[0] && !(resource = strdup(rep->units->resource)))
        return -ENOMEM;
    *ret_ids = TAKE_PTR(ids);
    *ret_resource = resource;
    return 0;
}

void agentclient_question_done(AgentQuestion *q) {
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -EBADF;
}

int agentclient_pod_units(const char *path, int timeout_ms, const char *ns, const char *name,
                          const char *uid, char ***ret_ids, char **ret_resource, RgError *err) {
    AgentQuestion q;
    int r = agentclient_ask(path, timeout_ms, ns, name, uid, &q, err);

    return r < 0 ? r : agentclient_answer(&q, ret_ids, ret_resource, err);
}

void agentclient_report(const char *path, const AgentReport *report) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_free_ uint8_t *req = NULL;
    _cleanup_close_ int fd = -EBADF;
    size_t len;

    if (strlen(path) >= sizeof(sa.sun_path) || agent_request_report(report, &req, &len) < 0)
        return;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* non-blocking: a busy or absent agent costs a refused connect, never a wait */
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return;
    (void)!send(fd, req, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}
